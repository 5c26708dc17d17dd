//! What the core's capabilities are made of in a running process: the
//! database, the settings, the clock, the signing keys, change
//! notifications, the rail and outbound ports, group commit… The server
//! builds one [`Services`] at start and keeps it in its state; the use
//! cases never take it whole — each names the capabilities it uses
//! ([`crate::deps`]), which every holder of a `Services` provides.

use chrono::{DateTime, Utc};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::approval::keys::KeyStore;
use crate::changes::Changes;
use crate::clock::SystemClock;
use crate::config::Settings;
use crate::deps::{Batching, Clock, Config, Hooks, Keys, Lifecycle, Notifier, Outbound, Passwords, Payments, Store};
use crate::domain::CurrencyRules;
use crate::intake::Intake;
use crate::outbound::Poster;
use crate::password::PasswordGate;
use crate::rail::Rail;
use crate::shutdown::Shutdown;
use crate::slack::Slack;
use crate::store::Db;

pub struct Services {
    pub db: Db,
    pub settings: Settings,
    pub currencies: CurrencyRules,
    pub clock: SystemClock,
    pub changes: Changes,
    /// Approval-token signing keys.
    pub keys: KeyStore,
    /// Every password check and hash of the process runs through this gate.
    pub passwords: PasswordGate,
    /// Fires when the process starts shutting down (long-polls return early).
    pub shutdown: Shutdown,
    /// The payment rail.
    pub rail: Arc<dyn Rail>,
    /// Operations whose rail call is running in this process right now.
    pub in_flight: Mutex<HashSet<String>>,
    /// Test-only hooks (failpoint, clock skew), from the environment.
    pub hooks: TestHooks,
    /// Outbound posts (Slack messages, agent webhooks).
    pub poster: Arc<dyn Poster>,
    /// Slack's allowlist and delivery wake-up.
    pub slack: Slack,
    /// Group commit of new proposals.
    pub intake: Intake,
}

impl Services {
    pub fn new(
        db: Db,
        settings: Settings,
        keys: KeyStore,
        (rail, poster): (Arc<dyn Rail>, Arc<dyn Poster>),
        shutdown: Shutdown,
    ) -> Services {
        let hooks = TestHooks::from_env();
        Services {
            currencies: settings.currency_rules(),
            slack: Slack::new(&settings.slack),
            clock: SystemClock::skewed(hooks.clock_skew_secs),
            db,
            settings,
            changes: Changes::default(),
            keys,
            passwords: PasswordGate::default(),
            shutdown,
            rail,
            in_flight: Mutex::new(HashSet::new()),
            hooks,
            poster,
            intake: Intake::default(),
        }
    }
}

/// What holds a process's [`Services`]: it provides every capability. The
/// server's state does; so does an `Arc` or a reference to one.
pub trait HasServices {
    fn services(&self) -> &Services;
}

impl HasServices for Services {
    fn services(&self) -> &Services {
        self
    }
}

impl<T: HasServices + ?Sized> HasServices for std::sync::Arc<T> {
    fn services(&self) -> &Services {
        (**self).services()
    }
}

impl<T: HasServices + ?Sized> HasServices for &T {
    fn services(&self) -> &Services {
        (**self).services()
    }
}

// Whatever holds a `Services` provides every capability.
impl<T: HasServices + ?Sized> Store for T {
    fn db(&self) -> &Db {
        &self.services().db
    }
}
impl<T: HasServices + ?Sized> Clock for T {
    fn now(&self) -> DateTime<Utc> {
        self.services().clock.now()
    }
}
impl<T: HasServices + ?Sized> Config for T {
    fn settings(&self) -> &Settings {
        &self.services().settings
    }
    fn currencies(&self) -> &CurrencyRules {
        &self.services().currencies
    }
}
impl<T: HasServices + ?Sized> Keys for T {
    fn keys(&self) -> &KeyStore {
        &self.services().keys
    }
}
impl<T: HasServices + ?Sized> Notifier for T {
    fn changes(&self) -> &Changes {
        &self.services().changes
    }
}
impl<T: HasServices + ?Sized> Payments for T {
    fn rail(&self) -> &dyn Rail {
        self.services().rail.as_ref()
    }
    fn in_flight(&self) -> &Mutex<HashSet<String>> {
        &self.services().in_flight
    }
}
impl<T: HasServices + ?Sized> Passwords for T {
    fn passwords(&self) -> &PasswordGate {
        &self.services().passwords
    }
}
impl<T: HasServices + ?Sized> Batching for T {
    fn intake(&self) -> &Intake {
        &self.services().intake
    }
}
impl<T: HasServices + ?Sized> Outbound for T {
    fn poster(&self) -> &dyn Poster {
        self.services().poster.as_ref()
    }
    fn slack(&self) -> &Slack {
        &self.services().slack
    }
}
impl<T: HasServices + ?Sized> Lifecycle for T {
    fn shutdown(&self) -> &Shutdown {
        &self.services().shutdown
    }
}
impl<T: HasServices + ?Sized> Hooks for T {
    fn failpoint(&self, step: &str) {
        self.services().hooks.failpoint(step);
    }
    fn follow_every(&self) -> Option<Duration> {
        self.services().hooks.follow_every
    }
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

/// Marks an operation as having a rail call in flight in this process until dropped.
pub struct InFlight<'a> {
    set: &'a Mutex<HashSet<String>>,
    id: String,
}

impl<'a> InFlight<'a> {
    /// Claims the operation for this task; `None` when another task of this
    /// process holds it (check and insert are one step under the lock).
    pub fn claim(state: &'a impl Payments, id: &str) -> Option<InFlight<'a>> {
        let set = state.in_flight();
        let fresh = set.lock().expect("in-flight set").insert(id.to_owned());
        fresh.then(|| InFlight { set, id: id.to_owned() })
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Ok(mut set) = self.set.lock() {
            set.remove(&self.id);
        }
    }
}
