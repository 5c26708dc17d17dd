//! Storage: every SQL query lives under this module, one file per aggregate.
//!
//! SQLite is the embedded default. Writes go through a pool of exactly one
//! connection, so write transactions are serialized in-process and never
//! fail with `SQLITE_BUSY` on upgrade; reads use a separate pool. With
//! PostgreSQL both pools become one.
//!
//! PostgreSQL is under construction (docs/DECISIONS.md, "PostgreSQL"): its
//! migrations exist and are kept equal to SQLite's by a test (`parity`), and
//! [`Backend`] recognizes a `postgres://` `database.url`, but [`Db::connect`]
//! refuses it until the queries below run on it.

pub mod audit;
pub mod change_log;
pub mod directory;
pub mod idempotency;
pub mod oidc;
pub mod operations;
pub mod passkeys;
pub mod proposals;
pub mod registry_changes;
pub mod risk;
pub mod sessions;
pub mod slack;
pub mod webhooks;

mod rows;

#[cfg(test)]
mod parity;
#[cfg(test)]
pub(crate) mod test_pg;

pub use rows::Cols;

use chrono::{DateTime, SecondsFormat, Utc};
use rand::Rng;
use secrecy::SecretString;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

/// A pool of connections (the writer or the readers of a [`Db`]).
pub type Pool = SqlitePool;
/// One connection: what a store function that must share a transaction takes.
pub type Conn = sqlx::SqliteConnection;
/// A connection held from a pool until dropped.
pub type Pooled = sqlx::pool::PoolConnection<sqlx::Sqlite>;
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
            sqlx::Error::ColumnDecode { index, source } => StoreError::corrupt(&index, source),
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
pub struct Tx(sqlx::Transaction<'static, sqlx::Sqlite>);

impl Tx {
    pub async fn commit(self) -> Result<()> {
        Ok(self.0.commit().await?)
    }

    pub async fn rollback(self) -> Result<()> {
        Ok(self.0.rollback().await?)
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
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// Their PostgreSQL twins (`migrations/postgres/`): the same versions and
/// names, the same final schema (the `parity` tests). Nothing but tests
/// applies them until the store runs on PostgreSQL.
pub static PG_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/postgres");

/// Which database a deployment keeps its data in (`database.url`,
/// docs/CONFIG.md). Its `Debug` never shows the URL: it may hold a password.
#[derive(Debug, Clone)]
pub enum Backend {
    /// The embedded default: `countersign.db` in the data directory.
    Sqlite { data_dir: PathBuf },
    /// A PostgreSQL server, `postgres://` or `postgresql://` (under
    /// construction: [`Db::connect`] refuses it).
    Postgres { url: SecretString },
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
            Some("postgres" | "postgresql") => Ok(Backend::Postgres { url: url.clone() }),
            _ => Err(BackendError::UnknownScheme),
        }
    }
}

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
    /// `database.url` names a PostgreSQL server, which the store does not
    /// run on yet. Nothing was connected to or written.
    #[error(
        "PostgreSQL support is under construction: this build keeps its data in SQLite only, and \
         `database.url` names a PostgreSQL server. Unset `database.url` to use the embedded \
         database in data_dir (docs/CONFIG.md)"
    )]
    PostgresUnderConstruction,
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
    /// Opens the database `backend` names and migrates it. PostgreSQL is
    /// refused, before any connection, until the store runs on it.
    pub async fn connect(backend: &Backend) -> Result<Db, OpenError> {
        match backend {
            Backend::Sqlite { data_dir } => Db::open(data_dir).await,
            Backend::Postgres { .. } => Err(OpenError::PostgresUnderConstruction),
        }
    }

    /// Opens (creating if needed) the SQLite database in `data_dir` and migrates it.
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

    /// Starts a write transaction (writes queue on the one writer).
    pub async fn begin(&self) -> Result<Tx> {
        Ok(Tx(self.write.begin().await?))
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
        sqlx::query("SELECT 1").execute(&self.read).await?;
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
        sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}")).fetch_one(&db.read).await.unwrap()
    }

    /// The first column of every row of `sql`, as text.
    pub async fn texts(db: &Db, sql: &str) -> Vec<String> {
        sqlx::query_scalar(sql).fetch_all(&db.read).await.unwrap()
    }

    /// The first two columns of every row of `sql`, as text.
    pub async fn pairs(db: &Db, sql: &str) -> Vec<(String, String)> {
        sqlx::query_as(sql).fetch_all(&db.read).await.unwrap()
    }

    /// The integer in the first column of the first row of `sql`, if any.
    pub async fn int(db: &Db, sql: &str) -> Option<i64> {
        sqlx::query_scalar(sql).fetch_optional(&db.read).await.unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    async fn postgres_is_refused_before_connecting() {
        // Nothing listens on port 9 of a TEST-NET address: a connection
        // attempt would time out, not answer at once.
        let url = SecretString::from("postgres://cs:hunter2@192.0.2.1:9/cs".to_owned());
        let backend = Backend::select(Some(&url), Path::new("unused")).unwrap();
        let started = std::time::Instant::now();
        let err = Db::connect(&backend).await.unwrap_err();
        assert!(matches!(err, OpenError::PostgresUnderConstruction), "{err}");
        assert!(started.elapsed() < Duration::from_secs(1));
        let text = err.to_string();
        assert!(text.starts_with("PostgreSQL support is under construction: "), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
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
        let mode: String = sqlx::query_scalar("PRAGMA journal_mode").fetch_one(&db.write).await.unwrap();
        assert_eq!(mode, "wal");
        let sync: i64 = sqlx::query_scalar("PRAGMA synchronous").fetch_one(&db.write).await.unwrap();
        assert_eq!(sync, 2, "FULL");
        let fk: i64 = sqlx::query_scalar("PRAGMA foreign_keys").fetch_one(&db.read).await.unwrap();
        assert_eq!(fk, 1);
    }
}
