//! Signing in to the console with a passkey, no username typed: the
//! browser offers the passkeys it holds for this site (discoverable
//! credentials) and the one chosen signs a single-use challenge.
//!
//! The assertion is checked exactly as an approval's is ([`step_up::verify`]:
//! this relying party and origin, user verification, the signature by the
//! registered key, a counter that moved), by a passkey past its cool-off
//! (or confirmed by an admin), of an active user whose id the authenticator
//! returned as the user handle. Every refusal is the same [`Refused`] — an
//! unknown key, a bad signature and a deactivated user look alike — and the
//! challenge is spent on the first answer, right or wrong.
//!
//! The session it starts says `passkey_session`: an approval in it without
//! a step-up is not a passkey approval (that needs an assertion over the
//! payment, `amr` `passkey`).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use super::registry::{relying_party, CHALLENGE_TTL_SECS};
use super::step_up::{self, Asker, StepUpAnswer, StepUpOptions};
use crate::config::Config;
use crate::store::passkeys as store_passkeys;
use crate::store::{directory::User, Store, StoreError};

/// The challenge purpose; no tenant or user is known when it is handed out.
pub const SIGN_IN: &str = "sign_in";
const NOBODY: &str = "";
const TAG: &[u8] = b"countersign/passkey-sign-in/v1";

/// The challenge a passkey signs to sign in: SHA-256 over the tag and the
/// nonce (domain-separated from every approval's).
pub fn sign_in_challenge(nonce: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update((TAG.len() as u64).to_be_bytes());
    h.update(TAG);
    h.update((nonce.len() as u64).to_be_bytes());
    h.update(nonce);
    h.finalize().into()
}

/// Why a passkey sign-in failed. One answer for every reason the person
/// could be someone else; the reason stays in the log.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    #[error("the passkey did not sign you in")]
    Refused(&'static str),
    #[error("public_url is not a URL a passkey can be bound to")]
    NoRelyingParty,
    #[error(transparent)]
    Store(#[from] StoreError),
}

use SignInError::Refused;

/// A fresh sign-in challenge: the options for `navigator.credentials.get`
/// with no allowed credentials (the browser offers the site's passkeys).
pub async fn start(state: &(impl Store + Config), now: DateTime<Utc>) -> Result<StepUpOptions, SignInError> {
    let rp = relying_party(state).map_err(|_| SignInError::NoRelyingParty)?;
    let (challenge_id, nonce) = step_up::new_nonce(state, (NOBODY, NOBODY), (SIGN_IN, ""), now).await?;
    Ok(StepUpOptions {
        challenge_id,
        challenge: URL_SAFE_NO_PAD.encode(sign_in_challenge(&nonce)),
        rp_id: rp.id,
        allow_credentials: Vec::new(),
        user_verification: "required",
        timeout_ms: (CHALLENGE_TTL_SECS as u64) * 1000,
        required: true,
    })
}

/// Checks a sign-in assertion; the user it signs in. `user_handle`: what
/// the authenticator returned as `response.userHandle` (base64url).
pub async fn finish(
    state: &(impl Store + Config),
    answer: &StepUpAnswer,
    user_handle: &str,
    now: DateTime<Utc>,
) -> Result<User, SignInError> {
    // Spent first, whatever comes next.
    let nonce = {
        let mut tx = state.db().begin().await?;
        let nonce =
            store_passkeys::take_challenge(&mut tx, &answer.challenge_id, NOBODY, NOBODY, (SIGN_IN, ""), now).await?;
        tx.commit().await?;
        nonce.ok_or(Refused("no_challenge"))?
    };
    let nonce = URL_SAFE_NO_PAD.decode(nonce).map_err(|_| Refused("no_challenge"))?;
    // As stored: base64url without padding, of at most 1023 bytes.
    let credential = URL_SAFE_NO_PAD
        .decode(answer.credential_id.trim_end_matches('='))
        .ok()
        .filter(|c| !c.is_empty() && c.len() <= 1023)
        .ok_or(Refused("unknown_passkey"))?;
    let mut conn = state.db().reader().await?;
    let passkey = store_passkeys::by_credential_id(&mut conn, &URL_SAFE_NO_PAD.encode(credential))
        .await?
        .ok_or(Refused("unknown_passkey"))?;
    if URL_SAFE_NO_PAD.encode(passkey.user_id.as_bytes()) != user_handle {
        return Err(Refused("wrong_user_handle"));
    }
    let user = crate::store::directory::user_by_id(&mut conn, &passkey.user_id)
        .await?
        .filter(|u| u.active && u.tenant_id == passkey.tenant_id)
        .ok_or(Refused("inactive_user"))?;
    drop(conn);
    let asker = Asker { tenant_id: &user.tenant_id, user_id: &user.id, roles: &user.roles };
    let checked = step_up::verify(state, &asker, &sign_in_challenge(&nonce), answer, now).await.map_err(|e| {
        tracing::warn!(reason = e.reason(), "passkey sign-in refused");
        Refused("assertion_refused")
    })?;
    let mut tx = state.db().begin().await?;
    step_up::record_use(&mut tx, &asker, &checked, now).await.map_err(|_| Refused("assertion_refused"))?;
    tx.commit().await?;
    Ok(user)
}
