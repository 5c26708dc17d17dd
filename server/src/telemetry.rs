//! Structured logs. Account numbers and secrets are never passed to a log
//! macro: the types that hold them mask themselves.

use crate::config::LogFormat;
use tracing_subscriber::{fmt, EnvFilter};

pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_env("COUNTERSIGN_LOG").unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"));
    let builder = fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
}
