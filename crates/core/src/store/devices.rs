//! Browsers someone signed in from (migration 0018): the SHA-256 of the
//! random token in their `countersign_device` cookie, and whose it is. A
//! sign-in from a known browser is throttled by its own failures, not by
//! the username's (docs/SECURITY.md, "Guessing passwords").

use chrono::{DateTime, Utc};

use super::{query, scalar, ts, Pool, Result};

/// Remembers a browser `user` signed in from.
pub async fn insert(pool: &Pool, token_sha256: &str, user: &str, now: DateTime<Utc>) -> Result<()> {
    query(
        "INSERT INTO sign_in_devices (token_sha256, user_id, created_at, last_used_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (token_sha256) DO UPDATE SET last_used_at = excluded.last_used_at",
    )
    .bind(token_sha256)
    .bind(user)
    .bind(ts(now))
    .bind(ts(now))
    .execute(pool)
    .await?;
    Ok(())
}

/// Whose browser this token is, if anyone's.
pub async fn owner(pool: &Pool, token_sha256: &str) -> Result<Option<String>> {
    Ok(scalar("SELECT user_id FROM sign_in_devices WHERE token_sha256 = ?")
        .bind(token_sha256)
        .fetch_optional(pool)
        .await?)
}
