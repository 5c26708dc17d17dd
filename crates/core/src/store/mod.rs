//! Storage: every SQL query lives under this module, one file per aggregate.
//!
//! SQLite is the embedded default. Writes go through a pool of exactly one
//! connection, so write transactions are serialized in-process and never
//! fail with `SQLITE_BUSY` on upgrade; reads use separate read-only
//! connections ([`readers`]), which go back for the next read without the
//! round trip sqlx's pool makes. With PostgreSQL both become one pool.
//!
//! PostgreSQL (`database.url`, docs/DECISIONS.md "PostgreSQL") runs the same
//! query texts: [`sql`] sends each to the backend's own sqlx driver. Its
//! migrations are kept equal to SQLite's by a test (`parity`).

pub mod audit;
pub mod bank;
pub mod batches;
pub mod change_log;
pub mod delegations;
pub mod devices;
pub mod directory;
pub mod escalations;
pub mod evidence;
pub mod exports;
pub mod freezes;
pub mod gauges;
pub mod guarded;
pub mod human_loop;
pub mod idempotency;
pub mod invoices;
pub mod notices;
pub mod oidc;
pub mod operations;
pub mod outbox;
pub mod passkeys;
pub mod people;
pub mod policies;
pub mod priority;
pub mod proposals;
pub mod reach;
pub mod registry_changes;
pub mod risk;
pub mod sessions;
pub mod slack;
pub mod teams;
pub mod tlog;
pub mod webhooks;

pub mod readers;
mod rows;
mod sql;

/// The database.
pub trait Store {
    fn db(&self) -> &crate::store::Db;
}

#[cfg(test)]
mod parity;
#[cfg(test)]
pub(crate) mod test_pg;

pub use rows::Decoded;
use rows::{Flag, Int, Json, Known, OptTimestamp, OptUnsigned, Roles, Timestamp, Unsigned};
/// Raw SQL is the store's own: the use cases call the store's functions.
/// The test suites (feature `test-hooks`) may read the database directly.
#[cfg(not(feature = "test-hooks"))]
pub(crate) use sql::{query, scalar};
#[cfg(feature = "test-hooks")]
pub use sql::{query, scalar};
pub use sql::{Builder, Conn, Exec, Pool, Query, Row, Scalar, ScalarQuery, Value};

use chrono::{DateTime, SecondsFormat, Utc};
use rand::Rng;
use secrecy::SecretString;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{ConnectOptions, SqlitePool};
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

/// A store function's outcome.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Why a store function failed, in the terms a use case can act on. The
/// database's own error stays inside (for the log), never in an answer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A unique constraint refused the write: the thing already exists. The
    /// text is the database's message (it names columns, never values).
    #[error("conflict: {0}")]
    Conflict(String),
    /// A stored value the code cannot read (an unknown status, a bad
    /// timestamp, invalid JSON): reported, never guessed.
    #[error("unreadable {column}: {reason}")]
    Corrupt { column: String, reason: String },
    /// The database does not answer (closed, timed out, I/O).
    #[error("database unavailable: {0}")]
    Unavailable(#[source] sqlx::Error),
    #[error("database error: {0}")]
    Database(#[source] sqlx::Error),
}

impl StoreError {
    /// An unreadable value in `column`.
    pub fn corrupt(column: &str, reason: impl std::fmt::Display) -> StoreError {
        StoreError::Corrupt { column: column.to_owned(), reason: reason.to_string() }
    }

    pub fn is_conflict(&self) -> bool {
        matches!(self, StoreError::Conflict(_))
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        match e {
            sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::Conflict(db.message().to_owned()),
            // sqlx names a column by its index's `Debug`: a name comes quoted.
            sqlx::Error::ColumnDecode { index, source } => {
                StoreError::corrupt(index.strip_prefix('"').and_then(|i| i.strip_suffix('"')).unwrap_or(&index), source)
            }
            sqlx::Error::ColumnNotFound(column) => StoreError::corrupt(&column, "no such column"),
            sqlx::Error::Decode(source) => StoreError::corrupt("?", source),
            e @ (sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::WorkerCrashed) => StoreError::Unavailable(e),
            e => StoreError::Database(e),
        }
    }
}

/// A write transaction. It derefs to a [`Conn`], so store functions run
/// inside it; dropped without [`Tx::commit`] it rolls back.
#[derive(Debug)]
pub struct Tx(Conn);

impl Tx {
    pub async fn commit(self) -> Result<()> {
        match self.0 {
            Conn::SqliteTx(t) => Ok(t.commit().await?),
            Conn::PgTx(sql::PgTx { tx, pool, unlinked }) => {
                tx.commit().await?;
                if unlinked {
                    // The change is committed whatever happens here: a
                    // failed link is retried by the transparency log's
                    // next pass (`tlog::catch_up`), not reported as the
                    // change's failure.
                    if let Err(e) = audit::link_with(&pool).await {
                        tracing::warn!(error = %e, "linking audit entries failed; the log's next pass retries");
                    }
                }
                Ok(())
            }
            Conn::Sqlite(_) | Conn::SqliteReader(_) | Conn::Pg(_) => unreachable!("a Tx holds a transaction"),
        }
    }

    pub async fn rollback(self) -> Result<()> {
        match self.0 {
            Conn::SqliteTx(t) => Ok(t.rollback().await?),
            Conn::PgTx(t) => Ok(t.tx.rollback().await?),
            Conn::Sqlite(_) | Conn::SqliteReader(_) | Conn::Pg(_) => unreachable!("a Tx holds a transaction"),
        }
    }
}

/// A connection held from a pool until dropped; it derefs to a [`Conn`].
#[derive(Debug)]
pub struct Pooled(Conn);

impl Deref for Pooled {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        &self.0
    }
}

impl DerefMut for Pooled {
    fn deref_mut(&mut self) -> &mut Conn {
        &mut self.0
    }
}

impl Deref for Tx {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        &self.0
    }
}

impl DerefMut for Tx {
    fn deref_mut(&mut self) -> &mut Conn {
        &mut self.0
    }
}

/// The SQLite migrations (`migrations/*.sql`; sqlx skips subdirectories).
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

/// Their PostgreSQL twins (`migrations/postgres/`): the same versions and
/// names, the same final schema (the `parity` tests). Nothing but tests
/// applies them until the store runs on PostgreSQL.
pub static PG_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

/// Which database a deployment keeps its data in (`database.url`,
/// docs/CONFIG.md). Its `Debug` never shows the URL: it may hold a password.
#[derive(Debug, Clone)]
pub enum Backend {
    /// The embedded default: `countersign.db` in the data directory.
    Sqlite { data_dir: PathBuf },
    /// A PostgreSQL server, `postgres://` or `postgresql://`, and how many
    /// connections this process keeps to it at most (`database.max_connections`).
    Postgres { url: SecretString, max_connections: u32 },
}

/// Why `database.url` names no database this build knows. The text names
/// the rule, never the URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    #[error("must be a postgres:// or postgresql:// URL; leave it unset for the embedded SQLite database in data_dir")]
    UnknownScheme,
}

impl Backend {
    /// The backend `url` names; none: SQLite in `data_dir`.
    pub fn select(url: Option<&SecretString>, data_dir: &Path) -> Result<Backend, BackendError> {
        use secrecy::ExposeSecret;
        let Some(url) = url else {
            return Ok(Backend::Sqlite { data_dir: data_dir.to_owned() });
        };
        let text = url.expose_secret();
        let scheme = text.split_once("://").map(|(scheme, _)| scheme.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("postgres" | "postgresql") => {
                Ok(Backend::Postgres { url: url.clone(), max_connections: PG_CONNECTIONS })
            }
            _ => Err(BackendError::UnknownScheme),
        }
    }
}

/// The database. On SQLite, `write` is a pool of exactly one connection
/// (all writes queue there) and `read` has several, which WAL lets run
/// beside the writer. On PostgreSQL both are the same pool: writers run
/// concurrently under MVCC.
#[derive(Clone, Debug)]
pub struct Db {
    pub write: Pool,
    pub read: Pool,
    /// Commits first: the background passes yield to them.
    pub priority: std::sync::Arc<priority::Priority>,
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot create data directory {path}: {source}")]
    DataDir { path: String, source: std::io::Error },
    #[error("cannot open database {path}: {source}")]
    Open { path: String, source: sqlx::Error },
    #[error("cannot migrate database: {0}")]
    Migrate(sqlx::migrate::MigrateError),
    /// The database was migrated by a newer Countersign: a downgrade, never
    /// attempted (docs/DEPLOY.md "Upgrades").
    #[error(
        "the database was migrated by a newer Countersign (it has migration {newer}; this binary knows up to \
         {known}): downgrading is not supported. Run the newer version again, or restore the backup taken \
         before the upgrade"
    )]
    Newer { newer: i64, known: i64 },
    /// The PostgreSQL server refused the connection or the URL is invalid
    /// (sqlx's text names neither the password nor the URL).
    #[error("cannot connect to PostgreSQL (`database.url`): {0}")]
    Postgres(#[source] sqlx::Error),
    #[error(
        "the PostgreSQL database sorts text by the {0:?} collation; Countersign compares ids and timestamps \
         byte by byte and needs C: create the database with `CREATE DATABASE … TEMPLATE template0 LOCALE 'C'`"
    )]
    Collation(String),
}

impl OpenError {
    /// A failed migration; a database ahead of this binary is [`OpenError::Newer`].
    fn migrating(migrator: &sqlx::migrate::Migrator, error: sqlx::migrate::MigrateError) -> OpenError {
        match error {
            sqlx::migrate::MigrateError::VersionMissing(newer) => {
                let known = migrator.iter().map(|m| m.version).max().unwrap_or(0);
                OpenError::Newer { newer, known }
            }
            other => OpenError::Migrate(other),
        }
    }
}

/// Connections each process keeps to PostgreSQL at most, unless
/// `database.max_connections` says otherwise.
pub const PG_CONNECTIONS: u32 = 16;

/// Refuses a database that does not sort text byte by byte (libc `C` or
/// `POSIX`; `datlocprovider` 'i' is ICU, PostgreSQL 15+).
async fn check_collation(conn: &mut sqlx::PgConnection) -> Result<(), OpenError> {
    let (collate, provider): (String, String) = sqlx::query_as(
        "SELECT datcollate::text, datlocprovider::text FROM pg_database WHERE datname = current_database()",
    )
    .fetch_one(&mut *conn)
    .await
    .map_err(OpenError::Postgres)?;
    if provider != "c" || (collate != "C" && collate != "POSIX") {
        let name = if provider == "c" { collate } else { format!("ICU ({collate})") };
        return Err(OpenError::Collation(name));
    }
    Ok(())
}

/// Creates `dir` (and parents) with mode 0700, tightening it if it exists.
pub fn ensure_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let mut perms = std::fs::metadata(dir)?.permissions();
    if perms.mode() & 0o777 != 0o700 {
        perms.set_mode(0o700);
        std::fs::set_permissions(dir, perms)?;
    }
    Ok(())
}

impl Db {
    /// Opens the database `backend` names and migrates it.
    pub async fn connect(backend: &Backend) -> Result<Db, OpenError> {
        match backend {
            Backend::Sqlite { data_dir } => Db::open(data_dir).await,
            Backend::Postgres { url, max_connections } => Db::open_postgres(url, *max_connections).await,
        }
    }

    /// Connects to the PostgreSQL database `url` names and migrates it
    /// (`PG_MIGRATOR`). Refuses a database whose collation is not `C`:
    /// ids, timestamps and cursors compare as bytes, as on SQLite. The
    /// first connection is made once, so an unreachable server is an
    /// error at once (a pool would retry until its timeout).
    pub async fn open_postgres(url: &SecretString, connections: u32) -> Result<Db, OpenError> {
        use secrecy::ExposeSecret;
        use sqlx::Connection;
        let options =
            PgConnectOptions::from_str(url.expose_secret()).map_err(OpenError::Postgres)?.disable_statement_logging();
        let mut first = sqlx::PgConnection::connect_with(&options).await.map_err(OpenError::Postgres)?;
        check_collation(&mut first).await?;
        PG_MIGRATOR.run(&mut first).await.map_err(|e| OpenError::migrating(&PG_MIGRATOR, e))?;
        first.close().await.ok();
        let pool = PgPoolOptions::new()
            .max_connections(connections)
            .acquire_timeout(Duration::from_secs(30))
            .connect_lazy_with(options);
        let pool = Pool::Pg(pool);
        Ok(Db { write: pool.clone(), read: pool, priority: Default::default() })
    }

    /// A store on an open PostgreSQL pool, checked and migrated (tests).
    pub async fn on_postgres(pool: sqlx::PgPool) -> Result<Db, OpenError> {
        let mut conn = pool.acquire().await.map_err(OpenError::Postgres)?;
        check_collation(&mut conn).await?;
        PG_MIGRATOR.run(&mut *conn).await.map_err(|e| OpenError::migrating(&PG_MIGRATOR, e))?;
        drop(conn);
        let pool = Pool::Pg(pool);
        Ok(Db { write: pool.clone(), read: pool, priority: Default::default() })
    }

    pub fn is_postgres(&self) -> bool {
        self.write.is_postgres()
    }

    /// Opens (creating if needed) the SQLite database in `data_dir` and migrates it.
    pub async fn open(data_dir: &Path) -> Result<Db, OpenError> {
        ensure_private_dir(data_dir)
            .map_err(|source| OpenError::DataDir { path: data_dir.display().to_string(), source })?;
        let path = data_dir.join("countersign.db");
        let open_err = |source| OpenError::Open { path: path.display().to_string(), source };
        let write = writer_pool(&path).await.map_err(open_err)?;
        MIGRATOR.run(&write).await.map_err(|e| OpenError::migrating(&MIGRATOR, e))?;
        let read = readers::Readers::open(sqlite_options(&path).read_only(true), 8).await.map_err(open_err)?;
        Ok(Db { write: Pool::Sqlite(write), read: Pool::SqliteReaders(read), priority: Default::default() })
    }

    /// Starts a write transaction (writes queue on the one writer).
    pub async fn begin(&self) -> Result<Tx> {
        Ok(self.write.begin().await?)
    }

    /// The writer's connection, outside a transaction.
    pub async fn writer(&self) -> Result<Pooled> {
        Ok(self.write.acquire().await?)
    }

    /// A reader's connection, for several reads in a row.
    pub async fn reader(&self) -> Result<Pooled> {
        Ok(self.read.acquire().await?)
    }

    /// Whether the database answers a trivial query (readiness).
    pub async fn ping(&self) -> Result<()> {
        query("SELECT 1").execute(&self.read).await?;
        Ok(())
    }

    pub async fn close(&self) {
        self.read.close().await;
        self.write.close().await;
    }
}

/// The connection settings every SQLite file of ours uses: WAL, full
/// durability (`synchronous=FULL`), foreign keys, a busy timeout.
fn sqlite_options(path: &Path) -> SqliteConnectOptions {
    SqliteConnectOptions::from_str("sqlite:")
        .expect("static options")
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(10))
}

/// Pool settings shared by the writer and the readers. A connection to a
/// local SQLite file cannot drop like a network connection, so the pool does
/// not ping it before handing it out: with sqlx every statement (and every
/// ping) is a round trip to the connection's own worker thread, and the ping
/// doubled the thread switches of a short query (docs/BENCHMARKS.md).
fn pool_options(connections: u32) -> SqlitePoolOptions {
    SqlitePoolOptions::new()
        .max_connections(connections)
        .acquire_timeout(Duration::from_secs(30))
        .test_before_acquire(false)
}

/// A pool of exactly one connection: every write queues on it. It leaves
/// the WAL's checkpoints to [`checkpoints`] unless the WAL passes
/// [`WRITER_AUTOCHECKPOINT`] pages (a process that runs no checkpointer).
pub async fn writer_pool(path: &Path) -> sqlx::Result<SqlitePool> {
    let options = sqlite_options(path).pragma("wal_autocheckpoint", WRITER_AUTOCHECKPOINT.to_string());
    pool_options(1).connect_with(options).await
}

/// The WAL's size in pages (4 KB) past which the writer checkpoints itself
/// (SQLite's default is 1,000): a safety net, since a checkpoint on the
/// writer's thread holds up every write behind it (docs/DECISIONS.md,
/// "Checkpoints off the write path").
pub const WRITER_AUTOCHECKPOINT: u32 = 10_000;

/// How often [`checkpoints`] copies the WAL back into the database file:
/// often, so that each copy, and the sync of the file that ends it, is
/// small. A commit's own sync waits behind a large one on the disk and its
/// threads behind the copy on the CPUs (250 ms put the commit's p99 about
/// a millisecond higher: docs/BENCHMARKS.md, "Commit latency"). With nothing
/// new in the WAL a checkpoint writes and syncs nothing.
pub const CHECKPOINT_EVERY: Duration = Duration::from_millis(40);

/// Copies SQLite's WAL back into the database file in `data_dir` every
/// [`CHECKPOINT_EVERY`], on a connection of its own, until `shutdown`
/// (`serve` runs it). A passive checkpoint waits for no reader or writer:
/// commits go on while it copies and syncs the file.
pub async fn checkpoints(
    data_dir: &Path,
    priority: &priority::Priority,
    shutdown: &crate::platform::shutdown::Shutdown,
) {
    use sqlx::Connection;
    let path = data_dir.join("countersign.db");
    let conn = match sqlx::SqliteConnection::connect_with(&sqlite_options(&path)).await {
        Ok(conn) => conn,
        Err(e) => {
            tracing::error!(error = %e, "the WAL checkpointer could not open the database; the writer checkpoints itself");
            return;
        }
    };
    // Lent to each tick (one at a time: `every` awaits a tick before the next).
    let conn = tokio::sync::Mutex::new(conn);
    crate::platform::shutdown::every(CHECKPOINT_EVERY, shutdown, || async {
        // Its copy and its sync, between commits rather than under one.
        priority.yield_to_foreground().await;
        if let Err(e) = checkpoint(&mut *conn.lock().await).await {
            tracing::warn!(error = %e, "a WAL checkpoint failed; the next one retries");
        }
    })
    .await;
    conn.into_inner().close().await.ok();
}

/// One passive checkpoint: the WAL's frames and how many of them are now
/// in the database file.
pub async fn checkpoint(conn: &mut sqlx::SqliteConnection) -> sqlx::Result<(i64, i64)> {
    let (_busy, log, done): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)").fetch_one(conn).await?;
    Ok((log, done))
}

/// Read-only connections beside the writer (WAL lets them run concurrently).
/// A consistent copy of the SQLite database `db` written to `dest`
/// (`VACUUM INTO`, one read transaction): safe while servers write to it.
pub async fn snapshot_sqlite(db: &Path, dest: &Path) -> sqlx::Result<()> {
    let pool = reader_pool(db, 1).await?;
    let dest = dest.to_str().ok_or_else(|| sqlx::Error::Protocol("the backup path is not UTF-8".into()))?;
    sqlx::query(&format!("VACUUM INTO '{}'", dest.replace('\'', "''"))).execute(&pool).await?;
    pool.close().await;
    Ok(())
}

pub async fn reader_pool(path: &Path, connections: u32) -> sqlx::Result<SqlitePool> {
    pool_options(connections).connect_with(sqlite_options(path).read_only(true)).await
}

/// Timestamps are stored as fixed-width RFC 3339 UTC text with milliseconds,
/// so they sort as text in both SQLite and PostgreSQL.
pub fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A stored timestamp; anything but RFC 3339 is an error, never 1970.
pub fn parse_ts(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s).ok().map(|t| t.with_timezone(&Utc))
}

/// A new id: `prefix_` + 26 Crockford characters, the time then 80 random
/// bits, so ids sort by creation time (`domain::ids`).
pub fn new_id(prefix: &str, now: DateTime<Utc>) -> String {
    crate::domain::ids::time_ordered_id(prefix, now.timestamp_millis().max(0) as u64, rand::thread_rng().gen())
}

/// Raw reads for the tests of other modules, so SQL stays in this module.
#[cfg(test)]
pub mod probe {
    use super::Db;

    pub async fn count(db: &Db, table: &str) -> i64 {
        super::scalar(format!("SELECT COUNT(*) FROM {table}")).fetch_one(&db.read).await.unwrap()
    }

    /// The first column of every row of `sql`, as text.
    pub async fn texts(db: &Db, sql: &str) -> Vec<String> {
        super::scalar(sql).fetch_all(&db.read).await.unwrap()
    }

    /// The first two columns of every row of `sql`, as text.
    pub async fn pairs(db: &Db, sql: &str) -> Vec<(String, String)> {
        let rows = super::query(sql).fetch_all(&db.read).await.unwrap();
        rows.iter().map(|r| (r.try_get_at(0).unwrap(), r.try_get_at(1).unwrap())).collect()
    }

    /// A change-log entry for `proposal_id`, written as the triggers do.
    pub fn log_change(proposal_id: &'static str) -> LogChange {
        LogChange(proposal_id)
    }

    pub struct LogChange(&'static str);

    impl LogChange {
        pub async fn run(self, tx: &mut super::Tx) {
            super::query("INSERT INTO change_log (kind, proposal_id, at) VALUES ('proposal', ?, ?)")
                .bind(self.0)
                .bind(super::ts(crate::platform::clock::system_now()))
                .execute(tx)
                .await
                .unwrap();
        }
    }

    /// The integer in the first column of the first row of `sql`, if any.
    pub async fn int(db: &Db, sql: &str) -> Option<i64> {
        super::scalar(sql).fetch_optional(&db.read).await.unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_writer_leaves_the_wal_to_the_checkpointer_which_copies_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).await.unwrap();
        let mut writer = db.writer().await.unwrap();
        let auto: i64 = scalar("PRAGMA wal_autocheckpoint").fetch_one(&mut *writer).await.unwrap();
        assert_eq!(auto, i64::from(WRITER_AUTOCHECKPOINT));
        drop(writer);
        // About 1,500 pages: past SQLite's own threshold (1,000), below ours.
        let mut tx = db.begin().await.unwrap();
        query("CREATE TABLE filler (b BLOB)").execute(&mut *tx).await.unwrap();
        query(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1500)
             INSERT INTO filler SELECT randomblob(3900) FROM n",
        )
        .execute(&mut *tx)
        .await
        .unwrap();
        tx.commit().await.unwrap();
        let file = dir.path().join("countersign.db");
        let size = || std::fs::metadata(&file).unwrap().len();
        let written = 1500 * 3900;
        assert!(size() < written, "the writer did not checkpoint: the pages wait in the WAL ({} bytes)", size());

        let (trigger, shutdown) = crate::platform::shutdown::channel();
        let task = tokio::spawn({
            let dir = dir.path().to_owned();
            async move { checkpoints(&dir, &Default::default(), &shutdown).await }
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while size() < written && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(size() >= written, "the checkpointer copied the WAL into the file ({} bytes)", size());
        trigger.fire();
        task.await.unwrap();
        // Reads and writes go on as before.
        let rows: i64 = scalar("SELECT count(*) FROM filler").fetch_one(&db.read).await.unwrap();
        assert_eq!(rows, 1500);
        db.close().await;
    }

    #[test]
    fn ids_sort_by_time() {
        let t1 = parse_ts("2026-01-01T00:00:00.000Z").unwrap();
        let t2 = parse_ts("2026-01-01T00:00:00.001Z").unwrap();
        let a = new_id("prop", t1);
        let b = new_id("prop", t2);
        assert!(a < b);
        assert_eq!(a.len(), "prop_".len() + 26);
        assert!(a[5..].chars().all(|c| c.is_ascii_alphanumeric()));
    }

    #[test]
    fn no_url_is_sqlite_in_the_data_dir() {
        let backend = Backend::select(None, Path::new("/srv/cs")).unwrap();
        assert!(matches!(backend, Backend::Sqlite { data_dir } if data_dir == Path::new("/srv/cs")));
    }

    #[test]
    fn postgres_urls_are_recognized_and_never_printed() {
        for url in ["postgres://cs:hunter2@db:5432/cs", "postgresql://cs:hunter2@db/cs", "POSTGRES:///cs?host=/run"] {
            let secret = SecretString::from(url.to_owned());
            let backend = Backend::select(Some(&secret), Path::new("data")).unwrap();
            assert!(matches!(backend, Backend::Postgres { .. }), "{url}");
            assert!(!format!("{backend:?}").contains("hunter2"), "{backend:?}");
        }
    }

    #[test]
    fn other_urls_are_refused_without_echoing_them() {
        for url in ["", "sqlite://data/countersign.db", "mysql://cs:hunter2@db/cs", "postgres:/db", "db.example:5432"] {
            let err = Backend::select(Some(&SecretString::from(url.to_owned())), Path::new("data")).unwrap_err();
            assert_eq!(err, BackendError::UnknownScheme, "{url}");
            assert!(!err.to_string().contains("hunter2"));
        }
    }

    #[tokio::test]
    async fn an_unreachable_postgres_is_an_error_without_the_password() {
        // Nothing listens on port 9 of the loopback address: refused at once.
        let url = SecretString::from("postgres://cs:hunter2@127.0.0.1:9/cs?connect_timeout=2".to_owned());
        let backend = Backend::select(Some(&url), Path::new("unused")).unwrap();
        let err = Db::connect(&backend).await.unwrap_err();
        assert!(matches!(err, OpenError::Postgres(_)), "{err}");
        let text = format!("{err} {err:?}");
        assert!(!text.contains("hunter2"), "{text}");
    }

    #[tokio::test]
    async fn postgres_backend_connects_and_migrates() {
        let Some(pg) = test_pg::fresh("postgres_backend_connects_and_migrates").await else { return };
        let url = format!("{}/{}", test_pg::server_url().rsplit_once('/').unwrap().0, pg.name);
        let db = Db::connect(&Backend::Postgres { url: SecretString::from(url), max_connections: PG_CONNECTIONS })
            .await
            .unwrap();
        db.ping().await.unwrap();
        assert!(db.is_postgres());
        let applied: i64 = scalar("SELECT COUNT(*) FROM _sqlx_migrations").fetch_one(&db.read).await.unwrap();
        assert_eq!(applied, PG_MIGRATOR.iter().count() as i64);
        db.close().await;
        pg.drop().await;
    }

    #[tokio::test]
    async fn a_database_not_sorting_bytes_is_refused() {
        let Some(pg) = test_pg::fresh("a_database_not_sorting_bytes_is_refused").await else { return };
        let name = format!("{}_en", pg.name);
        let created =
            sqlx::query(&format!("CREATE DATABASE {name} TEMPLATE template0 LOCALE 'C.utf8'")).execute(&pg.pool).await;
        if let Err(e) = created {
            eprintln!("SKIPPED a_database_not_sorting_bytes_is_refused: no C.utf8 locale on the test server: {e}");
            pg.drop().await;
            return;
        }
        let url = format!("{}/{name}", test_pg::server_url().rsplit_once('/').unwrap().0);
        let err = Db::connect(&Backend::Postgres { url: SecretString::from(url), max_connections: PG_CONNECTIONS })
            .await
            .unwrap_err();
        assert!(matches!(err, OpenError::Collation(ref c) if c == "C.utf8"), "{err}");
        assert!(err.to_string().contains("LOCALE 'C'"), "{err}");
        sqlx::query(&format!("DROP DATABASE {name}")).execute(&pg.pool).await.unwrap();
        pg.drop().await;
    }

    #[tokio::test]
    async fn sqlite_backend_opens_the_data_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let db = Db::connect(&Backend::Sqlite { data_dir: tmp.path().to_owned() }).await.unwrap();
        db.ping().await.unwrap();
        assert!(tmp.path().join("countersign.db").exists());
    }

    #[tokio::test]
    async fn opens_with_private_dir_and_wal() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("nested/data");
        let db = Db::open(&dir).await.unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        let mode: String = scalar("PRAGMA journal_mode").fetch_one(&db.write).await.unwrap();
        assert_eq!(mode, "wal");
        let sync: i64 = scalar("PRAGMA synchronous").fetch_one(&db.write).await.unwrap();
        assert_eq!(sync, 2, "FULL");
        let fk: i64 = scalar("PRAGMA foreign_keys").fetch_one(&db.read).await.unwrap();
        assert_eq!(fk, 1);
    }
}
