//! Batches (migration 0041): the batch, its lines, and the decisions on it.
//! Status changes are compare-and-set; the token is marked used by one.

use chrono::{DateTime, Utc};

use super::{query, ts, Builder, Conn, Exec, Int, Json, OptTimestamp, Pool, Result, Row, Timestamp, Unsigned};
use crate::decision::policy::Decision;

/// A batch as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct BatchRow {
    pub id: String,
    pub tenant_id: String,
    pub agent_id: String,
    pub run_id: String,
    pub label: Option<String>,
    pub status: String,
    pub body_hash: String,
    pub batch_hash: String,
    #[sqlx(try_from = "Json<Decision>")]
    pub policy: Decision,
    #[sqlx(try_from = "Unsigned<u8>")]
    pub required_approvals: u8,
    #[sqlx(try_from = "Int")]
    pub round: i64,
    pub token: Option<String>,
    pub token_jti: Option<String>,
    #[sqlx(try_from = "OptTimestamp")]
    pub token_expires_at: Option<DateTime<Utc>>,
    #[sqlx(try_from = "OptTimestamp")]
    pub token_used_at: Option<DateTime<Utc>>,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
    #[sqlx(try_from = "Timestamp")]
    pub updated_at: DateTime<Utc>,
    #[sqlx(try_from = "Timestamp")]
    pub expires_at: DateTime<Utc>,
}

/// One line of a batch as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LineRow {
    pub batch_id: String,
    #[sqlx(try_from = "Int")]
    pub line: i64,
    /// `included`, `held` or `committed`.
    pub status: String,
    pub payee_id: Option<String>,
    pub legal_name: Option<String>,
    #[sqlx(try_from = "super::OptUnsigned")]
    pub amount_minor: Option<u64>,
    pub currency: Option<String>,
    pub invoice_id: Option<String>,
    /// The canonical request (JSON), when the line could be read.
    pub canonical_request: Option<String>,
    pub request_hash: Option<String>,
    /// The line's own policy decision (JSON).
    pub policy: Option<String>,
    pub held_by: Option<String>,
    /// `[{rule, message}]` (JSON).
    pub held_reasons: Option<String>,
    pub proposal_id: Option<String>,
}

/// One decision on a batch.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct BatchApprovalRow {
    pub batch_id: String,
    #[sqlx(try_from = "Int")]
    pub round: i64,
    pub approver_id: String,
    pub decision: String,
    pub reason: Option<String>,
    pub batch_hash: String,
    pub via: String,
    pub amr: String,
    #[sqlx(try_from = "Timestamp")]
    pub at: DateTime<Utc>,
}

/// A batch to store.
#[derive(Debug, Clone)]
pub struct NewBatch<'a> {
    pub id: &'a str,
    pub tenant_id: &'a str,
    pub agent_id: &'a str,
    pub run_id: &'a str,
    pub label: Option<&'a str>,
    pub body_hash: &'a str,
    pub batch_hash: &'a str,
    pub policy: &'a Decision,
    pub now: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// A line to store with its batch.
#[derive(Debug, Clone, Default)]
pub struct NewLine {
    pub line: i64,
    pub status: &'static str,
    pub payee_id: Option<String>,
    pub legal_name: Option<String>,
    pub amount_minor: Option<u64>,
    pub currency: Option<String>,
    pub invoice_id: Option<String>,
    pub canonical_request: Option<String>,
    pub request_hash: Option<String>,
    pub policy: Option<String>,
    pub held_by: Option<String>,
    pub held_reasons: Option<String>,
}

/// Stores a batch and its lines; `None`, having written nothing, when the
/// same batch (same run, same lines) is already stored: its id then.
pub async fn insert(conn: &mut Conn, b: &NewBatch<'_>, lines: &[NewLine]) -> Result<Result<(), String>> {
    let now = ts(b.now);
    let policy = serde_json::to_string(b.policy).expect("a decision serializes");
    let done = query(
        "INSERT INTO batches (id, tenant_id, agent_id, run_id, label, status, body_hash, batch_hash, policy,
             required_approvals, round, created_at, updated_at, expires_at)
         VALUES (?, ?, ?, ?, ?, 'pending_approval', ?, ?, ?, ?, 1, ?, ?, ?)
         ON CONFLICT (tenant_id, agent_id, run_id, body_hash) DO NOTHING",
    )
    .bind(b.id)
    .bind(b.tenant_id)
    .bind(b.agent_id)
    .bind(b.run_id)
    .bind(b.label)
    .bind(b.body_hash)
    .bind(b.batch_hash)
    .bind(policy)
    .bind(i64::from(b.policy.required_approvals))
    .bind(now.clone())
    .bind(now)
    .bind(ts(b.expires_at))
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() == 0 {
        let existing: String = super::scalar(
            "SELECT id FROM batches WHERE tenant_id = ? AND agent_id = ? AND run_id = ? AND body_hash = ?",
        )
        .bind(b.tenant_id)
        .bind(b.agent_id)
        .bind(b.run_id)
        .bind(b.body_hash)
        .fetch_one(&mut *conn)
        .await?;
        return Ok(Err(existing));
    }
    for chunk in lines.chunks(50) {
        let mut q = Builder::new(
            "INSERT INTO batch_lines (batch_id, line, status, payee_id, legal_name, amount_minor, currency, invoice_id,
                 canonical_request, request_hash, policy, held_by, held_reasons) VALUES ",
        );
        for (i, l) in chunk.iter().enumerate() {
            q.push(if i == 0 { "(" } else { ", (" });
            q.push_bind(b.id).push(", ").push_bind(l.line).push(", ").push_bind(l.status);
            q.push(", ").push_bind(l.payee_id.clone()).push(", ").push_bind(l.legal_name.clone());
            q.push(", ").push_bind(l.amount_minor.map(|a| a as i64)).push(", ").push_bind(l.currency.clone());
            q.push(", ").push_bind(l.invoice_id.clone()).push(", ").push_bind(l.canonical_request.clone());
            q.push(", ").push_bind(l.request_hash.clone()).push(", ").push_bind(l.policy.clone());
            q.push(", ").push_bind(l.held_by.clone()).push(", ").push_bind(l.held_reasons.clone()).push(")");
        }
        q.build().execute(&mut *conn).await?;
    }
    Ok(Ok(()))
}

/// The batch `id` within `tenant`.
pub async fn get<'e>(db: impl Into<Exec<'e>>, tenant: &str, id: &str) -> Result<Option<BatchRow>> {
    let row =
        query("SELECT * FROM batches WHERE tenant_id = ? AND id = ?").bind(tenant).bind(id).fetch_optional(db).await?;
    row.as_ref().map(Row::decode).transpose()
}

/// [`get`], locking the row on PostgreSQL until the transaction ends (two
/// decisions on one batch count each other).
pub async fn get_locked(conn: &mut Conn, tenant: &str, id: &str) -> Result<Option<BatchRow>> {
    let lock = if conn.is_postgres() { " FOR UPDATE" } else { "" };
    let row = query(format!("SELECT * FROM batches WHERE tenant_id = ? AND id = ?{lock}"))
        .bind(tenant)
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(Row::decode).transpose()
}

/// The lines of a batch, in order.
pub async fn lines<'e>(db: impl Into<Exec<'e>>, batch: &str) -> Result<Vec<LineRow>> {
    let rows = query("SELECT * FROM batch_lines WHERE batch_id = ? ORDER BY line").bind(batch).fetch_all(db).await?;
    rows.iter().map(Row::decode).collect()
}

/// The batch line a proposal was paid as, if it was.
pub async fn line_of_proposal(pool: &Pool, proposal_id: &str) -> Result<Option<LineRow>> {
    let row = query("SELECT * FROM batch_lines WHERE proposal_id = ?").bind(proposal_id).fetch_optional(pool).await?;
    row.as_ref().map(Row::decode).transpose()
}

/// The decisions on a batch, every round, in order.
pub async fn approvals<'e>(db: impl Into<Exec<'e>>, batch: &str) -> Result<Vec<BatchApprovalRow>> {
    let rows = query("SELECT * FROM batch_approvals WHERE batch_id = ? ORDER BY round, at, approver_id")
        .bind(batch)
        .fetch_all(db)
        .await?;
    rows.iter().map(Row::decode).collect()
}

/// Records a decision; a second one by the same person in the same round
/// is a `Conflict`.
pub async fn insert_approval(conn: &mut Conn, a: &BatchApprovalRow) -> Result<()> {
    query(
        "INSERT INTO batch_approvals (batch_id, round, approver_id, decision, reason, batch_hash, via, amr, at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&a.batch_id)
    .bind(a.round)
    .bind(&a.approver_id)
    .bind(&a.decision)
    .bind(a.reason.as_deref())
    .bind(&a.batch_hash)
    .bind(&a.via)
    .bind(&a.amr)
    .bind(ts(a.at))
    .execute(conn)
    .await?;
    Ok(())
}

/// Compare-and-set: moves `id` from one of `from` to `to`.
pub async fn transition(conn: &mut Conn, id: &str, from: &[&str], to: &str, now: DateTime<Utc>) -> Result<bool> {
    let mut q = Builder::new("UPDATE batches SET status = ");
    q.push_bind(to).push(", updated_at = ").push_bind(ts(now)).push(" WHERE id = ").push_bind(id);
    q.push(" AND status IN (").push_list(from.iter().copied()).push(")");
    Ok(q.build().execute(conn).await?.rows_affected() == 1)
}

/// The batch approved: its token of the current round.
pub async fn approve(
    conn: &mut Conn,
    id: &str,
    (token, jti, expires_at): (&str, &str, DateTime<Utc>),
    now: DateTime<Utc>,
) -> Result<bool> {
    let done = query(
        "UPDATE batches SET status = 'approved', token = ?, token_jti = ?, token_expires_at = ?, token_used_at = NULL,
             updated_at = ?
         WHERE id = ? AND status IN ('pending_approval', 'approval_expired')",
    )
    .bind(token)
    .bind(jti)
    .bind(ts(expires_at))
    .bind(ts(now))
    .bind(id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Marks the batch's token used and the batch committed, once: false when
/// it is not approved with that token unused.
pub async fn use_token(conn: &mut Conn, id: &str, jti: &str, now: DateTime<Utc>) -> Result<bool> {
    let done = query(
        "UPDATE batches SET status = 'committed', token_used_at = ?, updated_at = ?
         WHERE id = ? AND status = 'approved' AND token_jti = ? AND token_used_at IS NULL",
    )
    .bind(ts(now))
    .bind(ts(now))
    .bind(id)
    .bind(jti)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// What the batch is now after its lines changed (a line held back): its
/// hash, decision and a new round of approvals.
pub async fn revise(conn: &mut Conn, id: &str, batch_hash: &str, policy: &Decision, now: DateTime<Utc>) -> Result<()> {
    query(
        "UPDATE batches SET batch_hash = ?, policy = ?, required_approvals = ?, round = round + 1, updated_at = ?
         WHERE id = ?",
    )
    .bind(batch_hash)
    .bind(serde_json::to_string(policy).expect("a decision serializes"))
    .bind(i64::from(policy.required_approvals))
    .bind(ts(now))
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Holds a line back (from `included`), by whom and why.
pub async fn hold_line(conn: &mut Conn, batch: &str, line: i64, by: &str, reasons: &str) -> Result<bool> {
    let done = query(
        "UPDATE batch_lines SET status = 'held', held_by = ?, held_reasons = ?
         WHERE batch_id = ? AND line = ? AND status = 'included'",
    )
    .bind(by)
    .bind(reasons)
    .bind(batch)
    .bind(line)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A line paid as proposal `proposal_id` (from `included`).
pub async fn commit_line(conn: &mut Conn, batch: &str, line: i64, proposal_id: &str) -> Result<bool> {
    let done = query(
        "UPDATE batch_lines SET status = 'committed', proposal_id = ?
         WHERE batch_id = ? AND line = ? AND status = 'included'",
    )
    .bind(proposal_id)
    .bind(batch)
    .bind(line)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A tenant's batches in `status`, oldest first, at most `limit`.
pub async fn of_tenant(pool: &Pool, tenant: &str, status: &str, limit: u32) -> Result<Vec<BatchRow>> {
    let rows = query("SELECT * FROM batches WHERE tenant_id = ? AND status = ? ORDER BY id LIMIT ?")
        .bind(tenant)
        .bind(status)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    rows.iter().map(Row::decode).collect()
}

/// Batches waiting past their deadline, and approved ones whose token
/// expired unused: (id, tenant, status).
pub async fn due_for_expiry(conn: &mut Conn, now: DateTime<Utc>) -> Result<Vec<(String, String, String)>> {
    let rows = query(
        "SELECT id, tenant_id, status FROM batches
         WHERE (status IN ('pending_approval', 'approval_expired') AND expires_at <= ?)
            OR (status = 'approved' AND token_used_at IS NULL AND token_expires_at <= ?)
         LIMIT 100",
    )
    .bind(ts(now))
    .bind(ts(now))
    .fetch_all(&mut *conn)
    .await?;
    rows.iter()
        .map(|r| Ok((r.try_get("id")?, r.try_get("tenant_id")?, r.try_get("status")?)))
        .collect::<sqlx::Result<_>>()
        .map_err(Into::into)
}

/// An approved batch whose token lapsed: a new round, approvals needed again.
pub async fn lapse(conn: &mut Conn, id: &str, now: DateTime<Utc>) -> Result<bool> {
    let done = query(
        "UPDATE batches SET status = 'approval_expired', round = round + 1, token = NULL, updated_at = ?
         WHERE id = ? AND status = 'approved' AND token_used_at IS NULL",
    )
    .bind(ts(now))
    .bind(id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}
