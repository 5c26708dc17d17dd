//! The words of the console pages that explain a wait: how many approvals
//! are still missing and from whom, what stops a proposal from ever being
//! approved, and why an operation waits for reconciliation or a human.

use crate::decision::policy::GroupNeed;
use crate::intake::risk::{self, Signal};
use crate::store::{
    operations::{OpStatus, OperationRow},
    proposals::ProposalRow,
};

/// How many approvals the proposal needs in all, as `decide` will count them
/// (a risk signal may add one: `risk.extra_approval`).
pub(super) fn required_now(state: &crate::state::AppState, row: &ProposalRow, signals: &[Signal]) -> u8 {
    risk::with_extra_approval(&state.settings.risk, row.policy.clone(), signals)
        .required_approvals
        .max(row.required_approvals)
        .max(1)
}

/// "1 more approval needed, from: ben or carol" — or that the people of the
/// tenant cannot give what is missing; and what named groups still lack.
pub(super) fn still_needed(missing: usize, eligible: &[&str], currency: &str, groups: &[GroupNeed]) -> String {
    let needed = approvals_needed(missing, eligible, currency);
    if groups.is_empty() {
        return needed;
    }
    format!("{needed} Still needed from named groups: {}.", crate::decision::policy::describe_groups(groups))
}

fn approvals_needed(missing: usize, eligible: &[&str], currency: &str) -> String {
    let approvals = if missing == 1 { "1 more approval".to_owned() } else { format!("{missing} more approvals") };
    let fix = format!("an admin must give an approver a {currency} limit that covers this amount.");
    match eligible {
        [] => format!("{approvals} needed, and no one in this tenant can give it: {fix}"),
        few if few.len() < missing => {
            format!("{approvals} needed from different people, but only {} can give one: {fix}", few.join(" and "))
        }
        [one] => format!("{approvals} needed, from: {one}."),
        [rest @ .., last] => format!("{approvals} needed, from: {} or {last}.", rest.join(", ")),
    }
}

/// What stops a waiting proposal from ever being approved, in a few words
/// (the queue's tag, the detail page's alert): nothing when enough people
/// can give the approvals `missing`.
pub(super) fn approver_gap(missing: usize, eligible: &[&str], currency: &str) -> Option<String> {
    let short = missing.checked_sub(eligible.len()).filter(|n| *n > 0)?;
    let approvers = if short == 1 { "1 more approver".to_owned() } else { format!("{short} more approvers") };
    Some(match eligible {
        [] => format!("No one can approve: no {currency} limit covers it"),
        [one] => format!("Only {one} can approve: {approvers} with a {currency} limit needed"),
        [rest @ .., last] => {
            format!("Only {} and {last} can approve: {approvers} with a {currency} limit needed", rest.join(", "))
        }
    })
}

/// How many approvals are still missing (at least one while it waits).
pub(super) fn missing(state: &crate::state::AppState, row: &ProposalRow, signals: &[Signal], given: usize) -> usize {
    usize::from(required_now(state, row, signals)).saturating_sub(given).max(1)
}

/// Why an operation waits, in words: the reconciler's finding (its code
/// stays off the screen: `OperationItem::code`), else what is being done and
/// when the next check is, relative to `now`.
pub(super) fn why(op: &OperationRow, now: chrono::DateTime<chrono::Utc>) -> String {
    match (&op.error_code, &op.error_message) {
        (_, Some(message)) if !message.is_empty() => message.clone(),
        (Some(_), _) => "Reconciliation could not match the rail's records to this payment.".into(),
        (None, _) if op.status == OpStatus::Unknown => {
            let next = match (op.next_check_at - now).num_seconds() {
                ..=0 => "The next check is due now.".to_owned(),
                1 => "The next check is in 1 second.".to_owned(),
                secs @ 2..=119 => format!("The next check is in {secs} seconds."),
                secs => format!("The next check is in {} minutes.", (secs + 59) / 60),
            };
            format!(
                "The rail's answer was lost (timeout, dropped connection or rail error); reconciliation reads the \
                 rail's record by idempotency key. {next}"
            )
        }
        (None, _) => "No finding was recorded.".into(),
    }
}

/// The proposals a duplicate-invoice signal names, as the detail page sets
/// them beside this one.
pub(super) fn twins(signals: &[Signal]) -> Vec<app::views::TwinLine> {
    signals
        .iter()
        .filter(|s| s.code == crate::intake::duplicates::RULE)
        .flat_map(|s| &s.related)
        .filter(|t| crate::domain::is_proposal_id(&t.id))
        .map(|t| app::views::TwinLine {
            id: t.id.clone(),
            status: t.status.as_str().to_owned(),
            amount: super::stored_amount(t.amount_minor, &t.currency),
            agent_id: t.agent_id.clone(),
            created_at: crate::store::ts(t.created_at),
            approved_or_paid: crate::intake::duplicates::approved_or_paid(t.status),
        })
        .collect()
}
