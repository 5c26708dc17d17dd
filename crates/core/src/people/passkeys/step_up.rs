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
use super::webauthn::Verified;
use super::webauthn::{self, Assertion, PasskeyError, RelyingParty};
use super::{bulk_challenge, step_up_challenge};
use crate::config::Config;
use crate::domain::{Currency, Role};
use crate::store::passkeys::{self as store_passkeys, AssertionRow, NewChallenge, PasskeyRow};
use crate::store::Store;
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
    /// The counter the passkey reported.
    pub sign_count: u32,
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
    #[error(
        "your passkey is new: it can approve payments from {0}, or sooner once an admin confirms it on the \
         admin page"
    )]
    CoolingOff(String),
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
            StepUpError::CoolingOff(_) => "passkey_cooling_off",
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    Nothing,
    /// A passkey assertion over the payment.
    Assertion,
    /// A passkey they do not have yet.
    RegisterFirst,
    /// A passkey, and theirs are all still cooling off (until the earliest
    /// one is usable).
    CoolingOff,
}

/// The passkeys a person holds, as the rule counts them: usable now, and
/// still cooling off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Held {
    pub usable: u32,
    pub cooling: u32,
}

/// The rule: a role listed in `passkeys.required_roles` needs a usable
/// passkey to approve at all; at or above `policy.step_up_at_minor.<CUR>`
/// every approval needs an assertion (and so a usable passkey); a currency
/// with no such threshold needs one from whoever holds a usable passkey at
/// or above the dual-approval amount, and below it none (a passkey
/// registered on a laptop does not stop a small approval from a phone). A
/// passkey in its cool-off counts for nothing but the reason given.
pub fn need(state: &impl Config, roles: &[Role], held: Held, currency: Currency, amount_minor: u64) -> Need {
    let role_requires = roles.iter().any(|r| state.settings().passkeys.required_roles.contains(r));
    let policy = &state.settings().policy;
    let assertion = match policy.step_up_at(currency) {
        Some(at) => amount_minor >= at,
        None => held.usable > 0 && policy.holders_step_up_at(currency).is_some_and(|at| amount_minor >= at),
    };
    match (held.usable > 0, assertion || role_requires) {
        (_, false) => Need::Nothing,
        (true, true) if assertion => Need::Assertion,
        (true, true) => Need::Nothing,
        (false, true) if held.cooling > 0 => Need::CoolingOff,
        (false, true) => Need::RegisterFirst,
    }
}

/// The passkeys `user` holds at `now`.
pub async fn held(conn: &mut Conn, tenant: &str, user: &str, now: DateTime<Utc>) -> Result<Held, StoreError> {
    let (usable, cooling) = store_passkeys::held(conn, tenant, user, now).await?;
    Ok(Held { usable, cooling })
}

/// What approving `row` needs of `user` now.
pub async fn need_for(
    state: &impl Config,
    conn: &mut Conn,
    asker: &Asker<'_>,
    row: &crate::store::proposals::ProposalRow,
    now: DateTime<Utc>,
) -> Result<Need, StoreError> {
    let held = held(conn, asker.tenant_id, asker.user_id, now).await?;
    Ok(need(state, asker.roles, held, row.request.currency, row.amount_minor))
}

/// Why passkeys that are all cooling off cannot be used yet: when the
/// earliest becomes usable.
fn cooling_off(passkeys: &[PasskeyRow]) -> StepUpError {
    let until = passkeys.iter().filter_map(|p| p.usable_from).min();
    StepUpError::CoolingOff(until.map(crate::store::ts).unwrap_or_default())
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

fn rp(state: &(impl Store + Config)) -> Result<RelyingParty, StepUpError> {
    relying_party(state).map_err(|_| StepUpError::NoRelyingParty)
}

/// Stores a fresh nonce for `(purpose, subject)` and answers the options
/// whose challenge `derive` makes from it.
async fn issue(
    state: &(impl Store + Config),
    asker: &Asker<'_>,
    (purpose, subject): (&str, &str),
    (derive, payments): (impl FnOnce(&[u8]) -> [u8; 32], &[(Currency, u64)]),
    now: DateTime<Utc>,
) -> Result<StepUpOptions, StepUpError> {
    let rp = rp(state)?;
    let all = store_passkeys::of_user(&state.db().read, asker.tenant_id, asker.user_id).await?;
    if all.is_empty() {
        return Err(StepUpError::NoPasskey);
    }
    // Only passkeys past their cool-off (or confirmed) are offered: a new
    // one cannot approve yet.
    let passkeys: Vec<&PasskeyRow> = all.iter().filter(|p| p.usable_at(now)).collect();
    if passkeys.is_empty() {
        return Err(cooling_off(&all));
    }
    let held = Held { usable: passkeys.len() as u32, cooling: (all.len() - passkeys.len()) as u32 };
    let (challenge_id, nonce) = new_nonce(state, (asker.tenant_id, asker.user_id), (purpose, subject), now).await?;
    Ok(StepUpOptions {
        challenge_id,
        challenge: URL_SAFE_NO_PAD.encode(derive(&nonce)),
        rp_id: rp.id,
        allow_credentials: passkeys.iter().map(|p| p.credential_id.clone()).collect(),
        user_verification: "required",
        timeout_ms: (CHALLENGE_TTL_SECS as u64) * 1000,
        required: payments.iter().any(|(c, a)| need(state, asker.roles, held, *c, *a) == Need::Assertion),
    })
}

/// Stores a fresh single-use nonce for `(tenant, user)` and `(purpose,
/// subject)`, valid for [`CHALLENGE_TTL_SECS`]; its challenge id and the
/// nonce.
pub(super) async fn new_nonce(
    state: &impl Store,
    (tenant, user): (&str, &str),
    (purpose, subject): (&str, &str),
    now: DateTime<Utc>,
) -> Result<(String, [u8; 32]), StoreError> {
    let mut nonce = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut nonce);
    let challenge_id = new_id("pkc", now);
    let stored = URL_SAFE_NO_PAD.encode(nonce);
    let new = NewChallenge {
        id: &challenge_id,
        tenant,
        user,
        purpose,
        subject,
        challenge: &stored,
        expires_at: now + Duration::seconds(CHALLENGE_TTL_SECS),
    };
    store_passkeys::insert_challenge(&state.db().write, &new).await?;
    Ok((challenge_id, nonce))
}

/// A step-up challenge for approving proposal `id`.
pub async fn start_one(
    state: &(impl Store + Config),
    asker: &Asker<'_>,
    id: &str,
    now: DateTime<Utc>,
) -> Result<StepUpOptions, StepUpError> {
    let row =
        crate::store::proposals::get(&state.db().read, asker.tenant_id, id).await?.ok_or(StepUpError::NotFound)?;
    let derive = |nonce: &[u8]| step_up_challenge(&row.request_hash, &row.id, asker.user_id, nonce);
    let payment = [(row.request.currency, row.amount_minor)];
    issue(state, asker, (STEP_UP, &row.id), (derive, &payment), now).await
}

/// The listed proposals, in order; any not in the tenant is `NotFound`.
async fn listed_rows(
    state: &impl Store,
    tenant: &str,
    ids: &[String],
) -> Result<Vec<crate::store::proposals::ProposalRow>, StepUpError> {
    let mut rows = Vec::with_capacity(ids.len());
    for id in ids {
        rows.push(crate::store::proposals::get(&state.db().read, tenant, id).await?.ok_or(StepUpError::NotFound)?);
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
    state: &(impl Store + Config),
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

/// A base64url field of an assertion, at most `max` bytes (checked before
/// decoding).
fn unbase64(field: &'static str, value: &str, max: usize) -> Result<Vec<u8>, StepUpError> {
    super::registry::unbase64(field, value, max).map_err(|_| StepUpError::NotBase64(field))
}

/// The largest credential id WebAuthn allows, authenticator data we read
/// (no extensions are asked for), and a DER ECDSA signature.
const MAX_CREDENTIAL_ID: usize = 1023;
const MAX_AUTHENTICATOR_DATA: usize = 1024;
const MAX_SIGNATURE: usize = 128;

/// Takes the nonce `answer` names, for this user and `(purpose, subject)`.
/// Committed on its own: spent whatever comes next.
pub async fn spend(
    state: &impl Store,
    asker: &Asker<'_>,
    scope: (&str, &str),
    answer: &StepUpAnswer,
    now: DateTime<Utc>,
) -> Result<Vec<u8>, StepUpError> {
    let mut tx = state.db().begin().await?;
    let nonce =
        store_passkeys::take_challenge(&mut tx, &answer.challenge_id, asker.tenant_id, asker.user_id, scope, now)
            .await?;
    tx.commit().await?;
    unbase64("nonce", &nonce.ok_or(StepUpError::NoChallenge)?, 64)
}

/// Verifies `answer` over `challenge` with one of the user's own passkeys
/// (read in `conn`): sizes first, then the assertion. Writes nothing; the
/// passkey, what it reported, and the assertion decoded. Whether the
/// passkey may approve yet is the caller's question ([`verify`]).
pub async fn check_own(
    state: &(impl Store + Config),
    conn: &mut Conn,
    asker: &Asker<'_>,
    challenge: &[u8],
    answer: &StepUpAnswer,
) -> Result<(PasskeyRow, Verified, Assertion), StepUpError> {
    let rp = rp(state)?;
    let assertion = Assertion {
        credential_id: unbase64("credential_id", &answer.credential_id, MAX_CREDENTIAL_ID)?,
        authenticator_data: unbase64("authenticator_data", &answer.authenticator_data, MAX_AUTHENTICATOR_DATA)?,
        client_data_json: unbase64("client_data_json", &answer.client_data_json, super::registry::MAX_CLIENT_DATA)?,
        signature: unbase64("signature", &answer.signature, MAX_SIGNATURE)?,
    };
    let credential_id = URL_SAFE_NO_PAD.encode(&assertion.credential_id);
    let passkey = store_passkeys::by_credential(conn, asker.tenant_id, asker.user_id, &credential_id)
        .await?
        .ok_or(StepUpError::UnknownPasskey)?;
    let public_key = URL_SAFE_NO_PAD.decode(&passkey.public_key).map_err(|_| StepUpError::NotBase64("public_key"))?;
    let verified = webauthn::verify_assertion(&rp, challenge, &public_key, passkey.sign_count, &assertion, true)
        .inspect_err(|e| tracing::warn!(code = e.code(), user = asker.user_id, "passkey assertion refused"))?;
    Ok((passkey, verified, assertion))
}

/// A verified approval assertion, before its transaction: the passkey, its
/// new counter, and the assertion as it will be kept.
#[derive(Debug, Clone)]
pub struct Checked {
    pub passkey_id: String,
    pub sign_count: u32,
    pub kept: AssertionRow,
}

/// Verifies an approval's assertion over `challenge` ([`check_own`]), and
/// that the passkey may approve now (past its cool-off, or confirmed).
/// Writes nothing: the approval's transaction records the use
/// ([`record_use`]).
pub async fn verify(
    state: &(impl Store + Config),
    asker: &Asker<'_>,
    challenge: &[u8],
    answer: &StepUpAnswer,
    now: DateTime<Utc>,
) -> Result<Checked, StepUpError> {
    let rp = rp(state)?;
    let mut conn = state.db().reader().await?;
    let (passkey, verified, assertion) = check_own(state, &mut conn, asker, challenge, answer).await?;
    drop(conn);
    if !passkey.usable_at(now) {
        return Err(cooling_off(std::slice::from_ref(&passkey)));
    }
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
        credential_id: passkey.credential_id.clone(),
        authenticator_data: URL_SAFE_NO_PAD.encode(&assertion.authenticator_data),
        client_data_json: URL_SAFE_NO_PAD.encode(&assertion.client_data_json),
        signature: URL_SAFE_NO_PAD.encode(&assertion.signature),
        created_at: now,
    };
    Ok(Checked { passkey_id: passkey.id, sign_count: verified.sign_count, kept })
}

/// Records a verified assertion's use in the approval's transaction: the
/// passkey must still be the user's (removed meanwhile: unknown) and still
/// usable.
pub async fn record_use(
    conn: &mut Conn,
    asker: &Asker<'_>,
    checked: &Checked,
    now: DateTime<Utc>,
) -> Result<(), StepUpError> {
    let passkey = store_passkeys::by_credential(conn, asker.tenant_id, asker.user_id, &checked.kept.credential_id)
        .await?
        .filter(|p| p.id == checked.passkey_id)
        .ok_or(StepUpError::UnknownPasskey)?;
    if !passkey.usable_at(now) {
        return Err(cooling_off(std::slice::from_ref(&passkey)));
    }
    store_passkeys::mark_used(conn, &passkey.id, checked.sign_count, now).await?;
    Ok(())
}

/// Verifies one assertion over the listed proposals as they stand now
/// (spending its nonce whatever the verdict): the proof each approval of
/// the bulk decision then carries.
pub async fn verify_listed(
    state: &(impl Store + Config),
    asker: &Asker<'_>,
    ids: &[String],
    answer: &StepUpAnswer,
    now: DateTime<Utc>,
) -> Result<ListedProof, StepUpError> {
    let nonce = spend(state, asker, (BULK, ""), answer, now).await?;
    let pairs = pairs_of(&listed_rows(state, asker.tenant_id, ids).await?);
    let challenge = bulk_challenge(&pair_refs(&pairs), asker.user_id, &nonce);
    let mut checked = verify(state, asker, &challenge, answer, now).await?;
    let mut tx = state.db().begin().await?;
    record_use(&mut tx, asker, &checked, now).await?;
    tx.commit().await?;
    checked.kept.kind = BULK.into();
    checked.kept.nonce = URL_SAFE_NO_PAD.encode(&nonce);
    checked.kept.listed = Some(serde_json::to_string(&pairs).expect("pairs serialize"));
    Ok(ListedProof { listed: pairs, kept: checked.kept, sign_count: checked.sign_count })
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
    /// One line per failure: which approval (or the chain), and why.
    pub failures: Vec<String>,
}

/// What the hash-chained audit trail recorded about a passkey when it was
/// registered: whose it is, its key's fingerprint, relying party and origin.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Registered {
    holder: String,
    fingerprint: String,
    rp_id: String,
    origin: String,
}

/// Re-verifies every kept approval assertion offline, trusting no row on
/// its own:
///
/// 1. the audit chain is intact (the registrations below are read from it);
/// 2. each assertion's passkey was registered, in that chain, to the same
///    approver with the same public-key fingerprint, relying party and
///    origin — a row carrying a key of its own is refused;
/// 3. the relying party is this deployment's (`public_url`), when known;
/// 4. the assertion verifies ([`reverify`]) and one of the proposal's
///    current round names its current request hash;
/// 5. every approval recorded with `amr` `passkey` has its assertion kept —
///    a deleted row is a failure, not "nothing to check".
pub async fn verify_kept(
    pool: &crate::store::Pool,
    deployment: Option<&RelyingParty>,
) -> Result<KeptReport, StoreError> {
    let mut report = KeptReport::default();
    if let crate::store::audit::Verification::Broken { seq, problem } = crate::store::audit::verify(pool).await? {
        report
            .failures
            .push(format!("the audit trail is broken at entry {seq} ({problem}): registrations cannot be trusted"));
        return Ok(report);
    }
    let mut registered = std::collections::HashMap::new();
    for entry in crate::store::audit::with_action(pool, "passkey.registered").await? {
        let text = |k: &str| entry.data.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        if let Some(id) = text("passkey_id") {
            let recorded = (|| {
                Some(Registered {
                    holder: text("holder").or_else(|| entry.actor.strip_prefix("user:").map(str::to_owned))?,
                    fingerprint: text("fingerprint")?,
                    rp_id: text("rp_id")?,
                    origin: text("origin")?,
                })
            })();
            registered.insert(id, recorded);
        }
    }
    for row in store_passkeys::all_assertions(pool).await? {
        let verdict = check_kept(pool, &row, registered.get(&row.passkey_id), deployment).await?;
        match verdict {
            Ok(()) => report.verified += 1,
            Err(why) => report
                .failures
                .push(format!("proposal {} round {} approver {}: {why}", row.proposal_id, row.round, row.approver_id)),
        }
    }
    for (proposal, round, approver) in store_passkeys::passkey_approvals_without_assertion(pool).await? {
        report.failures.push(format!(
            "proposal {proposal} round {round} approver {approver}: approved with a passkey, but no assertion is kept"
        ));
    }
    Ok(report)
}

/// One kept assertion against what the audit trail recorded (see [`verify_kept`]).
async fn check_kept(
    pool: &crate::store::Pool,
    row: &AssertionRow,
    registered: Option<&Option<Registered>>,
    deployment: Option<&RelyingParty>,
) -> Result<Result<(), String>, StoreError> {
    let registered = match registered {
        None => return Ok(Err(format!("passkey {} was never registered in the audit trail", row.passkey_id))),
        Some(None) => {
            return Ok(Err(format!(
                "passkey {} was registered before fingerprints were recorded: its key cannot be checked",
                row.passkey_id
            )))
        }
        Some(Some(r)) => r,
    };
    let key = URL_SAFE_NO_PAD.decode(&row.public_key).map_err(|e| StoreError::corrupt("public_key", e));
    let print = match key {
        Ok(key) => super::fingerprint(&key),
        Err(_) => return Ok(Err("the kept public key is not base64url".into())),
    };
    if registered.holder != row.approver_id {
        return Ok(Err(format!("passkey {} was registered to someone else", row.passkey_id)));
    }
    if registered.fingerprint != print {
        return Ok(Err(format!(
            "the kept public key ({}) is not the one registered for passkey {} ({})",
            super::registry::short(&print),
            row.passkey_id,
            super::registry::short(&registered.fingerprint)
        )));
    }
    if registered.rp_id != row.rp_id || registered.origin != row.origin {
        return Ok(Err("the kept relying party or origin is not the one the passkey was registered for".into()));
    }
    if let Some(rp) = deployment {
        if rp.id != row.rp_id || rp.origin != row.origin {
            return Ok(Err(format!("the relying party {} is not this deployment's ({})", row.origin, rp.origin)));
        }
    }
    let proposal = crate::store::proposals::get(pool, &row.tenant_id, &row.proposal_id).await?;
    Ok(match proposal {
        None => Err("the proposal is missing".to_owned()),
        Some(p) if p.approval_round == row.round && p.request_hash != row.request_hash => {
            Err("the proposal's request hash is not the one the assertion was kept with".to_owned())
        }
        Some(_) => reverify(row),
    })
}
