//! What the core's capabilities are made of in a running process: the
//! database, the settings, the clock, the signing keys, change
//! notifications, the rail and outbound ports, group commit… The server
//! builds one [`Services`] at start and keeps it in its state; the use
//! cases never take it whole — each names the capabilities it uses
//! ([`crate::platform::deps`]), which every holder of a `Services` provides.

use chrono::{DateTime, Utc};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::config::Config;
use crate::config::Settings;
use crate::decision::approval::keys::KeyStore;
use crate::decision::approval::keys::Keys;
use crate::domain::CurrencyRules;
use crate::intake::proposals::group_commit::Batching;
use crate::intake::proposals::group_commit::Intake;
use crate::notify::outbound::Outbound;
use crate::notify::outbound::Poster;
use crate::notify::outbound::Slack;
use crate::people::password::PasswordGate;
use crate::people::password::Passwords;
use crate::platform::changes::Changes;
use crate::platform::changes::Notifier;
use crate::platform::clock::Clock;
use crate::platform::clock::SystemClock;
use crate::platform::hooks::Hooks;
use crate::platform::hooks::TestHooks;
use crate::platform::shutdown::Lifecycle;
use crate::platform::shutdown::Shutdown;
use crate::rail::Payments;
use crate::rail::Rails;
use crate::store::Db;
use crate::store::Store;

pub struct Services {
    pub db: Db,
    pub settings: Settings,
    pub currencies: CurrencyRules,
    pub clock: SystemClock,
    pub changes: Changes,
    /// Approval-token signing keys.
    pub keys: KeyStore,
    /// The receipt keys (`keys/receipts/`).
    pub receipt_keys: KeyStore,
    /// Every password check and hash of the process runs through this gate.
    pub passwords: PasswordGate,
    /// Fires when the process starts shutting down (long-polls return early).
    pub shutdown: Shutdown,
    /// The payment rails: the default one, the named ones, each tenant's.
    pub rails: Rails,
    /// Operations whose rail call is running in this process right now.
    pub in_flight: Mutex<HashSet<String>>,
    /// Test-only hooks (failpoint, clock skew), from the environment.
    pub hooks: TestHooks,
    /// Outbound posts (Slack messages, agent webhooks).
    pub poster: Arc<dyn Poster>,
    /// Slack's allowlist and delivery wake-up.
    pub slack: Slack,
    /// Teams' allowlist and delivery wake-up.
    pub teams: crate::notify::teams::Teams,
    /// Group commit of new proposals.
    pub intake: Intake,
    /// The transparency log's note key.
    pub log: crate::evidence::tlog::note::NoteSigner,
    /// Email and Web Push to approvers.
    pub reach: crate::notify::Reach,
}

impl Services {
    pub fn new(
        db: Db,
        settings: Settings,
        keys: KeyStore,
        (rails, poster): (Rails, Arc<dyn Poster>),
        shutdown: Shutdown,
    ) -> Result<Services, crate::notify::ReachError> {
        let hooks = TestHooks::from_env();
        let origin = url::Url::parse(&settings.public_url)
            .map(|u| crate::evidence::tlog::note::origin_of(&u))
            .unwrap_or_else(|_| "countersign/log".to_owned());
        let log = crate::evidence::tlog::note::NoteSigner::open_or_create(keys.dir(), &origin)?;
        let data_dir = keys.dir().parent().unwrap_or(&settings.data_dir).to_owned();
        let receipt_keys = KeyStore::open_or_create_receipts(&data_dir)?;
        let reach = crate::notify::Reach::open(&settings, &data_dir)?;
        Ok(Services {
            currencies: settings.currency_rules(),
            slack: Slack::new(&settings.slack.allowed_hosts, settings.slack.timeout_ms),
            teams: crate::notify::teams::Teams::new(&settings.teams),
            clock: SystemClock::skewed(hooks.clock_skew_secs),
            db,
            settings,
            changes: Changes::default(),
            keys,
            receipt_keys,
            passwords: PasswordGate::default(),
            shutdown,
            rails,
            in_flight: Mutex::new(HashSet::new()),
            hooks,
            poster,
            intake: Intake::default(),
            log,
            reach,
        })
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
impl<T: HasServices + ?Sized> crate::evidence::tlog::Log for T {
    fn log_signer(&self) -> &crate::evidence::tlog::note::NoteSigner {
        &self.services().log
    }
}
impl<T: HasServices + ?Sized> crate::decision::approval::receipts::Receipts for T {
    fn receipt_keys(&self) -> &KeyStore {
        &self.services().receipt_keys
    }
    fn receipt_issuer(&self) -> &str {
        &self.services().settings.public_url
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
    fn rails(&self) -> &Rails {
        &self.services().rails
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
impl<T: HasServices + ?Sized> crate::notify::teams::TeamsOutbound for T {
    fn teams(&self) -> &crate::notify::teams::Teams {
        &self.services().teams
    }
}
impl<T: HasServices + ?Sized> Lifecycle for T {
    fn shutdown(&self) -> &Shutdown {
        &self.services().shutdown
    }
}
impl<T: HasServices + ?Sized> crate::notify::Reaching for T {
    fn reach(&self) -> &crate::notify::Reach {
        &self.services().reach
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
