//! Countersign's core: the use cases (propose, decide, commit, reconcile,
//! passkeys, registry changes…), the rules they apply, the store, and the
//! ports of the adapters they call (the rail, outbound posts). No HTTP
//! server, no UI, no `tower`: the `server` crate turns requests into calls
//! of these functions and implements the ports.
//!
//! A use case names what it needs in its signature, as capabilities of
//! [`platform::deps`] (`&impl Store + Clock + Notifier`), never the server's whole
//! state. See docs/ARCHITECTURE.md for the map.

pub use countersign_domain as domain;

pub mod commit;
pub mod config;
pub mod decision;
pub mod evidence;
pub mod intake;
pub mod notify;
pub mod payables;
pub mod people;
pub mod platform;
pub mod rail;
pub mod store;
