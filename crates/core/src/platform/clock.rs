//! The one clock. Every use case takes the time from a [`crate::platform::deps::Clock`]
//! (the server's is a [`SystemClock`], with a test-only skew); this module
//! is the only place that reads the system's clock (a test checks it:
//! `server/tests/architecture.rs`).

use chrono::{DateTime, Duration, Utc};

/// The system clock, plus a fixed skew (zero outside the clock tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock {
    skew: Duration,
}

impl SystemClock {
    /// The system clock moved by `skew_secs` seconds.
    pub fn skewed(skew_secs: i64) -> SystemClock {
        SystemClock { skew: Duration::seconds(skew_secs) }
    }

    pub fn now(&self) -> DateTime<Utc> {
        system_now() + self.skew
    }
}

/// The system's time, for what is not a use case's decision: the store
/// stamping when it wrote a row (an audit entry's `at` is evidence of when
/// it was written, which a test's clock skew must not move), the command
/// line's edge, tests. Use cases take a clock (`server/tests/architecture.rs`
/// keeps it so).
pub fn system_now() -> DateTime<Utc> {
    Utc::now()
}

/// The time: the one clock (`crate::platform::clock`).
pub trait Clock {
    fn now(&self) -> chrono::DateTime<chrono::Utc>;
}
