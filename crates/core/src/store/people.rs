//! People's lifecycle (migration 0031, docs/PEOPLE.md): what SCIM
//! provisioning reads and writes (users' SCIM attributes, the identity
//! provider's groups and their members, the tenant's SCIM tokens), and
//! what offboarding ends in one transaction (sessions, push devices,
//! passkeys, enrolment codes, delegations, approvals still counting, the
//! agents acting for the person).
//!
//! Why this file is long: it is one aggregate, a person, as the two use
//! cases that write it see them (SCIM's resources and tokens, offboarding's
//! ends); each statement is short, and splitting them by caller would
//! split the person's columns across files.

use chrono::{DateTime, Utc};

use super::{query, scalar, ts, Conn, Flag, OptTimestamp, Pool, Result, Roles, Row, Timestamp};
use crate::domain::Role;

/// A user as SCIM shows them.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ScimUserRow {
    pub id: String,
    pub tenant_id: String,
    pub username: String,
    pub external_id: Option<String>,
    /// The SCIM profile as stored (name, displayName, emails): a JSON object.
    pub profile: Option<String>,
    #[sqlx(try_from = "Flag")]
    pub active: bool,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
    #[sqlx(try_from = "OptTimestamp")]
    pub updated_at: Option<DateTime<Utc>>,
}

const SCIM_USER: &str =
    "SELECT id, tenant_id, username, external_id, profile, active, created_at, updated_at FROM users";

/// The tenant's users SCIM sees (not deleted), oldest first.
pub async fn scim_users(conn: &mut Conn, tenant: &str) -> Result<Vec<ScimUserRow>> {
    let rows = query(format!("{SCIM_USER} WHERE tenant_id = ? AND deleted_at IS NULL ORDER BY created_at, id"))
        .bind(tenant)
        .fetch_all(conn)
        .await?;
    rows.iter().map(Row::decode).collect()
}

/// One of them.
pub async fn scim_user(conn: &mut Conn, tenant: &str, id: &str) -> Result<Option<ScimUserRow>> {
    let row = query(format!("{SCIM_USER} WHERE tenant_id = ? AND id = ? AND deleted_at IS NULL"))
        .bind(tenant)
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(Row::decode).transpose()
}

/// Who holds `username`, compared without case (SCIM's `userName` is not
/// case-exact), in any tenant: (id, tenant).
pub async fn username_holder(conn: &mut Conn, username: &str) -> Result<Option<(String, String)>> {
    let row = query("SELECT id, tenant_id FROM users WHERE LOWER(username) = LOWER(?)")
        .bind(username)
        .fetch_optional(conn)
        .await?;
    row.map(|r| r.decode::<Holder>().map(|h| (h.id, h.tenant_id))).transpose()
}

/// Who in `tenant` holds `external_id`: their id.
pub async fn external_id_holder(conn: &mut Conn, tenant: &str, external_id: &str) -> Result<Option<String>> {
    Ok(scalar("SELECT id FROM users WHERE tenant_id = ? AND external_id = ?")
        .bind(tenant)
        .bind(external_id)
        .fetch_optional(conn)
        .await?)
}

#[derive(sqlx::FromRow)]
struct Holder {
    id: String,
    tenant_id: String,
}

/// A user SCIM creates. They have no password (`!` is no argon2 hash:
/// nothing verifies against it) and no role of their own: the identity
/// provider's groups grant roles, an admin the rest.
pub struct NewScimUser<'a> {
    pub id: &'a str,
    pub tenant_id: &'a str,
    pub username: &'a str,
    pub external_id: Option<&'a str>,
    pub profile: &'a str,
    pub active: bool,
    pub now: DateTime<Utc>,
}

/// Inserts it; a username or external id already held is a `Conflict`.
pub async fn insert_scim_user(conn: &mut Conn, u: &NewScimUser<'_>) -> Result<()> {
    query(
        "INSERT INTO users (id, tenant_id, username, password_hash, roles, active, created_at, external_id, profile,
                            updated_at, deactivated_at)
         VALUES (?, ?, ?, '!', '[]', ?, ?, ?, ?, ?, ?)",
    )
    .bind(u.id)
    .bind(u.tenant_id)
    .bind(u.username)
    .bind(i64::from(u.active))
    .bind(ts(u.now))
    .bind(u.external_id)
    .bind(u.profile)
    .bind(ts(u.now))
    .bind((!u.active).then(|| ts(u.now)))
    .execute(conn)
    .await?;
    Ok(())
}

/// Replaces a user's SCIM attributes (not `active`: that is the lifecycle's).
/// A username or external id already held is a `Conflict`.
pub async fn update_scim_user(
    conn: &mut Conn,
    tenant: &str,
    id: &str,
    (username, external_id, profile): (&str, Option<&str>, &str),
    now: DateTime<Utc>,
) -> Result<bool> {
    let done = query(
        "UPDATE users SET username = ?, external_id = ?, profile = ?, updated_at = ?
         WHERE tenant_id = ? AND id = ? AND deleted_at IS NULL",
    )
    .bind(username)
    .bind(external_id)
    .bind(profile)
    .bind(ts(now))
    .bind(tenant)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Marks a deactivated user deleted by SCIM: hidden from SCIM from now on,
/// their username freed (`deleted.<id>`), their external id and group
/// memberships dropped. The row stays: approvals and the audit trail name it.
pub async fn tombstone(conn: &mut Conn, tenant: &str, id: &str, now: DateTime<Utc>) -> Result<bool> {
    let done = query(
        "UPDATE users SET username = ?, external_id = NULL, deleted_at = ?, updated_at = ?, slack_user_id = NULL,
                          oidc_issuer = NULL, oidc_subject = NULL
         WHERE tenant_id = ? AND id = ? AND deleted_at IS NULL AND active = 0",
    )
    .bind(format!("deleted.{id}"))
    .bind(ts(now))
    .bind(ts(now))
    .bind(tenant)
    .bind(id)
    .execute(&mut *conn)
    .await?;
    query("DELETE FROM scim_group_members WHERE user_id = ?").bind(id).execute(conn).await?;
    Ok(done.rows_affected() == 1)
}

/// Marks `updated_at` (SCIM's `meta.lastModified`).
pub async fn touch_user(conn: &mut Conn, id: &str, now: DateTime<Utc>) -> Result<()> {
    query("UPDATE users SET updated_at = ? WHERE id = ?").bind(ts(now)).bind(id).execute(conn).await?;
    Ok(())
}

/// What a user had when they were deactivated (the audit entry keeps it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Had {
    pub roles: Vec<Role>,
    pub limits: Vec<(String, u64)>,
}

/// Deactivates a user of `tenant` (compare-and-set on `active`): their own
/// roles and approval limits are taken away (what they had is returned);
/// `None` when they were not an active user of the tenant.
pub async fn deactivate(conn: &mut Conn, tenant: &str, id: &str, now: DateTime<Utc>) -> Result<Option<Had>> {
    let row = query(
        "UPDATE users SET active = 0, deactivated_at = ?, updated_at = ?
         WHERE tenant_id = ? AND id = ? AND active = 1 RETURNING roles",
    )
    .bind(ts(now))
    .bind(ts(now))
    .bind(tenant)
    .bind(id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let roles: OwnRoles = row.decode()?;
    let limits = query("SELECT currency, limit_minor FROM approval_limits WHERE user_id = ? ORDER BY currency")
        .bind(id)
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|r| r.decode::<Limit>().map(|l| (l.currency, l.limit_minor)))
        .collect::<Result<Vec<_>>>()?;
    query("UPDATE users SET roles = '[]' WHERE id = ?").bind(id).execute(&mut *conn).await?;
    query("DELETE FROM approval_limits WHERE user_id = ?").bind(id).execute(conn).await?;
    Ok(Some(Had { roles: roles.roles, limits }))
}

#[derive(sqlx::FromRow)]
struct OwnRoles {
    #[sqlx(try_from = "Roles")]
    roles: Vec<Role>,
}

#[derive(sqlx::FromRow)]
struct Limit {
    currency: String,
    #[sqlx(try_from = "super::Unsigned<u64>")]
    limit_minor: u64,
}

/// Reactivates a deactivated user of `tenant`; false when there is none.
pub async fn reactivate(conn: &mut Conn, tenant: &str, id: &str, now: DateTime<Utc>) -> Result<bool> {
    let done = query(
        "UPDATE users SET active = 1, deactivated_at = NULL, updated_at = ?
         WHERE tenant_id = ? AND id = ? AND active = 0 AND deleted_at IS NULL",
    )
    .bind(ts(now))
    .bind(tenant)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Ends every passkey of the user; the removed rows (each then audited).
pub async fn remove_passkeys(conn: &mut Conn, tenant: &str, user: &str) -> Result<Vec<super::passkeys::PasskeyRow>> {
    let rows = query("DELETE FROM passkeys WHERE tenant_id = ? AND user_id = ? RETURNING *")
        .bind(tenant)
        .bind(user)
        .fetch_all(conn)
        .await?;
    rows.iter().map(Row::decode).collect()
}

/// Expires the user's unused passkey enrolment codes; how many.
pub async fn expire_enrolments(conn: &mut Conn, user: &str, now: DateTime<Utc>) -> Result<u64> {
    let done =
        query("UPDATE passkey_enrolments SET expires_at = ? WHERE user_id = ? AND used_at IS NULL AND expires_at > ?")
            .bind(ts(now))
            .bind(user)
            .bind(ts(now))
            .execute(conn)
            .await?;
    Ok(done.rows_affected())
}

/// Removes the user's Web Push devices and drops what is still queued for
/// them (email too); (devices, notifications).
pub async fn stop_reaching(conn: &mut Conn, user: &str, now: DateTime<Utc>) -> Result<(u64, u64)> {
    let devices = query("DELETE FROM push_subscriptions WHERE user_id = ?").bind(user).execute(&mut *conn).await?;
    let queued = query(
        "UPDATE notifications SET status = 'abandoned', finished_at = ?, last_error = 'deactivated'
         WHERE user_id = ? AND status = 'pending'",
    )
    .bind(ts(now))
    .bind(user)
    .execute(conn)
    .await?;
    Ok((devices.rows_affected(), queued.rows_affected()))
}

/// Ends every delegation from or to the user that is active or waiting;
/// their ids.
pub async fn end_delegations(conn: &mut Conn, user: &str, now: DateTime<Utc>) -> Result<Vec<String>> {
    let rows = query(
        "UPDATE delegations SET status = CASE WHEN status = 'pending' THEN 'refused' ELSE 'revoked' END, ended_at = ?
         WHERE (delegator_id = ? OR delegate_id = ?) AND status IN ('active', 'pending') RETURNING id",
    )
    .bind(ts(now))
    .bind(user)
    .bind(user)
    .fetch_all(conn)
    .await?;
    rows.iter().map(|r| r.decode::<Id>().map(|i| i.id)).collect()
}

#[derive(sqlx::FromRow)]
struct Id {
    id: String,
}

/// A proposal touched by someone's deactivation.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Touched {
    pub id: String,
    pub tenant_id: String,
    pub request_hash: String,
}

/// Withdraws the approvals the user gave (or that were given for them) in
/// the current round of the tenant's proposals still waiting: they stay,
/// marked, and no longer count. The proposals touched.
pub async fn withdraw_approvals(conn: &mut Conn, tenant: &str, user: &str, now: DateTime<Utc>) -> Result<Vec<Touched>> {
    let touched = query(
        "SELECT DISTINCT p.id, p.tenant_id, p.request_hash FROM proposals p
         JOIN approvals a ON a.proposal_id = p.id AND a.round = p.approval_round
         WHERE p.tenant_id = ? AND p.status = 'pending_approval' AND a.decision = 'approve'
           AND a.withdrawn_at IS NULL AND (a.approver_id = ? OR a.on_behalf_of = ?)
         ORDER BY p.id",
    )
    .bind(tenant)
    .bind(user)
    .bind(user)
    .fetch_all(&mut *conn)
    .await?
    .iter()
    .map(Row::decode)
    .collect::<Result<Vec<Touched>>>()?;
    for t in &touched {
        query(
            "UPDATE approvals SET withdrawn_at = ?
             WHERE proposal_id = ? AND withdrawn_at IS NULL AND decision = 'approve'
               AND round = (SELECT approval_round FROM proposals WHERE id = ?) AND (approver_id = ? OR on_behalf_of = ?)",
        )
        .bind(ts(now))
        .bind(&t.id)
        .bind(&t.id)
        .bind(user)
        .bind(user)
        .execute(&mut *conn)
        .await?;
        super::proposals::touch(conn, &t.id, now).await?;
    }
    Ok(touched)
}

/// The tenant's approved proposals (token not redeemed yet) whose current
/// approvals include the user's.
pub async fn approved_with(conn: &mut Conn, tenant: &str, user: &str) -> Result<Vec<Touched>> {
    let rows = query(
        "SELECT DISTINCT p.id, p.tenant_id, p.request_hash FROM proposals p
         JOIN approvals a ON a.proposal_id = p.id AND a.round = p.approval_round
         WHERE p.tenant_id = ? AND p.status = 'approved' AND a.decision = 'approve'
           AND (a.approver_id = ? OR a.on_behalf_of = ?)
         ORDER BY p.id",
    )
    .bind(tenant)
    .bind(user)
    .bind(user)
    .fetch_all(conn)
    .await?;
    rows.iter().map(Row::decode).collect()
}

/// The tenant's agents acting for the user.
pub async fn agents_acting_for(conn: &mut Conn, tenant: &str, user: &str) -> Result<Vec<String>> {
    Ok(scalar("SELECT id FROM agents WHERE tenant_id = ? AND acts_for = ? ORDER BY id")
        .bind(tenant)
        .bind(user)
        .fetch_all(conn)
        .await?)
}

/// Freezes an agent because the person it acts for (`user`) left; false
/// when it was frozen already (an admin's freeze keeps its own reason).
pub async fn freeze_for_offboarding(
    conn: &mut Conn,
    (tenant, agent): (&str, &str),
    (by, reason, user): (&str, &str, &str),
    now: DateTime<Utc>,
) -> Result<bool> {
    let done = query(
        "INSERT INTO freezes (scope, tenant_id, agent_id, frozen_by, reason, at, offboarding_of)
         VALUES ('agent', ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
    )
    .bind(tenant)
    .bind(agent)
    .bind(by)
    .bind(reason)
    .bind(ts(now))
    .bind(user)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The offboarding freeze of an agent, if that is what holds it: the
/// user it waits for, the reason and since when.
pub async fn offboarding_freeze(
    conn: &mut Conn,
    tenant: &str,
    agent: &str,
) -> Result<Option<(String, String, DateTime<Utc>)>> {
    let row = query(
        "SELECT offboarding_of, reason, at FROM freezes
         WHERE scope = 'agent' AND tenant_id = ? AND agent_id = ? AND offboarding_of IS NOT NULL",
    )
    .bind(tenant)
    .bind(agent)
    .fetch_optional(conn)
    .await?;
    row.map(|r| r.decode::<OffboardingFreeze>().map(|f| (f.offboarding_of, f.reason, f.at))).transpose()
}

#[derive(sqlx::FromRow)]
struct OffboardingFreeze {
    offboarding_of: String,
    reason: String,
    #[sqlx(try_from = "Timestamp")]
    at: DateTime<Utc>,
}

/// Lifts an agent's offboarding freeze (its acts_for was reassigned); an
/// admin's kill-switch freeze stays. Whether there was one.
pub async fn lift_offboarding_freeze(conn: &mut Conn, tenant: &str, agent: &str) -> Result<bool> {
    let done = query(
        "DELETE FROM freezes WHERE scope = 'agent' AND tenant_id = ? AND agent_id = ? AND offboarding_of IS NOT NULL",
    )
    .bind(tenant)
    .bind(agent)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Points an agent at another person (its key stays).
pub async fn set_acts_for(conn: &mut Conn, tenant: &str, agent: &str, user: &str) -> Result<bool> {
    let done = query("UPDATE agents SET acts_for = ? WHERE tenant_id = ? AND id = ?")
        .bind(user)
        .bind(tenant)
        .bind(agent)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// A console session as its owner and admins see it (never its id).
#[derive(Debug, Clone)]
pub struct SessionInfo {
    /// The first 8 hex digits of the SHA-256 of its id: tells sessions apart.
    pub tag: String,
    pub data: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// Whether it is the one asking.
    pub current: bool,
}

#[derive(sqlx::FromRow)]
struct SessionRow {
    id: String,
    data: String,
    #[sqlx(try_from = "Timestamp")]
    created_at: DateTime<Utc>,
    #[sqlx(try_from = "Timestamp")]
    expires_at: DateTime<Utc>,
}

/// The user's unexpired sessions, newest first; `current` marks the asker's.
pub async fn sessions_of(
    pool: &Pool,
    user: &str,
    current: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Vec<SessionInfo>> {
    use sha2::{Digest, Sha256};
    let rows = query(
        "SELECT id, data, created_at, expires_at FROM console_sessions WHERE user_id = ? AND expires_at > ?
         ORDER BY created_at DESC, id",
    )
    .bind(user)
    .bind(ts(now))
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|r| {
            r.decode::<SessionRow>().map(|s| SessionInfo {
                tag: hex::encode(&Sha256::digest(s.id.as_bytes())[..4]),
                current: current == Some(s.id.as_str()),
                data: s.data,
                created_at: s.created_at,
                expires_at: s.expires_at,
            })
        })
        .collect()
}

/// A tenant's SCIM token, without its secret.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ScimToken {
    pub id: String,
    pub tenant_id: String,
    pub label: String,
    pub created_by: String,
    pub confirmed_by: Option<String>,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
    #[sqlx(try_from = "OptTimestamp")]
    pub revoked_at: Option<DateTime<Utc>>,
    #[sqlx(try_from = "OptTimestamp")]
    pub last_used_at: Option<DateTime<Utc>>,
}

/// A token two admins agreed on (only its SHA-256).
pub struct NewScimToken<'a> {
    pub id: &'a str,
    pub tenant_id: &'a str,
    pub token_sha256: &'a str,
    pub label: &'a str,
    pub created_by: &'a str,
    pub confirmed_by: Option<&'a str>,
    pub now: DateTime<Utc>,
}

pub async fn insert_token(conn: &mut Conn, t: &NewScimToken<'_>) -> Result<()> {
    query(
        "INSERT INTO scim_tokens (id, tenant_id, token_sha256, label, created_by, confirmed_by, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(t.id)
    .bind(t.tenant_id)
    .bind(t.token_sha256)
    .bind(t.label)
    .bind(t.created_by)
    .bind(t.confirmed_by)
    .bind(ts(t.now))
    .execute(conn)
    .await?;
    Ok(())
}

/// The unrevoked token whose key hashes to `sha256`.
pub async fn token_by_hash(pool: &Pool, sha256: &str) -> Result<Option<ScimToken>> {
    let row = query(
        "SELECT id, tenant_id, label, created_by, confirmed_by, created_at, revoked_at, last_used_at FROM scim_tokens
         WHERE token_sha256 = ? AND revoked_at IS NULL",
    )
    .bind(sha256)
    .fetch_optional(pool)
    .await?;
    row.as_ref().map(Row::decode).transpose()
}

/// Notes a token's use, at most once a minute (a write per request would
/// be a write per SCIM call).
pub async fn token_used(pool: &Pool, id: &str, now: DateTime<Utc>) -> Result<()> {
    query("UPDATE scim_tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)")
        .bind(ts(now))
        .bind(id)
        .bind(ts(now - chrono::Duration::seconds(60)))
        .execute(pool)
        .await?;
    Ok(())
}

/// The tenant's tokens, newest first.
pub async fn tokens_of(pool: &Pool, tenant: &str) -> Result<Vec<ScimToken>> {
    let rows = query(
        "SELECT id, tenant_id, label, created_by, confirmed_by, created_at, revoked_at, last_used_at FROM scim_tokens
         WHERE tenant_id = ? ORDER BY created_at DESC, id",
    )
    .bind(tenant)
    .fetch_all(pool)
    .await?;
    rows.iter().map(Row::decode).collect()
}

/// Revokes a token of the tenant; false when there was none unrevoked.
pub async fn revoke_token(conn: &mut Conn, tenant: &str, id: &str, now: DateTime<Utc>) -> Result<bool> {
    let done = query("UPDATE scim_tokens SET revoked_at = ? WHERE tenant_id = ? AND id = ? AND revoked_at IS NULL")
        .bind(ts(now))
        .bind(tenant)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// An identity provider's group.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct GroupRow {
    pub id: String,
    pub tenant_id: String,
    pub display_name: String,
    pub external_id: Option<String>,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
    #[sqlx(try_from = "Timestamp")]
    pub updated_at: DateTime<Utc>,
}

pub async fn groups(conn: &mut Conn, tenant: &str) -> Result<Vec<GroupRow>> {
    let rows = query("SELECT * FROM scim_groups WHERE tenant_id = ? ORDER BY created_at, id")
        .bind(tenant)
        .fetch_all(conn)
        .await?;
    rows.iter().map(Row::decode).collect()
}

pub async fn group(conn: &mut Conn, tenant: &str, id: &str) -> Result<Option<GroupRow>> {
    let row = query("SELECT * FROM scim_groups WHERE tenant_id = ? AND id = ?")
        .bind(tenant)
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(Row::decode).transpose()
}

/// The group of the tenant named `display_name` (without case), if any.
pub async fn group_named(conn: &mut Conn, tenant: &str, display_name: &str) -> Result<Option<String>> {
    Ok(scalar("SELECT id FROM scim_groups WHERE tenant_id = ? AND LOWER(display_name) = LOWER(?)")
        .bind(tenant)
        .bind(display_name)
        .fetch_optional(conn)
        .await?)
}

/// Every membership of the tenant's groups: (group id, user id).
pub async fn memberships(conn: &mut Conn, tenant: &str) -> Result<Vec<(String, String)>> {
    let rows = query(
        "SELECT m.group_id, m.user_id FROM scim_group_members m JOIN scim_groups g ON g.id = m.group_id
         WHERE g.tenant_id = ? ORDER BY m.group_id, m.user_id",
    )
    .bind(tenant)
    .fetch_all(conn)
    .await?;
    rows.iter().map(|r| r.decode::<Membership>().map(|m| (m.group_id, m.user_id))).collect()
}

#[derive(sqlx::FromRow)]
struct Membership {
    group_id: String,
    user_id: String,
}

/// The names of the groups the user is in: the SCIM groups they are a
/// member of and the groups their single sign-on provider last named.
pub async fn group_names_of(conn: &mut Conn, user: &str) -> Result<Vec<String>> {
    let mut names: Vec<String> = scalar(
        "SELECT g.display_name FROM scim_group_members m JOIN scim_groups g ON g.id = m.group_id
         WHERE m.user_id = ?",
    )
    .bind(user)
    .fetch_all(&mut *conn)
    .await?;
    let oidc: Option<String> =
        scalar("SELECT oidc_groups FROM users WHERE id = ?").bind(user).fetch_optional(conn).await?;
    names.extend(oidc.and_then(|json| serde_json::from_str::<Vec<String>>(&json).ok()).unwrap_or_default());
    names.sort();
    names.dedup();
    Ok(names)
}

/// Records the groups the user's single sign-on provider named at this
/// sign-in; false when they are the ones already recorded.
pub async fn set_oidc_groups(conn: &mut Conn, user: &str, names: &[String]) -> Result<bool> {
    let names = serde_json::to_string(names).expect("names serialize");
    let done = query("UPDATE users SET oidc_groups = ? WHERE id = ? AND oidc_groups <> ?")
        .bind(&names)
        .bind(user)
        .bind(&names)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Creates or replaces a group's name and external id (a name another
/// group of the tenant holds is a `Conflict`).
pub async fn put_group(conn: &mut Conn, g: &GroupRow) -> Result<()> {
    query(
        "INSERT INTO scim_groups (id, tenant_id, display_name, external_id, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET display_name = excluded.display_name, external_id = excluded.external_id,
             updated_at = excluded.updated_at",
    )
    .bind(&g.id)
    .bind(&g.tenant_id)
    .bind(&g.display_name)
    .bind(&g.external_id)
    .bind(ts(g.created_at))
    .bind(ts(g.updated_at))
    .execute(conn)
    .await?;
    Ok(())
}

/// Sets a group's members exactly; the users whose membership changed.
pub async fn set_members(conn: &mut Conn, group: &str, members: &[String]) -> Result<Vec<String>> {
    let before: Vec<String> =
        scalar("SELECT user_id FROM scim_group_members WHERE group_id = ?").bind(group).fetch_all(&mut *conn).await?;
    let mut changed = Vec::new();
    for gone in before.iter().filter(|u| !members.contains(u)) {
        query("DELETE FROM scim_group_members WHERE group_id = ? AND user_id = ?")
            .bind(group)
            .bind(gone)
            .execute(&mut *conn)
            .await?;
        changed.push(gone.clone());
    }
    for new in members.iter().filter(|u| !before.contains(u)) {
        query("INSERT INTO scim_group_members (group_id, user_id) VALUES (?, ?) ON CONFLICT DO NOTHING")
            .bind(group)
            .bind(new)
            .execute(&mut *conn)
            .await?;
        changed.push(new.clone());
    }
    Ok(changed)
}

/// Deletes a group of the tenant and its memberships; its former members.
pub async fn delete_group(conn: &mut Conn, tenant: &str, id: &str) -> Result<Option<Vec<String>>> {
    if group(&mut *conn, tenant, id).await?.is_none() {
        return Ok(None);
    }
    let members: Vec<String> = scalar("DELETE FROM scim_group_members WHERE group_id = ? RETURNING user_id")
        .bind(id)
        .fetch_all(&mut *conn)
        .await?;
    query("DELETE FROM scim_groups WHERE tenant_id = ? AND id = ?").bind(tenant).bind(id).execute(conn).await?;
    Ok(Some(members))
}

/// Stores what the identity provider's groups grant the user (roles,
/// approval groups); whether it changed.
pub async fn set_idp_grants(conn: &mut Conn, user: &str, roles: &[Role], groups: &[String]) -> Result<bool> {
    let roles = serde_json::to_string(roles).expect("roles serialize");
    let groups = serde_json::to_string(groups).expect("names serialize");
    let done = query(
        "UPDATE users SET idp_roles = ?, idp_approval_groups = ?
         WHERE id = ? AND (idp_roles <> ? OR idp_approval_groups <> ?)",
    )
    .bind(&roles)
    .bind(&groups)
    .bind(user)
    .bind(&roles)
    .bind(&groups)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Every user of any tenant who is in some group (a mapping read anew at
/// start recomputes their grants): (tenant, user id).
pub async fn users_in_groups(pool: &Pool) -> Result<Vec<(String, String)>> {
    let rows = query(
        "SELECT DISTINCT g.tenant_id AS group_id, m.user_id FROM scim_group_members m
         JOIN scim_groups g ON g.id = m.group_id
         UNION SELECT tenant_id AS group_id, id AS user_id FROM users
         WHERE idp_roles <> '[]' OR idp_approval_groups <> '[]' OR oidc_groups <> '[]'",
    )
    .fetch_all(pool)
    .await?;
    rows.iter().map(|r| r.decode::<Membership>().map(|m| (m.group_id, m.user_id))).collect()
}

/// One line of a person's history (the audit trail's entries about them).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct HistoryEntry {
    pub at: String,
    pub actor: String,
    pub action: String,
    pub data: String,
}

/// The newest `limit` audit entries about user `id` of `tenant`: their
/// lifecycle, provisioning, grants and sessions (by them or about them).
pub async fn history_of(pool: &Pool, tenant: &str, id: &str, limit: i64) -> Result<Vec<HistoryEntry>> {
    let rows = query(
        "SELECT at, actor, action, data FROM audit_log
         WHERE tenant_id = ? AND (data LIKE ? OR (actor = ? AND action LIKE 'session.%'))
           AND (action LIKE 'user.%' OR action LIKE 'scim.user.%' OR action LIKE 'session.%'
                OR action = 'approval.withdrawn' OR action = 'kill_switch.frozen' OR action = 'passkey.removed')
         ORDER BY seq DESC LIMIT ?",
    )
    .bind(tenant)
    .bind(format!("%\"{id}\"%"))
    .bind(format!("user:{id}"))
    .bind(limit)
    .fetch_all(pool)
    .await?;
    rows.iter().map(Row::decode).collect()
}
