//! Console sessions (`console_sessions`). A record is created once and then
//! only updated in place: `save` never inserts, so a request that loaded a
//! session before it was signed out cannot write it back afterwards.

use super::{query, ts, Conn, Pool, Result, Timestamp};
use chrono::{DateTime, Utc};

pub struct SessionRow<'a> {
    pub id: &'a str,
    pub user_id: Option<&'a str>,
    pub data: &'a str,
    pub expires_at: DateTime<Utc>,
}

/// Inserts a new session; false when the id is taken (the caller picks another).
pub async fn create(pool: &Pool, row: &SessionRow<'_>, now: DateTime<Utc>) -> Result<bool> {
    let done = query(
        "INSERT INTO console_sessions (id, user_id, data, expires_at, created_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(row.id)
    .bind(row.user_id)
    .bind(row.data)
    .bind(ts(row.expires_at))
    .bind(ts(now))
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Updates an existing, unexpired session; a deleted one stays deleted.
pub async fn save(pool: &Pool, row: &SessionRow<'_>, now: DateTime<Utc>) -> Result<bool> {
    let done =
        query("UPDATE console_sessions SET user_id = ?, data = ?, expires_at = ? WHERE id = ? AND expires_at > ?")
            .bind(row.user_id)
            .bind(row.data)
            .bind(ts(row.expires_at))
            .bind(row.id)
            .bind(ts(now))
            .execute(pool)
            .await?;
    Ok(done.rows_affected() == 1)
}

/// The session's data and expiry, unless it is missing or expired.
pub async fn load(pool: &Pool, id: &str, now: DateTime<Utc>) -> Result<Option<(String, DateTime<Utc>)>> {
    let row = query("SELECT data, expires_at FROM console_sessions WHERE id = ? AND expires_at > ?")
        .bind(id)
        .bind(ts(now))
        .fetch_optional(pool)
        .await?;
    row.map(|r| r.decode::<Loaded>().map(|l| (l.data, l.expires_at))).transpose()
}

#[derive(sqlx::FromRow)]
struct Loaded {
    data: String,
    #[sqlx(try_from = "Timestamp")]
    expires_at: DateTime<Utc>,
}

pub async fn delete(pool: &Pool, id: &str) -> Result<()> {
    query("DELETE FROM console_sessions WHERE id = ?").bind(id).execute(pool).await?;
    Ok(())
}

/// Ends every session of a user (password reset, deactivation); returns how many.
pub async fn delete_of_user(conn: &mut Conn, user_id: &str) -> Result<u64> {
    let done = query("DELETE FROM console_sessions WHERE user_id = ?").bind(user_id).execute(conn).await?;
    Ok(done.rows_affected())
}

/// Removes expired sessions; returns how many.
pub async fn delete_expired(pool: &Pool, now: DateTime<Utc>) -> Result<u64> {
    let done = query("DELETE FROM console_sessions WHERE expires_at <= ?").bind(ts(now)).execute(pool).await?;
    Ok(done.rows_affected())
}
