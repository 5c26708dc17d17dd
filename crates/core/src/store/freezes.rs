//! The kill switch's freezes (migration 0021): what is frozen, by whom and
//! why. Read by every commit inside its write transaction, so a freeze
//! written by any instance (or the CLI) stops the next commit everywhere.

use chrono::{DateTime, Utc};

use super::{query, ts, Builder, Conn, Pool, Result, Row, Timestamp};

/// What a freeze covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every commit of every tenant.
    All,
    Tenant(String),
    Agent {
        tenant: String,
        agent: String,
    },
}

impl Scope {
    fn key(&self) -> (&'static str, &str, &str) {
        match self {
            Scope::All => ("all", "", ""),
            Scope::Tenant(t) => ("tenant", t, ""),
            Scope::Agent { tenant, agent } => ("agent", tenant, agent),
        }
    }

    /// How a person reads it.
    pub fn describe(&self) -> String {
        match self {
            Scope::All => "every commit".into(),
            Scope::Tenant(t) => format!("every commit of tenant {t}"),
            Scope::Agent { agent, .. } => format!("agent {agent}'s commits"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct FreezeRow {
    pub scope: String,
    pub tenant_id: String,
    pub agent_id: String,
    pub frozen_by: String,
    pub reason: String,
    #[sqlx(try_from = "Timestamp")]
    pub at: DateTime<Utc>,
}

impl FreezeRow {
    pub fn scope(&self) -> Scope {
        match self.scope.as_str() {
            "all" => Scope::All,
            "tenant" => Scope::Tenant(self.tenant_id.clone()),
            _ => Scope::Agent { tenant: self.tenant_id.clone(), agent: self.agent_id.clone() },
        }
    }
}

/// Freezes `scope` (a second freeze of the same scope keeps the first's
/// reason and time). Returns whether it was not frozen before.
pub async fn freeze(conn: &mut Conn, scope: &Scope, by: &str, reason: &str, now: DateTime<Utc>) -> Result<bool> {
    let (kind, tenant, agent) = scope.key();
    let inserted = query(
        "INSERT INTO freezes (scope, tenant_id, agent_id, frozen_by, reason, at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT DO NOTHING",
    )
    .bind(kind)
    .bind(tenant)
    .bind(agent)
    .bind(by)
    .bind(reason)
    .bind(ts(now))
    .execute(conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// Lifts the freeze of `scope`. Returns whether there was one.
pub async fn lift(conn: &mut Conn, scope: &Scope) -> Result<bool> {
    let (kind, tenant, agent) = scope.key();
    let deleted = query("DELETE FROM freezes WHERE scope = ? AND tenant_id = ? AND agent_id = ?")
        .bind(kind)
        .bind(tenant)
        .bind(agent)
        .execute(conn)
        .await?;
    Ok(deleted.rows_affected() == 1)
}

/// The freeze of exactly `scope`, if any.
pub async fn get(conn: &mut Conn, scope: &Scope) -> Result<Option<FreezeRow>> {
    let (kind, tenant, agent) = scope.key();
    let row = query("SELECT * FROM freezes WHERE scope = ? AND tenant_id = ? AND agent_id = ?")
        .bind(kind)
        .bind(tenant)
        .bind(agent)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(Row::decode).transpose()
}

/// A freeze that stops `tenant`'s agent `agent` from committing, if any
/// (the widest first).
pub async fn blocking(conn: &mut Conn, tenant: &str, agent: &str) -> Result<Option<FreezeRow>> {
    let mut q = Builder::new("SELECT * FROM freezes WHERE ");
    push_blocking(&mut q, tenant, agent);
    q.push(" ORDER BY CASE scope WHEN 'all' THEN 0 WHEN 'tenant' THEN 1 ELSE 2 END LIMIT 1");
    let row = q.build().fetch_optional(conn).await?;
    row.as_ref().map(Row::decode).transpose()
}

/// Writes the condition under which a freeze stops `tenant`'s agent `agent`.
pub fn push_blocking<'q>(q: &mut Builder<'q>, tenant: &'q str, agent: &'q str) {
    q.push("(scope = 'all' OR (scope = 'tenant' AND tenant_id = ").push_bind(tenant);
    q.push(") OR (scope = 'agent' AND tenant_id = ").push_bind(tenant).push(" AND agent_id = ").push_bind(agent);
    q.push("))");
}

/// What is frozen that covers `tenant` (the global freeze too), widest
/// first.
pub async fn of_tenant(pool: &Pool, tenant: &str) -> Result<Vec<FreezeRow>> {
    let rows = query(
        "SELECT * FROM freezes WHERE scope = 'all' OR tenant_id = ?
         ORDER BY CASE scope WHEN 'all' THEN 0 WHEN 'tenant' THEN 1 ELSE 2 END, agent_id",
    )
    .bind(tenant)
    .fetch_all(pool)
    .await?;
    rows.iter().map(Row::decode).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_freeze_blocks_what_it_covers_until_lifted() {
        for db in crate::store::test_pg::each_backend("a_freeze_blocks_what_it_covers_until_lifted").await {
            let now = crate::platform::clock::system_now();
            let mut tx = db.begin().await.unwrap();
            let agent = Scope::Agent { tenant: "acme".into(), agent: "bot".into() };
            assert_eq!(blocking(&mut tx, "acme", "bot").await.unwrap(), None);
            assert!(freeze(&mut tx, &agent, "user:ada", "suspicious run", now).await.unwrap());
            assert!(!freeze(&mut tx, &agent, "user:abe", "again", now).await.unwrap(), "frozen once");
            assert_eq!(blocking(&mut tx, "acme", "bot").await.unwrap().unwrap().reason, "suspicious run");
            assert_eq!(blocking(&mut tx, "acme", "other").await.unwrap(), None, "another agent");
            assert_eq!(blocking(&mut tx, "globex", "bot").await.unwrap(), None, "another tenant's agent");
            assert!(freeze(&mut tx, &Scope::Tenant("globex".into()), "user:gus", "audit", now).await.unwrap());
            assert_eq!(
                blocking(&mut tx, "globex", "any").await.unwrap().unwrap().scope(),
                Scope::Tenant("globex".into())
            );
            assert!(freeze(&mut tx, &Scope::All, "cli", "incident", now).await.unwrap());
            assert_eq!(blocking(&mut tx, "acme", "bot").await.unwrap().unwrap().scope(), Scope::All, "widest first");
            assert!(lift(&mut tx, &Scope::All).await.unwrap());
            assert!(!lift(&mut tx, &Scope::All).await.unwrap(), "lifted once");
            assert!(lift(&mut tx, &agent).await.unwrap());
            assert_eq!(blocking(&mut tx, "acme", "bot").await.unwrap(), None, "{}", db.backend);
            tx.commit().await.unwrap();
        }
    }
}
