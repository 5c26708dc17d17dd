//! Delegation while away (docs/DELEGATION.md).
//!
//! An approver lets another approver approve *for them* between two
//! instants. A delegate's approval says "for ana" everywhere (the approval,
//! its audit entry and receipt, the detail page, the token's `delegations`
//! claim) and must pass every rule for both people: the approver role, each
//! one's segregation of duties, each one's limit (so the lower of the two
//! applies), and neither may have approved in the round already, for
//! themselves or through the other. It counts once, for the person it is
//! given for: in the approval count and in the approval groups.
//!
//! Counting for someone's groups is authority the delegate may not have: a
//! delegation that would let the delegate count for a group they are not
//! in is a four-eyes registry change (`registry_changes`, kind
//! `delegation`), `pending` until an admin who is neither of the two
//! confirms it (`delegate`, the use cases). Anything else is `active` at
//! once. Ending one early applies at once (it only takes authority away).
//!
//! This module holds what the approval path reads (who each approval
//! involves and counts for, whether a delegation is in force); giving,
//! ending and listing them is `delegate`, which proposes registry changes.

pub mod manage;

use chrono::{DateTime, Utc};

use crate::domain::Role;
use crate::store::{self, delegations::DelegationRow};

/// The rule a refused delegated approval names (`policy_denied`).
pub const RULE: &str = "delegation";

/// The approvals of a round as the rules read them.
#[derive(Debug, Default, Clone)]
pub struct Given<'a> {
    /// Everyone an approval involves: who gave it, and whom it was for. None
    /// of them may give (or be given) another approval in the round.
    pub people: Vec<&'a str>,
    /// Whom each approval counts for, once each: the approval count and
    /// the approval groups read these.
    pub counted: Vec<&'a str>,
}

impl<'a> Given<'a> {
    /// From stored approvals (rejections are skipped).
    pub fn of(rows: &'a [store::proposals::ApprovalRow]) -> Given<'a> {
        Self::from_pairs(
            rows.iter()
                .filter(|a| a.decision == "approve")
                .map(|a| (a.approver_id.as_str(), a.on_behalf_of.as_deref())),
        )
    }

    /// From a proposal's view (its current round).
    pub fn of_views(views: &'a [crate::intake::proposals::ApprovalView]) -> Given<'a> {
        Self::from_pairs(
            views
                .iter()
                .filter(|a| a.decision == "approve")
                .map(|a| (a.approver_id.as_str(), a.on_behalf_of.as_deref())),
        )
    }

    fn from_pairs(pairs: impl Iterator<Item = (&'a str, Option<&'a str>)>) -> Given<'a> {
        let mut given = Given::default();
        for (by, on_behalf_of) in pairs {
            given.people.push(by);
            given.people.extend(on_behalf_of);
            given.counted.push(on_behalf_of.unwrap_or(by));
        }
        given
    }
}

/// For `delegate_id`, asking to approve for `name`: that person (an active
/// approver of `tenant`) and the delegation from them in force now; else
/// why not, addressed to the delegate.
pub async fn resolve(
    conn: &mut store::Conn,
    tenant: &str,
    name: &str,
    delegate_id: &str,
    now: DateTime<Utc>,
) -> store::Result<Result<(store::directory::User, DelegationRow), String>> {
    let user = store::directory::user_by_username(&mut *conn, name).await?.filter(|u| u.tenant_id == tenant);
    let Some(user) = user.filter(|u| u.active && u.roles.contains(&Role::Approver)) else {
        return Ok(Err(format!("{name} is not an active approver here.")));
    };
    if user.id == delegate_id {
        return Ok(Err("Approve as yourself: leave out on_behalf_of.".into()));
    }
    Ok(match in_force(conn, tenant, (&user.id, delegate_id), now).await? {
        Some(delegation) => Ok((user, delegation)),
        None => Err(format!("{name} has no delegation to you in force now.")),
    })
}

/// Whether each person is involved in one approval of the round at most
/// (given it, or had it given for them).
pub fn each_once(approvals: &[store::proposals::ApprovalRow]) -> bool {
    let people = Given::of(approvals).people;
    people.iter().enumerate().all(|(i, p)| !people[..i].contains(p))
}

/// The delegation from `delegator_id` to `delegate_id` in force at `now`.
pub async fn in_force(
    conn: &mut store::Conn,
    tenant: &str,
    (delegator_id, delegate_id): (&str, &str),
    now: DateTime<Utc>,
) -> store::Result<Option<DelegationRow>> {
    let rows = store::delegations::current(&mut *conn, tenant, now).await?;
    Ok(rows.into_iter().find(|d| d.delegator_id == delegator_id && d.delegate_id == delegate_id && d.in_force(now)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approval(by: &str, on_behalf_of: Option<&str>, decision: &str) -> store::proposals::ApprovalRow {
        store::proposals::ApprovalRow {
            proposal_id: "prop_1".into(),
            round: 1,
            approver_id: by.into(),
            decision: decision.into(),
            reason: None,
            via: "console".into(),
            amr: "pwd".into(),
            at: Utc::now(),
            on_behalf_of: on_behalf_of.map(str::to_owned),
            delegation_id: on_behalf_of.map(|_| "dlg_1".to_owned()),
        }
    }

    #[test]
    fn a_delegated_approval_involves_both_and_counts_once_for_whom_it_was_given() {
        let rows = [
            approval("ben", Some("ana"), "approve"),
            approval("carl", None, "approve"),
            approval("dan", None, "reject"),
        ];
        let given = Given::of(&rows);
        assert_eq!(given.people, ["ben", "ana", "carl"]);
        assert_eq!(given.counted, ["ana", "carl"]);
    }
}
