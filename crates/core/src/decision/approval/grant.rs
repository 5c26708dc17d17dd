//! Granting an approval: the last required approval was given (by people,
//! or by policy alone), so the proposal moves to `approved` and the approval
//! token bound to it is minted (SPEC §5). One place for both paths.

use chrono::{DateTime, Utc};
use serde_json::json;

use super::keys::Keys;
use super::token::MintRequest;
use crate::config::Config;
use crate::domain::ProposalStatus;
use crate::store::{self, audit::AuditEntry, proposals::ApprovalRow};

/// Why an approval could not be granted.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    #[error("no such proposal")]
    NotFound,
    #[error("the proposal is {0}")]
    InvalidState(ProposalStatus),
    #[error("cannot mint the approval token: {0}")]
    Token(String),
    #[error(transparent)]
    Store(#[from] store::StoreError),
}

/// The last required approval was given: move to `approved` and mint the
/// token bound to the proposal, its request hash and its agent. Runs inside
/// the caller's write transaction.
pub async fn grant(
    state: &(impl Config + Keys + crate::decision::approval::receipts::Receipts),
    tx: &mut crate::store::Conn,
    row: &store::proposals::ProposalRow,
    approvals: &[ApprovalRow],
    now: DateTime<Utc>,
) -> Result<(), GrantError> {
    if !store::proposals::transition(tx, &row.id, &ProposalStatus::AWAITING_DECISION, ProposalStatus::Approved, now)
        .await?
    {
        let latest = store::proposals::get_in(tx, &row.tenant_id, &row.id).await?.ok_or(GrantError::NotFound)?;
        return Err(GrantError::InvalidState(latest.status));
    }
    let approvers: Vec<String> = approvals.iter().map(|a| a.approver_id.clone()).collect();
    let mut amr: Vec<String> = approvals.iter().map(|a| a.amr.clone()).collect();
    amr.dedup();
    let sub = approvers.last().cloned().unwrap_or_default();
    let delegations: Vec<super::token::DelegatedClaim> = approvals
        .iter()
        .filter_map(|a| {
            Some(super::token::DelegatedClaim {
                approver: a.approver_id.clone(),
                on_behalf_of: a.on_behalf_of.clone()?,
                delegation: a.delegation_id.clone()?,
            })
        })
        .collect();
    let (token, claims) = state
        .keys()
        .mint(&MintRequest {
            issuer: &state.settings().public_url,
            sub: &sub,
            approvers: &approvers,
            tenant_id: &row.tenant_id,
            proposal_id: &row.id,
            request_hash: &row.request_hash,
            agent_id: &row.agent_id,
            amr: &amr,
            delegations: &delegations,
            now,
            ttl_secs: state.settings().approval.token_ttl_secs,
        })
        .map_err(|e| GrantError::Token(e.to_string()))?;
    let kid = state.keys().active_kid();
    let at = |secs: i64| DateTime::from_timestamp(secs, 0).unwrap_or(now);
    store::proposals::insert_token(
        tx,
        &store::proposals::TokenRow {
            jti: claims.jti.clone(),
            proposal_id: row.id.clone(),
            round: row.approval_round,
            token,
            kid: kid.clone(),
            issued_at: at(claims.iat),
            expires_at: at(claims.exp),
            used_at: None,
        },
    )
    .await?;
    let mut data = json!({
        "from": row.status, "to": ProposalStatus::Approved, "approvers": approvers,
        "amr": amr, "jti": claims.jti, "kid": kid, "token_expires_at": at(claims.exp),
    });
    if !delegations.is_empty() {
        data["delegations"] = json!(delegations);
    }
    let entry = AuditEntry {
        tenant_id: Some(row.tenant_id.clone()),
        actor: if sub.starts_with("policy:") { sub.clone() } else { format!("user:{sub}") },
        action: "proposal.approved".into(),
        proposal_id: Some(row.id.clone()),
        request_hash: Some(row.request_hash.clone()),
        data,
    };
    crate::decision::approval::receipts::append(state, tx, &entry, now).await?;
    Ok(())
}
