//! Structured logs: one line per request (`http::observe`), with the
//! request's span. Account numbers and secrets are never passed to a log
//! macro: the types that hold them mask themselves.
//!
//! Traces (`[tracing] otlp_endpoint`, off by default): the spans of this
//! program's own code — each request, and inside it the use case it runs
//! (`propose`, `decide`, `commit`, `reconcile`, with the proposal and
//! operation ids and the outcome as attributes) — exported over OTLP/HTTP
//! (protobuf) by a batch processor on its own thread. Libraries' spans are
//! not exported (the exporter's own HTTP calls would trace themselves).

use crate::config::{LogFormat, TracingSettings};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::level_filters::LevelFilter;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{fmt, EnvFilter, Layer};

/// Flushes and stops the trace exporter when dropped (at exit).
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take() {
            // The batch processor joins its thread: off the async runtime.
            let _ = std::thread::spawn(move || provider.shutdown()).join();
        }
    }
}

/// tower-sessions' targets, at errors only: a malformed or unknown session
/// cookie is answered as signed out, not logged as a warning per request.
const QUIET_SESSIONS: &str = "tower_sessions=error,tower_sessions_core=error";

pub fn init(format: LogFormat, tracing: &TracingSettings) -> Telemetry {
    // tower-sessions warns of every cookie naming no session ("possibly
    // suspicious activity"): a stale or foreign cookie, which the console
    // answers by signing out; one per request would drown the log. Unless
    // COUNTERSIGN_LOG names it, it logs errors only.
    let wanted = std::env::var("COUNTERSIGN_LOG").unwrap_or_else(|_| "info,sqlx=warn,rmcp=warn".into());
    let directives = if wanted.contains("tower_sessions") { wanted } else { format!("{wanted},{QUIET_SESSIONS}") };
    let filter = EnvFilter::try_new(&directives).unwrap_or_else(|_| EnvFilter::new(format!("info,{QUIET_SESSIONS}")));
    // Colours only for a terminal: a file or a pipe gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = match format {
        // The request's span (id, route, tenant, principal, status, latency)
        // is on each line once; the list of enclosing spans would repeat it.
        LogFormat::Json => fmt::layer().json().with_span_list(false).with_writer(std::io::stderr).boxed(),
        LogFormat::Text => fmt::layer().with_ansi(ansi).with_writer(std::io::stderr).boxed(),
    }
    .with_filter(filter);
    let provider = tracing.otlp_endpoint.as_deref().and_then(|url| match provider(url, tracing) {
        Ok(provider) => Some(provider),
        Err(e) => {
            eprintln!("countersign: traces are off: the OTLP exporter could not be made: {e}");
            None
        }
    });
    let traces = provider.as_ref().map(|p| {
        let ours = Targets::new()
            .with_target("countersign", LevelFilter::INFO)
            .with_target("countersign_core", LevelFilter::INFO);
        tracing_opentelemetry::layer().with_tracer(p.tracer("countersign")).with_filter(ours)
    });
    let _ = tracing_subscriber::registry().with(logs).with(traces).try_init();
    Telemetry { provider }
}

/// The tracer provider exporting to `url`. Built on a thread of its own:
/// the exporter's blocking HTTP client may not be made on the runtime.
fn provider(url: &str, tracing: &TracingSettings) -> anyhow::Result<SdkTracerProvider> {
    use opentelemetry_otlp::{Protocol, WithExportConfig};
    let url = url.to_owned();
    let name = tracing.service_name.clone().unwrap_or_else(|| "countersign".into());
    std::thread::spawn(move || {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(url)
            .build()?;
        let resource = opentelemetry_sdk::Resource::builder().with_service_name(name).build();
        Ok(SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build())
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the exporter's thread panicked"))?
}
