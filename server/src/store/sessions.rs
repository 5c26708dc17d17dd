//! Console sessions (`console_sessions`). A record is created once and then
//! only updated in place: `save` never inserts, so a request that loaded a
//! session before it was signed out cannot write it back afterwards.

use chrono::{DateTime, Utc};
use sqlx::SqlitePool;

use super::ts;

pub struct SessionRow<'a> {
    pub id: &'a str,
    pub user_id: Option<&'a str>,
    pub data: &'a str,
    pub expires_at: DateTime<Utc>,
}

/// Inserts a new session; false when the id is taken (the caller picks another).
pub async fn create(pool: &SqlitePool, row: &SessionRow<'_>, now: DateTime<Utc>) -> sqlx::Result<bool> {
    let done = sqlx::query(
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
pub async fn save(pool: &SqlitePool, row: &SessionRow<'_>, now: DateTime<Utc>) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE console_sessions SET user_id = ?, data = ?, expires_at = ? WHERE id = ? AND expires_at > ?",
    )
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
pub async fn load(pool: &SqlitePool, id: &str, now: DateTime<Utc>) -> sqlx::Result<Option<(String, String)>> {
    sqlx::query_as("SELECT data, expires_at FROM console_sessions WHERE id = ? AND expires_at > ?")
        .bind(id)
        .bind(ts(now))
        .fetch_optional(pool)
        .await
}

pub async fn delete(pool: &SqlitePool, id: &str) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM console_sessions WHERE id = ?").bind(id).execute(pool).await?;
    Ok(())
}

/// Ends every session of a user (password reset, deactivation); returns how many.
pub async fn delete_of_user(conn: &mut sqlx::SqliteConnection, user_id: &str) -> sqlx::Result<u64> {
    let done = sqlx::query("DELETE FROM console_sessions WHERE user_id = ?").bind(user_id).execute(conn).await?;
    Ok(done.rows_affected())
}

/// Removes expired sessions; returns how many.
pub async fn delete_expired(pool: &SqlitePool, now: DateTime<Utc>) -> sqlx::Result<u64> {
    let done = sqlx::query("DELETE FROM console_sessions WHERE expires_at <= ?").bind(ts(now)).execute(pool).await?;
    Ok(done.rows_affected())
}
