//! The admin page's rows, made from what the store and the webhooks hold
//! (the console service's `admin_data` assembles them).

use std::collections::HashMap;

use app::views::{DeliveryRow, FreezeRow, WebhookRow};

use crate::store;

/// A webhook and its log as the admin page shows them.
pub fn webhook_row(w: crate::notify::webhooks::Overview) -> WebhookRow {
    WebhookRow {
        agent_id: w.agent_id,
        target: w.target,
        failed_attempts: w.failed_attempts,
        next_attempt_at: w.next_attempt_at.map(store::ts),
        queued_redeliveries: w.queued_redeliveries,
        deliveries: w
            .log
            .into_iter()
            .map(|d| DeliveryRow {
                at: store::ts(d.at),
                id: d.id,
                proposal_id: d.proposal_id,
                event_id: d.event_id,
                outcome: d.outcome,
                http_status: d.http_status,
                error: d.error,
                attempt: d.attempt,
                redelivery: d.redelivery_id.is_some(),
            })
            .collect(),
    }
}

/// A freeze as the admin page shows it: the author by username, the
/// operator's global freeze not liftable here.
pub fn freeze_row(f: store::freezes::FreezeRow, names: &HashMap<String, String>) -> FreezeRow {
    let scope = f.scope();
    FreezeRow {
        what: scope.describe(),
        agent: (f.scope == "agent").then(|| f.agent_id.clone()),
        liftable: scope != store::freezes::Scope::All,
        frozen_by: f
            .frozen_by
            .strip_prefix("user:")
            .map(|id| names.get(id).cloned().unwrap_or_else(|| id.to_owned()))
            .unwrap_or(f.frozen_by),
        reason: f.reason,
        at: store::ts(f.at),
    }
}
