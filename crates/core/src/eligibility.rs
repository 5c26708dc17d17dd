//! Who may approve what, for a whole tenant at once: the tenant's people
//! and agents, read once, and [`approvals::may_approve`] (the rule `decide`
//! enforces) asked for any of them. The console shows it before anyone
//! clicks (a disabled Approve with the reason, who can approve), and the
//! reviewer's flow counts and picks what waits for them with it.

use std::collections::{BTreeMap, HashMap};

use crate::approvals::{may_approve, Approvable, Candidate, Duties, Ineligible};
use crate::config::{Config, Settings};
use crate::store::Store;
use crate::store::{self, directory::User, StoreError};

/// The people of a tenant and its agents: enough to tell, for any proposal,
/// who may approve it now.
pub struct Tenancy {
    users: Vec<User>,
    /// Each agent's id, and who may never approve its proposals.
    agents: HashMap<String, store::directory::Agent>,
    /// The tenant's approval groups.
    groups: crate::groups::Members,
}

fn candidate(user: &User) -> Candidate<'_> {
    Candidate { user_id: &user.id, roles: &user.roles, approval_limits_minor: &user.approval_limits_minor }
}

impl Tenancy {
    pub async fn load(state: &(impl Store + Config), tenant: &str) -> Result<Tenancy, StoreError> {
        Self::load_in(&mut *state.db().reader().await?, state.settings(), tenant).await
    }

    /// [`Tenancy::load`] on a connection (inside a transaction).
    pub async fn load_in(conn: &mut store::Conn, settings: &Settings, tenant: &str) -> Result<Tenancy, StoreError> {
        let users = store::directory::users_of(conn, tenant).await?;
        let agents = store::directory::agents_in(conn, tenant).await?;
        let groups = crate::groups::Members::new(settings, tenant, &users);
        Ok(Tenancy { users, agents: agents.into_iter().map(|a| (a.id.clone(), a)).collect(), groups })
    }

    /// Whether one more approval by `user_id` would help meet `row`'s group
    /// requirements (always, without any): see `policy::helps`.
    pub fn helps(&self, user_id: &str, row: &Approvable<'_>, approved_by: &[&str]) -> Result<(), Ineligible> {
        self.groups
            .helps(row.groups, row.required, approved_by, user_id)
            .map_err(|groups| Ineligible::NotInGroup { groups })
    }

    /// What `row`'s groups still lack given `approved_by`.
    pub fn unmet(&self, groups: &[crate::policy::GroupNeed], approved_by: &[&str]) -> Vec<crate::policy::GroupNeed> {
        self.groups.unmet(groups, approved_by)
    }

    /// The same tenant as if `username` had `roles` and `limits` (a
    /// registry change asked about before it is made).
    pub fn with_user_as(
        &self,
        username: &str,
        roles: &[crate::domain::Role],
        limits: &BTreeMap<String, u64>,
    ) -> Tenancy {
        let mut users = self.users.clone();
        for user in users.iter_mut().filter(|u| u.username == username) {
            user.roles = roles.to_vec();
            user.approval_limits_minor = limits.clone();
        }
        Tenancy { users, agents: self.agents.clone(), groups: self.groups.clone() }
    }

    fn duties(&self, agent: &str) -> Duties<'_> {
        self.agents.get(agent).map(Duties::from).unwrap_or_default()
    }

    /// The username of user `id` (the id itself when unknown).
    pub fn name_of(&self, id: &str) -> String {
        self.users.iter().find(|u| u.id == id).map_or_else(|| id.to_owned(), |u| u.username.clone())
    }

    /// Whether `user_id` may approve `row` now, and if not, why.
    pub fn check(&self, user_id: &str, row: &Approvable<'_>, approved_by: &[&str]) -> Result<(), Ineligible> {
        let user = self.users.iter().find(|u| u.id == user_id).ok_or(Ineligible::NotAnApprover)?;
        self.may(user, row, approved_by)
    }

    /// The active users who may give the next approval, by username.
    pub fn eligible(&self, row: &Approvable<'_>, approved_by: &[&str]) -> Vec<&str> {
        self.users.iter().filter(|u| self.may(u, row, approved_by).is_ok()).map(|u| u.username.as_str()).collect()
    }

    /// The active users who may give the next approval.
    pub fn eligible_users(&self, row: &Approvable<'_>, approved_by: &[&str]) -> Vec<&User> {
        self.users.iter().filter(|u| self.may(u, row, approved_by).is_ok()).collect()
    }

    /// [`may_approve`] for one of the tenant's users; an inactive user may not.
    fn may(&self, user: &User, row: &Approvable<'_>, approved_by: &[&str]) -> Result<(), Ineligible> {
        if !user.active {
            return Err(Ineligible::NotAnApprover);
        }
        may_approve(&candidate(user), row, self.duties(row.agent_id), approved_by)?;
        self.helps(&user.id, row, approved_by)
    }
}
