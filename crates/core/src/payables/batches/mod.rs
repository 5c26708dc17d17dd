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
mod review;

pub use commit::commit;
pub use review::{cancel, decide, expire_due, hold};

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

use crate::actors::AgentPrincipal;
use crate::changes::Notifier;
use crate::config::Config;
use crate::domain::{mask_account_tagged, CanonicalRequest, Currency, FieldError, ProposalKind, Reference, RunId};
use crate::policy::{Decision, GroupNeed, Outcome, Reason};
use crate::proposals::{self, ProposeError};
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
            if r.rule != "single_approval" && r.rule != crate::policy::RULE_AUTO_APPROVE {
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

fn field(name: String, code: &'static str, message: impl Into<String>) -> FieldError {
    FieldError::new(&name, code, message)
}

/// The batch body's own fields: the run id, the label, the lines.
fn parse_envelope(body: &Value) -> Result<(RunId, Option<Reference>, &Vec<Value>), BatchError> {
    let Some(obj) = body.as_object() else {
        return Err(BatchError::Validation(vec![field("body".into(), "invalid_type", "must be a JSON object")]));
    };
    let mut errors = Vec::new();
    for key in obj.keys() {
        if !["run_id", "label", "lines"].contains(&key.as_str()) {
            errors.push(field(key.clone(), "unknown_field", "is not a field of a batch"));
        }
    }
    let run = match obj.get("run_id").and_then(Value::as_str) {
        Some(r) if r.len() <= MAX_RUN_ID => match RunId::parse(r) {
            Ok(r) => Some(r),
            Err(e) => {
                errors.push(field("run_id".into(), "invalid_value", e.to_string()));
                None
            }
        },
        Some(_) => {
            errors.push(field("run_id".into(), "invalid_value", "must be at most 120 characters for a batch"));
            None
        }
        None => {
            errors.push(field("run_id".into(), "required", "is required, as a string"));
            None
        }
    };
    let label = match obj.get("label") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match Reference::parse(s) {
            Ok(r) => Some(r),
            Err(e) => {
                errors.push(field("label".into(), "invalid_value", e.to_string()));
                None
            }
        },
        Some(_) => {
            errors.push(field("label".into(), "invalid_type", "must be a string"));
            None
        }
    };
    let lines = match obj.get("lines") {
        Some(Value::Array(lines)) if (1..=MAX_LINES).contains(&lines.len()) => Some(lines),
        Some(Value::Array(_)) => {
            errors.push(field("lines".into(), "invalid_value", format!("must hold 1 to {MAX_LINES} lines")));
            None
        }
        Some(_) => {
            errors.push(field("lines".into(), "invalid_type", "must be an array of payments"));
            None
        }
        None => {
            errors.push(field("lines".into(), "required", "is required, as an array of payments"));
            None
        }
    };
    match (run, lines) {
        (Some(run), Some(lines)) if errors.is_empty() => Ok((run, label, lines)),
        _ => Err(BatchError::Validation(errors)),
    }
}

/// A line read as a proposal: included with its canonical request and
/// decision, or held with its reasons.
enum Read {
    Included(Box<Included>),
    Held(Box<store::batches::NewLine>),
}

fn held(line: i64, reasons: Vec<LineReason>, what: Option<&CanonicalRequest>) -> Box<store::batches::NewLine> {
    Box::new(store::batches::NewLine {
        line,
        status: "held",
        payee_id: what.map(|c| c.destination.id.expose().to_owned()),
        legal_name: what.map(|c| c.destination.legal_name.clone()),
        amount_minor: what.map(|c| c.amount_minor),
        currency: what.map(|c| c.currency.code().to_owned()),
        invoice_id: what.and_then(|c| c.invoice_id.as_ref().map(|i| i.as_str().to_owned())),
        canonical_request: what.map(|c| c.to_value().to_string()),
        request_hash: what.map(|c| c.hash().to_string()),
        policy: None,
        held_by: Some("checks".into()),
        held_reasons: Some(serde_json::to_string(&reasons).expect("reasons serialize")),
    })
}

fn reason(rule: &str, message: impl Into<String>) -> LineReason {
    LineReason { rule: rule.into(), message: message.into() }
}

/// Checks one line as a proposal would be checked.
async fn read_line(
    state: &(impl Store + Config),
    agent: &AgentPrincipal,
    run: &RunId,
    line: i64,
    value: &Value,
    now: DateTime<Utc>,
) -> Result<Read, BatchError> {
    let Some(obj) = value.as_object() else {
        return Ok(Read::Held(held(line, vec![reason("validation_failed", "A line must be a JSON object.")], None)));
    };
    if obj.contains_key("run_id") || obj.contains_key("kind") {
        let why = "A line names no run_id or kind of its own: the batch's run, transfers only.";
        return Ok(Read::Held(held(line, vec![reason("validation_failed", why)], None)));
    }
    let mut body = value.clone();
    body["run_id"] = json!(run.as_str());
    match proposals::assess(state, agent, &body, now).await {
        Ok(a) if a.decision.outcome == Outcome::Denied => {
            let reasons = a.decision.reasons.iter().map(|r| reason(&r.rule, r.message.clone())).collect();
            Ok(Read::Held(held(line, reasons, Some(&a.canonical))))
        }
        Ok(a) if a.canonical.kind != ProposalKind::Transfer => {
            Ok(Read::Held(held(line, vec![reason("validation_failed", "A batch pays transfers only.")], None)))
        }
        Ok(a) => Ok(Read::Included(Box::new(Included { line, canonical: a.canonical, decision: a.decision }))),
        Err(ProposeError::Validation(errors)) => {
            let words: Vec<String> = errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect();
            Ok(Read::Held(held(line, vec![reason("validation_failed", words.join("; "))], None)))
        }
        Err(ProposeError::UnknownDestination(masked)) => Ok(Read::Held(held(
            line,
            vec![reason("unknown_destination", format!("{masked} is not in the tenant's payee registry."))],
            None,
        ))),
        Err(other) => Err(other.into()),
    }
}

/// Lines for one invoice: the later ones are held back; and an invoice
/// another proposal stands for (live or paid) holds its line back.
async fn invoice_twins(state: &impl Store, agent: &AgentPrincipal, read: &mut [Read]) -> Result<(), BatchError> {
    let mut first: BTreeMap<(String, String), i64> = BTreeMap::new();
    for r in read.iter_mut() {
        let Read::Included(l) = r else { continue };
        let Some(invoice) = l.canonical.invoice_id.as_ref() else { continue };
        let key = (l.canonical.destination.id.expose().to_owned(), invoice.as_str().to_owned());
        if let Some(earlier) = first.get(&key) {
            let why = format!("Line {earlier} pays the same invoice {} to this payee.", invoice.as_str());
            let canonical = l.canonical.clone();
            *r = Read::Held(held(l.line, vec![reason(crate::duplicates::RULE, why)], Some(&canonical)));
        } else {
            first.insert(key, l.line);
        }
    }
    let asks: Vec<(usize, String, String)> = read
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Read::Included(l) => Some((
                i,
                l.canonical.destination.id.expose().to_owned(),
                l.canonical.invoice_id.as_ref()?.as_str().to_owned(),
            )),
            Read::Held(_) => None,
        })
        .collect();
    if asks.is_empty() {
        return Ok(());
    }
    let invoice_asks: Vec<store::risk::InvoiceAsk<'_>> = asks
        .iter()
        .map(|(_, payee, invoice)| store::risk::InvoiceAsk {
            tenant: &agent.tenant_id,
            payee,
            invoice_id: invoice,
            except: "",
        })
        .collect();
    let found = store::risk::same_invoice(&state.db().read, &invoice_asks, 5).await?;
    for ((i, _, invoice), twins) in asks.iter().zip(found) {
        let standing: Vec<String> = twins
            .iter()
            .filter(|t| crate::duplicates::holds_invoice(t.status))
            .map(|t| format!("{} ({})", t.id, t.status.label().to_lowercase()))
            .collect();
        if standing.is_empty() {
            continue;
        }
        if let Read::Included(l) = &read[*i] {
            let why = format!("Invoice {invoice} to this payee already stands in {}.", standing.join(", "));
            let canonical = l.canonical.clone();
            read[*i] = Read::Held(held(l.line, vec![reason(crate::duplicates::RULE, why)], Some(&canonical)));
        }
    }
    Ok(())
}

/// Proposes a batch: every line checked, the failing ones held back, the
/// batch stored pending approval (or the same batch of this run returned).
/// Refused (403, nothing stored but the audit entry) when no line passes.
pub async fn propose(
    state: &(impl Store + Config + Notifier),
    agent: &AgentPrincipal,
    body: &Value,
    now: DateTime<Utc>,
) -> Result<Proposed, BatchError> {
    let (run, label, lines) = parse_envelope(body)?;
    if let Some(left) = &agent.offboarding_of {
        // As for a single proposal: nothing is proposed until an admin
        // reassigns the agent's acts_for.
        let message = format!(
            "Agent {} acts for a person who was deactivated ({left}); it can propose and commit nothing until an \
             admin reassigns its acts_for.",
            agent.agent_id
        );
        return Err(BatchError::Denied(Decision::denied_by("acts_for_deactivated", message)));
    }
    let mut read = Vec::with_capacity(lines.len());
    for (i, value) in lines.iter().enumerate() {
        read.push(read_line(state, agent, &run, i as i64 + 1, value, now).await?);
    }
    invoice_twins(state, agent, &mut read).await?;
    let included: Vec<&Included> = read
        .iter()
        .filter_map(|r| match r {
            Read::Included(l) => Some(l.as_ref()),
            Read::Held(_) => None,
        })
        .collect();
    let body_hash = digest(body);
    if included.is_empty() {
        let reasons: Vec<Reason> = read
            .iter()
            .filter_map(|r| match r {
                Read::Held(h) => Some(h),
                Read::Included(_) => None,
            })
            .flat_map(|h| {
                let why: Vec<LineReason> =
                    h.held_reasons.as_deref().and_then(|r| serde_json::from_str(r).ok()).unwrap_or_default();
                why.into_iter()
                    .map(move |w| Reason { rule: w.rule, message: format!("Line {}: {}", h.line, w.message) })
            })
            .collect();
        let refused = Decision { outcome: Outcome::Denied, required_approvals: 0, reasons, groups: Vec::new() };
        let mut tx = state.db().begin().await?;
        store::audit::append(
            &mut tx,
            &AuditEntry {
                tenant_id: Some(agent.tenant_id.clone()),
                actor: agent.actor(),
                action: "batch.denied".into(),
                proposal_id: None,
                request_hash: Some(body_hash),
                data: json!({"run_id": run.as_str(), "lines": lines.len(), "policy": refused}),
            },
        )
        .await?;
        tx.commit().await?;
        return Err(BatchError::Denied(refused));
    }
    let owned: Vec<Included> = included.iter().map(|l| (*l).clone()).collect();
    if let Some(refused) = needs_passkey(state, &owned) {
        return Err(BatchError::Denied(refused));
    }
    let policy = decision(state, agent, &owned);
    let hashes: Vec<(i64, String)> = owned.iter().map(|l| (l.line, l.canonical.hash().to_string())).collect();
    let refs: Vec<(i64, &str)> = hashes.iter().map(|(l, h)| (*l, h.as_str())).collect();
    let hash = batch_hash(&agent.tenant_id, &agent.agent_id, run.as_str(), &refs);
    let id = store::new_id("bat", now);
    let rows: Vec<store::batches::NewLine> = read
        .into_iter()
        .map(|r| match r {
            Read::Held(h) => *h,
            Read::Included(l) => {
                let c = &l.canonical;
                store::batches::NewLine {
                    line: l.line,
                    status: "included",
                    payee_id: Some(c.destination.id.expose().to_owned()),
                    legal_name: Some(c.destination.legal_name.clone()),
                    amount_minor: Some(c.amount_minor),
                    currency: Some(c.currency.code().to_owned()),
                    invoice_id: c.invoice_id.as_ref().map(|i| i.as_str().to_owned()),
                    canonical_request: Some(c.to_value().to_string()),
                    request_hash: Some(c.hash().to_string()),
                    policy: Some(serde_json::to_string(&l.decision).expect("a decision serializes")),
                    held_by: None,
                    held_reasons: None,
                }
            }
        })
        .collect();
    let held_count = rows.iter().filter(|l| l.status == "held").count();
    let totals: Vec<String> = per_currency(&owned).iter().map(|(c, t)| c.format_minor(*t)).collect();
    let ttl = Duration::seconds(state.settings().proposals.ttl_secs as i64);
    let mut tx = state.db().begin().await?;
    let new = store::batches::NewBatch {
        id: &id,
        tenant_id: &agent.tenant_id,
        agent_id: &agent.agent_id,
        run_id: run.as_str(),
        label: label.as_ref().map(|l| l.as_str()),
        body_hash: &body_hash,
        batch_hash: &hash,
        policy: &policy,
        now,
        expires_at: now + ttl,
    };
    if let Err(existing) = store::batches::insert(&mut tx, &new, &rows).await? {
        drop(tx);
        return Ok(Proposed::Existing(view(state, &agent.tenant_id, &existing, Some(&agent.agent_id)).await?));
    }
    store::audit::append(
        &mut tx,
        &AuditEntry {
            tenant_id: Some(agent.tenant_id.clone()),
            actor: agent.actor(),
            action: "batch.created".into(),
            proposal_id: None,
            request_hash: Some(hash.clone()),
            data: json!({"batch_id": id, "run_id": run.as_str(), "lines": rows.len(), "included": owned.len(),
                         "held": held_count, "totals": totals, "policy": policy}),
        },
    )
    .await?;
    tx.commit().await?;
    state.changes().publish(&id);
    Ok(Proposed::Created(view(state, &agent.tenant_id, &id, Some(&agent.agent_id)).await?))
}

fn money(currency: &str, minor: u64) -> String {
    Currency::parse(currency).map(|c| c.format_minor(minor)).unwrap_or_else(|_| format!("{minor} {currency}"))
}

/// The totals of the included (and committed) lines.
fn totals(lines: &[LineRow]) -> Totals {
    let mut by_currency: BTreeMap<String, (u64, u32)> = BTreeMap::new();
    let mut by_payee: BTreeMap<(String, String), (String, u64, u32)> = BTreeMap::new();
    for l in lines.iter().filter(|l| l.status != "held") {
        let (Some(payee), Some(currency), Some(amount)) = (&l.payee_id, &l.currency, l.amount_minor) else { continue };
        let c = by_currency.entry(currency.clone()).or_default();
        c.0 += amount;
        c.1 += 1;
        let p = by_payee
            .entry((payee.clone(), currency.clone()))
            .or_insert_with(|| (l.legal_name.clone().unwrap_or_default(), 0, 0));
        p.1 += amount;
        p.2 += 1;
    }
    Totals {
        by_currency: by_currency
            .into_iter()
            .map(|(currency, (amount_minor, lines))| CurrencyTotal {
                amount: money(&currency, amount_minor),
                currency,
                amount_minor,
                lines,
            })
            .collect(),
        by_payee: by_payee
            .into_iter()
            .map(|((payee_id, currency), (legal_name, amount_minor, lines))| PayeeTotal {
                masked_account: mask_account_tagged(&payee_id),
                amount: money(&currency, amount_minor),
                payee_id,
                legal_name,
                currency,
                amount_minor,
                lines,
            })
            .collect(),
    }
}

/// The batch as its agent (`for_agent`: then with its token while
/// approved) or the console sees it.
pub async fn view(
    state: &(impl Store + Config),
    tenant: &str,
    id: &str,
    for_agent: Option<&str>,
) -> Result<BatchView, BatchError> {
    let read = &state.db().read;
    let batch = store::batches::get(read, tenant, id).await?.ok_or(BatchError::NotFound)?;
    if for_agent.is_some_and(|a| a != batch.agent_id) {
        return Err(BatchError::NotFound);
    }
    let (lines, approvals) =
        tokio::try_join!(store::batches::lines(read, &batch.id), store::batches::approvals(read, &batch.id))?;
    let paid: Vec<&str> = lines.iter().filter_map(|l| l.proposal_id.as_deref()).collect();
    let (rows, ops) = tokio::try_join!(
        store::proposals::get_many(read, tenant, &paid),
        store::operations::for_proposals(read, &paid),
    )?;
    let line_views = lines
        .iter()
        .map(|l| {
            let payment = l.proposal_id.as_deref().and_then(|pid| {
                let row = rows.iter().find(|r| r.id == pid)?;
                let op = ops.iter().find(|o| o.proposal_id == pid);
                Some(LinePayment {
                    proposal_id: pid.to_owned(),
                    status: row.status,
                    operation_id: op.map(|o| o.id.clone()),
                    operation_status: op.map(|o| o.status.as_str().to_owned()),
                    rail_reference: op.and_then(|o| o.rail_reference.clone()),
                    error_code: op.and_then(|o| o.error_code.clone()),
                })
            });
            LineView {
                line: l.line,
                status: l.status.clone(),
                masked_account: l.payee_id.as_deref().map(mask_account_tagged),
                payee_id: l.payee_id.clone(),
                legal_name: l.legal_name.clone(),
                amount_minor: l.amount_minor,
                amount: l.currency.as_deref().zip(l.amount_minor).map(|(c, a)| money(c, a)),
                currency: l.currency.clone(),
                invoice_id: l.invoice_id.clone(),
                request_hash: l.request_hash.clone(),
                held_by: l
                    .held_by
                    .as_deref()
                    .map(|by| if by.starts_with("user:") { "reviewer" } else { by }.to_owned()),
                held_reasons: l.held_reasons.as_deref().and_then(|r| serde_json::from_str(r).ok()).unwrap_or_default(),
                payment,
            }
        })
        .collect();
    let mine = for_agent.is_some() && batch.status == "approved";
    Ok(BatchView {
        approval_url: format!("{}/batches/{}", state.settings().public_url.trim_end_matches('/'), batch.id),
        totals: totals(&lines),
        lines: line_views,
        approvals: approvals
            .into_iter()
            .map(|a| BatchApprovalView {
                approver_id: a.approver_id,
                decision: a.decision,
                reason: a.reason,
                round: a.round,
                batch_hash: a.batch_hash,
                via: a.via,
                at: store::ts(a.at),
            })
            .collect(),
        approval_token: batch.token.clone().filter(|_| mine),
        approval_expires_at: batch.token_expires_at.filter(|_| mine).map(store::ts),
        id: batch.id,
        status: batch.status,
        run_id: batch.run_id,
        label: batch.label,
        batch_hash: batch.batch_hash,
        policy: batch.policy,
        round: batch.round,
        created_at: store::ts(batch.created_at),
        updated_at: store::ts(batch.updated_at),
        expires_at: store::ts(batch.expires_at),
    })
}

/// A tenant's batches in `status` for the console, oldest first (at most 50).
pub async fn list(state: &(impl Store + Config), tenant: &str, status: &str) -> Result<Vec<BatchView>, BatchError> {
    let rows = store::batches::of_tenant(&state.db().read, tenant, status, 50).await?;
    let mut views = Vec::with_capacity(rows.len());
    for row in rows {
        views.push(view(state, tenant, &row.id, None).await?);
    }
    Ok(views)
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

    #[test]
    fn a_batch_envelope_names_every_bad_field() {
        let bad = |v: Value| match parse_envelope(&v) {
            Err(BatchError::Validation(e)) => e.into_iter().map(|e| e.field).collect::<Vec<_>>(),
            _ => panic!("accepted: {v}"),
        };
        assert_eq!(bad(json!({"lines": []})), ["run_id", "lines"]);
        assert_eq!(bad(json!({"run_id": "r", "lines": [{}], "tenant": "x"})), ["tenant"]);
        assert_eq!(bad(json!({"run_id": "r".repeat(121), "lines": [{}]})), ["run_id"]);
        assert_eq!(bad(json!({"run_id": "r", "lines": vec![json!({}); 501]})), ["lines"]);
        assert_eq!(bad(json!({"run_id": "r", "label": 5, "lines": [{}]})), ["label"]);
        assert!(parse_envelope(&json!({"run_id": "r", "label": "March payroll", "lines": [{}]})).is_ok());
    }
}
