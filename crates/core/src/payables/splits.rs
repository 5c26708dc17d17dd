//! Split payments: several payments to one payee that each stay under an
//! approval threshold but together cross it. Within
//! `payables.split_window_secs` (0: not checked), the transfers to a payee
//! in one currency that still stand (neither rejected, cancelled, expired
//! nor failed; any agent, any run) are added up with the new one; when the
//! total needs more than the new one alone — a human where policy would
//! approve it alone, more approvals, named groups — the new one needs what
//! the total would, and says why (rule `split_payment`, naming the others).
//!
//! Checked in the transaction that stores the proposal (on PostgreSQL under
//! a lock per payee and currency), so two parts proposed at the same moment
//! on two instances each count the other. The earlier parts keep the
//! approval they were proposed with: the part that crosses the threshold,
//! and every part after it within the window, carries the total's approval.
//! An approver's own limit is still checked against each payment's own
//! amount.

use chrono::{DateTime, Duration, Utc};

use crate::decision::policy::{Decision, Outcome, Reason};
use crate::domain::Currency;
use crate::store::risk::Earlier;

/// The rule a raised decision names.
pub const RULE: &str = "split_payment";

/// The window's start for a proposal made `at`, or `None` when splits are
/// not checked.
pub fn window_start(window_secs: u64, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
    (window_secs > 0).then(|| at - Duration::seconds(window_secs.min(i64::MAX as u64) as i64))
}

/// How the window reads in a sentence: "24 h", "15 min", "90 s".
fn window_words(secs: u64) -> String {
    match secs {
        s if s % 3600 == 0 => format!("{} h", s / 3600),
        s if s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

/// The total of `amount` and the other parts (`others`), in minor units.
pub fn total(amount: u64, others: &[Earlier]) -> u64 {
    others.iter().fold(amount, |sum, e| sum.saturating_add(e.amount_minor))
}

/// `current` (the new part's own decision) raised to what `for_total` (the
/// decision the total would get) asks, when it asks more; else `None`.
pub fn raise(
    current: &Decision,
    for_total: &Decision,
    others: &[Earlier],
    currency: Currency,
    total_minor: u64,
    window_secs: u64,
) -> Option<Decision> {
    if others.is_empty()
        || current.outcome == Outcome::Denied
        || for_total.outcome == Outcome::Denied
        || current.reasons.iter().any(|r| r.rule == RULE)
    {
        return None;
    }
    let needs_human = current.outcome == Outcome::AutoApproved && for_total.outcome != Outcome::AutoApproved;
    let more = for_total.required_approvals > current.required_approvals;
    let groups = !for_total.groups.is_empty() && for_total.groups != current.groups;
    if !(needs_human || more || groups) {
        return None;
    }
    let mut raised = current.clone();
    raised.outcome = Outcome::NeedsApproval;
    raised.reasons.retain(|r| r.rule != crate::decision::policy::RULE_AUTO_APPROVE);
    raised.required_approvals = current.required_approvals.max(for_total.required_approvals).max(1);
    if groups {
        raised.groups = for_total.groups.clone();
    }
    let ids: Vec<&str> = others.iter().map(|e| e.id.as_str()).collect();
    let count = match others.len() {
        1 => "another payment".to_owned(),
        n => format!("{n} other payments"),
    };
    let needs = match (raised.required_approvals, raised.groups.is_empty()) {
        (1, true) => "one human approval".to_owned(),
        (n, true) => format!("{n} approvals"),
        (n, false) => format!(
            "{n} approval{} ({})",
            if n == 1 { "" } else { "s" },
            crate::decision::policy::describe_groups(&raised.groups)
        ),
    };
    raised.reasons.push(Reason {
        rule: RULE.into(),
        message: format!(
            "With {count} to this payee in the last {} ({}), the total is {}: it needs what that amount needs, {needs}.",
            window_words(window_secs),
            ids.join(", "),
            currency.format_minor(total_minor),
        ),
    });
    Some(raised)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::policy::GroupNeed;
    use crate::domain::ProposalStatus;

    fn part(id: &str, amount: u64) -> Earlier {
        Earlier {
            id: id.into(),
            agent_id: "bot".into(),
            status: ProposalStatus::PendingApproval,
            amount_minor: amount,
            currency: "USD".into(),
            created_at: DateTime::<Utc>::UNIX_EPOCH,
        }
    }

    fn decision(outcome: Outcome, n: u8) -> Decision {
        let rule = if outcome == Outcome::AutoApproved {
            crate::decision::policy::RULE_AUTO_APPROVE
        } else {
            "single_approval"
        };
        Decision {
            outcome,
            required_approvals: n,
            reasons: vec![Reason { rule: rule.into(), message: String::new() }],
            groups: Vec::new(),
        }
    }

    fn usd() -> Currency {
        Currency::parse("USD").unwrap()
    }

    #[test]
    fn a_part_that_policy_would_approve_alone_needs_a_human_once_the_total_does() {
        let raised = raise(
            &decision(Outcome::AutoApproved, 0),
            &decision(Outcome::NeedsApproval, 1),
            &[part("prop_a", 9_000)],
            usd(),
            18_000,
            86_400,
        )
        .unwrap();
        assert_eq!((raised.outcome, raised.required_approvals), (Outcome::NeedsApproval, 1));
        let rules: Vec<_> = raised.reasons.iter().map(|r| r.rule.as_str()).collect();
        assert_eq!(rules, [RULE], "the auto-approval's reason is gone");
        assert_eq!(
            raised.reasons[0].message,
            "With another payment to this payee in the last 24 h (prop_a), the total is 180.00 USD: it needs what that \
             amount needs, one human approval."
        );
    }

    #[test]
    fn a_part_is_raised_to_the_totals_approvals_and_groups_and_only_once() {
        let two = raise(
            &decision(Outcome::NeedsApproval, 1),
            &decision(Outcome::NeedsApproval, 2),
            &[part("p1", 600_000), part("p2", 300_000)],
            usd(),
            1_200_000,
            900,
        )
        .unwrap();
        assert_eq!(two.required_approvals, 2);
        assert!(
            two.reasons.last().unwrap().message.contains("2 other payments to this payee in the last 15 min (p1, p2)"),
            "{two:?}"
        );
        assert_eq!(
            raise(&two, &decision(Outcome::NeedsApproval, 3), &[part("p3", 1)], usd(), 1, 900),
            None,
            "counted once"
        );
        let treasury = vec![GroupNeed { group: "treasury".into(), count: 1 }];
        let grouped = Decision { groups: treasury.clone(), ..decision(Outcome::NeedsApproval, 1) };
        let raised = raise(&decision(Outcome::NeedsApproval, 1), &grouped, &[part("p1", 1)], usd(), 2, 60).unwrap();
        assert_eq!(raised.groups, treasury);
        assert!(raised.reasons.last().unwrap().message.ends_with("1 approval (1 from treasury)."), "{raised:?}");
    }

    #[test]
    fn nothing_is_raised_when_the_total_asks_no_more_or_nothing_else_stands() {
        assert_eq!(
            raise(
                &decision(Outcome::NeedsApproval, 1),
                &decision(Outcome::NeedsApproval, 1),
                &[part("p", 1)],
                usd(),
                2,
                60
            ),
            None
        );
        assert_eq!(
            raise(&decision(Outcome::AutoApproved, 0), &decision(Outcome::NeedsApproval, 1), &[], usd(), 2, 60),
            None
        );
        let denied = Decision::denied_by("purpose_not_allowed", String::new());
        assert_eq!(raise(&denied, &decision(Outcome::NeedsApproval, 2), &[part("p", 1)], usd(), 2, 60), None);
        assert_eq!(window_start(0, DateTime::<Utc>::UNIX_EPOCH), None, "0: not checked");
        assert_eq!(total(5, &[part("a", 2), part("b", 3)]), 10);
    }
}
