//! What the risk signals read (`crate::risk`): a payee's registry dates and
//! the proposals made to it before. Indexes: migration 0010.

use chrono::{DateTime, Utc};
use sqlx::sqlite::SqliteRow;

use super::{ts, Cols, Pool, Result};
use crate::domain::ProposalStatus;

/// When a payee was added, and when its details last changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayeeDates {
    pub created_at: DateTime<Utc>,
    pub details_changed_at: Option<DateTime<Utc>>,
}

pub async fn payee_dates(pool: &Pool, tenant: &str, payee: &str) -> Result<Option<PayeeDates>> {
    let row = sqlx::query("SELECT created_at, details_changed_at FROM payees WHERE tenant_id = ? AND id = ?")
        .bind(tenant)
        .bind(payee)
        .fetch_optional(pool)
        .await?;
    row.map(|r| {
        let c = Cols::of(&r);
        Ok(PayeeDates { created_at: c.at("created_at")?, details_changed_at: c.opt_at("details_changed_at")? })
    })
    .transpose()
}

/// Another proposal to the same payee, as the signals and the detail page
/// show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Earlier {
    pub id: String,
    pub agent_id: String,
    pub status: ProposalStatus,
    pub amount_minor: u64,
    pub currency: String,
    pub created_at: DateTime<Utc>,
}

fn earlier(r: &SqliteRow) -> Result<Earlier> {
    let c = Cols::of(r);
    Ok(Earlier {
        id: c.text("id")?,
        agent_id: c.text("agent_id")?,
        status: c.parse("status", ProposalStatus::parse)?,
        amount_minor: c.unsigned("amount_minor")?,
        currency: c.text("currency")?,
        created_at: c.at("created_at")?,
    })
}

const EARLIER: &str = "SELECT id, agent_id, status, amount_minor, currency, created_at FROM proposals";

/// The other proposals for the same payee and invoice id: any run, any
/// agent, any status; oldest first.
pub async fn same_invoice(
    pool: &Pool,
    tenant: &str,
    payee: &str,
    invoice_id: &str,
    except: &str,
    limit: u32,
) -> Result<Vec<Earlier>> {
    // The expression is the index's (migration 0010), written the same way.
    let rows = sqlx::query(&format!(
        "{EARLIER} WHERE tenant_id = ? AND payee_id = ? AND json_extract(canonical_request, '$.invoice_id') = ?
             AND id <> ? ORDER BY created_at, id LIMIT ?"
    ))
    .bind(tenant)
    .bind(payee)
    .bind(invoice_id)
    .bind(except)
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    rows.iter().map(earlier).collect()
}

/// The payee's proposals created before `before` (this proposal's creation),
/// newest first.
pub async fn payee_history(
    pool: &Pool,
    tenant: &str,
    payee: &str,
    before: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<Earlier>> {
    let rows = sqlx::query(&format!(
        "{EARLIER} WHERE tenant_id = ? AND payee_id = ? AND created_at < ? ORDER BY created_at DESC, id DESC LIMIT ?"
    ))
    .bind(tenant)
    .bind(payee)
    .bind(ts(before))
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    rows.iter().map(earlier).collect()
}
