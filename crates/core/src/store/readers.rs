//! SQLite's read connections, kept here rather than in a sqlx pool.
//!
//! sqlx runs each SQLite connection on its own thread, so every statement
//! is a round trip between that thread and ours; and its pool pings every
//! connection it gets back before anyone may use it again — one more round
//! trip per statement run on the pool, as costly as a short query on this
//! machine (docs/BENCHMARKS.md, "Commit latency"). A read-only connection has
//! nothing to flush when it comes back: a statement dropped half-read is
//! reset by the connection's thread as soon as it sees the answer is no
//! longer wanted, and readers never open transactions. So here a
//! connection goes straight back to the idle list when its holder drops it.
//!
//! The writer stays a sqlx pool of one: its transactions need the pool's
//! care (a transaction dropped unfinished is rolled back before the
//! connection is used again).

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection, SqliteConnection};
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a read waits for a free connection before it fails.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// Up to `size` read connections to one database, opened as needed.
#[derive(Debug)]
pub struct Readers {
    options: SqliteConnectOptions,
    idle: Mutex<Vec<SqliteConnection>>,
    permits: Arc<Semaphore>,
}

impl Readers {
    /// Opens the first connection at once (an unreadable database is an
    /// error here, not at the first read); the others when first needed.
    pub async fn open(options: SqliteConnectOptions, size: usize) -> sqlx::Result<Arc<Readers>> {
        let first = options.connect().await?;
        Ok(Arc::new(Readers { options, idle: Mutex::new(vec![first]), permits: Arc::new(Semaphore::new(size)) }))
    }

    /// A connection of its own until the [`Reader`] is dropped.
    pub async fn acquire(self: &Arc<Self>) -> sqlx::Result<Reader> {
        let permit = tokio::time::timeout(ACQUIRE_TIMEOUT, Arc::clone(&self.permits).acquire_owned())
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)?
            .map_err(|_| sqlx::Error::PoolClosed)?;
        let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let conn = match idle {
            Some(conn) => conn,
            None => self.options.connect().await?,
        };
        Ok(Reader { conn: Some(conn), home: Arc::clone(self), _permit: permit })
    }

    /// Refuses new reads and closes the idle connections; one in use is
    /// closed when its holder drops it.
    pub async fn close(&self) {
        self.permits.close();
        let idle = std::mem::take(&mut *self.idle.lock().unwrap_or_else(PoisonError::into_inner));
        for conn in idle {
            conn.close().await.ok();
        }
    }

    /// Connections open and idle (tests).
    #[cfg(test)]
    fn idle(&self) -> usize {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// One read connection, back to its [`Readers`] when dropped.
#[derive(Debug)]
pub struct Reader {
    conn: Option<SqliteConnection>,
    home: Arc<Readers>,
    // Released after `drop` has put the connection back.
    _permit: OwnedSemaphorePermit,
}

impl Deref for Reader {
    type Target = SqliteConnection;
    fn deref(&self) -> &SqliteConnection {
        self.conn.as_ref().expect("a reader holds its connection until dropped")
    }
}

impl DerefMut for Reader {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        self.conn.as_mut().expect("a reader holds its connection until dropped")
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            if !self.home.permits.is_closed() {
                self.home.idle.lock().unwrap_or_else(PoisonError::into_inner).push(conn);
            }
            // Closed: dropping the connection ends its thread.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{query, scalar, Db, Pool};

    fn readers(db: &Db) -> &Arc<Readers> {
        match &db.read {
            Pool::SqliteReaders(r) => r,
            other => panic!("SQLite reads go through Readers, not {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_reader_goes_back_when_dropped_and_sees_what_the_writer_committed() {
        let tmp = tempfile::tempdir().unwrap();
        let db = Db::open(tmp.path()).await.unwrap();
        let r = readers(&db);
        assert_eq!(r.idle(), 1, "one opened at once");
        let (a, b) = (db.reader().await.unwrap(), db.reader().await.unwrap());
        assert_eq!(r.idle(), 0, "the second one opened when needed");
        drop((a, b));
        assert_eq!(r.idle(), 2, "both back at once, no round trip");

        query("INSERT INTO tenants (id, name, created_at) VALUES ('t1', 'Acme', '2026-01-01T00:00:00.000Z')")
            .execute(&db.write)
            .await
            .unwrap();
        for _ in 0..3 {
            let n: i64 = scalar("SELECT COUNT(*) FROM tenants").fetch_one(&db.read).await.unwrap();
            assert_eq!(n, 1, "every reader sees the commit");
        }
        let err = query("DELETE FROM tenants").execute(&db.read).await.unwrap_err();
        assert!(err.to_string().contains("readonly"), "readers cannot write: {err}");
        db.close().await;
        assert!(db.reader().await.is_err(), "closed");
    }

    #[tokio::test]
    async fn a_read_dropped_half_way_leaves_no_stale_snapshot() {
        use futures::StreamExt as _;
        let tmp = tempfile::tempdir().unwrap();
        let db = Db::open(tmp.path()).await.unwrap();
        for i in 0..50 {
            query("INSERT INTO tenants (id, name, created_at) VALUES (?, 'x', '2026-01-01T00:00:00.000Z')")
                .bind(format!("t{i:02}"))
                .execute(&db.write)
                .await
                .unwrap();
        }
        let mut reader = db.reader().await.unwrap();
        {
            let conn: &mut SqliteConnection = match &mut reader.0 {
                crate::store::Conn::SqliteReader(r) => r,
                _ => unreachable!(),
            };
            let mut rows = sqlx::query("SELECT id FROM tenants").fetch(&mut *conn);
            assert!(rows.next().await.is_some(), "one row read, then the read is dropped");
        }
        drop(reader);
        query("INSERT INTO tenants (id, name, created_at) VALUES ('late', 'x', '2026-01-01T00:00:00.000Z')")
            .execute(&db.write)
            .await
            .unwrap();
        assert_eq!(readers(&db).idle(), 1, "the only connection, back");
        let n: i64 = scalar("SELECT COUNT(*) FROM tenants").fetch_one(&db.read).await.unwrap();
        assert_eq!(n, 51, "the same connection sees the later commit");
    }
}
