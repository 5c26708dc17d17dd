//! SCIM 2.0 (RFC 7644) under `/scim/v2`: the tenant's identity provider
//! creates, changes, deactivates and deletes its Users and Groups
//! (`people::scim` does each; docs/PEOPLE.md). Outside the console's
//! session and CSRF layers: the credential is the tenant's SCIM token
//! (`Authorization: Bearer cs_scim_…`), which scopes every request to that
//! tenant. Not in the OpenAPI document: SCIM's own discovery endpoints
//! describe it (`/ServiceProviderConfig`, `/Schemas`, `/ResourceTypes`).
//!
//! [`ScimError`]s become SCIM's error envelope here, and only here
//! (`{"schemas": [Error], "status": "400", "scimType": "invalidFilter",
//! "detail": …}`); a fault of the server is a 500 whose detail says nothing
//! of its cause (logged).

use axum::body::Bytes;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::{header, request::Parts, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use std::collections::HashMap;

use crate::people::scim::{self, resource, Caller, ListQuery, ScimError};
use crate::state::Shared;

/// Where SCIM lives.
pub const BASE_PATH: &str = "/scim/v2";
/// The largest body a SCIM request may have (a Group's whole member list).
pub const MAX_BODY: usize = 1024 * 1024;
const CONTENT_TYPE: &str = "application/scim+json";

/// A SCIM error response: the envelope, with `WWW-Authenticate` on a 401.
pub struct Refusal {
    status: StatusCode,
    scim_type: Option<&'static str>,
    detail: String,
}

impl Refusal {
    fn new(status: StatusCode, scim_type: Option<&'static str>, detail: impl Into<String>) -> Refusal {
        Refusal { status, scim_type, detail: detail.into() }
    }
}

impl From<ScimError> for Refusal {
    fn from(e: ScimError) -> Self {
        match e {
            ScimError::BadRequest { scim_type, detail } => Refusal::new(StatusCode::BAD_REQUEST, scim_type, detail),
            ScimError::NotFound(detail) => Refusal::new(StatusCode::NOT_FOUND, None, detail),
            ScimError::Uniqueness(detail) => Refusal::new(StatusCode::CONFLICT, Some("uniqueness"), detail),
            ScimError::PreconditionFailed => Refusal::new(StatusCode::PRECONDITION_FAILED, None, e.to_string()),
            ScimError::Store(cause) => {
                tracing::error!(error = %cause, "SCIM request failed");
                Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, None, "internal error")
            }
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut body = json!({
            "schemas": [resource::ERROR_SCHEMA],
            "status": self.status.as_u16().to_string(),
            "detail": self.detail,
        });
        if let Some(t) = self.scim_type {
            body["scimType"] = json!(t);
        }
        let mut response = (self.status, scim_json(&body)).into_response();
        set_type(&mut response);
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"scim\""));
        }
        response
    }
}

fn scim_json(value: &Value) -> String {
    serde_json::to_string(value).expect("JSON serializes")
}

fn set_type(response: &mut Response) {
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
}

/// A resource, with its ETag (and `Location` when created).
fn resource_response(status: StatusCode, (body, etag): (Value, String)) -> Response {
    let location = body["meta"]["location"].as_str().map(str::to_owned);
    let mut response = (status, scim_json(&body)).into_response();
    set_type(&mut response);
    if let Ok(v) = HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, v);
    }
    if status == StatusCode::CREATED {
        if let Some(v) = location.and_then(|l| HeaderValue::from_str(&l).ok()) {
            response.headers_mut().insert(header::LOCATION, v);
        }
    }
    response
}

fn document(value: Value) -> Response {
    let mut response = (StatusCode::OK, scim_json(&value)).into_response();
    set_type(&mut response);
    response
}

/// The caller: the tenant's SCIM token, else 401.
pub struct ScimAuth(pub Caller);

impl FromRequestParts<Shared> for ScimAuth {
    type Rejection = Refusal;

    async fn from_request_parts(parts: &mut Parts, state: &Shared) -> Result<Self, Refusal> {
        let unauthenticated = || Refusal::new(StatusCode::UNAUTHORIZED, None, "a valid SCIM token is required");
        let token = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(str::trim)
            .filter(|t| !t.is_empty() && t.len() <= 256)
            .ok_or_else(unauthenticated)?;
        let caller = scim::authenticate(state, token).await.map_err(|e| Refusal::from(ScimError::Store(e)))?;
        let caller = caller.ok_or_else(unauthenticated)?;
        super::observe::record_principal(&parts.extensions, &caller.tenant_id, || caller.actor());
        Ok(ScimAuth(caller))
    }
}

/// A SCIM request's JSON body: `application/scim+json` or
/// `application/json`, well-formed, no member named twice.
fn body(headers: &HeaderMap, bytes: &Bytes) -> Result<Value, Refusal> {
    let kind = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let essence = kind.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    if essence != CONTENT_TYPE && essence != "application/json" {
        return Err(Refusal::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, None, "the body must be application/scim+json"));
    }
    super::extract::parse_strict(bytes)
        .map_err(|why| Refusal::new(StatusCode::BAD_REQUEST, Some("invalidSyntax"), format!("not valid JSON: {why}")))
}

fn if_match(headers: &HeaderMap) -> Option<String> {
    headers.get(header::IF_MATCH).and_then(|v| v.to_str().ok()).map(str::to_owned)
}

/// The base URL resources' locations are under: the scheme of
/// `public_url` and the host the client asked for (a proxy keeps it), so
/// that every `meta.location` names this server as the client reaches it.
#[derive(Clone)]
struct Base(String);

impl FromRequestParts<Shared> for Base {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &Shared) -> Result<Self, Self::Rejection> {
        let public = state.settings.public_url.trim_end_matches('/');
        let scheme = if public.starts_with("https://") { "https" } else { "http" };
        let host = parts
            .headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c)));
        Ok(Base(match host {
            Some(host) => format!("{scheme}://{host}{BASE_PATH}"),
            None => format!("{public}{BASE_PATH}"),
        }))
    }
}

/// A list's query string: `filter`, `startIndex`, `count`, `attributes`,
/// `excludedAttributes` (others, such as `sortBy`, are ignored: sorting is
/// not offered, as `/ServiceProviderConfig` says).
fn list_query(params: &HashMap<String, String>) -> Result<ListQuery, Refusal> {
    let number = |name: &str| -> Result<Option<i64>, Refusal> {
        match params.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)) {
            None => Ok(None),
            Some((_, v)) => v.trim().parse::<i64>().map(Some).map_err(|_| {
                Refusal::new(StatusCode::BAD_REQUEST, Some("invalidValue"), format!("{name} must be an integer"))
            }),
        }
    };
    let list = |name: &str| -> Vec<String> {
        params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.split(',').map(|a| a.trim().to_owned()).filter(|a| !a.is_empty()).collect())
            .unwrap_or_default()
    };
    Ok(ListQuery {
        filter: params.iter().find(|(k, _)| k.eq_ignore_ascii_case("filter")).map(|(_, v)| v.clone()),
        start_index: number("startIndex")?,
        count: number("count")?,
        attributes: list("attributes"),
        excluded: list("excludedAttributes"),
    })
}

fn projected(params: &HashMap<String, String>, (body, etag): (Value, String)) -> Result<(Value, String), Refusal> {
    let q = list_query(params)?;
    Ok((resource::project(body, &q.attributes, &q.excluded), etag))
}

/// A single resource for GET: 304 when `If-None-Match` names its version.
fn fresh_or(headers: &HeaderMap, found: (Value, String)) -> Response {
    let matches = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() == "*" || v.split(',').any(|t| t.trim() == found.1));
    if matches {
        let mut response = StatusCode::NOT_MODIFIED.into_response();
        if let Ok(v) = HeaderValue::from_str(&found.1) {
            response.headers_mut().insert(header::ETAG, v);
        }
        return response;
    }
    resource_response(StatusCode::OK, found)
}

async fn service_provider_config(Base(base): Base, _: ScimAuth) -> Response {
    document(resource::service_provider_config(&base))
}

async fn schemas(Base(base): Base, _: ScimAuth) -> Response {
    let all = vec![resource::user_schema(&base), resource::group_schema(&base)];
    let total = all.len();
    document(resource::list(all, total, 1))
}

async fn schema(Base(base): Base, _: ScimAuth, Path(id): Path<String>) -> Response {
    match id.as_str() {
        resource::USER_SCHEMA => document(resource::user_schema(&base)),
        resource::GROUP_SCHEMA => document(resource::group_schema(&base)),
        _ => Refusal::new(StatusCode::NOT_FOUND, None, "no such schema").into_response(),
    }
}

async fn resource_types(Base(base): Base, _: ScimAuth) -> Response {
    let all = resource::resource_types(&base);
    let total = all.len();
    document(resource::list(all, total, 1))
}

async fn resource_type(Base(base): Base, _: ScimAuth, Path(id): Path<String>) -> Response {
    match resource::resource_types(&base).into_iter().find(|t| t["id"] == id.as_str()) {
        Some(t) => document(t),
        None => Refusal::new(StatusCode::NOT_FOUND, None, "no such resource type").into_response(),
    }
}

/// Which resource a handler serves: Users and Groups take the same
/// requests and answer the same way; only the use cases they call differ.
const USERS: bool = false;
const GROUPS: bool = true;
const PUT: bool = false;
const PATCH: bool = true;

async fn list<const G: bool>(
    State(state): State<Shared>,
    Base(base): Base,
    ScimAuth(caller): ScimAuth,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, Refusal> {
    let q = list_query(&params)?;
    let page = match G {
        GROUPS => scim::list_groups(&state, &caller, &q, &base).await?,
        USERS => scim::list_users(&state, &caller, &q, &base).await?,
    };
    Ok(document(page))
}

async fn create<const G: bool>(
    State(state): State<Shared>,
    Base(base): Base,
    ScimAuth(caller): ScimAuth,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Refusal> {
    let body = body(&headers, &bytes)?;
    let made = match G {
        GROUPS => scim::create_group(&state, &caller, &body, &base).await?,
        USERS => scim::create_user(&state, &caller, &body, &base).await?,
    };
    Ok(resource_response(StatusCode::CREATED, made))
}

async fn read<const G: bool>(
    State(state): State<Shared>,
    Base(base): Base,
    ScimAuth(caller): ScimAuth,
    Path(id): Path<String>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response, Refusal> {
    let found = match G {
        GROUPS => scim::get_group(&state, &caller, &id, &base).await?,
        USERS => scim::get_user(&state, &caller, &id, &base).await?,
    };
    Ok(fresh_or(&headers, projected(&params, found)?))
}

/// `PUT` (`P` false) or `PATCH` (`P` true) of one resource.
async fn change<const G: bool, const P: bool>(
    State(state): State<Shared>,
    Base(base): Base,
    ScimAuth(caller): ScimAuth,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Refusal> {
    let body = body(&headers, &bytes)?;
    let m = if_match(&headers);
    let write = (id.as_str(), &body, m.as_deref());
    let done = match (G, P) {
        (GROUPS, PATCH) => scim::patch_group(&state, &caller, write, &base).await?,
        (GROUPS, PUT) => scim::replace_group(&state, &caller, write, &base).await?,
        (USERS, PATCH) => scim::patch_user(&state, &caller, write, &base).await?,
        (USERS, PUT) => scim::replace_user(&state, &caller, write, &base).await?,
    };
    Ok(resource_response(StatusCode::OK, done))
}

async fn delete<const G: bool>(
    State(state): State<Shared>,
    Base(base): Base,
    ScimAuth(caller): ScimAuth,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Refusal> {
    let m = if_match(&headers);
    match G {
        GROUPS => scim::delete_group(&state, &caller, &id, m.as_deref(), &base).await?,
        USERS => scim::delete_user(&state, &caller, &id, m.as_deref(), &base).await?,
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn not_allowed() -> Refusal {
    Refusal::new(StatusCode::METHOD_NOT_ALLOWED, None, "this endpoint does not take that method")
}

async fn not_offered(_: ScimAuth) -> Refusal {
    Refusal::new(StatusCode::NOT_IMPLEMENTED, None, "not offered here (see /ServiceProviderConfig)")
}

async fn no_such_endpoint() -> Refusal {
    Refusal::new(StatusCode::NOT_FOUND, None, "no such SCIM endpoint")
}

/// The SCIM routes (the caller adds the state).
pub fn router() -> Router<Shared> {
    let at = |p: &str| format!("{BASE_PATH}{p}");
    Router::new()
        .route(&at("/ServiceProviderConfig"), get(service_provider_config).fallback(not_allowed))
        .route(&at("/Schemas"), get(schemas).fallback(not_allowed))
        .route(&at("/Schemas/{id}"), get(schema).fallback(not_allowed))
        .route(&at("/ResourceTypes"), get(resource_types).fallback(not_allowed))
        .route(&at("/ResourceTypes/{id}"), get(resource_type).fallback(not_allowed))
        .route(&at("/Users"), get(list::<USERS>).post(create::<USERS>).fallback(not_allowed))
        .route(
            &at("/Users/{id}"),
            get(read::<USERS>)
                .put(change::<USERS, PUT>)
                .patch(change::<USERS, PATCH>)
                .delete(delete::<USERS>)
                .fallback(not_allowed),
        )
        .route(&at("/Groups"), get(list::<GROUPS>).post(create::<GROUPS>).fallback(not_allowed))
        .route(
            &at("/Groups/{id}"),
            get(read::<GROUPS>)
                .put(change::<GROUPS, PUT>)
                .patch(change::<GROUPS, PATCH>)
                .delete(delete::<GROUPS>)
                .fallback(not_allowed),
        )
        .route(&at("/Bulk"), axum::routing::any(not_offered))
        .route(&at("/Me"), axum::routing::any(not_offered))
        .route(&at("/Users/.search"), axum::routing::post(not_offered))
        .route(&at("/Groups/.search"), axum::routing::post(not_offered))
        .route(&at("/.search"), axum::routing::post(not_offered))
        .route(BASE_PATH, axum::routing::any(no_such_endpoint))
        .route(&at("/{*rest}"), axum::routing::any(no_such_endpoint))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
}
