//! Batches: an agent proposes several payments at once (a payroll, a vendor
//! run) that people review and approve as one.
//!
//! - **Intake** ([`propose`]): each line goes through the checks a single
//!   proposal does (strict parsing, the payee registry, policy, the invoice
//!   registry, a replaced account), plus the batch's own: two lines for one
//!   invoice, an invoice another live or paid proposal stands for. A line
//!   that fails is *held back* with its reasons; the others are included.
//!   The same batch sent again in its run is the same batch (200).
//! - **Its decision**: never policy alone; as many approvals as its most
//!   demanding line needs, and as its total in each currency would need as
//!   one payment (a payroll of 200 small lines needs what its total needs);
//!   named groups likewise. Each approver's limit must cover the batch's
//!   total in each currency.
//! - **Review** ([`review`]): per line (payee, amount, invoice, checks),
//!   totals by currency and by payee. A reviewer may hold back a line,
//!   which changes the batch: a new batch hash and a new round of approvals.
//!   Approving names the batch hash seen, so nobody approves a batch that
//!   changed under them.
//! - **Token**: once approved, one approval token for the whole batch (the
//!   proposal token's format: `pid` is the batch id, `rh` the batch hash,
//!   over the included lines' request hashes).
//! - **Commit** ([`commit`]): the token checked like a proposal's, then each
//!   included line becomes a proposal of its own with its own operation,
//!   rail idempotency key, budget reservation, invoice hold and reservation
//!   — recorded in its own transaction before its rail call — and is
//!   reconciled like any payment. A line whose checks fail at commit is
//!   held back there, the others go on.

mod commit;
mod intake;
mod review;
mod view;

pub use commit::commit;
pub use intake::propose;
pub use review::{cancel, decide, expire_due, hold};
pub use view::{list, view};

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

use crate::config::Config;
use crate::decision::policy::{Decision, GroupNeed, Outcome, Reason};
use crate::domain::{mask_account_tagged, CanonicalRequest, Currency, FieldError, ProposalKind, Reference, RunId};
use crate::intake::proposals::{self, ProposeError};
use crate::people::actors::AgentPrincipal;
use crate::platform::changes::Notifier;
use crate::store::{self, audit::AuditEntry, batches::BatchRow, batches::LineRow, Store};

/// The most lines one batch holds.
pub const MAX_LINES: usize = 500;
/// The longest run id of a batch (its lines' proposals are `run_id:line`).
const MAX_RUN_ID: usize = 120;

/// Why a batch request was refused, or a step on a batch.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error("the request is invalid")]
    Validation(Vec<FieldError>),
    #[error("no such batch")]
    NotFound,
    /// 409 `invalid_state`: the batch's (or the line's) status.
    #[error("the batch is {0}")]
    InvalidState(&'static str),
    /// 409 `invalid_state`: an approval named a batch hash that is no longer
    /// the batch's (a line was held back since): review it again.
    #[error("the batch changed since it was reviewed (its hash is now {hash}); review it again")]
    Changed { status: &'static str, hash: String },
    #[error("denied by policy")]
    Denied(Decision),
    /// 401 `approval_token_invalid` with this reason.
    #[error("the approval token is invalid: {0}")]
    Token(&'static str),
    #[error("only approvers can decide on batches")]
    NotAnApprover,
    #[error("{why}")]
    BadReason { field: &'static str, why: &'static str },
    #[error("cannot mint the approval token: {0}")]
    Minting(String),
    #[error(transparent)]
    Store(#[from] store::StoreError),
}

impl From<ProposeError> for BatchError {
    fn from(e: ProposeError) -> Self {
        match e {
            ProposeError::Store(e) => BatchError::Store(e),
            ProposeError::Validation(v) => BatchError::Validation(v),
            ProposeError::Denied(d) => BatchError::Denied(d),
            other => BatchError::Minting(other.to_string()),
        }
    }
}

/// A batch's (or a line's) stored status as the API's word for it.
pub fn status_word(status: &str) -> &'static str {
    const WORDS: [&str; 10] = [
        "pending_approval",
        "approved",
        "approval_expired",
        "rejected",
        "cancelled",
        "expired",
        "committed",
        "included",
        "held",
        "unknown",
    ];
    WORDS.into_iter().find(|w| *w == status).unwrap_or("unknown")
}

/// A line's place and why it is held back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, utoipa::ToSchema)]
#[schema(as = BatchLineReason)]
pub struct LineReason {
    #[schema(examples("invoice_mismatch", "duplicate_invoice", "validation_failed"))]
    pub rule: String,
    pub message: String,
}

impl LineReason {
    /// A line's reasons as stored (`held_reasons`, JSON); none when absent.
    pub fn stored(held_reasons: Option<&str>) -> Vec<LineReason> {
        held_reasons.and_then(|r| serde_json::from_str(r).ok()).unwrap_or_default()
    }
}

/// Totals of the included lines in one currency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct CurrencyTotal {
    #[schema(value_type = String, examples("USD"))]
    pub currency: String,
    pub amount_minor: u64,
    /// `12,500.00 USD`.
    pub amount: String,
    pub lines: u32,
}

/// Totals of the included lines to one payee in one currency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct PayeeTotal {
    #[schema(value_type = crate::domain::PayeeId)]
    pub payee_id: String,
    pub legal_name: String,
    pub masked_account: String,
    #[schema(value_type = String, examples("USD"))]
    pub currency: String,
    pub amount_minor: u64,
    pub amount: String,
    pub lines: u32,
}

/// The batch's totals, over its included lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Totals {
    pub by_currency: Vec<CurrencyTotal>,
    pub by_payee: Vec<PayeeTotal>,
}

/// A line's payment, once the batch is committed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[schema(as = BatchLinePayment)]
pub struct LinePayment {
    /// The line's own proposal (its status, operation and reconciliation
    /// are those of any payment: `GET /api/v1/proposals/{id}`).
    #[schema(pattern = "^prop_")]
    pub proposal_id: String,
    pub status: crate::domain::ProposalStatus,
    #[schema(required = true)]
    pub operation_id: Option<String>,
    #[schema(required = true, value_type = Option<crate::domain::OpStatus>)]
    pub operation_status: Option<String>,
    #[schema(required = true)]
    pub rail_reference: Option<String>,
    #[schema(required = true)]
    pub error_code: Option<String>,
}

/// One line of a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[schema(as = BatchLine)]
pub struct LineView {
    /// 1-based, as submitted.
    pub line: i64,
    /// `included`, `held` (back: `held`'s reasons) or `committed` (paid as
    /// `payment.proposal_id`).
    #[schema(examples("included", "held", "committed"))]
    pub status: String,
    #[schema(required = true, value_type = Option<crate::domain::PayeeId>)]
    pub payee_id: Option<String>,
    #[schema(required = true)]
    pub legal_name: Option<String>,
    #[schema(required = true)]
    pub masked_account: Option<String>,
    #[schema(required = true)]
    pub amount_minor: Option<u64>,
    #[schema(required = true)]
    pub currency: Option<String>,
    #[schema(required = true)]
    pub amount: Option<String>,
    #[schema(required = true)]
    pub invoice_id: Option<String>,
    #[schema(required = true, value_type = Option<crate::domain::RequestHash>)]
    pub request_hash: Option<String>,
    /// Who held it back: `checks` (at intake), `reviewer`, `commit`.
    #[schema(required = true)]
    pub held_by: Option<String>,
    pub held_reasons: Vec<LineReason>,
    #[schema(required = true)]
    pub payment: Option<LinePayment>,
}

/// A decision on a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct BatchApprovalView {
    pub approver_id: String,
    #[schema(examples("approve", "reject"))]
    pub decision: String,
    #[schema(required = true)]
    pub reason: Option<String>,
    pub round: i64,
    /// The batch hash it was given on.
    pub batch_hash: String,
    pub via: String,
    #[schema(format = DateTime)]
    pub at: String,
}

/// The batch object of the API.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = Batch)]
pub struct BatchView {
    #[schema(pattern = "^bat_")]
    pub id: String,
    /// `pending_approval`, `approved`, `approval_expired`, `rejected`,
    /// `cancelled`, `expired`, `committed`.
    #[schema(examples("pending_approval"))]
    pub status: String,
    #[schema(value_type = crate::domain::RunId)]
    pub run_id: String,
    /// The agent's own label ("March payroll"); shown to people as
    /// untrusted text.
    #[schema(required = true)]
    pub label: Option<String>,
    /// Over the included lines' request hashes: what approvers approve and
    /// the approval token's `rh` binds.
    #[schema(value_type = crate::domain::RequestHash)]
    pub batch_hash: String,
    pub policy: Decision,
    pub round: i64,
    pub totals: Totals,
    pub lines: Vec<LineView>,
    pub approvals: Vec<BatchApprovalView>,
    /// One token for the whole batch (`pid` = the batch id, `rh` = the
    /// batch hash); only while `approved`, only to the owning agent.
    #[schema(required = true)]
    pub approval_token: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub approval_expires_at: Option<String>,
    #[schema(format = "uri")]
    pub approval_url: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
    #[schema(format = DateTime)]
    pub expires_at: String,
}

/// What became of a batch request.
pub enum Proposed {
    Created(BatchView),
    /// The same batch was already sent in this run.
    Existing(BatchView),
}

/// `sha256:` + the hex SHA-256 of `value`'s RFC 8785 bytes.
fn digest(value: &Value) -> String {
    let bytes = crate::domain::jcs::to_vec(value).expect("integers and strings only");
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The batch hash: over the tenant, agent, run and the included lines'
/// numbers and request hashes, in order.
pub fn batch_hash(tenant: &str, agent: &str, run_id: &str, included: &[(i64, &str)]) -> String {
    let lines: Vec<Value> = included.iter().map(|(line, hash)| json!({"line": line, "request_hash": hash})).collect();
    digest(&json!({"v": 1, "tenant_id": tenant, "agent_id": agent, "run_id": run_id, "lines": lines}))
}

/// The batch hash of stored lines (the included and committed ones).
pub fn hash_of(batch: &BatchRow, lines: &[LineRow]) -> String {
    let included: Vec<(i64, &str)> = lines
        .iter()
        .filter(|l| l.status != "held")
        .filter_map(|l| Some((l.line, l.request_hash.as_deref()?)))
        .collect();
    batch_hash(&batch.tenant_id, &batch.agent_id, &batch.run_id, &included)
}

/// A line that passed its checks.
#[derive(Debug, Clone)]
pub(crate) struct Included {
    pub line: i64,
    pub canonical: CanonicalRequest,
    pub decision: Decision,
}

impl Included {
    /// From a stored line (included or committed).
    pub(crate) fn of(l: &LineRow) -> Option<Included> {
        Some(Included {
            line: l.line,
            canonical: serde_json::from_str(l.canonical_request.as_deref()?).ok()?,
            decision: serde_json::from_str(l.policy.as_deref()?).ok()?,
        })
    }
}

/// Totals of `lines` per currency, in minor units.
pub(crate) fn per_currency(lines: &[Included]) -> BTreeMap<Currency, u64> {
    let mut totals = BTreeMap::new();
    for l in lines {
        *totals.entry(l.canonical.currency).or_insert(0u64) += l.canonical.amount_minor;
    }
    totals
}

/// The batch's decision over its included lines: people always; as many
/// approvals (and group approvals) as the most demanding line, and as each
/// currency's total would need as one payment.
pub(crate) fn decision(state: &impl Config, agent: &AgentPrincipal, lines: &[Included]) -> Decision {
    let mut required = 1u8;
    let mut groups: BTreeMap<String, u8> = BTreeMap::new();
    let mut reasons = Vec::new();
    let mut merge = |d: &Decision, prefix: &str, reasons: &mut Vec<Reason>| {
        required = required.max(d.required_approvals);
        for g in &d.groups {
            let count = groups.entry(g.group.clone()).or_insert(0);
            *count = (*count).max(g.count);
        }
        for r in &d.reasons {
            if r.rule != "single_approval" && r.rule != crate::decision::policy::RULE_AUTO_APPROVE {
                reasons.push(Reason { rule: r.rule.clone(), message: format!("{prefix}{}", r.message) });
            }
        }
    };
    let totals = per_currency(lines);
    for (currency, total) in &totals {
        if let Some(template) = lines.iter().find(|l| l.canonical.currency == *currency) {
            let whole = CanonicalRequest { amount_minor: *total, ..template.canonical.clone() };
            merge(&proposals::evaluate(state, agent, &whole, false), "In all: ", &mut reasons);
        }
    }
    for l in lines {
        merge(&l.decision, &format!("Line {}: ", l.line), &mut reasons);
    }
    let words: Vec<String> = totals.iter().map(|(c, t)| c.format_minor(*t)).collect();
    reasons.insert(
        0,
        Reason {
            rule: "batch".into(),
            message: format!(
                "A batch of {} payment{} ({}) is approved by people as one, never by policy alone.",
                lines.len(),
                if lines.len() == 1 { "" } else { "s" },
                words.join(" and ")
            ),
        },
    );
    let groups: Vec<GroupNeed> = groups.into_iter().map(|(group, count)| GroupNeed { group, count }).collect();
    let needed: u32 = groups.iter().map(|g| u32::from(g.count)).sum();
    required = required.max(u8::try_from(needed).unwrap_or(u8::MAX));
    Decision { outcome: Outcome::NeedsApproval, required_approvals: required, reasons, groups }
}

/// A batch is approved without a passkey assertion over each payment (there
/// is no step-up for a batch): one whose total in a currency reaches
/// `policy.commit_requires_passkey_at_minor` is refused, its payments to be
/// proposed one by one.
pub(crate) fn needs_passkey(state: &impl Config, lines: &[Included]) -> Option<Decision> {
    let policy = &state.settings().policy;
    let (currency, total) = per_currency(lines).into_iter().find(|(c, t)| policy.commit_requires_passkey(*c, *t))?;
    Some(Decision::denied_by(
        "passkey_required",
        format!(
            "The batch's {} reaches the amount at which each payment is approved with a passkey over it; a batch \
             cannot be, so propose these payments one by one.",
            currency.format_minor(total)
        ),
    ))
}

/// A held-back line's reason.
fn reason(rule: &str, message: impl Into<String>) -> LineReason {
    LineReason { rule: rule.into(), message: message.into() }
}

/// The lines still to pay of a committed batch, and the ones paid.
pub(crate) fn unpaid(lines: &[LineRow]) -> Vec<&LineRow> {
    lines.iter().filter(|l| l.status == "included").collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_batch_hash_binds_every_included_line_in_order() {
        let a = batch_hash("acme", "bot", "run", &[(1, "sha256:aa"), (2, "sha256:bb")]);
        assert!(a.starts_with("sha256:") && a.len() == 71, "{a}");
        assert_eq!(a, batch_hash("acme", "bot", "run", &[(1, "sha256:aa"), (2, "sha256:bb")]), "stable");
        assert_ne!(a, batch_hash("acme", "bot", "run", &[(1, "sha256:aa")]), "a line held back");
        assert_ne!(a, batch_hash("acme", "bot", "run", &[(2, "sha256:bb"), (1, "sha256:aa")]), "the order");
        assert_ne!(a, batch_hash("acme", "bot", "run", &[(1, "sha256:aa"), (2, "sha256:bc")]), "a line's request");
        assert_ne!(a, batch_hash("globex", "bot", "run", &[(1, "sha256:aa"), (2, "sha256:bb")]), "the tenant");
        assert_ne!(a, batch_hash("acme", "bot2", "run", &[(1, "sha256:aa"), (2, "sha256:bb")]), "the agent");
    }
}
