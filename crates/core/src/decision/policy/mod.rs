//! Policy: rules as data (the `[policy]` section of the config), evaluated in
//! code. Every decision lists the rules that fired with a human-readable
//! reason. The hard cap per currency is not here: it is part of parsing
//! (`domain::request`), before anything else.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::domain::{Currency, ProposalKind, PurposeCode, SourceAccount};

pub mod backtest;
pub mod cedar;
pub mod convert;
mod engine;
pub mod examples;
pub mod explain;
pub use engine::{
    short, Confirmed, Engine, PolicyBook, PolicyError, TenantPolicy, MODE_ENFORCE, MODE_OBSERVE, REFRESH_EVERY,
};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyConfig {
    /// Transfers strictly below this amount to a `trusted` payee are approved
    /// by policy alone. A currency not listed never auto-approves.
    pub auto_approve_below_minor: BTreeMap<String, u64>,
    /// Transfers at or above this amount need two distinct approvers.
    pub dual_approval_at_minor: BTreeMap<String, u64>,
    /// Refunds at or above this amount always need manual review.
    pub refund_review_at_minor: BTreeMap<String, u64>,
    /// Approving at or above this amount needs a passkey assertion over the
    /// payment (step-up), for everyone (without a passkey: register one
    /// first). A currency not listed: whoever holds a passkey steps up from
    /// the dual-approval amount (`dual_approval_at_minor`), and nobody with
    /// neither. 0 makes every approval step up.
    pub step_up_at_minor: BTreeMap<String, u64>,
    /// Commit refuses an approval token at or above this amount unless every
    /// approver gave their approval with a passkey (`amr` is `passkey`
    /// only). A currency not listed: no such requirement.
    pub commit_requires_passkey_at_minor: BTreeMap<String, u64>,
}

fn per_currency(entries: &[(&str, u64)]) -> BTreeMap<String, u64> {
    entries.iter().map(|(c, v)| (c.to_string(), *v)).collect()
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            // 100.00 in the two-decimal currencies, about the same in JPY and VND.
            auto_approve_below_minor: per_currency(&[
                ("USD", 10_000),
                ("EUR", 10_000),
                ("GBP", 10_000),
                ("JPY", 15_000),
                ("VND", 2_500_000),
            ]),
            // 10,000.00 and equivalents.
            dual_approval_at_minor: per_currency(&[
                ("USD", 1_000_000),
                ("EUR", 1_000_000),
                ("GBP", 1_000_000),
                ("JPY", 1_500_000),
                ("VND", 250_000_000),
            ]),
            // 99,000.00 and equivalents.
            refund_review_at_minor: per_currency(&[
                ("USD", 9_900_000),
                ("EUR", 9_900_000),
                ("GBP", 9_900_000),
                ("JPY", 15_000_000),
                ("VND", 2_500_000_000),
            ]),
            step_up_at_minor: BTreeMap::new(),
            commit_requires_passkey_at_minor: BTreeMap::new(),
        }
    }
}

impl PolicyConfig {
    /// Checks every currency named is an upper-case ISO 4217 code. Thresholds
    /// for currencies the deployment does not accept are simply never used.
    pub fn validate(&self) -> Result<(), (String, String)> {
        for (name, map) in [
            ("auto_approve_below_minor", &self.auto_approve_below_minor),
            ("dual_approval_at_minor", &self.dual_approval_at_minor),
            ("refund_review_at_minor", &self.refund_review_at_minor),
            ("step_up_at_minor", &self.step_up_at_minor),
            ("commit_requires_passkey_at_minor", &self.commit_requires_passkey_at_minor),
        ] {
            for code in map.keys() {
                if Currency::parse(code).map(|c| c.code() != code).unwrap_or(true) {
                    return Err((format!("{name}.{code}"), "is not an upper-case ISO 4217 code".into()));
                }
            }
        }
        Ok(())
    }

    /// The step-up threshold for `currency`, if one is configured.
    pub fn step_up_at(&self, currency: Currency) -> Option<u64> {
        Self::threshold(&self.step_up_at_minor, currency)
    }

    /// Without a configured step-up threshold: the amount from which those
    /// who hold a passkey step up — the dual-approval one. A passkey
    /// registered on one device then does not stop a small approval from
    /// another.
    pub fn holders_step_up_at(&self, currency: Currency) -> Option<u64> {
        match self.step_up_at(currency) {
            Some(_) => None,
            None => Self::threshold(&self.dual_approval_at_minor, currency),
        }
    }

    /// Whether commit needs every approval given with a passkey for this amount.
    pub fn commit_requires_passkey(&self, currency: Currency, amount_minor: u64) -> bool {
        Self::threshold(&self.commit_requires_passkey_at_minor, currency).is_some_and(|at| amount_minor >= at)
    }

    fn threshold(map: &BTreeMap<String, u64>, currency: Currency) -> Option<u64> {
        map.get(currency.code()).copied()
    }
}

/// What an agent is allowed to do, from its registry entry.
#[derive(Debug, Clone)]
pub struct AgentScope {
    pub agent_id: String,
    pub source_accounts: Vec<String>,
    pub purposes: Vec<PurposeCode>,
}

/// The facts a decision is made on.
#[derive(Debug, Clone)]
pub struct PolicyInput<'a> {
    pub tenant_id: &'a str,
    /// The proposal's id (the Cedar resource); any id for a proposal not made yet.
    pub proposal_id: &'a str,
    pub kind: ProposalKind,
    pub amount_minor: u64,
    pub currency: Currency,
    pub purpose: PurposeCode,
    pub source_account: &'a SourceAccount,
    pub payee_id: &'a str,
    pub payee_trusted: bool,
    pub invoice_id: Option<&'a str>,
    pub agent: &'a AgentScope,
    /// The risk signals' codes (`crate::intake::risk`), where they were computed.
    pub risk_signals: &'a [&'static str],
}

impl<'a> PolicyInput<'a> {
    /// The facts of a canonical request: a reversal never goes to a
    /// trusted payee.
    pub fn of(
        id: &'a str,
        canonical: &'a crate::domain::CanonicalRequest,
        payee_trusted: bool,
        agent: &'a AgentScope,
        risk_signals: &'a [&'static str],
    ) -> PolicyInput<'a> {
        PolicyInput {
            tenant_id: &canonical.tenant_id,
            proposal_id: id,
            kind: canonical.kind,
            amount_minor: canonical.amount_minor,
            currency: canonical.currency,
            purpose: canonical.purpose_code,
            source_account: &canonical.source_account,
            payee_id: canonical.destination.id.expose(),
            payee_trusted: payee_trusted && canonical.kind == ProposalKind::Transfer,
            invoice_id: canonical.invoice_id.as_ref().map(|i| i.as_str()),
            agent,
            risk_signals,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = PolicyOutcome)]
pub enum Outcome {
    AutoApproved,
    NeedsApproval,
    Denied,
}

/// One policy rule that fired, with a human-readable reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = PolicyReason)]
pub struct Reason {
    #[schema(examples("dual_approval"))]
    pub rule: String,
    pub message: String,
}

/// The policy decision and every rule that fired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = PolicyDecision)]
pub struct Decision {
    pub outcome: Outcome,
    /// Policy asks 1 or 2; one more with `risk.extra_approval` and a risk
    /// signal; one more again once an approver confirmed a payment whose
    /// invoice is already approved or paid is not a duplicate (rule
    /// `duplicate_invoice`).
    #[schema(maximum = 12)]
    pub required_approvals: u8,
    pub reasons: Vec<Reason>,
    /// Approvals required from named approval groups (the tenant's
    /// `group_approval` rule): each approver counts for one group at most.
    /// Absent when no group rule applies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupNeed>,
}

/// So many approvals from the members of an approval group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupNeed {
    /// A group of the tenant (`tenants.<id>.approval_groups`).
    #[schema(examples("treasury"))]
    pub group: String,
    #[schema(minimum = 1, maximum = 10)]
    pub count: u8,
}

/// "1 from treasury and 2 from directors".
pub fn describe_groups(needs: &[GroupNeed]) -> String {
    let parts: Vec<String> = needs.iter().map(|n| format!("{} from {}", n.count, n.group)).collect();
    match parts.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// `decision` with the tenant's group rule applied (`needs`, from the rule
/// that covers the payment): a human approval is needed (never approved by
/// policy alone), as many approvals as the groups ask at least, and the
/// reason. A denial stays a denial.
pub fn with_groups(mut decision: Decision, needs: &[GroupNeed], amount: &str) -> Decision {
    if needs.is_empty() || decision.outcome == Outcome::Denied {
        return decision;
    }
    if decision.outcome == Outcome::AutoApproved {
        decision.outcome = Outcome::NeedsApproval;
        decision.reasons.retain(|r| r.rule != RULE_AUTO_APPROVE);
    }
    decision.reasons.retain(|r| r.rule != "single_approval");
    let sum: u32 = needs.iter().map(|n| u32::from(n.count)).sum();
    decision.required_approvals = decision.required_approvals.max(u8::try_from(sum).unwrap_or(u8::MAX)).max(1);
    decision.reasons.push(Reason {
        rule: RULE_GROUPS.into(),
        message: format!("{amount} needs approvals from named groups: {}.", describe_groups(needs)),
    });
    decision.groups = needs.to_vec();
    decision
}

pub const RULE_GROUPS: &str = "group_approval";

/// What each group still lacks, given the people who approved (each counts
/// for one group at most, matched so that as many needs as possible are
/// met: a maximum bipartite matching). `member(group, approver)`.
pub fn unmet(needs: &[GroupNeed], approvers: &[&str], member: impl Fn(&str, &str) -> bool) -> Vec<GroupNeed> {
    // One slot per approval a group needs.
    let slots: Vec<usize> =
        needs.iter().enumerate().flat_map(|(i, n)| std::iter::repeat_n(i, n.count.into())).collect();
    let mut holder: Vec<Option<usize>> = vec![None; slots.len()];
    fn place(
        a: usize,
        slots: &[usize],
        holder: &mut [Option<usize>],
        seen: &mut [bool],
        fits: &dyn Fn(usize, usize) -> bool,
    ) -> bool {
        for s in 0..slots.len() {
            if seen[s] || !fits(a, slots[s]) {
                continue;
            }
            seen[s] = true;
            if holder[s].is_none_or(|b| place(b, slots, holder, seen, fits)) {
                holder[s] = Some(a);
                return true;
            }
        }
        false
    }
    let fits = |a: usize, need: usize| member(&needs[need].group, approvers[a]);
    for a in 0..approvers.len() {
        let mut seen = vec![false; slots.len()];
        place(a, &slots, &mut holder, &mut seen, &fits);
    }
    needs
        .iter()
        .enumerate()
        .filter_map(|(i, n)| {
            let filled = slots.iter().zip(&holder).filter(|(need, h)| **need == i && h.is_some()).count();
            let left = usize::from(n.count).saturating_sub(filled);
            (left > 0).then(|| GroupNeed { group: n.group.clone(), count: u8::try_from(left).unwrap_or(u8::MAX) })
        })
        .collect()
}

/// Whether one more approval by `candidate` would help: it fills a group
/// still short, or every group is met and plain approvals are still
/// missing (`required` in all). Else the names of the groups still short.
pub fn helps(
    needs: &[GroupNeed],
    required: u8,
    approvers: &[&str],
    candidate: &str,
    member: impl Fn(&str, &str) -> bool + Copy,
) -> Result<(), Vec<String>> {
    let short = unmet(needs, approvers, member);
    let short_total: usize = short.iter().map(|n| usize::from(n.count)).sum();
    let mut with: Vec<&str> = approvers.to_vec();
    with.push(candidate);
    let after: usize = unmet(needs, &with, member).iter().map(|n| usize::from(n.count)).sum();
    let plain_left = usize::from(required).saturating_sub(approvers.len()).saturating_sub(short_total);
    if after < short_total || plain_left > 0 {
        Ok(())
    } else {
        Err(short.into_iter().map(|n| n.group).collect())
    }
}

pub const RULE_AUTO_APPROVE: &str = "auto_approve_trusted_payee";

impl Decision {
    /// A refusal by one rule (checks made outside `evaluate`: limits,
    /// segregation of duties, budgets).
    pub fn denied_by(rule: &str, message: String) -> Decision {
        Decision {
            outcome: Outcome::Denied,
            required_approvals: 0,
            reasons: vec![Reason { rule: rule.into(), message }],
            groups: Vec::new(),
        }
    }

    /// The rule id an auto-approval is attributed to (`policy:<rule>`):
    /// the rule that approved, listed last (`auto_approve_trusted_payee`
    /// under the TOML rules, the approving policy's `@id` under Cedar).
    pub fn auto_approver(&self) -> Option<String> {
        (self.outcome == Outcome::AutoApproved)
            .then(|| format!("policy:{}", self.reasons.last().map_or(RULE_AUTO_APPROVE, |r| r.rule.as_str())))
    }
}

/// Evaluates the policy. Pure: the same input always gives the same decision.
pub fn evaluate(config: &PolicyConfig, input: &PolicyInput<'_>) -> Decision {
    let mut reasons = Vec::new();
    let mut reason = |rule: &str, message: String| reasons.push(Reason { rule: rule.into(), message });
    let amount = input.currency.format_minor(input.amount_minor);

    let mut denied = false;
    if !input.agent.source_accounts.iter().any(|a| a == input.source_account.expose()) {
        denied = true;
        reason(
            "source_account_not_allowed",
            format!("Source account {} is not configured for agent {}.", input.source_account, input.agent.agent_id),
        );
    }
    if !input.agent.purposes.contains(&input.purpose) {
        denied = true;
        reason(
            "purpose_not_allowed",
            format!("Purpose `{}` is not allowed for agent {}.", input.purpose, input.agent.agent_id),
        );
    }
    if denied {
        return Decision { outcome: Outcome::Denied, required_approvals: 0, reasons, groups: Vec::new() };
    }

    let mut manual_only = false;
    if input.kind == ProposalKind::Reversal {
        manual_only = true;
        reason("reversal_manual_review", "Reversals always need a human approval.".into());
    }
    if input.purpose == PurposeCode::Refund {
        if let Some(t) = PolicyConfig::threshold(&config.refund_review_at_minor, input.currency) {
            if input.amount_minor >= t {
                manual_only = true;
                reason(
                    "refund_manual_review",
                    format!(
                        "Refund of {amount} is at or above {}: manual review required.",
                        input.currency.format_minor(t)
                    ),
                );
            }
        }
    }
    let mut required = 1;
    if let Some(t) = PolicyConfig::threshold(&config.dual_approval_at_minor, input.currency) {
        if input.amount_minor >= t {
            required = 2;
            reason(
                "dual_approval",
                format!("{amount} is at or above {}: two distinct approvers required.", input.currency.format_minor(t)),
            );
        }
    }
    if !manual_only && required == 1 && input.payee_trusted {
        if let Some(t) = PolicyConfig::threshold(&config.auto_approve_below_minor, input.currency) {
            if input.amount_minor < t {
                reason(
                    RULE_AUTO_APPROVE,
                    format!(
                        "{amount} to a trusted payee is below {}: approved by policy.",
                        input.currency.format_minor(t)
                    ),
                );
                return Decision { outcome: Outcome::AutoApproved, required_approvals: 0, reasons, groups: Vec::new() };
            }
        }
    }
    if required == 1 {
        reason("single_approval", format!("{amount} needs one human approval."));
    }
    Decision { outcome: Outcome::NeedsApproval, required_approvals: required, reasons, groups: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn need(group: &str, count: u8) -> GroupNeed {
        GroupNeed { group: group.into(), count }
    }

    /// treasury: ana, ben; controllers: ben, carol; directors: ana, ben, carol.
    fn member(group: &str, who: &str) -> bool {
        match group {
            "treasury" => ["ana", "ben"].contains(&who),
            "controllers" => ["ben", "carol"].contains(&who),
            "directors" => ["ana", "ben", "carol"].contains(&who),
            _ => false,
        }
    }

    #[test]
    fn groups_are_met_by_distinct_people_matched_at_best() {
        let both = [need("treasury", 1), need("controllers", 1)];
        assert_eq!(unmet(&both, &[], member), both.to_vec());
        // ben is in both groups but counts once.
        assert_eq!(unmet(&both, &["ben"], member).len(), 1);
        // Given ben first then ana, the matching moves ben to controllers.
        assert_eq!(unmet(&both, &["ben", "ana"], member), vec![]);
        assert_eq!(unmet(&both, &["ana", "dan"], member), vec![need("controllers", 1)]);
        let two_directors = [need("directors", 2)];
        assert_eq!(unmet(&two_directors, &["ana"], member), vec![need("directors", 1)]);
        assert_eq!(unmet(&two_directors, &["ana", "carol"], member), vec![]);
    }

    #[test]
    fn an_approval_that_helps_no_group_is_refused_while_groups_are_short() {
        let both = [need("treasury", 1), need("controllers", 1)];
        // Two in all: after ana, only a controller helps.
        assert_eq!(helps(&both, 2, &["ana"], "carol", member), Ok(()));
        assert_eq!(helps(&both, 2, &["ana"], "dan", member), Err(vec!["controllers".to_owned()]));
        assert_eq!(helps(&both, 2, &["ana"], "ben", member), Ok(()), "ben can be the controller");
        // Three in all (dual approval on top): dan may give the third.
        assert_eq!(helps(&both, 3, &["ana", "carol"], "dan", member), Ok(()));
        assert_eq!(helps(&both, 3, &["ana"], "dan", member), Ok(()), "a plain approval is still missing");
    }

    #[test]
    fn a_group_rule_needs_humans_and_enough_approvals() {
        let auto = Decision {
            outcome: Outcome::AutoApproved,
            required_approvals: 0,
            reasons: vec![Reason { rule: RULE_AUTO_APPROVE.into(), message: "x".into() }],
            groups: Vec::new(),
        };
        let d = with_groups(auto, &[need("treasury", 1), need("controllers", 1)], "50.00 USD");
        assert_eq!((d.outcome, d.required_approvals), (Outcome::NeedsApproval, 2));
        assert_eq!(d.reasons.len(), 1);
        assert_eq!(
            d.reasons[0].message,
            "50.00 USD needs approvals from named groups: 1 from treasury and 1 from controllers."
        );
        let denied = Decision::denied_by("x", "no".into());
        assert_eq!(with_groups(denied.clone(), &[need("treasury", 1)], "1"), denied);
        let serialized = serde_json::to_value(with_groups(decide_usd(25_000), &[], "")).unwrap();
        assert!(serialized.get("groups").is_none(), "absent without a rule: {serialized}");
    }

    fn decide_usd(amount: u64) -> Decision {
        decide(amount, PurposeCode::Vendor, false, "acct_0123456789abcdef")
    }

    fn scope() -> AgentScope {
        AgentScope {
            agent_id: "payout-bot".into(),
            source_accounts: vec!["acct_0123456789abcdef".into()],
            purposes: vec![PurposeCode::Vendor, PurposeCode::Refund],
        }
    }

    fn decide(amount: u64, purpose: PurposeCode, trusted: bool, source: &str) -> Decision {
        let agent = scope();
        let source = SourceAccount::parse(source).unwrap();
        evaluate(
            &PolicyConfig::default(),
            &PolicyInput {
                tenant_id: "acme",
                proposal_id: "prop_1",
                kind: ProposalKind::Transfer,
                amount_minor: amount,
                currency: Currency::parse("USD").unwrap(),
                purpose,
                source_account: &source,
                payee_id: "acct_acme0000000001",
                payee_trusted: trusted,
                invoice_id: None,
                agent: &agent,
                risk_signals: &[],
            },
        )
    }

    const SRC: &str = "acct_0123456789abcdef";

    fn rules(d: &Decision) -> Vec<&str> {
        d.reasons.iter().map(|r| r.rule.as_str()).collect()
    }

    #[test]
    fn small_trusted_payments_auto_approve() {
        let d = decide(9_999, PurposeCode::Vendor, true, SRC);
        assert_eq!(d.outcome, Outcome::AutoApproved);
        assert_eq!(d.required_approvals, 0);
        assert_eq!(d.auto_approver().unwrap(), "policy:auto_approve_trusted_payee");
    }

    #[test]
    fn untrusted_or_at_threshold_needs_a_human() {
        assert_eq!(decide(9_999, PurposeCode::Vendor, false, SRC).outcome, Outcome::NeedsApproval);
        let d = decide(10_000, PurposeCode::Vendor, true, SRC);
        assert_eq!((d.outcome, d.required_approvals), (Outcome::NeedsApproval, 1));
        assert_eq!(rules(&d), ["single_approval"]);
    }

    #[test]
    fn dual_approval_at_threshold() {
        let d = decide(1_000_000, PurposeCode::Vendor, true, SRC);
        assert_eq!((d.outcome, d.required_approvals), (Outcome::NeedsApproval, 2));
        assert_eq!(rules(&d), ["dual_approval"]);
        assert_eq!(decide(999_999, PurposeCode::Vendor, false, SRC).required_approvals, 1);
    }

    #[test]
    fn large_refunds_need_manual_review() {
        let d = decide(9_900_000, PurposeCode::Refund, true, SRC);
        assert_eq!(d.outcome, Outcome::NeedsApproval);
        assert_eq!(rules(&d), ["refund_manual_review", "dual_approval"]);
    }

    #[test]
    fn agent_scope_is_enforced() {
        let d = decide(100, PurposeCode::Payroll, true, "acct_ffffffffffffffff");
        assert_eq!(d.outcome, Outcome::Denied);
        assert_eq!(rules(&d), ["source_account_not_allowed", "purpose_not_allowed"]);
        assert!(!d.reasons[0].message.contains("ffffffffffff"), "masked: {}", d.reasons[0].message);
    }

    proptest! {
        #[test]
        fn every_decision_has_a_reason_and_consistent_counts(amount in 1u64..200_000_000, trusted: bool, p in 0usize..4) {
            let d = decide(amount, PurposeCode::ALL[p], trusted, SRC);
            prop_assert!(!d.reasons.is_empty());
            match d.outcome {
                Outcome::AutoApproved => prop_assert!(d.required_approvals == 0 && trusted && amount < 10_000),
                Outcome::NeedsApproval => {
                    let expected = if amount >= 1_000_000 { 2 } else { 1 };
                    prop_assert_eq!(d.required_approvals, expected)
                }
                Outcome::Denied => prop_assert!(!matches!(PurposeCode::ALL[p], PurposeCode::Vendor | PurposeCode::Refund)),
            }
        }
    }
}
