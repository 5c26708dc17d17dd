//! Storage: every SQL query lives under this module, one file per aggregate.
//!
//! SQLite is the embedded default. Writes go through a pool of exactly one
//! connection, so write transactions are serialized in-process and never
//! fail with `SQLITE_BUSY` on upgrade; reads use a separate pool. With
//! PostgreSQL both pools become one.

pub mod audit;
pub mod change_log;
pub mod directory;
pub mod idempotency;
pub mod operations;
pub mod proposals;
pub mod registry_changes;
pub mod sessions;
pub mod slack;

use chrono::{DateTime, SecondsFormat, Utc};
use rand::Rng;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

#[derive(Clone, Debug)]
pub struct Db {
    /// Exactly one connection: all writes queue here.
    pub write: SqlitePool,
    /// Many connections for reads (WAL lets them run beside the writer).
    pub read: SqlitePool,
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot create data directory {path}: {source}")]
    DataDir { path: String, source: std::io::Error },
    #[error("cannot open database {path}: {source}")]
    Open { path: String, source: sqlx::Error },
    #[error("cannot migrate database: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
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
    /// Opens (creating if needed) the database in `data_dir` and migrates it.
    pub async fn open(data_dir: &Path) -> Result<Db, OpenError> {
        ensure_private_dir(data_dir)
            .map_err(|source| OpenError::DataDir { path: data_dir.display().to_string(), source })?;
        let path = data_dir.join("countersign.db");
        let open_err = |source| OpenError::Open { path: path.display().to_string(), source };
        let write = writer_pool(&path).await.map_err(open_err)?;
        MIGRATOR.run(&write).await?;
        let read = reader_pool(&path, 8).await.map_err(open_err)?;
        Ok(Db { write, read })
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

/// A pool of exactly one connection: every write queues on it.
pub async fn writer_pool(path: &Path) -> sqlx::Result<SqlitePool> {
    pool_options(1).connect_with(sqlite_options(path)).await
}

/// Read-only connections beside the writer (WAL lets them run concurrently).
pub async fn reader_pool(path: &Path, connections: u32) -> sqlx::Result<SqlitePool> {
    pool_options(connections).connect_with(sqlite_options(path).read_only(true)).await
}

/// Timestamps are stored as fixed-width RFC 3339 UTC text with milliseconds,
/// so they sort as text in both SQLite and PostgreSQL.
pub fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub fn parse_ts(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).map(|t| t.with_timezone(&Utc)).unwrap_or_default()
}

/// A new id: `prefix_` + 26 Crockford characters, the time then 80 random
/// bits, so ids sort by creation time (`domain::ids`).
pub fn new_id(prefix: &str, now: DateTime<Utc>) -> String {
    crate::domain::ids::time_ordered_id(prefix, now.timestamp_millis().max(0) as u64, rand::thread_rng().gen())
}

/// Whether an error is a unique-constraint violation (a typed conflict, not a failure).
pub fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_by_time() {
        let t1 = parse_ts("2026-01-01T00:00:00.000Z");
        let t2 = parse_ts("2026-01-01T00:00:00.001Z");
        let a = new_id("prop", t1);
        let b = new_id("prop", t2);
        assert!(a < b);
        assert_eq!(a.len(), "prop_".len() + 26);
        assert!(a[5..].chars().all(|c| c.is_ascii_alphanumeric()));
    }

    #[tokio::test]
    async fn opens_with_private_dir_and_wal() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("nested/data");
        let db = Db::open(&dir).await.unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        let mode: String = sqlx::query_scalar("PRAGMA journal_mode").fetch_one(&db.write).await.unwrap();
        assert_eq!(mode, "wal");
        let sync: i64 = sqlx::query_scalar("PRAGMA synchronous").fetch_one(&db.write).await.unwrap();
        assert_eq!(sync, 2, "FULL");
        let fk: i64 = sqlx::query_scalar("PRAGMA foreign_keys").fetch_one(&db.read).await.unwrap();
        assert_eq!(fk, 1);
    }
}
