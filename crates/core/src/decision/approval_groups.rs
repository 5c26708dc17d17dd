//! Who is in a tenant's approval groups, by user id: the
//! groups name usernames (`tenants.<id>.approval_groups`), and the identity
//! provider's groups add people to them (`tenants.<id>.idp_groups`);
//! approvals and tokens carry user ids. What a group rule still lacks and whether one
//! more approval would help are `policy::unmet` and `policy::helps`, asked
//! here with the tenant's people.

use std::collections::{BTreeMap, HashMap};

use crate::config::Settings;
use crate::decision::policy::GroupNeed;
use crate::store::{self, directory::User};

/// A tenant's approval groups, with its users' names.
#[derive(Debug, Clone, Default)]
pub struct Members {
    groups: BTreeMap<String, Vec<String>>,
    names: HashMap<String, String>,
}

impl Members {
    /// The configured members of each group, and those the identity
    /// provider's groups put in one (`people::groups`, docs/PEOPLE.md).
    pub fn new(settings: &Settings, tenant: &str, users: &[User]) -> Members {
        let mut groups: BTreeMap<String, Vec<String>> =
            settings.tenants.get(tenant).map(|t| t.approval_groups.clone()).unwrap_or_default();
        for user in users.iter().filter(|u| u.tenant_id == tenant) {
            for group in &user.idp_approval_groups {
                if let Some(members) = groups.get_mut(group) {
                    if !members.contains(&user.username) {
                        members.push(user.username.clone());
                    }
                }
            }
        }
        Members { groups, names: users.iter().map(|u| (u.id.clone(), u.username.clone())).collect() }
    }

    /// The tenant's groups and people, read on `conn`.
    pub async fn load_in(conn: &mut store::Conn, settings: &Settings, tenant: &str) -> store::Result<Members> {
        Ok(Members::new(settings, tenant, &store::directory::users_of(conn, tenant).await?))
    }

    /// Whether user `id` is in `group`.
    pub fn in_group(&self, group: &str, id: &str) -> bool {
        let Some(name) = self.names.get(id) else { return false };
        self.groups.get(group).is_some_and(|members| members.contains(name))
    }

    /// What `needs` still lack, given the users `approved_by`.
    pub fn unmet(&self, needs: &[GroupNeed], approved_by: &[&str]) -> Vec<GroupNeed> {
        crate::decision::policy::unmet(needs, approved_by, |g, id| self.in_group(g, id))
    }

    /// Whether one more approval by `candidate` helps meet `needs`, with
    /// `required` approvals in all; else the groups still short.
    pub fn helps(
        &self,
        needs: &[GroupNeed],
        required: u8,
        approved_by: &[&str],
        candidate: &str,
    ) -> Result<(), Vec<String>> {
        if needs.is_empty() {
            return Ok(());
        }
        crate::decision::policy::helps(needs, required, approved_by, candidate, |g, id| self.in_group(g, id))
    }
}

/// The groups `delegator` is in and `delegate` is not (usernames): what a
/// delegation from one to the other adds to the delegate's authority.
pub fn beyond(settings: &Settings, tenant: &str, delegator: &str, delegate: &str) -> Vec<String> {
    let Some(groups) = settings.tenants.get(tenant).map(|t| &t.approval_groups) else { return Vec::new() };
    groups
        .iter()
        .filter(|(_, members)| members.iter().any(|m| m == delegator) && !members.iter().any(|m| m == delegate))
        .map(|(name, _)| name.clone())
        .collect()
}

/// When `row` needs approvals from named groups: whether one more approval
/// by `user_id` helps, with `required` approvals in all (everything the
/// decision asks now: a risk signal's or a duplicate statement's extra
/// approval included); else the groups still short. Always `Ok` without
/// groups.
pub async fn gate(
    state: &(impl store::Store + crate::config::Config),
    user_id: &str,
    row: &store::proposals::ProposalRow,
    required: u8,
) -> store::Result<Result<(), Vec<String>>> {
    if row.policy.groups.is_empty() {
        return Ok(Ok(()));
    }
    let mut conn = state.db().reader().await?;
    let given = store::proposals::approvals_in_round(&mut conn, &row.id, row.approval_round).await?;
    let members = Members::load_in(&mut conn, state.settings(), &row.tenant_id).await?;
    Ok(members.helps(&row.policy.groups, required, &crate::decision::delegation::Given::of(&given).counted, user_id))
}
