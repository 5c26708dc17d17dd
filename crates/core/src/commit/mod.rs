//! The commit path (SPEC §6): the only code that moves money.
//!
//! 1. Verify the approval token: signature under a known `kid` with ES256
//!    exactly, `typ`, `iss`, `aud`, `nbf`/`exp` (30 s leeway), `pid`, `tid`,
//!    `azp` (`approval::token`).
//! 2. `rh` equals the stored request hash **and** the hash recomputed from the
//!    stored canonical request; the `jti` is the proposal's current token.
//! 3. A retried commit (an operation exists) returns the operation as it
//!    stands and never calls the rail again.
//! 4. The proposal is `approved` (409 otherwise); every approver is still
//!    active, an approver and within their limit; policy and the daily
//!    budget still allow it (403 otherwise).
//! 5. One write transaction: the `jti` marked used, the operation recorded
//!    (`pending`, idempotency key derived from the proposal id and request
//!    hash), the budget reserved, the proposal moved to `executing`.
//! 6. Only then the rail call, outside any transaction; its outcome is
//!    written by [`crate::commit::operations::record`].
//!
//! A crash anywhere after step 5 leaves an open operation that
//! reconciliation settles with the same key.

pub mod operations;

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::config::Config;
use crate::decision::approval::keys::Keys;
use crate::decision::approval::token::{ApprovalClaims, Expected};
use crate::decision::policy::{Decision, Outcome};
use crate::domain::Role;
use crate::domain::{ProposalKind, ProposalStatus};
use crate::intake::proposals::{self, AgentPrincipal, ProposalView};
use crate::platform::changes::Notifier;
use crate::platform::clock::Clock;
use crate::platform::hooks::Hooks;
use crate::rail::InFlight;
use crate::rail::Payments;
use crate::store::Store;
use crate::store::{
    self, audit::AuditEntry, operations::NewOperation, operations::OperationRow, proposals::ProposalRow,
};

/// Why a commit was refused. Nothing was recorded and the rail was not called.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// 401 `approval_token_invalid` with this `reason`.
    #[error("the approval token is invalid: {0}")]
    Token(&'static str),
    #[error("no such proposal")]
    NotFound,
    #[error("denied by policy")]
    Denied(Decision),
    #[error("the proposal is {0}")]
    InvalidState(ProposalStatus),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

fn denied(rule: &str, message: String) -> CommitError {
    CommitError::Denied(Decision::denied_by(rule, message))
}

/// The rail idempotency key of a proposal: derived from its id and request
/// hash, never random, never chosen by the agent. Every resubmission of the
/// operation uses it.
pub fn idempotency_key(proposal_id: &str, request_hash: &str) -> String {
    let hex = request_hash.strip_prefix("sha256:").unwrap_or(request_hash);
    format!("cs-{proposal_id}-{}", &hex[..hex.len().min(16)])
}

/// The UTC calendar day a budget reservation belongs to.
pub fn budget_day(now: DateTime<Utc>) -> String {
    now.format("%Y-%m-%d").to_string()
}

/// Commits an approved proposal for its agent; see the module doc.
#[tracing::instrument(name = "commit", skip_all, fields(
    tenant = %agent.tenant_id, agent = %agent.agent_id, proposal_id = %proposal_id,
    operation_id = tracing::field::Empty, payment_status = tracing::field::Empty,
    outcome = tracing::field::Empty, otel.status_code = tracing::field::Empty,
))]
pub async fn commit(
    state: &(impl Store
          + Clock
          + Config
          + Keys
          + Notifier
          + Payments
          + Hooks
          + crate::decision::approval::receipts::Receipts),
    agent: &AgentPrincipal,
    proposal_id: &str,
    token: &str,
) -> Result<ProposalView, CommitError> {
    // The background passes wait while this runs (store::priority).
    let _foreground = state.db().priority.foreground();
    let result = crate::platform::metrics::use_case("commit", commit_inner(state, agent, proposal_id, token)).await;
    crate::platform::metrics::commit_answered(result.as_ref().map_or("refused", |view| view.status.as_str()));
    if let Ok(view) = &result {
        let span = tracing::Span::current();
        span.record("payment_status", view.status.as_str());
        if let Some(op) = &view.operation {
            span.record("operation_id", op.id.as_str());
        }
    }
    result
}

async fn commit_inner(
    state: &(impl Store
          + Clock
          + Config
          + Keys
          + Notifier
          + Payments
          + Hooks
          + crate::decision::approval::receipts::Receipts),
    agent: &AgentPrincipal,
    proposal_id: &str,
    token: &str,
) -> Result<ProposalView, CommitError> {
    let now = state.now();
    let expected = Expected {
        issuer: &state.settings().public_url,
        proposal_id,
        tenant_id: &agent.tenant_id,
        agent_id: &agent.agent_id,
        now,
    };
    let claims = state.keys().verify(token, &expected).map_err(|r| CommitError::Token(r.reason()))?;
    // Reads at once, each on its own connection: the proposal with its
    // operation and its round's token and approvals in one statement, and
    // on SQLite what the one-command authorization needs.
    let read = &state.db().read;
    let (bundle, before) = tokio::try_join!(
        store::proposals::bundle(read, &agent.tenant_id, proposal_id),
        BeforeRecord::read(state, proposal_id),
    )?;
    let bundle = bundle.filter(|b| b.row.agent_id == agent.agent_id).ok_or(CommitError::NotFound)?;
    let row = &bundle.row;
    check_hash(&claims, row)?;
    check_amr(state, &claims, row)?;
    // The token of the proposal's round came with it; one of an earlier
    // round (superseded) is read by its id.
    let minted = match &bundle.token {
        Some(token) if token.jti == claims.jti => Some(token.clone()),
        _ => store::proposals::token(read, &claims.jti).await?,
    };
    let minted = minted.filter(|t| t.proposal_id == row.id).ok_or(CommitError::Token("unknown_token"))?;

    if bundle.operation.is_some() {
        // Committed before (a retry): the answer is the proposal as read.
        return answer(state, agent, bundle);
    }
    if row.status != ProposalStatus::Approved {
        return Err(CommitError::InvalidState(row.status));
    }
    if minted.round != row.approval_round {
        return Err(CommitError::Token("superseded"));
    }
    recheck(state, agent, row, &claims).await?;
    // An account that a verified change of bank account replaced since the
    // approval is no longer paid.
    if let Some(refused) = crate::payables::account_change::replaced_now(state, row).await? {
        refused_copy(state, agent, row, &refused).await?;
        return Err(CommitError::Denied(refused));
    }
    // The invoice it names, as it stands now; a registered one's open
    // balance is reserved in the transaction below.
    let registered = match crate::payables::invoices::at_commit(state, row).await? {
        Ok(registered) => registered,
        Err(refused) => {
            refused_copy(state, agent, row, &refused).await?;
            return Err(CommitError::Denied(refused));
        }
    };
    let reverses = match row.request.kind {
        ProposalKind::Transfer => None,
        ProposalKind::Reversal => Some(reversed_transfer(state, row).await?),
    };

    state.failpoint("commit.before_record");
    let op_id = store::new_id("op", now);
    let _in_flight = InFlight::claim(state, &op_id).expect("a fresh operation id is not in flight");
    let invoice = crate::intake::duplicates::held(row, &bundle.approvals);
    let recorded = record(state, row, &claims, &op_id, reverses.as_deref(), (invoice, registered), before, now).await;
    if let Err(CommitError::Denied(d)) = &recorded {
        let rule = d.reasons.first().map(|r| r.rule.as_str());
        if matches!(rule, Some(crate::intake::duplicates::RULE | crate::payables::invoices::RULE_MISMATCH)) {
            refused_copy(state, agent, row, d).await?;
        }
    }
    let Some((op, known)) = recorded? else {
        // Another commit of this proposal got there first: answer with its operation.
        return view(state, agent, proposal_id).await;
    };
    state.changes().publish(&row.id);
    state.failpoint("commit.after_record");

    let outcome = operations::call_rail(state, &op, row).await;
    state.failpoint("commit.after_rail");
    let recorded = operations::record_knowing(state, &op, outcome, state.now(), known.as_ref()).await?;
    state.failpoint("commit.after_outcome");
    match recorded.proposal {
        // Read by the outcome's own command, after its writes.
        Some(after) => answer(state, agent, after),
        None => view(state, agent, proposal_id).await,
    }
}

/// The agent's view of a proposal read already.
fn answer(
    state: &impl Config,
    agent: &AgentPrincipal,
    read: store::proposals::ProposalBundle,
) -> Result<ProposalView, CommitError> {
    proposals::agents_view(state, agent, Some(read)).ok_or(CommitError::NotFound)
}

async fn view(state: &(impl Store + Config), agent: &AgentPrincipal, id: &str) -> Result<ProposalView, CommitError> {
    proposals::for_agent(state, agent, id).await.map_err(|e| match e {
        proposals::ActionError::NotFound => CommitError::NotFound,
        proposals::ActionError::InvalidState(s) => CommitError::InvalidState(s),
        proposals::ActionError::Store(e) => CommitError::Store(e),
    })
}

/// Check 4: the token's `rh` names the stored hash, and the stored canonical
/// request still hashes to it (a tampered row is caught here).
fn check_hash(claims: &ApprovalClaims, row: &ProposalRow) -> Result<(), CommitError> {
    if claims.rh != row.request_hash {
        return Err(CommitError::Token("request_hash_mismatch"));
    }
    match row.request.hash() {
        hash if hash.matches(&row.request_hash) => Ok(()),
        _ => {
            tracing::error!(proposal_id = %row.id, "stored canonical request does not hash to the stored request hash");
            Err(CommitError::Token("request_hash_mismatch"))
        }
    }
}

/// At or above `policy.commit_requires_passkey_at_minor`, every approval
/// the token carries was given with a passkey assertion over this payment
/// (`amr` is `passkey` only): a stolen password session, a Slack account or
/// auto-approval cannot authorize it.
fn check_amr(state: &impl Config, claims: &ApprovalClaims, row: &ProposalRow) -> Result<(), CommitError> {
    let required = state.settings().policy.commit_requires_passkey(row.request.currency, row.amount_minor);
    if required && (claims.amr.is_empty() || claims.amr.iter().any(|m| m != "passkey")) {
        return Err(CommitError::Token("passkey_required"));
    }
    Ok(())
}

/// Check 5: approvers, policy and budget as they stand now.
async fn recheck(
    state: &(impl Store + Config),
    agent: &AgentPrincipal,
    row: &ProposalRow,
    claims: &ApprovalClaims,
) -> Result<(), CommitError> {
    let (decision, _) = crate::decision::approval::approve::policy_now(state, agent, row).await?;
    if decision.outcome == Outcome::Denied {
        return Err(CommitError::Denied(decision));
    }
    let mut humans = 0usize;
    let mut conn = state.db().reader().await?;
    for approver in &claims.approvers {
        if approver.starts_with("policy:") {
            if decision.outcome != Outcome::AutoApproved {
                return Err(denied(
                    "auto_approve",
                    "This payment no longer qualifies for approval by policy alone; a human must approve it.".into(),
                ));
            }
            continue;
        }
        still_may_approve(&mut conn, approver, agent, row).await?;
        if let Some(d) = claims.delegations.iter().find(|d| d.approver == *approver) {
            // Given for someone away: every rule holds for them too, and the
            // delegation has not been ended since.
            still_may_approve(&mut conn, &d.on_behalf_of, agent, row).await?;
            let live = store::delegations::get(&mut *conn, &row.tenant_id, &d.delegation).await?;
            if !live.is_some_and(|l| l.status == store::delegations::ACTIVE && l.delegator_id == d.on_behalf_of) {
                return Err(denied(
                    crate::decision::delegation::RULE,
                    format!("The delegation {} an approval was given under has been ended.", d.delegation),
                ));
            }
        }
        humans += 1;
    }
    if !row.policy.groups.is_empty() {
        // The groups it was proposed under, with their members as they stand now.
        let members =
            crate::decision::approval_groups::Members::load_in(&mut conn, state.settings(), &row.tenant_id).await?;
        // Each approval counts for whom it was given.
        let people: Vec<&str> = claims
            .approvers
            .iter()
            .filter(|a| !a.starts_with("policy:"))
            .map(|a| claims.delegations.iter().find(|d| d.approver == *a).map_or(a.as_str(), |d| &d.on_behalf_of))
            .collect();
        let short = members.unmet(&row.policy.groups, &people);
        if !short.is_empty() {
            return Err(denied(
                crate::decision::policy::RULE_GROUPS,
                format!(
                    "The approvals do not include {} (approval groups as they stand now).",
                    crate::decision::policy::describe_groups(&short)
                ),
            ));
        }
    }
    if decision.outcome == Outcome::NeedsApproval && humans < usize::from(decision.required_approvals.max(1)) {
        return Err(denied(
            "dual_approval",
            format!("Policy now needs {} approvals; this token carries {humans}.", decision.required_approvals),
        ));
    }
    // The daily budget is checked where it is reserved, in `record`'s
    // transaction: one statement reads the limit and takes the amount.
    Ok(())
}

/// One approver of a token (or the person a delegate approved for), as they
/// stand now: an active approver of the tenant, neither the person the
/// agent acts for nor its key holder, with a limit that covers the amount.
async fn still_may_approve(
    conn: &mut store::Conn,
    id: &str,
    agent: &AgentPrincipal,
    row: &ProposalRow,
) -> Result<(), CommitError> {
    let format = |minor: u64| format_amount(row, minor);
    let user = store::directory::user_by_id(&mut *conn, id).await?;
    let Some(user) = user.filter(|u| u.tenant_id == row.tenant_id && u.active && u.roles.contains(&Role::Approver))
    else {
        return Err(denied("approver_active", format!("Approver {id} is no longer an active approver.")));
    };
    if user.id == agent.acts_for {
        return Err(denied(
            "segregation_of_duties",
            format!(
                "{} is the person agent {} acts for and cannot approve its proposals.",
                user.username, agent.agent_id
            ),
        ));
    }
    if agent.key_holder.as_deref() == Some(user.id.as_str()) {
        return Err(denied(
            "segregation_of_duties",
            format!("{} was given agent {}'s key and cannot approve its proposals.", user.username, agent.agent_id),
        ));
    }
    let limit = user.approval_limits_minor.get(&row.currency).copied().unwrap_or(0);
    if row.amount_minor > limit {
        return Err(denied(
            "approver_limit",
            format!("{} is above {}'s approval limit of {}.", format(row.amount_minor), user.username, format(limit)),
        ));
    }
    Ok(())
}

/// `minor` units in the proposal's currency, e.g. "250.00 USD".
fn format_amount(row: &ProposalRow, minor: u64) -> String {
    crate::domain::Currency::parse(&row.currency).map(|c| c.format_minor(minor)).unwrap_or_else(|_| minor.to_string())
}

fn budget_denied(row: &ProposalRow, used: u64, limit: u64) -> CommitError {
    denied(
        "daily_budget",
        format!(
            "Today's budget (UTC) would be exceeded: {} of {} is already reserved.",
            format_amount(row, used),
            format_amount(row, limit)
        ),
    )
}

/// The rail transfer a reversal proposal names: a succeeded transfer of the
/// same agent (checked again now, as at proposal time), by its operation's
/// rail reference. Any miss is the same refusal.
async fn reversed_transfer(state: &impl Store, row: &ProposalRow) -> Result<String, CommitError> {
    let named = row.request.transfer_id.as_ref().map(|t| t.as_str()).unwrap_or_default();
    let refused = || denied("reversal", "The transfer to reverse is not a succeeded transfer of this agent.".into());
    let Some(original) = proposals::own_succeeded_transfer(state, &row.tenant_id, &row.agent_id, named).await? else {
        return Err(refused());
    };
    match store::operations::for_proposal(&state.db().read, &original.id).await? {
        Some(op) if op.kind == "transfer" && op.status == store::operations::OpStatus::Succeeded => {
            op.rail_reference.ok_or_else(refused)
        }
        _ => Err(refused()),
    }
}

/// Step 5, one transaction; returns the recorded operation (and, from the
/// one-command path, what the outcome's own one command needs). `None`
/// when another commit of the same proposal recorded its operation first
/// (nothing was changed here): it used the token, which this one then
/// finds used.
#[allow(clippy::too_many_arguments)]
async fn record(
    state: &(impl Store + Config + crate::decision::approval::receipts::Receipts),
    row: &ProposalRow,
    claims: &ApprovalClaims,
    op_id: &str,
    reverses: Option<&str>,
    (invoice, registered): (Option<store::operations::HeldInvoice<'_>>, Option<store::operations::HeldInvoice<'_>>),
    before: Option<BeforeRecord>,
    now: DateTime<Utc>,
) -> Result<Option<(OperationRow, Option<operations::Known>)>, CommitError> {
    let key = idempotency_key(&row.id, &row.request_hash);
    let day = budget_day(now);
    let is_transfer = row.kind == ProposalKind::Transfer.as_str();
    let new = NewOperation {
        id: op_id,
        proposal_id: &row.id,
        jti: &claims.jti,
        idempotency_key: &key,
        tenant_id: &row.tenant_id,
        kind: &row.kind,
        amount_minor: row.amount_minor,
        currency: &row.currency,
        budget_day: is_transfer.then_some(day.as_str()),
        reverses,
        now,
        claimed_until: now + operations::rail_call_lease(state.settings()),
        invoice,
        rail: state.settings().tenants.get(&row.tenant_id).and_then(|t| t.rail.as_deref()),
        reserves: registered,
    };
    if let Some(before) = before {
        if let Some((op, known)) = record_at_once(state, row, &new, before).await? {
            return Ok(Some((op, Some(known))));
        }
    }
    Ok(record_step_by_step(state, row, &new).await?.map(|op| (op, None)))
}

/// Audits a commit refused because another operation holds the invoice
/// (`operation.refused`, rule `duplicate_invoice`), the invoice or its open
/// balance does not hold the amount (rule `invoice_mismatch`), or the
/// payee's account was replaced (`payee_account_replaced`): a payment
/// stopped before the rail is a control that worked, and the trail says so.
async fn refused_copy(
    state: &impl Store,
    agent: &AgentPrincipal,
    row: &ProposalRow,
    decision: &Decision,
) -> Result<(), CommitError> {
    let mut tx = state.db().begin().await?;
    let entry = AuditEntry {
        tenant_id: Some(row.tenant_id.clone()),
        actor: agent.actor(),
        action: "operation.refused".into(),
        proposal_id: Some(row.id.clone()),
        request_hash: Some(row.request_hash.clone()),
        data: json!({"rule": decision.reasons.first().map(|r| r.rule.as_str()), "policy": decision,
                     "invoice_id": row.request.invoice_id.as_ref().map(|i| i.as_str())}),
    };
    store::audit::append(&mut tx, &entry).await?;
    tx.commit().await?;
    Ok(())
}

/// The authorization's audit entry (its receipt is added when appended).
pub(crate) fn authorization(
    row: &ProposalRow,
    op: &NewOperation<'_>,
    committed: &crate::evidence::Commitments,
) -> AuditEntry {
    AuditEntry {
        tenant_id: Some(row.tenant_id.clone()),
        actor: format!("agent:{}", row.agent_id),
        action: "operation.created".into(),
        proposal_id: Some(row.id.clone()),
        request_hash: Some(row.request_hash.clone()),
        data: json!({
            "from": ProposalStatus::Approved, "to": ProposalStatus::Executing,
            "operation_id": op.id, "idempotency_key": op.idempotency_key, "jti": op.jti,
            "amount_minor": row.amount_minor, "currency": row.currency,
            "budget_day": op.budget_day, "reverses": op.reverses,
            "source_account_commitment": committed.source_account,
            "destination_commitment": committed.destination,
        }),
    }
}

/// Step 5 on SQLite in one round trip to the writer's thread (one command,
/// `BEGIN IMMEDIATE` to `COMMIT`) where [`record_step_by_step`] takes about ten
/// (docs/DECISIONS.md, "The commit's writes in one command on SQLite"):
/// the salts and the newest receipt were read with the proposal
/// ([`BeforeRecord`]), the receipt is signed, and each check is a guard in
/// the command (`store::guarded`). `None` when one did not hold or this
/// process remembers no head of the audit chain: nothing was changed, and
/// the step-by-step transaction runs, which answers why (or records after
/// all).
async fn record_at_once(
    state: &(impl Store + Config + crate::decision::approval::receipts::Receipts),
    row: &ProposalRow,
    op: &NewOperation<'_>,
    before: BeforeRecord,
) -> Result<Option<(OperationRow, operations::Known)>, CommitError> {
    use crate::evidence::Committed;
    let BeforeRecord { kept, receipt_seen, prev } = before;
    // Made here when none is kept yet; the command keeps them unless another
    // transaction kept others first (then its guard stops it).
    let salts = kept.unwrap_or_else(|| [rand::random(), rand::random()]);
    let committed = Committed::with_salts(&row.request, salts).commitments();
    let entry =
        crate::decision::approval::receipts::sign(state, &authorization(row, op, &committed), prev.as_deref(), op.now)?;
    let plan = store::operations::RecordAtOnce {
        operation: op.clone(),
        agent_id: &row.agent_id,
        salt_fields: BeforeRecord::FIELDS,
        salts,
        receipt_seen,
        entry: &entry,
    };
    match plan.plan().commit(&state.db().write).await? {
        Some((recorded, receipt_seq)) => {
            let receipt = entry.data["receipt"].as_str().unwrap_or_default().to_owned();
            let known = operations::Known {
                proposal_status: ProposalStatus::Executing,
                request_hash: row.request_hash.clone(),
                receipt_seq,
                receipt,
            };
            Ok(Some((recorded, known)))
        }
        None => Ok(None),
    }
}

/// What [`record_at_once`] reads before its transaction, read on SQLite
/// with the proposal (a commit refused before recording wastes two short
/// reads; one that records saves a round of them). A guard in the command
/// checks that neither changed since.
struct BeforeRecord {
    /// The proposal's account salts, when already kept.
    kept: Option<[[u8; 32]; 2]>,
    /// The number of the newest entry that may hold a receipt (0: none).
    receipt_seen: i64,
    /// The payment's newest receipt, the new one's `prev`.
    prev: Option<String>,
}

impl BeforeRecord {
    const FIELDS: [&'static str; 2] = [crate::evidence::SOURCE_ACCOUNT, crate::evidence::DESTINATION];

    /// `None` on PostgreSQL, which records step by step.
    async fn read(state: &impl Store, proposal_id: &str) -> Result<Option<BeforeRecord>, store::StoreError> {
        if state.db().is_postgres() {
            return Ok(None);
        }
        let read = &state.db().read;
        let (kept, (receipt_seen, prev)) = tokio::try_join!(
            store::evidence::kept(read, proposal_id, Self::FIELDS),
            store::audit::last_receipt_seen(read, proposal_id),
        )?;
        Ok(Some(BeforeRecord { kept, receipt_seen, prev }))
    }
}

/// Step 5 as one transaction of statements one after another (PostgreSQL,
/// and SQLite when [`record_at_once`] did not record).
async fn record_step_by_step(
    state: &(impl Store + Config + crate::decision::approval::receipts::Receipts),
    row: &ProposalRow,
    op: &NewOperation<'_>,
) -> Result<Option<OperationRow>, CommitError> {
    let now = op.now;
    let mut tx = state.db().begin().await?;
    // The kill switch, read in the transaction that would record the
    // operation: a freeze any instance wrote stops this commit before the
    // rail is called, and the token stays unused.
    if let Some(freeze) = store::freezes::blocking(&mut tx, &row.tenant_id, &row.agent_id).await? {
        return Err(denied("kill_switch", crate::intake::freeze::refusal(&freeze)));
    }
    if !store::operations::use_token(&mut tx, op.jti, &row.id, now).await? {
        // Another commit of the same proposal used it and recorded its
        // operation (on PostgreSQL this one may have waited on the token's
        // row for it): answer that operation, as a retry would.
        if store::operations::for_proposal(&mut *tx, &row.id).await?.is_some() {
            return Ok(None);
        }
        return Err(CommitError::Token("already_used"));
    }
    if let Some(day) = op.budget_day {
        if !store::operations::reserve(&mut tx, &row.tenant_id, &row.currency, day, row.amount_minor).await? {
            let limit = store::operations::daily_limit(&mut tx, &row.tenant_id, &row.currency).await?;
            let used = store::operations::reserved(&mut tx, &row.tenant_id, &row.currency, day).await?;
            return Err(budget_denied(row, used, limit.unwrap_or(i64::MAX as u64)));
        }
    }
    if let Some(invoice) = op.reserves {
        let key = store::invoices::InvoiceKey {
            tenant_id: &row.tenant_id,
            payee_id: invoice.payee_id,
            number: invoice.invoice_id,
        };
        if !store::invoices::reserve(&mut tx, key, &row.currency, row.amount_minor).await? {
            // Another payment took the open balance (read now, or committed
            // while this statement waited for the invoice's row).
            return Err(CommitError::Denied(
                crate::payables::invoices::reservation_refused(&mut tx, row, invoice).await?,
            ));
        }
    }
    let Some(recorded) = store::operations::insert(&mut tx, op).await? else {
        // Another operation of the tenant holds this invoice (read now, or
        // committed while this insert waited for it): nothing is recorded.
        let holder = match op.invoice {
            Some(invoice) => store::operations::invoice_holder(&mut *tx, &row.tenant_id, invoice).await?,
            None => None,
        };
        return Err(denied(
            crate::intake::duplicates::RULE,
            crate::intake::duplicates::held_elsewhere(row, holder.as_deref()),
        ));
    };
    if !store::proposals::transition(&mut tx, &row.id, &[ProposalStatus::Approved], ProposalStatus::Executing, now)
        .await?
    {
        let latest = store::proposals::get_in(&mut tx, &row.tenant_id, &row.id).await?.ok_or(CommitError::NotFound)?;
        return Err(CommitError::InvalidState(latest.status));
    }
    // The authorization names the accounts by salted commitment only
    // (docs/EVIDENCE.md "Commitments").
    let committed = crate::evidence::Committed::of(&mut tx, &row.id, &row.request).await?.commitments();
    crate::decision::approval::receipts::append(state, &mut tx, &authorization(row, op, &committed), now).await?;
    tx.commit().await?;
    Ok(Some(recorded))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rail_key_is_derived_from_the_proposal_and_its_hash() {
        let hash = format!("sha256:{}", "ab".repeat(32));
        let key = idempotency_key("prop_01abc", &hash);
        assert_eq!(key, "cs-prop_01abc-abababababababab");
        assert_eq!(key, idempotency_key("prop_01abc", &hash), "stable: never random at call time");
        assert_ne!(key, idempotency_key("prop_01abd", &hash));
        assert_ne!(key, idempotency_key("prop_01abc", &format!("sha256:{}", "cd".repeat(32))));
        assert!(key.len() <= 255 && key.bytes().all(|b| b.is_ascii_graphic()), "fits the Idempotency-Key header");
    }

    /// A demo proposal of `amount_minor` USD to Northwind, approved by ana
    /// and ben as far as policy asks: its id and approval token.
    async fn approved(
        state: &crate::platform::services::Services,
        agent: &AgentPrincipal,
        users: &[store::directory::User],
        run: &str,
        amount_minor: u64,
    ) -> (String, String) {
        let body = json!({"run_id": run, "amount_minor": amount_minor, "currency": "USD",
            "source_account": "acct_demo000000001234", "destination": "ba_northwind0007",
            "reference": "Invoice", "purpose_code": "vendor"});
        let (proposals::Proposed::Created(mut view) | proposals::Proposed::Existing(mut view)) =
            proposals::propose(state, agent, &body, state.now()).await.unwrap();
        for name in ["ana", "ben"] {
            if view.status == ProposalStatus::Approved {
                break;
            }
            let user = users.iter().find(|u| u.username == name).unwrap();
            let approver = crate::decision::approval::approve::Approver {
                user_id: user.id.clone(),
                tenant_id: user.tenant_id.clone(),
                roles: user.roles.clone(),
                approval_limits_minor: user.approval_limits_minor.clone(),
                amr: "pwd",
                via: "console",
                step_up: None,
                not_duplicate: None,
                on_behalf_of: None,
            };
            view = crate::decision::approval::approve::decide(
                state,
                &approver,
                &view.id,
                crate::decision::approval::approve::Verdict::Approve,
                state.now(),
            )
            .await
            .unwrap();
        }
        // The token is the agent's to read, not the approver's.
        let view = proposals::for_agent(state, agent, &view.id).await.unwrap();
        (view.id, view.approval_token.expect("approved"))
    }

    /// The claims of a compact JWS, unverified (its signature is checked
    /// where receipts are verified).
    fn claims_of(jws: &str) -> serde_json::Value {
        use base64::Engine;
        let payload = jws.split('.').nth(1).unwrap();
        serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
    }

    #[tokio::test]
    async fn on_sqlite_a_commit_records_in_one_command_that_checks_every_guard() {
        let dir = tempfile::tempdir().unwrap();
        let (state, _trigger, agent, users) = crate::platform::demo::loaded_for_test(dir.path()).await;
        let (id, token) = approved(&state, &agent, &users, "one-command", 25_000).await;
        let view = commit(&*state, &agent, &id, &token).await.unwrap();
        let fresh = proposals::for_agent(&*state, &agent, &id).await.unwrap();
        assert_eq!(json!(view), json!(fresh), "the answer is the proposal as stored");
        let op = view.operation.expect("recorded");

        // The guards the last command ran, each held (a refused one stops
        // it): the outcome's, which runs as one command only with what the
        // authorization's one command knew (`operations::Known`), so both ran.
        let mut writer = state.db().write.acquire().await.unwrap();
        let guards: Vec<(String, i64)> = store::query("SELECT step, ok FROM temp.commit_guard ORDER BY rowid")
            .fetch_all(&mut *writer)
            .await
            .expect("the one-command path ran on the writer")
            .iter()
            .map(|r| (r.try_get("step").unwrap(), r.try_int("ok").unwrap().unwrap()))
            .collect();
        drop(writer);
        let steps: Vec<&str> = guards.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(
            steps,
            ["the operation as read", "the proposal as known", "no receipt since", "the chain head as remembered"]
        );
        assert!(guards.iter().all(|(_, ok)| *ok == 1));

        // What the step-by-step transaction writes, it wrote: the token used,
        // the day's reservation, the chain intact, the authorization's
        // receipt linked to the approval token's, its commitments salted.
        let read = &state.db().read;
        let jti = claims_of(&token)["jti"].as_str().unwrap().to_owned();
        assert!(store::proposals::token(read, &jti).await.unwrap().unwrap().used_at.is_some());
        let mut conn = state.db().reader().await.unwrap();
        let day = budget_day(state.now());
        assert_eq!(store::operations::reserved(&mut conn, "demo", "USD", &day).await.unwrap(), 25_000);
        drop(conn);
        assert!(matches!(store::audit::verify(read).await.unwrap(), store::audit::Verification::Intact { .. }));
        let entries = store::audit::for_proposal(read, &id).await.unwrap();
        let receipts: Vec<(&str, &str)> =
            entries.iter().filter_map(|e| Some((e.action.as_str(), e.data.get("receipt")?.as_str()?))).collect();
        let at = receipts.iter().position(|(action, _)| *action == "operation.created").unwrap();
        let ((_, before), (_, authorization)) = (receipts[at - 1], receipts[at]);
        let claims = claims_of(authorization);
        assert_eq!(claims["prev"], crate::decision::approval::receipts::digest(before));
        let (action, answer) = receipts[at + 1];
        assert_eq!(action, "operation.unknown", "the rail's answer (a rail that never answers)");
        assert_eq!(claims_of(answer)["prev"], crate::decision::approval::receipts::digest(authorization));
        assert_eq!(claims["data"]["operation_id"], op.id);
        let mut tx = state.db().begin().await.unwrap();
        let committed = crate::evidence::Committed::of(
            &mut tx,
            &id,
            &store::proposals::get(read, "demo", &id).await.unwrap().unwrap().request,
        )
        .await
        .unwrap()
        .commitments();
        drop(tx);
        assert_eq!(claims["data"]["destination_commitment"], committed.destination);
        assert_eq!(claims["data"]["source_account_commitment"], committed.source_account);

        // The authorization's own command, run alone: every guard it ran, and
        // what it hands the outcome's command (the entry it appended).
        let (alone, token) = approved(&state, &agent, &users, "authorization", 20_000).await;
        let now = state.now();
        let expected = Expected {
            issuer: &state.settings().public_url,
            proposal_id: &alone,
            tenant_id: "demo",
            agent_id: &agent.agent_id,
            now,
        };
        let claims = state.keys().verify(&token, &expected).unwrap();
        let row = store::proposals::get(read, "demo", &alone).await.unwrap().unwrap();
        let op_id = store::new_id("op", now);
        let before = BeforeRecord::read(&*state, &alone).await.unwrap();
        let (op, known) =
            record(&*state, &row, &claims, &op_id, None, (None, None), before, now).await.unwrap().unwrap();
        let known = known.expect("recorded by the one command");
        let mut writer = state.db().write.acquire().await.unwrap();
        let steps: Vec<String> =
            store::scalar("SELECT step FROM temp.commit_guard ORDER BY rowid").fetch_all(&mut *writer).await.unwrap();
        drop(writer);
        assert_eq!(
            steps,
            [
                "no freeze stops it",
                "the token was unused",
                "within the daily budget",
                "still approved",
                "the salts kept are these",
                "no receipt since",
                "the invoice is not held",
                "the chain head as remembered"
            ]
        );
        let entries = store::audit::for_proposal(read, &alone).await.unwrap();
        let last = entries.last().unwrap();
        assert_eq!((last.action.as_str(), last.seq), ("operation.created", known.receipt_seq));
        assert_eq!(last.data["receipt"], known.receipt.as_str());
        assert_eq!(last.data["operation_id"], op.id);
        assert_eq!(known.proposal_status, ProposalStatus::Executing);

        // The outcome's own command, run alone: it reads the proposal back
        // as its last statement, whole (its approval, the operation as it
        // now stands), and that is what the commit answers with.
        let outcome = operations::RailOutcome::Succeeded { reference: "tr_alone".into(), evidence: None };
        let recorded = operations::record_knowing(&*state, &op, outcome, state.now(), Some(&known)).await.unwrap();
        assert!(recorded.moved);
        let after = proposals::agents_view(&*state, &agent, recorded.proposal).expect("read by the command");
        assert_eq!(after.status, ProposalStatus::Succeeded);
        assert_eq!(after.approvals.len(), 1, "one approver at 200 USD");
        let settled = after.operation.as_ref().expect("with its operation");
        assert_eq!((settled.status.as_str(), settled.rail_reference.as_deref()), ("succeeded", Some("tr_alone")));
        let fresh = proposals::for_agent(&*state, &agent, &alone).await.unwrap();
        assert_eq!(json!(after), json!(fresh));

        // A guard that does not hold (a freeze): the command stops, the
        // step-by-step transaction answers why, and nothing stands.
        let (frozen, token) = approved(&state, &agent, &users, "frozen", 30_000).await;
        let mut tx = state.db().begin().await.unwrap();
        store::freezes::freeze(
            &mut tx,
            &store::freezes::Scope::Tenant("demo".into()),
            "user:ada",
            "drill",
            state.now(),
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
        let refused = commit(&*state, &agent, &frozen, &token).await.unwrap_err();
        assert!(matches!(&refused, CommitError::Denied(d) if d.reasons[0].rule == "kill_switch"), "{refused:?}");
        let row = store::proposals::get(read, "demo", &frozen).await.unwrap().unwrap();
        assert_eq!(row.status, ProposalStatus::Approved);
        assert!(store::operations::for_proposal(read, &frozen).await.unwrap().is_none());
        let jti = claims_of(&token)["jti"].as_str().unwrap().to_owned();
        assert!(store::proposals::token(read, &jti).await.unwrap().unwrap().used_at.is_none());
        let mut conn = state.db().reader().await.unwrap();
        assert_eq!(store::operations::reserved(&mut conn, "demo", "USD", &day).await.unwrap(), 45_000);
        drop(conn);
        assert!(matches!(store::audit::verify(read).await.unwrap(), store::audit::Verification::Intact { .. }));
    }

    /// The token the commit checks is the one stored under its `jti`: the
    /// proposal's read brings only its current round's, so an earlier
    /// round's is read on its own, and is refused as superseded; one the
    /// server does not hold is unknown. Neither records anything.
    #[tokio::test]
    async fn a_token_of_an_earlier_round_is_superseded_and_one_not_stored_is_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let (state, _trigger, agent, users) = crate::platform::demo::loaded_for_test(dir.path()).await;
        let read = &state.db().read;

        let (id, token) = approved(&state, &agent, &users, "earlier-round", 20_000).await;
        let mut conn = state.db().writer().await.unwrap();
        store::proposals::next_round(&mut conn, &id).await.unwrap();
        drop(conn);
        let refused = commit(&*state, &agent, &id, &token).await.unwrap_err();
        assert!(matches!(refused, CommitError::Token("superseded")), "{refused:?}");
        assert!(store::operations::for_proposal(read, &id).await.unwrap().is_none());

        let (id, token) = approved(&state, &agent, &users, "not-stored", 20_000).await;
        let jti = claims_of(&token)["jti"].as_str().unwrap().to_owned();
        let mut conn = state.db().writer().await.unwrap();
        store::query("DELETE FROM approval_tokens WHERE jti = ?").bind(jti.as_str()).execute(&mut conn).await.unwrap();
        drop(conn);
        let refused = commit(&*state, &agent, &id, &token).await.unwrap_err();
        assert!(matches!(refused, CommitError::Token("unknown_token")), "{refused:?}");
        assert!(store::operations::for_proposal(read, &id).await.unwrap().is_none());
    }

    #[test]
    fn budgets_count_by_utc_calendar_day() {
        let late = DateTime::parse_from_rfc3339("2026-03-01T23:59:59-05:00").unwrap().with_timezone(&Utc);
        assert_eq!(budget_day(late), "2026-03-02", "04:59 UTC the next day");
        let early = DateTime::parse_from_rfc3339("2026-03-01T00:00:00Z").unwrap().with_timezone(&Utc);
        assert_eq!(budget_day(early), "2026-03-01");
    }
}
