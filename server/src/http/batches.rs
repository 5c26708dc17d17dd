//! Batches over HTTP (`crate::payables::batches`, docs/PAYABLES.md
//! "Batches"): the agent proposes, reads, cancels and commits a batch under
//! `/api/v1/batches`; people list and read batches, hold a line back and
//! approve or reject under `/api/v1/console/batches` (session and CSRF like
//! every console mutation). Thin handlers: parse, call one use case, map.

use axum::extract::{Form, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Json;
use serde::{Deserialize, Serialize};

use super::error::ApiError;
use super::extract::{typed, AgentAuth, ApiQuery, JsonBody};
use super::openapi::error_responses;
use super::session::CurrentUser;
use crate::decision::approval::approve::Verdict;
use crate::domain::FieldError;
use crate::payables::batches::{self, BatchError, BatchView, Proposed};
use crate::state::Shared;

impl From<BatchError> for ApiError {
    fn from(e: BatchError) -> Self {
        match e {
            BatchError::Validation(fields) => ApiError::Validation(fields),
            BatchError::NotFound => ApiError::NotFound,
            BatchError::InvalidState(status) => ApiError::BatchState(status),
            BatchError::Changed { status, hash } => ApiError::BatchChanged(status, hash),
            BatchError::Denied(decision) => ApiError::PolicyDenied(decision),
            BatchError::Token(reason) => ApiError::ApprovalTokenInvalid(reason),
            BatchError::NotAnApprover => ApiError::ForbiddenBecause("only approvers decide on batches"),
            BatchError::BadReason { field, why } => {
                ApiError::Validation(vec![FieldError::new(field, "invalid_value", why)])
            }
            BatchError::Minting(what) => ApiError::Internal(what.into()),
            BatchError::Store(e) => e.into(),
        }
    }
}

/// A batch id in a path (`bat_…`).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct BatchPath {
    /// The batch id (`bat_…`). Another tenant's batch (or, for an agent,
    /// another agent's) is 404, as if it did not exist.
    #[param(min_length = 1, example = "bat_01hx2v9k3m")]
    pub id: String,
}

/// A line of a batch in a path.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct LinePath {
    /// The batch id (`bat_…`).
    #[param(min_length = 1)]
    pub id: String,
    /// The line's number, 1-based, as submitted (no such line: 404).
    #[param(value_type = i64, minimum = 1)]
    pub line: String,
}

/// `POST /api/v1/batches`'s body (documentation; the handler reads it as
/// JSON and names every bad field).
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = BatchRequest)]
#[allow(dead_code)] // the schema of the body `batches::propose` parses
pub struct BatchRequest {
    /// The agent run the batch belongs to (at most 120 characters of
    /// `[A-Za-z0-9_.:-]`); each line's proposal is `run_id:line`.
    #[schema(examples("payroll-2026-03"))]
    run_id: String,
    /// The agent's label, shown to people as untrusted text.
    label: Option<String>,
    /// 1 to 500 payments, each a proposal body without `run_id` or `kind`
    /// (transfers only).
    #[schema(value_type = Vec<Object>, min_items = 1, max_items = 500)]
    lines: Vec<serde_json::Value>,
}

error_responses!(ProposeErrors: InvalidJson, Unauthenticated, PolicyDenied, PayloadTooLarge, UnsupportedMediaType,
    ValidationFailed, RateLimited, InternalError);

/// Propose a batch of payments
///
/// Each line is checked as a proposal is (schema, payee registry, policy,
/// the invoice registry, a replaced bank account), plus the batch's own
/// checks (two lines for one invoice, an invoice another live or paid
/// proposal stands for). A line that fails is *held back* with its reasons
/// (`status: held`); the others are included. The batch always waits for
/// people (never approved by policy alone): as many approvals as its most
/// demanding line needs and as its total in each currency would need as one
/// payment. 201 new; 200 when the same batch (same body) was already sent
/// in this run. When no line passes: 422 `validation_failed` when every
/// line is malformed (`details` names `lines[i]`, nothing stored), else 403
/// `policy_denied` (nothing stored but the audit entry).
#[utoipa::path(
    post,
    path = "/api/v1/batches",
    operation_id = "proposeBatch",
    tag = "agent",
    security(("agentKey" = [])),
    request_body(content = BatchRequest, content_type = "application/json"),
    responses(
        (status = 201, body = BatchView, description = "The new batch."),
        (status = 200, body = BatchView, description = "The same batch, sent before in this run."),
        ProposeErrors,
    ),
)]
pub async fn propose(
    State(state): State<Shared>,
    AgentAuth(agent): AgentAuth,
    JsonBody { value }: JsonBody,
) -> Result<(StatusCode, Json<BatchView>), ApiError> {
    Ok(match batches::propose(&state, &agent, &value, state.now()).await? {
        Proposed::Created(view) => (StatusCode::CREATED, Json(view)),
        Proposed::Existing(view) => (StatusCode::OK, Json(view)),
    })
}

error_responses!(GetErrors: Unauthenticated, NotFound, RateLimited, InternalError);

/// Read one batch
///
/// Its status, batch hash, decision, totals by currency and payee, every
/// line (included, held back with why, or committed with its payment: the
/// line's proposal, operation status and rail reference), the decisions on
/// it, and while `approved` its one `approval_token`.
#[utoipa::path(
    get,
    path = "/api/v1/batches/{id}",
    operation_id = "getBatch",
    tag = "agent",
    security(("agentKey" = [])),
    params(BatchPath),
    responses((status = 200, body = BatchView, description = "The batch."), GetErrors),
)]
pub async fn get(
    State(state): State<Shared>,
    AgentAuth(agent): AgentAuth,
    Path(BatchPath { id }): Path<BatchPath>,
) -> Result<Json<BatchView>, ApiError> {
    Ok(Json(batches::view(&state, &agent.tenant_id, &id, Some(&agent.agent_id)).await?))
}

error_responses!(CancelErrors: Unauthenticated, NotFound, InvalidState, RateLimited, InternalError);

/// Withdraw a batch
///
/// While it waits for approval or is approved and not committed.
#[utoipa::path(
    post,
    path = "/api/v1/batches/{id}/cancel",
    operation_id = "cancelBatch",
    tag = "agent",
    security(("agentKey" = [])),
    params(BatchPath),
    responses((status = 200, body = BatchView, description = "The cancelled batch."), CancelErrors),
)]
pub async fn cancel(
    State(state): State<Shared>,
    AgentAuth(agent): AgentAuth,
    Path(BatchPath { id }): Path<BatchPath>,
) -> Result<Json<BatchView>, ApiError> {
    Ok(Json(batches::cancel(&state, &agent, &id, state.now()).await?))
}

/// The body of a batch's commit: exactly `{"approval_token": "<string>"}`.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = BatchCommitRequest)]
#[serde(deny_unknown_fields)]
pub struct CommitBody {
    /// The batch's `approval_token`.
    #[schema(min_length = 1)]
    approval_token: String,
}

error_responses!(CommitErrors: InvalidJson, ApprovalTokenInvalid, Unauthenticated, PolicyDenied, NotFound,
    InvalidState, PayloadTooLarge, UnsupportedMediaType, ValidationFailed, RateLimited, InternalError);

/// Pay an approved batch
///
/// The token is checked as a proposal's is, with `pid` the batch id and
/// `rh` the batch hash (stored, and recomputed from the stored lines), and
/// `jti` the batch's current token; every approver is rechecked against the
/// batch's total in each currency. Then each included line becomes a
/// proposal of its own with its own operation, rail idempotency key, budget
/// reservation and invoice reservation, recorded before its rail call and
/// reconciled like any payment; a line whose checks fail now is held back
/// (`held_by: commit`), the others go on. A retried commit never sends a
/// recorded line again: it answers with the batch as it stands.
#[utoipa::path(
    post,
    path = "/api/v1/batches/{id}/commit",
    operation_id = "commitBatch",
    tag = "agent",
    security(("agentKey" = [])),
    params(BatchPath),
    request_body(content = CommitBody, content_type = "application/json"),
    responses((status = 200, body = BatchView, description = "The batch with each line's payment."), CommitErrors),
)]
pub async fn commit(
    State(state): State<Shared>,
    AgentAuth(agent): AgentAuth,
    Path(BatchPath { id }): Path<BatchPath>,
    JsonBody { value }: JsonBody,
) -> Result<Json<BatchView>, ApiError> {
    let CommitBody { approval_token } = typed(value)?;
    if approval_token.is_empty() {
        return Err(ApiError::Validation(vec![FieldError::new(
            "approval_token",
            "required",
            "is required, as a non-empty string",
        )]));
    }
    Ok(Json(batches::commit(&state, &agent, &id, &approval_token).await?))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// `pending_approval` (default), `approved`, `approval_expired`,
    /// `rejected`, `cancelled`, `expired` or `committed`.
    status: Option<String>,
}

/// A page of batches for the console.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = BatchPage)]
pub struct BatchPage {
    /// Oldest first, at most 50.
    pub data: Vec<BatchView>,
}

error_responses!(ListErrors: Unauthenticated, ValidationFailed, InternalError);

/// List the tenant's batches
#[utoipa::path(
    get,
    path = "/api/v1/console/batches",
    operation_id = "listBatches",
    tag = "console",
    security(("consoleSession" = [])),
    params(ListParams),
    responses((status = 200, body = BatchPage, description = "The batches in that status."), ListErrors),
)]
pub async fn list(
    State(state): State<Shared>,
    user: CurrentUser,
    ApiQuery(p): ApiQuery<ListParams>,
) -> Result<Json<BatchPage>, ApiError> {
    let status = p.status.as_deref().unwrap_or("pending_approval");
    if batches::status_word(status) != status || ["included", "held", "unknown"].contains(&status) {
        return Err(ApiError::Validation(vec![FieldError::new("status", "invalid_value", "is not a batch status")]));
    }
    Ok(Json(BatchPage { data: batches::list(&state, &user.user.tenant_id, status).await? }))
}

error_responses!(ConsoleGetErrors: Unauthenticated, NotFound, InternalError);

/// Read one batch (console)
#[utoipa::path(
    get,
    path = "/api/v1/console/batches/{id}",
    operation_id = "getBatchForReview",
    tag = "console",
    security(("consoleSession" = [])),
    params(BatchPath),
    responses((status = 200, body = BatchView, description = "The batch (never with its token)."), ConsoleGetErrors),
)]
pub async fn console_get(
    State(state): State<Shared>,
    user: CurrentUser,
    Path(BatchPath { id }): Path<BatchPath>,
) -> Result<Json<BatchView>, ApiError> {
    Ok(Json(batches::view(&state, &user.user.tenant_id, &id, None).await?))
}

/// `{"reason": "…"}`: why the line is held back.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = HoldLineRequest)]
#[serde(deny_unknown_fields)]
pub struct HoldBody {
    /// Required; at most 500 characters, no control characters.
    reason: String,
}

error_responses!(HoldErrors: InvalidJson, Unauthenticated, Forbidden, NotFound, InvalidState, PayloadTooLarge,
    UnsupportedMediaType, ValidationFailed, RateLimited, InternalError);

/// Hold a line of a batch back
///
/// An approver takes one included line out of a batch waiting for approval,
/// with a reason. The batch changes: a new `batch_hash`, its decision
/// recomputed, and a new round of approvals (approvals given on the old
/// hash no longer count). Holding back the last included line rejects the
/// batch.
#[utoipa::path(
    post,
    path = "/api/v1/console/batches/{id}/lines/{line}/hold",
    operation_id = "holdBatchLine",
    tag = "console",
    security(("consoleSession" = [])),
    params(LinePath, super::console::CsrfHeader),
    request_body(content = HoldBody, content_type = "application/json"),
    responses((status = 200, body = BatchView, description = "The batch as it is now."), HoldErrors),
)]
pub async fn hold(
    State(state): State<Shared>,
    user: CurrentUser,
    Path(LinePath { id, line }): Path<LinePath>,
    JsonBody { value }: JsonBody,
) -> Result<Json<BatchView>, ApiError> {
    let HoldBody { reason } = typed(value)?;
    // Read here rather than by the router, so a number that is no line's
    // gets the API's envelope.
    let line: i64 = line.parse().map_err(|_| ApiError::NotFound)?;
    let approver = user.approver("api");
    Ok(Json(batches::hold(&state, &approver, &id, line, &reason, state.now()).await?))
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, utoipa::ToSchema)]
#[schema(as = BatchDecisionWord)]
#[serde(rename_all = "snake_case")]
enum DecisionWord {
    Approve,
    Reject,
}

/// `{"decision": "approve", "batch_hash": "sha256:…"}` or
/// `{"decision": "reject", "reason": "…"}`.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = BatchDecisionRequest)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    decision: DecisionWord,
    /// To approve: the batch hash you reviewed. An approval naming another
    /// (the batch changed since) is 409 `invalid_state`.
    batch_hash: Option<String>,
    /// Required to reject.
    reason: Option<String>,
}

error_responses!(DecideErrors: InvalidJson, Unauthenticated, Forbidden, PolicyDenied, NotFound, InvalidState,
    PayloadTooLarge, UnsupportedMediaType, ValidationFailed, RateLimited, InternalError);

/// Approve or reject a batch
///
/// Approving names the `batch_hash` you reviewed: if a line was held back
/// since, the hash differs and the approval is refused (409
/// `invalid_state`; review it again). Who may approve is the single
/// proposal's rule asked of the batch as a whole: the approver role, never
/// the person the agent acts for or its key holder, a limit in each
/// currency covering the batch's total, one approval per person and round.
/// When the last approval is given, the batch is `approved` and one token is
/// minted for it.
#[utoipa::path(
    post,
    path = "/api/v1/console/batches/{id}/approvals",
    operation_id = "decideBatch",
    tag = "console",
    security(("consoleSession" = [])),
    params(BatchPath, super::console::CsrfHeader),
    request_body(content = DecisionBody, content_type = "application/json"),
    responses((status = 200, body = BatchView, description = "The batch after the decision."), DecideErrors),
)]
pub async fn decide(
    State(state): State<Shared>,
    user: CurrentUser,
    Path(BatchPath { id }): Path<BatchPath>,
    JsonBody { value }: JsonBody,
) -> Result<Json<BatchView>, ApiError> {
    let DecisionBody { decision, batch_hash, reason } = typed(value)?;
    let verdict = match decision {
        DecisionWord::Approve => Verdict::Approve,
        DecisionWord::Reject => Verdict::Reject { reason: reason.unwrap_or_default() },
    };
    if verdict == Verdict::Approve && batch_hash.as_deref().is_none_or(str::is_empty) {
        return Err(ApiError::Validation(vec![FieldError::new(
            "batch_hash",
            "required",
            "is required to approve: the batch hash you reviewed",
        )]));
    }
    let approver = user.approver("api");
    Ok(Json(batches::decide(&state, &approver, &id, verdict, batch_hash.as_deref(), state.now()).await?))
}

/// The console page's forms: `POST /batches/{id}/hold` (`line`, `reason`)
/// and `POST /batches/{id}/decide` (`decision`, `batch_hash` or `reason`),
/// each back to the batch's page with the outcome (CSRF checked by the
/// forms' guard, as for every console form).
#[derive(Debug, Deserialize)]
pub struct HoldForm {
    line: i64,
    reason: String,
}

#[derive(Debug, Deserialize)]
pub struct DecideForm {
    decision: String,
    batch_hash: Option<String>,
    reason: Option<String>,
}

/// Where a form's outcome sends the reviewer: the batch's page, with a
/// fixed code (never reflected text).
fn back(id: &str, outcome: Result<&'static str, BatchError>) -> Response {
    let code = match outcome {
        Ok(done) => return Redirect::to(&format!("/batches/{id}?result={done}")).into_response(),
        Err(BatchError::Changed { .. }) => "changed",
        Err(BatchError::BadReason { .. } | BatchError::Validation(_)) => "reason",
        Err(BatchError::InvalidState(_)) => "invalid_state",
        Err(BatchError::NotAnApprover) => "forbidden",
        Err(BatchError::Denied(_)) => "denied",
        Err(BatchError::NotFound) => "not_found",
        Err(e) => return ApiError::from(e).into_response(),
    };
    Redirect::to(&format!("/batches/{id}?error={code}")).into_response()
}

pub async fn hold_form(
    State(state): State<Shared>,
    user: Option<CurrentUser>,
    Path(id): Path<String>,
    Form(form): Form<HoldForm>,
) -> Response {
    let Some(user) = user else { return Redirect::to("/login").into_response() };
    let approver = user.approver("console");
    let done = batches::hold(&state, &approver, &id, form.line, &form.reason, state.now()).await;
    back(&id, done.map(|_| "held"))
}

pub async fn decide_form(
    State(state): State<Shared>,
    user: Option<CurrentUser>,
    Path(id): Path<String>,
    Form(form): Form<DecideForm>,
) -> Response {
    let Some(user) = user else { return Redirect::to("/login").into_response() };
    let approver = user.approver("console");
    let (verdict, done) = match form.decision.as_str() {
        "approve" => (Verdict::Approve, "approved"),
        "reject" => (Verdict::Reject { reason: form.reason.unwrap_or_default() }, "rejected"),
        _ => return back(&id, Err(BatchError::BadReason { field: "decision", why: "approve or reject" })),
    };
    let decided = batches::decide(&state, &approver, &id, verdict, form.batch_hash.as_deref(), state.now()).await;
    back(&id, decided.map(|_| done))
}
