//! The proposal use cases: propose, read, list, cancel, expire. Handlers and
//! the CLI call these; these call `domain`, `policy` and `store`.

mod controls;
pub mod group_commit;
mod observe;
mod view;

use controls::payables_after_policy;
pub use controls::{evaluate, payables_at_intake};
use observe::{observe, ObservedDecision};
pub use view::*;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use serde_json::{json, Value};

use crate::config::Config;
use crate::decision::approval::keys::Keys;
use crate::decision::policy::{self, Decision, Outcome, PolicyInput};
use crate::domain::{
    mask_account, CanonicalPayee, CanonicalRequest, FieldError, PayeeId, ProposalKind, ProposalRequest, ProposalStatus,
    RequestHash, ReversalRequest, TransferRequest, CANONICAL_VERSION,
};
use crate::intake::proposals::group_commit::Batching;
use crate::notify::outbound::Outbound;
use crate::platform::changes::Notifier;
use crate::store::Store;
use crate::store::{self, audit::AuditEntry, proposals::ProposalRow};

pub use crate::people::actors::AgentPrincipal;
pub use crate::platform::cache::PolledView;

#[derive(Debug, thiserror::Error)]
pub enum ProposeError {
    #[error("the request is invalid")]
    Validation(Vec<FieldError>),
    #[error("destination {0} is not in the payee registry")]
    UnknownDestination(String),
    #[error("denied by policy")]
    Denied(Decision),
    #[error("auto-approval failed: {0}")]
    Approval(String),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// A broken invariant (never expected; answered as an internal error).
    #[error("{0}")]
    Internal(&'static str),
}

#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("no such proposal")]
    NotFound,
    #[error("the proposal is {0}")]
    InvalidState(ProposalStatus),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

pub enum Proposed {
    Created(ProposalView),
    Existing(ProposalView),
}

/// Parses, canonicalizes, hashes and evaluates a proposal, then stores it
/// (or returns the identical one already in this run).
#[tracing::instrument(name = "propose", skip_all, fields(
    tenant = %agent.tenant_id, agent = %agent.agent_id, proposal_id = tracing::field::Empty,
    outcome = tracing::field::Empty, otel.status_code = tracing::field::Empty,
))]
pub async fn propose(
    state: &(impl Store
          + Config
          + Keys
          + Notifier
          + Batching
          + Outbound
          + crate::notify::teams::TeamsOutbound
          + crate::decision::approval::receipts::Receipts
          + crate::notify::Reaching),
    agent: &AgentPrincipal,
    body: &Value,
    now: DateTime<Utc>,
) -> Result<Proposed, ProposeError> {
    let result = crate::platform::metrics::use_case("propose", propose_inner(state, agent, body, now)).await;
    if let Ok(Proposed::Created(view) | Proposed::Existing(view)) = &result {
        tracing::Span::current().record("proposal_id", view.id.as_str());
    }
    if let Ok(Proposed::Created(view)) = &result {
        crate::platform::metrics::proposal_created(view.status.as_str());
    }
    result
}

async fn propose_inner(
    state: &(impl Store
          + Config
          + Keys
          + Notifier
          + Batching
          + Outbound
          + crate::notify::teams::TeamsOutbound
          + crate::decision::approval::receipts::Receipts
          + crate::notify::Reaching),
    agent: &AgentPrincipal,
    body: &Value,
    now: DateTime<Utc>,
) -> Result<Proposed, ProposeError> {
    let mut job = prepare(state, agent, body, now).await?;
    let (id, run_id, hash) = (job.id.clone(), job.run_id.clone(), job.hash.to_string());
    let observed = job.observed.take();
    let Some(row) = state.intake().store(state, job).await? else {
        let mut conn = state.db().reader().await?;
        let existing = store::proposals::find_duplicate(&mut conn, &agent.tenant_id, &agent.agent_id, &run_id, &hash)
            .await?
            .ok_or(ProposeError::Internal("the duplicate proposal cannot be read"))?;
        drop(conn);
        return Ok(Proposed::Existing(owned_view(state, agent, &existing).await?));
    };
    if let Some(observed) = &observed {
        observe(state, observed).await;
    }
    state.changes().publish(&id);
    crate::notify::slack::outbox::wake_for(state, &agent.tenant_id);
    crate::notify::teams::wake_for(state, &agent.tenant_id);
    crate::notify::wake_for(state, &agent.tenant_id);
    if row.policy.auto_approver().is_some() {
        // Approved by policy in the same transaction: read back its approval and token.
        return Ok(Proposed::Created(owned_view(state, agent, &id).await?));
    }
    // Waiting for approval: the stored row is the whole proposal (no
    // approvals, operation or token yet).
    Ok(Proposed::Created(to_view(state, row, Vec::new())))
}

/// What policy makes of a request before anything is stored
/// ([`assess`]; `countersign policy explain` shows it).
pub struct Assessed {
    pub canonical: CanonicalRequest,
    pub payee_trusted: bool,
    pub hash: RequestHash,
    pub run_id: String,
    pub decision: Decision,
    pub id: String,
    /// The observed candidate's digest and decision (observe mode).
    pub observed: Option<(String, Decision)>,
}

/// Everything before storing: parse, canonicalize, hash, evaluate policy. A
/// denial is audited here and returned as an error.
pub(crate) async fn prepare(
    state: &(impl Store + Config),
    agent: &AgentPrincipal,
    body: &Value,
    now: DateTime<Utc>,
) -> Result<NewProposalJob, ProposeError> {
    if let Some(left) = &agent.offboarding_of {
        // The person it acts for was deactivated (`people::lifecycle`):
        // nothing is proposed until an admin reassigns its acts_for.
        let message = format!(
            "Agent {} acts for a person who was deactivated ({left}); it can propose and commit nothing until an \
             admin reassigns its acts_for.",
            agent.agent_id
        );
        let entry = AuditEntry {
            tenant_id: Some(agent.tenant_id.clone()),
            actor: agent.actor(),
            action: "proposal.denied".into(),
            proposal_id: None,
            request_hash: None,
            data: serde_json::json!({"rule": "acts_for_deactivated", "offboarding_of": left}),
        };
        store::audit::append_alone(&state.db().write, &entry).await?;
        return Err(ProposeError::Denied(Decision::denied_by("acts_for_deactivated", message)));
    }
    let Assessed { canonical, payee_trusted, hash, run_id, decision, id, observed } =
        assess(state, agent, body, now).await?;
    let summary = audit_summary(&canonical, &run_id, &decision);
    let observed = ObservedDecision {
        tenant_id: agent.tenant_id.clone(),
        id: id.clone(),
        hash: hash.to_string(),
        amount_minor: canonical.amount_minor,
        currency: canonical.currency.code().to_owned(),
        at: now,
        decision: decision.clone(),
        observed,
    };

    if decision.outcome == Outcome::Denied {
        let mut tx = state.db().begin().await?;
        store::audit::append(
            &mut tx,
            &AuditEntry {
                tenant_id: Some(agent.tenant_id.clone()),
                actor: agent.actor(),
                action: "proposal.denied".into(),
                proposal_id: None,
                request_hash: Some(hash.to_string()),
                data: summary,
            },
        )
        .await?;
        tx.commit().await?;
        observe(state, &observed).await;
        return Err(ProposeError::Denied(decision));
    }
    Ok(NewProposalJob {
        agent: agent.clone(),
        canonical,
        payee_trusted,
        hash,
        run_id,
        decision,
        id,
        now,
        summary,
        observed: Some(observed),
    })
}

/// Parses, canonicalizes, hashes and evaluates policy (with the tenant's
/// group rule and, when on, the risk signals' extra approval); writes
/// nothing.
pub async fn assess(
    state: &(impl Store + Config),
    agent: &AgentPrincipal,
    body: &Value,
    now: DateTime<Utc>,
) -> Result<Assessed, ProposeError> {
    let request = ProposalRequest::parse(body, state.currencies()).map_err(ProposeError::Validation)?;
    // Reversals are never treated as going to a trusted payee.
    let (canonical, payee_trusted, payee) = match &request {
        ProposalRequest::Transfer(t) => canonical_transfer(state, agent, t).await?,
        ProposalRequest::Reversal(r) => (canonical_reversal(state, agent, r).await?, false, None),
    };
    let hash = canonical.hash();
    let id = store::new_id("prop", now);
    let settings = state.settings();
    let policies = settings.policies.for_tenant(&agent.tenant_id);
    let subject = crate::intake::risk::Subject {
        id: &id,
        tenant_id: &agent.tenant_id,
        kind: canonical.kind,
        payee_id: canonical.destination.id.expose(),
        invoice_id: canonical.invoice_id.as_ref().map(|i| i.as_str()),
        amount_minor: canonical.amount_minor,
        currency: canonical.currency,
        created_at: now,
    };
    // A Cedar policy may read the risk signals: computed before it decides.
    let mut signals =
        if policies.reads_risk_signals() { Some(crate::intake::risk::signals(state, &subject).await?) } else { None };
    let codes: Vec<&'static str> = signals.iter().flatten().map(|s| s.code).collect();
    let input = PolicyInput::of(&id, &canonical, payee_trusted, &agent.scope, &codes);
    let with_groups =
        |d: Decision| settings.with_group_rule(&agent.tenant_id, canonical.currency, canonical.amount_minor, d);
    let decision = with_groups(policies.enforced.evaluate(&settings.policy, &input));
    let mut observed =
        policies.observed.as_ref().map(|o| (o.digest(), with_groups(o.evaluate(&settings.policy, &input))));
    // The accounts-payable controls, beside policy (`crate::payables`): on
    // the enforced decision and the observed one alike, so that observe
    // mode records only what the candidate policy changes.
    let decision = payables_after_policy(state, &canonical, payee.as_ref(), decision).await?;
    if let Some((digest, d)) = observed.take() {
        observed = Some((digest, payables_after_policy(state, &canonical, payee.as_ref(), d).await?));
    }
    if settings.risk.extra_approval && signals.is_none() && decision.outcome != Outcome::Denied {
        signals = Some(crate::intake::risk::signals(state, &subject).await?);
    }
    let extra = |d: Decision| match &signals {
        Some(signals) if settings.risk.extra_approval && d.outcome != Outcome::Denied => {
            crate::intake::risk::with_extra_approval(&settings.risk, d, signals)
        }
        _ => d,
    };
    let decision = extra(decision);
    let observed = observed.map(|(digest, d)| (digest, extra(d)));
    Ok(Assessed {
        canonical,
        payee_trusted,
        hash,
        run_id: request.run_id().as_str().to_owned(),
        decision,
        id,
        observed,
    })
}

async fn owned_view(
    state: &(impl Store + Config),
    agent: &AgentPrincipal,
    id: &str,
) -> Result<ProposalView, ProposeError> {
    for_agent(state, agent, id).await.map_err(|e| match e {
        ActionError::Store(e) => ProposeError::Store(e),
        _ => ProposeError::Internal("the stored proposal cannot be read back"),
    })
}

/// A new proposal ready to be stored (see `intake`).
pub struct NewProposalJob {
    agent: AgentPrincipal,
    canonical: CanonicalRequest,
    payee_trusted: bool,
    hash: RequestHash,
    run_id: String,
    decision: Decision,
    id: String,
    now: DateTime<Utc>,
    summary: Value,
    /// Observe mode's candidate decision, recorded once the proposal is stored.
    observed: Option<ObservedDecision>,
}

impl NewProposalJob {
    #[cfg(test)]
    pub(crate) fn reuse_id_for_test(&mut self, id: &str) {
        id.clone_into(&mut self.id);
    }

    /// In a transaction of its own.
    pub async fn store_alone(
        &self,
        state: &(impl Store + Config + Keys + crate::decision::approval::receipts::Receipts + crate::notify::Reaching),
    ) -> Result<Option<ProposalRow>, ProposeError> {
        let mut tx = state.db().begin().await?;
        let stored = self.insert(state, &mut tx).await?;
        tx.commit().await?;
        Ok(stored)
    }

    /// Stores a new proposal (pending) with its audit entry; when policy
    /// approves it alone, the policy's approval goes through the same `grant`
    /// as a human's. Returns the row as inserted (pending), or None, having
    /// written nothing, when the identical request is already in this run.
    pub async fn insert(
        &self,
        state: &(impl Store + Config + Keys + crate::decision::approval::receipts::Receipts + crate::notify::Reaching),
        tx: &mut crate::store::Conn,
    ) -> Result<Option<ProposalRow>, ProposeError> {
        Ok(NewProposalJob::insert_all(&[self], state, tx).await?.pop().flatten())
    }

    /// [`NewProposalJob::insert`] for several proposals in one transaction:
    /// their rows in one statement and their audit entries in another (a
    /// batch of intake costs two statements, not two per proposal), then
    /// each one's policy approval or announcement.
    pub async fn insert_all(
        jobs: &[&NewProposalJob],
        state: &(impl Store + Config + Keys + crate::decision::approval::receipts::Receipts + crate::notify::Reaching),
        tx: &mut crate::store::Conn,
    ) -> Result<Vec<Option<ProposalRow>>, ProposeError> {
        let texts: Vec<(String, String)> = jobs
            .iter()
            .map(|j| {
                (j.canonical.to_value().to_string(), serde_json::to_string(&j.decision).expect("decision serializes"))
            })
            .collect();
        let rows: Vec<store::proposals::NewProposal<'_>> =
            jobs.iter().zip(&texts).map(|(job, (canonical, policy))| job.row(state, canonical, policy)).collect();
        let mut stored = store::proposals::insert_many(tx, &rows).await?;
        let mut created = Vec::with_capacity(jobs.len());
        for (job, row) in jobs.iter().zip(&mut stored) {
            if let Some(row) = row {
                created.push(job.withhold_copy(state, tx, row).await?);
            }
        }
        store::audit::append_all(tx, &created).await?;
        let mut done = Vec::with_capacity(jobs.len());
        for (job, row) in jobs.iter().zip(stored) {
            done.push(match row {
                Some(row) => Some(job.after_insert(state, tx, row).await?),
                None => None,
            });
        }
        Ok(done)
    }

    /// The proposal row to store (pending), given its canonical request's
    /// and its policy decision's JSON.
    fn row<'a>(
        &'a self,
        state: &impl Config,
        canonical_json: &'a str,
        policy_json: &'a str,
    ) -> store::proposals::NewProposal<'a> {
        let NewProposalJob { agent, canonical, hash, run_id, decision, id, now, .. } = self;
        store::proposals::NewProposal {
            id,
            tenant_id: &agent.tenant_id,
            agent_id: &agent.agent_id,
            run_id,
            kind: canonical.kind.as_str(),
            status: ProposalStatus::PendingApproval,
            amount_minor: canonical.amount_minor,
            currency: canonical.currency.code(),
            payee_id: canonical.destination.id.expose(),
            invoice_id: canonical.invoice_id.as_ref().map(|i| i.as_str()),
            canonical_request: canonical_json,
            request_hash: hash.as_str(),
            policy: policy_json,
            required_approvals: decision.required_approvals,
            now: *now,
            expires_at: *now + Duration::seconds(state.settings().proposals.ttl_secs as i64),
        }
    }

    /// The `proposal.created` audit entry, once `row` (stored) holds its
    /// final decision, read in the transaction (so a proposal stored in the
    /// same batch counts): a part of a split payment needs the approval the
    /// total would ([`crate::payables::splits`]); a policy approval of a
    /// copy of an invoice another proposal stands for is withheld, for
    /// humans to give ([`crate::intake::duplicates`]).
    async fn withhold_copy(
        &self,
        state: &impl Config,
        tx: &mut crate::store::Conn,
        row: &mut ProposalRow,
    ) -> Result<AuditEntry, ProposeError> {
        let mut data = self.summary.clone();
        let mut decided = self.decision.clone();
        if let Some(raised) = self.split_in(state, tx, row, &decided).await? {
            decided = raised;
        }
        if decided.auto_approver().is_some() {
            let standing = crate::intake::duplicates::standing_in(tx, row).await?;
            if !standing.is_empty() {
                decided = crate::intake::duplicates::for_humans(decided, &standing);
            }
        }
        if decided != self.decision {
            row.policy = decided;
            row.required_approvals = row.policy.required_approvals;
            store::proposals::replace_policy(tx, &row.id, &row.policy).await?;
            data = audit_summary(&self.canonical, &self.run_id, &row.policy);
        }
        Ok(AuditEntry {
            tenant_id: Some(self.agent.tenant_id.clone()),
            actor: self.agent.actor(),
            action: "proposal.created".into(),
            proposal_id: Some(self.id.clone()),
            request_hash: Some(self.hash.to_string()),
            data,
        })
    }

    /// After the row and its entry: the policy's approval when policy
    /// approves it alone, else the announcement to the approvers.
    async fn after_insert(
        &self,
        state: &(impl Store + Config + Keys + crate::decision::approval::receipts::Receipts + crate::notify::Reaching),
        tx: &mut crate::store::Conn,
        mut row: ProposalRow,
    ) -> Result<ProposalRow, ProposeError> {
        let NewProposalJob { agent, canonical, hash, id, now, .. } = self;
        let (id, now) = (id.as_str(), *now);
        row.payee_trusted = self.payee_trusted;
        let decision = &row.policy;
        let Some(approver) = decision.auto_approver() else {
            // Made only when a message will be posted: intake stays lean.
            if state.settings().slack.webhook_for(&agent.tenant_id).is_some() {
                let mut card = crate::notify::slack::outbox::card(
                    state,
                    id,
                    canonical,
                    hash.as_str(),
                    decision.required_approvals,
                );
                card.groups = crate::decision::policy::describe_groups(&decision.groups);
                card.signals = crate::intake::risk::signals(state, &crate::intake::risk::Subject::of(&row)).await?;
                crate::notify::slack::outbox::announce(state, tx, &card, now).await?;
            }
            if crate::notify::teams::posts_for(state, &agent.tenant_id) {
                let mut card =
                    crate::notify::teams::card(state, id, canonical, hash.as_str(), decision.required_approvals);
                card.groups = crate::decision::policy::describe_groups(&decision.groups);
                card.signals = crate::intake::risk::signals(state, &crate::intake::risk::Subject::of(&row)).await?;
                crate::notify::teams::announce(state, tx, &card, None, now).await?;
            }
            crate::notify::announce(state, tx, &row, now).await?;
            return Ok(row);
        };
        let approval = store::proposals::ApprovalRow {
            proposal_id: id.to_owned(),
            round: 1,
            approver_id: approver,
            decision: "approve".into(),
            reason: None,
            via: "policy".into(),
            amr: "policy".into(),
            at: now,
            on_behalf_of: None,
            delegation_id: None,
        };
        store::proposals::insert_approval(tx, &approval).await?;
        crate::decision::approval::grant::grant(state, tx, &row, &[approval], now).await.map_err(|e| match e {
            crate::decision::approval::grant::GrantError::Store(e) => ProposeError::Store(e),
            other => ProposeError::Approval(other.to_string()),
        })?;
        Ok(row)
    }
}

/// What the audit trail keeps of a request: amounts, ids, masked accounts.
fn audit_summary(c: &CanonicalRequest, run_id: &str, decision: &Decision) -> Value {
    json!({
        "run_id": run_id,
        "kind": c.kind,
        "amount_minor": c.amount_minor,
        "currency": c.currency,
        "source_account": c.source_account.masked(),
        "destination": c.destination.id.masked(),
        "purpose_code": c.purpose_code,
        "policy": decision,
    })
}

/// The payee from the tenant's registry, whether it is trusted, and its
/// registry entry (with what a change of bank account left).
async fn resolve_payee(
    state: &impl Store,
    tenant: &str,
    destination: &PayeeId,
) -> Result<(CanonicalPayee, bool, store::directory::PayeeEntry), ProposeError> {
    let payee = store::directory::payee_entry(&state.db().read, tenant, destination.expose())
        .await?
        .ok_or_else(|| ProposeError::UnknownDestination(destination.masked()))?;
    let canonical = CanonicalPayee {
        id: destination.clone(),
        legal_name: payee.legal_name.clone(),
        masked_account: destination.masked(),
    };
    Ok((canonical, payee.trusted, payee))
}

async fn canonical_transfer(
    state: &impl Store,
    agent: &AgentPrincipal,
    t: &TransferRequest,
) -> Result<(CanonicalRequest, bool, Option<store::directory::PayeeEntry>), ProposeError> {
    let (destination, trusted, entry) = resolve_payee(state, &agent.tenant_id, &t.destination).await?;
    let canonical = CanonicalRequest {
        v: CANONICAL_VERSION,
        tenant_id: agent.tenant_id.clone(),
        agent_id: agent.agent_id.clone(),
        kind: ProposalKind::Transfer,
        amount_minor: t.amount.get(),
        currency: t.currency,
        source_account: t.source_account.clone(),
        destination,
        reference: t.reference.clone(),
        purpose_code: t.purpose,
        invoice_id: t.invoice_id.clone(),
        transfer_id: None,
        reason_code: None,
    };
    Ok((canonical, trusted, Some(entry)))
}

/// A reversal restates the succeeded transfer it names: one of this agent's
/// own transfers. Every miss — no such transfer, another agent's, another
/// tenant's, one that has not succeeded — is the same error, so a reversal
/// request tells nothing about other agents' payments.
async fn canonical_reversal(
    state: &impl Store,
    agent: &AgentPrincipal,
    r: &ReversalRequest,
) -> Result<CanonicalRequest, ProposeError> {
    let original = own_succeeded_transfer(state, &agent.tenant_id, &agent.agent_id, r.transfer.as_str())
        .await?
        .ok_or_else(|| {
            ProposeError::Validation(vec![FieldError::new(
                "transfer_id",
                "invalid_value",
                "does not name a succeeded transfer of this agent",
            )])
        })?;
    let base = &original.request;
    let amount = r.amount_minor.unwrap_or(base.amount_minor);
    if amount > base.amount_minor {
        return Err(ProposeError::Validation(vec![FieldError::new(
            "amount_minor",
            "invalid_value",
            "must not exceed the amount of the transfer being reversed",
        )]));
    }
    Ok(CanonicalRequest {
        agent_id: agent.agent_id.clone(),
        kind: ProposalKind::Reversal,
        amount_minor: amount,
        reference: r.reference.clone(),
        transfer_id: Some(r.transfer.clone()),
        reason_code: Some(r.reason),
        ..base.clone()
    })
}

/// The transfer proposal `named` (by its proposal id, or by the rail's
/// transfer id `tr_…` of its operation) if it is `agent`'s own, in `tenant`,
/// and succeeded; `None` for anything else.
pub async fn own_succeeded_transfer(
    state: &impl Store,
    tenant: &str,
    agent: &str,
    named: &str,
) -> crate::store::Result<Option<ProposalRow>> {
    let proposal_id = if named.starts_with("tr_") {
        match store::operations::by_rail_reference(&state.db().read, tenant, named).await? {
            Some(op) if op.kind == ProposalKind::Transfer.as_str() => op.proposal_id,
            _ => return Ok(None),
        }
    } else {
        named.to_owned()
    };
    Ok(store::proposals::get(&state.db().read, tenant, &proposal_id).await?.filter(|p| {
        p.agent_id == agent && p.kind == ProposalKind::Transfer.as_str() && p.status == ProposalStatus::Succeeded
    }))
}

/// The agent withdraws its proposal while it is still waiting or approved.
pub async fn cancel(
    state: &(impl Store + Config + Notifier),
    agent: &AgentPrincipal,
    id: &str,
    now: DateTime<Utc>,
) -> Result<ProposalView, ActionError> {
    use ProposalStatus::*;
    let current = for_agent(state, agent, id).await?;
    let from = [PendingApproval, Approved, ApprovalExpired];
    let mut tx = state.db().begin().await?;
    if !store::proposals::transition(&mut tx, id, &from, Cancelled, now).await? {
        tx.rollback().await?;
        let latest = for_agent(state, agent, id).await?;
        return Err(ActionError::InvalidState(latest.status));
    }
    store::audit::append(
        &mut tx,
        &AuditEntry {
            tenant_id: Some(agent.tenant_id.clone()),
            actor: agent.actor(),
            action: "proposal.cancelled".into(),
            proposal_id: Some(id.to_owned()),
            request_hash: Some(current.request_hash.clone()),
            data: json!({"from": current.status, "to": Cancelled}),
        },
    )
    .await?;
    tx.commit().await?;
    state.changes().publish(id);
    for_agent(state, agent, id).await
}

/// Moves pending proposals past their deadline to `expired`; returns how many.
pub async fn expire_due(state: &(impl Store + Notifier), now: DateTime<Utc>) -> crate::store::Result<usize> {
    use ProposalStatus::*;
    let mut tx = state.db().begin().await?;
    let due = store::proposals::due_for_expiry(&mut tx, now).await?;
    let mut expired = Vec::new();
    for (id, tenant, hash) in due {
        if store::proposals::transition(&mut tx, &id, &[PendingApproval], Expired, now).await? {
            store::audit::append(
                &mut tx,
                &AuditEntry {
                    tenant_id: Some(tenant),
                    actor: "system:expiry".into(),
                    action: "proposal.expired".into(),
                    proposal_id: Some(id.clone()),
                    request_hash: Some(hash),
                    data: json!({"from": PendingApproval, "to": Expired}),
                },
            )
            .await?;
            expired.push(id);
        }
    }
    tx.commit().await?;
    for id in &expired {
        state.changes().publish(id);
    }
    Ok(expired.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::platform::deps::*;

    #[tokio::test]
    async fn a_view_given_every_round_is_the_view_read_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (state, _trigger, agent, users) = crate::platform::demo::loaded_for_test(dir.path()).await;
        let body = json!({"run_id": "rounds", "amount_minor": 25_000, "currency": "USD",
            "source_account": "acct_demo000000001234", "destination": "ba_northwind0007",
            "reference": "Invoice", "purpose_code": "vendor"});
        let Proposed::Created(created) = propose(&state, &agent, &body, state.now()).await.unwrap() else {
            panic!("not created");
        };
        let given = |who: usize, round: i64| store::proposals::ApprovalRow {
            proposal_id: created.id.clone(),
            round,
            approver_id: users[who].id.clone(),
            decision: "approve".into(),
            reason: None,
            via: "console".into(),
            amr: "pwd".into(),
            at: state.now(),
            on_behalf_of: None,
            delegation_id: None,
        };
        let compare = |label: &'static str| {
            let state = state.clone();
            let id = created.id.clone();
            async move {
                let row = store::proposals::get(&state.db().read, "demo", &id).await.unwrap().unwrap();
                let every = store::proposals::approvals_all_rounds(&state.db().read, &id).await.unwrap();
                let given = view_given_rounds(&state, row.clone(), &every).await.unwrap();
                let alone = views(&state, vec![row]).await.unwrap().pop().unwrap();
                assert_eq!(serde_json::to_value(&given).unwrap(), serde_json::to_value(&alone).unwrap(), "{label}");
                (every.len(), given.approvals.len())
            }
        };
        assert_eq!(compare("no approval").await, (0, 0));
        let mut tx = state.db().begin().await.unwrap();
        store::proposals::insert_approval(&mut tx, &given(0, 1)).await.unwrap();
        store::proposals::next_round(&mut tx, &created.id).await.unwrap();
        store::proposals::insert_approval(&mut tx, &given(1, 2)).await.unwrap();
        tx.commit().await.unwrap();
        assert_eq!(compare("an earlier round's approval left out").await, (2, 1));
    }
}
