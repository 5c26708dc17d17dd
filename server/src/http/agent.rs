//! The agent API (SPEC §9): thin handlers that parse, call one use case in
//! `crate::intake::proposals`, and map the result.

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration as StdDuration;

use super::error::ApiError;
use super::extract::ApiQuery;
use super::extract::{AgentAuth, JsonBody, ReadOnlyAgentAuth};
use super::openapi::error_responses;
use crate::commit::CommitError;
use crate::domain::{FieldError, ProposalStatus};
use crate::intake::idempotency::{self, IdempotencyKey, KeyError, Keyed, Recorded, Unfinished};
use crate::intake::proposals::{self, ActionError, AgentPrincipal, PolledView, ProposalView, ProposeError, Proposed};
use crate::state::Shared;

/// The longest `?wait=` a status poll may hold.
pub const MAX_WAIT_SECS: u64 = 60;

impl From<ProposeError> for ApiError {
    fn from(e: ProposeError) -> Self {
        match e {
            ProposeError::Validation(fields) => ApiError::Validation(fields),
            ProposeError::UnknownDestination(masked) => ApiError::UnknownDestination(masked),
            ProposeError::Denied(decision) => ApiError::PolicyDenied(decision),
            ProposeError::Store(e) => e.into(),
            ProposeError::Internal(what) => ApiError::Internal(what.into()),
            ProposeError::Approval(message) => ApiError::Internal(message.into()),
        }
    }
}

impl From<CommitError> for ApiError {
    fn from(e: CommitError) -> Self {
        match e {
            CommitError::Token(reason) => ApiError::ApprovalTokenInvalid(reason),
            CommitError::NotFound => ApiError::NotFound,
            CommitError::Denied(decision) => ApiError::PolicyDenied(decision),
            CommitError::InvalidState(s) => ApiError::InvalidState(s),
            CommitError::Store(e) => e.into(),
        }
    }
}

impl From<ActionError> for ApiError {
    fn from(e: ActionError) -> Self {
        match e {
            ActionError::NotFound => ApiError::NotFound,
            ActionError::InvalidState(s) => ApiError::InvalidState(s),
            ActionError::Store(e) => e.into(),
        }
    }
}

fn json_response(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn proposal_response(status: StatusCode, view: &ProposalView) -> Response {
    with_etag(json_response(status, serde_json::to_string(view).expect("views serialize")), &view.etag())
}

/// A proposal id in a path (`prop_…`).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ProposalPath {
    /// The proposal id (`prop_…`). Another tenant's proposal is 404, as if
    /// it did not exist.
    #[param(min_length = 1, example = "prop_01hx2v9k3m")]
    pub id: String,
}

error_responses!(CreateErrors: InvalidJson, Unauthenticated, PolicyDenied, IdempotencyKeyInUse, PayloadTooLarge,
    UnsupportedMediaType, ValidationFailed, UnknownDestination, IdempotencyKeyReused, RateLimited, InternalError);

/// Propose a payment
///
/// Validates the request strictly, builds the canonical request (identity
/// from the credential, payee resolved from the registry), hashes it
/// (`sha256:` + hex SHA-256 of its RFC 8785 form) and evaluates policy. The
/// result is auto-approved, pending approval, or refused with 403
/// `policy_denied` (nothing is stored but the audit entry). With an
/// `Idempotency-Key`, through the protocol of `crate::intake::idempotency`.
#[utoipa::path(
    post,
    path = "/api/v1/proposals",
    operation_id = "createProposal",
    tag = "agent",
    security(("agentKey" = [])),
    params(
        ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255,
            pattern = "^[\\u0020-\\u007E]+$",
            description = "Stripe semantics: the same key with the same body replays the first response (same \
                status and body, `Idempotent-Replayed: true`); with a different body it is 422 \
                `idempotency_key_reused`; while the first request is in flight it is 409 \
                `idempotency_key_in_use`. Kept at least 7 days."),
    ),
    request_body(content = crate::domain::openapi::ProposalRequestBody, content_type = "application/json",
        examples(
            ("transfer" = (summary = "Pay an invoice", value = json!({
                "run_id": "run-42", "kind": "transfer", "amount_minor": 25000, "currency": "USD",
                "source_account": "acct_0123456789abcdef", "destination": "acct_acme0000000001",
                "reference": "Invoice 1842", "purpose_code": "vendor", "invoice_id": "1842"}))),
            ("reversal" = (summary = "Reverse a succeeded transfer", value = json!({
                "run_id": "run-43", "kind": "reversal", "transfer_id": "prop_01hx2v9k3m",
                "reason_code": "duplicate"}))),
        )),
    responses(
        (status = 201, body = ProposalView,
            description = "A new proposal. A replay of this response under the same `Idempotency-Key` repeats it \
                with `Idempotent-Replayed: true`.",
            headers(("Idempotent-Replayed" = String,
                description = "`true` when this response replays the first response under the same key."),
                ("ETag" = String, description = "The proposal's `ETag`, for a long-poll's `If-None-Match` \
                    (not on a replay, which may be stale)."))),
        (status = 200, body = ProposalView,
            description = "An existing proposal: the same agent and `run_id` already proposed an identical \
                canonical request (duplicates collapse), or an idempotent replay of an earlier 200.",
            headers(("Idempotent-Replayed" = String,
                description = "`true` when this response replays the first response under the same key."),
                ("ETag" = String, description = "The proposal's `ETag`, for a long-poll's `If-None-Match` \
                    (not on a replay, which may be stale)."))),
        CreateErrors,
    ),
)]
pub async fn create(
    State(state): State<Shared>,
    AgentAuth(agent): AgentAuth,
    headers: HeaderMap,
    JsonBody { value }: JsonBody,
) -> Result<Response, ApiError> {
    let Some(raw) = headers.get("idempotency-key") else {
        return propose_response(&state, &agent, &value)
            .await
            .map(|(s, b, etag)| with_etag(json_response(s, b), &etag));
    };
    let key = IdempotencyKey::parse(raw.as_bytes()).map_err(|e| ApiError::Validation(vec![e]))?;
    let mut fresh_etag = None;
    let run = async {
        match propose_response(&state, &agent, &value).await {
            Ok((status, body, etag)) => {
                fresh_etag = Some(etag);
                Ok(Recorded { status: status.as_u16(), body })
            }
            // A policy decision is a result of execution: it is kept and replayed.
            Err(e @ ApiError::PolicyDenied(_)) => {
                Err(Unfinished::Keep(Recorded { status: e.status().as_u16(), body: e.body().to_string() }))
            }
            // Bad input never started executing; a server fault may be retried.
            Err(e) => Err(Unfinished::Release(e)),
        }
    };
    let answer = |r: Recorded| json_response(StatusCode::from_u16(r.status).unwrap_or(StatusCode::OK), r.body);
    match idempotency::once(&state, &agent, &key, &value, run).await {
        // A replay repeats the first answer, which may be stale: it has no
        // ETag (GET the proposal for the current one).
        Ok(Keyed::Ran(result)) => result.map(|r| match &fresh_etag {
            Some(etag) => with_etag(answer(r), etag),
            None => answer(r),
        }),
        Ok(Keyed::Replayed(recorded)) => {
            let mut response = answer(recorded);
            response.headers_mut().insert("idempotent-replayed", HeaderValue::from_static("true"));
            Ok(response)
        }
        Err(KeyError::Reused) => Err(ApiError::IdempotencyKeyReused),
        Err(KeyError::InUse) => Err(ApiError::IdempotencyKeyInUse),
        Err(KeyError::Store(e)) => Err(e.into()),
    }
}

/// The answer to a proposal, its body and its `ETag` (what a long-poll
/// on it starts from).
async fn propose_response(
    state: &Shared,
    agent: &AgentPrincipal,
    body: &Value,
) -> Result<(StatusCode, String, String), ApiError> {
    let (status, view) = match proposals::propose(state, agent, body, state.now()).await? {
        Proposed::Created(view) => (StatusCode::CREATED, view),
        Proposed::Existing(view) => (StatusCode::OK, view),
    };
    Ok((status, serde_json::to_string(&view).expect("views serialize"), view.etag()))
}

fn with_etag(mut response: Response, etag: &str) -> Response {
    if let Ok(etag) = HeaderValue::from_str(etag) {
        response.headers_mut().insert(header::ETAG, etag);
    }
    response
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct WaitParams {
    /// Long-poll for up to this many seconds (with `If-None-Match`).
    #[param(minimum = 0, maximum = 60, default = 0)]
    wait: Option<u64>,
}

error_responses!(GetErrors: Unauthenticated, NotFound, ValidationFailed, RateLimited, InternalError);

/// Read (or long-poll) one proposal
///
/// Status, canonical request, request hash, policy decision, approvals,
/// `approval_token` and `approval_expires_at` when `approved` (only to the
/// owning agent), and `operation` once one exists. With `?wait=N` and
/// `If-None-Match`, the request is held until the proposal's `ETag` differs
/// (200) or N seconds pass (304). Served from the read cache when it can be
/// (`proposals::poll`).
#[utoipa::path(
    get,
    path = "/api/v1/proposals/{id}",
    operation_id = "getProposal",
    tag = "agent",
    security(("agentKey" = [])),
    params(
        ProposalPath,
        WaitParams,
        ("If-None-Match" = Option<String>, Header,
            description = "The `ETag` last seen; with `wait`, the request is held until the proposal changes."),
    ),
    responses(
        (status = 200, body = ProposalView, description = "The proposal.",
            headers(("ETag" = String, description = "Changes whenever the proposal (status, approvals, operation) changes."))),
        (status = 304, description = "Unchanged: the `ETag` still equals `If-None-Match` after `wait` seconds.",
            headers(("ETag" = String, description = "Changes whenever the proposal (status, approvals, operation) changes."))),
        GetErrors,
    ),
)]
pub async fn get(
    State(state): State<Shared>,
    ReadOnlyAgentAuth(agent, key): ReadOnlyAgentAuth,
    Path(ProposalPath { id }): Path<ProposalPath>,
    ApiQuery(params): ApiQuery<WaitParams>,
    IfNoneMatch(known): IfNoneMatch,
) -> Result<Response, ApiError> {
    let wait = params.wait.unwrap_or(0);
    if wait > MAX_WAIT_SECS {
        return Err(ApiError::Validation(vec![FieldError::new("wait", "invalid_value", "must be at most 60 seconds")]));
    }

    let unchanged = |polled: &PolledView| known.as_deref() == Some(polled.etag.as_str());
    let polled = Box::pin(proposals::poll(&state, &agent, &id)).await?;
    if !unchanged(&polled) {
        return Ok(polled_response(&polled));
    }
    if wait == 0 {
        return Ok(not_modified(&polled.etag));
    }
    // Subscribe, then read again, so a change between the first read and the
    // wait is not missed. Wait holding only what the wait needs (the request's
    // headers and the view are freed; 10,000 held polls add up,
    // docs/BENCHMARKS.md). The reads on a wake are boxed: inline, the
    // largest of them (about 1 KB) would size the future held all along.
    let etag = polled.etag.clone();
    drop(polled);
    let notify = state.changes.subscribe(&id);
    let changed = notify.notified();
    tokio::pin!(changed);
    changed.as_mut().enable();
    let deadline = tokio::time::Instant::now() + StdDuration::from_secs(wait);
    loop {
        // The credential is checked again on every wake: a key replaced or
        // an agent deactivated while the poll waited gets nothing more.
        if !Box::pin(key.still_valid(&state, &agent)).await? {
            return Err(ApiError::Unauthenticated);
        }
        let polled = Box::pin(proposals::poll(&state, &agent, &id)).await?;
        if polled.etag != etag {
            return Ok(polled_response(&polled));
        }
        drop(polled);
        tokio::select! {
            _ = &mut changed => {
                changed.set(notify.notified());
                changed.as_mut().enable();
            }
            _ = tokio::time::sleep_until(deadline) => break,
            _ = state.shutdown.wait() => break,
        }
    }
    Ok(not_modified(&etag))
}

/// The request's `If-None-Match`, if it is text: only that header is
/// copied, not the whole map (the status poll's path).
pub struct IfNoneMatch(Option<String>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for IfNoneMatch {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(IfNoneMatch(parts.headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()).map(str::to_owned)))
    }
}

fn polled_response(polled: &PolledView) -> Response {
    let mut response = (StatusCode::OK, polled.body.clone()).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Ok(etag) = HeaderValue::from_str(&polled.etag) {
        headers.insert(header::ETAG, etag);
    }
    response
}

fn not_modified(etag: &str) -> Response {
    let mut response = StatusCode::NOT_MODIFIED.into_response();
    if let Ok(etag) = HeaderValue::from_str(etag) {
        response.headers_mut().insert(header::ETAG, etag);
    }
    response
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// Only proposals with this status.
    #[param(value_type = Option<ProposalStatus>)]
    status: Option<String>,
    /// Page size.
    #[param(minimum = 1, maximum = 100, default = 50)]
    limit: Option<u32>,
    /// The opaque `next_cursor` of the previous page.
    cursor: Option<String>,
}

/// A page of proposals, newest first unless asked otherwise.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProposalList)]
pub struct Page {
    pub data: Vec<ProposalView>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

error_responses!(ListErrors: Unauthenticated, ValidationFailed, RateLimited, InternalError);

/// List the agent's own proposals
///
/// Newest first, cursor-paginated: pass `next_cursor` back as `cursor` until
/// it is `null`.
#[utoipa::path(
    get,
    path = "/api/v1/proposals",
    operation_id = "listProposals",
    tag = "agent",
    security(("agentKey" = [])),
    params(ListParams),
    responses((status = 200, body = Page, description = "A page of proposals."), ListErrors),
)]
pub async fn list(
    State(state): State<Shared>,
    AgentAuth(agent): AgentAuth,
    ApiQuery(params): ApiQuery<ListParams>,
) -> Result<Json<Page>, ApiError> {
    let query =
        crate::decision::queue::ListQuery::for_agent(params.status.as_deref(), params.limit, params.cursor.as_deref())
            .map_err(ApiError::Validation)?;
    let (rows, next_cursor) = query.run(&state, &agent.tenant_id, Some(&agent.agent_id)).await?;
    let data = proposals::views(&state, rows).await?;
    Ok(Json(Page { data, next_cursor }))
}

error_responses!(CancelErrors: Unauthenticated, NotFound, InvalidState, RateLimited, InternalError);

/// Withdraw a proposal
///
/// Allowed while the proposal is `pending_approval` or `approved`; an
/// unredeemed approval token can no longer be committed.
#[utoipa::path(
    post,
    path = "/api/v1/proposals/{id}/cancel",
    operation_id = "cancelProposal",
    tag = "agent",
    security(("agentKey" = [])),
    params(ProposalPath),
    responses((status = 200, body = ProposalView, description = "The cancelled proposal."), CancelErrors),
)]
pub async fn cancel(
    State(state): State<Shared>,
    AgentAuth(agent): AgentAuth,
    Path(ProposalPath { id }): Path<ProposalPath>,
) -> Result<Response, ApiError> {
    let view = proposals::cancel(&state, &agent, &id, state.now()).await?;
    Ok(proposal_response(StatusCode::OK, &view))
}

error_responses!(CommitErrors: InvalidJson, ApprovalTokenInvalid, Unauthenticated, PolicyDenied, NotFound,
    InvalidState, PayloadTooLarge, UnsupportedMediaType, ValidationFailed, RateLimited, InternalError);

/// Execute an approved proposal
///
/// Verifies the approval token (ES256 under a published `kid`, `typ`
/// `countersign-approval+jwt`, `iss`, `aud` `countersign:commit`,
/// `nbf`/`exp` with 30 s leeway, `pid`/`tid`/`azp`, `rh` against the stored
/// and the recomputed request hash, `jti` the proposal's current token),
/// rechecks approvers, policy and the daily budget, then in one transaction
/// marks the token used, records the durable operation, reserves the budget
/// and moves the proposal to `executing`; only then calls the rail with an
/// idempotency key derived from the proposal id and request hash. The answer
/// carries the outcome: `succeeded`, `executing` (accepted, settling),
/// `failed` with a typed `operation.error.code`, or `unknown` (the rail may
/// have acted; reconciliation settles it, never a blind retry). A retried
/// commit for the same proposal returns the existing operation and never
/// calls the rail again.
#[utoipa::path(
    post,
    path = "/api/v1/proposals/{id}/commit",
    operation_id = "commitProposal",
    tag = "agent",
    security(("agentKey" = [])),
    params(ProposalPath),
    request_body(content = CommitBody, content_type = "application/json"),
    responses(
        (status = 200, body = ProposalView,
            description = "The proposal with its `operation`. A retried commit never calls the rail again: it \
                answers with the operation's current state."),
        CommitErrors,
    ),
)]
pub async fn commit(
    State(state): State<Shared>,
    AgentAuth(agent): AgentAuth,
    Path(ProposalPath { id }): Path<ProposalPath>,
    JsonBody { value }: JsonBody,
) -> Result<Response, ApiError> {
    let token = commit_token(value)?;
    let view = crate::commit::commit(&state, &agent, &id, &token).await?;
    Ok(proposal_response(StatusCode::OK, &view))
}

/// The body of a commit: exactly `{"approval_token": "<string>"}`.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = CommitRequest)]
#[serde(deny_unknown_fields)]
pub struct CommitBody {
    /// The `approval_token` from the proposal. A malformed, expired or
    /// foreign token is 401 `approval_token_invalid`, not a validation error.
    #[schema(min_length = 1)]
    approval_token: String,
}

fn commit_token(body: Value) -> Result<String, ApiError> {
    let CommitBody { approval_token } = super::extract::typed(body)?;
    if approval_token.is_empty() {
        return Err(ApiError::Validation(vec![FieldError::new(
            "approval_token",
            "required",
            "is required, as a non-empty string",
        )]));
    }
    Ok(approval_token)
}
