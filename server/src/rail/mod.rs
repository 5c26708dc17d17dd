//! The money rail: everything that talks to (or pretends to be) the
//! Stripe-compatible transfers API of SPEC section 12.
//!
//! - [`sim`]: the bundled rail simulator (`countersign rail-sim`), a separate
//!   HTTP service with its own SQLite file, used by the default local setup
//!   and by the tests.

pub mod connector;
pub mod sim;
