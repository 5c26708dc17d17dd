//! Countersign's core: the use cases (propose, decide, commit, reconcile,
//! passkeys, registry changes…), the rules they apply, the store, and the
//! ports of the adapters they call (the rail, outbound posts). No HTTP
//! server, no UI, no `tower`: the `server` crate turns requests into calls
//! of these functions and implements the ports.
//!
//! A use case names what it needs in its signature, as capabilities of
//! [`deps`] (`&impl Store + Clock + Notifier`), never the server's whole
//! state. See docs/ARCHITECTURE.md for the map.

pub use countersign_domain as domain;

pub mod actors;
pub mod approval;
pub mod approvals;
pub mod backup;
pub mod batches;
pub mod cache;
pub mod changes;
pub mod client_ip;
pub mod clock;
pub mod commit;
pub mod config;
pub mod delegate;
pub mod delegation;
pub mod demo;
pub mod deps;
pub mod digest;
pub mod eligibility;
pub mod escalation;
pub mod evidence;
pub mod expiry;
pub mod exports;
pub mod freeze;
pub mod groups;
pub mod hooks;
pub mod human_loop;
pub mod idempotency;
pub mod metrics;
pub mod notifications;
pub mod notify;
pub mod operations;
pub mod outbound;
pub mod passkeys;
pub mod password;
pub mod payables;
pub mod people;
pub mod policy;
pub mod policy_backtest;
pub mod policy_explain;
pub mod proposals;
pub use proposals::intake;
pub mod duplicates;
pub mod provision;
pub mod queue;
pub mod rail;
pub mod registry_changes;
pub mod risk;
pub mod services;
pub mod shutdown;
pub mod slack;
pub mod slack_press;
pub mod store;
pub mod teams;
pub mod teams_press;
#[cfg(any(test, feature = "test-hooks"))]
pub mod testing;
pub mod throttle;
pub mod tlog;
pub mod webhooks;
