//! Structured logs: one line per request (`http::observe`), with the
//! request's span. Account numbers and secrets are never passed to a log
//! macro: the types that hold them mask themselves.

use crate::config::LogFormat;
use tracing_subscriber::{fmt, EnvFilter};

pub fn init(format: LogFormat) {
    let filter =
        EnvFilter::try_from_env("COUNTERSIGN_LOG").unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,rmcp=warn"));
    let builder = fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = match format {
        // The request's span (id, route, tenant, principal, status, latency)
        // is on each line once; the list of enclosing spans would repeat it.
        LogFormat::Json => builder.json().with_span_list(false).try_init(),
        LogFormat::Text => builder.try_init(),
    };
}
