//! Request ids, one structured log line per request, and request metrics.
//!
//! The layers, outermost first:
//!
//! 1. [`sanitize_request_id`]: an incoming `X-Request-Id` is kept only if it
//!    is 1–64 of `[A-Za-z0-9._-]` (a proxy's correlation id); anything else
//!    is dropped, so no client text reaches the logs through it;
//! 2. tower-http `SetRequestIdLayer`: a request without one gets `req_` and
//!    24 random hex digits ([`RequestIds`]);
//! 3. tower-http `PropagateRequestIdLayer`: the id is echoed on the response;
//! 4. tower-http `TraceLayer`: a span per request (`request_id`, `method`,
//!    and, filled in as they become known, `route`, `tenant`, `principal`,
//!    `status`, `latency_ms`) and one `info` line when the answer is ready,
//!    which also counts the request in [`crate::metrics`];
//! 5. (per route) [`record_route`]: the matched route template goes into the
//!    span and the response, for the line and the metrics.
//!
//! The credential extractors record `tenant` and `principal` (`agent:…`,
//! `user:…`) in the request's span ([`record_principal`]).

use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderValue, Response};
use axum::middleware::Next;
use rand::RngCore;
use std::time::Duration;
use tower_http::request_id::{MakeRequestId, RequestId};
use tracing::Span;

pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Makes `req_` + 24 hex digits (96 random bits).
#[derive(Clone, Copy, Default)]
pub struct RequestIds;

impl MakeRequestId for RequestIds {
    fn make_request_id<B>(&mut self, _request: &axum::http::Request<B>) -> Option<RequestId> {
        let mut bytes = [0u8; 12];
        rand::thread_rng().fill_bytes(&mut bytes);
        HeaderValue::from_str(&format!("req_{}", hex::encode(bytes))).ok().map(RequestId::new)
    }
}

fn acceptable_request_id(value: &HeaderValue) -> bool {
    let bytes = value.as_bytes();
    (1..=64).contains(&bytes.len()) && bytes.iter().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(b))
}

/// Drops an incoming `X-Request-Id` that is not a plain token.
pub async fn sanitize_request_id(mut req: Request, next: Next) -> axum::response::Response {
    if req.headers().get(REQUEST_ID_HEADER).is_some_and(|v| !acceptable_request_id(v)) {
        req.headers_mut().remove(REQUEST_ID_HEADER);
    }
    next.run(req).await
}

/// The request id the layers gave this request.
pub fn request_id_of(req: &Request) -> String {
    req.extensions().get::<RequestId>().and_then(|id| id.header_value().to_str().ok()).unwrap_or_default().to_owned()
}

/// The span of one request; the fields left empty are recorded later.
pub fn request_span(req: &axum::http::Request<axum::body::Body>) -> Span {
    let id = req.extensions().get::<RequestId>().and_then(|id| id.header_value().to_str().ok()).unwrap_or_default();
    tracing::info_span!(
        "request",
        request_id = %id,
        method = %req.method(),
        route = tracing::field::Empty,
        tenant = tracing::field::Empty,
        principal = tracing::field::Empty,
        status = tracing::field::Empty,
        latency_ms = tracing::field::Empty,
    )
}

/// The matched route of a response (set by [`record_route`]).
#[derive(Clone, Debug)]
pub struct RouteOf {
    pub route: String,
    pub method: String,
}

/// Per route: the route template into the span and the response.
pub async fn record_route(req: Request, next: Next) -> axum::response::Response {
    // A nested service (the built assets) has no matched path of its own.
    let route = req.extensions().get::<MatchedPath>().map_or("/pkg/{file}", MatchedPath::as_str).to_owned();
    let method = req.method().as_str().to_owned();
    Span::current().record("route", route.as_str());
    let mut response = next.run(req).await;
    response.extensions_mut().insert(RouteOf { route, method });
    response
}

/// When the answer is ready: the request's one log line, and its metrics.
pub fn on_response<B>(metrics: &crate::metrics::Metrics, response: &Response<B>, latency: Duration, span: &Span) {
    let status = response.status().as_u16();
    let latency_ms = latency.as_secs_f64() * 1000.0;
    span.record("status", status);
    span.record("latency_ms", latency_ms);
    let (route, method) = match response.extensions().get::<RouteOf>() {
        Some(r) => (r.route.as_str(), r.method.as_str()),
        None => ("unmatched", "-"),
    };
    metrics.request(route, method, status, latency);
    tracing::info!(parent: span, status, latency_ms, "answered");
}

/// Names who made this request in its span: the tenant and `agent:…` or
/// `user:…` (never a key, a token or an account).
pub fn record_principal(tenant: &str, principal: &str) {
    let span = Span::current();
    span.record("tenant", tenant);
    span.record("principal", principal);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_request_ids_are_kept() {
        for ok in ["abc", "req_0123", "a.b-c_d", &"x".repeat(64)] {
            assert!(acceptable_request_id(&HeaderValue::from_str(ok).unwrap()), "{ok}");
        }
        for bad in ["", "a b", "a\"b", "<script>", &"x".repeat(65), "é"] {
            let value = HeaderValue::from_bytes(bad.as_bytes()).unwrap();
            assert!(!acceptable_request_id(&value), "{bad}");
        }
    }

    #[test]
    fn made_ids_have_the_documented_shape() {
        let req = axum::http::Request::new(());
        let id = RequestIds.make_request_id(&req).unwrap();
        let text = id.header_value().to_str().unwrap();
        assert!(text.starts_with("req_") && text.len() == 28, "{text}");
    }
}
