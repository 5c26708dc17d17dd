//! Building a proposal's proof bundle from the store (docs/EVIDENCE.md
//! "The proof bundle").

use std::collections::BTreeSet;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;

use super::{
    ApprovalEvidence, Bundle, Committed, Disclose, KeysEvidence, LeafEvidence, LogEvidence, PasskeyEvidence, FORMAT,
};
use crate::decision::approval::keys::Keys;
use crate::decision::approval::receipts::Receipts;
use crate::evidence::tlog::Log;
use crate::platform::clock::Clock;
use crate::store::passkeys::AssertionRow;
use crate::store::proposals::ApprovalRow;
use crate::store::{self, Store, StoreError};

/// What the exporter asks for.
#[derive(Debug, Clone, Copy, Default)]
pub struct Export {
    pub disclose: Disclose,
    /// Prove against the checkpoint of this size instead of the newest.
    pub tree_size: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum EvidenceError {
    /// No such proposal in this tenant.
    #[error("no such proposal")]
    NotFound,
    /// `tree_size` names no signed checkpoint, or one that does not cover
    /// the proposal's entries.
    #[error("{0}")]
    TreeSize(String),
    /// The log does not cover the proposal's entries even after a pass of
    /// the sequencer (an entry it refuses: the audit chain is broken).
    #[error("the transparency log does not cover this proposal's entries (is the audit chain intact?)")]
    NotLogged,
    #[error("signing the mandate: {0}")]
    Signing(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The proof bundle of `tenant`'s proposal `id` (only if `agent`, when
/// given, proposed it), as of the newest checkpoint (or the one
/// `export.tree_size` names).
pub async fn bundle(
    state: &(impl Store + Clock + Keys + Receipts + Log),
    tenant: &str,
    id: &str,
    agent: Option<&str>,
    export: Export,
    now: DateTime<Utc>,
) -> Result<Bundle, EvidenceError> {
    let db = state.db();
    let row = store::proposals::get(&db.read, tenant, id).await?.ok_or(EvidenceError::NotFound)?;
    if agent.is_some_and(|agent| agent != row.agent_id) {
        return Err(EvidenceError::NotFound);
    }
    let seqs: BTreeSet<i64> = store::evidence::entries_of(&db.read, id).await?.into_iter().collect();
    let newest = seqs.last().map_or(0, |last| *last as u64);
    let checkpoint = match export.tree_size {
        Some(size) => {
            let found = store::tlog::checkpoint(&db.read, size).await?;
            let found =
                found.ok_or_else(|| EvidenceError::TreeSize(format!("no checkpoint of size {size} was signed")))?;
            if size < newest {
                return Err(EvidenceError::TreeSize(format!(
                    "the checkpoint of size {size} does not cover this proposal's entries: it needs a size of at least {newest}"
                )));
            }
            found
        }
        None => {
            if store::tlog::size(&db.read).await? < newest {
                // Logged within a second anyway; the exporter need not wait.
                crate::evidence::tlog::catch_up(state).await?;
            }
            let latest = store::tlog::latest(&db.read).await?;
            latest.filter(|c| c.size as u64 >= newest).ok_or(EvidenceError::NotLogged)?
        }
    };
    let size = checkpoint.size as u64;
    let assertions = store::passkeys::assertions_of(&db.read, id).await?;
    let mut seqs = seqs;
    let signed_with: BTreeSet<&str> = assertions.iter().map(|a| a.passkey_id.as_str()).collect();
    for entry in store::audit::with_action(&db.read, "passkey.registered").await? {
        if entry.data.get("passkey_id").and_then(Value::as_str).is_some_and(|p| signed_with.contains(p)) {
            seqs.insert(entry.seq);
        }
    }
    let (leaves, bodies) = leaves(state, &seqs, size).await?;

    let mut tx = db.begin().await?;
    let committed = Committed::of(&mut tx, id, &row.request).await?;
    tx.commit().await?;
    let commitments = committed.commitments();
    let request = super::committed_request(&row.request, &commitments);

    let logged: Vec<(&str, &Value)> = bodies.iter().map(|b| (b["action"].as_str().unwrap_or(""), &b["data"])).collect();
    let operation = super::logged_operation(&logged);
    let token = match bodies.iter().find(|b| b["action"] == "operation.created") {
        Some(created) => match created.pointer("/data/jti").and_then(Value::as_str) {
            Some(jti) => store::proposals::token(&db.read, jti).await?,
            None => None,
        },
        None => store::proposals::newest_token(&db.read, id).await?,
    };
    let approval_token = token.map(|t| t.token);
    let mandate = match &approval_token {
        Some(token) => Some(mandate(state, id, token, &request)?),
        None => None,
    };
    let approvals = approvals(store::proposals::approvals_all_rounds(&db.read, id).await?, &assertions, &bodies);
    Ok(Bundle {
        format: FORMAT.to_owned(),
        issuer: state.receipt_issuer().to_owned(),
        tenant_id: row.tenant_id.clone(),
        proposal_id: row.id.clone(),
        status: row.status.as_str().to_owned(),
        exported_at: now.to_rfc3339_opts(SecondsFormat::Secs, true),
        request,
        request_hash: row.request_hash.clone(),
        commitments,
        disclosed: committed.disclosed(export.disclose),
        policy: serde_json::to_value(&row.policy).expect("a decision serializes"),
        approvals,
        approval_token,
        mandate,
        operation,
        log: LogEvidence { checkpoint: checkpoint.note, tree_size: size, leaves },
        keys: KeysEvidence {
            // Every key still held, retired ones too: an old payment's token
            // was signed by a key long replaced (compromised keys are not held).
            receipts: state.receipt_keys().jwks(),
            tokens: state.keys().jwks(),
            log: state.log_signer().verifier().encoded(),
        },
    })
}

/// Each entry `seqs` names as a leaf with its inclusion proof in the tree
/// of `size`, and its body parsed.
async fn leaves(
    state: &impl Store,
    seqs: &BTreeSet<i64>,
    size: u64,
) -> Result<(Vec<LeafEvidence>, Vec<Value>), EvidenceError> {
    let db = state.db();
    let indexes: Vec<u64> = seqs.iter().map(|&seq| seq as u64 - 1).collect();
    let proofs = store::tlog::inclusions(&db.read, &indexes, size).await?.ok_or(EvidenceError::NotLogged)?;
    let mut conn = db.read.acquire().await.map_err(StoreError::from)?;
    let (mut leaves, mut bodies) = (Vec::new(), Vec::new());
    for (&index, proof) in indexes.iter().zip(proofs) {
        let seq = index as i64 + 1;
        let leaf = store::audit::leaves_from(&mut conn, seq, 1)
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| StoreError::corrupt("audit_log", format!("entry {seq} is missing")))?;
        let proof = proof.ok_or(EvidenceError::NotLogged)?;
        bodies.push(serde_json::from_slice(&leaf.bytes).map_err(|e| StoreError::corrupt("audit_log", e))?);
        leaves.push(LeafEvidence {
            index,
            body: STANDARD.encode(&leaf.bytes),
            proof: proof.iter().map(|h| STANDARD.encode(h)).collect(),
        });
    }
    Ok((leaves, bodies))
}

/// Every decision with the receipt of the entry that recorded it and, for
/// a passkey approval, its kept assertion; in the order of those entries.
fn approvals(rows: Vec<ApprovalRow>, assertions: &[AssertionRow], bodies: &[Value]) -> Vec<ApprovalEvidence> {
    let mut used = vec![false; bodies.len()];
    let mut listed: Vec<(Option<usize>, ApprovalEvidence)> = rows
        .into_iter()
        .map(|a| {
            let (action, actor) = super::decision_entry(&a.decision, &a.via, &a.approver_id);
            let found = bodies.iter().enumerate().position(|(i, b)| {
                !used[i] && b["action"] == action && b["actor"] == actor.as_str() && b["data"].get("receipt").is_some()
            });
            if let Some(i) = found {
                used[i] = true;
            }
            let receipt =
                found.and_then(|i| bodies[i].pointer("/data/receipt").and_then(Value::as_str)).map(str::to_owned);
            let passkey = assertions
                .iter()
                .find(|k| k.round == a.round && k.approver_id == a.approver_id && a.amr == "passkey")
                .map(passkey_of);
            let evidence = ApprovalEvidence {
                approver_id: a.approver_id,
                round: a.round,
                decision: a.decision,
                via: a.via,
                amr: a.amr,
                receipt,
                passkey,
            };
            (found, evidence)
        })
        .collect();
    listed.sort_by_key(|(found, _)| found.unwrap_or(usize::MAX));
    listed.into_iter().map(|(_, evidence)| evidence).collect()
}

fn passkey_of(k: &AssertionRow) -> PasskeyEvidence {
    let fingerprint = URL_SAFE_NO_PAD
        .decode(&k.public_key)
        .map(|key| crate::people::passkeys::fingerprint(&key))
        .unwrap_or_else(|_| "unreadable".into());
    PasskeyEvidence {
        kind: k.kind.clone(),
        nonce: k.nonce.clone(),
        listed: k.listed.clone(),
        passkey_id: k.passkey_id.clone(),
        public_key: k.public_key.clone(),
        fingerprint,
        rp_id: k.rp_id.clone(),
        origin: k.origin.clone(),
        credential_id: k.credential_id.clone(),
        authenticator_data: k.authenticator_data.clone(),
        client_data_json: k.client_data_json.clone(),
        signature: k.signature.clone(),
    }
}

/// The mandate, signed by the receipt key.
fn mandate(state: &impl Receipts, id: &str, token: &str, request: &Value) -> Result<String, EvidenceError> {
    let claims = super::verify::jws_payload(token)
        .and_then(|token| super::mandate::claims(state.receipt_issuer(), id, &token, request))
        .ok_or_else(|| EvidenceError::Signing("the approval token or the request is unreadable".into()))?;
    state
        .receipt_keys()
        .sign_jws(super::mandate::MANDATE_TYP, &claims)
        .map_err(|e| EvidenceError::Signing(e.to_string()))
}
