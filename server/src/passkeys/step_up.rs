//! Step-up: approving a payment with a passkey assertion over that payment.
//!
//! The console asks for a challenge for one proposal (or for the set listed
//! on the bulk page); the server keeps a single-use nonce, bound to the user
//! and the proposal, and answers with WebAuthn request options whose
//! challenge is [`step_up_challenge`] (or [`bulk_challenge`]). The approval
//! then carries the assertion: the nonce is spent whatever the verdict, the
//! assertion is verified against the request hash as it stands *now* (so an
//! assertion for a changed payment fails), and it is kept with the approval
//! so `countersign audit verify-approvals` can re-verify it offline.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Duration, Utc};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

use super::registry::{relying_party, CHALLENGE_TTL_SECS};
use super::webauthn::{self, Assertion, PasskeyError, RelyingParty};
use super::{bulk_challenge, step_up_challenge};
use crate::domain::{Currency, Role};
use crate::state::AppState;
use crate::store::passkeys::{self as store_passkeys, AssertionRow, NewChallenge, PasskeyRow};
use crate::store::{new_id, Conn, StoreError};

/// `passkey_challenges.purpose` of a one-proposal step-up.
pub const STEP_UP: &str = "step_up";
/// `passkey_challenges.purpose` of a bulk step-up.
pub const BULK: &str = "bulk_step_up";

/// What `navigator.credentials.get` needs (the `publicKey` member), binary
/// values in base64url; `challenge_id` goes back with the assertion.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StepUpOptions {
    pub challenge_id: String,
    /// The challenge to sign: derived from the payment (request hash,
    /// proposal, approver, a single-use nonce), not random.
    pub challenge: String,
    pub rp_id: String,
    /// The signed-in user's passkeys (credential ids, base64url).
    pub allow_credentials: Vec<String>,
    pub user_verification: &'static str,
    pub timeout_ms: u64,
    /// Whether approving needs the assertion now (at or above the step-up
    /// threshold); when false, one may still be given.
    pub required: bool,
}

/// A step-up assertion as the browser returns it
/// (`navigator.credentials.get`), binary values base64url.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StepUpAnswer {
    /// The `challenge_id` of the options answered.
    pub challenge_id: String,
    /// `rawId`.
    pub credential_id: String,
    /// `response.authenticatorData`.
    pub authenticator_data: String,
    /// `response.clientDataJSON`.
    pub client_data_json: String,
    /// `response.signature` (DER).
    pub signature: String,
}

/// How an approver proves presence with their passkey.
#[derive(Debug, Clone)]
pub enum StepUp {
    /// An assertion over one proposal's step-up challenge, verified by `decide`.
    One(StepUpAnswer),
    /// One assertion over a listed set, verified already ([`verify_listed`]).
    Listed(Arc<ListedProof>),
}

/// A verified bulk assertion: which passkey, over which listed set.
#[derive(Debug)]
pub struct ListedProof {
    /// `(proposal id, request hash)` in the order signed.
    pub listed: Vec<(String, String)>,
    /// The assertion to keep with each approval it covers (`proposal_id`,
    /// `round` and `request_hash` are set per approval).
    pub kept: AssertionRow,
}

#[derive(Debug, thiserror::Error)]
pub enum StepUpError {
    #[error(
        "approving this payment needs your passkey: ask for a step-up challenge, sign it with your passkey \
         and send the assertion with the approval (in the console, press Approve again)"
    )]
    Required,
    #[error("approving this payment needs a passkey and you have none: register one on your account page first")]
    NoPasskey,
    #[error("no such proposal")]
    NotFound,
    #[error("the step-up challenge is unknown, used, expired or for another payment: ask for a new one")]
    NoChallenge,
    #[error("{0} is not base64url")]
    NotBase64(&'static str),
    #[error("the assertion was made with a passkey you do not hold (removed, or someone else's)")]
    UnknownPasskey,
    #[error("the passkey assertion was refused: {0}")]
    Refused(#[from] PasskeyError),
    #[error("public_url is not a URL a passkey can be bound to")]
    NoRelyingParty,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl StepUpError {
    /// The stable reason (API `reason`, console outcome codes, the log).
    pub fn reason(&self) -> &'static str {
        match self {
            StepUpError::Required => "assertion_required",
            StepUpError::NoPasskey => "no_passkey",
            StepUpError::NotFound => "not_found",
            StepUpError::NoChallenge => "no_challenge",
            StepUpError::NotBase64(_) => "not_base64",
            StepUpError::UnknownPasskey => "unknown_passkey",
            StepUpError::Refused(e) => e.code(),
            StepUpError::NoRelyingParty | StepUpError::Store(_) => "error",
        }
    }
}

/// What approving needs of this person, beyond the usual checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    Nothing,
    /// A passkey assertion over the payment.
    Assertion,
    /// A passkey they do not have yet.
    RegisterFirst,
}

/// The rule: a role listed in `passkeys.required_roles` needs a passkey
/// registered to approve at all; at or above `policy.step_up_at_minor.<CUR>`
/// every approval needs an assertion (and so a passkey); a currency with no
/// threshold needs one from everyone who has registered a passkey.
pub fn need(state: &AppState, roles: &[Role], has_passkey: bool, currency: Currency, amount_minor: u64) -> Need {
    let role_requires = roles.iter().any(|r| state.settings.passkeys.required_roles.contains(r));
    let assertion = match state.settings.policy.step_up_at(currency) {
        Some(at) => amount_minor >= at,
        None => has_passkey,
    };
    match (has_passkey, assertion || role_requires) {
        (false, true) => Need::RegisterFirst,
        (true, true) if assertion => Need::Assertion,
        _ => Need::Nothing,
    }
}

/// What approving `row` needs of `user` now.
pub async fn need_for(
    state: &AppState,
    conn: &mut Conn,
    tenant: &str,
    user: &str,
    roles: &[Role],
    row: &crate::store::proposals::ProposalRow,
) -> Result<Need, StoreError> {
    let has_passkey = store_passkeys::has_any(conn, tenant, user).await?;
    Ok(need(state, roles, has_passkey, row.request.currency, row.amount_minor))
}

/// Who asks for a challenge.
pub struct Asker<'a> {
    pub tenant_id: &'a str,
    pub user_id: &'a str,
    pub roles: &'a [Role],
}

impl<'a> From<&'a crate::store::directory::User> for Asker<'a> {
    fn from(user: &'a crate::store::directory::User) -> Self {
        Asker { tenant_id: &user.tenant_id, user_id: &user.id, roles: &user.roles }
    }
}

impl<'a> From<&'a crate::approvals::Approver> for Asker<'a> {
    fn from(approver: &'a crate::approvals::Approver) -> Self {
        Asker { tenant_id: &approver.tenant_id, user_id: &approver.user_id, roles: &approver.roles }
    }
}

fn rp(state: &AppState) -> Result<RelyingParty, StepUpError> {
    relying_party(state).map_err(|_| StepUpError::NoRelyingParty)
}

/// Stores a fresh nonce for `(purpose, subject)` and answers the options
/// whose challenge `derive` makes from it.
async fn issue(
    state: &AppState,
    asker: &Asker<'_>,
    (purpose, subject): (&str, &str),
    (derive, payments): (impl FnOnce(&[u8]) -> [u8; 32], &[(Currency, u64)]),
    now: DateTime<Utc>,
) -> Result<StepUpOptions, StepUpError> {
    let rp = rp(state)?;
    let passkeys = store_passkeys::of_user(&state.db.read, asker.tenant_id, asker.user_id).await?;
    if passkeys.is_empty() {
        return Err(StepUpError::NoPasskey);
    }
    let mut nonce = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut nonce);
    let challenge_id = new_id("pkc", now);
    let stored = URL_SAFE_NO_PAD.encode(nonce);
    let new = NewChallenge {
        id: &challenge_id,
        tenant: asker.tenant_id,
        user: asker.user_id,
        purpose,
        subject,
        challenge: &stored,
        expires_at: now + Duration::seconds(CHALLENGE_TTL_SECS),
    };
    store_passkeys::insert_challenge(&state.db.write, &new).await?;
    Ok(StepUpOptions {
        challenge_id,
        challenge: URL_SAFE_NO_PAD.encode(derive(&nonce)),
        rp_id: rp.id,
        allow_credentials: passkeys.iter().map(|p| p.credential_id.clone()).collect(),
        user_verification: "required",
        timeout_ms: (CHALLENGE_TTL_SECS as u64) * 1000,
        required: payments.iter().any(|(c, a)| need(state, asker.roles, true, *c, *a) == Need::Assertion),
    })
}

/// A step-up challenge for approving proposal `id`.
pub async fn start_one(
    state: &AppState,
    asker: &Asker<'_>,
    id: &str,
    now: DateTime<Utc>,
) -> Result<StepUpOptions, StepUpError> {
    let row = crate::store::proposals::get(&state.db.read, asker.tenant_id, id).await?.ok_or(StepUpError::NotFound)?;
    let derive = |nonce: &[u8]| step_up_challenge(&row.request_hash, &row.id, asker.user_id, nonce);
    let payment = [(row.request.currency, row.amount_minor)];
    issue(state, asker, (STEP_UP, &row.id), (derive, &payment), now).await
}

/// The listed proposals, in order; any not in the tenant is `NotFound`.
async fn listed_rows(
    state: &AppState,
    tenant: &str,
    ids: &[String],
) -> Result<Vec<crate::store::proposals::ProposalRow>, StepUpError> {
    let mut rows = Vec::with_capacity(ids.len());
    for id in ids {
        rows.push(crate::store::proposals::get(&state.db.read, tenant, id).await?.ok_or(StepUpError::NotFound)?);
    }
    Ok(rows)
}

/// The `(proposal id, request hash)` of each listed proposal, in order.
fn pairs_of(rows: &[crate::store::proposals::ProposalRow]) -> Vec<(String, String)> {
    rows.iter().map(|r| (r.id.clone(), r.request_hash.clone())).collect()
}

fn pair_refs(pairs: &[(String, String)]) -> Vec<(&str, &str)> {
    pairs.iter().map(|(id, hash)| (id.as_str(), hash.as_str())).collect()
}

/// One step-up challenge over the listed proposals, in the order listed.
pub async fn start_listed(
    state: &AppState,
    asker: &Asker<'_>,
    ids: &[String],
    now: DateTime<Utc>,
) -> Result<StepUpOptions, StepUpError> {
    let rows = listed_rows(state, asker.tenant_id, ids).await?;
    let pairs = pairs_of(&rows);
    let derive = |nonce: &[u8]| bulk_challenge(&pair_refs(&pairs), asker.user_id, nonce);
    let payments: Vec<(Currency, u64)> = rows.iter().map(|r| (r.request.currency, r.amount_minor)).collect();
    issue(state, asker, (BULK, ""), (derive, &payments), now).await
}

fn unbase64(field: &'static str, value: &str) -> Result<Vec<u8>, StepUpError> {
    URL_SAFE_NO_PAD.decode(value.trim_end_matches('=')).map_err(|_| StepUpError::NotBase64(field))
}

/// Takes the nonce `answer` names, for this user and `(purpose, subject)`.
/// Committed on its own: spent whatever comes next.
pub async fn spend(
    state: &AppState,
    asker: &Asker<'_>,
    scope: (&str, &str),
    answer: &StepUpAnswer,
    now: DateTime<Utc>,
) -> Result<Vec<u8>, StepUpError> {
    let mut tx = state.db.begin().await?;
    let nonce =
        store_passkeys::take_challenge(&mut tx, &answer.challenge_id, asker.tenant_id, asker.user_id, scope, now)
            .await?;
    tx.commit().await?;
    unbase64("nonce", &nonce.ok_or(StepUpError::NoChallenge)?)
}

/// Verifies `answer` over `challenge` with the user's own passkey (read in
/// `conn`, so a passkey removed meanwhile is unknown), and records its use.
/// The passkey, the counter it reported, and the assertion as kept.
pub async fn verify(
    state: &AppState,
    conn: &mut Conn,
    asker: &Asker<'_>,
    challenge: &[u8],
    answer: &StepUpAnswer,
    now: DateTime<Utc>,
) -> Result<(PasskeyRow, AssertionRow), StepUpError> {
    let rp = rp(state)?;
    let assertion = Assertion {
        credential_id: unbase64("credential_id", &answer.credential_id)?,
        authenticator_data: unbase64("authenticator_data", &answer.authenticator_data)?,
        client_data_json: unbase64("client_data_json", &answer.client_data_json)?,
        signature: unbase64("signature", &answer.signature)?,
    };
    let credential_id = URL_SAFE_NO_PAD.encode(&assertion.credential_id);
    let passkey = store_passkeys::by_credential(conn, asker.tenant_id, asker.user_id, &credential_id)
        .await?
        .ok_or(StepUpError::UnknownPasskey)?;
    let public_key = unbase64("public_key", &passkey.public_key)?;
    let verified = webauthn::verify_assertion(&rp, challenge, &public_key, passkey.sign_count, &assertion, true)
        .inspect_err(|e| tracing::warn!(code = e.code(), user = asker.user_id, "step-up assertion refused"))?;
    store_passkeys::mark_used(conn, &passkey.id, verified.sign_count, now).await?;
    let kept = AssertionRow {
        proposal_id: String::new(),
        round: 0,
        approver_id: asker.user_id.to_owned(),
        tenant_id: asker.tenant_id.to_owned(),
        kind: String::new(),
        request_hash: String::new(),
        listed: None,
        nonce: String::new(),
        passkey_id: passkey.id.clone(),
        public_key: passkey.public_key.clone(),
        rp_id: rp.id,
        origin: rp.origin,
        credential_id,
        authenticator_data: URL_SAFE_NO_PAD.encode(&assertion.authenticator_data),
        client_data_json: URL_SAFE_NO_PAD.encode(&assertion.client_data_json),
        signature: URL_SAFE_NO_PAD.encode(&assertion.signature),
        created_at: now,
    };
    Ok((passkey, kept))
}

/// Verifies one assertion over the listed proposals as they stand now
/// (spending its nonce whatever the verdict): the proof each approval of
/// the bulk decision then carries.
pub async fn verify_listed(
    state: &AppState,
    asker: &Asker<'_>,
    ids: &[String],
    answer: &StepUpAnswer,
    now: DateTime<Utc>,
) -> Result<ListedProof, StepUpError> {
    let nonce = spend(state, asker, (BULK, ""), answer, now).await?;
    let pairs = pairs_of(&listed_rows(state, asker.tenant_id, ids).await?);
    let challenge = bulk_challenge(&pair_refs(&pairs), asker.user_id, &nonce);
    let mut tx = state.db.begin().await?;
    let (_, mut kept) = verify(state, &mut tx, asker, &challenge, answer, now).await?;
    tx.commit().await?;
    kept.kind = BULK.into();
    kept.nonce = URL_SAFE_NO_PAD.encode(&nonce);
    kept.listed = Some(serde_json::to_string(&pairs).expect("pairs serialize"));
    Ok(ListedProof { listed: pairs, kept })
}

/// The challenge a kept assertion must have signed, recomputed from what
/// was kept: the request hash, proposal, approver and nonce (or the listed
/// set). None if the row is not well-formed.
pub fn kept_challenge(row: &AssertionRow) -> Option<[u8; 32]> {
    let nonce = URL_SAFE_NO_PAD.decode(&row.nonce).ok()?;
    match row.kind.as_str() {
        STEP_UP => Some(step_up_challenge(&row.request_hash, &row.proposal_id, &row.approver_id, &nonce)),
        BULK => {
            let pairs: Vec<(String, String)> = serde_json::from_str(row.listed.as_deref()?).ok()?;
            // The approval's own proposal must be in the set, with this hash.
            if !pairs.iter().any(|(id, hash)| *id == row.proposal_id && *hash == row.request_hash) {
                return None;
            }
            Some(bulk_challenge(&pair_refs(&pairs), &row.approver_id, &nonce))
        }
        _ => None,
    }
}

/// Re-verifies a kept assertion offline: the recomputed challenge, the
/// stored public key, the stored relying party. The counter is not
/// re-checked (it moved on since).
pub fn reverify(row: &AssertionRow) -> Result<(), String> {
    let challenge = kept_challenge(row).ok_or("the kept row is malformed (kind, nonce or listed set)")?;
    let bytes =
        |field: &str, value: &str| URL_SAFE_NO_PAD.decode(value).map_err(|_| format!("{field} is not base64url"));
    let assertion = Assertion {
        credential_id: bytes("credential_id", &row.credential_id)?,
        authenticator_data: bytes("authenticator_data", &row.authenticator_data)?,
        client_data_json: bytes("client_data_json", &row.client_data_json)?,
        signature: bytes("signature", &row.signature)?,
    };
    let public_key = bytes("public_key", &row.public_key)?;
    let rp = RelyingParty { id: row.rp_id.clone(), origin: row.origin.clone() };
    webauthn::verify_assertion(&rp, &challenge, &public_key, 0, &assertion, true)
        .map(|_| ())
        .map_err(|e| format!("{} ({})", e.code(), e))
}

/// What `countersign audit verify-approvals` found.
#[derive(Debug, Default)]
pub struct KeptReport {
    pub verified: usize,
    /// One line per failed assertion: which approval, and why.
    pub failures: Vec<String>,
}

/// Re-verifies every kept assertion offline ([`reverify`]), and that an
/// assertion of the proposal's current round names its current request hash.
pub async fn verify_kept(pool: &crate::store::Pool) -> Result<KeptReport, StoreError> {
    let mut report = KeptReport::default();
    for row in store_passkeys::all_assertions(pool).await? {
        let proposal = crate::store::proposals::get(pool, &row.tenant_id, &row.proposal_id).await?;
        let verdict = match proposal {
            None => Err("the proposal is missing".to_owned()),
            Some(p) if p.approval_round == row.round && p.request_hash != row.request_hash => {
                Err("the proposal's request hash is not the one the assertion was kept with".to_owned())
            }
            Some(_) => reverify(&row),
        };
        match verdict {
            Ok(()) => report.verified += 1,
            Err(why) => report
                .failures
                .push(format!("proposal {} round {} approver {}: {why}", row.proposal_id, row.round, row.approver_id)),
        }
    }
    Ok(report)
}
