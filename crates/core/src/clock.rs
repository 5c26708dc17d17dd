//! The one clock. Every use case takes the time from a [`crate::deps::Clock`]
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

/// The system's time: for what runs outside a use case (the command line's
/// own messages, a log line's timestamp, tests). Use cases take a clock.
pub fn system_now() -> DateTime<Utc> {
    Utc::now()
}

/// The time: the one clock (`crate::clock`).
pub trait Clock {
    fn now(&self) -> chrono::DateTime<chrono::Utc>;
}
