//! Use-case metrics through the `metrics` facade: how long the use cases
//! that matter (propose, decide, commit, reconcile) took, and whether they
//! succeeded. The server installs the Prometheus recorder that renders them
//! (`GET /metrics`). No label ever holds a tenant, a user, an id or an amount.

use std::future::Future;
use std::time::Instant;

/// The use-case duration histogram's name.
pub const USE_CASE_SECONDS: &str = "countersign_use_case_duration_seconds";

/// Runs a use case and records how long it took and whether it succeeded:
/// in the metric, and as `outcome` (and `otel.status_code` on an error) of
/// the use case's span, which declares both (the trace exporter sends them
/// as attributes: docs/DEPLOY.md "Tracing").
pub async fn use_case<T, E>(name: &'static str, work: impl Future<Output = Result<T, E>>) -> Result<T, E> {
    let started = Instant::now();
    let result = work.await;
    let outcome = if result.is_ok() { "ok" } else { "error" };
    let span = tracing::Span::current();
    span.record("outcome", outcome);
    if result.is_err() {
        span.record("otel.status_code", "ERROR");
    }
    metrics::histogram!(USE_CASE_SECONDS, "use_case" => name, "outcome" => outcome)
        .record(started.elapsed().as_secs_f64());
    result
}

/// Proposals created, by the status they were created in.
pub const PROPOSALS: &str = "countersign_proposals_total";
/// Decisions recorded, by channel (`console`, `api`, `slack`, …) and verdict;
/// a batch's decision is one (never one per line).
pub const DECISIONS: &str = "countersign_decisions_total";
/// Commits answered, by outcome: the payment's status after the commit,
/// or `refused`.
pub const COMMITS: &str = "countersign_commits_total";
/// Operations waiting on the rail or a person, by status (`unknown`,
/// `needs_review`).
pub const OPERATIONS_OPEN: &str = "countersign_operations_open";
/// Messages not delivered yet, by outbox (`slack`, `webhook`).
pub const OUTBOX_BACKLOG: &str = "countersign_outbox_backlog";
/// Age of the oldest message not delivered yet, by outbox (0: none).
pub const OUTBOX_OLDEST_AGE: &str = "countersign_outbox_oldest_age_seconds";
/// How long the oldest operation not settled yet (pending, accepted,
/// unknown) has waited since it was recorded (0: none).
pub const RECONCILIATION_LAG: &str = "countersign_reconciliation_lag_seconds";
/// Approval tokens that expired without a commit.
pub const TOKENS_EXPIRED_UNUSED: &str = "countersign_approval_tokens_expired_unused";

/// Proposal created → its first notice delivered, by channel (email, push,
/// slack; not the reminders before expiry).
pub const NOTIFICATION_DELAY: &str = "countersign_notification_delay_seconds";

/// Proposal (or batch) created → a person's decision, by channel.
pub const DECISION_DELAY: &str = "countersign_decision_delay_seconds";

/// A person decided (`channel`: console, slack…) `took` after the proposal was created.
pub fn decided_after(channel: &'static str, took: std::time::Duration) {
    metrics::histogram!(DECISION_DELAY, "channel" => channel).record(took.as_secs_f64());
}

/// A proposal's first notice on `channel` delivered `took` after it was created.
pub fn notified(channel: &'static str, took: std::time::Duration) {
    metrics::histogram!(NOTIFICATION_DELAY, "channel" => channel).record(took.as_secs_f64());
}

/// Proposals the observed candidate policy would have decided differently
/// from the enforced one, by change (`auto_approved -> needs_approval`…).
pub const POLICY_OBSERVED_DIFFERENCES: &str = "countersign_policy_observed_differences_total";

pub fn policy_difference_observed(change: &str) {
    metrics::counter!(POLICY_OBSERVED_DIFFERENCES, "change" => change.to_owned()).increment(1);
}

/// Proposals escalated to a backup group (`crate::decision::escalation`).
pub const ESCALATIONS: &str = "countersign_escalations_total";

pub fn escalated(count: usize) {
    metrics::counter!(ESCALATIONS).increment(count as u64);
}

pub fn proposal_created(status: &'static str) {
    metrics::counter!(PROPOSALS, "status" => status).increment(1);
}

pub fn decision(channel: &'static str, verdict: &'static str) {
    metrics::counter!(DECISIONS, "channel" => channel, "verdict" => verdict).increment(1);
}

pub fn commit_answered(outcome: &'static str) {
    metrics::counter!(COMMITS, "outcome" => outcome).increment(1);
}

/// Sets the gauges read from the database (`store::gauges`), at a scrape.
pub async fn record_gauges(pool: &crate::store::Pool, now: chrono::DateTime<chrono::Utc>) -> crate::store::Result<()> {
    let g = crate::store::gauges::read(pool, now).await?;
    let age = |at: Option<chrono::DateTime<chrono::Utc>>| {
        at.map_or(0.0, |at| (now - at).num_milliseconds().max(0) as f64 / 1000.0)
    };
    metrics::gauge!(OPERATIONS_OPEN, "status" => "unknown").set(g.unknown as f64);
    metrics::gauge!(OPERATIONS_OPEN, "status" => "needs_review").set(g.needs_review as f64);
    metrics::gauge!(OUTBOX_BACKLOG, "outbox" => "slack").set(g.slack_backlog as f64);
    metrics::gauge!(OUTBOX_BACKLOG, "outbox" => "webhook").set(g.webhook_backlog as f64);
    metrics::gauge!(OUTBOX_OLDEST_AGE, "outbox" => "slack").set(age(g.slack_oldest));
    metrics::gauge!(OUTBOX_OLDEST_AGE, "outbox" => "webhook").set(age(g.webhook_oldest));
    metrics::gauge!(RECONCILIATION_LAG).set(age(g.oldest_unsettled));
    metrics::gauge!(TOKENS_EXPIRED_UNUSED).set(g.tokens_expired_unused as f64);
    Ok(())
}
