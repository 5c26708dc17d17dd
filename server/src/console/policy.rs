//! The policy page's data (`/admin/policy`, admins): the tenant's enforced
//! and observed policies, observe mode's differences, the backtest the
//! admin last asked for (kept in their session, shown once) and the policy
//! changes waiting for a second admin.

use app::views::{ConsoleError, ObservationRow, PendingChangeRow, PolicyPage, Viewer};

use serde::Serialize;

use super::{unavailable, ConsoleService};
use crate::decision::policy::Engine;
use crate::state::Shared;

/// Session keys: the page's one-time message, the last backtest's lines and
/// its candidate text (set by the form post, `http::policy::policy_form`).
pub const POLICY_FLASH: &str = "policy_flash";
pub const POLICY_BACKTEST: &str = "policy_backtest";
pub const POLICY_CANDIDATE: &str = "policy_candidate";

impl ConsoleService {
    pub(super) async fn policy_page(
        &self,
        viewer: &Viewer,
        session: Option<tower_sessions::Session>,
    ) -> Result<PolicyPage, ConsoleError> {
        if !viewer.is_admin() {
            return Err(ConsoleError::Forbidden);
        }
        let state = &self.state;
        let status = policy_status(state, &viewer.tenant_id).await.map_err(unavailable)?;
        let (flash, backtest, candidate) = match &session {
            Some(s) => (
                s.remove::<String>(POLICY_FLASH).await.ok().flatten(),
                s.remove::<Vec<String>>(POLICY_BACKTEST).await.ok().flatten().unwrap_or_default(),
                s.get::<String>(POLICY_CANDIDATE).await.ok().flatten(),
            ),
            None => (None, Vec::new(), None),
        };
        let candidate = candidate.unwrap_or_else(|| crate::decision::policy::convert::to_cedar(&state.settings.policy));
        let admin = crate::decision::registry_changes::Admin {
            user_id: viewer.user_id.clone(),
            username: viewer.username.clone(),
            tenant_id: viewer.tenant_id.clone(),
            roles: viewer.roles.clone(),
        };
        let mut conn = state.db.reader().await.map_err(unavailable)?;
        let names: std::collections::HashMap<String, String> =
            crate::store::directory::users_of(&mut conn, &viewer.tenant_id)
                .await
                .map_err(unavailable)?
                .into_iter()
                .map(|u| (u.id, u.username))
                .collect();
        drop(conn);
        let pending = crate::decision::registry_changes::pending(state, &admin)
            .await
            .map_err(unavailable)?
            .into_iter()
            .filter(|c| c.kind == "policy")
            .map(|c| PendingChangeRow {
                proposed_by: names.get(&c.proposed_by).cloned().unwrap_or(c.proposed_by),
                id: c.id,
                kind: c.kind,
                lines: c.lines,
                proposed_at: c.proposed_at,
                blocker: c.blocker,
                backtest: c.backtest.map(|r| r.lines()).unwrap_or_default(),
            })
            .collect();
        Ok(PolicyPage {
            enforced: status.enforced,
            observed: status.observed,
            observations: status
                .observations
                .into_iter()
                .map(|o| ObservationRow {
                    proposal_id: o.proposal_id,
                    amount: o.amount,
                    change: o.change.replace("->", "→"),
                    enforced_rules: o.enforced_rules.join(", "),
                    observed_rules: o.observed_rules.join(", "),
                    at: o.at,
                })
                .collect(),
            backtest,
            candidate,
            pending,
            flash,
        })
    }
}

/// One proposal the observed candidate would have decided differently.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Observation {
    /// Empty when the enforced policy refused it (not stored).
    pub proposal_id: String,
    pub request_hash: String,
    pub amount: String,
    /// `auto_approved -> needs_approval`, `needs_approval -> refused`, …
    pub change: String,
    /// The rules of each decision.
    pub enforced_rules: Vec<String>,
    pub observed_rules: Vec<String>,
    pub at: String,
}

/// What decides for the tenant, and what observe mode saw.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PolicyStatus {
    /// "the TOML rules ([policy])" or "Cedar policy sha256:…".
    pub enforced: String,
    /// The observed candidate, if one is.
    pub observed: Option<String>,
    /// The newest differences (at most 100).
    pub observations: Vec<Observation>,
}

fn rules_of(json: &str) -> Vec<String> {
    serde_json::from_str::<crate::decision::policy::Decision>(json)
        .map(|d| d.reasons.into_iter().map(|r| r.rule).collect())
        .unwrap_or_default()
}

/// What decides for `tenant` and observe mode's newest differences (the
/// page and `GET /api/v1/admin/policy`).
pub async fn policy_status(state: &Shared, tenant: &str) -> Result<PolicyStatus, crate::store::StoreError> {
    let policies = state.settings.policies.for_tenant(tenant);
    let rows = crate::store::policies::observations(&state.db.read, tenant, 100).await?;
    Ok(PolicyStatus {
        enforced: policies.enforced.label(),
        observed: policies.observed.as_ref().map(Engine::label),
        observations: rows
            .into_iter()
            .map(|o| Observation {
                amount: crate::domain::Currency::parse(&o.currency)
                    .map(|c| c.format_minor(o.amount_minor))
                    .unwrap_or_else(|_| format!("{} {}", o.amount_minor, o.currency)),
                enforced_rules: rules_of(&o.enforced),
                observed_rules: rules_of(&o.observed),
                proposal_id: o.proposal_id,
                request_hash: o.request_hash,
                change: o.change,
                at: crate::store::ts(o.at),
            })
            .collect(),
    })
}
