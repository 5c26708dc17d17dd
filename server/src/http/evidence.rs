//! A proposal's proof bundle (docs/EVIDENCE.md "The proof bundle"): to the
//! agent that proposed it, and on the console to admins and auditors.

use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;

use super::agent::ProposalPath;
use super::error::ApiError;
use super::extract::ApiQuery;
use super::extract::ReadOnlyAgentAuth;
use super::openapi::error_responses;
use super::session::CurrentUser;
use crate::domain::{FieldError, Role};
use crate::evidence::bundle::{self, EvidenceError, Export};
use crate::evidence::{Bundle, Disclose};
use crate::state::Shared;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EvidenceParams {
    /// Accounts to disclose in full with their salts: `destination`,
    /// `source_account`, or both comma-separated (default: none; the bundle
    /// verifies either way).
    #[param(example = "destination")]
    disclose: Option<String>,
    /// Prove against the signed checkpoint of this size (default: the
    /// newest), e.g. the one a monitor keeps.
    tree_size: Option<u64>,
}

error_responses!(EvidenceErrors: Unauthenticated, Forbidden, NotFound, ValidationFailed, RateLimited, InternalError);

/// A proposal's proof bundle (the agent's own)
///
/// Everything needed to check the payment offline with no Countersign
/// code: the request and its hash, the policy decision, each decision's
/// signed receipt and passkey assertion, the approval token and the
/// mandate, the operation's receipts, every audit entry as a transparency
/// log leaf with its inclusion proof to one signed checkpoint, and the
/// public keys. Accounts appear as salted commitments unless disclosed.
#[utoipa::path(
    get,
    path = "/api/v1/proposals/{id}/evidence",
    operation_id = "getProposalEvidence",
    tag = "agent",
    security(("agentKey" = [])),
    params(ProposalPath, EvidenceParams),
    responses((status = 200, body = Bundle, description = "The proof bundle."), EvidenceErrors),
)]
pub async fn agent(
    State(state): State<Shared>,
    ReadOnlyAgentAuth(agent, _): ReadOnlyAgentAuth,
    Path(ProposalPath { id }): Path<ProposalPath>,
    ApiQuery(params): ApiQuery<EvidenceParams>,
) -> Result<Json<Bundle>, ApiError> {
    let export = export_of(params)?;
    bundle(&state, &agent.tenant_id, &id, Some(&agent.agent_id), export).await
}

/// A proposal's proof bundle (admins and auditors)
///
/// The same document as the agent's, for any proposal of the signed-in
/// user's tenant: what the console's "Download evidence" fetches.
#[utoipa::path(
    get,
    path = "/api/v1/console/proposals/{id}/evidence",
    operation_id = "exportProposalEvidence",
    tag = "console",
    security(("consoleSession" = [])),
    params(ProposalPath, EvidenceParams),
    responses((status = 200, body = Bundle, description = "The proof bundle, as a download."), EvidenceErrors),
)]
pub async fn console(
    State(state): State<Shared>,
    user: CurrentUser,
    Path(ProposalPath { id }): Path<ProposalPath>,
    ApiQuery(params): ApiQuery<EvidenceParams>,
) -> Result<([(axum::http::HeaderName, String); 1], Json<Bundle>), ApiError> {
    if !Role::exports_evidence(&user.user.roles) {
        return Err(ApiError::ForbiddenBecause("only admins and auditors export evidence"));
    }
    let export = export_of(params)?;
    let bundle = bundle(&state, &user.user.tenant_id, &id, None, export).await?;
    let disposition = format!("attachment; filename=\"evidence-{}.json\"", bundle.0.proposal_id);
    Ok(([(axum::http::header::CONTENT_DISPOSITION, disposition)], bundle))
}

fn export_of(params: EvidenceParams) -> Result<Export, ApiError> {
    let disclose = Disclose::parse(params.disclose.as_deref().unwrap_or(""))
        .map_err(|why| ApiError::Validation(vec![FieldError::new("disclose", "invalid_value", why)]))?;
    Ok(Export { disclose, tree_size: params.tree_size })
}

async fn bundle(
    state: &Shared,
    tenant: &str,
    id: &str,
    agent: Option<&str>,
    export: Export,
) -> Result<Json<Bundle>, ApiError> {
    match bundle::bundle(&**state, tenant, id, agent, export, state.now()).await {
        Ok(bundle) => Ok(Json(bundle)),
        Err(EvidenceError::NotFound) => Err(ApiError::NotFound),
        Err(EvidenceError::TreeSize(why)) => {
            Err(ApiError::Validation(vec![FieldError::new("tree_size", "invalid_value", why)]))
        }
        Err(EvidenceError::Store(e)) => Err(e.into()),
        Err(other) => Err(ApiError::Internal(Box::new(other))),
    }
}
