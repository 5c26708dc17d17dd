//! A payment's proof bundle (docs/EVIDENCE.md "The
//! proof bundle"): one JSON document with the request, its approvals and
//! their passkey assertions, the approval token, the operation's receipts
//! and its audit entries as leaves of the transparency log with inclusion
//! proofs to one signed checkpoint, and the public keys — so anyone can
//! check a payment offline ([`verify`]) with no Countersign code.
//!
//! Account numbers appear as salted commitments ([`commitment`]); the
//! exporter may disclose them ([`Disclose`]).

pub mod bundle;
pub mod exports;
pub mod human_loop;
pub mod mandate;
pub mod tlog;
pub mod verify;

use std::collections::BTreeMap;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::domain::CanonicalRequest;
use crate::store::Conn;

/// The bundle's `format`.
pub const FORMAT: &str = "countersign-evidence/1";
/// The two committed fields, as named in `commitments` and `disclose=`.
pub const SOURCE_ACCOUNT: &str = "source_account";
pub const DESTINATION: &str = "destination";

/// A payment's proof bundle (docs/EVIDENCE.md "The proof bundle"): every
/// member is always present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Bundle {
    pub format: String,
    pub issuer: String,
    pub tenant_id: String,
    pub proposal_id: String,
    pub status: String,
    pub exported_at: String,
    /// The canonical request with its accounts replaced by commitments.
    #[schema(value_type = Object)]
    pub request: Value,
    pub request_hash: String,
    pub commitments: Commitments,
    pub disclosed: BTreeMap<String, Disclosed>,
    #[schema(value_type = Object)]
    pub policy: Value,
    pub approvals: Vec<ApprovalEvidence>,
    pub approval_token: Option<String>,
    pub mandate: Option<String>,
    pub operation: Option<OperationEvidence>,
    pub log: LogEvidence,
    pub keys: KeysEvidence,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Commitments {
    pub source_account: String,
    pub destination: String,
}

/// An account's value and salt, when the exporter disclosed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Disclosed {
    pub value: String,
    /// 32 bytes, base64url without padding.
    pub salt: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ApprovalEvidence {
    pub approver_id: String,
    pub round: i64,
    pub decision: String,
    pub via: String,
    pub amr: String,
    pub receipt: Option<String>,
    pub passkey: Option<PasskeyEvidence>,
}

/// The kept assertion a passkey gave for an approval (binary values
/// base64url; `public_key` the SEC1 point).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PasskeyEvidence {
    pub kind: String,
    pub nonce: String,
    pub listed: Option<String>,
    pub passkey_id: String,
    pub public_key: String,
    pub fingerprint: String,
    pub rp_id: String,
    pub origin: String,
    pub credential_id: String,
    pub authenticator_data: String,
    pub client_data_json: String,
    pub signature: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OperationEvidence {
    pub id: String,
    pub status: String,
    pub rail_reference: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LogEvidence {
    /// The signed note the leaves are proven against.
    pub checkpoint: String,
    pub tree_size: u64,
    pub leaves: Vec<LeafEvidence>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LeafEvidence {
    pub index: u64,
    /// The leaf's bytes, standard base64.
    pub body: String,
    /// The inclusion proof, standard base64 hashes, leaf side first.
    pub proof: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct KeysEvidence {
    /// The receipt keys' JWK Set.
    #[schema(value_type = Object)]
    pub receipts: Value,
    /// The approval-token keys' JWK Set.
    #[schema(value_type = Object)]
    pub tokens: Value,
    /// The log's note verifier key.
    pub log: String,
}

/// Which committed accounts the exporter discloses (`disclose=`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Disclose {
    pub source_account: bool,
    pub destination: bool,
}

impl Disclose {
    /// `destination`, `source_account`, or both comma-separated; anything
    /// else names the unknown field.
    pub fn parse(text: &str) -> Result<Disclose, String> {
        let mut d = Disclose::default();
        for field in text.split(',').map(str::trim).filter(|f| !f.is_empty()) {
            match field {
                SOURCE_ACCOUNT => d.source_account = true,
                DESTINATION => d.destination = true,
                other => return Err(format!("cannot disclose {other:?}: only destination and source_account")),
            }
        }
        Ok(d)
    }
}

/// The audit entry that records a decision: its action and actor. A
/// person's approval or rejection is theirs (`user:<id>`); a policy's
/// approval is the grant, whose actor is the policy (`policy:<rule>`, also
/// its approver id). The one rule for building a bundle and checking one.
pub fn decision_entry(decision: &str, via: &str, approver_id: &str) -> (&'static str, String) {
    match (decision, via) {
        (_, "policy") => ("proposal.approved", approver_id.to_owned()),
        ("approve", _) => ("proposal.approval_given", format!("user:{approver_id}")),
        _ => ("proposal.rejected", format!("user:{approver_id}")),
    }
}

/// The operation as the logged entries (action, data) tell it: the
/// `operation.created` one's id, then the last `operation.<status>` after
/// it (`pending` with no rail reference until there is one). The one rule
/// for building a bundle and checking one.
pub fn logged_operation<'a>(entries: &[(&'a str, &'a Value)]) -> Option<OperationEvidence> {
    let created = entries.iter().position(|(action, _)| *action == "operation.created")?;
    let id = entries[created].1.get("operation_id")?.as_str()?.to_owned();
    let moved = |action: &str| action.starts_with("operation.") && action != "operation.created";
    let last = entries[created + 1..].iter().rev().find(|(action, _)| moved(action));
    let text = |data: &Value, member: &str| data.get(member).and_then(Value::as_str).map(str::to_owned);
    Some(OperationEvidence {
        id,
        status: last.and_then(|(_, data)| text(data, "operation_to")).unwrap_or_else(|| "pending".into()),
        rail_reference: last.and_then(|(_, data)| text(data, "rail_reference")),
    })
}

/// `sha256:` + hex of SHA-256(salt ‖ value).
pub fn commitment(salt: &[u8], value: &str) -> String {
    let mut h = Sha256::new();
    h.update(salt);
    h.update(value.as_bytes());
    format!("sha256:{}", hex::encode(h.finalize()))
}

/// A request's two accounts, their salts and commitments.
pub struct Committed {
    pub source_account: (String, [u8; 32], String),
    pub destination: (String, [u8; 32], String),
}

impl Committed {
    /// The salts kept for `proposal_id` (made on first use, inside the
    /// caller's transaction) and the commitments of `request`'s accounts.
    pub async fn of(conn: &mut Conn, proposal_id: &str, request: &CanonicalRequest) -> crate::store::Result<Self> {
        let salts = crate::store::evidence::salts(conn, proposal_id, [SOURCE_ACCOUNT, DESTINATION]).await?;
        Ok(Self::with_salts(request, salts))
    }

    /// The commitments of `request`'s accounts under these salts (the
    /// source account's, then the destination's).
    pub fn with_salts(request: &CanonicalRequest, [source_salt, destination_salt]: [[u8; 32]; 2]) -> Self {
        let committed = |value: &str, salt: [u8; 32]| (value.to_owned(), salt, commitment(&salt, value));
        Committed {
            source_account: committed(request.source_account.expose(), source_salt),
            destination: committed(request.destination.id.expose(), destination_salt),
        }
    }

    pub fn commitments(&self) -> Commitments {
        Commitments { source_account: self.source_account.2.clone(), destination: self.destination.2.clone() }
    }

    /// What `disclose` asks for, by field.
    pub fn disclosed(&self, disclose: Disclose) -> BTreeMap<String, Disclosed> {
        let shown = |(value, salt, _): &(String, [u8; 32], String)| Disclosed {
            value: value.clone(),
            salt: URL_SAFE_NO_PAD.encode(salt),
        };
        let mut out = BTreeMap::new();
        if disclose.source_account {
            out.insert(SOURCE_ACCOUNT.to_owned(), shown(&self.source_account));
        }
        if disclose.destination {
            out.insert(DESTINATION.to_owned(), shown(&self.destination));
        }
        out
    }
}

/// The canonical request as JSON with its accounts replaced by `c`.
pub fn committed_request(request: &CanonicalRequest, c: &Commitments) -> Value {
    let mut value = request.to_value();
    value["source_account"] = Value::String(c.source_account.clone());
    value["destination"]["id"] = Value::String(c.destination.clone());
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commitment_is_the_salted_sha256_of_the_value() {
        // SHA-256 of 32 zero bytes followed by "acct_1".
        let mut h = Sha256::new();
        h.update([0u8; 32]);
        h.update(b"acct_1");
        assert_eq!(commitment(&[0; 32], "acct_1"), format!("sha256:{}", hex::encode(h.finalize())));
        assert_ne!(commitment(&[1; 32], "acct_1"), commitment(&[0; 32], "acct_1"), "the salt counts");
    }

    #[test]
    fn disclose_names_only_the_two_accounts() {
        assert_eq!(Disclose::parse("destination").unwrap(), Disclose { destination: true, source_account: false });
        assert_eq!(
            Disclose::parse("destination, source_account").unwrap(),
            Disclose { destination: true, source_account: true }
        );
        assert_eq!(Disclose::parse("").unwrap(), Disclose::default());
        assert!(Disclose::parse("destination,salt").unwrap_err().contains("\"salt\""));
    }
}
