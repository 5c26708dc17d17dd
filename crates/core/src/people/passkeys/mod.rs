//! Passkeys (WebAuthn) for approvals bound to the payment: "dynamic
//! linking" in the sense of PSD2's RTS article 5. The challenge an approver's
//! passkey signs is derived from the exact request (its hash), the proposal,
//! the approver and a single-use server nonce, so an assertion approves that
//! payment, by that person, once — a changed amount or payee changes the
//! request hash and the assertion no longer verifies.
//!
//! - [`cbor`]: the subset of CBOR WebAuthn uses.
//! - [`webauthn`]: verifying registrations and assertions (ES256).
//! - [`registry`]: a user's passkeys (register, list, remove).
//! - [`step_up`]: approving with an assertion over the payment.
//! - [`sign_in`]: signing in to the console with a passkey, no username.
//! - [`admin`]: what admins do about someone else's passkeys: confirm a new
//!   one before its cool-off ends, and the enrolment codes and removals two
//!   of them agree on (`registry_changes`).
//!
//! Why not the `webauthn-rs` crate: its ceremonies draw their own random
//! challenge, while dynamic linking needs the challenge to be the payment's
//! digest; and the offline re-verification an auditor runs must be the very
//! code the approval passed. See docs/DECISIONS.md, "Passkeys".

pub mod admin;
pub mod cbor;
pub mod registry;
pub mod sign_in;
#[cfg(any(test, feature = "test-hooks"))]
pub mod soft;
pub mod step_up;
pub mod webauthn;

use sha2::{Digest, Sha256};

/// The domain separation of step-up challenges (versioned: a new derivation
/// gets a new tag, and old approvals keep verifying under theirs).
const STEP_UP_TAG: &[u8] = b"countersign/step-up/v1";
const BULK_TAG: &[u8] = b"countersign/bulk-step-up/v1";
const ADD_TAG: &[u8] = b"countersign/passkey-add/v1";
const REMOVE_TAG: &[u8] = b"countersign/passkey-remove/v1";

fn field(hasher: &mut Sha256, bytes: &[u8]) {
    // Length-prefixed, so no two different field lists hash alike.
    hasher.update((bytes.len() as u64).to_be_bytes());
    hasher.update(bytes);
}

/// The challenge for approving one proposal: SHA-256 over the tag, the
/// request hash (`sha256:…`, the same the approval token carries), the
/// proposal id, the approver's user id and the nonce, each length-prefixed.
pub fn step_up_challenge(request_hash: &str, proposal_id: &str, approver_id: &str, nonce: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    field(&mut h, STEP_UP_TAG);
    field(&mut h, request_hash.as_bytes());
    field(&mut h, proposal_id.as_bytes());
    field(&mut h, approver_id.as_bytes());
    field(&mut h, nonce);
    h.finalize().into()
}

/// The challenge for approving a listed set at once: one assertion over
/// every listed (proposal id, request hash), in the order shown, with the
/// approver and the nonce. Adding, removing, reordering or changing any
/// listed payment changes it.
pub fn bulk_challenge(listed: &[(&str, &str)], approver_id: &str, nonce: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    field(&mut h, BULK_TAG);
    h.update((listed.len() as u64).to_be_bytes());
    for (proposal_id, request_hash) in listed {
        field(&mut h, proposal_id.as_bytes());
        field(&mut h, request_hash.as_bytes());
    }
    field(&mut h, approver_id.as_bytes());
    field(&mut h, nonce);
    h.finalize().into()
}

/// The challenge an existing passkey signs to let its holder add another:
/// bound to the holder and to the registration it authorizes (that
/// registration's single-use challenge id and random challenge).
pub fn add_challenge(user_id: &str, registration_id: &str, registration_challenge: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    field(&mut h, ADD_TAG);
    field(&mut h, user_id.as_bytes());
    field(&mut h, registration_id.as_bytes());
    field(&mut h, registration_challenge);
    h.finalize().into()
}

/// The challenge a passkey signs to let its holder remove passkey
/// `passkey_id` (itself or another of theirs), with a single-use nonce.
pub fn remove_challenge(user_id: &str, passkey_id: &str, nonce: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    field(&mut h, REMOVE_TAG);
    field(&mut h, user_id.as_bytes());
    field(&mut h, passkey_id.as_bytes());
    field(&mut h, nonce);
    h.finalize().into()
}

/// A passkey's public-key fingerprint as the audit trail records it:
/// `sha256:` and the hex SHA-256 of the key (SEC1, uncompressed).
pub fn fingerprint(public_key_sec1: &[u8]) -> String {
    crate::platform::digest::sha256_prefixed(public_key_sec1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str = "sha256:342c56dbe12470eee466ee65dce8d742473eebbf3c6a6a62472178f610d2a0cf";

    #[test]
    fn the_challenge_changes_with_every_input() {
        let base = step_up_challenge(HASH, "prop_1", "usr_ana", b"n1");
        assert_eq!(base, step_up_challenge(HASH, "prop_1", "usr_ana", b"n1"), "deterministic");
        let other_hash = HASH.replace("cf", "ce");
        for changed in [
            step_up_challenge(&other_hash, "prop_1", "usr_ana", b"n1"),
            step_up_challenge(HASH, "prop_2", "usr_ana", b"n1"),
            step_up_challenge(HASH, "prop_1", "usr_ben", b"n1"),
            step_up_challenge(HASH, "prop_1", "usr_ana", b"n2"),
            // Moving a byte from one field to the next is not the same input.
            step_up_challenge(HASH, "prop_1u", "sr_ana", b"n1"),
        ] {
            assert_ne!(changed, base);
        }
        assert_ne!(bulk_challenge(&[("prop_1", HASH)], "usr_ana", b"n1"), base, "tags differ");
        let add = add_challenge("usr_ana", "pkc_1", b"n1");
        assert_ne!(add, add_challenge("usr_ben", "pkc_1", b"n1"));
        assert_ne!(add, add_challenge("usr_ana", "pkc_2", b"n1"));
        assert_ne!(add, remove_challenge("usr_ana", "pkc_1", b"n1"), "adding is not removing");
        assert_ne!(remove_challenge("usr_ana", "pk_1", b"n"), remove_challenge("usr_ana", "pk_2", b"n"));
    }

    #[test]
    fn the_bulk_challenge_covers_the_listed_set_in_order() {
        let a = ("prop_a", HASH);
        let b = ("prop_b", "sha256:00");
        let both = bulk_challenge(&[a, b], "usr_ana", b"n");
        assert_ne!(both, bulk_challenge(&[b, a], "usr_ana", b"n"));
        assert_ne!(both, bulk_challenge(&[a], "usr_ana", b"n"));
        assert_ne!(both, bulk_challenge(&[a, b, b], "usr_ana", b"n"));
        assert_ne!(both, bulk_challenge(&[a, ("prop_b", "sha256:01")], "usr_ana", b"n"));
    }
}
