//! Black-box tests: each starts the real `countersign` binary on a random
//! port with a fresh data directory and drives it over HTTP.

mod helpers;

mod audit;
mod cancel;
mod cli_commands;
mod config;
mod expiry;
mod idempotency;
mod listing;
mod policy;
mod proposals_create;
mod status_poll;
mod strict_schema;
mod surface;
