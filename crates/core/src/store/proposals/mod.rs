//! Proposals and their approvals. State changes are compare-and-set
//! (`UPDATE … WHERE status IN (…)`), checked for one affected row.

use chrono::{DateTime, Utc};

use super::{
    query, scalar, ts, Builder, Conn, Flag, Int, Json, Known, OptTimestamp, Pool, Result, Row, StoreError, Timestamp,
    Unsigned,
};
use crate::decision::policy::Decision;
use crate::domain::{CanonicalRequest, Currency, ProposalStatus};

mod bundled;
pub use bundled::{bundle, push_bundle, ProposalBundle};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ProposalRow {
    pub id: String,
    pub tenant_id: String,
    pub agent_id: String,
    pub run_id: String,
    pub kind: String,
    #[sqlx(try_from = "Known<ProposalStatus>")]
    pub status: ProposalStatus,
    #[sqlx(try_from = "Unsigned<u64>")]
    pub amount_minor: u64,
    pub currency: String,
    pub payee_id: String,
    #[sqlx(try_from = "Flag")]
    pub payee_trusted: bool,
    #[sqlx(rename = "canonical_request", try_from = "Json<CanonicalRequest>")]
    pub request: CanonicalRequest,
    pub request_hash: String,
    #[sqlx(try_from = "Json<Decision>")]
    pub policy: Decision,
    #[sqlx(try_from = "Unsigned<u8>")]
    pub required_approvals: u8,
    #[sqlx(try_from = "Int")]
    pub version: i64,
    /// Approvals of this round count; a new round starts when an approval expires.
    #[sqlx(try_from = "Int")]
    pub approval_round: i64,
    #[sqlx(try_from = "Timestamp")]
    pub created_at: DateTime<Utc>,
    #[sqlx(try_from = "Timestamp")]
    pub updated_at: DateTime<Utc>,
    #[sqlx(try_from = "Timestamp")]
    pub expires_at: DateTime<Utc>,
}

const SELECT: &str = "SELECT p.*, COALESCE(py.trusted, 0) AS payee_trusted FROM proposals p
     LEFT JOIN payees py ON py.tenant_id = p.tenant_id AND py.id = p.payee_id";

/// What `insert` needs; the row's version starts at 1.
#[derive(Debug, Clone)]
pub struct NewProposal<'a> {
    pub id: &'a str,
    pub tenant_id: &'a str,
    pub agent_id: &'a str,
    pub run_id: &'a str,
    pub kind: &'a str,
    pub status: ProposalStatus,
    pub amount_minor: u64,
    pub currency: &'a str,
    pub payee_id: &'a str,
    /// The canonical request's invoice id, kept in its own column for the
    /// duplicate-invoice signal (migration 0011).
    pub invoice_id: Option<&'a str>,
    pub canonical_request: &'a str,
    pub request_hash: &'a str,
    pub policy: &'a str,
    pub required_approvals: u8,
    pub now: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// The id of the proposal with the same canonical request in the same run, if any.
pub async fn find_duplicate(
    conn: &mut Conn,
    tenant: &str,
    agent: &str,
    run_id: &str,
    request_hash: &str,
) -> Result<Option<String>> {
    Ok(scalar("SELECT id FROM proposals WHERE tenant_id = ? AND agent_id = ? AND run_id = ? AND request_hash = ?")
        .bind(tenant)
        .bind(agent)
        .bind(run_id)
        .bind(request_hash)
        .fetch_optional(conn)
        .await?)
}

/// [`insert`] for several proposals in one statement; for each, the row as
/// inserted, or None when the identical request was already in its run
/// (also when it comes twice in `proposals`: the first is kept).
pub async fn insert_many(conn: &mut Conn, proposals: &[NewProposal<'_>]) -> Result<Vec<Option<ProposalRow>>> {
    if proposals.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = Builder::new(
        "INSERT INTO proposals (id, tenant_id, agent_id, run_id, kind, status, amount_minor, currency, payee_id,
             invoice_id, canonical_request, request_hash, policy, required_approvals, version, created_at, updated_at,
             expires_at)
         VALUES ",
    );
    for (i, p) in proposals.iter().enumerate() {
        let now = ts(p.now);
        q.push(if i == 0 { "(" } else { ", (" });
        q.push_list([p.id, p.tenant_id, p.agent_id, p.run_id, p.kind, p.status.as_str()]);
        q.push(", ").push_bind(p.amount_minor as i64).push(", ").push_bind(p.currency);
        q.push(", ").push_bind(p.payee_id).push(", ").push_bind(p.invoice_id);
        q.push(", ").push_list([p.canonical_request, p.request_hash, p.policy]);
        q.push(", ").push_bind(i64::from(p.required_approvals)).push(", 1, ").push_bind(now.clone());
        q.push(", ").push_bind(now).push(", ").push_bind(ts(p.expires_at)).push(")");
    }
    q.push(" ON CONFLICT (tenant_id, agent_id, run_id, request_hash) DO NOTHING RETURNING *, 0 AS payee_trusted");
    let mut stored: std::collections::HashMap<String, ProposalRow> = q
        .build()
        .fetch_all(conn)
        .await?
        .iter()
        .map(|r| r.decode().map(|row: ProposalRow| (row.id.clone(), row)))
        .collect::<Result<_>>()?;
    Ok(proposals.iter().map(|p| stored.remove(p.id)).collect())
}

/// Inserts the proposal unless the same request is already in this run
/// (the unique (tenant, agent, run, request hash)); returns the stored row,
/// or None when it was a duplicate. Letting the insert detect the duplicate
/// and return the row saves the write transaction a statement and the
/// request a read, each a round trip to a connection's thread
/// (docs/BENCHMARKS.md). The row's `payee_trusted` is false: the caller knows
/// the payee.
pub async fn insert(conn: &mut Conn, p: &NewProposal<'_>) -> Result<Option<ProposalRow>> {
    Ok(insert_many(conn, std::slice::from_ref(p)).await?.pop().flatten())
}

/// The proposal `id` within `tenant`, or None (also for other tenants' ids).
pub async fn get(pool: &Pool, tenant: &str, id: &str) -> Result<Option<ProposalRow>> {
    let row = query(format!("{SELECT} WHERE p.tenant_id = ? AND p.id = ?"))
        .bind(tenant)
        .bind(id)
        .fetch_optional(pool)
        .await?;
    row.as_ref().map(Row::decode).transpose()
}

/// The proposals `ids` within `tenant` that exist, in the order given, in
/// one statement (the bulk page lists up to 50).
pub async fn get_many(pool: &Pool, tenant: &str, ids: &[&str]) -> Result<Vec<ProposalRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = Builder::new(format!("{SELECT} WHERE p.tenant_id = "));
    q.push_bind(tenant).push(" AND p.id IN (");
    q.push_list(ids.iter().copied());
    q.push(")");
    let mut rows = q.build().fetch_all(pool).await?.iter().map(Row::decode).collect::<Result<Vec<ProposalRow>>>()?;
    rows.sort_by_key(|r| ids.iter().position(|id| *id == r.id));
    Ok(rows)
}

/// The tenant's proposals waiting for a decision (pending, or whose
/// approval lapsed), oldest first, at most `limit`.
pub async fn waiting_in(conn: &mut Conn, tenant: &str, limit: u32) -> Result<Vec<ProposalRow>> {
    let rows = query(format!(
        "{SELECT} WHERE p.tenant_id = ? AND p.status IN ('pending_approval', 'approval_expired') ORDER BY p.id LIMIT ?"
    ))
    .bind(tenant)
    .bind(i64::from(limit))
    .fetch_all(conn)
    .await?;
    rows.iter().map(Row::decode).collect()
}

/// Same as `get`, on a connection (inside a transaction).
pub async fn get_in(conn: &mut Conn, tenant: &str, id: &str) -> Result<Option<ProposalRow>> {
    let row = query(format!("{SELECT} WHERE p.tenant_id = ? AND p.id = ?"))
        .bind(tenant)
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(Row::decode).transpose()
}

/// [`get_in`], and on PostgreSQL the proposal's row locked to the end of
/// the transaction (`FOR UPDATE`): a decision reads the approvals given
/// after every other decision on the proposal committed, so two approvers
/// approving at once on two instances each count the other's. (SQLite's
/// one writer, `BEGIN IMMEDIATE`, does so already.)
pub async fn get_locked(conn: &mut Conn, tenant: &str, id: &str) -> Result<Option<ProposalRow>> {
    let lock = if conn.is_postgres() { " FOR UPDATE OF p" } else { "" };
    let row = query(format!("{SELECT} WHERE p.tenant_id = ? AND p.id = ?{lock}"))
        .bind(tenant)
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(Row::decode).transpose()
}

/// Filters for a listing; `cursor` is the id of the last item of the previous page.
#[derive(Debug, Clone)]
pub struct Listing<'a> {
    pub tenant_id: &'a str,
    pub agent_id: Option<&'a str>,
    pub status: Option<ProposalStatus>,
    pub order: ListOrder,
    pub filters: &'a ListFilters,
    pub limit: u32,
    /// The id of the last row of the previous page.
    pub cursor: Option<&'a str>,
}

/// How a listing is sorted; ties (and the id orders) by id, which sorts by
/// creation time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListOrder {
    #[default]
    Newest,
    Oldest,
    AmountDesc,
    AmountAsc,
    /// Soonest `expires_at` first.
    ExpiresSoonest,
}

/// The queue's search filters; all optional, all combined with AND.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilters {
    /// Part of the payee's legal name (any case), or its exact id.
    pub payee: Option<String>,
    pub currency: Option<String>,
    pub min_minor: Option<u64>,
    pub max_minor: Option<u64>,
    /// The proposing agent (the queue; the agent listing is its own agent's).
    pub agent: Option<String>,
    pub invoice_id: Option<String>,
    /// Created at or after / before these instants.
    pub created_from: Option<DateTime<Utc>>,
    pub created_before: Option<DateTime<Utc>>,
}

/// One page plus whether more follow. Ids sort by creation time.
pub async fn list(pool: &Pool, l: &Listing<'_>) -> Result<(Vec<ProposalRow>, bool)> {
    let rows = listing_query("", l).build().fetch_all(pool).await?;
    let more = rows.len() > l.limit as usize;
    Ok((rows.iter().take(l.limit as usize).map(Row::decode).collect::<Result<_>>()?, more))
}

/// A pending proposal as the count of those waiting for a reviewer reads
/// it (`flow`): what `approvals::may_approve` checks, and whether the
/// reviewer approved it in its current round. A few columns, no JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingRow {
    pub id: String,
    pub status: ProposalStatus,
    pub agent_id: String,
    pub currency: Currency,
    pub amount_minor: u64,
    /// `approver` gave an approval in the current round.
    pub approved: bool,
}

/// The tenant's proposals in `status` (one awaiting a decision: pending, or
/// whose approval lapsed), oldest first, after `cursor` (an id), as
/// `approver` would be checked against them; plus whether more follow.
/// The page comes back as one joined text (`Pool::joined`), not a row each.
pub async fn pending_for(
    pool: &Pool,
    tenant: &str,
    approver: &str,
    status: ProposalStatus,
    cursor: Option<&str>,
    limit: u32,
) -> Result<(Vec<PendingRow>, bool)> {
    let item = "id || ' ' || status || ' ' || agent_id || ' ' || currency || ' ' || CAST(amount_minor AS TEXT) \
                || ' ' || approved";
    let mut q = Builder::new(format!(
        "SELECT {} AS page FROM (SELECT p.id, p.status, p.agent_id, p.currency, p.amount_minor,
             CASE WHEN EXISTS (SELECT 1 FROM approvals a WHERE a.proposal_id = p.id AND a.round = p.approval_round
                 AND a.approver_id = ",
        pool.joined(item)
    ));
    q.push_bind(approver).push(" AND a.decision = 'approve') THEN '1' ELSE '0' END AS approved FROM proposals p");
    q.push(" WHERE p.tenant_id = ").push_bind(tenant);
    q.push(" AND p.status = ").push_bind(status.as_str());
    if let Some(cursor) = cursor {
        q.push(" AND p.id > ").push_bind(cursor);
    }
    q.push(" ORDER BY p.id LIMIT ").push_bind(i64::from(limit) + 1).push(") AS pending");
    let page: Page = q.build().fetch_one(pool).await?.decode()?;
    let page = page.page.unwrap_or_default();
    let mut rows = page.split(';').filter(|item| !item.is_empty()).map(pending_row).collect::<Result<Vec<_>>>()?;
    rows.sort_unstable_by(|a, b| a.id.cmp(&b.id));
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    Ok((rows, more))
}

/// [`pending_for`]'s joined page (NULL when it is empty).
#[derive(sqlx::FromRow)]
struct Page {
    page: Option<String>,
}

/// One item of [`pending_for`]'s joined page.
fn pending_row(item: &str) -> Result<PendingRow> {
    let corrupt = || StoreError::corrupt("pending", "not a pending item");
    let mut fields = item.split(' ');
    let mut next = || fields.next().ok_or_else(corrupt);
    let (id, status, agent_id, currency, amount, approved) = (next()?, next()?, next()?, next()?, next()?, next()?);
    Ok(PendingRow {
        id: id.to_owned(),
        status: ProposalStatus::parse(status).ok_or_else(corrupt)?,
        agent_id: agent_id.to_owned(),
        currency: Currency::parse(currency).map_err(|_| corrupt())?,
        amount_minor: amount.parse().map_err(|e| StoreError::corrupt("amount_minor", e))?,
        approved: approved == "1",
    })
}

/// `%text%` for LIKE, with its wildcards escaped (`\`).
fn contains_pattern(text: &str) -> String {
    let escaped = text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
    format!("%{escaped}%")
}

/// The statement of a listing page, after `prefix` (tests explain it).
fn listing_query<'a>(prefix: &str, l: &Listing<'a>) -> Builder<'a> {
    let mut q = Builder::new(format!("{prefix}{SELECT}"));
    q.push(" WHERE p.tenant_id = ").push_bind(l.tenant_id);
    if let Some(agent) = l.agent_id {
        q.push(" AND p.agent_id = ").push_bind(agent);
    }
    if let Some(status) = l.status {
        q.push(" AND p.status = ").push_bind(status.as_str());
    }
    let f = l.filters;
    if let Some(payee) = &f.payee {
        // lower() on both sides: SQLite's LIKE ignores ASCII case,
        // PostgreSQL's does not.
        q.push(" AND (lower(py.legal_name) LIKE lower(").push_bind(contains_pattern(payee)).push(")");
        q.push(" ESCAPE '\\' OR p.payee_id = ").push_bind(payee.clone()).push(")");
    }
    if let Some(currency) = &f.currency {
        q.push(" AND p.currency = ").push_bind(currency.clone());
    }
    if let Some(min) = f.min_minor {
        q.push(" AND p.amount_minor >= ").push_bind(min as i64);
    }
    if let Some(max) = f.max_minor {
        q.push(" AND p.amount_minor <= ").push_bind(max as i64);
    }
    if let Some(agent) = &f.agent {
        // Part of the agent's id, any case (`payout` finds `payout-bot`).
        q.push(" AND lower(p.agent_id) LIKE lower(").push_bind(contains_pattern(agent)).push(") ESCAPE '\\'");
    }
    if let Some(invoice) = &f.invoice_id {
        q.push(" AND p.invoice_id = ").push_bind(invoice.clone());
    }
    if let Some(from) = f.created_from {
        q.push(" AND p.created_at >= ").push_bind(ts(from));
    }
    if let Some(before) = f.created_before {
        q.push(" AND p.created_at < ").push_bind(ts(before));
    }
    // Keyset paging: after the previous page's last row, in this order.
    let (key, descending) = match l.order {
        ListOrder::Newest => (None, true),
        ListOrder::Oldest => (None, false),
        ListOrder::AmountDesc => (Some("amount_minor"), true),
        ListOrder::AmountAsc => (Some("amount_minor"), false),
        ListOrder::ExpiresSoonest => (Some("expires_at"), false),
    };
    let cmp = if descending { " < " } else { " > " };
    if let Some(cursor) = l.cursor {
        match key {
            None => {
                q.push(" AND p.id").push(cmp).push_bind(cursor);
            }
            Some(key) => {
                q.push(format!(" AND (p.{key}, p.id){cmp}(SELECT {key}, id FROM proposals WHERE id = "));
                q.push_bind(cursor).push(")");
            }
        }
    }
    let dir = if descending { "DESC" } else { "ASC" };
    match key {
        None => q.push(format!(" ORDER BY p.id {dir}")),
        Some(key) => q.push(format!(" ORDER BY p.{key} {dir}, p.id {dir}")),
    };
    q.push(" LIMIT ").push_bind(i64::from(l.limit) + 1);
    q
}

/// The agent's proposals changed after `after` (their `updated_at`, then
/// id), oldest change first: (id, updated_at). The agent event stream's read.
pub async fn changed_since(
    pool: &Pool,
    tenant: &str,
    agent: &str,
    after: (DateTime<Utc>, &str),
    limit: u32,
) -> Result<Vec<(String, DateTime<Utc>)>> {
    let at = ts(after.0);
    let rows = query(
        "SELECT id, updated_at FROM proposals
         WHERE tenant_id = ? AND agent_id = ? AND (updated_at > ? OR (updated_at = ? AND id > ?))
         ORDER BY updated_at, id LIMIT ?",
    )
    .bind(tenant)
    .bind(agent)
    .bind(&at)
    .bind(&at)
    .bind(after.1)
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    rows.iter().map(|r| r.decode::<Changed>().map(|c| (c.id, c.updated_at))).collect()
}

#[derive(sqlx::FromRow)]
struct Changed {
    id: String,
    #[sqlx(try_from = "Timestamp")]
    updated_at: DateTime<Utc>,
}

/// Moves `id` to `to` if it is currently in one of `from`; bumps its version.
/// Returns whether the row changed (false: someone else moved it first).
pub async fn transition(
    conn: &mut Conn,
    id: &str,
    from: &[ProposalStatus],
    to: ProposalStatus,
    now: DateTime<Utc>,
) -> Result<bool> {
    let mut q = Builder::new("");
    push_transition(&mut q, id, from, to, now);
    Ok(q.build().execute(conn).await?.rows_affected() == 1)
}

/// Writes [`transition`]'s statement into `q` (for a one-command
/// transaction, `super::guarded`).
pub fn push_transition<'q>(
    q: &mut Builder<'q>,
    id: &'q str,
    from: &[ProposalStatus],
    to: ProposalStatus,
    now: DateTime<Utc>,
) {
    debug_assert!(from.iter().all(|f| f.can_become(to)), "transition not allowed by the lifecycle");
    q.push("UPDATE proposals SET status = ")
        .push_bind(to.as_str())
        .push(", version = version + 1, updated_at = ")
        .push_bind(ts(now))
        .push(" WHERE id = ")
        .push_bind(id)
        .push(" AND status IN (");
    q.push_list(from.iter().map(|f| f.as_str()));
    q.push(")");
}

/// A proposal something is due for: [`due_for_expiry`], [`approvals_expired_before`].
#[derive(sqlx::FromRow)]
struct Due {
    id: String,
    tenant_id: String,
    request_hash: String,
}

impl Due {
    fn into_tuple(self) -> (String, String, String) {
        (self.id, self.tenant_id, self.request_hash)
    }
}

/// Pending proposals past their deadline: (id, tenant, request hash).
pub async fn due_for_expiry(conn: &mut Conn, now: DateTime<Utc>) -> Result<Vec<(String, String, String)>> {
    let rows = query(
        "SELECT id, tenant_id, request_hash FROM proposals WHERE status = ? AND expires_at <= ? ORDER BY id LIMIT 500",
    )
    .bind(ProposalStatus::PendingApproval.as_str())
    .bind(ts(now))
    .fetch_all(conn)
    .await?;
    rows.iter().map(|r| r.decode::<Due>().map(Due::into_tuple)).collect()
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ApprovalRow {
    pub proposal_id: String,
    #[sqlx(try_from = "Int")]
    pub round: i64,
    pub approver_id: String,
    pub decision: String,
    pub reason: Option<String>,
    pub via: String,
    pub amr: String,
    #[sqlx(try_from = "Timestamp")]
    pub at: DateTime<Utc>,
    /// A delegate's approval: the user it counts for (`approver_id` is the
    /// delegate, who gave it), and the delegation it was given under.
    pub on_behalf_of: Option<String>,
    pub delegation_id: Option<String>,
}

impl ApprovalRow {
    /// Whom the approval counts for: the person it was given for, or its giver.
    pub fn principal(&self) -> &str {
        self.on_behalf_of.as_deref().unwrap_or(&self.approver_id)
    }
}

/// Records a decision. A person counts once per round: a second approval by
/// the same person is a unique violation; a rejection replaces their approval.
pub async fn insert_approval(conn: &mut Conn, a: &ApprovalRow) -> Result<()> {
    let conflict = if a.decision == "reject" {
        " ON CONFLICT (proposal_id, round, approver_id) DO UPDATE SET decision = excluded.decision,
             reason = excluded.reason, via = excluded.via, amr = excluded.amr, at = excluded.at"
    } else {
        ""
    };
    query(format!(
        "INSERT INTO approvals (proposal_id, round, approver_id, decision, reason, via, amr, at, on_behalf_of,
                                delegation_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?){conflict}"
    ))
    .bind(&a.proposal_id)
    .bind(a.round)
    .bind(&a.approver_id)
    .bind(&a.decision)
    .bind(&a.reason)
    .bind(&a.via)
    .bind(&a.amr)
    .bind(ts(a.at))
    .bind(&a.on_behalf_of)
    .bind(&a.delegation_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Approvals of the current round of the given proposals, in the order given.
pub async fn approvals_of(pool: &Pool, ids: &[&str]) -> Result<Vec<ApprovalRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = Builder::new(
        "SELECT a.* FROM approvals a JOIN proposals p ON p.id = a.proposal_id AND a.round = p.approval_round
         WHERE a.withdrawn_at IS NULL AND a.proposal_id IN (",
    );
    q.push_list(ids.iter().copied());
    q.push(") ORDER BY a.at, a.approver_id");
    let rows = q.build().fetch_all(pool).await?;
    rows.iter().map(Row::decode).collect()
}

/// Approvals (decision `approve`) of one round, in the order given.
pub async fn approvals_in_round(conn: &mut Conn, id: &str, round: i64) -> Result<Vec<ApprovalRow>> {
    let rows = query(
        "SELECT * FROM approvals WHERE proposal_id = ? AND round = ? AND decision = 'approve' AND withdrawn_at IS NULL
         ORDER BY at, approver_id",
    )
    .bind(id)
    .bind(round)
    .fetch_all(conn)
    .await?;
    rows.iter().map(Row::decode).collect()
}

/// Marks a change that is not a status change (an approval short of the
/// required count), so pollers see a new version.
pub async fn touch(conn: &mut Conn, id: &str, now: DateTime<Utc>) -> Result<()> {
    let mut q = Builder::new("");
    push_touch(&mut q, id, now);
    q.build().execute(conn).await?;
    Ok(())
}

/// Writes [`touch`]'s statement into `q`.
pub fn push_touch<'q>(q: &mut Builder<'q>, id: &'q str, now: DateTime<Utc>) {
    q.push("UPDATE proposals SET version = version + 1, updated_at = ").push_bind(ts(now));
    q.push(" WHERE id = ").push_bind(id);
}

/// Writes whether `id`'s status is `status` (a guard's value, 1 or 0).
pub fn push_status_is<'q>(q: &mut Builder<'q>, id: &'q str, status: ProposalStatus) {
    q.push("(SELECT status FROM proposals WHERE id = ").push_bind(id).push(") = ").push_bind(status.as_str());
}

/// Every approval and rejection of a proposal, all rounds, oldest first.
pub async fn approvals_all_rounds(pool: &Pool, id: &str) -> Result<Vec<ApprovalRow>> {
    let rows = query("SELECT * FROM approvals WHERE proposal_id = ? ORDER BY round, at, approver_id")
        .bind(id)
        .fetch_all(pool)
        .await?;
    rows.iter().map(Row::decode).collect()
}

/// Raises the approvals a proposal needs, storing the policy decision that
/// asks for them (re-evaluated at approval time, a risk signal added since);
/// never lowers them.
pub async fn raise_required_approvals(conn: &mut Conn, id: &str, policy: &Decision) -> Result<()> {
    let required = i64::from(policy.required_approvals);
    query("UPDATE proposals SET required_approvals = ?, policy = ? WHERE id = ? AND required_approvals < ?")
        .bind(required)
        .bind(serde_json::to_string(policy).expect("a decision serializes"))
        .bind(id)
        .bind(required)
        .execute(conn)
        .await?;
    Ok(())
}

/// Replaces a proposal's policy decision and the approvals it requires
/// (a policy approval withheld in the transaction that stores it).
pub async fn replace_policy(conn: &mut Conn, id: &str, policy: &Decision) -> Result<()> {
    query("UPDATE proposals SET required_approvals = ?, policy = ? WHERE id = ?")
        .bind(i64::from(policy.required_approvals))
        .bind(serde_json::to_string(policy).expect("a decision serializes"))
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TokenRow {
    pub jti: String,
    pub proposal_id: String,
    #[sqlx(try_from = "Int")]
    pub round: i64,
    pub token: String,
    pub kid: String,
    #[sqlx(try_from = "Timestamp")]
    pub issued_at: DateTime<Utc>,
    #[sqlx(try_from = "Timestamp")]
    pub expires_at: DateTime<Utc>,
    #[sqlx(try_from = "OptTimestamp")]
    pub used_at: Option<DateTime<Utc>>,
}

pub async fn insert_token(conn: &mut Conn, t: &TokenRow) -> Result<()> {
    query(
        "INSERT INTO approval_tokens (jti, proposal_id, round, token, kid, issued_at, expires_at, used_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
    )
    .bind(&t.jti)
    .bind(&t.proposal_id)
    .bind(t.round)
    .bind(&t.token)
    .bind(&t.kid)
    .bind(ts(t.issued_at))
    .bind(ts(t.expires_at))
    .execute(conn)
    .await?;
    Ok(())
}

/// The token this server minted with that `jti`, if any.
pub async fn token(pool: &Pool, jti: &str) -> Result<Option<TokenRow>> {
    let row = query("SELECT * FROM approval_tokens WHERE jti = ?").bind(jti).fetch_optional(pool).await?;
    row.as_ref().map(Row::decode).transpose()
}

/// The newest token minted for `proposal_id`, if any.
pub async fn newest_token(pool: &Pool, proposal_id: &str) -> Result<Option<TokenRow>> {
    let row = query("SELECT * FROM approval_tokens WHERE proposal_id = ? ORDER BY round DESC, issued_at DESC LIMIT 1")
        .bind(proposal_id)
        .fetch_optional(pool)
        .await?;
    row.as_ref().map(Row::decode).transpose()
}

/// Approved proposals whose current token expired unredeemed before `cutoff`:
/// (id, tenant, request hash).
pub async fn approvals_expired_before(conn: &mut Conn, cutoff: DateTime<Utc>) -> Result<Vec<(String, String, String)>> {
    let rows = query(
        "SELECT p.id, p.tenant_id, p.request_hash FROM proposals p
         JOIN approval_tokens t ON t.proposal_id = p.id AND t.round = p.approval_round
         WHERE p.status = 'approved' AND t.used_at IS NULL AND t.expires_at < ?
         ORDER BY p.id LIMIT 500",
    )
    .bind(ts(cutoff))
    .fetch_all(conn)
    .await?;
    rows.iter().map(|r| r.decode::<Due>().map(Due::into_tuple)).collect()
}

/// Starts a new approval round (after an approval expired unredeemed).
pub async fn next_round(conn: &mut Conn, id: &str) -> Result<()> {
    query("UPDATE proposals SET approval_round = approval_round + 1 WHERE id = ?").bind(id).execute(conn).await?;
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::store::operations::{self, NewOperation};
    use crate::store::test_pg::{each_backend, TestDb};
    use crate::store::Db;

    static CANONICAL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        serde_json::to_string(&countersign_domain::fixtures::sample_transfer()).expect("serializes")
    });

    /// prop_1 of tenant t's bot in run "run", as `setup` stores it.
    pub(crate) fn sample(now: DateTime<Utc>) -> NewProposal<'static> {
        NewProposal {
            id: "prop_1",
            tenant_id: "t",
            agent_id: "bot",
            run_id: "run",
            kind: "transfer",
            status: ProposalStatus::PendingApproval,
            amount_minor: 100,
            currency: "USD",
            payee_id: "ba_x",
            invoice_id: None,
            canonical_request: &CANONICAL,
            request_hash: "sha256:00",
            policy: r#"{"outcome":"needs_approval","required_approvals":2,"reasons":[]}"#,
            required_approvals: 2,
            now,
            expires_at: now,
        }
    }

    /// Tenants t and other, t's user maya and its agent bot.
    pub(crate) const REGISTRY: [&str; 3] = [
        "INSERT INTO tenants (id, name, created_at) VALUES ('t', 'T', 'x'), ('other', 'O', 'x')",
        "INSERT INTO users (id, tenant_id, username, password_hash, roles, created_at)
         VALUES ('usr_maya', 't', 'maya', 'x', '[]', 'x')",
        "INSERT INTO agents (tenant_id, id, key_sha256, acts_for, source_accounts, purposes, created_at)
         VALUES ('t', 'bot', 'k', 'usr_maya', '[]', '[]', 'x')",
    ];

    /// A fresh store on each backend holding the registry and prop_1.
    pub(crate) async fn setup(test: &str) -> Vec<TestDb> {
        let dbs = each_backend(test).await;
        for db in &dbs {
            let mut c = db.write.acquire().await.unwrap();
            registry(&mut c).await;
            insert(&mut c, &sample(crate::platform::clock::system_now())).await.unwrap();
        }
        dbs
    }

    /// The [`REGISTRY`] and tenant t's trusted payee ba_x.
    pub(crate) async fn registry(c: &mut Conn) {
        for sql in REGISTRY {
            query(sql).execute(&mut *c).await.unwrap();
        }
        query("INSERT INTO payees (tenant_id, id, legal_name, trusted, created_at) VALUES ('t', 'ba_x', 'X', 1, 'x')")
            .execute(&mut *c)
            .await
            .unwrap();
    }

    fn approval(approver: &str, round: i64, at: &str) -> ApprovalRow {
        ApprovalRow {
            proposal_id: "prop_1".into(),
            round,
            approver_id: approver.into(),
            decision: "approve".into(),
            reason: None,
            via: "console".into(),
            amr: "pwd".into(),
            at: crate::store::parse_ts(at).unwrap(),
            on_behalf_of: None,
            delegation_id: None,
        }
    }

    /// prop_1's approval token jti_1, of the first approval round, issued and expiring `at`.
    pub(crate) fn token_1(at: DateTime<Utc>) -> TokenRow {
        TokenRow {
            jti: "jti_1".into(),
            proposal_id: "prop_1".into(),
            round: 1,
            token: "eyJ.x.y".into(),
            kid: "k".into(),
            issued_at: at,
            expires_at: at,
            used_at: None,
        }
    }

    /// op_1, the transfer jti_1 commits, recorded `now` and claimed until `claimed_until`.
    pub(crate) fn operation_1(now: DateTime<Utc>, claimed_until: DateTime<Utc>) -> NewOperation<'static> {
        NewOperation {
            id: "op_1",
            proposal_id: "prop_1",
            jti: "jti_1",
            idempotency_key: "cs-prop_1-00",
            tenant_id: "t",
            kind: "transfer",
            amount_minor: 100,
            currency: "USD",
            budget_day: Some("2026-01-01"),
            reverses: None,
            now,
            claimed_until,
            invoice: None,
            rail: None,
            reserves: None,
        }
    }

    /// The bundle, and the same facts read by the separate queries, as text.
    async fn both(db: &Db) -> (String, String) {
        let b = bundle(&db.read, "t", "prop_1").await.unwrap().expect("found");
        let row = get(&db.read, "t", "prop_1").await.unwrap().unwrap();
        let approvals = approvals_of(&db.read, &["prop_1"]).await.unwrap();
        let operation = operations::for_proposals(&db.read, &["prop_1"]).await.unwrap().pop();
        let token = match scalar::<String>(
            "SELECT t.jti FROM approval_tokens t JOIN proposals p ON p.id = t.proposal_id
             AND t.round = p.approval_round WHERE t.proposal_id = 'prop_1'",
        )
        .fetch_optional(&db.read)
        .await
        .unwrap()
        {
            Some(jti) => token(&db.read, &jti).await.unwrap(),
            None => None,
        };
        (
            format!("{:?}", (b.row, b.approvals, b.operation, b.token)),
            format!("{:?}", (row, approvals, operation, token)),
        )
    }

    #[tokio::test]
    async fn get_many_reads_the_listed_proposals_of_the_tenant_in_the_order_listed() {
        for db in setup("get_many_reads_the_listed_proposals").await {
            let mut c = db.write.acquire().await.unwrap();
            for id in ["prop_2", "prop_3"] {
                insert(&mut c, &NewProposal { id, run_id: id, ..sample(crate::platform::clock::system_now()) })
                    .await
                    .unwrap();
            }
            drop(c);
            let ids = |rows: Vec<ProposalRow>| rows.into_iter().map(|r| r.id).collect::<Vec<_>>();
            let listed = get_many(&db.read, "t", &["prop_3", "nope", "prop_1"]).await.unwrap();
            assert_eq!(ids(listed), ["prop_3", "prop_1"], "as listed; unknown ids left out");
            assert!(get_many(&db.read, "other", &["prop_1"]).await.unwrap().is_empty(), "another tenant's");
            assert!(get_many(&db.read, "t", &[]).await.unwrap().is_empty());
            let one = get_many(&db.read, "t", &["prop_2"]).await.unwrap().pop().unwrap();
            let alone = get(&db.read, "t", "prop_2").await.unwrap().unwrap();
            assert_eq!(format!("{one:?}"), format!("{alone:?}"), "the same row as get reads");
            db.finish().await;
        }
    }

    #[tokio::test]
    async fn pending_for_reads_what_may_approve_checks_and_the_approvers_own_approval() {
        for db in setup("pending_for_reads_what_may_approve_checks").await {
            let now = crate::platform::clock::system_now();
            let mut c = db.write.acquire().await.unwrap();
            let made = [
                ("prop_2", ProposalStatus::PendingApproval, 500, "EUR"),
                ("prop_3", ProposalStatus::Succeeded, 100, "USD"),
                ("prop_4", ProposalStatus::PendingApproval, 700, "JPY"),
            ];
            for (id, status, amount_minor, currency) in made {
                insert(&mut c, &NewProposal { id, run_id: id, status, amount_minor, currency, ..sample(now) })
                    .await
                    .unwrap();
            }
            let given = |id: &str, approver: &str, round, decision: &str| ApprovalRow {
                proposal_id: id.into(),
                decision: decision.into(),
                ..approval(approver, round, "2026-01-01T00:00:01.000Z")
            };
            // prop_1: ana approved this round. prop_2: ana approved, then a new
            // round began; ben rejected. prop_3 is decided.
            insert_approval(&mut c, &given("prop_1", "usr_ana", 1, "approve")).await.unwrap();
            insert_approval(&mut c, &given("prop_2", "usr_ana", 1, "approve")).await.unwrap();
            next_round(&mut c, "prop_2").await.unwrap();
            insert_approval(&mut c, &given("prop_2", "usr_ben", 2, "reject")).await.unwrap();
            insert_approval(&mut c, &given("prop_3", "usr_ana", 1, "approve")).await.unwrap();
            drop(c);

            let read = |approver: &'static str, cursor: Option<&'static str>, limit| {
                let pool = db.read.clone();
                async move {
                    pending_for(&pool, "t", approver, ProposalStatus::PendingApproval, cursor, limit).await.unwrap()
                }
            };
            let (rows, more) = read("usr_ana", None, 10).await;
            assert!(!more);
            let seen: Vec<(&str, bool)> = rows.iter().map(|r| (r.id.as_str(), r.approved)).collect();
            assert_eq!(seen, [("prop_1", true), ("prop_2", false), ("prop_4", false)], "oldest first, pending only");
            assert_eq!(
                rows[2],
                PendingRow {
                    id: "prop_4".into(),
                    status: ProposalStatus::PendingApproval,
                    agent_id: "bot".into(),
                    currency: Currency::parse("JPY").unwrap(),
                    amount_minor: 700,
                    approved: false,
                }
            );
            let (rows, _) = read("usr_ben", None, 10).await;
            assert!(rows.iter().all(|r| !r.approved), "a rejection is no approval: {rows:?}");
            let (rows, more) = read("usr_ana", None, 1).await;
            assert_eq!((rows.len(), more), (1, true));
            let (rows, more) = read("usr_ana", Some("prop_1"), 1).await;
            assert_eq!((rows[0].id.as_str(), more), ("prop_2", true));
            let other =
                pending_for(&db.read, "other", "usr_ana", ProposalStatus::PendingApproval, None, 10).await.unwrap();
            assert!(other.0.is_empty(), "another tenant's proposals are not read");
            db.finish().await;
        }
    }

    #[tokio::test]
    async fn bundle_reads_what_the_separate_queries_read() {
        for db in setup("bundle_reads_what_the_separate_queries_read").await {
            let (bundled, separate) = both(&db).await;
            assert_eq!(bundled, separate, "a bare proposal");
            assert!(bundled.contains("[], None, None"), "{bundled}");

            let mut c = db.write.acquire().await.unwrap();
            insert_approval(&mut c, &approval("usr_b", 1, "2026-01-01T00:00:02.000Z")).await.unwrap();
            insert_approval(&mut c, &approval("usr_a", 1, "2026-01-01T00:00:01.000Z")).await.unwrap();
            let at = crate::store::parse_ts("2026-01-01T00:00:03.000Z").unwrap();
            insert_token(&mut c, &token_1(at)).await.unwrap();
            let now = crate::platform::clock::system_now();
            operations::insert(&mut c, &operation_1(now, now)).await.unwrap().expect("recorded");
            drop(c);
            let (bundled, separate) = both(&db).await;
            assert_eq!(bundled, separate, "approvals, token and operation");
            let b = bundle(&db.read, "t", "prop_1").await.unwrap().unwrap();
            let approvers: Vec<&str> = b.approvals.iter().map(|a| a.approver_id.as_str()).collect();
            assert_eq!(approvers, ["usr_a", "usr_b"], "in the order they were given");
            assert_eq!(b.token.map(|t| t.jti).as_deref(), Some("jti_1"));
            assert_eq!(b.operation.map(|o| o.id).as_deref(), Some("op_1"));
            assert!(b.row.payee_trusted);

            // Read last in a command of several statements (SQLite's): the
            // rows of another statement's RETURNING are passed over.
            if !db.read.is_postgres() {
                let mut q = crate::store::Builder::new(
                    "UPDATE proposals SET version = version WHERE id = 'prop_1' RETURNING *;\n",
                );
                push_bundle(&mut q, "t", "prop_1");
                let mut c = db.write.acquire().await.unwrap();
                let rows = q.build().fetch_all(&mut c).await.unwrap();
                drop(c);
                assert_eq!(rows.len(), 3, "the update's row, then one an approval");
                let read_last = ProposalBundle::from_rows(&rows).unwrap().expect("the bundle's rows");
                let alone = bundle(&db.read, "t", "prop_1").await.unwrap().unwrap();
                assert_eq!(format!("{read_last:?}"), format!("{alone:?}"));
                assert!(ProposalBundle::from_rows(&rows[..1]).unwrap().is_none(), "no bundle: none");
            }

            // A new round: the earlier round's approvals and token no longer count.
            let mut c = db.write.acquire().await.unwrap();
            next_round(&mut c, "prop_1").await.unwrap();
            drop(c);
            let (bundled, separate) = both(&db).await;
            assert_eq!(bundled, separate, "after a new round");
            let b = bundle(&db.read, "t", "prop_1").await.unwrap().unwrap();
            assert!(b.approvals.is_empty() && b.token.is_none() && b.operation.is_some());

            assert!(bundle(&db.read, "other", "prop_1").await.unwrap().is_none(), "another tenant sees nothing");
            assert!(bundle(&db.read, "t", "prop_2").await.unwrap().is_none());
            db.finish().await;
        }
    }

    #[tokio::test]
    async fn insert_reports_the_same_request_in_the_same_run() {
        for db in setup("insert_reports_the_same_request_in_the_same_run").await {
            let mut c = db.write.acquire().await.unwrap();
            let mut p =
                NewProposal { id: "prop_2", required_approvals: 1, ..sample(crate::platform::clock::system_now()) };
            assert!(insert(&mut c, &p).await.unwrap().is_none(), "prop_1 holds this request in this run");
            assert_eq!(
                find_duplicate(&mut c, "t", "bot", "run", "sha256:00").await.unwrap().as_deref(),
                Some("prop_1")
            );
            p.run_id = "another-run";
            let stored = insert(&mut c, &p).await.unwrap().expect("another run is another proposal");
            assert_eq!(
                (stored.id.as_str(), stored.version, stored.status),
                ("prop_2", 1, ProposalStatus::PendingApproval)
            );
            let ids: Vec<String> = scalar("SELECT id FROM proposals ORDER BY id").fetch_all(&mut *c).await.unwrap();
            assert_eq!(ids, ["prop_1", "prop_2"]);
            drop(c); // closing the store waits for its connections
            db.finish().await;
        }
    }

    /// Every listing (agent or console queue, any status filter, either
    /// order, any page) reads its page in index order: sorting the whole
    /// tenant for one page took ~300 ms at 100,000 proposals.
    #[tokio::test]
    async fn every_listing_reads_a_page_in_index_order() {
        // SQLite's plan (PostgreSQL's planner chooses by statistics).
        let db = setup("every_listing_reads_a_page_in_index_order").await.remove(0);
        for agent in [None, Some("bot")] {
            for status in [None, Some(ProposalStatus::PendingApproval)] {
                for order in [ListOrder::Newest, ListOrder::Oldest] {
                    for cursor in [None, Some("prop_1")] {
                        let filters = ListFilters::default();
                        let l = Listing {
                            tenant_id: "t",
                            agent_id: agent,
                            status,
                            order,
                            filters: &filters,
                            limit: 25,
                            cursor,
                        };
                        let plan: Vec<String> = listing_query("EXPLAIN QUERY PLAN ", &l)
                            .build()
                            .fetch_all(&db.read)
                            .await
                            .unwrap()
                            .iter()
                            .map(|r| r.try_get::<String>("detail").unwrap())
                            .collect();
                        assert!(plan.iter().all(|step| !step.contains("TEMP B-TREE")), "{l:?}: {plan:?}");
                    }
                }
            }
        }
    }

    /// `operations::claim`: one holder at a time; writing an outcome or a
    /// new check releases it; a lapsed claim can be taken again.
    #[tokio::test]
    async fn an_operation_is_claimed_by_one_caller_until_released_or_lapsed() {
        for db in setup("an_operation_is_claimed_by_one_caller_until_released_or_lapsed").await {
            let now = crate::platform::clock::system_now();
            let mut c = db.write.acquire().await.unwrap();
            insert_token(&mut c, &token_1(now)).await.unwrap();
            let lease = chrono::Duration::seconds(15);
            operations::insert(&mut c, &operation_1(now, now + lease)).await.unwrap().expect("recorded");
            let due = |at| operations::due(&db.read, at, at, 10);
            assert!(due(now).await.unwrap().is_empty(), "{}: the recording commit holds it", db.backend);
            assert!(!operations::claim(&mut c, "op_1", now, now + lease).await.unwrap(), "held: not claimed again");
            let lapsed = now + lease + chrono::Duration::seconds(1);
            assert_eq!(due(lapsed).await.unwrap().len(), 1, "a lapsed claim leaves it due");
            assert!(operations::claim(&mut c, "op_1", lapsed, lapsed + lease).await.unwrap(), "lapsed: claimed");
            assert!(!operations::claim(&mut c, "op_1", lapsed, lapsed + lease).await.unwrap(), "one holder");
            operations::reschedule(&mut c, "op_1", lapsed, true).await.unwrap();
            assert!(
                operations::claim(&mut c, "op_1", lapsed, lapsed + lease).await.unwrap(),
                "released by a new check"
            );
            let failed = operations::Update::default();
            let from = [operations::OpStatus::Pending];
            assert!(operations::set_status(&mut c, "op_1", &from, operations::OpStatus::Failed, &failed, lapsed)
                .await
                .unwrap());
            let row = operations::get(&db.read, "op_1").await.unwrap().unwrap();
            assert_eq!(row.claimed_until, None, "an outcome releases it");
            assert!(
                !operations::claim(&mut c, "op_1", lapsed, lapsed + lease).await.unwrap(),
                "a closed one is not claimed"
            );
            drop(c);
            db.finish().await;
        }
    }

    /// Records proposal, token and operation number `n` of `tenant`,
    /// holding `invoice`: whether the operation was recorded.
    async fn record_holding(
        c: &mut crate::store::Conn,
        now: DateTime<Utc>,
        n: u32,
        tenant: &str,
        invoice: Option<operations::HeldInvoice<'_>>,
    ) -> bool {
        let (id, hash, jti) = (format!("prop_h{n}"), format!("sha256:h{n}"), format!("jti_h{n}"));
        let (op, key) = (format!("op_h{n}"), format!("cs-prop_h{n}-00"));
        insert(&mut *c, &NewProposal { id: &id, request_hash: &hash, ..sample(now) }).await.unwrap();
        insert_token(&mut *c, &TokenRow { jti: jti.clone(), proposal_id: id.clone(), ..token_1(now) }).await.unwrap();
        let new = NewOperation {
            id: &op,
            proposal_id: &id,
            jti: &jti,
            idempotency_key: &key,
            tenant_id: tenant,
            invoice,
            ..operation_1(now, now)
        };
        operations::insert(c, &new).await.unwrap().is_some()
    }

    /// An invoice is held by one operation of a tenant: a second insert
    /// holding it writes nothing (and is no error), another payee or
    /// invoice is free, a copy holding nothing always records, and failing
    /// the holder lets go so the next copy records.
    #[tokio::test]
    async fn an_invoice_is_held_by_one_operation_until_it_fails() {
        for db in setup("an_invoice_is_held_by_one_operation_until_it_fails").await {
            let now = crate::platform::clock::system_now();
            let mut c = db.write.acquire().await.unwrap();
            let held = operations::HeldInvoice { payee_id: "ba_x", invoice_id: "INV-1" };
            let other_payee = operations::HeldInvoice { payee_id: "ba_y", invoice_id: "INV-1" };
            let other_invoice = operations::HeldInvoice { payee_id: "ba_x", invoice_id: "INV-2" };
            let backend = db.backend;
            assert!(record_holding(&mut c, now, 1, "t", Some(held)).await, "{backend}: the first holds it");
            assert!(!record_holding(&mut c, now, 2, "t", Some(held)).await, "{backend}: a second copy records nothing");
            assert_eq!(operations::get(&db.read, "op_h2").await.unwrap().map(|o| o.id), None);
            assert!(record_holding(&mut c, now, 3, "t", Some(other_payee)).await, "another payee's invoice");
            assert!(record_holding(&mut c, now, 4, "t", Some(other_invoice)).await, "another invoice");
            assert!(record_holding(&mut c, now, 5, "t", None).await, "a confirmed copy holds nothing");
            assert_eq!(
                operations::invoice_holder(&db.read, "t", held).await.unwrap().as_deref(),
                Some("prop_h1"),
                "{backend}"
            );
            let pending = [operations::OpStatus::Pending];
            let failed = operations::Update::default();
            assert!(operations::set_status(&mut c, "op_h1", &pending, operations::OpStatus::Failed, &failed, now)
                .await
                .unwrap());
            assert_eq!(operations::invoice_holder(&db.read, "t", held).await.unwrap(), None, "a failure lets go");
            assert!(record_holding(&mut c, now, 6, "t", Some(held)).await, "{backend}: the next copy holds it");
            drop(c);
            db.finish().await;
        }
    }

    /// A reconciliation pass's writes: `claim_all` takes, in one statement,
    /// the open operations nobody holds (not one held, closed or unknown);
    /// `reschedule_all` writes each its own next check and attempt, in one,
    /// and releases them.
    #[tokio::test]
    async fn a_pass_claims_its_operations_in_one_write_and_reschedules_them_in_another() {
        for db in setup("a_pass_claims_its_operations_in_one_write_and_reschedules_them_in_another").await {
            let now = crate::platform::clock::system_now();
            let lease = chrono::Duration::seconds(15);
            let mut c = db.write.acquire().await.unwrap();
            for (n, claimed_until) in [(1, now + lease), (2, now), (3, now), (4, now)] {
                let (id, hash) = (format!("prop_{n}"), format!("sha256:0{n}"));
                if n > 1 {
                    insert(&mut c, &NewProposal { id: &id, request_hash: &hash, ..sample(now) }).await.unwrap();
                }
                let jti = format!("jti_{n}");
                insert_token(&mut c, &TokenRow { jti: jti.clone(), proposal_id: id.clone(), ..token_1(now) })
                    .await
                    .unwrap();
                let (op, key) = (format!("op_{n}"), format!("cs-prop_{n}-00"));
                let new = NewOperation {
                    id: &op,
                    proposal_id: &id,
                    jti: &jti,
                    idempotency_key: &key,
                    ..operation_1(now, claimed_until)
                };
                operations::insert(&mut c, &new).await.unwrap().expect("recorded");
            }
            let failed = operations::Update::default();
            let pending = [operations::OpStatus::Pending];
            assert!(operations::set_status(&mut c, "op_4", &pending, operations::OpStatus::Failed, &failed, now)
                .await
                .unwrap());

            let later = now + chrono::Duration::seconds(1);
            let ids = ["op_1", "op_2", "op_3", "op_4", "op_missing"];
            let claimed = operations::claim_all(&mut c, &ids, later, later + lease).await.unwrap();
            let mut claimed: Vec<_> = claimed.into_iter().collect();
            claimed.sort();
            assert_eq!(claimed, ["op_2", "op_3"], "{}: op_1 is held, op_4 is closed", db.backend);
            assert!(operations::claim_all(&mut c, &ids, later, later + lease).await.unwrap().is_empty(), "one holder");
            assert!(operations::claim_all(&mut c, &[], later, later + lease).await.unwrap().is_empty());

            let (at_2, at_3) = (later + chrono::Duration::seconds(2), later + chrono::Duration::seconds(8));
            let checks = [
                operations::NextCheck { id: "op_2".into(), at: at_2, attempted: false },
                operations::NextCheck { id: "op_3".into(), at: at_3, attempted: true },
            ];
            operations::reschedule_all(&mut c, &checks).await.unwrap();
            operations::reschedule_all(&mut c, &[]).await.unwrap();
            for (id, at, attempts) in [("op_2", at_2, 0), ("op_3", at_3, 1)] {
                let row = operations::get(&db.read, id).await.unwrap().unwrap();
                assert_eq!((row.claimed_until, row.attempts), (None, attempts), "{id}: released, attempt counted");
                assert_eq!(row.next_check_at.timestamp_millis(), at.timestamp_millis(), "{id}: its own next check");
            }
            let held = operations::get(&db.read, "op_1").await.unwrap().unwrap();
            assert!(held.claimed_until.is_some(), "an operation not named keeps its claim");
            let mut again: Vec<_> =
                operations::claim_all(&mut c, &ids, later, later + lease).await.unwrap().into_iter().collect();
            again.sort();
            assert_eq!(again, ["op_2", "op_3"], "released: claimed again");
            drop(c);
            db.finish().await;
        }
    }

    /// One statement for several proposals: each gets its own row back, an
    /// identical request (already stored, or twice in the call) gets None.
    #[tokio::test]
    async fn insert_many_keeps_the_first_of_identical_requests() {
        for db in setup("insert_many_keeps_the_first_of_identical_requests").await {
            let now = crate::platform::clock::system_now();
            let with = |id: &'static str, hash: &'static str| NewProposal { id, request_hash: hash, ..sample(now) };
            let batch = [
                with("prop_2", "sha256:02"),
                with("prop_1b", "sha256:00"),
                with("prop_3", "sha256:03"),
                with("prop_2b", "sha256:02"),
            ];
            let mut c = db.write.acquire().await.unwrap();
            let stored = insert_many(&mut c, &batch).await.unwrap();
            let ids: Vec<Option<&str>> = stored.iter().map(|r| r.as_ref().map(|r| r.id.as_str())).collect();
            assert_eq!(ids, [Some("prop_2"), None, Some("prop_3"), None], "{}", db.backend);
            let count: i64 = scalar("SELECT COUNT(*) FROM proposals").fetch_one(&db.read).await.unwrap();
            assert_eq!(count, 3);
            drop(c);
            db.finish().await;
        }
    }
}
