//! Background housekeeping: pending proposals past their TTL become
//! `expired`; idempotency keys past their retention are purged.

use crate::shutdown::Shutdown;
use chrono::{Duration, Utc};
use std::time::Duration as StdDuration;

use crate::state::Shared;

/// Runs until `shutdown` fires.
pub async fn run(state: Shared, shutdown: Shutdown) {
    let every = StdDuration::from_secs(state.settings.proposals.expiry_sweep_secs);
    let retention = Duration::hours(state.settings.idempotency.retention_hours as i64);
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = shutdown.wait() => return,
        }
        let now = Utc::now();
        match crate::proposals::expire_due(&state, now).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(expired = n, "expired pending proposals"),
            Err(e) => tracing::error!(error = %e, "expiry sweep failed"),
        }
        match crate::approvals::expire_approvals(&state, now).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(expired = n, "approvals expired unredeemed"),
            Err(e) => tracing::error!(error = %e, "approval expiry sweep failed"),
        }
        if let Err(e) = crate::store::idempotency::purge(&state.db.write, now, retention).await {
            tracing::error!(error = %e, "idempotency key purge failed");
        }
    }
}
