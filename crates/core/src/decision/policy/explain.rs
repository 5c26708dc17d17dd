//! `countersign policy explain`: which rules apply to a
//! sample request, without storing or auditing anything — the policy
//! decision and its reasons, the approval groups it needs and who is in
//! them, the escalation rule, and who could approve it now.

use chrono::{DateTime, Utc};
use serde_json::Value;
use std::fmt::Write as _;

use crate::config::Config;
use crate::decision::approval::approve::Approvable;
use crate::decision::eligibility::Tenancy;
use crate::decision::policy::Outcome;
use crate::domain::ProposalStatus;
use crate::intake::proposals::{assess, ProposeError};
use crate::people::actors::AgentPrincipal;
use crate::store::{self, Store};

#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    #[error("no agent `{agent}` in tenant `{tenant}`")]
    NoAgent { tenant: String, agent: String },
    #[error("the request is invalid: {0}")]
    Invalid(String),
    #[error("destination {0} is not in the payee registry")]
    UnknownDestination(String),
    #[error(transparent)]
    Store(#[from] store::StoreError),
}

/// The explanation, as text for a terminal.
pub async fn explain(
    state: &(impl Store + Config + crate::platform::clock::Clock),
    tenant: &str,
    agent_id: &str,
    body: &Value,
    now: DateTime<Utc>,
) -> Result<String, ExplainError> {
    let agent = store::directory::agent(&mut *state.db().reader().await?, tenant, agent_id)
        .await?
        .ok_or_else(|| ExplainError::NoAgent { tenant: tenant.into(), agent: agent_id.into() })?;
    let principal = AgentPrincipal::from(agent);
    let assessed = assess(state, &principal, body, now).await.map_err(|e| match e {
        ProposeError::Validation(errors) => ExplainError::Invalid(
            errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect::<Vec<_>>().join("; "),
        ),
        ProposeError::UnknownDestination(d) => ExplainError::UnknownDestination(d),
        ProposeError::Store(e) => ExplainError::Store(e),
        other => ExplainError::Invalid(other.to_string()),
    })?;
    let c = &assessed.canonical;
    let d = &assessed.decision;
    let settings = state.settings();
    let tenancy = Tenancy::load(state, tenant).await?;
    let mut out = String::new();
    let line = |out: &mut String, text: String| {
        let _ = writeln!(out, "{text}");
    };
    line(&mut out, format!("Request:   {} (agent {agent_id}, tenant {tenant})", c.sentence()));
    line(&mut out, format!("Hash:      {}", assessed.hash));
    let outcome = match d.outcome {
        Outcome::AutoApproved => "approved by policy alone".to_owned(),
        Outcome::Denied => "denied".to_owned(),
        Outcome::NeedsApproval if d.required_approvals <= 1 => "needs 1 human approval".to_owned(),
        Outcome::NeedsApproval => format!("needs {} human approvals from different people", d.required_approvals),
    };
    line(&mut out, format!("Policy:    {outcome}"));
    for r in &d.reasons {
        line(&mut out, format!("  - {}: {}", r.rule, r.message));
    }
    // Who may approve it at all (role, limit, segregation), groups aside.
    let plain = Approvable {
        status: ProposalStatus::PendingApproval,
        agent_id,
        currency: c.currency,
        amount_minor: c.amount_minor,
        groups: &[],
        required: d.required_approvals,
    };
    let able = tenancy.eligible(&plain, &Default::default());
    if d.groups.is_empty() {
        line(&mut out, "Groups:    no group rule covers it".into());
    } else {
        line(&mut out, "Groups:    (each person counts for one group)".into());
        for need in &d.groups {
            let members = settings.approval_group(tenant, &need.group).unwrap_or_default();
            let can = members.iter().filter(|m| able.contains(&m.as_str())).count();
            let warning = if can < usize::from(need.count) {
                format!(" — only {can} of them may approve this payment: it could never be approved")
            } else {
                String::new()
            };
            line(&mut out, format!("  - {} from {}: {}{warning}", need.count, need.group, members.join(", ")));
        }
    }
    let rules = settings.tenants.get(tenant).map(|t| t.escalation.as_slice()).unwrap_or_default();
    let expires = now + chrono::Duration::seconds(settings.proposals.ttl_secs as i64);
    match (d.outcome, crate::config::escalation::rule_for(rules, c.currency.code(), c.amount_minor)) {
        (Outcome::NeedsApproval, Some(rule)) => {
            let plan = rule.plan(now, expires);
            let after = |at: Option<DateTime<Utc>>| at.map(|t| crate::notify::message::remaining(t, now));
            let mut steps = Vec::new();
            if let Some(remind) = after(plan.remind_at) {
                steps.push(format!("remind the approvers after {remind}"));
            }
            if let (Some(escalate), Some(group)) = (after(plan.escalate_at), &plan.escalate_to) {
                steps.push(format!("escalate to {group} after {escalate}"));
            }
            let band = match &rule.currency {
                Some(code) => format!("{code} from {}", rule.from_minor),
                None => "any currency".into(),
            };
            line(&mut out, format!("Escalation: {} (rule for {band}); never approves", steps.join(", then ")));
        }
        (Outcome::NeedsApproval, None) => line(&mut out, "Escalation: no rule covers it".into()),
        _ => {}
    }
    if d.outcome == Outcome::NeedsApproval {
        line(&mut out, format!("Expires:   after {} undecided", crate::notify::message::remaining(expires, now)));
        let row = Approvable {
            status: ProposalStatus::PendingApproval,
            agent_id,
            currency: c.currency,
            amount_minor: c.amount_minor,
            groups: &d.groups,
            required: d.required_approvals,
        };
        let eligible = tenancy.eligible(&row, &Default::default());
        let who = if eligible.is_empty() {
            "nobody: no approver's role and limit cover it".into()
        } else {
            eligible.join(", ")
        };
        line(&mut out, format!("First approval could come from: {who}"));
    }
    Ok(out)
}
