//! Verifying WebAuthn ceremonies (W3C Web Authentication, level 2): a new
//! passkey's registration, and an assertion made with one.
//!
//! Only what a payment approval needs, strictly: ES256 keys (COSE alg -7 on
//! P-256), attestation `none` (a passkey says nothing about its maker; the
//! approval's strength is the key's binding to this person and this
//! payment, not the authenticator's brand), user presence always, user
//! verification when asked. The same functions serve the console and
//! `countersign audit verify-approvals`, so what an auditor re-checks
//! offline is exactly what was checked when the approval was given.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::cbor::{self, Value};

/// Who the ceremony is for: the relying party id (the console's host name)
/// and the exact origin the browser must report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelyingParty {
    pub id: String,
    pub origin: String,
}

impl RelyingParty {
    /// From the console's public URL: its host is the id, its scheme, host
    /// and port the origin.
    pub fn from_public_url(public_url: &str) -> Option<RelyingParty> {
        let url = url::Url::parse(public_url).ok()?;
        let host = url.host_str()?.to_owned();
        let origin = url.origin().ascii_serialization();
        Some(RelyingParty { id: host, origin })
    }
}

/// Why a ceremony is refused. The codes are stable (audit, API, tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PasskeyError {
    #[error("the client data is not the JSON a browser sends")]
    BadClientData,
    #[error("the client data is for another ceremony")]
    WrongType,
    #[error("the passkey signed another challenge: the payment, the approver or the nonce differs")]
    WrongChallenge,
    #[error("the browser reports another origin")]
    WrongOrigin,
    #[error("the ceremony ran in a cross-origin frame")]
    CrossOrigin,
    #[error("the authenticator data is malformed")]
    BadAuthenticatorData,
    #[error("the authenticator data is for another relying party")]
    WrongRelyingParty,
    #[error("the user was not present")]
    UserNotPresent,
    #[error("the user was not verified (PIN or biometric)")]
    UserNotVerified,
    #[error("the signature does not verify with this passkey")]
    BadSignature,
    #[error("only ES256 (P-256) passkeys are accepted")]
    UnsupportedKey,
    #[error("the attestation object is malformed")]
    BadAttestation,
    #[error("the passkey's signature counter went back: it may have been cloned")]
    CounterWentBack,
}

impl PasskeyError {
    pub fn code(self) -> &'static str {
        use PasskeyError::*;
        match self {
            BadClientData => "bad_client_data",
            WrongType => "wrong_type",
            WrongChallenge => "wrong_challenge",
            WrongOrigin => "wrong_origin",
            CrossOrigin => "cross_origin",
            BadAuthenticatorData => "bad_authenticator_data",
            WrongRelyingParty => "wrong_relying_party",
            UserNotPresent => "user_not_present",
            UserNotVerified => "user_not_verified",
            BadSignature => "bad_signature",
            UnsupportedKey => "unsupported_key",
            BadAttestation => "bad_attestation",
            CounterWentBack => "counter_went_back",
        }
    }
}

/// A verified new passkey, to be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCredential {
    pub credential_id: Vec<u8>,
    /// The P-256 public key, SEC1 uncompressed (65 bytes).
    pub public_key: Vec<u8>,
    pub sign_count: u32,
    pub user_verified: bool,
}

/// What a browser returns from `navigator.credentials.get`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assertion {
    pub credential_id: Vec<u8>,
    pub authenticator_data: Vec<u8>,
    pub client_data_json: Vec<u8>,
    pub signature: Vec<u8>,
}

/// A verified assertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    pub sign_count: u32,
    pub user_verified: bool,
}

#[derive(Deserialize)]
struct ClientData {
    #[serde(rename = "type")]
    kind: String,
    challenge: String,
    origin: String,
    #[serde(rename = "crossOrigin", default)]
    cross_origin: bool,
}

/// Authenticator data flags: user present, user verified, attested credential data.
pub const FLAG_UP: u8 = 0x01;
pub const FLAG_UV: u8 = 0x04;
pub const FLAG_AT: u8 = 0x40;

/// The fixed head of authenticator data: rpIdHash, flags, signCount.
struct AuthData<'a> {
    rp_id_hash: &'a [u8],
    flags: u8,
    sign_count: u32,
    /// Attested credential data and extensions, if any.
    rest: &'a [u8],
}

fn auth_data(bytes: &[u8]) -> Result<AuthData<'_>, PasskeyError> {
    if bytes.len() < 37 {
        return Err(PasskeyError::BadAuthenticatorData);
    }
    Ok(AuthData {
        rp_id_hash: &bytes[..32],
        flags: bytes[32],
        sign_count: u32::from_be_bytes(bytes[33..37].try_into().expect("4 bytes")),
        rest: &bytes[37..],
    })
}

/// The checks both ceremonies share: the client data (type, challenge,
/// origin) and the authenticator data's relying party and flags.
fn check_common<'a>(
    rp: &RelyingParty,
    ceremony: &str,
    expected_challenge: &[u8],
    client_data_json: &[u8],
    authenticator_data: &'a [u8],
    require_uv: bool,
) -> Result<AuthData<'a>, PasskeyError> {
    let client: ClientData = serde_json::from_slice(client_data_json).map_err(|_| PasskeyError::BadClientData)?;
    if client.kind != ceremony {
        return Err(PasskeyError::WrongType);
    }
    let challenge = URL_SAFE_NO_PAD.decode(client.challenge.as_bytes()).map_err(|_| PasskeyError::BadClientData)?;
    if challenge != expected_challenge {
        return Err(PasskeyError::WrongChallenge);
    }
    if client.origin != rp.origin {
        return Err(PasskeyError::WrongOrigin);
    }
    if client.cross_origin {
        return Err(PasskeyError::CrossOrigin);
    }
    let data = auth_data(authenticator_data)?;
    if data.rp_id_hash != Sha256::digest(rp.id.as_bytes()).as_slice() {
        return Err(PasskeyError::WrongRelyingParty);
    }
    if data.flags & FLAG_UP == 0 {
        return Err(PasskeyError::UserNotPresent);
    }
    if require_uv && data.flags & FLAG_UV == 0 {
        return Err(PasskeyError::UserNotVerified);
    }
    Ok(data)
}

/// The public key of an ES256 COSE key, SEC1 uncompressed.
fn es256_key(cose: &Value) -> Result<Vec<u8>, PasskeyError> {
    let int = |k| cose.get_int(k).and_then(Value::as_int);
    // kty 2 (EC2), alg -7 (ES256), crv 1 (P-256).
    if int(1) != Some(2) || int(3) != Some(-7) || int(-1) != Some(1) {
        return Err(PasskeyError::UnsupportedKey);
    }
    let coordinate = |k| cose.get_int(k).and_then(Value::as_bytes).filter(|b| b.len() == 32);
    let (Some(x), Some(y)) = (coordinate(-2), coordinate(-3)) else {
        return Err(PasskeyError::UnsupportedKey);
    };
    let sec1 = [&[0x04][..], x, y].concat();
    // Refuse a point not on the curve now, not at the first approval.
    VerifyingKey::from_sec1_bytes(&sec1).map_err(|_| PasskeyError::UnsupportedKey)?;
    Ok(sec1)
}

/// Verifies a registration (`navigator.credentials.create`) against the
/// challenge the server gave; returns the passkey to store.
pub fn verify_registration(
    rp: &RelyingParty,
    expected_challenge: &[u8],
    client_data_json: &[u8],
    attestation_object: &[u8],
    require_uv: bool,
) -> Result<NewCredential, PasskeyError> {
    let attestation = cbor::decode(attestation_object).map_err(|_| PasskeyError::BadAttestation)?;
    // Attestation "none": the format says so and its statement is empty.
    let none = attestation.get_text("fmt").and_then(Value::as_text) == Some("none")
        && attestation.get_text("attStmt") == Some(&Value::Map(Vec::new()));
    if !none {
        return Err(PasskeyError::BadAttestation);
    }
    let auth_bytes = attestation.get_text("authData").and_then(Value::as_bytes).ok_or(PasskeyError::BadAttestation)?;
    let data = check_common(rp, "webauthn.create", expected_challenge, client_data_json, auth_bytes, require_uv)?;
    if data.flags & FLAG_AT == 0 || data.rest.len() < 18 {
        return Err(PasskeyError::BadAuthenticatorData);
    }
    // aaguid (16), credential id length (2), credential id, COSE key.
    let id_len = usize::from(u16::from_be_bytes([data.rest[16], data.rest[17]]));
    let after_len = &data.rest[18..];
    if id_len == 0 || id_len > 1023 || after_len.len() < id_len {
        return Err(PasskeyError::BadAuthenticatorData);
    }
    let (credential_id, key_bytes) = after_len.split_at(id_len);
    let (cose, _extensions) = cbor::decode_prefix(key_bytes).map_err(|_| PasskeyError::BadAuthenticatorData)?;
    Ok(NewCredential {
        credential_id: credential_id.to_vec(),
        public_key: es256_key(&cose)?,
        sign_count: data.sign_count,
        user_verified: data.flags & FLAG_UV != 0,
    })
}

/// Verifies an assertion (`navigator.credentials.get`) made with the passkey
/// whose key is `public_key` (SEC1) over `expected_challenge`.
/// `stored_sign_count` is the counter last seen (0: the authenticator keeps
/// none, and then nothing can be told from it).
pub fn verify_assertion(
    rp: &RelyingParty,
    expected_challenge: &[u8],
    public_key: &[u8],
    stored_sign_count: u32,
    assertion: &Assertion,
    require_uv: bool,
) -> Result<Verified, PasskeyError> {
    let data = check_common(
        rp,
        "webauthn.get",
        expected_challenge,
        &assertion.client_data_json,
        &assertion.authenticator_data,
        require_uv,
    )?;
    let key = VerifyingKey::from_sec1_bytes(public_key).map_err(|_| PasskeyError::UnsupportedKey)?;
    let signature = Signature::from_der(&assertion.signature).map_err(|_| PasskeyError::BadSignature)?;
    let signed = [&assertion.authenticator_data[..], Sha256::digest(&assertion.client_data_json).as_slice()].concat();
    key.verify(&signed, &signature).map_err(|_| PasskeyError::BadSignature)?;
    if (data.sign_count != 0 || stored_sign_count != 0) && data.sign_count <= stored_sign_count {
        return Err(PasskeyError::CounterWentBack);
    }
    Ok(Verified { sign_count: data.sign_count, user_verified: data.flags & FLAG_UV != 0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::people::passkeys::soft::*;
    use p256::elliptic_curve::sec1::ToSec1Point;

    #[test]
    fn a_registration_yields_the_key_and_each_flaw_is_refused() {
        let key = SoftKey::new();
        let challenge = [9u8; 32];
        let (client, attestation) = key.register(&challenge);
        let stored = verify_registration(&rp(), &challenge, &client, &attestation, true).expect("valid");
        assert_eq!(stored.credential_id, key.credential_id);
        assert_eq!(stored.public_key, key.signing.verifying_key().as_affine().to_sec1_point(false).as_bytes());
        assert!(stored.user_verified);

        let refused = |client: &[u8], attestation: &[u8], require_uv| {
            verify_registration(&rp(), &challenge, client, attestation, require_uv).unwrap_err()
        };
        assert_eq!(refused(&client, &attestation[..attestation.len() - 1], true), PasskeyError::BadAttestation);
        let (other, _) = key.register(&[8u8; 32]);
        assert_eq!(refused(&other, &attestation, true), PasskeyError::WrongChallenge);
        let as_get = client_data("webauthn.get", &challenge, &rp().origin);
        assert_eq!(refused(&as_get, &attestation, true), PasskeyError::WrongType);
        let (evil, att) =
            key.register_with(&challenge, "https://pay.example.com.evil.test", &rp().id, 0x45, key.cose());
        assert_eq!(refused(&evil, &att, true), PasskeyError::WrongOrigin);
        let (c, att) = key.register_with(&challenge, &rp().origin, "evil.test", 0x45, key.cose());
        assert_eq!(refused(&c, &att, true), PasskeyError::WrongRelyingParty);
        let (c, att) = key.register_with(&challenge, &rp().origin, &rp().id, FLAG_UP | FLAG_AT, key.cose());
        assert_eq!(refused(&c, &att, true), PasskeyError::UserNotVerified);
        assert!(verify_registration(&rp(), &challenge, &c, &att, false).is_ok(), "UV only when asked");
        let (c, att) = key.register_with(&challenge, &rp().origin, &rp().id, FLAG_UV | FLAG_AT, key.cose());
        assert_eq!(refused(&c, &att, true), PasskeyError::UserNotPresent);
        let (c, att) = key.register_with(&challenge, &rp().origin, &rp().id, FLAG_UP | FLAG_UV, key.cose());
        assert_eq!(refused(&c, &att, true), PasskeyError::BadAuthenticatorData, "no attested credential");
        let mut eddsa = key.cose();
        if let Value::Map(entries) = &mut eddsa {
            entries[1].1 = Value::Int(-8);
        }
        let (c, att) = key.register_with(&challenge, &rp().origin, &rp().id, 0x45, eddsa);
        assert_eq!(refused(&c, &att, true), PasskeyError::UnsupportedKey);
        let mut off_curve = key.cose();
        if let Value::Map(entries) = &mut off_curve {
            entries[4].1 = Value::Bytes(vec![1; 32]);
        }
        let (c, att) = key.register_with(&challenge, &rp().origin, &rp().id, 0x45, off_curve);
        assert_eq!(refused(&c, &att, true), PasskeyError::UnsupportedKey);
        // Another attestation format is not silently accepted as "none".
        let mut packed = cbor::decode(&attestation).unwrap();
        if let Value::Map(entries) = &mut packed {
            entries[0].1 = Value::Text("packed".into());
        }
        assert_eq!(refused(&client, &cbor::encode(&packed), true), PasskeyError::BadAttestation);
    }

    #[test]
    fn an_assertion_verifies_once_over_its_challenge_and_each_flaw_is_refused() {
        let mut key = SoftKey::new();
        let public = key.signing.verifying_key().as_affine().to_sec1_point(false).as_bytes().to_vec();
        let challenge = [7u8; 32];
        let good = key.assert(&challenge);
        let verified = verify_assertion(&rp(), &challenge, &public, 0, &good, true).expect("valid");
        assert_eq!(verified, Verified { sign_count: 1, user_verified: true });

        let check =
            |assertion: &Assertion, stored| verify_assertion(&rp(), &challenge, &public, stored, assertion, true);
        // The same assertion again: its counter is no longer ahead.
        assert_eq!(check(&good, 1), Err(PasskeyError::CounterWentBack));
        assert_eq!(verify_assertion(&rp(), &[6u8; 32], &public, 0, &good, true), Err(PasskeyError::WrongChallenge));
        let other = SoftKey::new().signing.verifying_key().as_affine().to_sec1_point(false).as_bytes().to_vec();
        assert_eq!(verify_assertion(&rp(), &challenge, &other, 0, &good, true), Err(PasskeyError::BadSignature));

        let mut tampered = key.assert(&challenge);
        tampered.authenticator_data[32] |= 0x08; // a flag flipped after signing
        assert_eq!(check(&tampered, 0), Err(PasskeyError::BadSignature));
        let mut garbled = key.assert(&challenge);
        garbled.signature = vec![0x30, 0x00];
        assert_eq!(check(&garbled, 0), Err(PasskeyError::BadSignature));
        let created = key.assert_with(&challenge, "webauthn.create", &rp().origin, &rp().id, FLAG_UP | FLAG_UV);
        assert_eq!(check(&created, 0), Err(PasskeyError::WrongType));
        let evil = key.assert_with(&challenge, "webauthn.get", "http://pay.example.com", &rp().id, FLAG_UP | FLAG_UV);
        assert_eq!(check(&evil, 0), Err(PasskeyError::WrongOrigin));
        let elsewhere = key.assert_with(&challenge, "webauthn.get", &rp().origin, "example.com", FLAG_UP | FLAG_UV);
        assert_eq!(check(&elsewhere, 0), Err(PasskeyError::WrongRelyingParty));
        let absent = key.assert_with(&challenge, "webauthn.get", &rp().origin, &rp().id, FLAG_UV);
        assert_eq!(check(&absent, 0), Err(PasskeyError::UserNotPresent));
        let unverified = key.assert_with(&challenge, "webauthn.get", &rp().origin, &rp().id, FLAG_UP);
        assert_eq!(check(&unverified, 0), Err(PasskeyError::UserNotVerified));
        let mut framed = key.assert(&challenge);
        framed.client_data_json = String::from_utf8(framed.client_data_json)
            .unwrap()
            .replace("\"crossOrigin\":false", "\"crossOrigin\":true")
            .into_bytes();
        assert_eq!(check(&framed, 0), Err(PasskeyError::CrossOrigin));
        let mut short = key.assert(&challenge);
        short.authenticator_data.truncate(36);
        assert_eq!(check(&short, 0), Err(PasskeyError::BadAuthenticatorData));
        // A later assertion with a higher counter is fine.
        let later = key.assert(&challenge);
        assert!(check(&later, 1).is_ok());
    }
}
