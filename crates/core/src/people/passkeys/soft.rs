//! A software authenticator: what Chromium's virtual authenticator does,
//! byte for byte, so each refusal can be provoked on its own. Compiled for
//! the tests only (`test-hooks`).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::elliptic_curve::sec1::ToSec1Point;
use p256::elliptic_curve::Generate;
use sha2::{Digest, Sha256};

use super::cbor::{self, Value};
use super::webauthn::{Assertion, RelyingParty, FLAG_AT, FLAG_UP, FLAG_UV};

/// The relying party the unit tests use.
pub fn rp() -> RelyingParty {
    RelyingParty::from_public_url("https://pay.example.com").expect("a URL")
}

pub struct SoftKey {
    pub signing: SigningKey,
    pub credential_id: Vec<u8>,
    pub counter: u32,
}

pub fn client_data(kind: &str, challenge: &[u8], origin: &str) -> Vec<u8> {
    serde_json::json!({ "type": kind, "challenge": URL_SAFE_NO_PAD.encode(challenge), "origin": origin, "crossOrigin": false })
        .to_string()
        .into_bytes()
}

fn head(rp_id: &str, flags: u8, counter: u32) -> Vec<u8> {
    [Sha256::digest(rp_id.as_bytes()).as_slice(), &[flags], &counter.to_be_bytes()].concat()
}

/// A passkey held in memory.
impl SoftKey {
    #[allow(clippy::new_without_default)]
    pub fn new() -> SoftKey {
        let mut credential_id = vec![0u8; 16];
        rand::RngCore::fill_bytes(&mut rand::thread_rng(), &mut credential_id);
        SoftKey { signing: SigningKey::generate(), credential_id, counter: 0 }
    }

    /// The public key, SEC1 uncompressed (what the server stores).
    pub fn sec1(&self) -> Vec<u8> {
        self.signing.verifying_key().as_affine().to_sec1_point(false).as_bytes().to_vec()
    }

    pub fn cose(&self) -> Value {
        let bytes = self.sec1();
        Value::Map(vec![
            (Value::Int(1), Value::Int(2)),
            (Value::Int(3), Value::Int(-7)),
            (Value::Int(-1), Value::Int(1)),
            (Value::Int(-2), Value::Bytes(bytes[1..33].to_vec())),
            (Value::Int(-3), Value::Bytes(bytes[33..65].to_vec())),
        ])
    }

    /// (client data JSON, attestation object) for `navigator.credentials.create`.
    pub fn register(&self, challenge: &[u8]) -> (Vec<u8>, Vec<u8>) {
        self.register_with(challenge, &rp().origin, &rp().id, FLAG_UP | FLAG_UV | FLAG_AT, self.cose())
    }

    pub fn register_with(
        &self,
        challenge: &[u8],
        origin: &str,
        rp_id: &str,
        flags: u8,
        cose: Value,
    ) -> (Vec<u8>, Vec<u8>) {
        let id_len = (self.credential_id.len() as u16).to_be_bytes();
        let auth = [
            head(rp_id, flags, self.counter),
            vec![0; 16],
            id_len.to_vec(),
            self.credential_id.clone(),
            cbor::encode(&cose),
        ]
        .concat();
        let attestation = Value::Map(vec![
            (Value::Text("fmt".into()), Value::Text("none".into())),
            (Value::Text("attStmt".into()), Value::Map(Vec::new())),
            (Value::Text("authData".into()), Value::Bytes(auth)),
        ]);
        (client_data("webauthn.create", challenge, origin), cbor::encode(&attestation))
    }

    /// An assertion over `challenge`, counting up.
    pub fn assert(&mut self, challenge: &[u8]) -> Assertion {
        self.assert_with(challenge, "webauthn.get", &rp().origin, &rp().id, FLAG_UP | FLAG_UV)
    }

    pub fn assert_with(&mut self, challenge: &[u8], kind: &str, origin: &str, rp_id: &str, flags: u8) -> Assertion {
        self.counter += 1;
        let authenticator_data = head(rp_id, flags, self.counter);
        let client_data_json = client_data(kind, challenge, origin);
        let signed = [&authenticator_data[..], Sha256::digest(&client_data_json).as_slice()].concat();
        let signature: Signature = self.signing.sign(&signed);
        Assertion {
            credential_id: self.credential_id.clone(),
            authenticator_data,
            client_data_json,
            signature: signature.to_der().as_bytes().to_vec(),
        }
    }
}
