//! A user's passkeys: registering one, listing and removing them
//! (docs/DECISIONS.md, "Passkeys: who may add one, and when it counts").
//!
//! A session alone is not enough to change what vouches for a person:
//!
//! - **Adding** a passkey needs, beside the browser's registration, either
//!   an assertion by one of the user's own passkeys over that registration
//!   ([`super::add_challenge`]), or a one-time enrolment code issued by the
//!   operator (CLI) or by two admins (`registry_changes`). A stolen session
//!   has neither.
//! - A new passkey **cools off**: it cannot approve payments until
//!   `passkeys.cool_off_secs` have passed, unless an admin other than its
//!   holder confirms it (`super::admin`).
//! - **Removing** one needs an assertion by one of the user's passkeys over
//!   that removal ([`super::remove_challenge`]); the last passkey of someone
//!   whose role requires one is removed only by two admins.
//!
//! Each registration and removal is audited with the key's fingerprint,
//! relying party and origin (what `countersign audit verify-approvals`
//! checks kept assertions against), and the holder is told (a notice on
//! their account page). No key material reaches a log.
//!
//! Everything the browser sent is size-checked, decoded and verified before
//! any write transaction opens.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Duration, Utc};
use rand::RngCore;
use serde::Serialize;
use serde_json::json;

use super::step_up::{self, Asker, StepUpAnswer, StepUpError};
use super::webauthn::{self, PasskeyError, RelyingParty};
use super::{add_challenge, fingerprint, remove_challenge};
use crate::config::Config;
use crate::domain::{DisplayText, Role};
use crate::store::audit::{self, AuditEntry};
use crate::store::passkeys::{self as store_passkeys, PasskeyRow};
use crate::store::Store;
use crate::store::{new_id, Conn, StoreError};

/// How long a browser has to answer a challenge.
pub const CHALLENGE_TTL_SECS: i64 = 300;
/// The most passkeys one user may hold.
pub const MAX_PER_USER: usize = 10;
/// The most bytes of each base64url field a browser sends, decoded (checked
/// before anything is parsed; real ones are a few hundred).
pub const MAX_CLIENT_DATA: usize = 4 * 1024;
pub const MAX_ATTESTATION: usize = super::cbor::MAX_BYTES;
const REGISTER: &str = "register";
/// `passkey_challenges.purpose` of a removal's nonce.
const REMOVE: &str = "passkey_remove";

/// Who acts: the signed-in user.
pub struct Holder<'a> {
    pub tenant_id: &'a str,
    pub user_id: &'a str,
    pub username: &'a str,
    pub roles: &'a [Role],
}

impl Holder<'_> {
    fn actor(&self) -> String {
        format!("user:{}", self.user_id)
    }

    fn asker(&self) -> Asker<'_> {
        Asker { tenant_id: self.tenant_id, user_id: self.user_id, roles: self.roles }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("the passkey name {0}")]
    BadName(&'static str),
    #[error("{0} is not base64url")]
    NotBase64(&'static str),
    #[error("{0} is too large")]
    TooLarge(&'static str),
    #[error("the challenge is unknown, used or expired: start again")]
    NoChallenge,
    #[error("the passkey was refused: {0}")]
    Refused(#[from] PasskeyError),
    #[error(
        "adding a passkey needs an assertion by one of your passkeys, or a one-time enrolment code from your \
         admins: a signed-in session alone is not enough"
    )]
    ProofRequired,
    #[error(
        "removing a passkey needs an assertion by one of your passkeys over that removal (ask for a removal \
         challenge first): a signed-in session alone is not enough"
    )]
    RemovalProofRequired,
    #[error("the enrolment code is unknown, used, expired or not yours")]
    BadEnrolmentCode,
    #[error("the authorizing assertion was refused: {0}")]
    Authorization(StepUpError),
    #[error("this passkey is already registered")]
    AlreadyRegistered,
    #[error("at most {MAX_PER_USER} passkeys per person: remove one first")]
    TooMany,
    #[error("you have no such passkey")]
    NotFound,
    #[error(
        "your role needs a passkey and this is your last one: an admin can remove it (a change a second admin \
         confirms), for instance after you registered another"
    )]
    LastRequired,
    #[error("public_url is not a URL a passkey can be bound to")]
    NoRelyingParty,
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for RegistryError {
    fn from(e: StoreError) -> Self {
        if e.is_conflict() {
            RegistryError::AlreadyRegistered
        } else {
            RegistryError::Store(e)
        }
    }
}

impl From<StepUpError> for RegistryError {
    fn from(e: StepUpError) -> Self {
        match e {
            StepUpError::Store(e) => e.into(),
            StepUpError::NoChallenge => RegistryError::NoChallenge,
            StepUpError::NoRelyingParty => RegistryError::NoRelyingParty,
            other => RegistryError::Authorization(other),
        }
    }
}

/// What `navigator.credentials.get` needs to authorize a change to the
/// user's passkeys with one they hold (the `publicKey` member), binary
/// values base64url. The assertion goes back as `authorization`, with this
/// `challenge_id`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AuthorizationOptions {
    pub challenge_id: String,
    /// The challenge to sign: derived from the change (the registration it
    /// allows, or the passkey it removes), not random.
    pub challenge: String,
    pub rp_id: String,
    /// The user's passkeys (credential ids, base64url).
    pub allow_credentials: Vec<String>,
    pub user_verification: &'static str,
    pub timeout_ms: u64,
}

/// What `navigator.credentials.create` needs (the `publicKey` member), with
/// binary values in base64url; `challenge_id` comes back with the answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RegistrationOptions {
    pub challenge_id: String,
    pub challenge: String,
    pub rp_id: String,
    pub rp_name: String,
    /// The user handle: base64url of the user id.
    pub user_handle: String,
    pub user_name: String,
    /// COSE algorithms accepted: only -7 (ES256).
    pub algorithms: Vec<i64>,
    /// Credential ids (base64url) this user registered already.
    pub exclude_credentials: Vec<String>,
    pub user_verification: &'static str,
    pub timeout_ms: u64,
    /// When the user holds passkeys: an assertion by one of them over this
    /// registration must come with the answer (`authorization`). When they
    /// hold none: `null`, and the answer needs an `enrolment_code`.
    pub authorization: Option<AuthorizationOptions>,
}

/// A registered passkey as its owner sees it: no key material.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PasskeyView {
    pub id: String,
    pub name: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
    /// From when it can approve payments (`null`: it can now). A new passkey
    /// cools off for `passkeys.cool_off_secs` unless an admin confirms it.
    pub usable_from: Option<String>,
    /// The passkey's public-key fingerprint (`sha256:…`), as the audit trail has it.
    pub fingerprint: String,
}

impl PasskeyView {
    pub fn of(p: &PasskeyRow, now: DateTime<Utc>) -> Self {
        PasskeyView {
            id: p.id.clone(),
            name: p.name.clone(),
            created_at: crate::store::ts(p.created_at),
            last_used_at: p.last_used_at.map(crate::store::ts),
            usable_from: (!p.usable_at(now)).then(|| p.usable_from.map(crate::store::ts)).flatten(),
            fingerprint: key_fingerprint(p),
        }
    }
}

/// The stored key's fingerprint (`sha256:…`).
pub fn key_fingerprint(p: &PasskeyRow) -> String {
    URL_SAFE_NO_PAD.decode(&p.public_key).map(|k| fingerprint(&k)).unwrap_or_else(|_| "unreadable".into())
}

pub fn relying_party(state: &impl Config) -> Result<RelyingParty, RegistryError> {
    RelyingParty::from_public_url(&state.settings().public_url).ok_or(RegistryError::NoRelyingParty)
}

fn options_for(
    rp: &RelyingParty,
    challenge_id: String,
    challenge: [u8; 32],
    passkeys: &[PasskeyRow],
) -> AuthorizationOptions {
    AuthorizationOptions {
        challenge_id,
        challenge: URL_SAFE_NO_PAD.encode(challenge),
        rp_id: rp.id.clone(),
        allow_credentials: passkeys.iter().map(|p| p.credential_id.clone()).collect(),
        user_verification: "required",
        timeout_ms: (CHALLENGE_TTL_SECS as u64) * 1000,
    }
}

/// Hands out a registration challenge for `holder`, with the authorization
/// challenge their passkeys sign when they hold any.
pub async fn start(
    state: &(impl Store + Config),
    holder: &Holder<'_>,
    now: DateTime<Utc>,
) -> Result<RegistrationOptions, RegistryError> {
    let rp = relying_party(state)?;
    let existing = store_passkeys::of_user(&state.db().read, holder.tenant_id, holder.user_id).await?;
    if existing.len() >= MAX_PER_USER {
        return Err(RegistryError::TooMany);
    }
    let mut random = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut random);
    let challenge = URL_SAFE_NO_PAD.encode(random);
    let challenge_id = new_id("pkc", now);
    let expires = now + Duration::seconds(CHALLENGE_TTL_SECS);
    let new = store_passkeys::NewChallenge {
        id: &challenge_id,
        tenant: holder.tenant_id,
        user: holder.user_id,
        purpose: REGISTER,
        subject: "",
        challenge: &challenge,
        expires_at: expires,
    };
    store_passkeys::insert_challenge(&state.db().write, &new).await?;
    let authorization = (!existing.is_empty()).then(|| {
        let signed = add_challenge(holder.user_id, &challenge_id, &random);
        options_for(&rp, challenge_id.clone(), signed, &existing)
    });
    Ok(RegistrationOptions {
        challenge_id,
        challenge,
        rp_id: rp.id,
        rp_name: "Countersign".into(),
        user_handle: URL_SAFE_NO_PAD.encode(holder.user_id),
        user_name: holder.username.to_owned(),
        algorithms: vec![-7],
        exclude_credentials: existing.iter().map(|p| p.credential_id.clone()).collect(),
        user_verification: "required",
        timeout_ms: (CHALLENGE_TTL_SECS as u64) * 1000,
        authorization,
    })
}

/// The browser's answer to a registration challenge, binary values in
/// base64url, and what allows it.
pub struct Answer<'a> {
    pub challenge_id: &'a str,
    pub name: &'a str,
    pub client_data_json: &'a str,
    pub attestation_object: &'a str,
    /// An assertion by one of the holder's passkeys over this registration
    /// (its `challenge_id` is the registration's).
    pub authorization: Option<&'a StepUpAnswer>,
    pub enrolment_code: Option<&'a str>,
}

/// Decodes a base64url field of at most `max` bytes (checked on the text
/// first, so nothing oversized is decoded).
pub fn unbase64(field: &'static str, value: &str, max: usize) -> Result<Vec<u8>, RegistryError> {
    let value = value.trim_end_matches('=');
    if value.len() > max.div_ceil(3) * 4 {
        return Err(RegistryError::TooLarge(field));
    }
    URL_SAFE_NO_PAD.decode(value).map_err(|_| RegistryError::NotBase64(field))
}

/// The SHA-256 (hex) an enrolment code is kept as.
pub fn enrolment_sha256(code: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(code.trim().as_bytes()))
}

/// What allowed a registration.
enum Allowed {
    /// One of the holder's passkeys signed it: its id and new counter.
    Passkey { id: String, sign_count: u32 },
    /// An enrolment code, spent in the registration's transaction.
    Code { sha256: String },
}

/// Verifies the answer against the challenge it names (taken once), and
/// what allows it; stores the passkey (cooling off), audited
/// `passkey.registered`, and tells its holder.
pub async fn finish(
    state: &(impl Store + Config),
    holder: &Holder<'_>,
    answer: &Answer<'_>,
    now: DateTime<Utc>,
) -> Result<PasskeyView, RegistryError> {
    let name = DisplayText::parse(answer.name.trim()).map_err(|rule| RegistryError::BadName(rule.0))?;
    let client_data = unbase64("client_data_json", answer.client_data_json, MAX_CLIENT_DATA)?;
    let attestation = unbase64("attestation_object", answer.attestation_object, MAX_ATTESTATION)?;
    if answer.authorization.is_none() && answer.enrolment_code.is_none_or(|c| c.trim().is_empty()) {
        return Err(RegistryError::ProofRequired);
    }
    let rp = relying_party(state)?;
    // The challenge is spent whatever the verdict: a refused answer cannot
    // be retried against it. Committed on its own, before any verifying.
    let challenge = {
        let mut tx = state.db().begin().await?;
        let taken = store_passkeys::take_challenge(
            &mut tx,
            answer.challenge_id,
            holder.tenant_id,
            holder.user_id,
            (REGISTER, ""),
            now,
        )
        .await?;
        tx.commit().await?;
        unbase64("challenge", &taken.ok_or(RegistryError::NoChallenge)?, 64)?
    };
    let credential = webauthn::verify_registration(&rp, &challenge, &client_data, &attestation, true)
        .inspect_err(|e| tracing::warn!(code = e.code(), user = holder.user_id, "passkey registration refused"))?;
    let allowed = match (answer.authorization, answer.enrolment_code) {
        (Some(authorization), _) => {
            if authorization.challenge_id != answer.challenge_id {
                return Err(RegistryError::Authorization(StepUpError::NoChallenge));
            }
            let signed = add_challenge(holder.user_id, answer.challenge_id, &challenge);
            let mut conn = state.db().reader().await?;
            let (passkey, verified, _) =
                step_up::check_own(state, &mut conn, &holder.asker(), &signed, authorization).await?;
            Allowed::Passkey { id: passkey.id, sign_count: verified.sign_count }
        }
        (None, Some(code)) => Allowed::Code { sha256: enrolment_sha256(code) },
        (None, None) => return Err(RegistryError::ProofRequired),
    };

    let cool_off = Duration::seconds(i64::try_from(state.settings().passkeys.cool_off_secs).unwrap_or(i64::MAX / 2));
    let public_key = URL_SAFE_NO_PAD.encode(&credential.public_key);
    let mut row = PasskeyRow {
        id: new_id("pk", now),
        tenant_id: holder.tenant_id.to_owned(),
        user_id: holder.user_id.to_owned(),
        credential_id: URL_SAFE_NO_PAD.encode(&credential.credential_id),
        public_key,
        sign_count: credential.sign_count,
        name: name.into_string(),
        created_at: now,
        last_used_at: None,
        usable_from: Some(now + cool_off),
        confirmed_by: None,
        confirmed_at: None,
        enrolment_id: None,
    };
    let mut tx = state.db().begin().await?;
    let authorized_by = match &allowed {
        Allowed::Passkey { id, sign_count } => {
            store_passkeys::mark_used(&mut tx, id, *sign_count, now).await?;
            json!({ "passkey_id": id })
        }
        Allowed::Code { sha256 } => {
            let spent = store_passkeys::take_enrolment(&mut tx, holder.tenant_id, holder.user_id, sha256, now)
                .await?
                .ok_or(RegistryError::BadEnrolmentCode)?;
            row.enrolment_id = Some(spent.id.clone());
            json!({ "enrolment_id": spent.id })
        }
    };
    let held = store_passkeys::of_user_in(&mut tx, holder.tenant_id, holder.user_id).await?;
    if held >= MAX_PER_USER {
        return Err(RegistryError::TooMany);
    }
    store_passkeys::insert(&mut tx, &row).await?;
    let print = fingerprint(&credential.public_key);
    audit::append(
        &mut tx,
        &AuditEntry {
            tenant_id: Some(holder.tenant_id.to_owned()),
            actor: holder.actor(),
            action: "passkey.registered".into(),
            proposal_id: None,
            request_hash: None,
            data: json!({
                "passkey_id": row.id, "holder": holder.user_id, "name": row.name, "fingerprint": print,
                "credential": fingerprint(&credential.credential_id), "rp_id": rp.id, "origin": rp.origin,
                "usable_from": row.usable_from.map(crate::store::ts), "authorized_by": authorized_by,
            }),
        },
    )
    .await?;
    let message = format!(
        "A passkey “{}” ({}) was added to your account. It can approve payments from {} unless an admin \
         confirms it sooner. If this was not you, tell your admins now.",
        row.name,
        short(&print),
        row.usable_from.map(crate::store::ts).unwrap_or_default()
    );
    notify(&mut tx, holder.tenant_id, holder.user_id, "passkey.registered", &message, now).await?;
    tx.commit().await?;
    Ok(PasskeyView::of(&row, now))
}

/// The first 16 hex digits of a fingerprint, for people.
pub fn short(fingerprint: &str) -> &str {
    let end = fingerprint.len().min("sha256:".len() + 16);
    &fingerprint[..end]
}

/// Tells `user` something about their account (a notice on their account
/// page, flagged in the top bar), in the caller's transaction.
pub async fn notify(
    conn: &mut Conn,
    tenant: &str,
    user: &str,
    kind: &str,
    message: &str,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    crate::store::notices::insert(conn, tenant, user, kind, message, now).await
}

pub async fn list(
    state: &impl Store,
    holder: &Holder<'_>,
    now: DateTime<Utc>,
) -> Result<Vec<PasskeyView>, RegistryError> {
    let rows = store_passkeys::of_user(&state.db().read, holder.tenant_id, holder.user_id).await?;
    Ok(rows.iter().map(|p| PasskeyView::of(p, now)).collect())
}

/// A challenge one of the holder's passkeys signs to remove passkey `id`.
pub async fn start_removal(
    state: &(impl Store + Config),
    holder: &Holder<'_>,
    id: &str,
    now: DateTime<Utc>,
) -> Result<AuthorizationOptions, RegistryError> {
    let rp = relying_party(state)?;
    let held = store_passkeys::of_user(&state.db().read, holder.tenant_id, holder.user_id).await?;
    if !held.iter().any(|p| p.id == id) {
        return Err(RegistryError::NotFound);
    }
    let mut nonce = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut nonce);
    let challenge_id = new_id("pkc", now);
    let new = store_passkeys::NewChallenge {
        id: &challenge_id,
        tenant: holder.tenant_id,
        user: holder.user_id,
        purpose: REMOVE,
        subject: id,
        challenge: &URL_SAFE_NO_PAD.encode(nonce),
        expires_at: now + Duration::seconds(CHALLENGE_TTL_SECS),
    };
    store_passkeys::insert_challenge(&state.db().write, &new).await?;
    Ok(options_for(&rp, challenge_id, remove_challenge(holder.user_id, id, &nonce), &held))
}

/// Removes the holder's passkey `id` with an assertion by one of their
/// passkeys over that removal; audited `passkey.removed`, the holder told.
/// Their last passkey, when a role of theirs requires one, is refused
/// ([`RegistryError::LastRequired`]: two admins remove it).
pub async fn remove(
    state: &(impl Store + Config),
    holder: &Holder<'_>,
    id: &str,
    authorization: &StepUpAnswer,
    now: DateTime<Utc>,
) -> Result<(), RegistryError> {
    let asker = holder.asker();
    let nonce = step_up::spend(state, &asker, (REMOVE, id), authorization, now).await?;
    let signed = remove_challenge(holder.user_id, id, &nonce);
    let (signer, verified, _) = {
        let mut conn = state.db().reader().await?;
        step_up::check_own(state, &mut conn, &asker, &signed, authorization).await?
    };
    let mut tx = state.db().begin().await?;
    let held = store_passkeys::of_user_in(&mut tx, holder.tenant_id, holder.user_id).await?;
    if held <= 1 && holder.roles.iter().any(|r| state.settings().passkeys.required_roles.contains(r)) {
        return Err(RegistryError::LastRequired);
    }
    if signer.id != id {
        store_passkeys::mark_used(&mut tx, &signer.id, verified.sign_count, now).await?;
    }
    let removed =
        store_passkeys::remove(&mut tx, holder.tenant_id, holder.user_id, id).await?.ok_or(RegistryError::NotFound)?;
    removed_in(&mut tx, &removed, &holder.actor(), json!({ "passkey_id": signer.id }), now).await?;
    tx.commit().await?;
    Ok(())
}

/// Audits a removed passkey (`passkey.removed`, with its fingerprint and
/// what allowed the removal) and tells its holder, in the caller's
/// transaction. Also the admins' four-eyes removal.
pub async fn removed_in(
    conn: &mut Conn,
    removed: &PasskeyRow,
    actor: &str,
    authorized_by: serde_json::Value,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let print = key_fingerprint(removed);
    audit::append(
        conn,
        &AuditEntry {
            tenant_id: Some(removed.tenant_id.clone()),
            actor: actor.to_owned(),
            action: "passkey.removed".into(),
            proposal_id: None,
            request_hash: None,
            data: json!({
                "passkey_id": removed.id, "holder": removed.user_id, "name": removed.name, "fingerprint": print,
                "authorized_by": authorized_by,
            }),
        },
    )
    .await?;
    let message = format!(
        "The passkey “{}” ({}) was removed from your account. If this was not you, tell your admins now.",
        removed.name,
        short(&print)
    );
    notify(conn, &removed.tenant_id, &removed.user_id, "passkey.removed", &message, now).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_fields_are_refused_before_decoding() {
        let big = "A".repeat(MAX_CLIENT_DATA.div_ceil(3) * 4 + 4);
        assert!(matches!(unbase64("client_data_json", &big, MAX_CLIENT_DATA), Err(RegistryError::TooLarge(_))));
        let fits = URL_SAFE_NO_PAD.encode(vec![7u8; MAX_CLIENT_DATA]);
        assert_eq!(unbase64("client_data_json", &fits, MAX_CLIENT_DATA).unwrap().len(), MAX_CLIENT_DATA);
        assert!(matches!(unbase64("x", "not base64!", 100), Err(RegistryError::NotBase64("x"))));
    }

    #[test]
    fn enrolment_codes_are_kept_as_their_digest() {
        assert_eq!(enrolment_sha256(" abc "), enrolment_sha256("abc"));
        assert_ne!(enrolment_sha256("abc"), enrolment_sha256("abd"));
        assert_eq!(enrolment_sha256("abc").len(), 64);
    }
}
