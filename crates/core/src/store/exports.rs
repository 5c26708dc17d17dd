//! What the finance exports read (`crate::evidence::exports`): a tenant's proposals
//! created in a time range, one page at a time in `(created_at, id)` order
//! (index `proposals_by_created`, migration 0022), with their payee,
//! operation and the approvals of their current round; and the operations
//! waiting on a person (`unknown`, `needs_review`) for the nightly report.

use chrono::{DateTime, Utc};

use super::operations::OperationRow;
use super::{query, ts, Pool, Result, Row};
use super::{Timestamp, Unsigned};

/// One proposal of an export page.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PaymentRow {
    pub id: String,
    pub tenant_id: String,
    pub agent_id: String,
    /// Kept as stored: the page's keyset position.
    pub created_at: String,
    pub status: String,
    #[sqlx(try_from = "Unsigned<u64>")]
    pub amount_minor: u64,
    pub currency: String,
    pub payee_id: String,
    pub payee_name: Option<String>,
    pub invoice_id: Option<String>,
    pub request_hash: String,
    /// The policy decision (JSON).
    pub policy: String,
    pub operation_id: Option<String>,
    pub operation_status: Option<String>,
    pub rail_reference: Option<String>,
}

/// One decision of a page's proposals (their current round).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DecisionRow {
    pub proposal_id: String,
    pub approver: String,
    pub decision: String,
    pub via: String,
    #[sqlx(try_from = "Timestamp")]
    pub at: DateTime<Utc>,
}

/// The page after `after` (`(created_at, id)` of the last row of the
/// previous page; `None` for the first) of `tenant`'s proposals created in
/// `[from, to)`, at most `limit` rows.
pub async fn payments_page(
    pool: &Pool,
    tenant: &str,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    after: Option<(&str, &str)>,
    limit: u32,
) -> Result<Vec<PaymentRow>> {
    let (after_at, after_id) = after.unwrap_or(("", ""));
    let rows = query(
        "SELECT p.id, p.tenant_id, p.agent_id, p.created_at, p.status, p.amount_minor, p.currency, p.payee_id,
                y.legal_name AS payee_name, p.invoice_id, p.request_hash, p.policy,
                o.id AS operation_id, o.status AS operation_status, o.rail_reference
           FROM proposals p
           LEFT JOIN payees y ON y.tenant_id = p.tenant_id AND y.id = p.payee_id
           LEFT JOIN operations o ON o.proposal_id = p.id
          WHERE p.tenant_id = ? AND p.created_at >= ? AND p.created_at < ?
            AND (p.created_at > ? OR (p.created_at = ? AND p.id > ?))
          ORDER BY p.created_at, p.id
          LIMIT ?",
    )
    .bind(tenant)
    .bind(ts(from))
    .bind(ts(to))
    .bind(after_at)
    .bind(after_at)
    .bind(after_id)
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    rows.iter().map(Row::decode).collect()
}

/// The decisions of the current round of `tenant`'s proposals in the page
/// `(after, last]`, oldest first.
pub async fn decisions_of_page(
    pool: &Pool,
    tenant: &str,
    after: Option<(&str, &str)>,
    last: (&str, &str),
) -> Result<Vec<DecisionRow>> {
    let (after_at, after_id) = after.unwrap_or(("", ""));
    let rows = query(
        "SELECT a.proposal_id, COALESCE(u.username, a.approver_id) AS approver, a.decision, a.via, a.at
           FROM approvals a
           JOIN proposals p ON p.id = a.proposal_id AND a.round = p.approval_round
           LEFT JOIN users u ON u.id = a.approver_id
          WHERE p.tenant_id = ?
            AND (p.created_at > ? OR (p.created_at = ? AND p.id > ?))
            AND (p.created_at < ? OR (p.created_at = ? AND p.id <= ?))
          ORDER BY a.at, a.approver_id",
    )
    .bind(tenant)
    .bind(after_at)
    .bind(after_at)
    .bind(after_id)
    .bind(last.0)
    .bind(last.0)
    .bind(last.1)
    .fetch_all(pool)
    .await?;
    rows.iter().map(Row::decode).collect()
}

/// Every operation waiting on a person or the rail's answer (`unknown`,
/// `needs_review`), oldest first, across tenants.
pub async fn awaiting_review(pool: &Pool) -> Result<Vec<OperationRow>> {
    let rows = query("SELECT * FROM operations WHERE status IN ('unknown', 'needs_review') ORDER BY created_at, id")
        .fetch_all(pool)
        .await?;
    rows.iter().map(Row::decode).collect()
}
