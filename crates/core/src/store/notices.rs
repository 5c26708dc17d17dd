//! What a person is told about their own account (migration 0018): a
//! passkey added or removed, an enrolment code issued for them. Shown on the
//! account page, flagged in the top bar until read.

use chrono::{DateTime, Utc};

use super::{query, scalar, ts, Conn, OptTimestamp, Pool, Result, Row, Timestamp};

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct NoticeRow {
    pub id: String,
    pub kind: String,
    pub message: String,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
    #[sqlx(try_from = "OptTimestamp")]
    pub read_at: Option<DateTime<Utc>>,
}

/// Tells `user` something, in the caller's transaction.
pub async fn insert(
    conn: &mut Conn,
    tenant: &str,
    user: &str,
    kind: &str,
    message: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    query("INSERT INTO user_notices (id, tenant_id, user_id, kind, message, created_at) VALUES (?, ?, ?, ?, ?, ?)")
        .bind(super::new_id("ntc", now))
        .bind(tenant)
        .bind(user)
        .bind(kind)
        .bind(message)
        .bind(ts(now))
        .execute(conn)
        .await?;
    Ok(())
}

/// The user's latest notices, newest first.
pub async fn of_user(pool: &Pool, user: &str, limit: u32) -> Result<Vec<NoticeRow>> {
    let rows = query("SELECT * FROM user_notices WHERE user_id = ? ORDER BY id DESC LIMIT ?")
        .bind(user)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    rows.iter().map(Row::decode).collect()
}

/// How many of the user's notices are unread.
pub async fn unread(pool: &Pool, user: &str) -> Result<i64> {
    Ok(scalar("SELECT COUNT(*) FROM user_notices WHERE user_id = ? AND read_at IS NULL")
        .bind(user)
        .fetch_one(pool)
        .await?)
}

/// Marks every notice of the user read; how many were unread.
pub async fn mark_read(pool: &Pool, user: &str, now: DateTime<Utc>) -> Result<u64> {
    let done = query("UPDATE user_notices SET read_at = ? WHERE user_id = ? AND read_at IS NULL")
        .bind(ts(now))
        .bind(user)
        .execute(pool)
        .await?;
    Ok(done.rows_affected())
}
