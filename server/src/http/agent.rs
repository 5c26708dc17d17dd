//! The agent API (SPEC §9): thin handlers that parse, call one use case in
//! `crate::proposals`, and map the result.

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration as StdDuration;

use super::error::ApiError;
use super::extract::{AgentAuth, JsonBody, ReadOnlyAgentAuth};
use crate::commit::CommitError;
use crate::domain::FieldError;
use crate::idempotency::{self, IdempotencyKey, KeyError, Keyed, Recorded, Unfinished};
use crate::proposals::{
    self, ActionError, AgentPrincipal, ListQuery, PolledView, ProposalView, ProposeError, Proposed,
};
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
            CommitError::Internal(what) => ApiError::Internal(what.into()),
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
    let mut response = json_response(status, serde_json::to_string(view).expect("views serialize"));
    if let Ok(etag) = HeaderValue::from_str(&view.etag()) {
        response.headers_mut().insert(header::ETAG, etag);
    }
    response
}

/// `POST /api/v1/proposals`; with an `Idempotency-Key`, through the
/// protocol of `crate::idempotency`.
pub async fn create(
    State(state): State<Shared>,
    AgentAuth(agent): AgentAuth,
    headers: HeaderMap,
    JsonBody { value }: JsonBody,
) -> Result<Response, ApiError> {
    let Some(raw) = headers.get("idempotency-key") else {
        return propose_response(&state, &agent, &value).await.map(|(s, b)| json_response(s, b));
    };
    let key = IdempotencyKey::parse(raw.as_bytes()).map_err(|e| ApiError::Validation(vec![e]))?;
    let run = async {
        match propose_response(&state, &agent, &value).await {
            Ok((status, body)) => Ok(Recorded { status: status.as_u16(), body }),
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
        Ok(Keyed::Ran(result)) => result.map(answer),
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

async fn propose_response(
    state: &Shared,
    agent: &AgentPrincipal,
    body: &Value,
) -> Result<(StatusCode, String), ApiError> {
    let (status, view) = match proposals::propose(state, agent, body, Utc::now()).await? {
        Proposed::Created(view) => (StatusCode::CREATED, view),
        Proposed::Existing(view) => (StatusCode::OK, view),
    };
    Ok((status, serde_json::to_string(&view).expect("views serialize")))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitParams {
    wait: Option<u64>,
}

/// A query string that does not fit the endpoint's parameters.
pub(super) fn query_error(e: impl std::fmt::Display) -> ApiError {
    ApiError::Validation(vec![FieldError::new("query", "invalid_value", e.to_string())])
}

/// `GET /api/v1/proposals/{id}` with `ETag`, `If-None-Match` and `?wait=N` long-polling.
/// Served from the read cache when it can be (`proposals::poll`).
pub async fn get(
    State(state): State<Shared>,
    ReadOnlyAgentAuth(agent, key): ReadOnlyAgentAuth,
    Path(id): Path<String>,
    params: Result<Query<WaitParams>, axum::extract::rejection::QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Query(params) = params.map_err(query_error)?;
    let wait = params.wait.unwrap_or(0);
    if wait > MAX_WAIT_SECS {
        return Err(ApiError::Validation(vec![FieldError::new("wait", "invalid_value", "must be at most 60 seconds")]));
    }
    let known = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()).map(str::to_owned);
    drop(headers);

    let unchanged = |polled: &PolledView| known.as_deref() == Some(polled.etag.as_str());
    let polled = proposals::poll(&state, &agent, &id).await?;
    if !unchanged(&polled) {
        return Ok(polled_response(&polled));
    }
    if wait == 0 {
        return Ok(not_modified(&polled.etag));
    }
    // Subscribe, then read again, so a change between the first read and the
    // wait is not missed. Wait holding only what the wait needs (the request's
    // headers and the view are freed; 10,000 held polls add up,
    // docs/BENCHMARKS.md).
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
        if !key.still_valid(&state, &agent).await? {
            return Err(ApiError::Unauthenticated);
        }
        let polled = proposals::poll(&state, &agent, &id).await?;
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    status: Option<String>,
    limit: Option<u32>,
    cursor: Option<String>,
}

#[derive(Serialize)]
pub struct Page<T> {
    pub data: Vec<T>,
    pub next_cursor: Option<String>,
}

/// `GET /api/v1/proposals?status=&limit=&cursor=` — the agent's own, newest first.
pub async fn list(
    State(state): State<Shared>,
    AgentAuth(agent): AgentAuth,
    params: Result<Query<ListParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Page<ProposalView>>, ApiError> {
    let Query(params) = params.map_err(query_error)?;
    let query = ListQuery::for_agent(params.status.as_deref(), params.limit, params.cursor.as_deref())
        .map_err(ApiError::Validation)?;
    let (rows, next_cursor) = query.run(&state, &agent.tenant_id, Some(&agent.agent_id)).await?;
    let data = proposals::views(&state, rows).await?;
    Ok(Json(Page { data, next_cursor }))
}

/// `POST /api/v1/proposals/{id}/cancel`
pub async fn cancel(
    State(state): State<Shared>,
    AgentAuth(agent): AgentAuth,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let view = proposals::cancel(&state, &agent, &id, Utc::now()).await?;
    Ok(proposal_response(StatusCode::OK, &view))
}

/// `POST /api/v1/proposals/{id}/commit` with `{"approval_token": "…"}`.
pub async fn commit(
    State(state): State<Shared>,
    AgentAuth(agent): AgentAuth,
    Path(id): Path<String>,
    JsonBody { value }: JsonBody,
) -> Result<Response, ApiError> {
    let token = commit_token(value)?;
    let view = crate::commit::commit(&state, &agent, &id, &token).await?;
    Ok(proposal_response(StatusCode::OK, &view))
}

/// The body of a commit: exactly `{"approval_token": "<string>"}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommitBody {
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
