//! The TOML rules (`[policy]`) written as the Cedar policy that decides the
//! same (`countersign policy to-cedar`): the same outcome, required
//! approvals, rule names and messages for every proposal (the property
//! test in `cedar/tests.rs`). A tenant moves to Cedar by saving this text,
//! editing it, backtesting it and naming it (docs/POLICY.md).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::{PolicyConfig, RULE_AUTO_APPROVE};
use crate::domain::Currency;

/// The Cedar text of `config`'s rules. Thresholds of currencies that are
/// not ISO 4217 codes are left out (config validation refuses them anyway).
pub fn to_cedar(config: &PolicyConfig) -> String {
    let mut out = String::new();
    out.push_str(
        "// Countersign payment policy, converted from the TOML rules ([policy]).\n\
         // Schema: policies/countersign.cedarschema. Each policy's @id names its rule in\n\
         // every decision, its @reason is the message ({amount} and the like are filled in).\n\n",
    );
    out.push_str(
        "// Scope: an agent proposes only from its own source accounts, for its own purposes.\n\
         @id(\"scope\")\n\
         permit (principal, action == Countersign::Action::\"propose\", resource);\n\n\
         @id(\"source_account_not_allowed\")\n\
         @reason(\"Source account {source_account} is not configured for agent {agent}.\")\n\
         forbid (principal, action == Countersign::Action::\"propose\", resource)\n\
         unless { principal.source_accounts.contains(resource.source_account) };\n\n\
         @id(\"purpose_not_allowed\")\n\
         @reason(\"Purpose `{purpose}` is not allowed for agent {agent}.\")\n\
         forbid (principal, action == Countersign::Action::\"propose\", resource)\n\
         unless { principal.purposes.contains(resource.purpose) };\n\n\
         // Manual review: reversals always, refunds from a threshold.\n\
         @id(\"reversal_manual_review\")\n\
         @reason(\"Reversals always need a human approval.\")\n\
         permit (principal, action == Countersign::Action::\"manual_review\", resource)\n\
         when { resource.kind == \"reversal\" };\n",
    );
    for (currency, at) in thresholds(&config.refund_review_at_minor) {
        let _ = write!(
            out,
            "\n@id(\"refund_manual_review\")\n\
             @reason(\"Refund of {{amount}} is at or above {}: manual review required.\")\n\
             permit (principal, action == Countersign::Action::\"manual_review\", resource)\n\
             when {{ resource.purpose == \"refund\" && resource.currency == \"{}\" && resource.amount_minor >= {at} }};\n",
            currency.format_minor(at),
            currency.code()
        );
    }
    out.push_str("\n// Two distinct approvers from a threshold.\n");
    for (currency, at) in thresholds(&config.dual_approval_at_minor) {
        let _ = write!(
            out,
            "@id(\"dual_approval\")\n\
             @reason(\"{{amount}} is at or above {}: two distinct approvers required.\")\n\
             permit (principal, action == Countersign::Action::\"dual_approval\", resource)\n\
             when {{ resource.currency == \"{}\" && resource.amount_minor >= {at} }};\n\n",
            currency.format_minor(at),
            currency.code()
        );
    }
    out.push_str("// Approval by policy alone: small payments to trusted payees.\n");
    for (currency, below) in thresholds(&config.auto_approve_below_minor) {
        let _ = write!(
            out,
            "@id(\"{RULE_AUTO_APPROVE}\")\n\
             @reason(\"{{amount}} to a trusted payee is below {}: approved by policy.\")\n\
             permit (principal, action == Countersign::Action::\"auto_approve\", resource)\n\
             when {{ resource.payee.trusted && resource.currency == \"{}\" && resource.amount_minor < {below} }};\n\n",
            currency.format_minor(below),
            currency.code()
        );
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// A per-currency map's entries whose currency is an ISO 4217 code; amounts
/// above what Cedar's 64-bit integers hold cannot be reached by any payment
/// and are written as the largest one.
fn thresholds(map: &BTreeMap<String, u64>) -> Vec<(Currency, u64)> {
    map.iter().filter_map(|(code, v)| Currency::parse(code).ok().map(|c| (c, (*v).min(i64::MAX as u64)))).collect()
}
