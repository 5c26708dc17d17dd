//! The simulator's own SQLite file: every SQL statement of the rail
//! simulator lives here. Same discipline as the main store: WAL, synchronous
//! FULL, one write connection (so write transactions serialize in-process),
//! a separate read pool. The schema is created at start with
//! `CREATE TABLE IF NOT EXISTS`; there are no migrations.

use sqlx::{SqliteConnection, SqlitePool};
use std::path::Path;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS sim_transfers (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    amount          INTEGER NOT NULL,
    currency        TEXT NOT NULL,
    destination     TEXT NOT NULL,
    transfer_group  TEXT,
    source_account  TEXT NOT NULL,
    metadata        TEXT NOT NULL,
    created_ms      INTEGER NOT NULL,
    amount_reversed INTEGER NOT NULL DEFAULT 0,
    failed          INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sim_transfers_group ON sim_transfers (transfer_group);
CREATE TABLE IF NOT EXISTS sim_reversals (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE,
    transfer_id TEXT NOT NULL,
    amount      INTEGER NOT NULL,
    metadata    TEXT NOT NULL,
    created_ms  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sim_idempotency (
    key         TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    status      INTEGER NOT NULL,
    body        TEXT NOT NULL,
    created_ms  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sim_balances (
    account  TEXT NOT NULL,
    currency TEXT NOT NULL,
    amount   INTEGER NOT NULL,
    PRIMARY KEY (account, currency)
);
CREATE TABLE IF NOT EXISTS sim_closed_destinations (
    destination TEXT PRIMARY KEY
);
CREATE TABLE IF NOT EXISTS sim_clock (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    offset_ms INTEGER NOT NULL
);
"#;

/// One connection (what functions that share a transaction take) and the
/// database's error, named here so SQL types stay in this module.
pub(crate) type Conn = SqliteConnection;
pub(crate) type DbError = sqlx::Error;

#[derive(Clone, Debug)]
pub(crate) struct SimDb {
    /// Exactly one connection: all writes queue here.
    pub write: SqlitePool,
    pub read: SqlitePool,
}

impl SimDb {
    /// Opens (creating the file and its parent directory if missing) and
    /// creates the schema.
    pub async fn open(path: &Path) -> anyhow::Result<SimDb> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| anyhow::anyhow!("cannot create directory {}: {e}", parent.display()))?;
        }
        let open_err = |e: sqlx::Error| anyhow::anyhow!("cannot open rail-sim database {}: {e}", path.display());
        let write = pool(path, 1, false).await.map_err(open_err)?;
        sqlx::raw_sql(SCHEMA).execute(&write).await.map_err(open_err)?;
        let read = pool(path, 4, true).await.map_err(open_err)?;
        Ok(SimDb { write, read })
    }

    pub async fn close(&self) {
        self.read.close().await;
        self.write.close().await;
    }
}

/// The simulator's SQLite file: WAL, full durability (it stands for a bank),
/// one writer connection and a few readers.
async fn pool(path: &Path, connections: u32, read_only: bool) -> sqlx::Result<SqlitePool> {
    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(std::time::Duration::from_secs(10))
        .read_only(read_only);
    SqlitePoolOptions::new().max_connections(connections).connect_with(options).await
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub(crate) struct TransferRow {
    pub id: String,
    pub amount: i64,
    pub currency: String,
    pub destination: String,
    pub transfer_group: Option<String>,
    pub source_account: String,
    /// A JSON object of strings.
    pub metadata: String,
    pub created_ms: i64,
    pub amount_reversed: i64,
    pub failed: bool,
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub(crate) struct ReversalRow {
    pub id: String,
    pub transfer_id: String,
    pub amount: i64,
    /// A JSON object of strings.
    pub metadata: String,
    pub created_ms: i64,
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub(crate) struct IdempotencyRow {
    pub fingerprint: String,
    pub status: i64,
    pub body: String,
    pub created_ms: i64,
}

const TRANSFER_COLUMNS: &str =
    "id, amount, currency, destination, transfer_group, source_account, metadata, created_ms, amount_reversed, failed";

pub(crate) async fn idempotency_get(
    conn: &mut SqliteConnection,
    key: &str,
) -> Result<Option<IdempotencyRow>, sqlx::Error> {
    sqlx::query_as("SELECT fingerprint, status, body, created_ms FROM sim_idempotency WHERE key = ?")
        .bind(key)
        .fetch_optional(conn)
        .await
}

/// Stores (or, for an expired key, replaces) the response of a key.
pub(crate) async fn idempotency_put(
    conn: &mut SqliteConnection,
    key: &str,
    fingerprint: &str,
    status: u16,
    body: &str,
    created_ms: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO sim_idempotency (key, fingerprint, status, body, created_ms) VALUES (?, ?, ?, ?, ?) \
         ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, status = excluded.status, \
         body = excluded.body, created_ms = excluded.created_ms",
    )
    .bind(key)
    .bind(fingerprint)
    .bind(i64::from(status))
    .bind(body)
    .bind(created_ms)
    .execute(conn)
    .await?;
    Ok(())
}

pub(crate) async fn is_closed(conn: &mut SqliteConnection, destination: &str) -> Result<bool, sqlx::Error> {
    let row: Option<(String,)> =
        sqlx::query_as("SELECT destination FROM sim_closed_destinations WHERE destination = ?")
            .bind(destination)
            .fetch_optional(conn)
            .await?;
    Ok(row.is_some())
}

pub(crate) async fn set_closed(
    conn: &mut SqliteConnection,
    destination: &str,
    closed: bool,
) -> Result<(), sqlx::Error> {
    let sql = if closed {
        "INSERT OR IGNORE INTO sim_closed_destinations (destination) VALUES (?)"
    } else {
        "DELETE FROM sim_closed_destinations WHERE destination = ?"
    };
    sqlx::query(sql).bind(destination).execute(conn).await?;
    Ok(())
}

pub(crate) async fn closed_destinations(conn: &mut SqliteConnection) -> Result<Vec<String>, sqlx::Error> {
    let rows: Vec<(String,)> =
        sqlx::query_as("SELECT destination FROM sim_closed_destinations ORDER BY destination").fetch_all(conn).await?;
    Ok(rows.into_iter().map(|r| r.0).collect())
}

/// The stored balance, `None` when the account still has the default.
pub(crate) async fn balance(
    conn: &mut SqliteConnection,
    account: &str,
    currency: &str,
) -> Result<Option<i64>, sqlx::Error> {
    let row: Option<(i64,)> = sqlx::query_as("SELECT amount FROM sim_balances WHERE account = ? AND currency = ?")
        .bind(account)
        .bind(currency)
        .fetch_optional(conn)
        .await?;
    Ok(row.map(|r| r.0))
}

pub(crate) async fn set_balance(
    conn: &mut SqliteConnection,
    account: &str,
    currency: &str,
    amount: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO sim_balances (account, currency, amount) VALUES (?, ?, ?) \
         ON CONFLICT (account, currency) DO UPDATE SET amount = excluded.amount",
    )
    .bind(account)
    .bind(currency)
    .bind(amount)
    .execute(conn)
    .await?;
    Ok(())
}

pub(crate) async fn balances(conn: &mut SqliteConnection) -> Result<Vec<(String, String, i64)>, sqlx::Error> {
    sqlx::query_as("SELECT account, currency, amount FROM sim_balances ORDER BY account, currency")
        .fetch_all(conn)
        .await
}

pub(crate) async fn insert_transfer(conn: &mut SqliteConnection, t: &TransferRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO sim_transfers (id, amount, currency, destination, transfer_group, source_account, metadata, \
         created_ms, amount_reversed, failed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&t.id)
    .bind(t.amount)
    .bind(&t.currency)
    .bind(&t.destination)
    .bind(&t.transfer_group)
    .bind(&t.source_account)
    .bind(&t.metadata)
    .bind(t.created_ms)
    .bind(t.amount_reversed)
    .bind(t.failed)
    .execute(conn)
    .await?;
    Ok(())
}

pub(crate) async fn transfer(conn: &mut SqliteConnection, id: &str) -> Result<Option<TransferRow>, sqlx::Error> {
    sqlx::query_as(&format!("SELECT {TRANSFER_COLUMNS} FROM sim_transfers WHERE id = ?"))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// Newest first, at most `limit` rows; `group` filters by `transfer_group`,
/// `since_ms` keeps those created at or after it.
pub(crate) async fn list_transfers(
    conn: &mut SqliteConnection,
    group: Option<&str>,
    since_ms: Option<i64>,
    limit: i64,
) -> Result<Vec<TransferRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {TRANSFER_COLUMNS} FROM sim_transfers
          WHERE (?1 IS NULL OR transfer_group = ?1) AND (?2 IS NULL OR created_ms >= ?2)
          ORDER BY seq DESC LIMIT ?3"
    ))
    .bind(group)
    .bind(since_ms)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Every transfer, oldest first.
pub(crate) async fn all_transfers(conn: &mut SqliteConnection) -> Result<Vec<TransferRow>, sqlx::Error> {
    sqlx::query_as(&format!("SELECT {TRANSFER_COLUMNS} FROM sim_transfers ORDER BY seq")).fetch_all(conn).await
}

pub(crate) async fn set_failed(conn: &mut SqliteConnection, id: &str) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE sim_transfers SET failed = 1 WHERE id = ?").bind(id).execute(conn).await?;
    Ok(())
}

/// A transfer's reversals, newest first.
pub(crate) async fn reversals_of(
    conn: &mut SqliteConnection,
    transfer_id: &str,
) -> Result<Vec<ReversalRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, transfer_id, amount, metadata, created_ms FROM sim_reversals WHERE transfer_id = ? ORDER BY seq DESC",
    )
    .bind(transfer_id)
    .fetch_all(conn)
    .await
}

pub(crate) async fn insert_reversal(
    conn: &mut SqliteConnection,
    id: &str,
    transfer_id: &str,
    amount: i64,
    metadata: &str,
    created_ms: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO sim_reversals (id, transfer_id, amount, metadata, created_ms) VALUES (?, ?, ?, ?, ?)")
        .bind(id)
        .bind(transfer_id)
        .bind(amount)
        .bind(metadata)
        .bind(created_ms)
        .execute(&mut *conn)
        .await?;
    sqlx::query("UPDATE sim_transfers SET amount_reversed = amount_reversed + ? WHERE id = ?")
        .bind(amount)
        .bind(transfer_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// The persisted part of the clock offset (advances through `/_sim/clock`).
pub(crate) async fn clock_offset(conn: &mut SqliteConnection) -> Result<i64, sqlx::Error> {
    let row: Option<(i64,)> =
        sqlx::query_as("SELECT offset_ms FROM sim_clock WHERE id = 1").fetch_optional(conn).await?;
    Ok(row.map(|r| r.0).unwrap_or(0))
}

pub(crate) async fn set_clock_offset(conn: &mut SqliteConnection, offset_ms: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO sim_clock (id, offset_ms) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET offset_ms = excluded.offset_ms",
    )
    .bind(offset_ms)
    .execute(conn)
    .await?;
    Ok(())
}
