//! Process metrics in the Prometheus text format (`GET /metrics`, behind a
//! bearer token, docs/CONFIG.md): requests by route, method and status with
//! their latency, and the duration and outcome of the use cases that matter
//! (propose, decide, commit, reconcile; recorded by the core,
//! `countersign_core::platform::metrics`). Everything goes through the `metrics`
//! facade into the process's one Prometheus recorder
//! (`metrics-exporter-prometheus`), which renders the text. No label ever
//! holds a tenant, a user, an id or an amount: routes are templates
//! (`/api/v1/proposals/{id}`).

pub use countersign_core::platform::metrics::record_gauges;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

/// Buckets of what waits on people and their devices, in seconds.
const HUMAN_BUCKETS: [f64; 10] = [0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0];

/// Buckets of the time people take to decide, in seconds (10 s to a day).
const DECISION_BUCKETS: [f64; 10] = [10.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 14_400.0, 43_200.0, 86_400.0];

const REQUESTS: &str = "countersign_http_requests_total";
const REQUEST_SECONDS: &str = "countersign_http_request_duration_seconds";

/// The process's recorder, installed at the first use.
static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The metrics of this process (every server of a process shares them).
#[derive(Clone)]
pub struct Metrics {
    handle: PrometheusHandle,
}

impl Metrics {
    /// The process's metrics, installing the recorder the first time.
    pub fn shared() -> Metrics {
        let handle = HANDLE.get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets(&BUCKETS)
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        metrics_exporter_prometheus::Matcher::Full(
                            countersign_core::platform::metrics::NOTIFICATION_DELAY.into(),
                        ),
                        &HUMAN_BUCKETS,
                    )
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        metrics_exporter_prometheus::Matcher::Full(
                            countersign_core::platform::metrics::DECISION_DELAY.into(),
                        ),
                        &DECISION_BUCKETS,
                    )
                })
                .expect("latency buckets")
                .build_recorder();
            let handle = recorder.handle();
            // Another recorder (a test's) may be installed already: then
            // this handle renders what is recorded here, which is nothing.
            let _ = metrics::set_global_recorder(recorder);
            metrics::describe_counter!(REQUESTS, "HTTP requests answered, by route template, method and status.");
            metrics::describe_histogram!(REQUEST_SECONDS, "Time to answer, by route template and method.");
            metrics::describe_histogram!(
                countersign_core::platform::metrics::USE_CASE_SECONDS,
                "Duration of propose, decide, commit and reconcile, by outcome."
            );
            describe_business();
            handle
        });
        Metrics { handle: handle.clone() }
    }

    /// One HTTP request: its route template (or `unmatched`), method,
    /// status and how long it took.
    pub fn request(&self, route: &str, method: &'static str, status: u16, took: Duration) {
        let route = route.to_owned();
        metrics::counter!(REQUESTS, "route" => route.clone(), "method" => method, "status" => status.to_string())
            .increment(1);
        metrics::histogram!(REQUEST_SECONDS, "route" => route, "method" => method).record(took.as_secs_f64());
    }

    /// [`Metrics::request`] through the handles `route` keeps for the route
    /// and method it serves: no label is built, hashed or looked up per
    /// request, only two atomic updates (the status poll's path). A request
    /// the handles do not fit goes the long way.
    pub fn request_on(&self, route: &RouteMetrics, template: &str, method: &'static str, status: u16, took: Duration) {
        let (known, known_method) = route.key.get_or_init(|| (template.to_owned(), method));
        let slot = STATUSES.iter().position(|s| *s == status);
        let (Some(slot), true) = (slot, known == template && *known_method == method) else {
            return self.request(template, method, status, took);
        };
        route.counters[slot]
            .get_or_init(|| {
                metrics::counter!(REQUESTS, "route" => known.clone(), "method" => method, "status" => status.to_string())
            })
            .increment(1);
        route
            .histogram
            .get_or_init(|| metrics::histogram!(REQUEST_SECONDS, "route" => known.clone(), "method" => method))
            .record(took.as_secs_f64());
    }

    /// Drains the histograms' samples into their buckets. Samples wait in
    /// memory until then: without it, a server nobody scrapes would keep
    /// every request's latency (run every few seconds, `startup`).
    pub fn upkeep(&self) {
        self.handle.run_upkeep();
    }

    /// Everything, in the Prometheus text exposition format.
    pub fn render(&self) -> String {
        self.handle.render()
    }
}

/// The statuses whose counters a route keeps at hand; any other is counted
/// the long way.
const STATUSES: [u16; 16] = [200, 201, 202, 204, 303, 304, 400, 401, 403, 404, 405, 409, 415, 422, 429, 500];

/// The metric handles of one route and method ([`Metrics::request_on`]),
/// made at their first request.
#[derive(Default)]
pub struct RouteMetrics {
    key: OnceLock<(String, &'static str)>,
    histogram: OnceLock<metrics::Histogram>,
    counters: [OnceLock<metrics::Counter>; STATUSES.len()],
}

/// The help lines of the business metrics (`countersign_core::platform::metrics`).
fn describe_business() {
    use countersign_core::platform::metrics as m;
    metrics::describe_histogram!(
        m::NOTIFICATION_DELAY,
        "From a proposal's creation to its approvers' first notification delivered, by channel (email, push)."
    );
    metrics::describe_histogram!(
        m::DECISION_DELAY,
        "From a proposal's creation to a person's decision on it, by channel (console, slack)."
    );
    metrics::describe_counter!(m::PROPOSALS, "Proposals created, by the status they were created in.");
    metrics::describe_counter!(m::DECISIONS, "Approvers' decisions recorded, by channel and verdict.");
    metrics::describe_counter!(m::COMMITS, "Commits answered, by the payment's status after them (or refused).");
    metrics::describe_counter!(
        m::POLICY_OBSERVED_DIFFERENCES,
        "Proposals the observed candidate policy would have decided differently, by change (never enforced)."
    );
    metrics::describe_gauge!(m::OPERATIONS_OPEN, "Operations waiting on the rail or a person, by status.");
    metrics::describe_gauge!(m::OUTBOX_BACKLOG, "Messages not delivered yet, by outbox (slack, webhook).");
    metrics::describe_gauge!(m::OUTBOX_OLDEST_AGE, "Age of the oldest message not delivered yet, by outbox.");
    metrics::describe_gauge!(
        m::RECONCILIATION_LAG,
        "How long the oldest unsettled operation has waited since it was recorded."
    );
    metrics::describe_gauge!(m::TOKENS_EXPIRED_UNUSED, "Approval tokens that expired without a commit.");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_cumulative_histograms() {
        let m = Metrics::shared();
        let route = "/test/metrics/{id}";
        m.request(route, "GET", 200, Duration::from_millis(3));
        m.request(route, "GET", 200, Duration::from_millis(30));
        m.request(route, "GET", 304, Duration::from_secs(20));
        let text = m.render();
        assert!(text.contains(&format!("{REQUESTS}{{route=\"{route}\",method=\"GET\",status=\"200\"}} 2")), "{text}");
        assert!(text.contains(&format!("{REQUESTS}{{route=\"{route}\",method=\"GET\",status=\"304\"}} 1")), "{text}");
        let prefix = format!("{REQUEST_SECONDS}_bucket{{route=\"{route}\",method=\"GET\"");
        assert!(text.contains(&format!("{prefix},le=\"0.005\"}} 1")), "{text}");
        assert!(text.contains(&format!("{prefix},le=\"0.05\"}} 2")), "{text}");
        assert!(text.contains(&format!("{prefix},le=\"+Inf\"}} 3")), "beyond the last bound still counts: {text}");
    }

    #[test]
    fn a_route_s_kept_handles_count_as_the_long_way_does() {
        let m = Metrics::shared();
        let handles = RouteMetrics::default();
        let (route, other) = ("/test/handles/{id}", "/test/handles-other");
        m.request_on(&handles, route, "GET", 200, Duration::from_millis(3));
        m.request_on(&handles, route, "GET", 200, Duration::from_millis(30));
        // a status with no slot, another method, another route: the long way
        m.request_on(&handles, route, "GET", 418, Duration::from_millis(3));
        m.request_on(&handles, route, "POST", 200, Duration::from_millis(3));
        m.request_on(&handles, other, "GET", 200, Duration::from_millis(3));
        m.upkeep();
        let text = m.render();
        let count = |r: &str, method: &str, status: u16| {
            format!("{REQUESTS}{{route=\"{r}\",method=\"{method}\",status=\"{status}\"}}")
        };
        assert!(text.contains(&format!("{} 2", count(route, "GET", 200))), "{text}");
        assert!(text.contains(&format!("{} 1", count(route, "GET", 418))), "{text}");
        assert!(text.contains(&format!("{} 1", count(route, "POST", 200))), "{text}");
        assert!(text.contains(&format!("{} 1", count(other, "GET", 200))), "{text}");
        let buckets = format!("{REQUEST_SECONDS}_bucket{{route=\"{route}\",method=\"GET\"");
        assert!(text.contains(&format!("{buckets},le=\"0.005\"}} 2")), "{text}");
        assert!(text.contains(&format!("{buckets},le=\"+Inf\"}} 3")), "{text}");
    }

    #[tokio::test]
    async fn use_cases_record_their_outcome() {
        let m = Metrics::shared();
        let ok: Result<u8, ()> = countersign_core::platform::metrics::use_case("test-case", async { Ok(1) }).await;
        let err: Result<u8, ()> = countersign_core::platform::metrics::use_case("test-case", async { Err(()) }).await;
        assert_eq!((ok, err), (Ok(1), Err(())));
        let text = m.render();
        assert!(text.contains("countersign_use_case_duration_seconds_count{use_case=\"test-case\",outcome=\"ok\"} 1"));
        assert!(
            text.contains("countersign_use_case_duration_seconds_count{use_case=\"test-case\",outcome=\"error\"} 1")
        );
    }
}
