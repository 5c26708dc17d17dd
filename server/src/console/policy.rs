//! The policy page's data (`/admin/policy`, admins): the tenant's enforced
//! and observed policies, observe mode's differences, the backtest the
//! admin last asked for (kept in their session, shown once) and the policy
//! changes waiting for a second admin.

use app::views::{ConsoleError, ObservationRow, PendingChangeRow, PolicyPage, Viewer};

use super::{unavailable, ConsoleService};

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
        let status = crate::http::policy::policy_status(state, &viewer.tenant_id).await.map_err(unavailable)?;
        let (flash, backtest, candidate) = match &session {
            Some(s) => (
                s.remove::<String>(POLICY_FLASH).await.ok().flatten(),
                s.remove::<Vec<String>>(POLICY_BACKTEST).await.ok().flatten().unwrap_or_default(),
                s.get::<String>(POLICY_CANDIDATE).await.ok().flatten(),
            ),
            None => (None, Vec::new(), None),
        };
        let candidate = candidate.unwrap_or_else(|| crate::policy::convert::to_cedar(&state.settings.policy));
        let admin = crate::registry_changes::Admin {
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
        let pending = crate::registry_changes::pending(state, &admin)
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
