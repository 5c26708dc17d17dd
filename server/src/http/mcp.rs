//! `POST /mcp`: the MCP tools (`crate::mcp`) over streamable HTTP, served by
//! the server itself, so an agent whose framework speaks MCP needs no extra
//! process.
//!
//! Stateless (rmcp's `legacy_session_mode: false`): every POST is one
//! JSON-RPC message, answered on its own (a request as a short
//! Server-Sent Events stream, a notification with 202). No session id is
//! issued or honoured, so there is no session to hijack, bound or expire:
//! each request is checked, and acts, with the key it carries. GET (a
//! server-to-client stream) and DELETE (ending a session) have nothing to
//! serve: 405, as the MCP specification allows.
//!
//! Before any MCP processing, in this order:
//!
//! 1. a browser's `Origin`, when there is one, must be this deployment's
//!    (`public_url`): a page elsewhere — a DNS-rebinding one included, whose
//!    Host is its own name — gets 403 `forbidden`;
//! 2. the agent key, exactly as the API wants it (`Authorization: Bearer`,
//!    an active agent, asked of the database): else 401 `unauthenticated`;
//! 3. a place among `mcp.max_in_flight` requests: else 429 `rate_limited`;
//! 4. a body that is JSON (`Content-Type: application/json`, else 415; the
//!    body, at most `MAX_BODY_BYTES`, is read before any of these checks): a
//!    body that does not parse gets 400 with the JSON-RPC parse error
//!    (-32700), and a batch (a JSON array, which protocol version
//!    2025-03-26 requires a server to accept and later versions removed) is
//!    answered here, message by message, as one JSON array of answers — or
//!    refused with -32600 under a version that has no batches.
//!
//! A refused key's 401 names the protected-resource metadata (RFC 9728,
//! `resource_metadata` in `WWW-Authenticate`), served at
//! `/.well-known/oauth-protected-resource/mcp`: the bearer is an agent key an
//! administrator issues (there is no authorization server to go to).
//!
//! The tools then call the agent API's own routes in this process with that
//! `Authorization` header ([`crate::mcp::Caller`]): the credential, the
//! checks and the typed errors are the API's.

use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, MethodRouter};
use futures::StreamExt;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

use super::error::ApiError;
use super::extract::{is_json, AgentAuth, MAX_BODY_BYTES};
use crate::mcp::{Caller, Countersign};
use crate::state::Shared;

/// A comment line this often keeps proxies from closing an answer that a
/// tool takes long to give (`wait_for_decision`).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

#[derive(Clone)]
struct Endpoint {
    state: Shared,
    mcp: StreamableHttpService<Countersign, NeverSessionManager>,
    in_flight: Arc<Semaphore>,
}

/// The `/mcp` route: POST only.
pub fn route<S>(state: Shared) -> MethodRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    // The agent API's routes, called by the tools in this process. Each
    // call runs in the MCP request's span under its request id.
    let routes =
        super::agent_api().split_for_parts().0.with_state(state.clone()).layer(super::observe::ScopeRequestIdLayer);
    let openapi = serde_json::to_value(super::openapi::document(&state.settings.public_url)).unwrap_or_default();
    let tools = Countersign::in_process(routes, state.shutdown.clone(), &openapi);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(false)
        .with_sse_keep_alive(Some(KEEP_ALIVE))
        .with_sse_retry(None)
        // Checked before rmcp sees the request (`serve`): Origin against
        // `public_url`. A Host allowlist adds nothing for browsers (the
        // Origin check refuses a rebinding page) and nothing against other
        // clients (they send any Host), and behind a proxy the Host is the
        // proxy's choice.
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(MAX_BODY_BYTES);
    let mcp = StreamableHttpService::new(move || Ok(tools.clone()), Arc::new(NeverSessionManager::default()), config);
    let in_flight = Arc::new(Semaphore::new(state.settings.mcp.max_in_flight));
    post(serve).with_state(Endpoint { state, mcp, in_flight })
}

async fn serve(State(endpoint): State<Endpoint>, request: Request) -> Response {
    let (mut parts, body) = request.into_parts();
    // Read (at most the API's limit) before any refusal: an answer that
    // leaves the body unread makes the server drop the connection, which a
    // client reusing it sees as a reset rather than as the answer.
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return ApiError::PayloadTooLarge.into_response();
    };
    if !origin_allowed(&endpoint.state.settings.public_url, &parts.headers) {
        return ApiError::ForbiddenBecause("cross-origin request refused").into_response();
    }
    if let Err(refused) = AgentAuth::from_request_parts(&mut parts, &endpoint.state).await {
        return with_resource_metadata(refused.into_response(), &endpoint.state.settings.public_url);
    }
    let Some(authorization) = parts.headers.get(header::AUTHORIZATION).cloned() else {
        return ApiError::Unauthenticated.into_response();
    };
    let Ok(permit) = endpoint.in_flight.clone().try_acquire_owned() else {
        return ApiError::RetryAfter(std::time::Duration::from_secs(1)).into_response();
    };
    let request_id = parts.extensions.get::<tower_http::request_id::RequestId>().cloned();
    parts.extensions.insert(Caller::new(authorization, request_id, tracing::Span::current()));

    if !is_json(&parts.headers) {
        return rpc_refusal(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            INVALID_REQUEST,
            "Content-Type must be application/json",
        );
    }
    let message: Value = match serde_json::from_slice(&bytes) {
        Ok(message) => message,
        Err(e) => return rpc_refusal(StatusCode::BAD_REQUEST, PARSE_ERROR, &format!("Parse error: {e}")),
    };
    let answer = match message {
        Value::Array(batch) => return no_store(answer_batch(&endpoint, &parts, batch).await),
        _ => endpoint.mcp.handle(Request::from_parts(parts, Body::from(bytes))).await,
    };
    let (mut parts, body) = no_store(answer.map(Body::new)).into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    // The place is held until the answer's last byte is sent.
    let body = body.into_data_stream().map(move |chunk| {
        let _held = &permit;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// Tool answers carry approval tokens: never stored (rmcp says no-cache).
fn no_store(mut response: Response) -> Response {
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;

/// A JSON-RPC error answer with no id (the request's could not be read).
fn rpc_refusal(status: StatusCode, code: i64, message: &str) -> Response {
    let body = json!({ "jsonrpc": "2.0", "id": null, "error": { "code": code, "message": message } });
    (status, axum::Json(body)).into_response()
}

/// The protocol version the client says it speaks; none means 2025-03-26
/// (the streamable HTTP transport's rule for a client that sends none).
fn protocol_version(headers: &HeaderMap) -> &str {
    headers.get("mcp-protocol-version").and_then(|v| v.to_str().ok()).unwrap_or("2025-03-26")
}

/// A JSON-RPC batch: each message served as if posted alone (in order, with
/// the same headers and caller), the answers to its requests returned as one
/// JSON array; a batch of notifications only gets 202.
async fn answer_batch(endpoint: &Endpoint, parts: &axum::http::request::Parts, batch: Vec<Value>) -> Response {
    let version = protocol_version(&parts.headers);
    if version != "2025-03-26" {
        return rpc_refusal(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            &format!("JSON-RPC batches are not part of MCP protocol version {version} (only 2025-03-26 has them)"),
        );
    }
    if batch.is_empty() {
        return rpc_refusal(StatusCode::BAD_REQUEST, INVALID_REQUEST, "an empty batch");
    }
    let mut answers = Vec::new();
    for message in batch {
        let mut request = Request::builder().method(parts.method.clone()).uri(parts.uri.clone()).version(parts.version);
        if let Some(headers) = request.headers_mut() {
            *headers = parts.headers.clone();
        }
        let Ok(mut request) = request.body(Body::from(message.to_string())) else { continue };
        *request.extensions_mut() = parts.extensions.clone();
        let answer = endpoint.mcp.handle(request).await.map(Body::new);
        answers.extend(answers_in(answer, &message).await);
    }
    if answers.is_empty() {
        return StatusCode::ACCEPTED.into_response();
    }
    axum::Json(Value::Array(answers)).into_response()
}

/// The JSON-RPC answers in one of rmcp's responses to `message`: the data
/// of its event stream, its JSON body, nothing for 202, or an error naming
/// the refusal.
async fn answers_in(answer: Response, message: &Value) -> Vec<Value> {
    let status = answer.status();
    if status == StatusCode::ACCEPTED {
        return Vec::new();
    }
    let stream = answer
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let bytes = axum::body::to_bytes(answer.into_body(), crate::mcp::MAX_ANSWER_BYTES).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let found: Vec<Value> = if stream {
        text.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .filter(|m| m.get("id").is_some() && (m.get("result").is_some() || m.get("error").is_some()))
            .collect()
    } else {
        serde_json::from_str::<Value>(&text).ok().filter(|m| m.get("jsonrpc").is_some()).into_iter().collect()
    };
    if !found.is_empty() || message.get("id").is_none() {
        return found;
    }
    vec![json!({
        "jsonrpc": "2.0",
        "id": message["id"],
        "error": { "code": INVALID_REQUEST, "message": format!("refused (HTTP {}): {}", status.as_u16(), text.trim()) },
    })]
}

/// The protected-resource metadata's address for this deployment's `/mcp`.
fn resource_metadata_url(public_url: &str) -> String {
    format!("{}/.well-known/oauth-protected-resource/mcp", public_url.trim_end_matches('/'))
}

/// A 401 that says where the resource's metadata is (RFC 9728 §5.1).
fn with_resource_metadata(mut response: Response, public_url: &str) -> Response {
    if response.status() == StatusCode::UNAUTHORIZED {
        let challenge =
            format!("Bearer resource_metadata=\"{}\", error=\"invalid_token\"", resource_metadata_url(public_url));
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
    }
    response
}

/// `GET /.well-known/oauth-protected-resource/mcp`: what `/mcp` is and how
/// its bearer is sent (RFC 9728). No `authorization_servers`: the bearer is
/// an agent key an administrator issues in Countersign, not an OAuth token.
pub fn resource_metadata_route<S>(state: Shared) -> MethodRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    get(|State(state): State<Shared>| async move {
        let public_url = state.settings.public_url.trim_end_matches('/').to_owned();
        axum::Json(json!({
            "resource": format!("{public_url}/mcp"),
            "resource_name": "Countersign MCP tools",
            "bearer_methods_supported": ["header"],
            "resource_documentation": format!("{public_url}/openapi.json"),
        }))
    })
    .with_state(state)
}

/// Whether the request may come from where it says: no `Origin` (an agent,
/// not a browser), or exactly this deployment's origin (`public_url`:
/// scheme, host, port). Not the Host the request names, unlike the
/// console's CSRF check: under DNS rebinding that is the attacker's name.
fn origin_allowed(public_url: &str, headers: &HeaderMap) -> bool {
    let mut origins = headers.get_all(header::ORIGIN).iter();
    let Some(origin) = origins.next() else {
        return true;
    };
    if origins.next().is_some() {
        return false;
    }
    match (origin.to_str().ok().and_then(SiteOrigin::parse), SiteOrigin::parse(public_url)) {
        (Some(origin), Some(ours)) => origin == ours,
        _ => false,
    }
}

/// An origin as RFC 6454 compares them: scheme, host (case-insensitive),
/// port (the scheme's default when none is written).
#[derive(Debug, PartialEq, Eq)]
struct SiteOrigin {
    scheme: String,
    host: String,
    port: u16,
}

impl SiteOrigin {
    fn parse(url: &str) -> Option<SiteOrigin> {
        let uri: Uri = url.parse().ok()?;
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let authority = uri.authority()?;
        if authority.as_str().contains('@') {
            return None;
        }
        let port = match (authority.port_u16(), scheme.as_str()) {
            (Some(port), _) => port,
            (None, "http") => 80,
            (None, "https") => 443,
            _ => return None,
        };
        Some(SiteOrigin { scheme, host: authority.host().to_ascii_lowercase(), port })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ORIGIN, HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn only_this_deployments_origin_or_none_is_allowed() {
        let public = "https://pay.example.com";
        assert!(origin_allowed(public, &HeaderMap::new()), "an agent sends no Origin");
        assert!(origin_allowed(public, &origin("https://pay.example.com")));
        assert!(origin_allowed(public, &origin("https://PAY.example.com:443")));
        assert!(origin_allowed("https://pay.example.com:443/console/", &origin("https://pay.example.com")));
        for refused in [
            "http://pay.example.com",
            "https://pay.example.com:8443",
            "https://pay.example.com.evil.example",
            "https://evil.example",
            "null",
            "",
            "pay.example.com",
            "https://user@pay.example.com",
        ] {
            assert!(!origin_allowed(public, &origin(refused)), "{refused}");
        }
        let mut two = origin("https://pay.example.com");
        two.append(header::ORIGIN, HeaderValue::from_static("https://evil.example"));
        assert!(!origin_allowed(public, &two), "two Origin headers");
        assert!(origin_allowed("http://localhost:8080", &origin("http://localhost:8080")));
        assert!(!origin_allowed("http://localhost:8080", &origin("http://127.0.0.1:8080")));
    }
}
#[cfg(test)]
mod schema_tests {
    use crate::mcp::schemas::{cut, referenced, Schemas, COMPONENT_REF};
    use serde_json::{json, Map, Value};

    type JsonObject = Map<String, Value>;

    fn refs_resolve(schema: &JsonObject) {
        let defs = schema.get("$defs").and_then(Value::as_object).cloned().unwrap_or_default();
        let text = serde_json::to_string(schema).unwrap();
        assert!(!text.contains(COMPONENT_REF), "a reference into the OpenAPI document is left");
        assert_eq!(referenced(&Value::Object(schema.clone())), Vec::<String>::new(), "unrewritten references");
        let mut stack = vec![Value::Object(schema.clone())];
        while let Some(value) = stack.pop() {
            match value {
                Value::Object(object) => {
                    if let Some(r) = object.get("$ref").and_then(Value::as_str) {
                        let name = r.strip_prefix("#/$defs/").expect("only $defs references");
                        assert!(defs.contains_key(name), "{name} is referenced but not defined");
                    }
                    stack.extend(object.into_iter().map(|(_, v)| v));
                }
                Value::Array(items) => stack.extend(items),
                _ => {}
            }
        }
    }

    #[test]
    fn the_tools_schemas_are_the_apis_and_stand_alone() {
        let document = serde_json::to_value(super::super::openapi::document("/")).unwrap();
        let schemas: &Schemas = &cut(&document);
        for schema in [
            &schemas.propose_payment,
            &schemas.request_reversal,
            &schemas.proposal_id,
            &schemas.wait_for_decision,
            &schemas.proposal,
        ] {
            assert_eq!(schema["type"], "object");
            refs_resolve(schema);
        }
        let propose = Value::Object((*schemas.propose_payment).clone());
        assert_eq!(propose["properties"]["amount_minor"]["minimum"], 1, "the API needs more than 0");
        assert_eq!(propose["$defs"]["PurposeCode"]["enum"], json!(["payroll", "refund", "vendor", "disbursement"]));
        assert_eq!(propose["$defs"]["RunId"]["maxLength"], 128);
        assert!(propose["properties"].get("kind").is_none());
        assert!(propose["required"].as_array().unwrap().iter().all(|f| f != "kind"));
        assert_eq!(propose["additionalProperties"], false);
        let reversal = Value::Object((*schemas.request_reversal).clone());
        assert_eq!(reversal["$defs"]["ReasonCode"]["enum"][0], "duplicate");
        assert!(reversal["required"].as_array().unwrap().iter().all(|f| f != "kind"));
        let proposal = Value::Object((*schemas.proposal).clone());
        assert!(proposal["properties"]["status"].is_object());
        assert!(proposal["$defs"]["Operation"].is_object());
    }
}
