//! Escalation that fails closed (docs/NOTIFICATIONS.md).
//! A tenant's `[[tenants.<id>.escalation]]` rule, chosen by amount band when
//! a proposal starts waiting (`notify::announce` stores the plan), reminds
//! its eligible approvers after N seconds and escalates to a named
//! approval group after M. Escalating is done here, by the expiry sweep:
//! the proposal is marked (once), the step is audited
//! (`proposal.escalated`), the group's members who may approve are told
//! (push and email, through their quiet hours), and the console shows it.
//! Nothing here approves: a proposal nobody decides ends `expired` at its
//! expiry, and the agent reads why in its status (`status_reason`).

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::config::Config;
use crate::notify::Reaching;
use crate::platform::changes::Notifier;
use crate::store::audit::{self, AuditEntry};
use crate::store::{self, Store};

/// Escalates every proposal whose escalation is due; how many.
pub async fn escalate_due(
    state: &(impl Store + Notifier + Config + Reaching),
    now: DateTime<Utc>,
) -> store::Result<usize> {
    // Read first: the sweep runs every few seconds, and most passes find
    // nothing, so they take no write lock (SQLite has one writer).
    if store::escalations::due(&mut *state.db().reader().await?, now).await?.is_empty() {
        return Ok(0);
    }
    let mut tx = state.db().begin().await?;
    let due = store::escalations::due(&mut tx, now).await?;
    let mut escalated = Vec::new();
    for (id, tenant, hash, group) in due {
        if !store::escalations::mark_escalated(&mut tx, &id, now).await? {
            continue;
        }
        let members = state.settings().approval_group(&tenant, &group).unwrap_or_default();
        let entry = AuditEntry {
            tenant_id: Some(tenant.clone()),
            actor: "system:escalation".into(),
            action: "proposal.escalated".into(),
            proposal_id: Some(id.clone()),
            request_hash: Some(hash),
            data: json!({"to": group, "members": members}),
        };
        audit::append(&mut tx, &entry).await?;
        crate::notify::announce_now(state, &mut tx, &tenant, &id, crate::store::reach::Kind::Escalated, now).await?;
        escalated.push(id);
    }
    tx.commit().await?;
    if !escalated.is_empty() {
        crate::notify::wake(state);
        crate::platform::metrics::escalated(escalated.len());
    }
    for id in &escalated {
        state.changes().publish(id);
    }
    Ok(escalated.len())
}
