//! What people read for the audit trail and approval records: one place for
//! each wording, so no internal code (`proposal.approval_given`,
//! `system:expiry`) reaches a screen.

use crate::status::OpStatus;

/// A proposal's audit action as a sentence fragment ("Approval given").
/// Unknown actions are turned into words rather than shown raw.
pub fn audit_action(action: &str) -> String {
    let fixed = match action {
        "proposal.created" => "Proposed",
        "proposal.denied" => "Denied by policy",
        "proposal.approval_given" => "Approval given",
        "proposal.approved" => "Approved: the agent may pay",
        "proposal.rejected" => "Rejected",
        "proposal.cancelled" => "Cancelled by the agent",
        "proposal.expired" => "Expired without a decision",
        "proposal.approval_expired" => "The approval expired before the agent paid",
        "proposal.reversed" => "Payment reversed",
        "operation.created" => "Payment sent to the bank",
        _ => "",
    };
    if !fixed.is_empty() {
        return fixed.to_owned();
    }
    if let Some(op) = action.strip_prefix("operation.").and_then(OpStatus::parse) {
        return format!("Payment: {}", op.label().to_lowercase());
    }
    humanize(action)
}

/// Who did it, as a person reads it: a user's name, the agent, or the
/// part of Countersign that acted. `name_of` turns a user id into a name.
pub fn audit_actor(actor: &str, name_of: impl Fn(&str) -> String) -> String {
    match actor.split_once(':') {
        // An automatic approval is recorded as given by `policy:<rule>`.
        Some(("user", id)) if id.starts_with("policy:") => "The policy".into(),
        Some(("user", id)) => name_of(id),
        Some(("agent", id)) => format!("agent {id}"),
        Some(("policy", _)) => "the policy".into(),
        Some(("system", "expiry")) => "Countersign (expiry)".into(),
        Some(("system", "rail")) => "the bank's answer".into(),
        Some(("system", "reconcile")) => "Countersign (reconciliation)".into(),
        Some(("system", _)) => "Countersign".into(),
        _ => actor.to_owned(),
    }
}

/// An approval record's decision, past tense ("approved").
pub fn decision(decision: &str) -> String {
    match decision {
        "approve" | "approved" => "approved".into(),
        "reject" | "rejected" => "rejected".into(),
        other => humanize(other),
    }
}

/// Where an approval was given ("in the console").
pub fn channel(via: &str) -> String {
    match via {
        "console" | "pwd" => "in the console".into(),
        "slack" => "in Slack".into(),
        "teams" => "in Microsoft Teams".into(),
        "api" => "through the API".into(),
        "policy" => "automatically".into(),
        other => format!("via {}", humanize(other)),
    }
}

/// The policy's outcome as a heading.
pub fn policy_outcome(outcome: &str) -> String {
    match outcome {
        "auto_approved" => "Approved automatically".into(),
        "needs_approval" => "Needs approval".into(),
        "denied" => "Denied".into(),
        other => humanize(other),
    }
}

/// Last resort for a code without a wording: `a.b_c` becomes "A b c".
fn humanize(code: &str) -> String {
    let spaced: String = code.chars().map(|c| if c == '_' || c == '.' || c == ':' { ' ' } else { c }).collect();
    let mut chars = spaced.trim().chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_code_survives() {
        for action in [
            "proposal.created",
            "proposal.approval_given",
            "proposal.approval_expired",
            "operation.needs_review",
            "operation.too_late",
            "registry.user.slack_linked",
        ] {
            let words = audit_action(action);
            assert!(!words.contains('_') && !words.contains('.'), "{action}: {words}");
        }
        assert_eq!(audit_action("operation.unknown"), "Payment: checking with the bank");
        assert_eq!(audit_actor("user:u_1", |_| "ana".into()), "ana");
        assert_eq!(audit_actor("system:expiry", |_| unreachable!()), "Countersign (expiry)");
        assert_eq!(audit_actor("user:policy:auto_approve_trusted_payee", |_| unreachable!()), "The policy");
        assert_eq!(decision("approve"), "approved");
        assert_eq!(policy_outcome("needs_approval"), "Needs approval");
        assert_eq!(humanize("single_approval"), "Single approval");
    }
}
