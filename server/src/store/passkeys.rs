//! Passkeys and the challenges handed out for them (migration 0014).

use chrono::{DateTime, Utc};

use super::{query, ts, Cols, Conn, Pool, Result, Row};

/// A registered passkey. Key material is base64url text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasskeyRow {
    pub id: String,
    pub tenant_id: String,
    pub user_id: String,
    pub credential_id: String,
    pub public_key: String,
    pub sign_count: u32,
    pub name: String,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
}

fn passkey(r: &Row) -> Result<PasskeyRow> {
    let c = Cols::of(r);
    Ok(PasskeyRow {
        id: c.text("id")?,
        tenant_id: c.text("tenant_id")?,
        user_id: c.text("user_id")?,
        credential_id: c.text("credential_id")?,
        public_key: c.text("public_key")?,
        sign_count: u32::try_from(c.unsigned("sign_count")?)
            .map_err(|e| super::StoreError::corrupt("sign_count", e))?,
        name: c.text("name")?,
        created_at: c.at("created_at")?,
        last_used_at: c.opt_at("last_used_at")?,
    })
}

/// Stores a new passkey; a credential id already registered (by anyone) is
/// `StoreError::Conflict`.
pub async fn insert(conn: &mut Conn, p: &PasskeyRow) -> Result<()> {
    query(
        "INSERT INTO passkeys (id, tenant_id, user_id, credential_id, public_key, sign_count, name, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&p.id)
    .bind(&p.tenant_id)
    .bind(&p.user_id)
    .bind(&p.credential_id)
    .bind(&p.public_key)
    .bind(i64::from(p.sign_count))
    .bind(&p.name)
    .bind(ts(p.created_at))
    .execute(conn)
    .await?;
    Ok(())
}

/// The user's passkeys, oldest first.
pub async fn of_user(pool: &Pool, tenant: &str, user: &str) -> Result<Vec<PasskeyRow>> {
    let rows = query("SELECT * FROM passkeys WHERE tenant_id = ? AND user_id = ? ORDER BY created_at, id")
        .bind(tenant)
        .bind(user)
        .fetch_all(pool)
        .await?;
    rows.iter().map(passkey).collect()
}

/// Removes the user's passkey `id`; the removed row, or None if the user has
/// no such passkey (another user's id included).
pub async fn remove(conn: &mut Conn, tenant: &str, user: &str, id: &str) -> Result<Option<PasskeyRow>> {
    let row = query("DELETE FROM passkeys WHERE tenant_id = ? AND user_id = ? AND id = ? RETURNING *")
        .bind(tenant)
        .bind(user)
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(passkey).transpose()
}

/// Hands out a challenge for `user` and `purpose`.
pub async fn insert_challenge(
    pool: &Pool,
    id: &str,
    tenant: &str,
    user: &str,
    purpose: &str,
    challenge: &str,
    expires_at: DateTime<Utc>,
) -> Result<()> {
    query(
        "INSERT INTO passkey_challenges (id, tenant_id, user_id, purpose, challenge, expires_at)
         VALUES (?, ?, ?, ?, ?, ?)",
    )
    .bind(id)
    .bind(tenant)
    .bind(user)
    .bind(purpose)
    .bind(challenge)
    .bind(ts(expires_at))
    .execute(pool)
    .await?;
    // Spent and lapsed challenges are kept an hour, then swept here.
    query("DELETE FROM passkey_challenges WHERE expires_at < ?")
        .bind(ts(expires_at - chrono::Duration::hours(1)))
        .execute(pool)
        .await?;
    Ok(())
}

/// Takes challenge `id` once: only for the user and purpose it was made
/// for, unused and unexpired at `now`. Its value, or None.
pub async fn take_challenge(
    conn: &mut Conn,
    id: &str,
    tenant: &str,
    user: &str,
    purpose: &str,
    now: DateTime<Utc>,
) -> Result<Option<String>> {
    let row = query(
        "UPDATE passkey_challenges SET used_at = ?
         WHERE id = ? AND tenant_id = ? AND user_id = ? AND purpose = ? AND used_at IS NULL AND expires_at > ?
         RETURNING challenge",
    )
    .bind(ts(now))
    .bind(id)
    .bind(tenant)
    .bind(user)
    .bind(purpose)
    .bind(ts(now))
    .fetch_optional(conn)
    .await?;
    row.map(|r| Cols::of(&r).text("challenge")).transpose()
}
