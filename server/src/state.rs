//! What every request handler and background task shares.

use chrono::{DateTime, Utc};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use crate::approval::keys::KeyStore;
use crate::changes::Changes;
use crate::config::Settings;
use crate::domain::CurrencyRules;
use crate::rail::connector::RailClient;
use crate::shutdown::Shutdown;
use crate::store::Db;

pub struct AppState {
    pub db: Db,
    pub settings: Settings,
    pub currencies: CurrencyRules,
    pub changes: Changes,
    /// Approval-token signing keys.
    pub keys: KeyStore,
    /// Failed sign-in counters.
    pub throttle: crate::throttle::Throttle,
    /// Every password check and hash of the server runs through this gate.
    pub passwords: crate::password::PasswordGate,
    /// The proxies whose forwarding headers name the client.
    pub proxies: crate::http::client_ip::TrustedProxies,
    /// Fires when the server starts shutting down (long-polls return early).
    pub shutdown: Shutdown,
    /// The payment rail.
    pub rail: RailClient,
    /// Operations whose rail call is running in this process right now;
    /// reconciliation leaves them alone.
    pub in_flight: Mutex<HashSet<String>>,
    /// Test-only hooks (failpoint, clock skew), from the environment.
    pub hooks: TestHooks,
    /// Outbound Slack messages (allowlisted client, delivery wake-up).
    pub slack: crate::slack::Slack,
    /// Group commit of new proposals.
    pub intake: crate::intake::Intake,
    /// Request and use-case metrics (`GET /metrics`).
    pub metrics: crate::metrics::Metrics,
    /// Single sign-on: the providers' client and cached discovery.
    pub sso: crate::sso::Sso,
}

pub type Shared = Arc<AppState>;

impl AppState {
    pub fn new(db: Db, settings: Settings, keys: KeyStore, rail: RailClient, shutdown: Shutdown) -> Shared {
        let currencies = settings.currency_rules();
        let slack = crate::slack::Slack::new(&settings.slack);
        // Validated with the settings; an invalid list never gets this far.
        let proxies =
            crate::http::client_ip::TrustedProxies::parse(&settings.console.trusted_proxies).unwrap_or_default();
        Arc::new(AppState {
            db,
            settings,
            currencies,
            changes: Changes::default(),
            keys,
            throttle: Default::default(),
            passwords: Default::default(),
            proxies,
            shutdown,
            rail,
            in_flight: Mutex::new(HashSet::new()),
            hooks: TestHooks::from_env(),
            slack,
            intake: Default::default(),
            metrics: Default::default(),
            sso: Default::default(),
        })
    }

    /// The server's clock (the system clock, plus a test-only skew).
    pub fn now(&self) -> DateTime<Utc> {
        Utc::now() + chrono::Duration::seconds(self.hooks.clock_skew_secs)
    }

    /// Test-only: if the failpoint `step` is armed, the process kills itself
    /// with SIGKILL right here (no destructor, no flush: like a power cut).
    /// Compiled only with the `test-hooks` feature (the tests' build).
    #[cfg(feature = "test-hooks")]
    pub fn failpoint(&self, step: &str) {
        if self.hooks.failpoint.as_deref() == Some(step) {
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

/// Hooks for crash and clock tests, compiled in only with the `test-hooks`
/// feature (which the tests enable, and no other build does): they are read
/// from `COUNTERSIGN_FAILPOINT` (a step name of the commit path, see
/// docs/CONFIG.md), `COUNTERSIGN_CLOCK_SKEW_SECS` (seconds added to the
/// server's clock) and `COUNTERSIGN_FOLLOW_EVERY_MS` (how often the change
/// log is read without a notification), and a warning is logged at start
/// when any is set. In any other build they are always empty.
#[derive(Debug, Clone, Default)]
pub struct TestHooks {
    pub failpoint: Option<String>,
    pub clock_skew_secs: i64,
    pub follow_every: Option<std::time::Duration>,
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
            .map(std::time::Duration::from_millis);
        TestHooks { failpoint, clock_skew_secs, follow_every }
    }

    #[cfg(not(feature = "test-hooks"))]
    pub fn from_env() -> TestHooks {
        TestHooks::default()
    }

    pub fn any(&self) -> bool {
        self.failpoint.is_some() || self.clock_skew_secs != 0 || self.follow_every.is_some()
    }
}

/// Marks an operation as having a rail call in flight in this process until dropped.
pub struct InFlight<'a> {
    state: &'a AppState,
    id: String,
}

impl<'a> InFlight<'a> {
    /// Claims the operation for this task; `None` when another task of this
    /// process holds it (check and insert are one step under the lock).
    pub fn claim(state: &'a AppState, id: &str) -> Option<InFlight<'a>> {
        let fresh = state.in_flight.lock().expect("in-flight set").insert(id.to_owned());
        fresh.then(|| InFlight { state, id: id.to_owned() })
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Ok(mut set) = self.state.in_flight.lock() {
            set.remove(&self.id);
        }
    }
}
