//! The tower-sessions store behind the console's sessions: our own table
//! (`store::sessions`), written through the one writer connection.
//!
//! The property that matters: `save` only updates a session that still
//! exists. tower-sessions saves the session at the end of every request
//! (`with_always_save`, for the idle timeout); with a store that upserts, a
//! long-poll still in flight at sign-out would write the signed-out session
//! back and revive its cookie. Here that write changes nothing.
//!
//! Saving on every request also means a write on every request, and on
//! SQLite every write empties the readers' page caches. So the store
//! remembers what each session looked like when it was last read or written,
//! and skips a save that changes nothing but moves the expiry by less than
//! `refresh` (a twentieth of the idle timeout, at most a minute): a session
//! may end up to that much before a full idle timeout, never after it.
//!
//! A background read (a live page's own, [`mark_background`]) never moves
//! the expiry: idle means the person did nothing, whatever their open tabs
//! fetch meanwhile.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, SessionStore};

use super::session::SESSION_KEY;

tokio::task_local! {
    /// Set while serving a background read (see [`mark_background`]).
    static BACKGROUND: bool;
}

/// Whether `path` is a read the console's pages make on their own (a live
/// page's long-poll and data read again, the title's count), rather than
/// one the person asked for: the console's data endpoints (`/console/…`,
/// GET). Such reads do not extend the session: the idle timeout counts
/// from what the person last did (a page, a form, a key or click that
/// `/session.js` reports through `/session/alive`), so a tab left open on a
/// live page still ends.
fn is_background(method: &axum::http::Method, path: &str) -> bool {
    *method == axum::http::Method::GET && path.starts_with("/console/")
}

/// Middleware, outside the session layer: marks background reads, whose
/// session save then never moves the expiry.
pub async fn mark_background(req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    let background = is_background(req.method(), req.uri().path());
    BACKGROUND.scope(background, next.run(req)).await
}
use crate::store::{self, sessions::SessionRow, Db};

#[derive(Clone, Debug)]
pub struct ConsoleSessionStore {
    db: Db,
    /// How far a save must move the expiry to be written when nothing else changed.
    refresh: chrono::Duration,
    /// Each session as this instance last read or wrote it.
    known: Arc<Mutex<HashMap<Id, Known>>>,
    /// The server's clock (sessions expire on it).
    clock: crate::platform::clock::SystemClock,
}

/// A session's data and expiry as stored.
#[derive(Debug)]
struct Known {
    data: String,
    expires_at: DateTime<Utc>,
}

/// Past this many remembered sessions, the expired ones are forgotten.
const KNOWN_LIMIT: usize = 10_000;

impl ConsoleSessionStore {
    pub fn new(db: Db, idle_timeout: chrono::Duration, clock: crate::platform::clock::SystemClock) -> Self {
        let refresh = (idle_timeout / 20).min(chrono::Duration::minutes(1));
        ConsoleSessionStore { db, refresh, known: Arc::default(), clock }
    }

    fn known(&self) -> std::sync::MutexGuard<'_, HashMap<Id, Known>> {
        self.known.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// True when the store already holds `data` with an expiry less than
    /// `refresh` before `expires_at`.
    fn is_current(&self, id: &Id, data: &str, expires_at: DateTime<Utc>) -> bool {
        let background = BACKGROUND.try_with(|b| *b).unwrap_or(false);
        self.known().get(id).is_some_and(|k| k.data == data && (background || expires_at - k.expires_at < self.refresh))
    }

    fn remember(&self, id: Id, data: String, expires_at: DateTime<Utc>) {
        let mut known = self.known();
        if known.len() >= KNOWN_LIMIT {
            let now = self.clock.now();
            known.retain(|_, k| k.expires_at > now);
            if known.len() >= KNOWN_LIMIT {
                known.clear();
            }
        }
        known.insert(id, Known { data, expires_at });
    }
}

fn backend(e: impl std::fmt::Display) -> session_store::Error {
    session_store::Error::Backend(e.to_string())
}

fn expiry(record: &Record) -> DateTime<Utc> {
    DateTime::from_timestamp(record.expiry_date.unix_timestamp(), record.expiry_date.nanosecond()).unwrap_or_default()
}

/// The signed-in user of a record, kept in its own column so that every
/// session of a user can be ended at once.
fn user_of(record: &Record) -> Option<String> {
    record.data.get(SESSION_KEY)?.get("user_id")?.as_str().map(str::to_owned)
}

fn encode(record: &Record) -> session_store::Result<String> {
    serde_json::to_string(&record.data).map_err(|e| session_store::Error::Encode(e.to_string()))
}

#[async_trait]
impl SessionStore for ConsoleSessionStore {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        let data = encode(record)?;
        let user = user_of(record);
        loop {
            let id = record.id.to_string();
            let row = SessionRow { id: &id, user_id: user.as_deref(), data: &data, expires_at: expiry(record) };
            if store::sessions::create(&self.db.write, &row, self.clock.now()).await.map_err(backend)? {
                self.remember(record.id, data.clone(), row.expires_at);
                return Ok(());
            }
            // 128 random bits collided: take another id.
            record.id = Id::default();
        }
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        let data = encode(record)?;
        let expires_at = expiry(record);
        if self.is_current(&record.id, &data, expires_at) {
            return Ok(());
        }
        let user = user_of(record);
        let id = record.id.to_string();
        let row = SessionRow { id: &id, user_id: user.as_deref(), data: &data, expires_at };
        if store::sessions::save(&self.db.write, &row, self.clock.now()).await.map_err(backend)? {
            self.remember(record.id, data, expires_at);
        }
        Ok(())
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        let Some((data, expires_at)) =
            store::sessions::load(&self.db.read, &id.to_string(), self.clock.now()).await.map_err(backend)?
        else {
            self.known().remove(id);
            return Ok(None);
        };
        self.remember(*id, data.clone(), expires_at);
        let data = serde_json::from_str(&data).map_err(|e| session_store::Error::Decode(e.to_string()))?;
        let expiry_date = time::OffsetDateTime::from_unix_timestamp(expires_at.timestamp()).map_err(backend)?;
        Ok(Some(Record { id: *id, data, expiry_date }))
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        self.known().remove(id);
        store::sessions::delete(&self.db.write, &id.to_string()).await.map_err(backend)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::query;
    use serde_json::json;

    fn record(user: &str, expiry: time::OffsetDateTime) -> Record {
        let data = [(SESSION_KEY.to_owned(), json!({ "user_id": user }))].into_iter().collect();
        Record { id: Id::default(), data, expiry_date: expiry }
    }

    async fn stored_expiry(db: &Db, id: &Id) -> String {
        crate::store::scalar("SELECT expires_at FROM console_sessions WHERE id = ?")
            .bind(id.to_string())
            .fetch_one(&db.read)
            .await
            .unwrap()
    }

    /// A save that only moves the expiry by less than the refresh is not
    /// written; one that moves it further, or changes the data, is.
    #[tokio::test]
    async fn a_save_is_written_only_when_it_changes_something_that_matters() {
        let tmp = tempfile::tempdir().unwrap();
        let db = Db::open(tmp.path()).await.unwrap();
        // A 20-minute idle timeout: saves within a minute of the stored expiry are skipped.
        let sessions = ConsoleSessionStore::new(db.clone(), chrono::Duration::minutes(20), Default::default());
        assert_eq!(sessions.refresh, chrono::Duration::minutes(1));
        let start = time::OffsetDateTime::now_utc() + time::Duration::minutes(20);
        let mut rec = record("usr_a", start);
        sessions.create(&mut rec).await.unwrap();
        let created = stored_expiry(&db, &rec.id).await;

        rec.expiry_date = start + time::Duration::seconds(30);
        sessions.save(&rec).await.unwrap();
        assert_eq!(stored_expiry(&db, &rec.id).await, created, "30 s later: not written");

        rec.expiry_date = start + time::Duration::seconds(61);
        sessions.save(&rec).await.unwrap();
        let refreshed = stored_expiry(&db, &rec.id).await;
        assert!(refreshed > created, "61 s later: written ({created} → {refreshed})");

        rec.expiry_date = start + time::Duration::seconds(62);
        rec.data.insert("other".into(), json!(1));
        sessions.save(&rec).await.unwrap();
        let loaded = sessions.load(&rec.id).await.unwrap().expect("still there");
        assert_eq!(loaded.data.get("other"), Some(&json!(1)), "changed data: written at once");
    }

    /// What another instance wrote is what a load remembers: a save is
    /// compared with the stored record, not with this instance's last write.
    #[tokio::test]
    async fn a_load_resets_what_the_store_compares_with() {
        let tmp = tempfile::tempdir().unwrap();
        let db = Db::open(tmp.path()).await.unwrap();
        let sessions = ConsoleSessionStore::new(db.clone(), chrono::Duration::minutes(20), Default::default());
        let start = time::OffsetDateTime::now_utc() + time::Duration::minutes(20);
        let mut rec = record("usr_a", start);
        sessions.create(&mut rec).await.unwrap();
        // Another instance moved the expiry back (as an older save would).
        let earlier = store::ts(expiry(&rec) - chrono::Duration::minutes(5));
        query("UPDATE console_sessions SET expires_at = ? WHERE id = ?")
            .bind(&earlier)
            .bind(rec.id.to_string())
            .execute(&db.write)
            .await
            .unwrap();
        sessions.load(&rec.id).await.unwrap().expect("still there");
        sessions.save(&rec).await.unwrap();
        assert_eq!(stored_expiry(&db, &rec.id).await, store::ts(expiry(&rec)), "five minutes behind: written");
    }

    /// A session deleted (signed out) stays deleted, remembered or not.
    #[tokio::test]
    async fn a_deleted_session_is_not_written_back() {
        let tmp = tempfile::tempdir().unwrap();
        let db = Db::open(tmp.path()).await.unwrap();
        let sessions = ConsoleSessionStore::new(db.clone(), chrono::Duration::minutes(20), Default::default());
        let mut rec = record("usr_a", time::OffsetDateTime::now_utc() + time::Duration::minutes(20));
        sessions.create(&mut rec).await.unwrap();
        sessions.delete(&rec.id).await.unwrap();
        rec.expiry_date += time::Duration::minutes(5);
        sessions.save(&rec).await.unwrap();
        assert!(sessions.load(&rec.id).await.unwrap().is_none());
    }
}
