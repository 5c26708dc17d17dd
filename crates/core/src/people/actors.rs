//! Who acts, as the use cases know them once authenticated: an agent (from
//! its key: tenant, agent, the human it acts for, who holds its key, its
//! scope) and an admin (from a console session). Identity always comes from
//! the credential, never from a request's body.

use crate::decision::policy::AgentScope;
use crate::domain::{PurposeCode, Role};
use crate::store::directory::Agent;

/// An authenticated agent: identity comes from the credential, never the body.
#[derive(Debug, Clone)]
pub struct AgentPrincipal {
    pub tenant_id: String,
    pub agent_id: String,
    /// The user id of the human the agent acts for.
    pub acts_for: String,
    /// The user its key was shown to on the console, if any.
    pub key_holder: Option<String>,
    /// Frozen because the person it acted for (this user id) was
    /// deactivated: it proposes and commits nothing until reassigned.
    pub offboarding_of: Option<String>,
    pub scope: AgentScope,
}

impl From<Agent> for AgentPrincipal {
    fn from(a: Agent) -> Self {
        AgentPrincipal {
            scope: AgentScope {
                agent_id: a.id.clone(),
                source_accounts: a.source_accounts,
                purposes: a.purposes.iter().filter_map(|p| PurposeCode::parse(p).ok()).collect(),
            },
            tenant_id: a.tenant_id,
            agent_id: a.id,
            acts_for: a.acts_for,
            key_holder: a.key_holder,
            offboarding_of: a.offboarding_of,
        }
    }
}

impl AgentPrincipal {
    pub fn actor(&self) -> String {
        format!("agent:{}", self.agent_id)
    }
}

/// The admin acting on the console.
#[derive(Debug, Clone)]
pub struct Admin {
    pub user_id: String,
    pub username: String,
    pub tenant_id: String,
    pub roles: Vec<Role>,
}

impl Admin {
    pub fn actor(&self) -> String {
        format!("user:{}", self.user_id)
    }
}
