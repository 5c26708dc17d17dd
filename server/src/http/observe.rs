//! Request ids, one structured log line per request, and request metrics.
//!
//! The layers, outermost first:
//!
//! 1. [`sanitize_request_id`] (a request map): an incoming `X-Request-Id` is kept only if it
//!    is 1–64 of `[A-Za-z0-9._-]` (a proxy's correlation id); anything else
//!    is dropped, so no client text reaches the logs through it;
//! 2. tower-http `SetRequestIdLayer`: a request without one gets `req_` and
//!    24 random hex digits ([`RequestIds`]);
//! 3. tower-http `PropagateRequestIdLayer`: the id is echoed on the response;
//! 4. tower-http `TraceLayer`: a span per request (`request_id`, `method`,
//!    and, filled in as they become known, `route`, `tenant`, `principal`,
//!    `status`, `latency_ms`) and one `info` line when the answer is ready;
//! 5. (per route) [`RecordRouteLayer`]: the matched route template goes into the
//!    span, and the request into [`crate::metrics`].
//!
//! The credential extractors record `tenant` and `principal` (`agent:…`,
//! `user:…`) in the request's span ([`record_principal`]).

use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderValue, Response};
use rand::RngCore;
use std::time::{Duration, Instant};
use tower_http::request_id::{MakeRequestId, RequestId};
use tracing::Span;

pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Makes `req_` + 24 hex digits (96 random bits).
#[derive(Clone, Copy, Default)]
pub struct RequestIds;

impl MakeRequestId for RequestIds {
    fn make_request_id<B>(&mut self, _request: &axum::http::Request<B>) -> Option<RequestId> {
        // Written in place: this runs on every request (docs/BENCHMARKS.md).
        let mut random = [0u8; 12];
        rand::thread_rng().fill_bytes(&mut random);
        let mut id = *b"req_000000000000000000000000";
        hex::encode_to_slice(random, &mut id[4..]).expect("24 hex digits fit");
        HeaderValue::from_bytes(&id).ok().map(RequestId::new)
    }
}

fn acceptable_request_id(value: &HeaderValue) -> bool {
    let bytes = value.as_bytes();
    (1..=64).contains(&bytes.len()) && bytes.iter().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(b))
}

/// Drops an incoming `X-Request-Id` that is not a plain token (a plain
/// request mapping: no boxing, nothing held while the request runs).
pub fn sanitize_request_id(mut req: Request) -> Request {
    if req.headers().get(REQUEST_ID_HEADER).is_some_and(|v| !acceptable_request_id(v)) {
        req.headers_mut().remove(REQUEST_ID_HEADER);
    }
    req
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

/// Per route: the route template into the span, and the request into the
/// metrics (route, method, status, time to the answer's head). A plain tower
/// layer (no boxing, nothing allocated: the matched path is shared): it runs
/// on every request, and the status poll is the hot path. Requests no route
/// matched (unknown paths, the built assets' nested service) are logged but
/// not counted.
#[derive(Clone)]
pub struct RecordRouteLayer {
    state: crate::state::Shared,
}

impl RecordRouteLayer {
    pub fn new(state: crate::state::Shared) -> Self {
        RecordRouteLayer { state }
    }
}

impl<S> tower::Layer<S> for RecordRouteLayer {
    type Service = RecordRoute<S>;

    /// Called once per route and method (`Router::route_layer`): each keeps
    /// its own metric handles.
    fn layer(&self, inner: S) -> RecordRoute<S> {
        RecordRoute { inner, recorder: Recorder { state: self.state.clone(), handles: Default::default() } }
    }
}

#[derive(Clone)]
pub struct RecordRoute<S> {
    inner: S,
    recorder: Recorder,
}

impl<S, B, R> tower::Service<axum::http::Request<B>> for RecordRoute<S>
where
    S: tower::Service<axum::http::Request<B>, Response = Response<R>>,
{
    type Response = Response<R>;
    type Error = S::Error;
    type Future = RecordRouteFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: axum::http::Request<B>) -> Self::Future {
        let route = req.extensions().get::<MatchedPath>().cloned();
        if let Some(route) = &route {
            Span::current().record("route", route.as_str());
        }
        let method = method_label(req.method());
        RecordRouteFuture {
            inner: self.inner.call(req),
            seen: route.map(|route| (route, method, self.recorder.clone(), Instant::now())),
        }
    }
}

/// What a request's future needs to record it once answered: the metrics,
/// and the handles of its route and method.
#[derive(Clone)]
pub struct Recorder {
    state: crate::state::Shared,
    handles: std::sync::Arc<crate::metrics::RouteMetrics>,
}

pin_project_lite::pin_project! {
    pub struct RecordRouteFuture<F> {
        #[pin]
        inner: F,
        seen: Option<(MatchedPath, &'static str, Recorder, Instant)>,
    }
}

impl<F, R, E> std::future::Future for RecordRouteFuture<F>
where
    F: std::future::Future<Output = Result<Response<R>, E>>,
{
    type Output = Result<Response<R>, E>;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        let this = self.project();
        let result = std::task::ready!(this.inner.poll(cx));
        if let (Some((route, method, recorder, started)), Ok(response)) = (this.seen.take(), &result) {
            let status = response.status().as_u16();
            recorder.state.metrics.request_on(&recorder.handles, route.as_str(), method, status, started.elapsed());
        }
        std::task::Poll::Ready(result)
    }
}

/// A method as a metrics label: the standard ones by name, any other
/// (a client may send any token) as `other`, so labels stay few.
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// Makes the request's id known to error bodies (`error::current_request_id`)
/// for as long as the request runs: a task-local, set by a plain tower layer.
#[derive(Clone, Copy, Default)]
pub struct ScopeRequestIdLayer;

impl<S> tower::Layer<S> for ScopeRequestIdLayer {
    type Service = ScopeRequestId<S>;

    fn layer(&self, inner: S) -> ScopeRequestId<S> {
        ScopeRequestId { inner }
    }
}

#[derive(Clone)]
pub struct ScopeRequestId<S> {
    inner: S,
}

impl<S, B> tower::Service<axum::http::Request<B>> for ScopeRequestId<S>
where
    S: tower::Service<axum::http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = tokio::task::futures::TaskLocalFuture<Option<HeaderValue>, S::Future>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: axum::http::Request<B>) -> Self::Future {
        let id = req.extensions().get::<RequestId>().map(|id| id.header_value().clone());
        // The trace layer entered the request's span around this call: keep
        // a handle, so that whoever authenticates the request can name the
        // principal in it even from inside another span (the session layer's).
        // (Nothing to keep when the span is off: request logging is off.)
        let span = Span::current();
        if !span.is_disabled() {
            req.extensions_mut().insert(RequestSpan(span));
        }
        super::error::REQUEST_ID.scope(id, self.inner.call(req))
    }
}

/// When the answer is ready: the request's one log line.
pub fn on_response<B>(response: &Response<B>, latency: Duration, span: &Span) {
    let status = response.status().as_u16();
    let latency_ms = latency.as_secs_f64() * 1000.0;
    span.record("status", status);
    span.record("latency_ms", latency_ms);
    tracing::info!(parent: span, status, latency_ms, "answered");
}

/// The span of the request being served (set by [`ScopeRequestIdLayer`]).
#[derive(Clone)]
pub struct RequestSpan(pub Span);

/// Names who made this request in its span: the tenant and `agent:…` or
/// `user:…` (never a key, a token or an account).
/// `principal` is only made when the span is recorded (the status poll's
/// path runs with request logging off in the benchmarks, and may in
/// production).
pub fn record_principal(extensions: &axum::http::Extensions, tenant: &str, principal: impl FnOnce() -> String) {
    let span = extensions.get::<RequestSpan>().map_or_else(Span::current, |s| s.0.clone());
    if span.is_disabled() {
        return;
    }
    span.record("tenant", tenant);
    span.record("principal", principal().as_str());
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
    fn only_standard_methods_become_labels() {
        assert_eq!(method_label(&axum::http::Method::GET), "GET");
        let odd = axum::http::Method::from_bytes(b"FROBNICATE").unwrap();
        assert_eq!(method_label(&odd), "other");
    }

    #[test]
    fn made_ids_have_the_documented_shape() {
        let req = axum::http::Request::new(());
        let id = RequestIds.make_request_id(&req).unwrap();
        let text = id.header_value().to_str().unwrap();
        assert!(text.starts_with("req_") && text.len() == 28, "{text}");
        assert!(text[4..].bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "{text}");
        let other = RequestIds.make_request_id(&req).unwrap();
        assert_ne!(other.header_value(), id.header_value(), "random");
    }
}
