//! HTTP: the agent API, the console (pages, forms, JSON), health, and the
//! layers every response goes through (request id, security headers).

pub mod agent;
pub mod client_ip;
pub mod console;
pub mod csrf;
pub mod error;
pub mod extract;
pub mod observe;
pub mod openapi;
pub mod session;
pub mod session_store;
pub mod slack;

use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{generate_route_list, LeptosRoutes};
use std::sync::Arc;
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, SessionManagerLayer};

use crate::state::Shared;
use error::ApiError;

/// The console's session cookie.
pub const SESSION_COOKIE: &str = "countersign_session";

/// Every route of the server.
pub fn router(state: Shared) -> Router {
    let sessions = session_store::ConsoleSessionStore::new(state.db.clone());
    let session_layer = SessionManagerLayer::new(sessions)
        .with_name(SESSION_COOKIE)
        .with_http_only(true)
        .with_same_site(SameSite::Strict)
        .with_secure(state.settings.secure_cookies())
        // Save on every request, so the idle timeout counts from the last
        // request rather than from sign-in.
        .with_always_save(true)
        .with_expiry(Expiry::OnInactivity(time::Duration::seconds(state.settings.console.idle_timeout_secs as i64)));
    let csrf = middleware::from_fn_with_state(state.clone(), csrf::guard);

    let agent_api = Router::new()
        .route("/proposals", post(agent::create).get(agent::list))
        .route("/proposals/{id}", get(agent::get))
        .route("/proposals/{id}/cancel", post(agent::cancel))
        .route("/proposals/{id}/commit", post(agent::commit))
        .with_state(state.clone());
    let console_api = Router::new()
        .route("/session", post(console::sign_in_json).delete(console::sign_out_json))
        .route("/queue", get(console::queue))
        .route("/proposals/{id}/approvals", post(console::decide_json))
        .route("/operations/{id}/resolution", post(console::resolve_json))
        .route("/operations/{id}/rail-records", get(console::rail_records_json))
        .with_state(state.clone())
        .layer(csrf.clone())
        .layer(session_layer.clone());
    let api = agent_api.merge(console_api).fallback(|| async { ApiError::NotFound });

    let leptos_options = leptos_options(&state);
    let port = app::console::Port(Arc::new(crate::console::ConsoleService { state: state.clone() }));
    let pages = Router::new()
        .leptos_routes_with_context(
            &leptos_options,
            generate_route_list(app::App),
            move || {
                provide_context(port.clone());
                if let Some(parts) = leptos::prelude::use_context::<axum::http::request::Parts>() {
                    if let Some(viewer) = parts.extensions.get::<app::views::Viewer>() {
                        provide_context(viewer.clone());
                    }
                }
            },
            {
                let options = leptos_options.clone();
                move || app::shell(options.clone())
            },
        )
        .fallback(leptos_axum::file_and_error_handler(app::shell))
        .with_state(leptos_options);
    let forms = Router::new()
        .route("/login", post(console::sign_in_form))
        .route("/logout", post(console::sign_out_form))
        .route("/proposals/{id}/decision", post(console::decide_form))
        .route("/operations/{id}/resolve", post(console::resolve_form))
        .route("/admin/users", post(console::admin_add_user))
        .route("/admin/agents", post(console::admin_add_agent))
        .route("/admin/payees", post(console::admin_add_payee))
        .route("/admin/slack-links", post(console::admin_link_slack))
        .route("/admin/changes/{id}/confirm", post(console::admin_confirm_change))
        .route("/admin/changes/{id}/reject", post(console::admin_reject_change))
        .with_state(state.clone());
    let console = forms
        .merge(pages)
        .layer(middleware::from_fn_with_state(state.clone(), console::load_viewer))
        .layer(csrf)
        .layer(session_layer);

    let routes = Router::new()
        .nest("/api/v1", api)
        .route("/openapi.json", get(openapi_json))
        .route("/.well-known/jwks.json", get(jwks))
        .route(
            "/integrations/slack/interactions",
            post(slack::interactions).layer(axum::extract::DefaultBodyLimit::max(slack::MAX_BODY)),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        // The built console assets, outside the session layers: a script or
        // wasm request costs no session read or write.
        .nest_service(
            "/pkg",
            tower::ServiceBuilder::new()
                .layer(tower_http::set_header::SetResponseHeaderLayer::if_not_present(
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("public, max-age=300"),
                ))
                .service(tower_http::services::ServeDir::new(state.settings.site_root.join("pkg"))),
        )
        .route("/metrics", get(metrics))
        .with_state(state.clone())
        .merge(console)
        .route_layer(observe::RecordRouteLayer::new(state.clone()));
    security_headers(routes)
        .layer(observe::ScopeRequestIdLayer)
        .layer(
            tower_http::trace::TraceLayer::new_for_http()
                .make_span_with(observe::request_span)
                .on_request(())
                .on_response(observe::on_response),
        )
        .layer(tower_http::request_id::PropagateRequestIdLayer::x_request_id())
        .layer(tower_http::request_id::SetRequestIdLayer::x_request_id(observe::RequestIds))
        .layer(tower::util::MapRequestLayer::new(observe::sanitize_request_id))
}

/// `GET /metrics` — Prometheus text, for a scraper holding
/// `metrics.bearer_token`; without one configured the endpoint does not exist.
async fn metrics(State(state): State<Shared>, headers: axum::http::HeaderMap) -> Response {
    use secrecy::ExposeSecret;
    use subtle::ConstantTimeEq;
    let Some(expected) = &state.settings.metrics.bearer_token else {
        return ApiError::NotFound.into_response();
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if !bool::from(presented.as_bytes().ct_eq(expected.expose_secret().as_bytes())) {
        return ApiError::Unauthenticated.into_response();
    }
    let mut response = state.metrics.render().into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    response
}

fn leptos_options(state: &Shared) -> LeptosOptions {
    LeptosOptions::builder()
        .output_name("countersign")
        .site_root(state.settings.site_root.to_string_lossy().to_string())
        .site_pkg_dir("pkg")
        .site_addr(state.settings.listen)
        .build()
}

async fn openapi_json(State(state): State<Shared>) -> Json<serde_json::Value> {
    Json(openapi::document(&state.settings.public_url))
}

/// `GET /.well-known/jwks.json` — every signing key, public parts only.
async fn jwks(State(state): State<Shared>) -> Response {
    let _ = state.keys.reload();
    let mut response = Json(state.keys.jwks()).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=60"));
    response
}

async fn readyz(State(state): State<Shared>) -> Response {
    match state.db.ping().await {
        Ok(_) => "ready".into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// The security headers of every response, as plain tower-http layers
/// (nothing boxed per request): no framing, no referrer, no sniffing;
/// `Cache-Control: no-store` unless the route set its own (nothing we answer
/// may be stored by a browser or a proxy: signed-in pages, console JSON,
/// approval tokens in status polls; the built assets and the JWKS set
/// theirs); a Content-Security-Policy that allows nothing unless the route
/// set its own (pages set one with the hydration script's nonce).
fn security_headers<S>(router: Router<S>) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    use tower_http::set_header::SetResponseHeaderLayer as Set;
    router
        .layer(Set::overriding(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")))
        .layer(Set::overriding(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")))
        .layer(Set::overriding(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")))
        .layer(Set::if_not_present(header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .layer(Set::if_not_present(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
        ))
}
