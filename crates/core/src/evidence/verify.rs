//! Checking a proof bundle offline (docs/EVIDENCE.md "What a verifier
//! checks"): the twelve checks in order, the first failure named by its
//! number. Nothing here reads the store or trusts the server: only the
//! bundle, the keys it carries, and what the caller pins (a note key, a
//! checkpoint kept by `log monitor`).

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use serde_json::{Map, Value};

use super::{commitment, Bundle, FORMAT};
use crate::decision::approval::receipts::{self, RECEIPT_TYP};
use crate::domain::merkle::{leaf_hash, verify_inclusion, Hash};
use crate::evidence::tlog::note::{Checkpoint, NoteVerifier};
use crate::store::passkeys::AssertionRow;

/// The first check that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("check {check} ({name}): {reason}")]
pub struct Failure {
    pub check: u8,
    pub name: &'static str,
    pub reason: String,
}

/// What the caller trusts beyond the bundle.
#[derive(Debug, Clone, Default)]
pub struct Pinned {
    /// The log's verifier key (`--key`).
    pub key: Option<String>,
    /// A signed checkpoint obtained independently (`--checkpoint`).
    pub checkpoint: Option<String>,
}

/// Every check passed: one line per check.
pub type Passed = Vec<String>;

const NAMES: [&str; 12] = [
    "format",
    "log key",
    "checkpoint",
    "trusted checkpoint",
    "leaves",
    "receipts",
    "request",
    "policy",
    "approvals",
    "approval token",
    "operation",
    "mandate",
];

fn fail(check: u8, reason: impl Into<String>) -> Failure {
    Failure { check, name: NAMES[usize::from(check) - 1], reason: reason.into() }
}

/// A logged entry, decoded.
struct Leaf {
    index: u64,
    body: Map<String, Value>,
    bytes: Vec<u8>,
}

impl Leaf {
    fn text(&self, member: &str) -> Option<&str> {
        self.body.get(member).and_then(Value::as_str)
    }
    fn action(&self) -> &str {
        self.text("action").unwrap_or("")
    }
    fn data(&self) -> &Value {
        self.body.get("data").unwrap_or(&Value::Null)
    }
    fn receipt(&self) -> Option<&str> {
        self.data().get("receipt").and_then(Value::as_str)
    }
}

/// Runs checks 1–12 on `bundle`.
pub fn verify(bundle: &Bundle, pinned: &Pinned) -> Result<Passed, Failure> {
    let mut passed = Vec::new();
    let mut ok = |check: u8, what: String| passed.push(format!("ok {check} {}: {what}", NAMES[usize::from(check) - 1]));

    if bundle.format != FORMAT {
        return Err(fail(1, format!("format is {:?}, not {FORMAT:?}", bundle.format)));
    }
    ok(1, FORMAT.to_owned());

    let log_key = NoteVerifier::parse(&bundle.keys.log).map_err(|e| fail(2, e.to_string()))?;
    if let Some(pinned) = &pinned.key {
        if pinned.trim() != bundle.keys.log {
            return Err(fail(2, "the bundle's log key is not the pinned key"));
        }
    }
    ok(2, log_key.name.clone());

    let checkpoint = log_key.open(&bundle.log.checkpoint).map_err(|e| fail(3, e.to_string()))?;
    let issuer = url::Url::parse(&bundle.issuer).map_err(|_| fail(3, "the issuer is not a URL"))?;
    if checkpoint.origin != crate::evidence::tlog::note::origin_of(&issuer) {
        return Err(fail(3, format!("the log {} is not the issuer's", checkpoint.origin)));
    }
    if checkpoint.size != bundle.log.tree_size {
        return Err(fail(
            3,
            format!("the checkpoint's size is {}, the bundle says {}", checkpoint.size, bundle.log.tree_size),
        ));
    }
    ok(3, format!("size {} signed by {}", checkpoint.size, log_key.name));

    if let Some(trusted) = &pinned.checkpoint {
        trusted_checkpoint(&log_key, trusted, &checkpoint)?;
        ok(4, "the bundle's checkpoint is the trusted one".into());
    } else {
        ok(4, "none given".into());
    }

    let leaves = leaves(bundle, &checkpoint)?;
    ok(5, format!("{} leaves included under size {}", leaves.len(), checkpoint.size));

    let own: Vec<&Leaf> = leaves.iter().filter(|l| l.text("proposal_id").is_some()).collect();
    let count = check_receipts(bundle, &own)?;
    ok(6, format!("{count} receipts signed and chained"));

    let created = own[0];
    check_request(bundle, created, &own)?;
    ok(7, request_line(bundle));

    if created.data().get("policy") != Some(&bundle.policy) {
        return Err(fail(8, "the policy is not the one the proposal.created entry recorded"));
    }
    ok(8, "as recorded".into());

    let signed = check_approvals(bundle, &leaves)?;
    ok(9, format!("{} decisions, {signed} signed by a passkey", bundle.approvals.len()));

    let token = check_token(bundle, &own)?;
    ok(10, if token.is_some() { "signed, bound to this proposal".into() } else { "none minted".into() });

    check_operation(bundle, &own)?;
    ok(
        11,
        match &bundle.operation {
            Some(op) => format!("{} {}", op.id, op.status),
            None => "none".into(),
        },
    );

    check_mandate(bundle, token.as_ref())?;
    ok(12, if bundle.mandate.is_some() { "signed, restates the token".into() } else { "none".into() });
    Ok(passed)
}

fn trusted_checkpoint(log_key: &NoteVerifier, trusted: &str, checkpoint: &Checkpoint) -> Result<(), Failure> {
    let trusted = log_key.open(trusted).map_err(|e| fail(4, format!("the trusted checkpoint: {e}")))?;
    if trusted.size != checkpoint.size {
        return Err(fail(
            4,
            format!(
                "the trusted checkpoint has size {}, the bundle's {}: export the bundle with tree_size={}",
                trusted.size, checkpoint.size, trusted.size
            ),
        ));
    }
    if trusted.root != checkpoint.root {
        return Err(fail(4, format!("LOG FORK: another root at size {}", trusted.size)));
    }
    Ok(())
}

const MEMBERS: [&str; 9] =
    ["seq", "at", "tenant_id", "actor", "action", "proposal_id", "request_hash", "data", "prev_hash"];

fn leaves(bundle: &Bundle, checkpoint: &Checkpoint) -> Result<Vec<Leaf>, Failure> {
    let mut out: Vec<Leaf> = Vec::new();
    for (n, leaf) in bundle.log.leaves.iter().enumerate() {
        let at = |why: String| fail(5, format!("leaf {} (index {}): {why}", n, leaf.index));
        if out.last().is_some_and(|prev| prev.index >= leaf.index) {
            return Err(at("indexes do not strictly increase".into()));
        }
        let bytes = STANDARD.decode(&leaf.body).map_err(|_| at("the body is not base64".into()))?;
        let proof: Vec<Hash> = leaf
            .proof
            .iter()
            .map(|h| STANDARD.decode(h).ok().and_then(|h| h.try_into().ok()))
            .collect::<Option<_>>()
            .ok_or_else(|| at("a proof hash is not 32 bytes of base64".into()))?;
        if !verify_inclusion(&leaf_hash(&bytes), leaf.index, checkpoint.size, &proof, &checkpoint.root) {
            return Err(at("the inclusion proof does not lead to the checkpoint's root".into()));
        }
        let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(&bytes) else {
            return Err(at("the body is not a JSON object".into()));
        };
        if body.len() != MEMBERS.len() || MEMBERS.iter().any(|m| !body.contains_key(*m)) {
            return Err(at("the body does not have the nine members".into()));
        }
        // Neighbours in the log chain as the audit trail does.
        if let Some(prev) = out.last().filter(|prev| prev.index + 1 == leaf.index) {
            let expected = crate::platform::digest::sha256_prefixed(&prev.bytes);
            if body.get("prev_hash").and_then(Value::as_str) != Some(expected.as_str()) {
                return Err(at("its prev_hash is not the hash of the leaf before it".into()));
            }
        }
        let leaf = Leaf { index: leaf.index, body, bytes };
        if leaf.body["seq"].as_u64() != Some(leaf.index + 1) {
            return Err(at("seq is not index + 1".into()));
        }
        if leaf.text("tenant_id") != Some(bundle.tenant_id.as_str()) {
            return Err(at(format!("the entry is another tenant's ({:?})", leaf.body["tenant_id"])));
        }
        match leaf.text("proposal_id") {
            Some(p) if p == bundle.proposal_id => {}
            None if leaf.action() == "passkey.registered" => {}
            _ => return Err(at(format!("the entry is about another proposal ({:?})", leaf.body["proposal_id"]))),
        }
        match &leaf.body["request_hash"] {
            Value::Null => {}
            Value::String(h) if *h == bundle.request_hash => {}
            _ => return Err(at("the entry's request hash is not the bundle's".into())),
        }
        let first_own = leaf.text("proposal_id").is_some() && out.iter().all(|l| l.text("proposal_id").is_none());
        if first_own && leaf.action() != "proposal.created" {
            return Err(at(format!("the proposal's first leaf is {:?}, not proposal.created", leaf.action())));
        }
        out.push(leaf);
    }
    if out.iter().all(|l| l.text("proposal_id").is_none()) {
        return Err(fail(5, "no leaf of this proposal"));
    }
    Ok(out)
}

/// Verifies a compact ES256 JWS of type `typ` by a key of `jwks` and
/// returns its claims.
pub fn verify_jws(compact: &str, jwks: &Value, typ: &str) -> Result<Value, String> {
    let mut parts = compact.split('.');
    let (Some(h), Some(p), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err("not a compact JWS".into());
    };
    let header = decode_part(h).ok_or("the header is not base64url JSON")?;
    if header.get("alg").and_then(Value::as_str) != Some("ES256") {
        return Err("alg is not ES256".into());
    }
    if header.get("typ").and_then(Value::as_str) != Some(typ) {
        return Err(format!("typ is not {typ}"));
    }
    let kid = header.get("kid").and_then(Value::as_str).ok_or("no kid")?;
    let jwk = jwks
        .get("keys")
        .and_then(Value::as_array)
        .and_then(|keys| keys.iter().find(|k| k.get("kid").and_then(Value::as_str) == Some(kid)))
        .ok_or_else(|| format!("kid {kid} is not in the key set"))?;
    let coordinate = |name: &str| {
        jwk.get(name).and_then(Value::as_str).and_then(|c| URL_SAFE_NO_PAD.decode(c).ok()).filter(|c| c.len() == 32)
    };
    let (Some(x), Some(y)) = (coordinate("x"), coordinate("y")) else {
        return Err(format!("key {kid} is not a P-256 key"));
    };
    if jwk.get("kty").and_then(Value::as_str) != Some("EC") || jwk.get("crv").and_then(Value::as_str) != Some("P-256") {
        return Err(format!("key {kid} is not a P-256 key"));
    }
    let point = [&[0x04][..], &x, &y].concat();
    let key = VerifyingKey::from_sec1_bytes(&point).map_err(|_| format!("key {kid} is not on P-256"))?;
    let signature = URL_SAFE_NO_PAD
        .decode(s)
        .ok()
        .and_then(|s| Signature::from_slice(&s).ok())
        .ok_or("the signature is not 64 bytes of base64url")?;
    key.verify(format!("{h}.{p}").as_bytes(), &signature).map_err(|_| "the signature does not verify".to_owned())?;
    decode_part(p).ok_or_else(|| "the payload is not base64url JSON".into())
}

/// A compact JWS's claims, unverified.
pub fn jws_payload(compact: &str) -> Option<Value> {
    decode_part(compact.split('.').nth(1)?)
}

fn decode_part(part: &str) -> Option<Value> {
    crate::decision::approval::token::decode_json_object(part).map(Value::Object)
}

fn check_receipts(bundle: &Bundle, own: &[&Leaf]) -> Result<usize, Failure> {
    let mut prev: Option<String> = None;
    let mut count = 0;
    for leaf in own {
        let at = |why: String| fail(6, format!("leaf {} ({}): {why}", leaf.index, leaf.action()));
        let Some(receipt) = leaf.receipt() else {
            if receipts::kind_of(leaf.action(), leaf.text("actor").unwrap_or("")).is_some() {
                return Err(at("the step carries no receipt".into()));
            }
            continue;
        };
        let claims = verify_jws(receipt, &bundle.keys.receipts, RECEIPT_TYP).map_err(at)?;
        let mut data = leaf.data().clone();
        if let Some(d) = data.as_object_mut() {
            d.remove("receipt");
        }
        let expect = [
            ("iss", Value::String(bundle.issuer.clone())),
            ("tid", leaf.body["tenant_id"].clone()),
            ("pid", leaf.body["proposal_id"].clone()),
            ("rh", leaf.body["request_hash"].clone()),
            ("action", leaf.body["action"].clone()),
            ("actor", leaf.body["actor"].clone()),
            ("data", data),
            ("prev", prev.clone().map_or(Value::Null, Value::String)),
        ];
        for (claim, want) in expect {
            if claims.get(claim) != Some(&want) {
                return Err(at(format!("the receipt's {claim} is not the entry's")));
            }
        }
        prev = Some(receipts::digest(receipt));
        count += 1;
    }
    Ok(count)
}

fn check_request(bundle: &Bundle, created: &Leaf, own: &[&Leaf]) -> Result<(), Failure> {
    let r = &bundle.request;
    if r.get("tenant_id").and_then(Value::as_str) != Some(bundle.tenant_id.as_str()) {
        return Err(fail(7, "the request's tenant is not the bundle's"));
    }
    for field in ["kind", "amount_minor", "currency"] {
        if r.get(field) != created.data().get(field) {
            return Err(fail(7, format!("the request's {field} is not the one proposal.created recorded")));
        }
    }
    if created.text("request_hash") != Some(bundle.request_hash.as_str()) {
        return Err(fail(7, "the request hash is not the one proposal.created recorded"));
    }
    let c = &bundle.commitments;
    if r.get("source_account").and_then(Value::as_str) != Some(c.source_account.as_str())
        || r.pointer("/destination/id").and_then(Value::as_str) != Some(c.destination.as_str())
    {
        return Err(fail(7, "the request's accounts are not the commitments"));
    }
    if let Some(op) = own.iter().find(|l| l.action() == "operation.created") {
        for (member, want) in
            [("source_account_commitment", &c.source_account), ("destination_commitment", &c.destination)]
        {
            if op.data().get(member).is_some_and(|got| got.as_str() != Some(want.as_str())) {
                return Err(fail(7, format!("the authorization receipt's {member} is not the bundle's")));
            }
        }
    }
    let mut full = r.clone();
    for (field, disclosed) in &bundle.disclosed {
        let (committed, pointer) = match field.as_str() {
            super::SOURCE_ACCOUNT => (&c.source_account, "/source_account"),
            super::DESTINATION => (&c.destination, "/destination/id"),
            other => return Err(fail(7, format!("{other:?} is not a committed field"))),
        };
        let salt = URL_SAFE_NO_PAD
            .decode(&disclosed.salt)
            .ok()
            .filter(|s| s.len() == 32)
            .ok_or_else(|| fail(7, format!("the {field} salt is not 32 bytes of base64url")))?;
        if commitment(&salt, &disclosed.value) != *committed {
            return Err(fail(7, format!("the disclosed {field} does not match its commitment")));
        }
        if let Some(slot) = full.pointer_mut(pointer) {
            *slot = Value::String(disclosed.value.clone());
        }
    }
    if bundle.disclosed.len() == 2 {
        let bytes = crate::domain::jcs::to_vec(&full).map_err(|e| fail(7, format!("the request: {e}")))?;
        let hash = crate::platform::digest::sha256_prefixed(&bytes);
        if hash != bundle.request_hash {
            return Err(fail(7, "the disclosed request does not hash to the request hash"));
        }
    }
    Ok(())
}

fn request_line(bundle: &Bundle) -> String {
    match bundle.disclosed.len() {
        2 => "the disclosed request hashes to the request hash".into(),
        0 => "matches the signed history; accounts committed, not disclosed".into(),
        _ => "matches the signed history; one account disclosed and matches its commitment".into(),
    }
}

/// A decision's entry: an approval, a rejection, or a policy's approval.
fn is_decision(leaf: &Leaf) -> bool {
    match leaf.action() {
        "proposal.approval_given" | "proposal.rejected" => true,
        "proposal.approved" => leaf.text("actor").is_some_and(|a| a.starts_with("policy:")),
        _ => false,
    }
}

/// The approval says what its receipt's entry says.
fn same_decision(a: &super::ApprovalEvidence, leaf: &Leaf) -> Result<(), String> {
    let data = leaf.data();
    let (action, actor) = super::decision_entry(&a.decision, &a.via, &a.approver_id);
    if leaf.action() != action || leaf.text("actor") != Some(actor.as_str()) {
        return Err(format!("its receipt records {} by {:?}", leaf.action(), leaf.body["actor"]));
    }
    let amr_matches = match data.get("amr") {
        Some(Value::Array(methods)) => methods.iter().any(|m| m == a.amr.as_str()),
        Some(amr) => amr == a.amr.as_str(),
        None => action == "proposal.rejected",
    };
    let via_matches = action == "proposal.approved" || data.get("via").and_then(Value::as_str) == Some(&a.via);
    let round_matches = data.get("round").is_none_or(|r| r.as_i64() == Some(a.round));
    if !(amr_matches && via_matches && round_matches) {
        return Err("its channel, method or round is not its receipt's".into());
    }
    if data.get("assertion_sha256").is_some() != a.passkey.is_some() {
        return Err("a passkey is given exactly when its receipt names an assertion".into());
    }
    Ok(())
}

/// Returns how many decisions a passkey signed.
fn check_approvals(bundle: &Bundle, leaves: &[Leaf]) -> Result<usize, Failure> {
    let decisions: Vec<&Leaf> = leaves.iter().filter(|l| is_decision(l)).collect();
    if decisions.len() != bundle.approvals.len() {
        return Err(fail(
            9,
            format!("{} decisions listed, {} recorded in the leaves", bundle.approvals.len(), decisions.len()),
        ));
    }
    let mut signed = 0;
    for (n, (a, receipt_leaf)) in bundle.approvals.iter().zip(decisions).enumerate() {
        let at = |why: String| fail(9, format!("decision {n} by {}: {why}", a.approver_id));
        if a.receipt.as_deref() != receipt_leaf.receipt() {
            return Err(at("its receipt is not the one of the next decision's entry".into()));
        }
        same_decision(a, receipt_leaf).map_err(at)?;
        let Some(pk) = &a.passkey else { continue };
        let registered = leaves
            .iter()
            .find(|l| l.action() == "passkey.registered" && l.data()["passkey_id"] == pk.passkey_id.as_str())
            .ok_or_else(|| at(format!("passkey {} has no registration among the leaves", pk.passkey_id)))?;
        let key = URL_SAFE_NO_PAD.decode(&pk.public_key).map_err(|_| at("the public key is not base64url".into()))?;
        let print = crate::people::passkeys::fingerprint(&key);
        if print != pk.fingerprint || registered.data()["fingerprint"] != print.as_str() {
            return Err(at("the public key is not the one registered".into()));
        }
        if registered.data()["holder"] != a.approver_id.as_str() {
            return Err(at("the passkey was registered to someone else".into()));
        }
        let digest = receipts::assertion_digest(&pk.authenticator_data, &pk.client_data_json, &pk.signature);
        if receipt_leaf.data()["passkey_id"] != pk.passkey_id.as_str() {
            return Err(at("the passkey is not the one its receipt names".into()));
        }
        if receipt_leaf.data()["assertion_sha256"] != digest.as_str() {
            return Err(at("the assertion is not the one its receipt names".into()));
        }
        let row = AssertionRow {
            proposal_id: bundle.proposal_id.clone(),
            round: a.round,
            approver_id: a.approver_id.clone(),
            tenant_id: bundle.tenant_id.clone(),
            kind: pk.kind.clone(),
            request_hash: bundle.request_hash.clone(),
            listed: pk.listed.clone(),
            nonce: pk.nonce.clone(),
            passkey_id: pk.passkey_id.clone(),
            public_key: pk.public_key.clone(),
            rp_id: pk.rp_id.clone(),
            origin: pk.origin.clone(),
            credential_id: pk.credential_id.clone(),
            authenticator_data: pk.authenticator_data.clone(),
            client_data_json: pk.client_data_json.clone(),
            signature: pk.signature.clone(),
            created_at: chrono::DateTime::UNIX_EPOCH,
        };
        crate::people::passkeys::step_up::reverify(&row)
            .map_err(|e| at(format!("the assertion does not verify: {e}")))?;
        signed += 1;
    }
    Ok(signed)
}

fn check_token(bundle: &Bundle, own: &[&Leaf]) -> Result<Option<Value>, Failure> {
    let Some(token) = &bundle.approval_token else {
        if own.iter().any(|l| l.action() == "operation.created") {
            return Err(fail(10, "an operation was authorized, but the bundle has no approval token"));
        }
        return Ok(None);
    };
    let claims =
        verify_jws(token, &bundle.keys.tokens, crate::decision::approval::token::TOKEN_TYP).map_err(|e| fail(10, e))?;
    for (claim, want) in [("pid", &bundle.proposal_id), ("tid", &bundle.tenant_id), ("rh", &bundle.request_hash)] {
        if claims.get(claim).and_then(Value::as_str) != Some(want.as_str()) {
            return Err(fail(10, format!("the token's {claim} is not the bundle's")));
        }
    }
    let jti = claims.get("jti").and_then(Value::as_str).unwrap_or("");
    let approved = own.iter().any(|l| l.action() == "proposal.approved" && l.data()["jti"] == jti);
    if !approved {
        return Err(fail(10, "no proposal.approved entry names the token's jti"));
    }
    if let Some(op) = own.iter().find(|l| l.action() == "operation.created") {
        if op.data()["jti"] != jti {
            return Err(fail(10, "the operation was authorized by another token"));
        }
    }
    Ok(Some(claims))
}

fn check_operation(bundle: &Bundle, own: &[&Leaf]) -> Result<(), Failure> {
    let entries: Vec<(&str, &Value)> = own.iter().map(|l| (l.action(), l.data())).collect();
    let authorized = entries.iter().any(|(action, _)| *action == "operation.created");
    let (op, logged) = match (&bundle.operation, super::logged_operation(&entries)) {
        (None, None) if !authorized => return Ok(()),
        (None, None) => return Err(fail(11, "an operation was authorized, but names no operation id")),
        (Some(op), Some(logged)) => (op, logged),
        (None, Some(_)) => return Err(fail(11, "an operation was authorized, but the bundle names none")),
        (Some(_), None) => return Err(fail(11, "the bundle names an operation no entry authorized")),
    };
    if op.id != logged.id {
        return Err(fail(11, "the operation is not the one authorized"));
    }
    if *op != logged {
        return Err(fail(
            11,
            format!("the operation's status or rail reference is not the last one logged ({})", logged.status),
        ));
    }
    Ok(())
}

fn check_mandate(bundle: &Bundle, token: Option<&Value>) -> Result<(), Failure> {
    let (mandate, token) = match (&bundle.mandate, token) {
        (None, None) => return Ok(()),
        (Some(m), Some(t)) => (m, t),
        (None, Some(_)) => return Err(fail(12, "a token was minted, but the bundle has no mandate")),
        (Some(_), None) => return Err(fail(12, "a mandate without an approval token")),
    };
    let claims = verify_jws(mandate, &bundle.keys.receipts, super::mandate::MANDATE_TYP).map_err(|e| fail(12, e))?;
    let want = super::mandate::claims(&bundle.issuer, &bundle.proposal_id, token, &bundle.request)
        .ok_or_else(|| fail(12, "the request's amount or currency is unreadable"))?;
    if claims != want {
        return Err(fail(12, "the mandate does not restate the token and the request"));
    }
    Ok(())
}
