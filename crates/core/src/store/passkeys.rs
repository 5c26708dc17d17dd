//! Passkeys, the challenges handed out for them (migration 0014), the
//! assertions approvals were given with (0015), and the enrolment codes and
//! cool-off of new passkeys (0018).

use chrono::{DateTime, Utc};

use super::{query, ts, Conn, Int, OptTimestamp, Pool, Result, Row, Timestamp, Unsigned};

/// A registered passkey. Key material is base64url text.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PasskeyRow {
    pub id: String,
    pub tenant_id: String,
    pub user_id: String,
    pub credential_id: String,
    pub public_key: String,
    #[sqlx(try_from = "Unsigned<u32>")]
    pub sign_count: u32,
    pub name: String,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
    #[sqlx(try_from = "OptTimestamp")]
    pub last_used_at: Option<DateTime<Utc>>,
    /// From when it counts for approvals (its cool-off ends); `None`: it
    /// predates cool-offs (migration 0018) and always did.
    #[sqlx(try_from = "OptTimestamp")]
    pub usable_from: Option<DateTime<Utc>>,
    /// The admin who confirmed it before its cool-off ended, and when.
    pub confirmed_by: Option<String>,
    #[sqlx(try_from = "OptTimestamp")]
    pub confirmed_at: Option<DateTime<Utc>>,
    /// The enrolment code it was registered with, if any.
    pub enrolment_id: Option<String>,
}

impl PasskeyRow {
    /// Whether it counts for approvals at `now`: confirmed by an admin, or
    /// past its cool-off.
    pub fn usable_at(&self, now: DateTime<Utc>) -> bool {
        self.confirmed_at.is_some() || self.usable_from.is_none_or(|from| from <= now)
    }
}

/// Stores a new passkey; a credential id already registered (by anyone) is
/// `StoreError::Conflict`.
pub async fn insert(conn: &mut Conn, p: &PasskeyRow) -> Result<()> {
    query(
        "INSERT INTO passkeys (id, tenant_id, user_id, credential_id, public_key, sign_count, name, created_at,
             usable_from, enrolment_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&p.id)
    .bind(&p.tenant_id)
    .bind(&p.user_id)
    .bind(&p.credential_id)
    .bind(&p.public_key)
    .bind(i64::from(p.sign_count))
    .bind(&p.name)
    .bind(ts(p.created_at))
    .bind(p.usable_from.map(ts))
    .bind(&p.enrolment_id)
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
    rows.iter().map(Row::decode).collect()
}

/// How many passkeys the user holds, read in `conn` (a transaction).
pub async fn of_user_in(conn: &mut Conn, tenant: &str, user: &str) -> Result<usize> {
    let n: i64 = super::scalar("SELECT COUNT(*) FROM passkeys WHERE tenant_id = ? AND user_id = ?")
        .bind(tenant)
        .bind(user)
        .fetch_one(conn)
        .await?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// The tenant's passkeys, oldest first (the admin page).
pub async fn of_tenant(pool: &Pool, tenant: &str) -> Result<Vec<PasskeyRow>> {
    let rows = query("SELECT * FROM passkeys WHERE tenant_id = ? ORDER BY created_at, id LIMIT 1000")
        .bind(tenant)
        .fetch_all(pool)
        .await?;
    rows.iter().map(Row::decode).collect()
}

/// Passkey `id` of `tenant`, whoever holds it.
pub async fn get(pool: &Pool, tenant: &str, id: &str) -> Result<Option<PasskeyRow>> {
    get_in(pool, tenant, id).await
}

/// [`get`] in a transaction (or on any executor).
pub async fn get_in<'e>(exec: impl Into<super::Exec<'e>>, tenant: &str, id: &str) -> Result<Option<PasskeyRow>> {
    let row = query("SELECT * FROM passkeys WHERE tenant_id = ? AND id = ?")
        .bind(tenant)
        .bind(id)
        .fetch_optional(exec)
        .await?;
    row.as_ref().map(Row::decode).transpose()
}

/// An admin confirms a passkey before its cool-off ended; the row, or None
/// when there is no such passkey or it was confirmed already.
pub async fn confirm(
    conn: &mut Conn,
    tenant: &str,
    id: &str,
    by: &str,
    now: DateTime<Utc>,
) -> Result<Option<PasskeyRow>> {
    let row = query(
        "UPDATE passkeys SET confirmed_by = ?, confirmed_at = ?
         WHERE tenant_id = ? AND id = ? AND confirmed_at IS NULL RETURNING *",
    )
    .bind(by)
    .bind(ts(now))
    .bind(tenant)
    .bind(id)
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(Row::decode).transpose()
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
    row.as_ref().map(Row::decode).transpose()
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

/// A challenge taken.
#[derive(sqlx::FromRow)]
struct Challenge {
    challenge: String,
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
    row.map(|r| r.decode::<Challenge>().map(|c| c.challenge)).transpose()
}

/// The user's passkey with this credential id (base64url), if they hold it.
/// The passkey with `credential_id`, whoever holds it (a sign-in, before
/// anyone is known; credential ids are unique).
pub async fn by_credential_id(conn: &mut Conn, credential_id: &str) -> Result<Option<PasskeyRow>> {
    let row = query("SELECT * FROM passkeys WHERE credential_id = ?").bind(credential_id).fetch_optional(conn).await?;
    row.as_ref().map(Row::decode).transpose()
}

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
    row.as_ref().map(Row::decode).transpose()
}

/// How many passkeys the user holds: `(usable at now, in their cool-off)`.
pub async fn held(conn: &mut Conn, tenant: &str, user: &str, now: DateTime<Utc>) -> Result<(u32, u32)> {
    let row = query(
        "SELECT COALESCE(SUM(CASE WHEN confirmed_at IS NOT NULL OR usable_from IS NULL OR usable_from <= ?
                                 THEN 1 ELSE 0 END), 0) AS usable,
                COUNT(*) AS total
         FROM passkeys WHERE tenant_id = ? AND user_id = ?",
    )
    .bind(ts(now))
    .bind(tenant)
    .bind(user)
    .fetch_one(conn)
    .await?;
    let held: Held = row.decode()?;
    let usable = u32::try_from(held.usable).unwrap_or(u32::MAX);
    let total = u32::try_from(held.total).unwrap_or(u32::MAX);
    Ok((usable, total.saturating_sub(usable)))
}

/// How many passkeys a user holds, and how many are usable.
#[derive(sqlx::FromRow)]
struct Held {
    #[sqlx(try_from = "Unsigned<u64>")]
    usable: u64,
    #[sqlx(try_from = "Unsigned<u64>")]
    total: u64,
}

/// A one-time enrolment code (migration 0018): only its SHA-256 is kept.
pub struct NewEnrolment<'a> {
    pub id: &'a str,
    pub tenant: &'a str,
    pub user: &'a str,
    pub code_sha256: &'a str,
    /// `user:<id>` of the admin who confirmed it, or `operator`.
    pub issued_by: &'a str,
    /// The admin shown the code (None: the CLI's operator).
    pub revealed_to: Option<&'a str>,
    pub now: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

pub async fn insert_enrolment(conn: &mut Conn, e: &NewEnrolment<'_>) -> Result<()> {
    query(
        "INSERT INTO passkey_enrolments (id, tenant_id, user_id, code_sha256, issued_by, revealed_to, created_at,
             expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(e.id)
    .bind(e.tenant)
    .bind(e.user)
    .bind(e.code_sha256)
    .bind(e.issued_by)
    .bind(e.revealed_to)
    .bind(ts(e.now))
    .bind(ts(e.expires_at))
    .execute(conn)
    .await?;
    Ok(())
}

/// A spent enrolment code: its id and the admin it was shown to.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Enrolment {
    pub id: String,
    pub revealed_to: Option<String>,
}

/// Spends the user's enrolment code with this SHA-256, if it is theirs,
/// unused and unexpired at `now`.
pub async fn take_enrolment(
    conn: &mut Conn,
    tenant: &str,
    user: &str,
    code_sha256: &str,
    now: DateTime<Utc>,
) -> Result<Option<Enrolment>> {
    let row = query(
        "UPDATE passkey_enrolments SET used_at = ?
         WHERE tenant_id = ? AND user_id = ? AND code_sha256 = ? AND used_at IS NULL AND expires_at > ?
         RETURNING id, revealed_to",
    )
    .bind(ts(now))
    .bind(tenant)
    .bind(user)
    .bind(code_sha256)
    .bind(ts(now))
    .fetch_optional(conn)
    .await?;
    row.as_ref().map(Row::decode).transpose()
}

/// The enrolment code `id` (the admin it was shown to), if it exists.
pub async fn enrolment(pool: &Pool, id: &str) -> Result<Option<Enrolment>> {
    let row =
        query("SELECT id, revealed_to FROM passkey_enrolments WHERE id = ?").bind(id).fetch_optional(pool).await?;
    row.as_ref().map(Row::decode).transpose()
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
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct AssertionRow {
    pub proposal_id: String,
    #[sqlx(try_from = "Int")]
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
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
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

/// The approvals given with `amr` `passkey` that have no kept assertion:
/// `(proposal id, round, approver id)`.
pub async fn passkey_approvals_without_assertion(pool: &Pool) -> Result<Vec<(String, i64, String)>> {
    let rows = query(
        "SELECT a.proposal_id, a.round, a.approver_id FROM approvals a
         LEFT JOIN approval_assertions s
           ON s.proposal_id = a.proposal_id AND s.round = a.round AND s.approver_id = a.approver_id
         WHERE a.amr = 'passkey' AND a.decision = 'approve' AND s.proposal_id IS NULL
         ORDER BY a.proposal_id, a.round, a.approver_id",
    )
    .fetch_all(pool)
    .await?;
    rows.iter().map(|r| r.decode::<Unasserted>().map(|a| (a.proposal_id, a.round, a.approver_id))).collect()
}

/// An approval given with a passkey.
#[derive(sqlx::FromRow)]
struct Unasserted {
    proposal_id: String,
    #[sqlx(try_from = "Int")]
    round: i64,
    approver_id: String,
}

/// The assertions kept for one proposal's approvals, oldest first.
pub async fn assertions_of(pool: &Pool, proposal_id: &str) -> Result<Vec<AssertionRow>> {
    let rows = query("SELECT * FROM approval_assertions WHERE proposal_id = ? ORDER BY created_at, round, approver_id")
        .bind(proposal_id)
        .fetch_all(pool)
        .await?;
    rows.iter().map(Row::decode).collect()
}

/// Every stored assertion, oldest first (for `countersign audit verify-approvals`).
pub async fn all_assertions(pool: &Pool) -> Result<Vec<AssertionRow>> {
    let rows = query("SELECT * FROM approval_assertions ORDER BY created_at, proposal_id, round, approver_id")
        .fetch_all(pool)
        .await?;
    rows.iter().map(Row::decode).collect()
}
