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
//! 3. a place among `mcp.max_in_flight` requests: else 429 `rate_limited`.
//!
//! The tools then call the agent API's own routes in this process with that
//! `Authorization` header ([`crate::mcp::Caller`]): the credential, the
//! checks and the typed errors are the API's.

use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{post, MethodRouter};
use futures::StreamExt;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

use super::error::ApiError;
use super::extract::{AgentAuth, MAX_BODY_BYTES};
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
    let tools = Countersign::in_process(routes, state.shutdown.clone());
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
    if !origin_allowed(&endpoint.state.settings.public_url, &parts.headers) {
        return ApiError::ForbiddenBecause("cross-origin request refused").into_response();
    }
    if let Err(refused) = AgentAuth::from_request_parts(&mut parts, &endpoint.state).await {
        return refused.into_response();
    }
    let Some(authorization) = parts.headers.get(header::AUTHORIZATION).cloned() else {
        return ApiError::Unauthenticated.into_response();
    };
    let Ok(permit) = endpoint.in_flight.clone().try_acquire_owned() else {
        return ApiError::RetryAfter(std::time::Duration::from_secs(1)).into_response();
    };
    let request_id = parts.extensions.get::<tower_http::request_id::RequestId>().cloned();
    parts.extensions.insert(Caller::new(authorization, request_id, tracing::Span::current()));

    let answer = endpoint.mcp.handle(Request::from_parts(parts, body)).await;
    let (mut parts, body) = answer.into_parts();
    // Tool answers carry approval tokens: never stored (rmcp says no-cache).
    parts.headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // The place is held until the answer's last byte is sent.
    let body = Body::new(body).into_data_stream().map(move |chunk| {
        let _held = &permit;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
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
