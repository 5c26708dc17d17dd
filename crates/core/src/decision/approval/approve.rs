//! The one approval path. Console pages, the console JSON API, Slack buttons
//! and policy auto-approval all end in `grant` through `decide` (humans) or
//! `auto_approve` (policy); they differ only in how the approver was
//! authenticated (`amr`) and the channel (`via`).
//!
//! Why this file is long: it is the one approval path, and its checks are
//! meant to be read in the order they run (role, state, step-up nonce,
//! delegation, duties and limits for both people, duplicates, groups, the
//! transaction's re-reads); the pieces that stand alone live beside it
//! (`approval/`, `groups`, `delegation`, `duplicates`).

use chrono::{DateTime, Utc};
use serde_json::json;
use std::collections::BTreeMap;

use crate::config::Config;
use crate::decision::approval::grant::grant;
use crate::decision::approval::keys::Keys;
use crate::decision::policy::{self, Decision, Outcome, PolicyInput};
use crate::domain::Role;
use crate::domain::{Currency, ProposalKind, ProposalStatus};
use crate::intake::proposals::{self, AgentPrincipal, ProposalView};
use crate::people::passkeys::step_up::{self, Asker, Need, StepUp, StepUpError};
use crate::platform::changes::Notifier;
use crate::store::Store;
use crate::store::{self, audit::AuditEntry, proposals::ApprovalRow};

/// A human (or a policy rule) giving a decision, already authenticated.
#[derive(Debug, Clone)]
pub struct Approver {
    pub user_id: String,
    pub tenant_id: String,
    pub roles: Vec<Role>,
    pub approval_limits_minor: BTreeMap<String, u64>,
    /// How they authenticated: `pwd`, `passkey`, `slack`.
    pub amr: &'static str,
    /// Which channel: `console`, `api`, `slack`.
    pub via: &'static str,
    /// A passkey assertion over the payment, when they gave one (approving
    /// at or above the step-up threshold needs it).
    pub step_up: Option<StepUp>,
    /// Their statement that this payment is not a duplicate, needed to
    /// approve one whose invoice is already approved or paid
    /// ([`crate::intake::duplicates`]).
    pub not_duplicate: Option<String>,
    /// The username of the person they approve for, under a delegation of
    /// theirs in force ([`crate::decision::delegation`]); approvals only.
    pub on_behalf_of: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Approve,
    Reject { reason: String },
}

impl Verdict {
    /// Its name in the decision metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Approve => "approve",
            Verdict::Reject { .. } => "reject",
        }
    }
}

/// A person's decision in the metrics: `verdict` by `approver` at `now`, on
/// a proposal (or batch) created at `created`.
pub(crate) fn record_decision(
    approver: &Approver,
    verdict: &'static str,
    created: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) {
    crate::platform::metrics::decision(approver.via, verdict);
    if let Some(created) = created {
        crate::platform::metrics::decided_after(approver.via, (now - created).to_std().unwrap_or_default());
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error("no such proposal")]
    NotFound,
    #[error("only approvers can decide on proposals")]
    NotAnApprover,
    #[error("the proposal is {0}")]
    InvalidState(ProposalStatus),
    /// A reason (`field`: `reason`, or `not_duplicate_reason`) that is
    /// missing or not acceptable, and why.
    #[error("{why}")]
    BadReason { field: &'static str, why: &'static str },
    #[error("denied by policy")]
    Denied(Decision),
    #[error("cannot mint the approval token: {0}")]
    Token(String),
    /// A step-up was needed and not given, or the assertion was refused.
    #[error(transparent)]
    StepUp(StepUpError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

impl DecideError {
    /// The decision forms' fixed outcome code (`invalid_state`,
    /// `approver_limit`, …): what a page shows in words, never the message.
    pub fn code(&self) -> &'static str {
        match self {
            DecideError::NotFound => "not_found",
            DecideError::NotAnApprover => "forbidden",
            DecideError::InvalidState(_) => "invalid_state",
            DecideError::BadReason { .. } => "reason_required",
            DecideError::Denied(d) => match d.reasons.first().map(|r| r.rule.as_str()) {
                Some("segregation_of_duties") => "segregation_of_duties",
                Some("approver_limit") => "approver_limit",
                Some("distinct_approvers") => "distinct_approvers",
                Some(crate::intake::duplicates::RULE) => "duplicate_invoice",
                Some(crate::decision::delegation::RULE) => "delegation",
                _ => "policy_denied",
            },
            DecideError::StepUp(StepUpError::Required) => "step_up_required",
            DecideError::StepUp(StepUpError::NoPasskey) => "passkey_required",
            DecideError::StepUp(StepUpError::CoolingOff(_)) => "passkey_cooling_off",
            DecideError::StepUp(_) => "passkey_refused",
            DecideError::Token(_) | DecideError::Store(_) => "error",
        }
    }
}

impl From<StepUpError> for DecideError {
    fn from(e: StepUpError) -> DecideError {
        match e {
            StepUpError::Store(e) => DecideError::Store(e),
            StepUpError::NotFound => DecideError::NotFound,
            other => DecideError::StepUp(other),
        }
    }
}

fn denied(rule: &str, message: String) -> DecideError {
    DecideError::Denied(Decision::denied_by(rule, message))
}

/// A rejection reason (or a "not a duplicate" statement, `field`): 1–500
/// characters after trimming, no control characters.
fn check_reason(reason: &str, field: &'static str, missing: &'static str) -> Result<String, DecideError> {
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(DecideError::BadReason { field, why: missing });
    }
    if reason.chars().count() > 500 || reason.chars().any(char::is_control) {
        let why = "the reason must be at most 500 characters, without control characters";
        return Err(DecideError::BadReason { field, why });
    }
    Ok(reason.to_owned())
}

/// An approver's "not a duplicate" statement and the twins it answers.
struct NotDuplicate {
    reason: String,
    twins: Vec<String>,
}

/// For an approval: the approver's "not a duplicate" statement and the
/// twins it answers, when the invoice is already approved or paid (refused
/// without one); the decision then asks one more approver.
async fn duplicate_gate(
    state: &(impl Store + Config),
    approver: &Approver,
    row: &store::proposals::ProposalRow,
    decision: Decision,
) -> Result<(Decision, Option<NotDuplicate>), DecideError> {
    use crate::intake::duplicates;
    let twins = duplicates::approved_twins(state, row).await?;
    if twins.is_empty() {
        return Ok((decision, None));
    }
    let Some(statement) = approver.not_duplicate.as_deref().filter(|s| !s.trim().is_empty()) else {
        return Err(denied(duplicates::RULE, duplicates::unconfirmed(row, &twins)));
    };
    let reason = check_reason(statement, "not_duplicate_reason", "say why this payment is not a duplicate")?;
    let recorded = NotDuplicate { reason, twins: duplicates::ids(&twins).into_iter().map(str::to_owned).collect() };
    Ok((duplicates::one_more(decision, &twins), Some(recorded)))
}

const DECIDABLE: [ProposalStatus; 2] = ProposalStatus::AWAITING_DECISION;

/// Whether a proposal in `status` waits for a human decision.
pub fn awaits_decision(status: ProposalStatus) -> bool {
    status.awaits_decision()
}

/// Why a person cannot approve a proposal now. [`may_approve`] is the one
/// rule: `decide` enforces it and the console shows it before anyone clicks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ineligible {
    NotAnApprover,
    NotWaiting(ProposalStatus),
    /// They are the person the proposing agent acts for.
    ActsFor {
        agent: String,
    },
    /// They were shown the proposing agent's key (they could propose as it).
    KeyHolder {
        agent: String,
    },
    /// No approval limit in the proposal's currency.
    NoLimit {
        currency: String,
    },
    OverLimit {
        amount: String,
        limit: String,
    },
    /// They gave an approval in this round already.
    AlreadyApproved,
    /// The approvals still missing must come from these groups, and they
    /// are in none of them.
    NotInGroup {
        groups: Vec<String>,
    },
}

impl Ineligible {
    /// Addressed to the person who cannot approve.
    pub fn message(&self) -> String {
        match self {
            Ineligible::NotAnApprover => "Your role cannot approve or reject proposals.".into(),
            Ineligible::NotWaiting(status) => {
                format!("{}: this proposal no longer waits for a decision.", status.label())
            }
            Ineligible::ActsFor { agent } => {
                format!("You are the person agent {agent} acts for, so you cannot approve its proposals.")
            }
            Ineligible::KeyHolder { agent } => {
                format!("You were given agent {agent}'s key, so you cannot approve its proposals.")
            }
            Ineligible::NoLimit { currency } => format!("You have no approval limit in {currency}."),
            Ineligible::OverLimit { amount, limit } => format!("{amount} is above your approval limit of {limit}."),
            Ineligible::AlreadyApproved => {
                "You have already approved this proposal; another approver must give the next approval.".into()
            }
            Ineligible::NotInGroup { groups } => format!(
                "The approvals still missing must come from {}; you are not in {}.",
                groups.join(" and "),
                if groups.len() == 1 { "it" } else { "any of them" }
            ),
        }
    }
}

/// Who is being checked: the fields of a user or an [`Approver`] that matter.
pub struct Candidate<'a> {
    pub user_id: &'a str,
    pub roles: &'a [Role],
    pub approval_limits_minor: &'a BTreeMap<String, u64>,
}

impl<'a> From<&'a store::directory::User> for Candidate<'a> {
    fn from(user: &'a store::directory::User) -> Self {
        Candidate { user_id: &user.id, roles: &user.roles, approval_limits_minor: &user.approval_limits_minor }
    }
}

impl Approver {
    pub fn candidate(&self) -> Candidate<'_> {
        Candidate { user_id: &self.user_id, roles: &self.roles, approval_limits_minor: &self.approval_limits_minor }
    }
}

/// What [`may_approve`] reads of a proposal: a stored row has it all, and
/// the count of proposals waiting for a reviewer reads only this much
/// (`store::proposals::pending_for`).
#[derive(Debug, Clone, Copy)]
pub struct Approvable<'a> {
    pub status: ProposalStatus,
    pub agent_id: &'a str,
    pub currency: Currency,
    pub amount_minor: u64,
    /// The approvals its policy requires from named groups, and in all
    /// (a row of the waiting count has neither: no group is checked there).
    pub groups: &'a [policy::GroupNeed],
    pub required: u8,
}

impl<'a> From<&'a store::proposals::ProposalRow> for Approvable<'a> {
    fn from(row: &'a store::proposals::ProposalRow) -> Self {
        Approvable {
            status: row.status,
            agent_id: &row.agent_id,
            currency: row.request.currency,
            amount_minor: row.amount_minor,
            groups: &row.policy.groups,
            required: row.required_approvals,
        }
    }
}

impl<'a> From<&'a store::proposals::PendingRow> for Approvable<'a> {
    fn from(row: &'a store::proposals::PendingRow) -> Self {
        Approvable {
            status: row.status,
            agent_id: &row.agent_id,
            currency: row.currency,
            amount_minor: row.amount_minor,
            groups: &[],
            required: 1,
        }
    }
}

/// Who may never approve an agent's proposals (segregation of duties): the
/// person it acts for, and the person its key was shown to.
#[derive(Debug, Clone, Copy, Default)]
pub struct Duties<'a> {
    pub acts_for: &'a str,
    pub key_holder: Option<&'a str>,
}

impl<'a> From<&'a store::directory::Agent> for Duties<'a> {
    fn from(agent: &'a store::directory::Agent) -> Self {
        Duties { acts_for: &agent.acts_for, key_holder: agent.key_holder.as_deref() }
    }
}

/// Whether `who` may approve `row` now: the approver role, a proposal
/// waiting for a decision, segregation of duties (`duties`: the person the
/// proposing agent acts for, and the one holding its key), a limit in the
/// currency that covers the amount, and no approval of theirs in this round
/// (`approved_by`). Policy is checked apart, by `decide`.
pub fn may_approve(
    who: &Candidate<'_>,
    row: &Approvable<'_>,
    duties: Duties<'_>,
    approved_by: &[&str],
) -> Result<(), Ineligible> {
    if !who.roles.contains(&Role::Approver) {
        return Err(Ineligible::NotAnApprover);
    }
    if !awaits_decision(row.status) {
        return Err(Ineligible::NotWaiting(row.status));
    }
    if duties.acts_for == who.user_id {
        return Err(Ineligible::ActsFor { agent: row.agent_id.to_owned() });
    }
    if duties.key_holder == Some(who.user_id) {
        return Err(Ineligible::KeyHolder { agent: row.agent_id.to_owned() });
    }
    let currency = row.currency;
    let Some(limit) = who.approval_limits_minor.get(currency.code()).copied().filter(|l| *l > 0) else {
        return Err(Ineligible::NoLimit { currency: currency.code().to_owned() });
    };
    if row.amount_minor > limit {
        return Err(Ineligible::OverLimit {
            amount: currency.format_minor(row.amount_minor),
            limit: currency.format_minor(limit),
        });
    }
    if approved_by.contains(&who.user_id) {
        return Err(Ineligible::AlreadyApproved);
    }
    Ok(())
}

impl From<Ineligible> for DecideError {
    fn from(why: Ineligible) -> DecideError {
        let message = why.message();
        match why {
            Ineligible::NotAnApprover => DecideError::NotAnApprover,
            Ineligible::NotWaiting(status) => DecideError::InvalidState(status),
            Ineligible::ActsFor { .. } | Ineligible::KeyHolder { .. } => denied("segregation_of_duties", message),
            Ineligible::NoLimit { .. } | Ineligible::OverLimit { .. } => denied("approver_limit", message),
            Ineligible::AlreadyApproved => denied("distinct_approvers", message),
            Ineligible::NotInGroup { .. } => denied(policy::RULE_GROUPS, message),
        }
    }
}

/// Records an approver's decision. Checks, in order: the proposal exists in
/// the approver's tenant, they hold the approver role, it is waiting for a
/// decision; for an approval also segregation of duties, their limit, that
/// they have not approved already, and policy as it stands now.
#[tracing::instrument(name = "decide", skip_all, fields(
    tenant = %approver.tenant_id, approver = %approver.user_id, proposal_id = %proposal_id, via = approver.via,
    outcome = tracing::field::Empty, otel.status_code = tracing::field::Empty,
))]
pub async fn decide(
    state: &(impl Store + Config + Keys + Notifier + crate::decision::approval::receipts::Receipts),
    approver: &Approver,
    proposal_id: &str,
    verdict: Verdict,
    now: DateTime<Utc>,
) -> Result<ProposalView, DecideError> {
    let verdict_name = verdict.name();
    let result =
        crate::platform::metrics::use_case("decide", decide_inner(state, approver, proposal_id, verdict, now)).await;
    if let Ok(view) = &result {
        record_decision(approver, verdict_name, crate::store::parse_ts(&view.created_at), now);
    }
    result
}

async fn decide_inner(
    state: &(impl Store + Config + Keys + Notifier + crate::decision::approval::receipts::Receipts),
    approver: &Approver,
    proposal_id: &str,
    verdict: Verdict,
    now: DateTime<Utc>,
) -> Result<ProposalView, DecideError> {
    let row = store::proposals::get(&state.db().read, &approver.tenant_id, proposal_id)
        .await?
        .ok_or(DecideError::NotFound)?;
    // Rejecting needs the role and a proposal that waits; approving, all of
    // `may_approve` (in `recheck`).
    if !approver.roles.contains(&Role::Approver) {
        return Err(DecideError::NotAnApprover);
    }
    if !DECIDABLE.contains(&row.status) {
        return Err(DecideError::InvalidState(row.status));
    }
    let asker = Asker::from(approver);
    if let Verdict::Reject { reason } = &verdict {
        let reason = check_reason(reason, "reason", "a reason is required to reject")?;
        reject(state, approver, &row, reason, now).await?;
        return load(state, approver, proposal_id).await;
    }
    // An assertion's nonce is spent first, whatever comes next: a refused
    // or ineligible approval cannot be retried with it.
    let nonce = match &approver.step_up {
        Some(StepUp::One(answer)) => {
            Some(step_up::spend(state, &asker, (step_up::STEP_UP, &row.id), answer, now).await?)
        }
        _ => None,
    };
    let principal = delegated(state, approver, &row.tenant_id, now).await?;
    let decision = recheck(state, approver, principal.as_ref(), &row).await?;
    let (decision, not_duplicate) = duplicate_gate(state, approver, &row, decision).await?;
    // Named groups: an approval that would fill none still short is refused.
    // A delegate's counts for whom it is given.
    let required = decision.required_approvals.max(row.required_approvals);
    let counts_for = principal.as_ref().map_or(approver.user_id.as_str(), |(p, _)| p.id.as_str());
    crate::decision::approval_groups::gate(state, counts_for, &row, required)
        .await?
        .map_err(|groups| Ineligible::NotInGroup { groups })?;
    // The assertion is decoded and verified here, before the write
    // transaction: against the payment as read now, which the transaction
    // then checks is still the one stored.
    let checked = stepped_up(state, approver, &row, nonce, now).await?;

    let mut tx = state.db().begin().await?;
    // Locked: the approvals counted below include every approval committed
    // before this one (two approvers at once on two instances).
    let current =
        store::proposals::get_locked(&mut tx, &approver.tenant_id, proposal_id).await?.ok_or(DecideError::NotFound)?;
    if !DECIDABLE.contains(&current.status) {
        return Err(DecideError::InvalidState(current.status));
    }
    let kept = match checked {
        Some(checked) => {
            if current.request_hash != row.request_hash || current.approval_round != row.approval_round {
                // Changed since the assertion was checked: it signed another payment.
                return Err(
                    StepUpError::Refused(crate::people::passkeys::webauthn::PasskeyError::WrongChallenge).into()
                );
            }
            step_up::record_use(&mut tx, &asker, &checked, now).await?;
            Some(checked.kept)
        }
        None => match step_up::need_for(state, &mut tx, &asker, &current, now).await? {
            Need::Nothing => None,
            Need::Assertion => return Err(StepUpError::Required.into()),
            Need::RegisterFirst => return Err(StepUpError::NoPasskey.into()),
            Need::CoolingOff => {
                let held = store::passkeys::of_user(&state.db().read, &approver.tenant_id, &approver.user_id).await?;
                let until = held.iter().filter_map(|p| p.usable_from).min().map(store::ts).unwrap_or_default();
                return Err(StepUpError::CoolingOff(until).into());
            }
        },
    };
    let given = ApprovalRow {
        proposal_id: proposal_id.to_owned(),
        round: current.approval_round,
        approver_id: approver.user_id.clone(),
        decision: "approve".into(),
        // An approval carries a reason only as a "not a duplicate" statement.
        reason: not_duplicate.as_ref().map(|n| n.reason.clone()),
        via: approver.via.into(),
        amr: if kept.is_some() { "passkey".into() } else { approver.amr.into() },
        at: now,
        on_behalf_of: principal.as_ref().map(|(p, _)| p.id.clone()),
        delegation_id: principal.as_ref().map(|(_, d)| d.id.clone()),
    };
    let twice = || denied("distinct_approvers", Ineligible::AlreadyApproved.message());
    if let Err(e) = store::proposals::insert_approval(&mut tx, &given).await {
        return Err(if e.is_conflict() { twice() } else { e.into() });
    }
    let approvals = store::proposals::approvals_in_round(&mut tx, proposal_id, current.approval_round).await?;
    if !crate::decision::delegation::each_once(&approvals) {
        // Someone approved for a person who approved too (or the reverse)
        // meanwhile: nothing of this approval is kept.
        return Err(twice());
    }
    if let Some(kept) = &kept {
        store::passkeys::insert_assertion(&mut tx, kept).await?;
    }
    let mut data = json!({"via": approver.via, "amr": given.amr, "round": current.approval_round});
    if let Some((principal, delegation)) = &principal {
        data["on_behalf_of"] = json!(principal.id);
        data["delegation_id"] = json!(delegation.id);
    }
    if let Some(NotDuplicate { reason, twins }) = not_duplicate {
        data["not_duplicate"] = json!({"reason": reason, "twins": twins});
    }
    if let Some(kept) = &kept {
        // Which passkey signed (its id, never key material), and a digest of
        // the assertion it gave (kept whole in approval_assertions): the
        // approval's receipt binds it.
        data["passkey_id"] = json!(kept.passkey_id);
        data["assertion_sha256"] = json!(crate::decision::approval::receipts::assertion_digest(
            &kept.authenticator_data,
            &kept.client_data_json,
            &kept.signature
        ));
    }
    let entry = AuditEntry {
        tenant_id: Some(approver.tenant_id.clone()),
        actor: format!("user:{}", approver.user_id),
        action: "proposal.approval_given".into(),
        proposal_id: Some(proposal_id.to_owned()),
        request_hash: Some(current.request_hash.clone()),
        data,
    };
    crate::decision::approval::receipts::append(state, &mut tx, &entry, now).await?;
    let required = decision.required_approvals.max(current.required_approvals).max(1);
    if decision.required_approvals > current.required_approvals {
        // Policy or a risk signal asks for more than when it was proposed:
        // stored, so the agent and the console see what is now needed.
        store::proposals::raise_required_approvals(&mut tx, proposal_id, &decision).await?;
    }
    // Named groups (fixed when it was proposed) must be met as well, each
    // approver counting for one group at most.
    let groups_met = current.policy.groups.is_empty() || {
        let members =
            crate::decision::approval_groups::Members::load_in(&mut tx, state.settings(), &current.tenant_id).await?;
        members.unmet(&current.policy.groups, &crate::decision::delegation::Given::of(&approvals).counted).is_empty()
    };
    if approvals.len() >= usize::from(required) && groups_met {
        grant(state, &mut tx, &current, &approvals, now).await?;
    } else {
        store::proposals::touch(&mut tx, proposal_id, now).await?;
    }
    tx.commit().await?;
    state.changes().publish(proposal_id);
    load(state, approver, proposal_id).await
}

/// The most proposals one bulk decision may list.
pub const BULK_MAX: usize = 50;

/// The proposal ids of a bulk form or page (`id`, repeated): each once, in
/// the order given, at most [`BULK_MAX`].
pub fn listed_ids(fields: &[(String, String)]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for (_, id) in fields.iter().filter(|(k, _)| k == "id") {
        if !ids.contains(id) && ids.len() < BULK_MAX {
            ids.push(id.clone());
        }
    }
    ids
}

/// One decision over several proposals, as a reviewer confirmed them on one
/// page: each goes through [`decide`] on its own (its own limits, policy,
/// risk and state checks), in the order given; one refusal stops nothing
/// else. Each id is decided once even if listed twice. An approval that
/// lists two proposals of one invoice is refused whole, nothing decided:
/// the reviewer drops one first ([`crate::intake::duplicates`]).
pub async fn decide_many(
    state: &(impl Store + Config + Keys + Notifier + crate::decision::approval::receipts::Receipts),
    approver: &Approver,
    ids: &[String],
    verdict: &Verdict,
    now: DateTime<Utc>,
) -> Result<Vec<(String, Result<ProposalView, DecideError>)>, BulkRefusal> {
    if *verdict == Verdict::Approve {
        let listed: Vec<&str> = ids.iter().take(BULK_MAX).map(String::as_str).collect();
        // In listed order (get_many keeps it), so the pairs read as listed.
        let rows = store::proposals::get_many(&state.db().read, &approver.tenant_id, &listed).await?;
        let twins = crate::intake::duplicates::pairs(&rows);
        if !twins.is_empty() {
            return Err(BulkRefusal::Twins(twins));
        }
    }
    let mut seen = std::collections::HashSet::new();
    let mut results = Vec::new();
    for id in ids.iter().take(BULK_MAX) {
        if seen.insert(id.as_str()) {
            results.push((id.clone(), decide(state, approver, id, verdict.clone(), now).await));
        }
    }
    Ok(results)
}

/// Why a bulk decision was refused whole.
#[derive(Debug, thiserror::Error)]
pub enum BulkRefusal {
    /// Pairs of listed proposals that name the same invoice.
    #[error("the list holds the same invoice more than once")]
    Twins(Vec<(String, String)>),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

async fn load(state: &(impl Store + Config), approver: &Approver, id: &str) -> Result<ProposalView, DecideError> {
    proposals::load_view(state, &approver.tenant_id, id).await?.ok_or(DecideError::NotFound)
}

async fn reject(
    state: &(impl Store + Notifier + crate::decision::approval::receipts::Receipts),
    approver: &Approver,
    row: &store::proposals::ProposalRow,
    reason: String,
    now: DateTime<Utc>,
) -> Result<(), DecideError> {
    let mut tx = state.db().begin().await?;
    if !store::proposals::transition(&mut tx, &row.id, &DECIDABLE, ProposalStatus::Rejected, now).await? {
        let latest = store::proposals::get_in(&mut tx, &row.tenant_id, &row.id).await?.ok_or(DecideError::NotFound)?;
        return Err(DecideError::InvalidState(latest.status));
    }
    let given = ApprovalRow {
        proposal_id: row.id.clone(),
        round: row.approval_round,
        approver_id: approver.user_id.clone(),
        decision: "reject".into(),
        reason: Some(reason.clone()),
        via: approver.via.into(),
        amr: approver.amr.into(),
        at: now,
        on_behalf_of: None,
        delegation_id: None,
    };
    store::proposals::insert_approval(&mut tx, &given).await?;
    let entry = AuditEntry {
        tenant_id: Some(row.tenant_id.clone()),
        actor: format!("user:{}", approver.user_id),
        action: "proposal.rejected".into(),
        proposal_id: Some(row.id.clone()),
        request_hash: Some(row.request_hash.clone()),
        data: json!({"from": row.status, "to": ProposalStatus::Rejected, "via": approver.via, "reason": reason}),
    };
    crate::decision::approval::receipts::append(state, &mut tx, &entry, now).await?;
    tx.commit().await?;
    state.changes().publish(&row.id);
    Ok(())
}

/// The approver's step-up assertion for `row`, verified before the
/// approval's transaction: over the challenge of that payment (one
/// proposal's, with its nonce) or as listed on a bulk page, by a passkey of
/// theirs that may approve now. None when they gave none (the transaction
/// then asks whether one was needed).
async fn stepped_up(
    state: &(impl Store + Config),
    approver: &Approver,
    row: &store::proposals::ProposalRow,
    nonce: Option<Vec<u8>>,
    now: DateTime<Utc>,
) -> Result<Option<step_up::Checked>, DecideError> {
    use base64::Engine;
    let asker = Asker::from(approver);
    let mut checked = match (&approver.step_up, nonce) {
        (Some(StepUp::One(answer)), Some(nonce)) => {
            let challenge =
                crate::people::passkeys::step_up_challenge(&row.request_hash, &row.id, asker.user_id, &nonce);
            let mut checked = step_up::verify(state, &asker, &challenge, answer, now).await?;
            checked.kept.kind = step_up::STEP_UP.into();
            checked.kept.nonce = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&nonce);
            checked
        }
        (Some(StepUp::Listed(proof)), _) => {
            // The bulk assertion covers this proposal only as it was listed.
            if !proof.listed.iter().any(|(id, hash)| *id == row.id && *hash == row.request_hash) {
                return Err(
                    StepUpError::Refused(crate::people::passkeys::webauthn::PasskeyError::WrongChallenge).into()
                );
            }
            return Ok(Some(step_up::Checked {
                passkey_id: proof.kept.passkey_id.clone(),
                sign_count: proof.sign_count,
                kept: with_payment(proof.kept.clone(), row),
            }));
        }
        _ => return Ok(None),
    };
    checked.kept = with_payment(checked.kept, row);
    Ok(Some(checked))
}

fn with_payment(
    mut kept: store::passkeys::AssertionRow,
    row: &store::proposals::ProposalRow,
) -> store::passkeys::AssertionRow {
    kept.proposal_id = row.id.clone();
    kept.round = row.approval_round;
    kept.request_hash = row.request_hash.clone();
    kept
}

impl<'a> From<&'a Approver> for Asker<'a> {
    fn from(approver: &'a Approver) -> Self {
        Asker { tenant_id: &approver.tenant_id, user_id: &approver.user_id, roles: &approver.roles }
    }
}

/// The person `approver` approves for and the delegation that lets them,
/// when they asked to approve for someone; refused (rule `delegation`)
/// unless that person is an active approver here with a delegation to them
/// in force now.
async fn delegated(
    state: &impl Store,
    approver: &Approver,
    tenant: &str,
    now: DateTime<Utc>,
) -> Result<Option<(store::directory::User, store::delegations::DelegationRow)>, DecideError> {
    let Some(name) = &approver.on_behalf_of else { return Ok(None) };
    let mut conn = state.db().reader().await?;
    crate::decision::delegation::resolve(&mut conn, tenant, name, &approver.user_id, now)
        .await?
        .map(Some)
        .map_err(|why| denied(crate::decision::delegation::RULE, why))
}

/// Why no approval can be given for `name` (a delegate's refusal), said of them.
fn for_them(name: &str, why: Ineligible) -> DecideError {
    let message = match &why {
        Ineligible::ActsFor { agent } => format!("{name} is the person agent {agent} acts for: nobody approves its proposals for {name}."),
        Ineligible::KeyHolder { agent } => format!("{name} was given agent {agent}'s key: nobody approves its proposals for {name}."),
        Ineligible::NoLimit { currency } => format!("{name} has no approval limit in {currency} (an approval for {name} needs both of your limits)."),
        Ineligible::OverLimit { amount, limit } => format!("{amount} is above {name}'s approval limit of {limit} (an approval for {name} uses the lower of your two limits)."),
        Ineligible::AlreadyApproved => format!("{name} has already approved this proposal, or someone approved for {name}."),
        other => other.message(),
    };
    match DecideError::from(why) {
        DecideError::Denied(d) => denied(d.reasons.first().map_or(policy::RULE_GROUPS, |r| r.rule.as_str()), message),
        DecideError::NotAnApprover => {
            denied(crate::decision::delegation::RULE, format!("{name} is no longer an approver."))
        }
        other => other,
    }
}

/// Segregation of duties, the approver's limit (and, for a delegate, all of
/// it for the person they approve for too), and policy re-evaluated now
/// (the agent's scope or the payee may have changed since it was proposed).
async fn recheck(
    state: &(impl Store + Config),
    approver: &Approver,
    principal: Option<&(store::directory::User, store::delegations::DelegationRow)>,
    row: &store::proposals::ProposalRow,
) -> Result<Decision, DecideError> {
    let mut conn = state.db().reader().await?;
    let agent =
        store::directory::agent(&mut conn, &row.tenant_id, &row.agent_id).await?.ok_or(DecideError::NotFound)?;
    let given = store::proposals::approvals_in_round(&mut conn, &row.id, row.approval_round).await?;
    drop(conn);
    let given = crate::decision::delegation::Given::of(&given);
    may_approve(&approver.candidate(), &row.into(), Duties::from(&agent), &given.people)?;
    if let Some((user, _)) = principal {
        may_approve(&Candidate::from(user), &row.into(), Duties::from(&agent), &given.people)
            .map_err(|why| for_them(&user.username, why))?;
    }
    let (decision, signals) = policy_now(state, &AgentPrincipal::from(agent), row).await?;
    if decision.outcome == Outcome::Denied {
        return Err(DecideError::Denied(decision));
    }
    if !state.settings().risk.extra_approval {
        return Ok(decision); // signals change nothing: spare the reads
    }
    let signals = match signals {
        Some(signals) => signals,
        None => crate::intake::risk::signals(state, &crate::intake::risk::Subject::of(row)).await?,
    };
    Ok(crate::intake::risk::with_extra_approval(&state.settings().risk, decision, &signals))
}

/// Policy for a stored proposal, as the registry, the config and the
/// tenant's enforced policy stand now; with the risk signals when that
/// policy reads them (a Cedar policy may: they are computed for it).
pub async fn policy_now(
    state: &(impl Store + Config),
    agent: &AgentPrincipal,
    row: &store::proposals::ProposalRow,
) -> Result<(Decision, Option<Vec<crate::intake::risk::Signal>>), store::StoreError> {
    let policies = state.settings().policies.for_tenant(&row.tenant_id);
    let signals = if policies.enforced.is_cedar() {
        Some(crate::intake::risk::signals(state, &crate::intake::risk::Subject::of(row)).await?)
    } else {
        None
    };
    let codes: Vec<&'static str> = signals.iter().flatten().map(|s| s.code).collect();
    Ok((evaluate_now(state, agent, row, &codes), signals))
}

/// [`policy_now`] given the risk signals' codes.
pub fn evaluate_now(
    state: &impl Config,
    agent: &AgentPrincipal,
    row: &store::proposals::ProposalRow,
    risk_signals: &[&'static str],
) -> Decision {
    let trusted = row.kind == ProposalKind::Transfer.as_str() && row.payee_trusted;
    let input = PolicyInput::of(&row.id, &row.request, trusted, &agent.scope, risk_signals);
    let settings = state.settings();
    let decision = settings.policies.for_tenant(&row.tenant_id).enforced.evaluate(&settings.policy, &input);
    settings.with_group_rule(&row.tenant_id, row.request.currency, row.request.amount_minor, decision)
}

impl From<crate::decision::approval::grant::GrantError> for DecideError {
    fn from(e: crate::decision::approval::grant::GrantError) -> DecideError {
        use crate::decision::approval::grant::GrantError;
        match e {
            GrantError::NotFound => DecideError::NotFound,
            GrantError::InvalidState(status) => DecideError::InvalidState(status),
            GrantError::Token(why) => DecideError::Token(why),
            GrantError::Store(e) => DecideError::Store(e),
        }
    }
}
