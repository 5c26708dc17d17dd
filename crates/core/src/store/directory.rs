//! Tenants, users, agents, payees and budgets: the registry the rest of the
//! system checks against. Upserts are idempotent (apply twice, same state).

use crate::domain::Role;
use std::collections::BTreeMap;

use super::{new_id, query, scalar, ts, Conn, Flag, Json, OptTimestamp, Pool, Result, Roles, Row, Unsigned};
use chrono::{DateTime, Utc};

/// Whether a row was created or changed by an upsert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upsert {
    Created,
    Updated,
    Unchanged,
}

pub async fn upsert_tenant(conn: &mut Conn, id: &str, name: &str) -> Result<Upsert> {
    let existing: Option<String> =
        scalar("SELECT name FROM tenants WHERE id = ?").bind(id).fetch_optional(&mut *conn).await?;
    match existing {
        Some(n) if n == name => Ok(Upsert::Unchanged),
        Some(_) => {
            query("UPDATE tenants SET name = ? WHERE id = ?").bind(name).bind(id).execute(&mut *conn).await?;
            Ok(Upsert::Updated)
        }
        None => {
            query("INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)")
                .bind(id)
                .bind(name)
                .bind(ts(crate::platform::clock::system_now()))
                .execute(&mut *conn)
                .await?;
            Ok(Upsert::Created)
        }
    }
}

pub async fn tenant_exists(conn: &mut Conn, id: &str) -> Result<bool> {
    Ok(scalar::<i64>("SELECT COUNT(*) FROM tenants WHERE id = ?").bind(id).fetch_one(conn).await? > 0)
}

pub async fn count_tenants(pool: &Pool) -> Result<i64> {
    Ok(scalar("SELECT COUNT(*) FROM tenants").fetch_one(pool).await?)
}

pub async fn set_budget(conn: &mut Conn, tenant: &str, currency: &str, limit_minor: u64) -> Result<()> {
    query(
        "INSERT INTO budgets (tenant_id, currency, daily_limit_minor) VALUES (?, ?, ?)
         ON CONFLICT (tenant_id, currency) DO UPDATE SET daily_limit_minor = excluded.daily_limit_minor",
    )
    .bind(tenant)
    .bind(currency)
    .bind(limit_minor as i64)
    .execute(conn)
    .await?;
    Ok(())
}

/// A user as the registry wants it to be.
#[derive(Debug, Clone)]
pub struct UserSpec {
    pub tenant_id: String,
    pub username: String,
    /// An argon2id PHC string, never a plain password.
    pub password_hash: String,
    pub roles: Vec<Role>,
    pub approval_limits_minor: BTreeMap<String, u64>,
    pub slack_user_id: Option<String>,
    /// The identity at an OpenID provider this user signs in as: `None`
    /// keeps what is stored (the console's user form does not show it),
    /// `Some(None)` unlinks, `Some(Some(..))` links.
    pub oidc: Option<Option<OidcIdentity>>,
}

/// A person at an OpenID provider: the issuer exactly as its ID tokens say
/// it and the subject, its stable id for them. Sign-in by single sign-on
/// finds a user by this pair and by nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcIdentity {
    pub issuer: String,
    pub subject: String,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct User {
    pub id: String,
    pub tenant_id: String,
    pub username: String,
    #[sqlx(try_from = "Roles")]
    pub roles: Vec<Role>,
    pub slack_user_id: Option<String>,
    /// Where their email notifications go (`notify`), when they gave one.
    pub email: Option<String>,
    /// Their IANA time zone and quiet hours in it (`notify::quiet`): both or neither.
    pub time_zone: Option<String>,
    pub quiet_hours: Option<String>,
    #[sqlx(try_from = "Flag")]
    pub active: bool,
    /// The roles the identity provider's groups grant them (`people::groups`;
    /// migration 0031). `roles` already includes them: those are the roles
    /// the registry gave plus these.
    #[sqlx(try_from = "Roles")]
    pub idp_roles: Vec<Role>,
    /// The tenant's approval groups the identity provider's groups put them in.
    #[sqlx(try_from = "Json<Vec<String>>")]
    pub idp_approval_groups: Vec<String>,
    /// When they were deactivated (offboarding), while they are.
    #[sqlx(try_from = "OptTimestamp")]
    pub deactivated_at: Option<DateTime<Utc>>,
    /// Deleted by SCIM: the row stays for what names it, the username is freed.
    #[sqlx(try_from = "OptTimestamp")]
    pub deleted_at: Option<DateTime<Utc>>,
    /// Rows of their own (`approval_limits`), read with the user's.
    #[sqlx(skip)]
    pub approval_limits_minor: BTreeMap<String, u64>,
    #[sqlx(flatten, try_from = "OidcColumns")]
    pub oidc: Option<OidcIdentity>,
}

/// A user's link to an OpenID provider, as stored: both columns or neither.
#[derive(sqlx::FromRow)]
struct OidcColumns {
    oidc_issuer: Option<String>,
    oidc_subject: Option<String>,
}

impl From<OidcColumns> for Option<OidcIdentity> {
    fn from(c: OidcColumns) -> Self {
        match (c.oidc_issuer, c.oidc_subject) {
            (Some(issuer), Some(subject)) => Some(OidcIdentity { issuer, subject }),
            _ => None,
        }
    }
}

/// Who holds a username.
#[derive(sqlx::FromRow)]
struct Holder {
    id: String,
    tenant_id: String,
}

/// One approval limit of a user.
#[derive(sqlx::FromRow)]
struct Limit {
    currency: String,
    #[sqlx(try_from = "Unsigned<u64>")]
    limit_minor: u64,
}

/// Creates the user, or updates the one with that username. Returns its id,
/// or None when another tenant holds the username (usernames are global,
/// they are what people sign in with).
pub async fn upsert_user(conn: &mut Conn, spec: &UserSpec) -> Result<Option<(String, Upsert)>> {
    let roles = serde_json::to_string(&spec.roles).expect("roles serialize");
    let existing = query("SELECT id, tenant_id FROM users WHERE username = ?")
        .bind(&spec.username)
        .fetch_optional(&mut *conn)
        .await?;
    let (id, outcome) = match existing {
        Some(row) => {
            let Holder { id, tenant_id: tenant } = row.decode()?;
            if tenant != spec.tenant_id {
                return Ok(None);
            }
            let changed = query(
                "UPDATE users SET password_hash = ?, roles = ?, slack_user_id = ?
                 WHERE id = ? AND (password_hash <> ? OR roles <> ? OR COALESCE(slack_user_id, '') <> COALESCE(?, ''))",
            )
            .bind(&spec.password_hash)
            .bind(&roles)
            .bind(&spec.slack_user_id)
            .bind(&id)
            .bind(&spec.password_hash)
            .bind(&roles)
            .bind(&spec.slack_user_id)
            .execute(&mut *conn)
            .await?
            .rows_affected();
            let relinked = match &spec.oidc {
                None => 0,
                Some(link) => set_oidc(&mut *conn, &id, link.as_ref()).await?,
            };
            (id, if changed + relinked > 0 { Upsert::Updated } else { Upsert::Unchanged })
        }
        None => {
            let id = new_id("usr", crate::platform::clock::system_now());
            let link = spec.oidc.clone().flatten();
            query(
                "INSERT INTO users (id, tenant_id, username, password_hash, roles, slack_user_id, active, created_at,
                                    oidc_issuer, oidc_subject)
                 VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?)",
            )
            .bind(&id)
            .bind(&spec.tenant_id)
            .bind(&spec.username)
            .bind(&spec.password_hash)
            .bind(&roles)
            .bind(&spec.slack_user_id)
            .bind(ts(crate::platform::clock::system_now()))
            .bind(link.as_ref().map(|l| &l.issuer))
            .bind(link.as_ref().map(|l| &l.subject))
            .execute(&mut *conn)
            .await?;
            (id, Upsert::Created)
        }
    };
    let before = limits_of(&mut *conn, &id).await?;
    if before != spec.approval_limits_minor {
        query("DELETE FROM approval_limits WHERE user_id = ?").bind(&id).execute(&mut *conn).await?;
        for (currency, limit) in &spec.approval_limits_minor {
            query("INSERT INTO approval_limits (user_id, currency, limit_minor) VALUES (?, ?, ?)")
                .bind(&id)
                .bind(currency)
                .bind(*limit as i64)
                .execute(&mut *conn)
                .await?;
        }
        if outcome == Upsert::Unchanged {
            return Ok(Some((id, Upsert::Updated)));
        }
    }
    Ok(Some((id, outcome)))
}

/// Links the user to `link` (or unlinks them); the number of rows changed.
/// An identity already linked to another user is a `Conflict`.
async fn set_oidc(conn: &mut Conn, user_id: &str, link: Option<&OidcIdentity>) -> Result<u64> {
    let (issuer, subject) = (link.map(|l| l.issuer.as_str()), link.map(|l| l.subject.as_str()));
    Ok(query(
        "UPDATE users SET oidc_issuer = ?, oidc_subject = ?
         WHERE id = ? AND (COALESCE(oidc_issuer, '') <> COALESCE(?, '') OR COALESCE(oidc_subject, '') <> COALESCE(?, ''))",
    )
    .bind(issuer)
    .bind(subject)
    .bind(user_id)
    .bind(issuer)
    .bind(subject)
    .execute(conn)
    .await?
    .rows_affected())
}

async fn limits_of(conn: &mut Conn, user_id: &str) -> Result<BTreeMap<String, u64>> {
    let rows = query("SELECT currency, limit_minor FROM approval_limits WHERE user_id = ?")
        .bind(user_id)
        .fetch_all(conn)
        .await?;
    rows.iter().map(|r| r.decode::<Limit>().map(|l| (l.currency, l.limit_minor))).collect()
}

/// The users `filter` selects (a condition on `u` with `?`s for its values,
/// and any `ORDER BY`; text of this module only, never a value), each with
/// their approval limits joined into one column by a subquery: a user and
/// their limits are one statement, one round trip to the reader's thread
/// (every console request and every approver a commit rechecks reads one).
fn select_users(pg: bool, filter: &'static str) -> String {
    let joined = if pg { "string_agg" } else { "group_concat" };
    format!(
        "SELECT u.*, (SELECT {joined}(l.currency || ':' || CAST(l.limit_minor AS TEXT), ';') \
         FROM approval_limits l WHERE l.user_id = u.id) AS approval_limits_joined FROM users u WHERE {filter}"
    )
}

/// A user read by [`select_users`], their limits parsed from the joined
/// column (`USD:100000;EUR:5000`).
fn user_with_limits(row: &Row) -> Result<User> {
    let mut user: User = row.decode()?;
    for role in &user.idp_roles {
        if !user.roles.contains(role) {
            user.roles.push(*role);
        }
    }
    let joined: Option<String> = row.try_get("approval_limits_joined")?;
    for limit in joined.as_deref().unwrap_or_default().split(';').filter(|l| !l.is_empty()) {
        let parsed = limit.rsplit_once(':').and_then(|(currency, minor)| Some((currency, minor.parse::<u64>().ok()?)));
        let Some((currency, minor)) = parsed else {
            return Err(super::StoreError::corrupt("approval_limits", "not a currency and a non-negative limit"));
        };
        user.approval_limits_minor.insert(currency.to_owned(), minor);
    }
    Ok(user)
}

async fn one_user(conn: &mut Conn, filter: &'static str, values: &[&str]) -> Result<Option<User>> {
    let q = values.iter().fold(query(select_users(conn.is_postgres(), filter)), |q, v| q.bind(*v));
    q.fetch_optional(&mut *conn).await?.as_ref().map(user_with_limits).transpose()
}

pub async fn user_by_username(conn: &mut Conn, username: &str) -> Result<Option<User>> {
    one_user(conn, "u.username = ?", &[username]).await
}

/// The user linked to `issuer` + `subject` (exactly; never by any other
/// claim such as an e-mail address).
pub async fn user_by_oidc(conn: &mut Conn, issuer: &str, subject: &str) -> Result<Option<User>> {
    one_user(conn, "u.oidc_issuer = ? AND u.oidc_subject = ?", &[issuer, subject]).await
}

pub async fn user_by_id(conn: &mut Conn, id: &str) -> Result<Option<User>> {
    one_user(conn, "u.id = ?", &[id]).await
}

/// An agent as the registry wants it to be.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    pub tenant_id: String,
    pub id: String,
    /// Lowercase hex SHA-256 of the bearer key; the key itself is never stored.
    pub key_sha256: String,
    /// The user id of the human this agent acts for.
    pub acts_for: String,
    pub source_accounts: Vec<String>,
    pub purposes: Vec<String>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Agent {
    pub tenant_id: String,
    pub id: String,
    pub acts_for: String,
    #[sqlx(try_from = "Json<Vec<String>>")]
    pub source_accounts: Vec<String>,
    #[sqlx(try_from = "Json<Vec<String>>")]
    pub purposes: Vec<String>,
    #[sqlx(try_from = "Flag")]
    pub active: bool,
    /// The user its current key was shown to on the console (migration
    /// 0018); `None` when the operator made it (CLI, provisioning file).
    pub key_holder: Option<String>,
    /// Frozen because the person it acted for was deactivated: that
    /// user's id (migration 0031). Read only by [`agent_by_key_hash`].
    #[sqlx(default)]
    pub offboarding_of: Option<String>,
}

pub async fn upsert_agent(conn: &mut Conn, spec: &AgentSpec) -> Result<Upsert> {
    let sources = serde_json::to_string(&spec.source_accounts).expect("serialize");
    let purposes = serde_json::to_string(&spec.purposes).expect("serialize");
    let exists: i64 = scalar("SELECT COUNT(*) FROM agents WHERE tenant_id = ? AND id = ?")
        .bind(&spec.tenant_id)
        .bind(&spec.id)
        .fetch_one(&mut *conn)
        .await?;
    if exists == 0 {
        query(
            "INSERT INTO agents (tenant_id, id, key_sha256, acts_for, source_accounts, purposes, active, created_at)
             VALUES (?, ?, ?, ?, ?, ?, 1, ?)",
        )
        .bind(&spec.tenant_id)
        .bind(&spec.id)
        .bind(&spec.key_sha256)
        .bind(&spec.acts_for)
        .bind(&sources)
        .bind(&purposes)
        .bind(ts(crate::platform::clock::system_now()))
        .execute(&mut *conn)
        .await?;
        return Ok(Upsert::Created);
    }
    // A new key is no longer the key holder's: the operator (or the console
    // change applying this, which names the new holder after) has it.
    let changed = query(
        "UPDATE agents SET key_holder = CASE WHEN key_sha256 = ? THEN key_holder END,
             key_sha256 = ?, acts_for = ?, source_accounts = ?, purposes = ?
         WHERE tenant_id = ? AND id = ?
           AND (key_sha256 <> ? OR acts_for <> ? OR source_accounts <> ? OR purposes <> ?)",
    )
    .bind(&spec.key_sha256)
    .bind(&spec.key_sha256)
    .bind(&spec.acts_for)
    .bind(&sources)
    .bind(&purposes)
    .bind(&spec.tenant_id)
    .bind(&spec.id)
    .bind(&spec.key_sha256)
    .bind(&spec.acts_for)
    .bind(&sources)
    .bind(&purposes)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(if changed > 0 { Upsert::Updated } else { Upsert::Unchanged })
}

/// Names the user an agent's current key was shown to (a confirmed console
/// change), in the caller's transaction.
pub async fn set_key_holder(conn: &mut Conn, tenant: &str, agent: &str, user_id: &str) -> Result<()> {
    query("UPDATE agents SET key_holder = ? WHERE tenant_id = ? AND id = ?")
        .bind(user_id)
        .bind(tenant)
        .bind(agent)
        .execute(conn)
        .await?;
    Ok(())
}

/// The active agent whose key hashes to `key_sha256`.
pub async fn agent_by_key_hash(pool: &Pool, key_sha256: &str) -> Result<Option<Agent>> {
    let row = query(
        "SELECT a.*, (SELECT f.offboarding_of FROM freezes f WHERE f.scope = 'agent' AND f.tenant_id = a.tenant_id
             AND f.agent_id = a.id AND f.offboarding_of IS NOT NULL) AS offboarding_of
         FROM agents a WHERE a.key_sha256 = ? AND a.active = 1",
    )
    .bind(key_sha256)
    .fetch_optional(pool)
    .await?;
    row.as_ref().map(Row::decode).transpose()
}

pub async fn agent(conn: &mut Conn, tenant: &str, id: &str) -> Result<Option<Agent>> {
    let row =
        query("SELECT * FROM agents WHERE tenant_id = ? AND id = ?").bind(tenant).bind(id).fetch_optional(conn).await?;
    row.as_ref().map(Row::decode).transpose()
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Payee {
    pub tenant_id: String,
    pub id: String,
    pub legal_name: String,
    #[sqlx(try_from = "Flag")]
    pub trusted: bool,
}

pub async fn upsert_payee(conn: &mut Conn, p: &Payee) -> Result<Upsert> {
    let existing: Option<Payee> = payee(&mut *conn, &p.tenant_id, &p.id).await?;
    match existing {
        Some(stored) if stored.legal_name == p.legal_name && stored.trusted == p.trusted => Ok(Upsert::Unchanged),
        Some(stored) => {
            // A new legal name is a change of the payee's details (a risk
            // signal for a while: `risk::signals`); trust alone is not.
            let renamed = stored.legal_name != p.legal_name;
            query(
                "UPDATE payees SET legal_name = ?, trusted = ?,
                     details_changed_at = CASE WHEN ? = 1 THEN ? ELSE details_changed_at END
                 WHERE tenant_id = ? AND id = ?",
            )
            .bind(&p.legal_name)
            .bind(p.trusted)
            .bind(renamed)
            .bind(ts(crate::platform::clock::system_now()))
            .bind(&p.tenant_id)
            .bind(&p.id)
            .execute(&mut *conn)
            .await?;
            Ok(Upsert::Updated)
        }
        None => {
            query("INSERT INTO payees (tenant_id, id, legal_name, trusted, created_at) VALUES (?, ?, ?, ?, ?)")
                .bind(&p.tenant_id)
                .bind(&p.id)
                .bind(&p.legal_name)
                .bind(p.trusted)
                .bind(ts(crate::platform::clock::system_now()))
                .execute(&mut *conn)
                .await?;
            Ok(Upsert::Created)
        }
    }
}

/// Marks every payee of `tenant` as added at `at` (the demo's tenant is an
/// established one: its payees are not new).
pub async fn set_payees_added_at(pool: &Pool, tenant: &str, at: DateTime<Utc>) -> Result<()> {
    query("UPDATE payees SET created_at = ? WHERE tenant_id = ?").bind(ts(at)).bind(tenant).execute(pool).await?;
    Ok(())
}

pub async fn payee<'e>(exec: impl Into<super::Exec<'e>>, tenant: &str, id: &str) -> Result<Option<Payee>> {
    let row =
        query("SELECT * FROM payees WHERE tenant_id = ? AND id = ?").bind(tenant).bind(id).fetch_optional(exec).await?;
    row.as_ref().map(Row::decode).transpose()
}

/// A payee with what its bank-account changes left (migration 0040).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PayeeEntry {
    pub tenant_id: String,
    pub id: String,
    pub legal_name: String,
    #[sqlx(try_from = "Flag")]
    pub trusted: bool,
    /// The account it took over from, when a verified change made it.
    pub replaces: Option<String>,
    /// The account that took over from it: it is no longer paid.
    pub replaced_by: Option<String>,
    #[sqlx(try_from = "super::OptTimestamp")]
    pub account_changed_at: Option<DateTime<Utc>>,
    /// The call-back that verified the change (JSON, no account number).
    pub account_call_back: Option<String>,
    #[sqlx(try_from = "super::Timestamp")]
    pub created_at: DateTime<Utc>,
}

/// [`payee`], with its account-change columns.
pub async fn payee_entry<'e>(exec: impl Into<super::Exec<'e>>, tenant: &str, id: &str) -> Result<Option<PayeeEntry>> {
    let row =
        query("SELECT * FROM payees WHERE tenant_id = ? AND id = ?").bind(tenant).bind(id).fetch_optional(exec).await?;
    row.as_ref().map(Row::decode).transpose()
}

/// Every payee of `tenant`, by id.
pub async fn payee_entries(pool: &Pool, tenant: &str) -> Result<Vec<PayeeEntry>> {
    let rows = query("SELECT * FROM payees WHERE tenant_id = ? ORDER BY id").bind(tenant).fetch_all(pool).await?;
    rows.iter().map(Row::decode).collect()
}

/// The payees of `tenant` whose legal name contains `name` (ASCII case
/// folded) or whose id is `name`, by legal name then id, after `after`
/// (legal name, id), at most `limit` and whether more follow.
pub async fn search_payees(
    pool: &Pool,
    tenant: &str,
    name: Option<&str>,
    after: Option<(&str, &str)>,
    limit: u32,
) -> Result<(Vec<PayeeEntry>, bool)> {
    let mut q = super::Builder::new("SELECT * FROM payees WHERE tenant_id = ");
    q.push_bind(tenant);
    if let Some(name) = name {
        let pattern = format!("%{}%", name.to_ascii_lowercase().replace(['%', '_', '\\'], ""));
        q.push(" AND (LOWER(legal_name) LIKE ").push_bind(pattern).push(" OR id = ").push_bind(name).push(")");
    }
    if let Some((legal, id)) = after {
        q.push(" AND (legal_name > ").push_bind(legal).push(" OR (legal_name = ").push_bind(legal);
        q.push(" AND id > ").push_bind(id).push("))");
    }
    q.push(" ORDER BY legal_name, id LIMIT ").push_bind(i64::from(limit) + 1);
    let mut rows: Vec<PayeeEntry> = q.build().fetch_all(pool).await?.iter().map(Row::decode).collect::<Result<_>>()?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    Ok((rows, more))
}

/// A verified change of bank account: `to` (a new payee with `from`'s legal
/// name, untrusted) takes over from `from`, which is no longer paid. False
/// when `from` is gone or was replaced meanwhile, or `to` exists.
pub async fn replace_account(
    conn: &mut Conn,
    tenant: &str,
    from: &str,
    to: &str,
    call_back: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    let Some(old) = payee_entry(&mut *conn, tenant, from).await? else { return Ok(false) };
    if old.replaced_by.is_some() {
        return Ok(false);
    }
    let moved = query("UPDATE payees SET replaced_by = ? WHERE tenant_id = ? AND id = ? AND replaced_by IS NULL")
        .bind(to)
        .bind(tenant)
        .bind(from)
        .execute(&mut *conn)
        .await?;
    if moved.rows_affected() != 1 {
        return Ok(false);
    }
    let inserted = query(
        "INSERT INTO payees (tenant_id, id, legal_name, trusted, created_at, replaces, account_changed_at,
             account_call_back)
         VALUES (?, ?, ?, 0, ?, ?, ?, ?) ON CONFLICT (tenant_id, id) DO NOTHING",
    )
    .bind(tenant)
    .bind(to)
    .bind(&old.legal_name)
    .bind(ts(now))
    .bind(from)
    .bind(ts(now))
    .bind(call_back)
    .execute(&mut *conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// The stored password hash of a user (only the sign-in path reads it).
pub async fn password_hash(pool: &Pool, user_id: &str) -> Result<Option<String>> {
    Ok(scalar("SELECT password_hash FROM users WHERE id = ?").bind(user_id).fetch_optional(pool).await?)
}

/// Users of a tenant, by username, with their limits (one statement, not
/// one per user: every console page reads them).
pub async fn users_of(conn: &mut Conn, tenant: &str) -> Result<Vec<User>> {
    let sql = select_users(conn.is_postgres(), "u.tenant_id = ? ORDER BY u.username");
    query(sql).bind(tenant).fetch_all(&mut *conn).await?.iter().map(user_with_limits).collect()
}

/// Agents of a tenant, by id.
/// [`agents_of`] on a connection.
pub async fn agents_in(conn: &mut Conn, tenant: &str) -> Result<Vec<Agent>> {
    let rows = query("SELECT * FROM agents WHERE tenant_id = ? ORDER BY id").bind(tenant).fetch_all(conn).await?;
    rows.iter().map(Row::decode).collect()
}

pub async fn agents_of(pool: &Pool, tenant: &str) -> Result<Vec<Agent>> {
    agents_in(&mut *pool.acquire().await?, tenant).await
}

/// Payees of a tenant, by legal name.
pub async fn payees_of(pool: &Pool, tenant: &str) -> Result<Vec<Payee>> {
    let rows =
        query("SELECT * FROM payees WHERE tenant_id = ? ORDER BY legal_name").bind(tenant).fetch_all(pool).await?;
    rows.iter().map(Row::decode).collect()
}

/// The stored password hash of `username`, only if they belong to `tenant`
/// (provisioning keeps it when asked to; another tenant's hash is never read).
pub async fn password_hash_in_tenant(conn: &mut Conn, tenant: &str, username: &str) -> Result<Option<String>> {
    Ok(scalar("SELECT password_hash FROM users WHERE tenant_id = ? AND username = ?")
        .bind(tenant)
        .bind(username)
        .fetch_optional(conn)
        .await?)
}

/// A tenant's daily budgets per currency.
pub async fn budgets_of(conn: &mut Conn, tenant: &str) -> Result<BTreeMap<String, u64>> {
    let rows = query("SELECT currency, daily_limit_minor FROM budgets WHERE tenant_id = ?")
        .bind(tenant)
        .fetch_all(conn)
        .await?;
    rows.iter().map(|r| r.decode::<Budget>().map(|b| (b.currency, b.daily_limit_minor))).collect()
}

/// A tenant's daily budget in one currency.
#[derive(sqlx::FromRow)]
struct Budget {
    currency: String,
    #[sqlx(try_from = "Unsigned<u64>")]
    daily_limit_minor: u64,
}

/// The user a Slack user id is linked to, if any.
pub async fn user_by_slack_id(pool: &Pool, slack_user_id: &str) -> Result<Option<User>> {
    one_user(&mut *pool.acquire().await?, "u.slack_user_id = ?", &[slack_user_id]).await
}

/// The user a Teams user (Entra ID object id) is linked to, if any.
pub async fn user_by_teams_id(pool: &Pool, aad_object_id: &str) -> Result<Option<User>> {
    let filter = "u.id = (SELECT user_id FROM teams_links WHERE aad_object_id = ?)";
    one_user(&mut *pool.acquire().await?, filter, &[aad_object_id]).await
}

/// Sets (or with `None` clears) a user's Slack user id. Returns whether the
/// user exists in that tenant; a Slack id linked to someone else is a unique
/// violation.
/// Sets the agent's `active` flag; false when there is no such agent.
/// An inactive agent's key authenticates nothing.
pub async fn set_agent_active(conn: &mut Conn, tenant: &str, id: &str, active: bool) -> Result<bool> {
    let done = query("UPDATE agents SET active = ? WHERE tenant_id = ? AND id = ?")
        .bind(i64::from(active))
        .bind(tenant)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

pub async fn set_slack_user_id(
    conn: &mut Conn,
    tenant: &str,
    username: &str,
    slack_user_id: Option<&str>,
) -> Result<bool> {
    let done = query("UPDATE users SET slack_user_id = ? WHERE tenant_id = ? AND username = ?")
        .bind(slack_user_id)
        .bind(tenant)
        .bind(username)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(username: &str, limits: &[(&str, u64)]) -> UserSpec {
        UserSpec {
            tenant_id: "t1".into(),
            username: username.into(),
            password_hash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into(),
            roles: vec![Role::Approver],
            approval_limits_minor: limits.iter().map(|(c, m)| ((*c).to_owned(), *m)).collect(),
            slack_user_id: Some(format!("U{username}")),
            oidc: Some(Some(OidcIdentity { issuer: "https://idp".into(), subject: format!("sub-{username}") })),
        }
    }

    #[tokio::test]
    async fn a_user_is_read_with_their_own_limits_on_each_backend() {
        for db in crate::store::test_pg::each_backend("a_user_is_read_with_their_own_limits").await {
            let mut tx = db.begin().await.unwrap();
            upsert_tenant(&mut tx, "t1", "T1").await.unwrap();
            let big = u64::try_from(i64::MAX).unwrap();
            let (ana, _) =
                upsert_user(&mut tx, &spec("ana", &[("USD", 250_000), ("EUR", big)])).await.unwrap().unwrap();
            upsert_user(&mut tx, &spec("ben", &[])).await.unwrap().unwrap();
            tx.commit().await.unwrap();
            let want: BTreeMap<String, u64> = [("EUR".to_owned(), big), ("USD".to_owned(), 250_000)].into();

            let mut conn = db.reader().await.unwrap();
            let by_id = user_by_id(&mut conn, &ana).await.unwrap().expect("ana");
            assert_eq!((by_id.username.as_str(), &by_id.approval_limits_minor), ("ana", &want), "{}", db.backend);
            let by_name = user_by_username(&mut conn, "ana").await.unwrap().unwrap();
            assert_eq!(by_name.approval_limits_minor, want);
            let by_oidc = user_by_oidc(&mut conn, "https://idp", "sub-ana").await.unwrap().unwrap();
            assert_eq!(by_oidc.approval_limits_minor, want);
            assert!(user_by_id(&mut conn, "nobody").await.unwrap().is_none());
            let everyone = users_of(&mut conn, "t1").await.unwrap();
            let limits: Vec<(&str, usize)> =
                everyone.iter().map(|u| (u.username.as_str(), u.approval_limits_minor.len())).collect();
            assert_eq!(limits, [("ana", 2), ("ben", 0)], "by username, each with their own limits");
            drop(conn);
            let by_slack = user_by_slack_id(&db.read, "Uana").await.unwrap().unwrap();
            assert_eq!(by_slack.approval_limits_minor, want);
        }
    }
}
