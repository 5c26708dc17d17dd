//! Delegations while away (`crate::decision::delegation`, migration 0025): who may
//! approve for whom, between two instants.

use chrono::{DateTime, Utc};

use super::{query, ts, Conn, Exec, OptTimestamp, Result, Row, Timestamp};

/// A delegation's life: `pending` (a second admin must confirm it),
/// `active` (in force between its instants), `revoked` (ended early, or
/// withdrawn while pending), `refused` (its registry change was rejected
/// or superseded).
pub const PENDING: &str = "pending";
pub const ACTIVE: &str = "active";
pub const REVOKED: &str = "revoked";
pub const REFUSED: &str = "refused";

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DelegationRow {
    pub id: String,
    pub tenant_id: String,
    pub delegator_id: String,
    pub delegate_id: String,
    #[sqlx(try_from = "Timestamp")]
    pub starts_at: DateTime<Utc>,
    #[sqlx(try_from = "Timestamp")]
    pub ends_at: DateTime<Utc>,
    pub status: String,
    pub change_id: Option<String>,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
    #[sqlx(try_from = "OptTimestamp")]
    pub ended_at: Option<DateTime<Utc>>,
}

impl DelegationRow {
    /// Active and `now` within its range.
    pub fn in_force(&self, now: DateTime<Utc>) -> bool {
        self.status == ACTIVE && self.starts_at <= now && now < self.ends_at
    }
}

pub async fn insert(conn: &mut Conn, d: &DelegationRow) -> Result<()> {
    query(
        "INSERT INTO delegations (id, tenant_id, delegator_id, delegate_id, starts_at, ends_at, status, change_id,
                                  created_at, ended_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&d.id)
    .bind(&d.tenant_id)
    .bind(&d.delegator_id)
    .bind(&d.delegate_id)
    .bind(ts(d.starts_at))
    .bind(ts(d.ends_at))
    .bind(&d.status)
    .bind(&d.change_id)
    .bind(ts(d.created_at))
    .bind(d.ended_at.map(ts))
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn get<'e>(exec: impl Into<Exec<'e>>, tenant: &str, id: &str) -> Result<Option<DelegationRow>> {
    let row = query("SELECT * FROM delegations WHERE tenant_id = ? AND id = ?")
        .bind(tenant)
        .bind(id)
        .fetch_optional(exec)
        .await?;
    row.as_ref().map(Row::decode).transpose()
}

/// The delegation a registry change would make active.
pub async fn of_change(conn: &mut Conn, change_id: &str) -> Result<Option<DelegationRow>> {
    let row = query("SELECT * FROM delegations WHERE change_id = ?").bind(change_id).fetch_optional(conn).await?;
    row.as_ref().map(Row::decode).transpose()
}

/// A tenant's delegations that are pending, or active and not yet over at
/// `now`, oldest first.
pub async fn current<'e>(exec: impl Into<Exec<'e>>, tenant: &str, now: DateTime<Utc>) -> Result<Vec<DelegationRow>> {
    let rows = query(
        "SELECT * FROM delegations WHERE tenant_id = ? AND status IN ('pending', 'active') AND ends_at > ?
         ORDER BY starts_at, id",
    )
    .bind(tenant)
    .bind(ts(now))
    .fetch_all(exec)
    .await?;
    rows.iter().map(Row::decode).collect()
}

/// Moves a delegation from one of `from` to `to` (stamping `ended_at` when
/// it ends); false when it was in none of them.
pub async fn set_status(conn: &mut Conn, id: &str, from: &[&str], to: &str, now: DateTime<Utc>) -> Result<bool> {
    let ended = (to == REVOKED || to == REFUSED).then(|| ts(now));
    let mut q = super::Builder::new("UPDATE delegations SET status = ");
    q.push_bind(to);
    q.push(", ended_at = COALESCE(ended_at, ");
    q.push_bind(ended);
    q.push(") WHERE id = ");
    q.push_bind(id);
    q.push(" AND status IN (");
    q.push_list(from.iter().copied());
    q.push(")");
    Ok(q.build().execute(conn).await?.rows_affected() == 1)
}
