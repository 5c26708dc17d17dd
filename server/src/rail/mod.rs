//! The money rail: the core's port (`countersign_core::rail`, re-exported
//! here), the HTTP connector that implements it, and the bundled simulator.
//!
//! - [`connector`]: the HTTP client Countersign pays through.
//! - [`sim`]: the bundled rail simulator (crate `countersign-rail-sim`, run
//!   by `countersign rail-sim` or in-process by `serve`), a separate HTTP
//!   service with its own SQLite file, used by the default local setup and
//!   by the tests.

pub use countersign_core::rail::*;
pub mod connector;
pub use countersign_rail_sim as sim;
