//! Proposals and their approvals. State changes are compare-and-set
//! (`UPDATE … WHERE status IN (…)`), checked for one affected row.

use chrono::{DateTime, Utc};
use sqlx::{QueryBuilder, Row, Sqlite, SqliteConnection, SqlitePool};

use super::ts;
use crate::domain::ProposalStatus;

#[derive(Debug, Clone)]
pub struct ProposalRow {
    pub id: String,
    pub tenant_id: String,
    pub agent_id: String,
    pub run_id: String,
    pub kind: String,
    pub status: ProposalStatus,
    pub amount_minor: u64,
    pub currency: String,
    pub payee_id: String,
    pub payee_trusted: bool,
    pub canonical_request: String,
    pub request_hash: String,
    pub policy: String,
    pub required_approvals: u8,
    pub version: i64,
    /// Approvals of this round count; a new round starts when an approval expires.
    pub approval_round: i64,
    pub created_at: String,
    pub updated_at: String,
    pub expires_at: String,
}

const SELECT: &str = "SELECT p.*, COALESCE(py.trusted, 0) AS payee_trusted FROM proposals p
     LEFT JOIN payees py ON py.tenant_id = p.tenant_id AND py.id = p.payee_id";

fn from_row(r: &sqlx::sqlite::SqliteRow) -> ProposalRow {
    ProposalRow {
        id: r.get("id"),
        tenant_id: r.get("tenant_id"),
        agent_id: r.get("agent_id"),
        run_id: r.get("run_id"),
        kind: r.get("kind"),
        status: ProposalStatus::parse(r.get::<&str, _>("status")).unwrap_or(ProposalStatus::NeedsReview),
        amount_minor: r.get::<i64, _>("amount_minor") as u64,
        currency: r.get("currency"),
        payee_id: r.get("payee_id"),
        payee_trusted: r.get::<i64, _>("payee_trusted") != 0,
        canonical_request: r.get("canonical_request"),
        request_hash: r.get("request_hash"),
        policy: r.get("policy"),
        required_approvals: r.get::<i64, _>("required_approvals") as u8,
        version: r.get("version"),
        approval_round: r.get("approval_round"),
        created_at: r.get("created_at"),
        updated_at: r.get("updated_at"),
        expires_at: r.get("expires_at"),
    }
}

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
    pub canonical_request: &'a str,
    pub request_hash: &'a str,
    pub policy: &'a str,
    pub required_approvals: u8,
    pub now: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// The id of the proposal with the same canonical request in the same run, if any.
pub async fn find_duplicate(
    conn: &mut SqliteConnection,
    tenant: &str,
    agent: &str,
    run_id: &str,
    request_hash: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT id FROM proposals WHERE tenant_id = ? AND agent_id = ? AND run_id = ? AND request_hash = ?",
    )
    .bind(tenant)
    .bind(agent)
    .bind(run_id)
    .bind(request_hash)
    .fetch_optional(conn)
    .await
}

/// Inserts the proposal unless the same request is already in this run
/// (the unique (tenant, agent, run, request hash)); returns the stored row,
/// or None when it was a duplicate. Letting the insert detect the duplicate
/// and return the row saves the write transaction a statement and the
/// request a read, each a round trip to a connection's thread
/// (docs/BENCHMARKS.md). The row's `payee_trusted` is false: the caller knows
/// the payee.
pub async fn insert(conn: &mut SqliteConnection, p: &NewProposal<'_>) -> sqlx::Result<Option<ProposalRow>> {
    let now = ts(p.now);
    let row = sqlx::query(
        "INSERT INTO proposals (id, tenant_id, agent_id, run_id, kind, status, amount_minor, currency, payee_id,
             canonical_request, request_hash, policy, required_approvals, version, created_at, updated_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)
         ON CONFLICT (tenant_id, agent_id, run_id, request_hash) DO NOTHING
         RETURNING *, 0 AS payee_trusted",
    )
    .bind(p.id)
    .bind(p.tenant_id)
    .bind(p.agent_id)
    .bind(p.run_id)
    .bind(p.kind)
    .bind(p.status.as_str())
    .bind(p.amount_minor as i64)
    .bind(p.currency)
    .bind(p.payee_id)
    .bind(p.canonical_request)
    .bind(p.request_hash)
    .bind(p.policy)
    .bind(i64::from(p.required_approvals))
    .bind(&now)
    .bind(&now)
    .bind(ts(p.expires_at))
    .fetch_optional(conn)
    .await?;
    Ok(row.as_ref().map(from_row))
}

/// The proposal `id` within `tenant`, or None (also for other tenants' ids).
pub async fn get(pool: &SqlitePool, tenant: &str, id: &str) -> sqlx::Result<Option<ProposalRow>> {
    let row = sqlx::query(&format!("{SELECT} WHERE p.tenant_id = ? AND p.id = ?"))
        .bind(tenant)
        .bind(id)
        .fetch_optional(pool)
        .await?;
    Ok(row.as_ref().map(from_row))
}

/// Same as `get`, on a connection (inside a transaction).
pub async fn get_in(conn: &mut SqliteConnection, tenant: &str, id: &str) -> sqlx::Result<Option<ProposalRow>> {
    let row = sqlx::query(&format!("{SELECT} WHERE p.tenant_id = ? AND p.id = ?"))
        .bind(tenant)
        .bind(id)
        .fetch_optional(conn)
        .await?;
    Ok(row.as_ref().map(from_row))
}

/// A proposal with everything its API view shows: the approvals and token
/// of its current round and its operation.
#[derive(Debug, Clone)]
pub struct ProposalBundle {
    pub row: ProposalRow,
    pub approvals: Vec<ApprovalRow>,
    pub operation: Option<super::operations::OperationRow>,
    pub token: Option<TokenRow>,
}

/// One statement for a whole [`ProposalBundle`]: the operation and the
/// token are at most one row each (unique per proposal, per round), the
/// approvals make one row each. This is the status poll's read: with sqlx
/// every statement is a round trip to the connection's worker thread, and
/// the four separate reads it replaces cost more than the query itself
/// (docs/BENCHMARKS.md).
const BUNDLE: &str = "SELECT p.*, COALESCE(py.trusted, 0) AS payee_trusted,
        o.id AS o_id, o.proposal_id AS o_proposal_id, o.jti AS o_jti, o.idempotency_key AS o_idempotency_key,
        o.tenant_id AS o_tenant_id, o.kind AS o_kind, o.status AS o_status, o.amount_minor AS o_amount_minor,
        o.currency AS o_currency, o.budget_day AS o_budget_day, o.rail_reference AS o_rail_reference,
        o.reverses AS o_reverses, o.error_code AS o_error_code, o.error_message AS o_error_message,
        o.attempts AS o_attempts, o.next_check_at AS o_next_check_at, o.resolved_by AS o_resolved_by,
        o.created_at AS o_created_at, o.updated_at AS o_updated_at,
        t.jti AS t_jti, t.proposal_id AS t_proposal_id, t.round AS t_round, t.token AS t_token, t.kid AS t_kid,
        t.issued_at AS t_issued_at, t.expires_at AS t_expires_at, t.used_at AS t_used_at,
        a.proposal_id AS a_proposal_id, a.round AS a_round, a.approver_id AS a_approver_id,
        a.decision AS a_decision, a.reason AS a_reason, a.via AS a_via, a.amr AS a_amr, a.at AS a_at
     FROM proposals p
     LEFT JOIN payees py ON py.tenant_id = p.tenant_id AND py.id = p.payee_id
     LEFT JOIN operations o ON o.proposal_id = p.id
     LEFT JOIN approval_tokens t ON t.proposal_id = p.id AND t.round = p.approval_round
     LEFT JOIN approvals a ON a.proposal_id = p.id AND a.round = p.approval_round
     WHERE p.tenant_id = ? AND p.id = ?
     ORDER BY a.at, a.rowid";

/// The proposal `id` within `tenant` with its approvals, operation and token.
pub async fn bundle(pool: &SqlitePool, tenant: &str, id: &str) -> sqlx::Result<Option<ProposalBundle>> {
    let rows = sqlx::query(BUNDLE).bind(tenant).bind(id).fetch_all(pool).await?;
    let Some(first) = rows.first() else { return Ok(None) };
    let present = |r: &sqlx::sqlite::SqliteRow, column: &str| r.get::<Option<String>, _>(column).is_some();
    Ok(Some(ProposalBundle {
        row: from_row(first),
        operation: present(first, "o_id").then(|| super::operations::from_row_prefixed(first, "o_")),
        token: present(first, "t_jti").then(|| token_from_row_prefixed(first, "t_")),
        approvals: rows
            .iter()
            .filter(|r| present(r, "a_approver_id"))
            .map(|r| approval_from_row_prefixed(r, "a_"))
            .collect(),
    }))
}

/// Filters for a listing; `cursor` is the id of the last item of the previous page.
#[derive(Debug, Clone, Default)]
pub struct Listing<'a> {
    pub tenant_id: &'a str,
    pub agent_id: Option<&'a str>,
    pub status: Option<ProposalStatus>,
    pub oldest_first: bool,
    pub limit: u32,
    pub cursor: Option<&'a str>,
}

/// One page plus whether more follow. Ids sort by creation time.
pub async fn list(pool: &SqlitePool, l: &Listing<'_>) -> sqlx::Result<(Vec<ProposalRow>, bool)> {
    let rows = listing_query("", l).build().fetch_all(pool).await?;
    let more = rows.len() > l.limit as usize;
    Ok((rows.iter().take(l.limit as usize).map(from_row).collect(), more))
}

/// The statement of a listing page, after `prefix` (tests explain it).
fn listing_query<'a>(prefix: &str, l: &Listing<'a>) -> QueryBuilder<'a, Sqlite> {
    let mut q: QueryBuilder<Sqlite> = QueryBuilder::new(format!("{prefix}{SELECT}"));
    q.push(" WHERE p.tenant_id = ").push_bind(l.tenant_id);
    if let Some(agent) = l.agent_id {
        q.push(" AND p.agent_id = ").push_bind(agent);
    }
    if let Some(status) = l.status {
        q.push(" AND p.status = ").push_bind(status.as_str());
    }
    if let Some(cursor) = l.cursor {
        q.push(if l.oldest_first { " AND p.id > " } else { " AND p.id < " }).push_bind(cursor);
    }
    q.push(if l.oldest_first { " ORDER BY p.id ASC" } else { " ORDER BY p.id DESC" });
    q.push(" LIMIT ").push_bind(i64::from(l.limit) + 1);
    q
}

/// Moves `id` to `to` if it is currently in one of `from`; bumps its version.
/// Returns whether the row changed (false: someone else moved it first).
pub async fn transition(
    conn: &mut SqliteConnection,
    id: &str,
    from: &[ProposalStatus],
    to: ProposalStatus,
    now: DateTime<Utc>,
) -> sqlx::Result<bool> {
    debug_assert!(from.iter().all(|f| f.can_become(to)), "transition not allowed by the lifecycle");
    let mut q: QueryBuilder<Sqlite> = QueryBuilder::new("UPDATE proposals SET status = ");
    q.push_bind(to.as_str())
        .push(", version = version + 1, updated_at = ")
        .push_bind(ts(now))
        .push(" WHERE id = ")
        .push_bind(id)
        .push(" AND status IN (");
    let mut sep = q.separated(", ");
    for f in from {
        sep.push_bind(f.as_str());
    }
    q.push(")");
    Ok(q.build().execute(conn).await?.rows_affected() == 1)
}

/// Pending proposals past their deadline: (id, tenant, request hash).
pub async fn due_for_expiry(
    conn: &mut SqliteConnection,
    now: DateTime<Utc>,
) -> sqlx::Result<Vec<(String, String, String)>> {
    let rows = sqlx::query(
        "SELECT id, tenant_id, request_hash FROM proposals WHERE status = ? AND expires_at <= ? ORDER BY id LIMIT 500",
    )
    .bind(ProposalStatus::PendingApproval.as_str())
    .bind(ts(now))
    .fetch_all(conn)
    .await?;
    Ok(rows.iter().map(|r| (r.get("id"), r.get("tenant_id"), r.get("request_hash"))).collect())
}

#[derive(Debug, Clone)]
pub struct ApprovalRow {
    pub proposal_id: String,
    pub round: i64,
    pub approver_id: String,
    pub decision: String,
    pub reason: Option<String>,
    pub via: String,
    pub amr: String,
    pub at: String,
}

fn approval_from_row(r: &sqlx::sqlite::SqliteRow) -> ApprovalRow {
    approval_from_row_prefixed(r, "")
}

/// An approval whose columns are named `{prefix}approver_id`, … (join aliases).
fn approval_from_row_prefixed(r: &sqlx::sqlite::SqliteRow, prefix: &str) -> ApprovalRow {
    let col = |name: &str| format!("{prefix}{name}");
    ApprovalRow {
        proposal_id: r.get(col("proposal_id").as_str()),
        round: r.get(col("round").as_str()),
        approver_id: r.get(col("approver_id").as_str()),
        decision: r.get(col("decision").as_str()),
        reason: r.get(col("reason").as_str()),
        via: r.get(col("via").as_str()),
        amr: r.get(col("amr").as_str()),
        at: r.get(col("at").as_str()),
    }
}

/// Records a decision. A person counts once per round: a second approval by
/// the same person is a unique violation; a rejection replaces their approval.
pub async fn insert_approval(conn: &mut SqliteConnection, a: &ApprovalRow) -> sqlx::Result<()> {
    let conflict = if a.decision == "reject" {
        " ON CONFLICT (proposal_id, round, approver_id) DO UPDATE SET decision = excluded.decision,
             reason = excluded.reason, via = excluded.via, amr = excluded.amr, at = excluded.at"
    } else {
        ""
    };
    sqlx::query(&format!(
        "INSERT INTO approvals (proposal_id, round, approver_id, decision, reason, via, amr, at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?){conflict}"
    ))
    .bind(&a.proposal_id)
    .bind(a.round)
    .bind(&a.approver_id)
    .bind(&a.decision)
    .bind(&a.reason)
    .bind(&a.via)
    .bind(&a.amr)
    .bind(&a.at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Approvals of the current round of the given proposals, in the order given.
pub async fn approvals_of(pool: &SqlitePool, ids: &[&str]) -> sqlx::Result<Vec<ApprovalRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q: QueryBuilder<Sqlite> = QueryBuilder::new(
        "SELECT a.* FROM approvals a JOIN proposals p ON p.id = a.proposal_id AND a.round = p.approval_round
         WHERE a.proposal_id IN (",
    );
    let mut sep = q.separated(", ");
    for id in ids {
        sep.push_bind(*id);
    }
    q.push(") ORDER BY a.at, a.rowid");
    let rows = q.build().fetch_all(pool).await?;
    Ok(rows.iter().map(approval_from_row).collect())
}

/// Approvals (decision `approve`) of one round, in the order given.
pub async fn approvals_in_round(conn: &mut SqliteConnection, id: &str, round: i64) -> sqlx::Result<Vec<ApprovalRow>> {
    let rows = sqlx::query(
        "SELECT * FROM approvals WHERE proposal_id = ? AND round = ? AND decision = 'approve' ORDER BY at, rowid",
    )
    .bind(id)
    .bind(round)
    .fetch_all(conn)
    .await?;
    Ok(rows.iter().map(approval_from_row).collect())
}

/// Marks a change that is not a status change (an approval short of the
/// required count), so pollers see a new version.
pub async fn touch(conn: &mut SqliteConnection, id: &str, now: DateTime<Utc>) -> sqlx::Result<()> {
    sqlx::query("UPDATE proposals SET version = version + 1, updated_at = ? WHERE id = ?")
        .bind(ts(now))
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

#[derive(Debug, Clone)]
pub struct TokenRow {
    pub jti: String,
    pub proposal_id: String,
    pub round: i64,
    pub token: String,
    pub kid: String,
    pub issued_at: String,
    pub expires_at: String,
    pub used_at: Option<String>,
}

pub async fn insert_token(conn: &mut SqliteConnection, t: &TokenRow) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO approval_tokens (jti, proposal_id, round, token, kid, issued_at, expires_at, used_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
    )
    .bind(&t.jti)
    .bind(&t.proposal_id)
    .bind(t.round)
    .bind(&t.token)
    .bind(&t.kid)
    .bind(&t.issued_at)
    .bind(&t.expires_at)
    .execute(conn)
    .await?;
    Ok(())
}

fn token_from_row(r: &sqlx::sqlite::SqliteRow) -> TokenRow {
    token_from_row_prefixed(r, "")
}

/// A token whose columns are named `{prefix}jti`, … (join aliases).
fn token_from_row_prefixed(r: &sqlx::sqlite::SqliteRow, prefix: &str) -> TokenRow {
    let col = |name: &str| format!("{prefix}{name}");
    TokenRow {
        jti: r.get(col("jti").as_str()),
        proposal_id: r.get(col("proposal_id").as_str()),
        round: r.get(col("round").as_str()),
        token: r.get(col("token").as_str()),
        kid: r.get(col("kid").as_str()),
        issued_at: r.get(col("issued_at").as_str()),
        expires_at: r.get(col("expires_at").as_str()),
        used_at: r.get(col("used_at").as_str()),
    }
}

/// The token this server minted with that `jti`, if any.
pub async fn token(pool: &SqlitePool, jti: &str) -> sqlx::Result<Option<TokenRow>> {
    let row = sqlx::query("SELECT * FROM approval_tokens WHERE jti = ?").bind(jti).fetch_optional(pool).await?;
    Ok(row.as_ref().map(token_from_row))
}

/// Approved proposals whose current token expired unredeemed before `cutoff`:
/// (id, tenant, request hash).
pub async fn approvals_expired_before(
    conn: &mut SqliteConnection,
    cutoff: DateTime<Utc>,
) -> sqlx::Result<Vec<(String, String, String)>> {
    let rows = sqlx::query(
        "SELECT p.id, p.tenant_id, p.request_hash FROM proposals p
         JOIN approval_tokens t ON t.proposal_id = p.id AND t.round = p.approval_round
         WHERE p.status = 'approved' AND t.used_at IS NULL AND t.expires_at < ?
         ORDER BY p.id LIMIT 500",
    )
    .bind(ts(cutoff))
    .fetch_all(conn)
    .await?;
    Ok(rows.iter().map(|r| (r.get("id"), r.get("tenant_id"), r.get("request_hash"))).collect())
}

/// Starts a new approval round (after an approval expired unredeemed).
pub async fn next_round(conn: &mut SqliteConnection, id: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE proposals SET approval_round = approval_round + 1 WHERE id = ?").bind(id).execute(conn).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::operations::{self, NewOperation};
    use crate::store::Db;

    /// prop_1 of tenant t's bot in run "run", as `setup` stores it.
    fn sample(now: DateTime<Utc>) -> NewProposal<'static> {
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
            canonical_request: "{}",
            request_hash: "sha256:00",
            policy: "{}",
            required_approvals: 2,
            now,
            expires_at: now,
        }
    }

    async fn setup() -> (tempfile::TempDir, Db) {
        let tmp = tempfile::tempdir().unwrap();
        let db = Db::open(tmp.path()).await.unwrap();
        let mut c = db.write.acquire().await.unwrap();
        for sql in [
            "INSERT INTO tenants (id, name, created_at) VALUES ('t', 'T', 'x'), ('other', 'O', 'x')",
            "INSERT INTO users (id, tenant_id, username, password_hash, roles, created_at)
             VALUES ('usr_maya', 't', 'maya', 'x', '[]', 'x')",
            "INSERT INTO agents (tenant_id, id, key_sha256, acts_for, source_accounts, purposes, created_at)
             VALUES ('t', 'bot', 'k', 'usr_maya', '[]', '[]', 'x')",
            "INSERT INTO payees (tenant_id, id, legal_name, trusted, created_at) VALUES ('t', 'ba_x', 'X', 1, 'x')",
        ] {
            sqlx::query(sql).execute(&mut *c).await.unwrap();
        }
        insert(&mut c, &sample(Utc::now())).await.unwrap();
        drop(c);
        (tmp, db)
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
            at: at.into(),
        }
    }

    /// The bundle, and the same facts read by the separate queries, as text.
    async fn both(db: &Db) -> (String, String) {
        let b = bundle(&db.read, "t", "prop_1").await.unwrap().expect("found");
        let row = get(&db.read, "t", "prop_1").await.unwrap().unwrap();
        let approvals = approvals_of(&db.read, &["prop_1"]).await.unwrap();
        let operation = operations::for_proposals(&db.read, &["prop_1"]).await.unwrap().pop();
        let token = match sqlx::query_scalar::<_, String>(
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
    async fn bundle_reads_what_the_separate_queries_read() {
        let (_tmp, db) = setup().await;
        let (bundled, separate) = both(&db).await;
        assert_eq!(bundled, separate, "a bare proposal");
        assert!(bundled.contains("[], None, None"), "{bundled}");

        let mut c = db.write.acquire().await.unwrap();
        insert_approval(&mut c, &approval("usr_b", 1, "2026-01-01T00:00:02.000Z")).await.unwrap();
        insert_approval(&mut c, &approval("usr_a", 1, "2026-01-01T00:00:01.000Z")).await.unwrap();
        let at = "2026-01-01T00:00:03.000Z".to_owned();
        let t = TokenRow {
            jti: "jti_1".into(),
            proposal_id: "prop_1".into(),
            round: 1,
            token: "eyJ.x.y".into(),
            kid: "k".into(),
            issued_at: at.clone(),
            expires_at: at.clone(),
            used_at: None,
        };
        insert_token(&mut c, &t).await.unwrap();
        let now = Utc::now();
        let op = NewOperation {
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
        };
        operations::insert(&mut c, &op).await.unwrap();
        drop(c);
        let (bundled, separate) = both(&db).await;
        assert_eq!(bundled, separate, "approvals, token and operation");
        let b = bundle(&db.read, "t", "prop_1").await.unwrap().unwrap();
        let approvers: Vec<&str> = b.approvals.iter().map(|a| a.approver_id.as_str()).collect();
        assert_eq!(approvers, ["usr_a", "usr_b"], "in the order they were given");
        assert_eq!(b.token.map(|t| t.jti).as_deref(), Some("jti_1"));
        assert_eq!(b.operation.map(|o| o.id).as_deref(), Some("op_1"));
        assert!(b.row.payee_trusted);

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
    }

    #[tokio::test]
    async fn insert_reports_the_same_request_in_the_same_run() {
        let (_tmp, db) = setup().await;
        let mut c = db.write.acquire().await.unwrap();
        let mut p = NewProposal { id: "prop_2", required_approvals: 1, ..sample(Utc::now()) };
        assert!(insert(&mut c, &p).await.unwrap().is_none(), "prop_1 holds this request in this run");
        assert_eq!(find_duplicate(&mut c, "t", "bot", "run", "sha256:00").await.unwrap().as_deref(), Some("prop_1"));
        p.run_id = "another-run";
        let stored = insert(&mut c, &p).await.unwrap().expect("another run is another proposal");
        assert_eq!((stored.id.as_str(), stored.version, stored.status), ("prop_2", 1, ProposalStatus::PendingApproval));
        let ids: Vec<String> =
            sqlx::query_scalar("SELECT id FROM proposals ORDER BY id").fetch_all(&mut *c).await.unwrap();
        assert_eq!(ids, ["prop_1", "prop_2"]);
    }

    /// Every listing (agent or console queue, any status filter, either
    /// order, any page) reads its page in index order: sorting the whole
    /// tenant for one page took ~300 ms at 100,000 proposals.
    #[tokio::test]
    async fn every_listing_reads_a_page_in_index_order() {
        let (_tmp, db) = setup().await;
        for agent in [None, Some("bot")] {
            for status in [None, Some(ProposalStatus::PendingApproval)] {
                for oldest_first in [false, true] {
                    for cursor in [None, Some("prop_1")] {
                        let l = Listing { tenant_id: "t", agent_id: agent, status, oldest_first, limit: 25, cursor };
                        let plan: Vec<String> = listing_query("EXPLAIN QUERY PLAN ", &l)
                            .build()
                            .fetch_all(&db.read)
                            .await
                            .unwrap()
                            .iter()
                            .map(|r| r.get::<String, _>("detail"))
                            .collect();
                        assert!(plan.iter().all(|step| !step.contains("TEMP B-TREE")), "{l:?}: {plan:?}");
                    }
                }
            }
        }
    }
}
