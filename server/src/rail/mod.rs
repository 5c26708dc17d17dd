//! The money rail: everything that talks to (or pretends to be) the
//! Stripe-compatible transfers API of SPEC section 12.
//!
//! - [`connector`]: the HTTP client Countersign pays through.
//! - [`sim`]: the bundled rail simulator (crate `countersign-rail-sim`, run
//!   by `countersign rail-sim` or in-process by `serve`), a separate HTTP
//!   service with its own SQLite file, used by the default local setup and
//!   by the tests.

pub mod connector;
pub use countersign_rail_sim as sim;
