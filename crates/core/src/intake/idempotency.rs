//! The `Idempotency-Key` protocol (SPEC §3, Stripe semantics), as a use
//! case: the HTTP handler only maps what it returns.
//!
//! 1. The key (1–255 printable ASCII characters) is claimed for the calling
//!    agent with a fingerprint of the body (SHA-256 of its RFC 8785 form, so
//!    whitespace and member order are the same request): `INSERT … ON
//!    CONFLICT DO NOTHING` in `store::idempotency`.
//! 2. A finished earlier request with the same fingerprint is replayed (same
//!    status and body); another fingerprint is `Reused`; an unfinished one is
//!    `InUse`.
//! 3. Otherwise the request runs. Its answer is kept — so is an answer that
//!    is an outcome (a policy denial) — and replayed from then on; a request
//!    that never started executing (bad input) or failed on our side releases
//!    the key, so a retry with it may run again.

use chrono::Duration;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::future::Future;

use crate::config::Config;
use crate::domain::{jcs, FieldError};
use crate::intake::proposals::AgentPrincipal;
use crate::platform::clock::Clock;
use crate::store::Store;
use crate::store::{self, idempotency::Claim};

/// A valid `Idempotency-Key`: 1–255 printable ASCII characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub fn parse(raw: &[u8]) -> Result<IdempotencyKey, FieldError> {
        match std::str::from_utf8(raw) {
            Ok(k) if !k.is_empty() && k.len() <= 255 && k.bytes().all(|b| (0x20..0x7f).contains(&b)) => {
                Ok(IdempotencyKey(k.to_owned()))
            }
            _ => Err(FieldError::new("Idempotency-Key", "invalid_value", "must be 1-255 printable ASCII characters")),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An answer as its client saw it: what is kept and replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub status: u16,
    pub body: String,
}

/// How a run that did not succeed ends for its key.
pub enum Unfinished<E> {
    /// An outcome of execution (e.g. a policy denial): kept and replayed.
    Keep(Recorded),
    /// It never started executing, or failed on our side: the key is released.
    Release(E),
}

/// What became of a request with a key.
pub enum Keyed<E> {
    /// It ran now; its answer (or its error) is this.
    Ran(Result<Recorded, E>),
    /// The first request's answer, replayed.
    Replayed(Recorded),
}

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("this Idempotency-Key was used with a different request")]
    Reused,
    #[error("a request with this Idempotency-Key is still being processed")]
    InUse,
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// The fingerprint of a body: the SHA-256 of its canonical JSON.
fn fingerprint(body: &Value) -> String {
    let canonical = jcs::to_vec(body).unwrap_or_else(|_| body.to_string().into_bytes());
    hex::encode(Sha256::digest(&canonical))
}

/// Runs `run` at most once per (agent, key) and body; see the module doc.
pub async fn once<E>(
    state: &(impl Store + Clock + Config),
    agent: &AgentPrincipal,
    key: &IdempotencyKey,
    body: &Value,
    run: impl Future<Output = Result<Recorded, Unfinished<E>>>,
) -> Result<Keyed<E>, KeyError> {
    let scope = store::idempotency::Scope { tenant_id: &agent.tenant_id, agent_id: &agent.agent_id, key: key.as_str() };
    let retention = Duration::hours(state.settings().idempotency.retention_hours as i64);
    match store::idempotency::claim(&state.db().write, &scope, &fingerprint(body), state.now(), retention).await? {
        Claim::Replay { status, body } => Ok(Keyed::Replayed(Recorded { status, body })),
        Claim::Mismatch => Err(KeyError::Reused),
        Claim::InFlight => Err(KeyError::InUse),
        Claim::Fresh => match run.await {
            Ok(answer) | Err(Unfinished::Keep(answer)) => {
                store::idempotency::complete(&state.db().write, &scope, answer.status, &answer.body).await?;
                Ok(Keyed::Ran(Ok(answer)))
            }
            Err(Unfinished::Release(e)) => {
                store::idempotency::release(&state.db().write, &scope).await?;
                Ok(Keyed::Ran(Err(e)))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_printable_ascii_of_bounded_length() {
        assert!(IdempotencyKey::parse(b"demo-1").is_ok());
        assert!(IdempotencyKey::parse(&[b'k'; 255]).is_ok());
        for bad in [&b""[..], &[b'k'; 256], b"tab\there", "é".as_bytes(), b"nul\0"] {
            assert!(IdempotencyKey::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_fingerprint_ignores_member_order_and_whitespace_but_not_values() {
        let a = json!({"run_id": "r", "amount_minor": 1});
        let b: Value = serde_json::from_str("{ \"amount_minor\" : 1 , \"run_id\":\"r\" }").unwrap();
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&json!({"run_id": "r", "amount_minor": 2})));
    }
}
