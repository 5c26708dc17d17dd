//! Background housekeeping: waiting proposals due for escalation are
//! escalated (`crate::escalation`); pending proposals past their TTL become
//! `expired`; idempotency keys past their retention and expired console
//! sessions and single sign-ons nobody came back from are purged.

use crate::changes::Notifier;
use crate::clock::Clock;
use crate::config::Config;
use crate::domain::ProposalStatus;
use crate::outbound::Outbound;
use crate::shutdown::Shutdown;
use crate::slack::outbox;
use crate::store::audit::{self, AuditEntry};
use crate::store::proposals;
use crate::store::reach::Kind;
use crate::store::Store;
use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use std::time::Duration as StdDuration;

/// Runs until `shutdown` fires.
pub async fn run(
    state: std::sync::Arc<
        impl Store
            + Clock
            + Config
            + Notifier
            + Outbound
            + crate::teams::TeamsOutbound
            + crate::notify::Reaching
            + Send
            + Sync
            + 'static,
    >,
    shutdown: Shutdown,
) {
    let every = StdDuration::from_secs(state.settings().proposals.expiry_sweep_secs);
    let retention = Duration::hours(state.settings().idempotency.retention_hours as i64);
    crate::shutdown::every(every, &shutdown, || sweep(&state, retention)).await;
}

async fn sweep(
    state: &std::sync::Arc<
        impl Store
            + Clock
            + Config
            + Notifier
            + Outbound
            + crate::teams::TeamsOutbound
            + crate::notify::Reaching
            + Send
            + Sync
            + 'static,
    >,
    retention: Duration,
) {
    // Each step waits for a moment between commits (store::priority).
    let pause = || state.db().priority.yield_to_foreground();
    pause().await;
    let now = state.now();
    match crate::escalation::escalate_due(&**state, now).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(escalated = n, "escalated waiting proposals"),
        Err(e) => tracing::error!(error = %e, "escalation sweep failed"),
    }
    pause().await;
    match crate::proposals::expire_due(&**state, now).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(expired = n, "expired pending proposals"),
        Err(e) => tracing::error!(error = %e, "expiry sweep failed"),
    }
    pause().await;
    match expire_approvals(&**state, now).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(expired = n, "approvals expired unredeemed"),
        Err(e) => tracing::error!(error = %e, "approval expiry sweep failed"),
    }
    pause().await;
    if let Err(e) = crate::store::idempotency::purge(&state.db().write, now, retention).await {
        tracing::error!(error = %e, "idempotency key purge failed");
    }
    pause().await;
    if let Err(e) = crate::store::sessions::delete_expired(&state.db().write, state.now()).await {
        tracing::error!(error = %e, "expired session purge failed");
    }
    pause().await;
    if let Err(e) = crate::store::oidc::delete_expired(&state.db().write, state.now()).await {
        tracing::error!(error = %e, "expired single sign-on purge failed");
    }
}

/// Approved proposals whose token expired unredeemed go to
/// `approval_expired`, and a new approval round begins. The approvers are
/// told where they are (the tenant's Slack channel: "approval lapsed,
/// approve again", with the buttons); the agent sees the status change
/// (its status poll, event stream and webhook); the console lists lapsed
/// ones first.
pub async fn expire_approvals(
    state: &(impl Store
          + Notifier
          + Config
          + crate::outbound::Outbound
          + crate::teams::TeamsOutbound
          + crate::notify::Reaching),
    now: DateTime<Utc>,
) -> crate::store::Result<usize> {
    let cutoff = now - Duration::seconds(crate::approval::token::LEEWAY_SECS);
    let mut tx = state.db().begin().await?;
    let due = proposals::approvals_expired_before(&mut tx, cutoff).await?;
    let mut moved = Vec::new();
    let mut announced = false;
    let mut lapsed_on_teams = false;
    for (id, tenant, hash) in due {
        if proposals::transition(&mut tx, &id, &[ProposalStatus::Approved], ProposalStatus::ApprovalExpired, now)
            .await?
        {
            proposals::next_round(&mut tx, &id).await?;
            let entry = AuditEntry {
                tenant_id: Some(tenant.clone()),
                actor: "system:expiry".into(),
                action: "proposal.approval_expired".into(),
                proposal_id: Some(id.clone()),
                request_hash: Some(hash.clone()),
                data: json!({"from": ProposalStatus::Approved, "to": ProposalStatus::ApprovalExpired}),
            };
            audit::append(&mut tx, &entry).await?;
            if let Some(row) = proposals::get_in(&mut tx, &tenant, &id).await? {
                let mut card = outbox::card(state, &id, &row.request, &hash, row.required_approvals);
                card.groups = crate::policy::describe_groups(&row.policy.groups);
                announced |= outbox::announce_lapsed(state, &mut tx, &card, now).await?;
                let mut card = crate::teams::card(state, &id, &row.request, &hash, row.required_approvals);
                card.groups = crate::policy::describe_groups(&row.policy.groups);
                let note =
                    "The approval lapsed: the agent did not pay before the approval expired. It needs approving again.";
                lapsed_on_teams |= crate::teams::announce(state, &mut tx, &card, Some(note), now).await?;
                crate::notify::announce_now(state, &mut tx, &tenant, &id, Kind::Arrived, now).await?;
            }
            moved.push(id);
        }
    }
    tx.commit().await?;
    if announced {
        outbox::wake(state);
    }
    if lapsed_on_teams {
        crate::teams::wake(state);
    }
    if !moved.is_empty() {
        crate::notify::wake(state);
    }
    for id in &moved {
        state.changes().publish(id);
    }
    Ok(moved.len())
}
