//! Passkeys, the challenges handed out for them (migration 0014), and the
//! assertions approvals were given with (0015).

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

/// A challenge handed to a browser: for whom, what for, about what.
pub struct NewChallenge<'a> {
    pub id: &'a str,
    pub tenant: &'a str,
    pub user: &'a str,
    /// `register`, `step_up`, `bulk_step_up`.
    pub purpose: &'a str,
    /// What it is about: the proposal id (step-up), the listed set's digest
    /// (bulk); `""` for a registration.
    pub subject: &'a str,
    /// The random challenge (registration) or nonce (step-up), base64url.
    pub challenge: &'a str,
    pub expires_at: DateTime<Utc>,
}

/// Hands out a challenge.
pub async fn insert_challenge(pool: &Pool, c: &NewChallenge<'_>) -> Result<()> {
    let expires_at = c.expires_at;
    query(
        "INSERT INTO passkey_challenges (id, tenant_id, user_id, purpose, subject, challenge, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(c.id)
    .bind(c.tenant)
    .bind(c.user)
    .bind(c.purpose)
    .bind(Some(c.subject).filter(|s| !s.is_empty()))
    .bind(c.challenge)
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

/// Takes challenge `id` once: only for the user, purpose and subject (`""`:
/// none) it was made for, unused and unexpired at `now`. Its value, or None.
pub async fn take_challenge(
    conn: &mut Conn,
    id: &str,
    tenant: &str,
    user: &str,
    (purpose, subject): (&str, &str),
    now: DateTime<Utc>,
) -> Result<Option<String>> {
    let row = query(
        "UPDATE passkey_challenges SET used_at = ?
         WHERE id = ? AND tenant_id = ? AND user_id = ? AND purpose = ? AND COALESCE(subject, '') = ?
           AND used_at IS NULL AND expires_at > ?
         RETURNING challenge",
    )
    .bind(ts(now))
    .bind(id)
    .bind(tenant)
    .bind(user)
    .bind(purpose)
    .bind(subject)
    .bind(ts(now))
    .fetch_optional(conn)
    .await?;
    row.map(|r| Cols::of(&r).text("challenge")).transpose()
}

/// The user's passkey with this credential id (base64url), if they hold it.
pub async fn by_credential(
    conn: &mut Conn,
    tenant: &str,
    user: &str,
    credential_id: &str,
) -> Result<Option<PasskeyRow>> {
    let row = query("SELECT * FROM passkeys WHERE tenant_id = ? AND user_id = ? AND credential_id = ?")
        .bind(tenant)
        .bind(user)
        .bind(credential_id)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(passkey).transpose()
}

/// Whether the user has registered any passkey.
pub async fn has_any(conn: &mut Conn, tenant: &str, user: &str) -> Result<bool> {
    let row = query("SELECT id FROM passkeys WHERE tenant_id = ? AND user_id = ? LIMIT 1")
        .bind(tenant)
        .bind(user)
        .fetch_optional(conn)
        .await?;
    Ok(row.is_some())
}

/// Records a use of passkey `id`: its counter now, and when.
pub async fn mark_used(conn: &mut Conn, id: &str, sign_count: u32, now: DateTime<Utc>) -> Result<()> {
    query("UPDATE passkeys SET sign_count = ?, last_used_at = ? WHERE id = ?")
        .bind(i64::from(sign_count))
        .bind(ts(now))
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// The assertion an approval was given with, and everything needed to
/// re-verify it offline (migration 0015). Binary values are base64url.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssertionRow {
    pub proposal_id: String,
    pub round: i64,
    pub approver_id: String,
    pub tenant_id: String,
    /// `step_up` (one proposal) or `bulk_step_up` (a listed set).
    pub kind: String,
    pub request_hash: String,
    /// For a bulk approval, the listed `[[proposal id, request hash], …]` (JSON).
    pub listed: Option<String>,
    pub nonce: String,
    pub passkey_id: String,
    pub public_key: String,
    pub rp_id: String,
    pub origin: String,
    pub credential_id: String,
    pub authenticator_data: String,
    pub client_data_json: String,
    pub signature: String,
    pub created_at: DateTime<Utc>,
}

fn assertion(r: &Row) -> Result<AssertionRow> {
    let c = Cols::of(r);
    Ok(AssertionRow {
        proposal_id: c.text("proposal_id")?,
        round: c.int("round")?,
        approver_id: c.text("approver_id")?,
        tenant_id: c.text("tenant_id")?,
        kind: c.text("kind")?,
        request_hash: c.text("request_hash")?,
        listed: c.opt_text("listed")?,
        nonce: c.text("nonce")?,
        passkey_id: c.text("passkey_id")?,
        public_key: c.text("public_key")?,
        rp_id: c.text("rp_id")?,
        origin: c.text("origin")?,
        credential_id: c.text("credential_id")?,
        authenticator_data: c.text("authenticator_data")?,
        client_data_json: c.text("client_data_json")?,
        signature: c.text("signature")?,
        created_at: c.at("created_at")?,
    })
}

/// Keeps the assertion an approval was given with.
pub async fn insert_assertion(conn: &mut Conn, a: &AssertionRow) -> Result<()> {
    query(
        "INSERT INTO approval_assertions (proposal_id, round, approver_id, tenant_id, kind, request_hash, listed,
             nonce, passkey_id, public_key, rp_id, origin, credential_id, authenticator_data, client_data_json,
             signature, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&a.proposal_id)
    .bind(a.round)
    .bind(&a.approver_id)
    .bind(&a.tenant_id)
    .bind(&a.kind)
    .bind(&a.request_hash)
    .bind(&a.listed)
    .bind(&a.nonce)
    .bind(&a.passkey_id)
    .bind(&a.public_key)
    .bind(&a.rp_id)
    .bind(&a.origin)
    .bind(&a.credential_id)
    .bind(&a.authenticator_data)
    .bind(&a.client_data_json)
    .bind(&a.signature)
    .bind(ts(a.created_at))
    .execute(conn)
    .await?;
    Ok(())
}

/// Every stored assertion, oldest first (for `countersign audit verify-approvals`).
pub async fn all_assertions(pool: &Pool) -> Result<Vec<AssertionRow>> {
    let rows = query("SELECT * FROM approval_assertions ORDER BY created_at, proposal_id, round, approver_id")
        .fetch_all(pool)
        .await?;
    rows.iter().map(assertion).collect()
}
