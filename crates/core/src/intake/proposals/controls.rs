//! The accounts-payable controls at intake, beside policy
//! (`crate::payables`, docs/PAYABLES.md): the invoice and bank-account
//! checks after policy's decision, and a split payment raised to the
//! approval its total needs.

use super::*;

/// The enforced policy's decision for a canonical request, with the
/// tenant's group rule (what split payments ask of a total; no risk
/// signals: those are the proposal's own).
pub fn evaluate(state: &impl Config, agent: &AgentPrincipal, canonical: &CanonicalRequest, trusted: bool) -> Decision {
    let settings = state.settings();
    let policies = settings.policies.for_tenant(&agent.tenant_id);
    let input = PolicyInput::of("", canonical, trusted, &agent.scope, &[]);
    let decision = policies.enforced.evaluate(&settings.policy, &input);
    settings.with_group_rule(&agent.tenant_id, canonical.currency, canonical.amount_minor, decision)
}

/// [`payables_at_intake`] for a transfer to a registered payee whose
/// decision is not already a refusal.
pub(super) async fn payables_after_policy(
    state: &(impl Store + Config),
    canonical: &CanonicalRequest,
    payee: Option<&store::directory::PayeeEntry>,
    decision: Decision,
) -> Result<Decision, ProposeError> {
    match payee {
        Some(payee) if decision.outcome != Outcome::Denied => {
            payables_at_intake(state, canonical, payee, decision).await
        }
        _ => Ok(decision),
    }
}

/// The accounts-payable checks of a transfer at intake (`crate::payables`),
/// after policy: a replaced account and an invoice that does not match are
/// refused; the first payment after a change of bank account needs more
/// approvals.
pub async fn payables_at_intake(
    state: &(impl Store + Config),
    canonical: &CanonicalRequest,
    payee: &store::directory::PayeeEntry,
    decision: Decision,
) -> Result<Decision, ProposeError> {
    use crate::payables::{account_change, invoices};
    if let Some(refused) = account_change::replaced(payee) {
        return Ok(refused);
    }
    if let Some(refused) = invoices::at_intake(state, canonical).await? {
        return Ok(refused);
    }
    if payee.account_changed_at.is_some() {
        let paid_since = account_change::paid_since_change(state, payee).await?;
        return Ok(account_change::first_payment(state, payee, paid_since, decision));
    }
    Ok(decision)
}

impl NewProposalJob {
    /// `decided` raised to the approval the total of a split payment needs,
    /// when this transfer and the others to its payee within
    /// `payables.split_window_secs` cross a threshold it alone does not.
    pub(super) async fn split_in(
        &self,
        state: &impl Config,
        tx: &mut crate::store::Conn,
        row: &ProposalRow,
        decided: &Decision,
    ) -> Result<Option<Decision>, ProposeError> {
        use crate::payables::splits;
        let window = state.settings().payables.split_window_secs;
        let Some(since) = splits::window_start(window, self.now) else { return Ok(None) };
        if self.canonical.kind != ProposalKind::Transfer || decided.outcome == Outcome::Denied {
            return Ok(None);
        }
        let c = &self.canonical;
        let others = store::risk::same_payee_since_in(
            tx,
            &self.agent.tenant_id,
            c.destination.id.expose(),
            c.currency.code(),
            since,
            &row.id,
        )
        .await?;
        if others.is_empty() {
            return Ok(None);
        }
        let total = splits::total(c.amount_minor, &others);
        let whole = CanonicalRequest { amount_minor: total, ..c.clone() };
        let for_total = evaluate(state, &self.agent, &whole, self.payee_trusted);
        Ok(splits::raise(decided, &for_total, &others, c.currency, total, window))
    }
}
