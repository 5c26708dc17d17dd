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
