//! Signed receipts (docs/EVIDENCE.md): at each
//! consequential step of a payment, the audit entry that records it carries
//! a receipt, an ES256 compact JWS by the receipt key (`kid` in the JWKS
//! beside the token keys), over what the entry says plus the digest of the
//! payment's previous receipt. The receipt lives in the entry's `data`, so
//! it is hashed into the audit chain and is a leaf of the transparency log.
//!
//! The steps: an approval or a rejection, the approval token granted, the
//! authorization saved before the rail is called (`operation.created`), the
//! rail's answer, each reconciliation or an admin's resolution that moves
//! the operation, and a reversal.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::decision::approval::keys::KeyStore;
use crate::store::audit::AuditEntry;
use crate::store::{Conn, StoreError};

/// The JWS `typ` of a receipt.
pub const RECEIPT_TYP: &str = "countersign-receipt+jws";

/// The receipt key, and the issuer receipts name (the console's URL).
pub trait Receipts {
    fn receipt_keys(&self) -> &KeyStore;
    fn receipt_issuer(&self) -> &str;
}

/// What kind of step an audit action is, if it is one that gets a receipt.
pub fn kind_of(action: &str, actor: &str) -> Option<&'static str> {
    Some(match action {
        "proposal.approval_given" => "approval",
        "proposal.rejected" => "rejection",
        "proposal.approved" => "approval_token",
        "operation.created" => "authorization",
        "proposal.reversed" => "reversal",
        a if a.starts_with("operation.") => match actor {
            "system:rail" => "rail_answer",
            a if a.starts_with("user:") => "resolution",
            _ => "reconciliation",
        },
        _ => return None,
    })
}

/// A receipt's claims.
#[derive(Debug, Serialize)]
struct Claims<'a> {
    iss: &'a str,
    iat: i64,
    kind: &'static str,
    action: &'a str,
    actor: &'a str,
    tid: Option<&'a str>,
    pid: &'a str,
    rh: Option<&'a str>,
    /// `sha256:` + hex of the payment's previous receipt (its compact JWS's
    /// bytes); `null` for its first.
    prev: Option<String>,
    data: &'a Value,
}

/// The digest of a passkey assertion as an approval's receipt names it:
/// `sha256:` + hex of SHA-256 over its authenticator data, client data
/// JSON and signature as sent (base64url), joined by `.`.
pub fn assertion_digest(authenticator_data: &str, client_data_json: &str, signature: &str) -> String {
    digest(&format!("{authenticator_data}.{client_data_json}.{signature}"))
}

/// `sha256:` + lowercase hex of a receipt's compact serialization.
pub fn digest(receipt: &str) -> String {
    crate::platform::digest::sha256_prefixed(receipt)
}

/// Appends `entry` to the audit trail inside the caller's transaction,
/// with its receipt when it records a consequential step of a payment.
pub async fn append(
    state: &impl Receipts,
    tx: &mut Conn,
    entry: &AuditEntry,
    now: DateTime<Utc>,
) -> crate::store::Result<()> {
    let (Some(kind), Some(pid)) = (kind_of(&entry.action, &entry.actor), entry.proposal_id.as_deref()) else {
        return crate::store::audit::append(tx, entry).await;
    };
    let prev = crate::store::audit::last_receipt(tx, pid).await?;
    crate::store::audit::append(tx, &signed(state, entry, kind, pid, prev.as_deref(), now)?).await
}

/// `entry` with its receipt when it records a consequential step of a
/// payment whose newest receipt is `prev`, for a caller that read `prev`
/// itself and appends the entry in its own statements
/// (`crate::commit`'s one command on SQLite).
pub fn sign(
    state: &impl Receipts,
    entry: &AuditEntry,
    prev: Option<&str>,
    now: DateTime<Utc>,
) -> crate::store::Result<AuditEntry> {
    match (kind_of(&entry.action, &entry.actor), entry.proposal_id.as_deref()) {
        (Some(kind), Some(pid)) => signed(state, entry, kind, pid, prev, now),
        _ => Ok(entry.clone()),
    }
}

fn signed(
    state: &impl Receipts,
    entry: &AuditEntry,
    kind: &'static str,
    pid: &str,
    prev: Option<&str>,
    now: DateTime<Utc>,
) -> crate::store::Result<AuditEntry> {
    let claims = Claims {
        iss: state.receipt_issuer(),
        iat: now.timestamp(),
        kind,
        action: &entry.action,
        actor: &entry.actor,
        tid: entry.tenant_id.as_deref(),
        pid,
        rh: entry.request_hash.as_deref(),
        prev: prev.map(digest),
        data: &entry.data,
    };
    let receipt =
        state.receipt_keys().sign_jws(RECEIPT_TYP, &claims).map_err(|e| StoreError::corrupt("receipt key", e))?;
    let mut signed = entry.clone();
    match signed.data.as_object_mut() {
        Some(data) => {
            data.insert("receipt".into(), Value::String(receipt));
        }
        None => signed.data = serde_json::json!({ "value": entry.data, "receipt": receipt }),
    }
    Ok(signed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_consequential_step_has_its_kind_and_nothing_else_does() {
        assert_eq!(kind_of("proposal.approval_given", "user:u1"), Some("approval"));
        assert_eq!(kind_of("proposal.rejected", "user:u1"), Some("rejection"));
        assert_eq!(kind_of("proposal.approved", "policy:auto"), Some("approval_token"));
        assert_eq!(kind_of("operation.created", "agent:a"), Some("authorization"));
        assert_eq!(kind_of("operation.succeeded", "system:rail"), Some("rail_answer"));
        assert_eq!(kind_of("operation.succeeded", "system:reconcile"), Some("reconciliation"));
        assert_eq!(kind_of("operation.failed", "user:admin"), Some("resolution"));
        assert_eq!(kind_of("proposal.reversed", "system:rail"), Some("reversal"));
        for other in ["proposal.created", "proposal.cancelled", "passkey.registered", "session.signed_in"] {
            assert_eq!(kind_of(other, "user:u1"), None, "{other}");
        }
    }
}
