//! Tenants, users, agents, payees and budgets: the registry the rest of the
//! system checks against. Upserts are idempotent (apply twice, same state).

use crate::domain::Role;
use sqlx::{Row, SqliteConnection, SqlitePool};
use std::collections::BTreeMap;

use super::{new_id, ts};
use chrono::Utc;

/// Whether a row was created or changed by an upsert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upsert {
    Created,
    Updated,
    Unchanged,
}

pub async fn upsert_tenant(conn: &mut SqliteConnection, id: &str, name: &str) -> sqlx::Result<Upsert> {
    let existing: Option<String> =
        sqlx::query_scalar("SELECT name FROM tenants WHERE id = ?").bind(id).fetch_optional(&mut *conn).await?;
    match existing {
        Some(n) if n == name => Ok(Upsert::Unchanged),
        Some(_) => {
            sqlx::query("UPDATE tenants SET name = ? WHERE id = ?").bind(name).bind(id).execute(&mut *conn).await?;
            Ok(Upsert::Updated)
        }
        None => {
            sqlx::query("INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)")
                .bind(id)
                .bind(name)
                .bind(ts(Utc::now()))
                .execute(&mut *conn)
                .await?;
            Ok(Upsert::Created)
        }
    }
}

pub async fn tenant_exists(conn: &mut SqliteConnection, id: &str) -> sqlx::Result<bool> {
    Ok(sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM tenants WHERE id = ?").bind(id).fetch_one(conn).await? > 0)
}

pub async fn count_tenants(pool: &SqlitePool) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM tenants").fetch_one(pool).await
}

pub async fn set_budget(
    conn: &mut SqliteConnection,
    tenant: &str,
    currency: &str,
    limit_minor: u64,
) -> sqlx::Result<()> {
    sqlx::query(
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
}

#[derive(Debug, Clone)]
pub struct User {
    pub id: String,
    pub tenant_id: String,
    pub username: String,
    pub roles: Vec<Role>,
    pub slack_user_id: Option<String>,
    pub active: bool,
    pub approval_limits_minor: BTreeMap<String, u64>,
}

/// Creates the user, or updates the one with that username. Returns its id.
/// A username already taken by another tenant is refused (usernames are global,
/// they are what people sign in with).
pub async fn upsert_user(conn: &mut SqliteConnection, spec: &UserSpec) -> sqlx::Result<(String, Upsert)> {
    let roles = serde_json::to_string(&spec.roles).expect("roles serialize");
    let existing = sqlx::query("SELECT id, tenant_id FROM users WHERE username = ?")
        .bind(&spec.username)
        .fetch_optional(&mut *conn)
        .await?;
    let (id, outcome) = match existing {
        Some(row) => {
            let id: String = row.get("id");
            let tenant: String = row.get("tenant_id");
            if tenant != spec.tenant_id {
                return Err(sqlx::Error::Protocol(format!("username {} belongs to another tenant", spec.username)));
            }
            let changed = sqlx::query(
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
            (id, if changed > 0 { Upsert::Updated } else { Upsert::Unchanged })
        }
        None => {
            let id = new_id("usr", Utc::now());
            sqlx::query(
                "INSERT INTO users (id, tenant_id, username, password_hash, roles, slack_user_id, active, created_at)
                 VALUES (?, ?, ?, ?, ?, ?, 1, ?)",
            )
            .bind(&id)
            .bind(&spec.tenant_id)
            .bind(&spec.username)
            .bind(&spec.password_hash)
            .bind(&roles)
            .bind(&spec.slack_user_id)
            .bind(ts(Utc::now()))
            .execute(&mut *conn)
            .await?;
            (id, Upsert::Created)
        }
    };
    let before = limits_of(&mut *conn, &id).await?;
    if before != spec.approval_limits_minor {
        sqlx::query("DELETE FROM approval_limits WHERE user_id = ?").bind(&id).execute(&mut *conn).await?;
        for (currency, limit) in &spec.approval_limits_minor {
            sqlx::query("INSERT INTO approval_limits (user_id, currency, limit_minor) VALUES (?, ?, ?)")
                .bind(&id)
                .bind(currency)
                .bind(*limit as i64)
                .execute(&mut *conn)
                .await?;
        }
        if outcome == Upsert::Unchanged {
            return Ok((id, Upsert::Updated));
        }
    }
    Ok((id, outcome))
}

async fn limits_of(conn: &mut SqliteConnection, user_id: &str) -> sqlx::Result<BTreeMap<String, u64>> {
    let rows = sqlx::query("SELECT currency, limit_minor FROM approval_limits WHERE user_id = ?")
        .bind(user_id)
        .fetch_all(conn)
        .await?;
    Ok(rows.iter().map(|r| (r.get::<String, _>("currency"), r.get::<i64, _>("limit_minor") as u64)).collect())
}

fn user_from_row(row: &sqlx::sqlite::SqliteRow, limits: BTreeMap<String, u64>) -> User {
    let roles: String = row.get("roles");
    User {
        id: row.get("id"),
        tenant_id: row.get("tenant_id"),
        username: row.get("username"),
        roles: serde_json::from_str(&roles).unwrap_or_default(),
        slack_user_id: row.get("slack_user_id"),
        active: row.get::<i64, _>("active") != 0,
        approval_limits_minor: limits,
    }
}

pub async fn user_by_username(conn: &mut SqliteConnection, username: &str) -> sqlx::Result<Option<User>> {
    let Some(row) =
        sqlx::query("SELECT * FROM users WHERE username = ?").bind(username).fetch_optional(&mut *conn).await?
    else {
        return Ok(None);
    };
    let limits = limits_of(&mut *conn, row.get::<&str, _>("id")).await?;
    Ok(Some(user_from_row(&row, limits)))
}

pub async fn user_by_id(conn: &mut SqliteConnection, id: &str) -> sqlx::Result<Option<User>> {
    let Some(row) = sqlx::query("SELECT * FROM users WHERE id = ?").bind(id).fetch_optional(&mut *conn).await? else {
        return Ok(None);
    };
    let limits = limits_of(&mut *conn, id).await?;
    Ok(Some(user_from_row(&row, limits)))
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

#[derive(Debug, Clone)]
pub struct Agent {
    pub tenant_id: String,
    pub id: String,
    pub acts_for: String,
    pub source_accounts: Vec<String>,
    pub purposes: Vec<String>,
    pub active: bool,
}

pub async fn upsert_agent(conn: &mut SqliteConnection, spec: &AgentSpec) -> sqlx::Result<Upsert> {
    let sources = serde_json::to_string(&spec.source_accounts).expect("serialize");
    let purposes = serde_json::to_string(&spec.purposes).expect("serialize");
    let exists: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM agents WHERE tenant_id = ? AND id = ?")
        .bind(&spec.tenant_id)
        .bind(&spec.id)
        .fetch_one(&mut *conn)
        .await?;
    if exists == 0 {
        sqlx::query(
            "INSERT INTO agents (tenant_id, id, key_sha256, acts_for, source_accounts, purposes, active, created_at)
             VALUES (?, ?, ?, ?, ?, ?, 1, ?)",
        )
        .bind(&spec.tenant_id)
        .bind(&spec.id)
        .bind(&spec.key_sha256)
        .bind(&spec.acts_for)
        .bind(&sources)
        .bind(&purposes)
        .bind(ts(Utc::now()))
        .execute(&mut *conn)
        .await?;
        return Ok(Upsert::Created);
    }
    let changed = sqlx::query(
        "UPDATE agents SET key_sha256 = ?, acts_for = ?, source_accounts = ?, purposes = ?
         WHERE tenant_id = ? AND id = ?
           AND (key_sha256 <> ? OR acts_for <> ? OR source_accounts <> ? OR purposes <> ?)",
    )
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

fn agent_from_row(row: &sqlx::sqlite::SqliteRow) -> Agent {
    Agent {
        tenant_id: row.get("tenant_id"),
        id: row.get("id"),
        acts_for: row.get("acts_for"),
        source_accounts: serde_json::from_str(row.get::<&str, _>("source_accounts")).unwrap_or_default(),
        purposes: serde_json::from_str(row.get::<&str, _>("purposes")).unwrap_or_default(),
        active: row.get::<i64, _>("active") != 0,
    }
}

/// The active agent whose key hashes to `key_sha256`.
pub async fn agent_by_key_hash(pool: &SqlitePool, key_sha256: &str) -> sqlx::Result<Option<Agent>> {
    let row = sqlx::query("SELECT * FROM agents WHERE key_sha256 = ? AND active = 1")
        .bind(key_sha256)
        .fetch_optional(pool)
        .await?;
    Ok(row.as_ref().map(agent_from_row))
}

pub async fn agent(conn: &mut SqliteConnection, tenant: &str, id: &str) -> sqlx::Result<Option<Agent>> {
    let row = sqlx::query("SELECT * FROM agents WHERE tenant_id = ? AND id = ?")
        .bind(tenant)
        .bind(id)
        .fetch_optional(conn)
        .await?;
    Ok(row.as_ref().map(agent_from_row))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payee {
    pub tenant_id: String,
    pub id: String,
    pub legal_name: String,
    pub trusted: bool,
}

pub async fn upsert_payee(conn: &mut SqliteConnection, p: &Payee) -> sqlx::Result<Upsert> {
    let existing = sqlx::query("SELECT legal_name, trusted FROM payees WHERE tenant_id = ? AND id = ?")
        .bind(&p.tenant_id)
        .bind(&p.id)
        .fetch_optional(&mut *conn)
        .await?;
    match existing {
        Some(row)
            if row.get::<String, _>("legal_name") == p.legal_name
                && (row.get::<i64, _>("trusted") != 0) == p.trusted =>
        {
            Ok(Upsert::Unchanged)
        }
        Some(_) => {
            sqlx::query("UPDATE payees SET legal_name = ?, trusted = ? WHERE tenant_id = ? AND id = ?")
                .bind(&p.legal_name)
                .bind(p.trusted)
                .bind(&p.tenant_id)
                .bind(&p.id)
                .execute(&mut *conn)
                .await?;
            Ok(Upsert::Updated)
        }
        None => {
            sqlx::query("INSERT INTO payees (tenant_id, id, legal_name, trusted, created_at) VALUES (?, ?, ?, ?, ?)")
                .bind(&p.tenant_id)
                .bind(&p.id)
                .bind(&p.legal_name)
                .bind(p.trusted)
                .bind(ts(Utc::now()))
                .execute(&mut *conn)
                .await?;
            Ok(Upsert::Created)
        }
    }
}

pub async fn payee(pool: &SqlitePool, tenant: &str, id: &str) -> sqlx::Result<Option<Payee>> {
    let row = sqlx::query("SELECT * FROM payees WHERE tenant_id = ? AND id = ?")
        .bind(tenant)
        .bind(id)
        .fetch_optional(pool)
        .await?;
    Ok(row.map(|r| Payee {
        tenant_id: r.get("tenant_id"),
        id: r.get("id"),
        legal_name: r.get("legal_name"),
        trusted: r.get::<i64, _>("trusted") != 0,
    }))
}

/// The stored password hash of a user (only the sign-in path reads it).
pub async fn password_hash(pool: &SqlitePool, user_id: &str) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT password_hash FROM users WHERE id = ?").bind(user_id).fetch_optional(pool).await
}

/// Users of a tenant, by username.
pub async fn users_of(conn: &mut SqliteConnection, tenant: &str) -> sqlx::Result<Vec<User>> {
    let rows = sqlx::query("SELECT * FROM users WHERE tenant_id = ? ORDER BY username")
        .bind(tenant)
        .fetch_all(&mut *conn)
        .await?;
    let mut users = Vec::with_capacity(rows.len());
    for row in &rows {
        let limits = limits_of(&mut *conn, row.get::<&str, _>("id")).await?;
        users.push(user_from_row(row, limits));
    }
    Ok(users)
}

/// Agents of a tenant, by id.
pub async fn agents_of(pool: &SqlitePool, tenant: &str) -> sqlx::Result<Vec<Agent>> {
    let rows = sqlx::query("SELECT * FROM agents WHERE tenant_id = ? ORDER BY id").bind(tenant).fetch_all(pool).await?;
    Ok(rows.iter().map(agent_from_row).collect())
}

/// Payees of a tenant, by legal name.
pub async fn payees_of(pool: &SqlitePool, tenant: &str) -> sqlx::Result<Vec<Payee>> {
    let rows = sqlx::query("SELECT * FROM payees WHERE tenant_id = ? ORDER BY legal_name")
        .bind(tenant)
        .fetch_all(pool)
        .await?;
    Ok(rows
        .iter()
        .map(|r| Payee {
            tenant_id: r.get("tenant_id"),
            id: r.get("id"),
            legal_name: r.get("legal_name"),
            trusted: r.get::<i64, _>("trusted") != 0,
        })
        .collect())
}

/// The stored password hash of `username`, only if they belong to `tenant`
/// (provisioning keeps it when asked to; another tenant's hash is never read).
pub async fn password_hash_in_tenant(
    conn: &mut SqliteConnection,
    tenant: &str,
    username: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT password_hash FROM users WHERE tenant_id = ? AND username = ?")
        .bind(tenant)
        .bind(username)
        .fetch_optional(conn)
        .await
}

/// A tenant's daily budgets per currency.
pub async fn budgets_of(conn: &mut SqliteConnection, tenant: &str) -> sqlx::Result<BTreeMap<String, u64>> {
    let rows = sqlx::query("SELECT currency, daily_limit_minor FROM budgets WHERE tenant_id = ?")
        .bind(tenant)
        .fetch_all(conn)
        .await?;
    Ok(rows.iter().map(|r| (r.get("currency"), r.get::<i64, _>("daily_limit_minor") as u64)).collect())
}

/// The user a Slack user id is linked to, if any.
pub async fn user_by_slack_id(pool: &SqlitePool, slack_user_id: &str) -> sqlx::Result<Option<User>> {
    let mut conn = pool.acquire().await?;
    let Some(row) = sqlx::query("SELECT * FROM users WHERE slack_user_id = ?")
        .bind(slack_user_id)
        .fetch_optional(&mut *conn)
        .await?
    else {
        return Ok(None);
    };
    let limits = limits_of(&mut conn, row.get::<&str, _>("id")).await?;
    Ok(Some(user_from_row(&row, limits)))
}

/// Sets (or with `None` clears) a user's Slack user id. Returns whether the
/// user exists in that tenant; a Slack id linked to someone else is a unique
/// violation.
/// Sets the agent's `active` flag; false when there is no such agent.
/// An inactive agent's key authenticates nothing.
pub async fn set_agent_active(conn: &mut SqliteConnection, tenant: &str, id: &str, active: bool) -> sqlx::Result<bool> {
    let done = sqlx::query("UPDATE agents SET active = ? WHERE tenant_id = ? AND id = ?")
        .bind(i64::from(active))
        .bind(tenant)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

pub async fn set_slack_user_id(
    conn: &mut SqliteConnection,
    tenant: &str,
    username: &str,
    slack_user_id: Option<&str>,
) -> sqlx::Result<bool> {
    let done = sqlx::query("UPDATE users SET slack_user_id = ? WHERE tenant_id = ? AND username = ?")
        .bind(slack_user_id)
        .bind(tenant)
        .bind(username)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}
