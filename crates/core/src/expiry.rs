//! Background housekeeping: pending proposals past their TTL become
//! `expired`; idempotency keys past their retention and expired console
//! sessions and single sign-ons nobody came back from are purged.

use crate::changes::Notifier;
use crate::clock::Clock;
use crate::config::Config;
use crate::outbound::Outbound;
use crate::shutdown::Shutdown;
use crate::store::Store;
use chrono::Duration;
use std::time::Duration as StdDuration;

/// Runs until `shutdown` fires.
pub async fn run(
    state: std::sync::Arc<impl Store + Clock + Config + Notifier + Outbound + Send + Sync + 'static>,
    shutdown: Shutdown,
) {
    let every = StdDuration::from_secs(state.settings().proposals.expiry_sweep_secs);
    let retention = Duration::hours(state.settings().idempotency.retention_hours as i64);
    crate::shutdown::every(every, &shutdown, || sweep(&state, retention)).await;
}

async fn sweep(
    state: &std::sync::Arc<impl Store + Clock + Config + Notifier + Outbound + Send + Sync + 'static>,
    retention: Duration,
) {
    let now = state.now();
    match crate::proposals::expire_due(&**state, now).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(expired = n, "expired pending proposals"),
        Err(e) => tracing::error!(error = %e, "expiry sweep failed"),
    }
    match crate::approvals::expire_approvals(&**state, now).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(expired = n, "approvals expired unredeemed"),
        Err(e) => tracing::error!(error = %e, "approval expiry sweep failed"),
    }
    if let Err(e) = crate::store::idempotency::purge(&state.db().write, now, retention).await {
        tracing::error!(error = %e, "idempotency key purge failed");
    }
    if let Err(e) = crate::store::sessions::delete_expired(&state.db().write, state.now()).await {
        tracing::error!(error = %e, "expired session purge failed");
    }
    if let Err(e) = crate::store::oidc::delete_expired(&state.db().write, state.now()).await {
        tracing::error!(error = %e, "expired single sign-on purge failed");
    }
}
