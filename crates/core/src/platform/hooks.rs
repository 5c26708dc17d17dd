//! Test-only hooks (docs/CONFIG.md, "Test-only hooks"): a failpoint kills
//! the process at a named step of the commit path, a clock skew moves the
//! clock, and the change log may be read at another pace. Read from the
//! environment only in the tests' build (feature `test-hooks`); empty in
//! every other.

use std::time::Duration;

/// Test-only hooks: a failpoint kills the process at a named step of the
/// commit path, and the change log may be read at another pace (no-ops
/// outside the tests' build, docs/CONFIG.md).
pub trait Hooks {
    fn failpoint(&self, step: &str);
    fn follow_every(&self) -> Option<std::time::Duration>;
}

/// Hooks for crash and clock tests, compiled in only with the `test-hooks`
/// feature (which the tests enable, and no other build does): they are read
/// from `COUNTERSIGN_FAILPOINT` (a step name of the commit path, see
/// docs/CONFIG.md), `COUNTERSIGN_CLOCK_SKEW_SECS` (seconds added to the
/// process's clock) and `COUNTERSIGN_FOLLOW_EVERY_MS` (how often the change
/// log is read without a notification), and a warning is logged at start
/// when any is set. In any other build they are always empty.
#[derive(Debug, Clone, Default)]
pub struct TestHooks {
    pub failpoint: Option<String>,
    pub clock_skew_secs: i64,
    pub follow_every: Option<Duration>,
}

impl TestHooks {
    #[cfg(feature = "test-hooks")]
    pub fn from_env() -> TestHooks {
        let failpoint = std::env::var("COUNTERSIGN_FAILPOINT").ok().filter(|s| !s.is_empty());
        let clock_skew_secs =
            std::env::var("COUNTERSIGN_CLOCK_SKEW_SECS").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0);
        let follow_every = std::env::var("COUNTERSIGN_FOLLOW_EVERY_MS")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .map(Duration::from_millis);
        TestHooks { failpoint, clock_skew_secs, follow_every }
    }

    #[cfg(not(feature = "test-hooks"))]
    pub fn from_env() -> TestHooks {
        TestHooks::default()
    }

    pub fn any(&self) -> bool {
        self.failpoint.is_some() || self.clock_skew_secs != 0 || self.follow_every.is_some()
    }

    /// Test-only: if the failpoint `step` is armed, the process kills itself
    /// with SIGKILL right here (no destructor, no flush: like a power cut).
    #[cfg(feature = "test-hooks")]
    pub fn failpoint(&self, step: &str) {
        if self.failpoint.as_deref() == Some(step) {
            tracing::warn!(step, "failpoint reached: killing the process");
            // SAFETY: kill(2) on our own pid has no memory-safety preconditions.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
    }

    /// Without the `test-hooks` feature there are no failpoints.
    #[cfg(not(feature = "test-hooks"))]
    #[inline(always)]
    pub fn failpoint(&self, _step: &str) {}
}
