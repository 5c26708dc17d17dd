//! When each waiting proposal is reminded about and escalated
//! (`crate::decision::escalation`, migration 0024): a row only for proposals a
//! tenant's `[[escalation]]` rule covers.

use chrono::{DateTime, Utc};

use super::{query, ts, Builder, Conn, Exec, OptTimestamp, Result, Row};

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct EscalationRow {
    pub proposal_id: String,
    #[sqlx(try_from = "OptTimestamp")]
    pub remind_at: Option<DateTime<Utc>>,
    #[sqlx(try_from = "OptTimestamp")]
    pub escalate_at: Option<DateTime<Utc>>,
    pub escalate_to: Option<String>,
    #[sqlx(try_from = "OptTimestamp")]
    pub escalated_at: Option<DateTime<Utc>>,
}

/// A proposal's reminder and escalation, to store.
pub struct Planned<'a> {
    pub tenant_id: &'a str,
    pub proposal_id: &'a str,
    pub remind_at: Option<DateTime<Utc>>,
    pub escalate_at: Option<DateTime<Utc>>,
    pub escalate_to: Option<&'a str>,
}

/// Stores the plan of a proposal (in the transaction that makes it wait).
pub async fn insert(conn: &mut Conn, plan: &Planned<'_>) -> Result<()> {
    query(
        "INSERT INTO escalations (proposal_id, tenant_id, remind_at, escalate_at, escalate_to) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (proposal_id) DO NOTHING",
    )
    .bind(plan.proposal_id)
    .bind(plan.tenant_id)
    .bind(plan.remind_at.map(ts))
    .bind(plan.escalate_at.map(ts))
    .bind(plan.escalate_to)
    .execute(conn)
    .await?;
    Ok(())
}

/// A proposal due for escalation: (proposal id, tenant, request hash, group).
#[derive(sqlx::FromRow)]
struct Due {
    proposal_id: String,
    tenant_id: String,
    request_hash: String,
    escalate_to: String,
}

/// Proposals still waiting for a decision whose escalation is due and not
/// yet done, oldest first, at most 500.
pub async fn due(conn: &mut Conn, now: DateTime<Utc>) -> Result<Vec<(String, String, String, String)>> {
    let rows = query(
        "SELECT e.proposal_id, e.tenant_id, p.request_hash, e.escalate_to FROM escalations e
         JOIN proposals p ON p.id = e.proposal_id
         WHERE e.escalated_at IS NULL AND e.escalate_at <= ? AND e.escalate_to IS NOT NULL
           AND p.status IN ('pending_approval', 'approval_expired')
         ORDER BY e.escalate_at LIMIT 500",
    )
    .bind(ts(now))
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|r| r.decode::<Due>().map(|d| (d.proposal_id, d.tenant_id, d.request_hash, d.escalate_to)))
        .collect()
}

/// Marks the proposal escalated; false when it already was.
pub async fn mark_escalated(conn: &mut Conn, proposal_id: &str, now: DateTime<Utc>) -> Result<bool> {
    let done = query("UPDATE escalations SET escalated_at = ? WHERE proposal_id = ? AND escalated_at IS NULL")
        .bind(ts(now))
        .bind(proposal_id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// The escalation rows of these proposals (those that have one).
pub async fn of<'e>(exec: impl Into<Exec<'e>>, ids: &[&str]) -> Result<Vec<EscalationRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = Builder::new(
        "SELECT proposal_id, remind_at, escalate_at, escalate_to, escalated_at FROM escalations WHERE proposal_id IN (",
    );
    q.push_list(ids.iter().copied());
    q.push(")");
    q.build().fetch_all(exec).await?.iter().map(Row::decode).collect()
}
