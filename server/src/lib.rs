//! Countersign: a human approval console for AI agents that move money.
//!
//! See `docs/ARCHITECTURE.md` for the map. Dependencies point inward:
//! `http`, `store` and the CLI depend on `domain` and `policy`, never the
//! other way round.

pub use countersign_domain as domain;

pub mod approval;
pub mod approvals;
pub mod cache;
pub mod changes;
pub mod cli;
pub mod commit;
pub mod config;
pub mod console;
pub mod demo;
pub mod expiry;
pub mod flow;
pub mod http;
pub mod idempotency;
pub mod intake;
pub mod mcp;
pub mod metrics;
pub mod operations;
pub mod passkeys;
pub mod password;
pub mod policy;
pub mod proposals;
pub mod provision;
pub mod rail;
pub mod registry_changes;
pub mod risk;
pub mod shutdown;
pub mod slack;
pub mod sso;
pub mod startup;
pub mod state;
pub mod store;
pub mod telemetry;
pub mod throttle;
pub mod webhooks;
