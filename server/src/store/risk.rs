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

/// The registry dates of each asked `(tenant, payee)`, in the order asked;
/// `None` for a payee no longer in the registry. One statement.
pub async fn payee_dates(pool: &Pool, asks: &[(&str, &str)]) -> Result<Vec<Option<PayeeDates>>> {
    let part = "SELECT created_at, details_changed_at FROM payees WHERE tenant_id = ? AND id = ?";
    let mut found = vec![None; asks.len()];
    for (offset, chunk) in asks.chunks(PARTS_PER_STATEMENT).enumerate() {
        let sql = union_of(part, chunk.len());
        let mut query = sqlx::query(&sql);
        for (tenant, payee) in chunk {
            query = query.bind(*tenant).bind(*payee);
        }
        for r in query.fetch_all(pool).await? {
            let c = Cols::of(&r);
            let k = offset * PARTS_PER_STATEMENT + c.unsigned("k")? as usize;
            let dates =
                PayeeDates { created_at: c.at("created_at")?, details_changed_at: c.opt_at("details_changed_at")? };
            if let Some(slot) = found.get_mut(k) {
                *slot = Some(dates);
            }
        }
    }
    Ok(found)
}

/// At most this many parts in one `UNION ALL` (SQLite's default limit on
/// compound selects is 500).
const PARTS_PER_STATEMENT: usize = 100;

/// `count` copies of the one-row-set query `part`, each tagged with its index
/// as the column `k`, joined by `UNION ALL`: one round trip for a page of
/// small indexed reads. Each part is wrapped so its own `ORDER BY`/`LIMIT`
/// applies to it alone.
fn union_of(part: &str, count: usize) -> String {
    let select = part.strip_prefix("SELECT ").unwrap_or(part);
    (0..count).map(|k| format!("SELECT * FROM (SELECT {k} AS k, {select})")).collect::<Vec<_>>().join(" UNION ALL ")
}

/// Runs `part` once per ask (binding each ask with `bind`) in as few
/// statements as allowed, and sorts the rows back to their asks, each ask's
/// rows by creation (oldest first, or newest first), as `part` orders them:
/// a compound select does not promise to keep its parts' order.
async fn per_ask<A>(
    pool: &Pool,
    part: &str,
    newest_first: bool,
    asks: &[A],
    binds: impl Fn(&A) -> Vec<String>,
) -> Result<Vec<Vec<Earlier>>> {
    let mut found: Vec<Vec<Earlier>> = asks.iter().map(|_| Vec::new()).collect();
    for (offset, chunk) in asks.chunks(PARTS_PER_STATEMENT).enumerate() {
        let sql = union_of(part, chunk.len());
        let mut query = sqlx::query(&sql);
        for value in chunk.iter().flat_map(&binds) {
            query = query.bind(value);
        }
        for r in query.fetch_all(pool).await? {
            let k = offset * PARTS_PER_STATEMENT + Cols::of(&r).unsigned("k")? as usize;
            if let Some(rows) = found.get_mut(k) {
                rows.push(earlier(&r)?);
            }
        }
    }
    for rows in &mut found {
        rows.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        if newest_first {
            rows.reverse();
        }
    }
    Ok(found)
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

/// One duplicate-invoice question: the tenant, the payee, the invoice id
/// and the proposal asking (left out of its own answer).
pub struct InvoiceAsk<'a> {
    pub tenant: &'a str,
    pub payee: &'a str,
    pub invoice_id: &'a str,
    pub except: &'a str,
}

/// For each ask, the other proposals for the same payee and invoice id: any
/// run, any agent, any status; oldest first, at most `limit`.
pub async fn same_invoice(pool: &Pool, asks: &[InvoiceAsk<'_>], limit: u32) -> Result<Vec<Vec<Earlier>>> {
    // The expression is the index's (migration 0010), written the same way.
    let part = format!(
        "{EARLIER} WHERE tenant_id = ? AND payee_id = ? AND json_extract(canonical_request, '$.invoice_id') = ?
             AND id <> ? ORDER BY created_at, id LIMIT {limit}"
    );
    per_ask(pool, &part, false, asks, |a| [a.tenant, a.payee, a.invoice_id, a.except].map(str::to_owned).to_vec()).await
}

/// For each `(tenant, payee, before)`, the payee's proposals created before
/// `before` (the asking proposal's creation), newest first, at most `limit`.
pub async fn payee_history(pool: &Pool, asks: &[(&str, &str, DateTime<Utc>)], limit: u32) -> Result<Vec<Vec<Earlier>>> {
    let part = format!(
        "{EARLIER} WHERE tenant_id = ? AND payee_id = ? AND created_at < ? ORDER BY created_at DESC, id DESC LIMIT {limit}"
    );
    per_ask(pool, &part, true, asks, |(tenant, payee, before)| {
        vec![(*tenant).to_owned(), (*payee).to_owned(), ts(*before)]
    })
    .await
}
