//! The capabilities a use case can ask for. A use case's signature names
//! exactly the ones it uses — `state: &(impl Store + Clock + Notifier)` —
//! so what it can touch is read off its declaration, and tests can hand it
//! anything that provides them. The server's state implements them all
//! (`countersign::state::AppState`); nothing here knows the server.

use chrono::{DateTime, Utc};
use std::collections::HashSet;
use std::sync::Mutex;

use crate::approval::keys::KeyStore;
use crate::changes::Changes;
use crate::config::Settings;
use crate::domain::CurrencyRules;
use crate::intake::Intake;
use crate::outbound::Poster;
use crate::password::PasswordGate;
use crate::rail::Rail;
use crate::shutdown::Shutdown;
use crate::slack::Slack;
use crate::store::Db;

/// The database.
pub trait Store {
    fn db(&self) -> &Db;
}

/// The time: the one clock (`crate::clock`).
pub trait Clock {
    fn now(&self) -> DateTime<Utc>;
}

/// The settings, and the currency rules derived from them.
pub trait Config {
    fn settings(&self) -> &Settings;
    fn currencies(&self) -> &CurrencyRules;
}

/// The approval-token signing keys.
pub trait Keys {
    fn keys(&self) -> &KeyStore;
}

/// Change notifications: wakes long-polls and streams, drops cached views.
pub trait Notifier {
    fn changes(&self) -> &Changes;
}

/// The payment rail, and the operations whose rail call runs in this
/// process right now (reconciliation leaves them alone).
pub trait Payments {
    fn rail(&self) -> &dyn Rail;
    fn in_flight(&self) -> &Mutex<HashSet<String>>;
}

/// Password hashing and checking, bounded (`password::PasswordGate`).
pub trait Passwords {
    fn passwords(&self) -> &PasswordGate;
}

/// Group commit of new proposals (`intake`).
pub trait Batching {
    fn intake(&self) -> &Intake;
}

/// Outbound posts (Slack messages, agent webhooks) and Slack's outbox.
pub trait Outbound {
    fn poster(&self) -> &dyn Poster;
    fn slack(&self) -> &Slack;
}

/// When the process is stopping (long waits return early).
pub trait Lifecycle {
    fn shutdown(&self) -> &Shutdown;
}

/// Test-only hooks: a failpoint kills the process at a named step of the
/// commit path, and the change log may be read at another pace (no-ops
/// outside the tests' build, docs/CONFIG.md).
pub trait Hooks {
    fn failpoint(&self, step: &str);
    fn follow_every(&self) -> Option<std::time::Duration>;
}
