//! Policies set by confirmed four-eyes changes (migration 0034), observe
//! mode's differences (0035), and the recorded history a backtest replays
//! (docs/POLICY.md).

use chrono::{DateTime, Utc};

use super::{query, ts, Conn, Pool, Result, Row, Timestamp, Unsigned};
use crate::domain::CanonicalRequest;

/// A policy a confirmed change set for a tenant.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PolicyRow {
    pub id: String,
    pub tenant_id: String,
    /// `enforce` or `observe`.
    pub mode: String,
    /// Empty: back to the config's own.
    pub text: String,
    pub digest: String,
    pub change_id: String,
    pub proposed_by: String,
    pub confirmed_by: String,
    #[sqlx(try_from = "Timestamp")]
    pub at: DateTime<Utc>,
}

pub async fn insert_policy(conn: &mut Conn, row: &PolicyRow) -> Result<()> {
    query(
        "INSERT INTO tenant_policies (id, tenant_id, mode, text, digest, change_id, proposed_by, confirmed_by, at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&row.id)
    .bind(&row.tenant_id)
    .bind(&row.mode)
    .bind(&row.text)
    .bind(&row.digest)
    .bind(&row.change_id)
    .bind(&row.proposed_by)
    .bind(&row.confirmed_by)
    .bind(ts(row.at))
    .execute(conn)
    .await?;
    Ok(())
}

/// The newest policy of every tenant and mode.
pub async fn latest(pool: &Pool) -> Result<Vec<PolicyRow>> {
    let rows = query("SELECT * FROM tenant_policies ORDER BY tenant_id, mode, at, id").fetch_all(pool).await?;
    let all: Vec<PolicyRow> = rows.iter().map(Row::decode).collect::<Result<_>>()?;
    let mut newest: Vec<PolicyRow> = Vec::new();
    for row in all {
        match newest.last_mut() {
            Some(last) if last.tenant_id == row.tenant_id && last.mode == row.mode => *last = row,
            _ => newest.push(row),
        }
    }
    Ok(newest)
}

/// One difference observe mode recorded.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ObservationRow {
    pub id: String,
    pub tenant_id: String,
    pub proposal_id: String,
    pub request_hash: String,
    #[sqlx(try_from = "Unsigned<u64>")]
    pub amount_minor: u64,
    pub currency: String,
    pub change: String,
    pub enforced: String,
    pub observed: String,
    pub observed_digest: String,
    #[sqlx(try_from = "Timestamp")]
    pub at: DateTime<Utc>,
}

pub async fn insert_observation(conn: &mut Conn, row: &ObservationRow) -> Result<()> {
    query(
        "INSERT INTO policy_observations (id, tenant_id, proposal_id, request_hash, amount_minor, currency, change,
                                          enforced, observed, observed_digest, at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&row.id)
    .bind(&row.tenant_id)
    .bind(&row.proposal_id)
    .bind(&row.request_hash)
    .bind(i64::try_from(row.amount_minor).unwrap_or(i64::MAX))
    .bind(&row.currency)
    .bind(&row.change)
    .bind(&row.enforced)
    .bind(&row.observed)
    .bind(&row.observed_digest)
    .bind(ts(row.at))
    .execute(conn)
    .await?;
    Ok(())
}

/// `tenant`'s newest differences, at most `limit`.
pub async fn observations(pool: &Pool, tenant: &str, limit: u32) -> Result<Vec<ObservationRow>> {
    let rows = query("SELECT * FROM policy_observations WHERE tenant_id = ? ORDER BY at DESC, id DESC LIMIT ?")
        .bind(tenant)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    rows.iter().map(Row::decode).collect()
}

/// One recorded proposal, as a backtest replays it.
#[derive(Debug, Clone, sqlx::FromRow)]
struct HistoryRow {
    pub id: String,
    pub agent_id: String,
    #[sqlx(rename = "canonical_request", try_from = "super::Json<CanonicalRequest>")]
    pub request: CanonicalRequest,
    #[sqlx(try_from = "super::Flag")]
    pub payee_trusted: bool,
}

/// `tenant`'s proposals created at or after `since`, oldest first, with
/// their payee's trust as it stands.
pub async fn history(
    pool: &Pool,
    tenant: &str,
    since: DateTime<Utc>,
) -> Result<Vec<crate::decision::policy::backtest::Recorded>> {
    let rows = query(
        "SELECT p.id, p.agent_id, p.canonical_request, COALESCE(py.trusted, 0) AS payee_trusted
           FROM proposals p
           LEFT JOIN payees py ON py.tenant_id = p.tenant_id AND py.id = p.payee_id
          WHERE p.tenant_id = ? AND p.created_at >= ?
          ORDER BY p.created_at, p.id",
    )
    .bind(tenant)
    .bind(ts(since))
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|r| {
            let row: HistoryRow = Row::decode(r)?;
            Ok(crate::decision::policy::backtest::Recorded {
                id: row.id,
                agent_id: row.agent_id,
                request: row.request,
                payee_trusted: row.payee_trusted,
            })
        })
        .collect()
}

/// Lays the confirmed policies over the config's in `book` (at start, and
/// every `policy::REFRESH_EVERY` so that a change confirmed on another
/// instance reaches this one).
pub async fn refresh(pool: &Pool, book: &crate::decision::policy::PolicyBook) -> Result<()> {
    let rows: Vec<crate::decision::policy::Confirmed> = latest(pool)
        .await?
        .into_iter()
        .map(|r| crate::decision::policy::Confirmed {
            id: r.id,
            tenant_id: r.tenant_id,
            mode: r.mode,
            text: r.text,
            change_id: r.change_id,
        })
        .collect();
    book.apply_confirmed(&rows);
    Ok(())
}
