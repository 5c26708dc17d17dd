//! The tower-sessions store behind the console's sessions: our own table
//! (`store::sessions`), written through the one writer connection.
//!
//! The property that matters: `save` only updates a session that still
//! exists. tower-sessions saves the session at the end of every request
//! (`with_always_save`, for the idle timeout); with a store that upserts, a
//! long-poll still in flight at sign-out would write the signed-out session
//! back and revive its cookie. Here that write changes nothing.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, SessionStore};

use super::session::SESSION_KEY;
use crate::store::{self, sessions::SessionRow, Db};

#[derive(Clone, Debug)]
pub struct ConsoleSessionStore {
    db: Db,
}

impl ConsoleSessionStore {
    pub fn new(db: Db) -> Self {
        ConsoleSessionStore { db }
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
            if store::sessions::create(&self.db.write, &row, Utc::now()).await.map_err(backend)? {
                return Ok(());
            }
            // 128 random bits collided: take another id.
            record.id = Id::default();
        }
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        let data = encode(record)?;
        let user = user_of(record);
        let id = record.id.to_string();
        let row = SessionRow { id: &id, user_id: user.as_deref(), data: &data, expires_at: expiry(record) };
        store::sessions::save(&self.db.write, &row, Utc::now()).await.map_err(backend)?;
        Ok(())
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        let Some((data, expires_at)) =
            store::sessions::load(&self.db.read, &id.to_string(), Utc::now()).await.map_err(backend)?
        else {
            return Ok(None);
        };
        let data = serde_json::from_str(&data).map_err(|e| session_store::Error::Decode(e.to_string()))?;
        let expiry_date = time::OffsetDateTime::from_unix_timestamp(expires_at.timestamp()).map_err(backend)?;
        Ok(Some(Record { id: *id, data, expiry_date }))
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        store::sessions::delete(&self.db.write, &id.to_string()).await.map_err(backend)
    }
}
