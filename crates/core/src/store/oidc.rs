//! Single sign-on in progress (`oidc_logins`): what the server remembers
//! between sending a browser to the identity provider and its return. A row
//! is found by the SHA-256 of the browser's pre-sign-in cookie and taken
//! (deleted and returned in one statement) by the first callback that
//! presents it, so a state, a nonce and a PKCE verifier serve one callback.

use super::{query, ts, Pool, Result, Timestamp};
use chrono::{DateTime, Utc};

/// A sign-in waiting for the browser to come back.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PendingLogin {
    pub provider: String,
    pub state: String,
    pub nonce: String,
    pub pkce_verifier: String,
    /// A checked `ReturnPath`, or `None` for the queue.
    pub return_to: Option<String>,
    #[sqlx(try_from = "Timestamp")]
    pub expires_at: DateTime<Utc>,
}

/// Remembers `login` under the hex SHA-256 of its cookie's value.
pub async fn insert(pool: &Pool, id_sha256: &str, login: &PendingLogin, now: DateTime<Utc>) -> Result<()> {
    query(
        "INSERT INTO oidc_logins (id_sha256, provider, state, nonce, pkce_verifier, return_to, expires_at, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(id_sha256)
    .bind(&login.provider)
    .bind(&login.state)
    .bind(&login.nonce)
    .bind(&login.pkce_verifier)
    .bind(&login.return_to)
    .bind(ts(login.expires_at))
    .bind(ts(now))
    .execute(pool)
    .await?;
    Ok(())
}

/// Deletes the sign-in behind `id_sha256` and returns it, if it was there
/// and had not expired. A second call for the same id finds nothing.
pub async fn take(pool: &Pool, id_sha256: &str, now: DateTime<Utc>) -> Result<Option<PendingLogin>> {
    let row = query(
        "DELETE FROM oidc_logins WHERE id_sha256 = ?
         RETURNING provider, state, nonce, pkce_verifier, return_to, expires_at",
    )
    .bind(id_sha256)
    .fetch_optional(pool)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let login: PendingLogin = row.decode()?;
    Ok((login.expires_at > now).then_some(login))
}

/// Removes sign-ins nobody came back for; returns how many.
pub async fn delete_expired(pool: &Pool, now: DateTime<Utc>) -> Result<u64> {
    let done = query("DELETE FROM oidc_logins WHERE expires_at <= ?").bind(ts(now)).execute(pool).await?;
    Ok(done.rows_affected())
}
