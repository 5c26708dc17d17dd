//! [`bundle`]: a proposal with its approvals, operation and token, read in
//! one statement (the status poll's read).

use chrono::{DateTime, Utc};

use super::{ApprovalRow, ProposalRow, TokenRow};
use crate::store::operations::{OpStatus, OperationRow};
use crate::store::{Builder, Int, Known, OptTimestamp, Pool, Result, Row, Timestamp, Unsigned};

/// A proposal with everything its API view shows: the approvals and token
/// of its current round and its operation.
#[derive(Debug, Clone)]
pub struct ProposalBundle {
    pub row: ProposalRow,
    pub approvals: Vec<ApprovalRow>,
    pub operation: Option<OperationRow>,
    pub token: Option<TokenRow>,
}

/// One statement for a whole [`ProposalBundle`] ([`push_bundle`] ends it): the operation and the
/// token are at most one row each (unique per proposal, per round), the
/// approvals make one row each. This is the status poll's read: with sqlx
/// every statement is a round trip to the connection's worker thread, and
/// the four separate reads it replaces cost more than the query itself
/// (docs/BENCHMARKS.md).
const BUNDLE_SELECT: &str = "SELECT p.*, COALESCE(py.trusted, 0) AS payee_trusted,
        o.id AS o_id, o.proposal_id AS o_proposal_id, o.jti AS o_jti, o.idempotency_key AS o_idempotency_key,
        o.tenant_id AS o_tenant_id, o.kind AS o_kind, o.status AS o_status, o.amount_minor AS o_amount_minor,
        o.currency AS o_currency, o.budget_day AS o_budget_day, o.rail_reference AS o_rail_reference,
        o.reverses AS o_reverses, o.error_code AS o_error_code, o.error_message AS o_error_message,
        o.attempts AS o_attempts, o.next_check_at AS o_next_check_at, o.claimed_until AS o_claimed_until,
        o.resolved_by AS o_resolved_by, o.rail AS o_rail,
        o.invoice_payee_id AS o_invoice_payee_id, o.invoice_number AS o_invoice_number,
        o.created_at AS o_created_at, o.updated_at AS o_updated_at,
        t.jti AS t_jti, t.proposal_id AS t_proposal_id, t.round AS t_round, t.token AS t_token, t.kid AS t_kid,
        t.issued_at AS t_issued_at, t.expires_at AS t_expires_at, t.used_at AS t_used_at,
        a.proposal_id AS a_proposal_id, a.round AS a_round, a.approver_id AS a_approver_id,
        a.decision AS a_decision, a.reason AS a_reason, a.via AS a_via, a.amr AS a_amr, a.at AS a_at,
        a.on_behalf_of AS a_on_behalf_of, a.delegation_id AS a_delegation_id
     FROM proposals p
     LEFT JOIN payees py ON py.tenant_id = p.tenant_id AND py.id = p.payee_id
     LEFT JOIN operations o ON o.proposal_id = p.id
     LEFT JOIN approval_tokens t ON t.proposal_id = p.id AND t.round = p.approval_round
     LEFT JOIN approvals a ON a.proposal_id = p.id AND a.round = p.approval_round AND a.withdrawn_at IS NULL
     WHERE p.tenant_id = ";

/// Writes the statement that reads the proposal `id` of `tenant` as a
/// [`ProposalBundle`] into `q` (without its `;`): [`bundle`]'s read, and
/// the last statement of a command that writes the proposal and answers
/// with it (the commit's outcome, `operations::settle_at_once`).
pub fn push_bundle<'q>(q: &mut Builder<'q>, tenant: &'q str, id: &'q str) {
    q.push(BUNDLE_SELECT).push_bind(tenant).push(" AND p.id = ").push_bind(id).push(" ORDER BY a.at, a.approver_id");
}

/// Which parts of a bundle's row are there (the keys of its left joins).
#[derive(sqlx::FromRow)]
struct BundleKeys {
    o_id: Option<String>,
    t_jti: Option<String>,
    a_approver_id: Option<String>,
}

/// `From<$from> for $to`, each named field moved across: the bundle's
/// structs have their row's fields, under the aliases of [`BUNDLE_SELECT`].
macro_rules! same_fields {
    ($from:ident => $to:ident { $($field:ident),* $(,)? }) => {
        impl From<$from> for $to {
            fn from(v: $from) -> Self {
                $to { $($field: v.$field),* }
            }
        }
    };
}

/// The operation's columns in [`BUNDLE_SELECT`], under their `o_` aliases (a
/// derive reads columns by the field's name or a `rename`, never a prefix).
#[derive(sqlx::FromRow)]
struct BundledOperation {
    #[sqlx(rename = "o_id")]
    id: String,
    #[sqlx(rename = "o_proposal_id")]
    proposal_id: String,
    #[sqlx(rename = "o_jti")]
    jti: String,
    #[sqlx(rename = "o_idempotency_key")]
    idempotency_key: String,
    #[sqlx(rename = "o_tenant_id")]
    tenant_id: String,
    #[sqlx(rename = "o_kind")]
    kind: String,
    #[sqlx(rename = "o_status", try_from = "Known<OpStatus>")]
    status: OpStatus,
    #[sqlx(rename = "o_amount_minor", try_from = "Unsigned<u64>")]
    amount_minor: u64,
    #[sqlx(rename = "o_currency")]
    currency: String,
    #[sqlx(rename = "o_budget_day")]
    budget_day: Option<String>,
    #[sqlx(rename = "o_rail_reference")]
    rail_reference: Option<String>,
    #[sqlx(rename = "o_reverses")]
    reverses: Option<String>,
    #[sqlx(rename = "o_error_code")]
    error_code: Option<String>,
    #[sqlx(rename = "o_error_message")]
    error_message: Option<String>,
    #[sqlx(rename = "o_attempts", try_from = "Int")]
    attempts: i64,
    #[sqlx(rename = "o_next_check_at", try_from = "Timestamp")]
    next_check_at: DateTime<Utc>,
    #[sqlx(rename = "o_claimed_until", try_from = "OptTimestamp")]
    claimed_until: Option<DateTime<Utc>>,
    #[sqlx(rename = "o_resolved_by")]
    resolved_by: Option<String>,
    #[sqlx(rename = "o_rail")]
    rail: Option<String>,
    #[sqlx(rename = "o_invoice_payee_id")]
    invoice_payee_id: Option<String>,
    #[sqlx(rename = "o_invoice_number")]
    invoice_number: Option<String>,
    #[sqlx(rename = "o_created_at", try_from = "Timestamp")]
    created_at: DateTime<Utc>,
    #[sqlx(rename = "o_updated_at", try_from = "Timestamp")]
    updated_at: DateTime<Utc>,
}

same_fields!(BundledOperation => OperationRow {
    id, proposal_id, jti, idempotency_key, tenant_id, kind, status, amount_minor, currency, budget_day,
    rail_reference, reverses, error_code, error_message, attempts, next_check_at, claimed_until,
    resolved_by, rail, invoice_payee_id, invoice_number, created_at, updated_at,
});

/// The token's columns in [`BUNDLE_SELECT`], under their `t_` aliases.
#[derive(sqlx::FromRow)]
struct BundledToken {
    #[sqlx(rename = "t_jti")]
    jti: String,
    #[sqlx(rename = "t_proposal_id")]
    proposal_id: String,
    #[sqlx(rename = "t_round", try_from = "Int")]
    round: i64,
    #[sqlx(rename = "t_token")]
    token: String,
    #[sqlx(rename = "t_kid")]
    kid: String,
    #[sqlx(rename = "t_issued_at", try_from = "Timestamp")]
    issued_at: DateTime<Utc>,
    #[sqlx(rename = "t_expires_at", try_from = "Timestamp")]
    expires_at: DateTime<Utc>,
    #[sqlx(rename = "t_used_at", try_from = "OptTimestamp")]
    used_at: Option<DateTime<Utc>>,
}

same_fields!(BundledToken => TokenRow { jti, proposal_id, round, token, kid, issued_at, expires_at, used_at });

/// An approval's columns in [`BUNDLE_SELECT`], under their `a_` aliases.
#[derive(sqlx::FromRow)]
struct BundledApproval {
    #[sqlx(rename = "a_proposal_id")]
    proposal_id: String,
    #[sqlx(rename = "a_round", try_from = "Int")]
    round: i64,
    #[sqlx(rename = "a_approver_id")]
    approver_id: String,
    #[sqlx(rename = "a_decision")]
    decision: String,
    #[sqlx(rename = "a_reason")]
    reason: Option<String>,
    #[sqlx(rename = "a_via")]
    via: String,
    #[sqlx(rename = "a_amr")]
    amr: String,
    #[sqlx(rename = "a_at", try_from = "Timestamp")]
    at: DateTime<Utc>,
    #[sqlx(rename = "a_on_behalf_of")]
    on_behalf_of: Option<String>,
    #[sqlx(rename = "a_delegation_id")]
    delegation_id: Option<String>,
}

same_fields!(BundledApproval => ApprovalRow {
    proposal_id, round, approver_id, decision, reason, via, amr, at, on_behalf_of, delegation_id
});

/// The proposal `id` within `tenant` with its approvals, operation and token.
pub async fn bundle(pool: &Pool, tenant: &str, id: &str) -> Result<Option<ProposalBundle>> {
    let mut q = Builder::new("");
    push_bundle(&mut q, tenant, id);
    ProposalBundle::from_rows(&q.build().fetch_all(pool).await?)
}

impl ProposalBundle {
    /// The bundle in `rows`, the rows of [`push_bundle`]'s statement; rows
    /// without its columns (other statements' `RETURNING`, in one command)
    /// are passed over. `None` when there is none: no such proposal.
    pub fn from_rows(rows: &[Row]) -> Result<Option<ProposalBundle>> {
        let mut bundled = Vec::with_capacity(rows.len());
        for r in rows.iter().filter(|r| r.has_column("o_id")) {
            bundled.push((r, r.decode::<BundleKeys>()?));
        }
        let Some((first, keys)) = bundled.first() else { return Ok(None) };
        let mut approvals = Vec::with_capacity(bundled.len());
        for (r, k) in &bundled {
            if k.a_approver_id.is_some() {
                approvals.push(r.decode::<BundledApproval>()?.into());
            }
        }
        Ok(Some(ProposalBundle {
            row: first.decode()?,
            operation: if keys.o_id.is_some() { Some(first.decode::<BundledOperation>()?.into()) } else { None },
            token: if keys.t_jti.is_some() { Some(first.decode::<BundledToken>()?.into()) } else { None },
            approvals,
        }))
    }
}
