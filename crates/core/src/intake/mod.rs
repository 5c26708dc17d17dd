//! Intake: what happens when an agent proposes a payment. The proposal use
//! cases ([`proposals`]: propose, read, list, cancel, expire; stored in
//! group commits), the `Idempotency-Key` protocol ([`idempotency`]), the
//! controls computed beside policy when a request arrives — one invoice
//! paid once ([`duplicates`]), the risk signals a reviewer sees ([`risk`]) —
//! and the kill switch that stops an agent or a tenant ([`freeze`]).

pub mod duplicates;
pub mod freeze;
pub mod idempotency;
pub mod proposals;
pub mod risk;
