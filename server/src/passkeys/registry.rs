//! A user's passkeys: registering one (a challenge handed out, then the
//! browser's answer verified and stored), listing and removing them. Each
//! registration and removal is audited; no key material reaches the audit
//! trail or a log.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Duration, Utc};
use rand::RngCore;
use serde::Serialize;
use serde_json::json;

use super::webauthn::{self, PasskeyError, RelyingParty};
use crate::domain::DisplayText;
use crate::state::AppState;
use crate::store::audit::{self, AuditEntry};
use crate::store::passkeys::{self as store_passkeys, PasskeyRow};
use crate::store::{new_id, StoreError};

/// How long a browser has to answer a challenge.
pub const CHALLENGE_TTL_SECS: i64 = 300;
/// The most passkeys one user may hold.
pub const MAX_PER_USER: usize = 10;
const REGISTER: &str = "register";

/// Who acts: the signed-in user.
pub struct Holder<'a> {
    pub tenant_id: &'a str,
    pub user_id: &'a str,
    pub username: &'a str,
}

impl Holder<'_> {
    fn actor(&self) -> String {
        format!("user:{}", self.user_id)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("the passkey name {0}")]
    BadName(&'static str),
    #[error("{0} is not base64url")]
    NotBase64(&'static str),
    #[error("the registration challenge is unknown, used or expired: start again")]
    NoChallenge,
    #[error("the passkey was refused: {0}")]
    Refused(#[from] PasskeyError),
    #[error("this passkey is already registered")]
    AlreadyRegistered,
    #[error("at most {MAX_PER_USER} passkeys per person: remove one first")]
    TooMany,
    #[error("you have no such passkey")]
    NotFound,
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
}

/// A registered passkey as its owner sees it: no key material.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PasskeyView {
    pub id: String,
    pub name: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
}

impl From<&PasskeyRow> for PasskeyView {
    fn from(p: &PasskeyRow) -> Self {
        PasskeyView {
            id: p.id.clone(),
            name: p.name.clone(),
            created_at: crate::store::ts(p.created_at),
            last_used_at: p.last_used_at.map(crate::store::ts),
        }
    }
}

pub fn relying_party(state: &AppState) -> Result<RelyingParty, RegistryError> {
    RelyingParty::from_public_url(&state.settings.public_url).ok_or(RegistryError::NoRelyingParty)
}

/// Hands out a registration challenge for `holder`.
pub async fn start(
    state: &AppState,
    holder: &Holder<'_>,
    now: DateTime<Utc>,
) -> Result<RegistrationOptions, RegistryError> {
    let rp = relying_party(state)?;
    let existing = store_passkeys::of_user(&state.db.read, holder.tenant_id, holder.user_id).await?;
    if existing.len() >= MAX_PER_USER {
        return Err(RegistryError::TooMany);
    }
    let mut challenge = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut challenge);
    let challenge = URL_SAFE_NO_PAD.encode(challenge);
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
    store_passkeys::insert_challenge(&state.db.write, &new).await?;
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
    })
}

/// The browser's answer to a registration challenge, binary values in
/// base64url.
pub struct Answer<'a> {
    pub challenge_id: &'a str,
    pub name: &'a str,
    pub client_data_json: &'a str,
    pub attestation_object: &'a str,
}

fn unbase64(field: &'static str, value: &str) -> Result<Vec<u8>, RegistryError> {
    URL_SAFE_NO_PAD.decode(value.trim_end_matches('=')).map_err(|_| RegistryError::NotBase64(field))
}

/// Verifies the answer against the challenge it names (taken once) and
/// stores the passkey, audited `passkey.registered`.
pub async fn finish(
    state: &AppState,
    holder: &Holder<'_>,
    answer: &Answer<'_>,
    now: DateTime<Utc>,
) -> Result<PasskeyView, RegistryError> {
    let name = DisplayText::parse(answer.name.trim()).map_err(|rule| RegistryError::BadName(rule.0))?;
    let client_data = unbase64("client_data_json", answer.client_data_json)?;
    let attestation = unbase64("attestation_object", answer.attestation_object)?;
    let rp = relying_party(state)?;
    let mut tx = state.db.begin().await?;
    let challenge = store_passkeys::take_challenge(
        &mut tx,
        answer.challenge_id,
        holder.tenant_id,
        holder.user_id,
        (REGISTER, ""),
        now,
    )
    .await?
    .ok_or(RegistryError::NoChallenge)?;
    // The challenge is spent whatever the verdict: a refused answer cannot
    // be retried against it.
    let challenge = unbase64("challenge", &challenge)?;
    let verified = webauthn::verify_registration(&rp, &challenge, &client_data, &attestation, true);
    let credential = match verified {
        Ok(credential) => credential,
        Err(refusal) => {
            tx.commit().await?;
            tracing::warn!(code = refusal.code(), user = holder.user_id, "passkey registration refused");
            return Err(refusal.into());
        }
    };
    let row = PasskeyRow {
        id: new_id("pk", now),
        tenant_id: holder.tenant_id.to_owned(),
        user_id: holder.user_id.to_owned(),
        credential_id: URL_SAFE_NO_PAD.encode(&credential.credential_id),
        public_key: URL_SAFE_NO_PAD.encode(&credential.public_key),
        sign_count: credential.sign_count,
        name: name.into_string(),
        created_at: now,
        last_used_at: None,
    };
    store_passkeys::insert(&mut tx, &row).await?;
    audit::append(
        &mut tx,
        &AuditEntry {
            tenant_id: Some(holder.tenant_id.to_owned()),
            actor: holder.actor(),
            action: "passkey.registered".into(),
            proposal_id: None,
            request_hash: None,
            data: json!({ "passkey_id": row.id, "name": row.name }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(PasskeyView::from(&row))
}

pub async fn list(state: &AppState, holder: &Holder<'_>) -> Result<Vec<PasskeyView>, RegistryError> {
    let rows = store_passkeys::of_user(&state.db.read, holder.tenant_id, holder.user_id).await?;
    Ok(rows.iter().map(PasskeyView::from).collect())
}

/// Removes the holder's passkey `id`, audited `passkey.removed`.
pub async fn remove(state: &AppState, holder: &Holder<'_>, id: &str) -> Result<(), RegistryError> {
    let mut tx = state.db.begin().await?;
    let removed =
        store_passkeys::remove(&mut tx, holder.tenant_id, holder.user_id, id).await?.ok_or(RegistryError::NotFound)?;
    audit::append(
        &mut tx,
        &AuditEntry {
            tenant_id: Some(holder.tenant_id.to_owned()),
            actor: holder.actor(),
            action: "passkey.removed".into(),
            proposal_id: None,
            request_hash: None,
            data: json!({ "passkey_id": removed.id, "name": removed.name }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}
