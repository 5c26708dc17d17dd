//! The kill switch (docs/SECURITY.md "Kill switch"): an admin
//! freezes an agent or the whole tenant in one click, the operator every
//! commit at once (`countersign freeze --all`). A frozen commit is refused
//! inside the commit's write transaction, before any rail call, with
//! `policy_denied` and the rule `kill_switch`; every instance reads the
//! same table, so a freeze holds everywhere from the next commit. Freezing
//! applies at once; lifting an admin's freeze is a registry change a second
//! admin confirms (`registry_changes`).

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::store::audit::AuditEntry;
use crate::store::freezes::{self, FreezeRow, Scope};
use crate::store::Conn;

/// Freezes (`frozen`) or lifts `scope` in the caller's transaction, audited
/// as `kill_switch.frozen` / `kill_switch.lifted` when it changed anything.
/// `confirmed_by`: the second admin who confirmed a lift.
pub async fn set(
    conn: &mut Conn,
    scope: &Scope,
    frozen: bool,
    actor: &str,
    reason: &str,
    confirmed_by: Option<&str>,
    now: DateTime<Utc>,
) -> crate::store::Result<bool> {
    let before = freezes::get(conn, scope).await?;
    let changed = if frozen {
        freezes::freeze(conn, scope, actor, reason, now).await?
    } else {
        freezes::lift(conn, scope).await?
    };
    if changed {
        let (tenant, agent) = match scope {
            Scope::All => (None, None),
            Scope::Tenant(t) => (Some(t.clone()), None),
            Scope::Agent { tenant, agent } => (Some(tenant.clone()), Some(agent.clone())),
        };
        let mut data = json!({"scope": scope.describe(), "agent_id": agent});
        if frozen {
            data["reason"] = json!(reason);
        } else if let Some(before) = before {
            data["frozen_by"] = json!(before.frozen_by);
            data["frozen_reason"] = json!(before.reason);
            data["confirmed_by"] = json!(confirmed_by);
        }
        let entry = AuditEntry {
            tenant_id: tenant,
            actor: actor.to_owned(),
            action: if frozen { "kill_switch.frozen" } else { "kill_switch.lifted" }.into(),
            proposal_id: None,
            request_hash: None,
            data,
        };
        crate::store::audit::append(conn, &entry).await?;
    }
    Ok(changed)
}

/// What the refused agent reads: which freeze, since when, and why.
pub fn refusal(freeze: &FreezeRow) -> String {
    format!(
        "Commits are frozen ({}) since {} by {}: {}. Nothing was sent to the rail.",
        freeze.scope().describe(),
        crate::store::ts(freeze.at),
        freeze.frozen_by,
        freeze.reason
    )
}

/// After an agent's `acts_for` changed (a confirmed change, the operator's
/// provisioning): lifts the freeze its previous principal's deactivation
/// put on it, when it now acts for someone else who is active (audited as
/// `kill_switch.lifted`). An admin's own freeze of it stays. Whether it
/// was lifted.
pub async fn thaw_if_reassigned(
    conn: &mut Conn,
    tenant: &str,
    agent: &str,
    actor: &str,
    confirmed_by: Option<&str>,
) -> crate::store::Result<bool> {
    let Some((left, reason, at)) = crate::store::people::offboarding_freeze(conn, tenant, agent).await? else {
        return Ok(false);
    };
    let Some(current) = crate::store::directory::agent(conn, tenant, agent).await? else { return Ok(false) };
    if current.acts_for == left {
        return Ok(false);
    }
    let principal = crate::store::directory::user_by_id(conn, &current.acts_for).await?;
    if !principal.is_some_and(|u| u.active && u.tenant_id == tenant) {
        return Ok(false);
    }
    if !crate::store::people::lift_offboarding_freeze(conn, tenant, agent).await? {
        return Ok(false);
    }
    let entry = AuditEntry {
        tenant_id: Some(tenant.to_owned()),
        actor: actor.to_owned(),
        action: "kill_switch.lifted".into(),
        proposal_id: None,
        request_hash: None,
        data: json!({"scope": format!("agent {agent}'s commits"), "agent_id": agent, "frozen_reason": reason,
                     "frozen_at": crate::store::ts(at), "offboarding_of": left, "acts_for": current.acts_for,
                     "confirmed_by": confirmed_by}),
    };
    crate::store::audit::append(conn, &entry).await?;
    Ok(true)
}
