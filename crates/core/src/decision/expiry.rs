//! Background housekeeping: waiting proposals due for escalation are
//! escalated (`crate::decision::escalation`); pending proposals past their TTL become
//! `expired`; idempotency keys past their retention and expired console
//! sessions and single sign-ons nobody came back from are purged.

use crate::config::Config;
use crate::domain::ProposalStatus;
use crate::notify::outbound::Outbound;
use crate::notify::slack::outbox;
use crate::platform::changes::Notifier;
use crate::platform::clock::Clock;
use crate::platform::shutdown::Shutdown;
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
            + crate::notify::teams::TeamsOutbound
            + crate::notify::Reaching
            + Send
            + Sync
            + 'static,
    >,
    shutdown: Shutdown,
) {
    let every = StdDuration::from_secs(state.settings().proposals.expiry_sweep_secs);
    let retention = Duration::hours(state.settings().idempotency.retention_hours as i64);
    crate::platform::shutdown::every(every, &shutdown, || sweep(&state, retention)).await;
}

async fn sweep(
    state: &std::sync::Arc<
        impl Store
            + Clock
            + Config
            + Notifier
            + Outbound
            + crate::notify::teams::TeamsOutbound
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
    match crate::decision::escalation::escalate_due(&**state, now).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(escalated = n, "escalated waiting proposals"),
        Err(e) => tracing::error!(error = %e, "escalation sweep failed"),
    }
    pause().await;
    match crate::intake::proposals::expire_due(&**state, now).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(expired = n, "expired pending proposals"),
        Err(e) => tracing::error!(error = %e, "expiry sweep failed"),
    }
    pause().await;
    match crate::payables::batches::expire_due(&**state, now).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(moved = n, "expired batches and lapsed batch approvals"),
        Err(e) => tracing::error!(error = %e, "batch expiry sweep failed"),
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

/// Moves the approved proposal `id` to `approval_expired` in `tx` and
/// starts a new approval round, audited (`proposal.approval_expired`, by
/// `actor`, with `data`) and announced to the approvers (Slack and Teams: "approval
/// lapsed, approve again"; email and push). `None` when it was no longer
/// approved; else whether a Slack message was queued. Its token can then
/// commit nothing (commit asks for `approved`).
pub async fn lapse(
    state: &(impl Config + Outbound + crate::notify::Reaching),
    tx: &mut crate::store::Conn,
    (id, tenant, hash): (&str, &str, &str),
    actor: &str,
    data: serde_json::Value,
    now: DateTime<Utc>,
) -> crate::store::Result<Option<bool>> {
    if !proposals::transition(tx, id, &[ProposalStatus::Approved], ProposalStatus::ApprovalExpired, now).await? {
        return Ok(None);
    }
    proposals::next_round(tx, id).await?;
    let entry = AuditEntry {
        tenant_id: Some(tenant.to_owned()),
        actor: actor.to_owned(),
        action: "proposal.approval_expired".into(),
        proposal_id: Some(id.to_owned()),
        request_hash: Some(hash.to_owned()),
        data,
    };
    audit::append(tx, &entry).await?;
    let mut announced = false;
    if let Some(row) = proposals::get_in(tx, tenant, id).await? {
        let mut card = outbox::card(state, id, &row.request, hash, row.required_approvals);
        card.groups = crate::decision::policy::describe_groups(&row.policy.groups);
        announced = outbox::announce_lapsed(state, tx, &card, now).await?;
        let mut card = crate::notify::teams::card(state, id, &row.request, hash, row.required_approvals);
        card.groups = crate::decision::policy::describe_groups(&row.policy.groups);
        let note = "The approval lapsed: the agent did not pay before the approval expired. It needs approving again.";
        crate::notify::teams::announce(state, tx, &card, Some(note), now).await?;
        crate::notify::announce_now(state, tx, tenant, id, Kind::Arrived, now).await?;
    }
    Ok(Some(announced))
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
          + crate::notify::outbound::Outbound
          + crate::notify::teams::TeamsOutbound
          + crate::notify::Reaching),
    now: DateTime<Utc>,
) -> crate::store::Result<usize> {
    let cutoff = now - Duration::seconds(crate::decision::approval::token::LEEWAY_SECS);
    let mut tx = state.db().begin().await?;
    let due = proposals::approvals_expired_before(&mut tx, cutoff).await?;
    let mut moved = Vec::new();
    let mut announced = false;
    for (id, tenant, hash) in due {
        let reason = json!({"from": ProposalStatus::Approved, "to": ProposalStatus::ApprovalExpired});
        if let Some(told) = lapse(state, &mut tx, (&id, &tenant, &hash), "system:expiry", reason, now).await? {
            announced |= told;
            moved.push(id);
        }
    }
    tx.commit().await?;
    if announced {
        outbox::wake(state);
    }
    if !moved.is_empty() {
        crate::notify::teams::wake(state);
        crate::notify::wake(state);
    }
    for id in &moved {
        state.changes().publish(id);
    }
    Ok(moved.len())
}
