//! Process metrics in the Prometheus text format (`GET /metrics`, behind a
//! bearer token, docs/CONFIG.md): requests by route, method and status with
//! their latency, and the duration and outcome of the use cases that matter
//! (propose, decide, commit, reconcile). No label ever holds a tenant, a
//! user, an id or an amount: routes are templates (`/api/v1/proposals/{id}`).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

#[derive(Debug, Default, Clone)]
struct Histogram {
    /// Observations at or below each bucket's bound (not cumulative here).
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        if let Some(i) = BUCKETS.iter().position(|b| seconds <= *b) {
            self.buckets[i] += 1;
        }
        self.count += 1;
        self.sum += seconds;
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        for (bound, n) in BUCKETS.iter().zip(self.buckets) {
            cumulative += n;
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {cumulative}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
    }
}

/// One route template's counts: per (method, status), and latency per method.
#[derive(Default)]
struct RouteStats {
    requests: Vec<(String, u16, u64)>,
    latency: Vec<(String, Histogram)>,
}

#[derive(Default)]
struct Registry {
    /// Keyed by route template, so that a request allocates nothing once its
    /// route has been seen (the hot path of a status poll).
    routes: std::collections::HashMap<String, RouteStats>,
    /// (use case, outcome) → duration.
    use_cases: BTreeMap<(&'static str, &'static str), Histogram>,
}

#[derive(Default)]
pub struct Metrics {
    registry: Mutex<Registry>,
}

/// A label value, escaped as the text format wants it.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

impl Metrics {
    /// One HTTP request: its route template (or `unmatched`), method,
    /// status and how long it took.
    pub fn request(&self, route: &str, method: &str, status: u16, took: Duration) {
        let mut r = self.registry.lock().expect("metrics lock");
        let stats = match r.routes.get_mut(route) {
            Some(stats) => stats,
            None => r.routes.entry(route.to_owned()).or_default(),
        };
        match stats.requests.iter_mut().find(|(m, s, _)| m == method && *s == status) {
            Some((_, _, n)) => *n += 1,
            None => stats.requests.push((method.to_owned(), status, 1)),
        }
        let seconds = took.as_secs_f64();
        match stats.latency.iter_mut().find(|(m, _)| m == method) {
            Some((_, h)) => h.observe(seconds),
            None => {
                let mut h = Histogram::default();
                h.observe(seconds);
                stats.latency.push((method.to_owned(), h));
            }
        }
    }

    /// Runs a use case and records how long it took and whether it succeeded.
    pub async fn use_case<T, E>(&self, name: &'static str, work: impl Future<Output = Result<T, E>>) -> Result<T, E> {
        let started = Instant::now();
        let result = work.await;
        let outcome = if result.is_ok() { "ok" } else { "error" };
        let took = started.elapsed().as_secs_f64();
        self.registry.lock().expect("metrics lock").use_cases.entry((name, outcome)).or_default().observe(took);
        result
    }

    /// Everything, in the Prometheus text exposition format.
    pub fn render(&self) -> String {
        let r = self.registry.lock().expect("metrics lock");
        let mut out = String::new();
        out.push_str(
            "# HELP countersign_http_requests_total HTTP requests answered, by route template, method and status.\n",
        );
        out.push_str("# TYPE countersign_http_requests_total counter\n");
        let mut routes: Vec<(&String, &RouteStats)> = r.routes.iter().collect();
        routes.sort_by(|a, b| a.0.cmp(b.0));
        for (route, stats) in &routes {
            for (method, status, n) in &stats.requests {
                let _ = writeln!(
                    out,
                    "countersign_http_requests_total{{route=\"{}\",method=\"{}\",status=\"{status}\"}} {n}",
                    escape(route),
                    escape(method)
                );
            }
        }
        out.push_str(
            "# HELP countersign_http_request_duration_seconds Time to answer, by route template and method.\n",
        );
        out.push_str("# TYPE countersign_http_request_duration_seconds histogram\n");
        for (route, stats) in &routes {
            for (method, h) in &stats.latency {
                let labels = format!("route=\"{}\",method=\"{}\"", escape(route), escape(method));
                h.render(&mut out, "countersign_http_request_duration_seconds", &labels);
            }
        }
        out.push_str("# HELP countersign_use_case_duration_seconds Duration of propose, decide, commit and reconcile, by outcome.\n");
        out.push_str("# TYPE countersign_use_case_duration_seconds histogram\n");
        for ((name, outcome), h) in &r.use_cases {
            let labels = format!("use_case=\"{name}\",outcome=\"{outcome}\"");
            h.render(&mut out, "countersign_use_case_duration_seconds", &labels);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_cumulative_histograms() {
        let m = Metrics::default();
        m.request("/api/v1/proposals/{id}", "GET", 200, Duration::from_millis(3));
        m.request("/api/v1/proposals/{id}", "GET", 200, Duration::from_millis(30));
        m.request("/api/v1/proposals/{id}", "GET", 304, Duration::from_secs(20));
        let text = m.render();
        assert!(
            text.contains(
                "countersign_http_requests_total{route=\"/api/v1/proposals/{id}\",method=\"GET\",status=\"200\"} 2"
            ),
            "{text}"
        );
        assert!(text.contains("status=\"304\"} 1"), "{text}");
        let prefix = "countersign_http_request_duration_seconds_bucket{route=\"/api/v1/proposals/{id}\",method=\"GET\"";
        assert!(text.contains(&format!("{prefix},le=\"0.005\"}} 1")), "{text}");
        assert!(text.contains(&format!("{prefix},le=\"0.05\"}} 2")), "{text}");
        assert!(text.contains(&format!("{prefix},le=\"+Inf\"}} 3")), "beyond the last bound still counts: {text}");
    }

    #[tokio::test]
    async fn use_cases_record_their_outcome() {
        let m = Metrics::default();
        let ok: Result<u8, ()> = m.use_case("commit", async { Ok(1) }).await;
        let err: Result<u8, ()> = m.use_case("commit", async { Err(()) }).await;
        assert_eq!((ok, err), (Ok(1), Err(())));
        let text = m.render();
        assert!(text.contains("countersign_use_case_duration_seconds_count{use_case=\"commit\",outcome=\"ok\"} 1"));
        assert!(text.contains("countersign_use_case_duration_seconds_count{use_case=\"commit\",outcome=\"error\"} 1"));
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
