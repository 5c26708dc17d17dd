//! Who may approve what, for a whole tenant at once: the tenant's people
//! and agents, read once, and [`approval::approve::may_approve`] (the rule `decide`
//! enforces) asked for any of them. The console shows it before anyone
//! clicks (a disabled Approve with the reason, who can approve), and the
//! reviewer's flow counts and picks what waits for them with it.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};

use crate::config::{Config, Settings};
use crate::decision::approval::approve::{may_approve, Approvable, Candidate, Duties, Ineligible};
use crate::decision::delegation::Given;
use crate::platform::clock::Clock;
use crate::store::Store;
use crate::store::{self, delegations::DelegationRow, directory::User, StoreError};

/// The people of a tenant and its agents: enough to tell, for any proposal,
/// who may approve it now.
pub struct Tenancy {
    users: Vec<User>,
    /// Each agent's id, and who may never approve its proposals.
    agents: HashMap<String, store::directory::Agent>,
    /// The tenant's approval groups.
    groups: crate::decision::approval_groups::Members,
    /// The delegations in force when it was read.
    delegations: Vec<DelegationRow>,
}

impl Tenancy {
    /// The tenant as it is now: its people, agents and delegations read at
    /// once, each on its own read connection.
    pub async fn load(state: &(impl Store + Config + Clock), tenant: &str) -> Result<Tenancy, StoreError> {
        let db = state.db();
        let now = state.now();
        let (users, agents, delegations) = tokio::try_join!(
            async { store::directory::users_of(&mut *db.reader().await?, tenant).await },
            async { store::directory::agents_in(&mut *db.reader().await?, tenant).await },
            async { store::delegations::current(&mut *db.reader().await?, tenant, now).await },
        )?;
        Ok(Self::of(state.settings(), tenant, users, agents, delegations, now))
    }

    /// [`Tenancy::load`] on a connection (inside a transaction), with the
    /// delegations in force at `now`.
    pub async fn load_in(
        conn: &mut store::Conn,
        settings: &Settings,
        tenant: &str,
        now: DateTime<Utc>,
    ) -> Result<Tenancy, StoreError> {
        let users = store::directory::users_of(conn, tenant).await?;
        let agents = store::directory::agents_in(conn, tenant).await?;
        let delegations = store::delegations::current(&mut *conn, tenant, now).await?;
        Ok(Self::of(settings, tenant, users, agents, delegations, now))
    }

    fn of(
        settings: &Settings,
        tenant: &str,
        users: Vec<User>,
        agents: Vec<store::directory::Agent>,
        mut delegations: Vec<DelegationRow>,
        now: DateTime<Utc>,
    ) -> Tenancy {
        let groups = crate::decision::approval_groups::Members::new(settings, tenant, &users);
        delegations.retain(|d| d.in_force(now));
        Tenancy { users, agents: agents.into_iter().map(|a| (a.id.clone(), a)).collect(), groups, delegations }
    }

    /// Whether one more approval counting for `user_id` would help meet
    /// `row`'s group requirements (always, without any): see `policy::helps`.
    fn helps(&self, user_id: &str, row: &Approvable<'_>, given: &Given<'_>) -> Result<(), Ineligible> {
        self.groups
            .helps(row.groups, row.required, &given.counted, user_id)
            .map_err(|groups| Ineligible::NotInGroup { groups })
    }

    /// What `row`'s groups still lack given `approved_by`.
    pub fn unmet(
        &self,
        groups: &[crate::decision::policy::GroupNeed],
        approved_by: &[&str],
    ) -> Vec<crate::decision::policy::GroupNeed> {
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
        Tenancy {
            users,
            agents: self.agents.clone(),
            groups: self.groups.clone(),
            delegations: self.delegations.clone(),
        }
    }

    fn duties(&self, agent: &str) -> Duties<'_> {
        self.agents.get(agent).map(Duties::from).unwrap_or_default()
    }

    /// The username of user `id` (the id itself when unknown).
    pub fn name_of(&self, id: &str) -> String {
        self.users.iter().find(|u| u.id == id).map_or_else(|| id.to_owned(), |u| u.username.clone())
    }

    /// Whether `user_id` may approve `row` now as themselves, and if not, why.
    pub fn check(&self, user_id: &str, row: &Approvable<'_>, given: &Given<'_>) -> Result<(), Ineligible> {
        let user = self.user(user_id).ok_or(Ineligible::NotAnApprover)?;
        self.may(user, row, given)
    }

    /// The people `user_id` may approve `row` for now, under delegations to
    /// them in force (usernames).
    pub fn approvable_for(&self, user_id: &str, row: &Approvable<'_>, given: &Given<'_>) -> Vec<&str> {
        let Some(user) = self.user(user_id) else { return Vec::new() };
        self.delegations
            .iter()
            .filter(|d| d.delegate_id == user_id)
            .filter_map(|d| self.user(&d.delegator_id))
            .filter(|principal| self.may_for(user, principal, row, given).is_ok())
            .map(|principal| principal.username.as_str())
            .collect()
    }

    /// Who approves for whom now, and until when: (delegate, delegator,
    /// end) of every delegation in force, by username.
    pub fn delegations_in_force(&self) -> Vec<(String, String, DateTime<Utc>)> {
        self.delegations
            .iter()
            .map(|d| (self.name_of(&d.delegate_id), self.name_of(&d.delegator_id), d.ends_at))
            .collect()
    }

    /// The active users who may give the next approval (as themselves, or
    /// for someone), by username.
    pub fn eligible(&self, row: &Approvable<'_>, given: &Given<'_>) -> Vec<&str> {
        self.eligible_users(row, given).into_iter().map(|u| u.username.as_str()).collect()
    }

    /// The active users who may give the next approval, as themselves or
    /// for someone.
    pub fn eligible_users(&self, row: &Approvable<'_>, given: &Given<'_>) -> Vec<&User> {
        self.users
            .iter()
            .filter(|u| self.may(u, row, given).is_ok() || !self.approvable_for(&u.id, row, given).is_empty())
            .collect()
    }

    fn user(&self, id: &str) -> Option<&User> {
        self.users.iter().find(|u| u.id == id)
    }

    /// [`may_approve`] for one of the tenant's users; an inactive user may not.
    fn may(&self, user: &User, row: &Approvable<'_>, given: &Given<'_>) -> Result<(), Ineligible> {
        self.may_as(user, row, given)?;
        self.helps(&user.id, row, given)
    }

    /// [`may_approve`] alone (no group rule): an inactive user may not.
    fn may_as(&self, user: &User, row: &Approvable<'_>, given: &Given<'_>) -> Result<(), Ineligible> {
        if !user.active {
            return Err(Ineligible::NotAnApprover);
        }
        may_approve(&Candidate::from(user), row, self.duties(row.agent_id), &given.people)
    }

    /// Whether `delegate` may approve `row` for `principal`: every rule for
    /// both, and the approval counts for the principal's groups.
    fn may_for(
        &self,
        delegate: &User,
        principal: &User,
        row: &Approvable<'_>,
        given: &Given<'_>,
    ) -> Result<(), Ineligible> {
        self.may_as(delegate, row, given)?;
        self.may_as(principal, row, given)?;
        self.helps(&principal.id, row, given)
    }
}
