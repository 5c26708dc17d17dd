//! What every use case runs on: the capabilities a use case asks for
//! ([`deps`]) and what they are made of in a running process
//! ([`services`]), the one clock ([`clock`]), change notifications
//! ([`changes`]) and the read caches they keep true ([`cache`]), metrics,
//! shutdown, test-only hooks, and the operator's tools that are not a
//! payment's path: declarative provisioning ([`provision`]), backups
//! ([`backup`]) and the demo data ([`demo`]).

pub mod backup;
pub mod cache;
pub mod changes;
pub mod clock;
pub mod demo;
pub mod deps;
pub mod digest;
pub mod hooks;
pub mod metrics;
pub mod provision;
pub mod services;
pub mod shutdown;
#[cfg(any(test, feature = "test-hooks"))]
pub mod testing;
