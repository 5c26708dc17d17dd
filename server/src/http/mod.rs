//! HTTP: the agent API, the console (pages, forms, JSON), health, and the
//! layers every response goes through (request id, security headers).

pub mod admin;
pub mod agent;
pub mod batches;
pub mod bulk;
pub mod connections;
pub use countersign_core::people::client_ip;
pub mod console;
pub mod csrf;
pub mod delegations;
pub mod error;
pub mod events;
pub mod evidence;
pub mod exports;
pub mod extract;
mod held;
pub mod log;
pub mod mcp;
pub mod observe;
pub mod oidc;
pub mod openapi;
pub mod pages;
pub mod passkey_sign_in;
pub mod passkeys;
pub mod payables;
pub mod people;
pub mod policy;
pub mod reach;
pub mod scim;
pub mod session;
pub mod session_store;
pub mod slack;
pub mod teams;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post, Route};
use axum::{Json, Router};
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{generate_route_list, LeptosRoutes};
use std::convert::Infallible;
use std::sync::Arc;
use tower::{Layer, Service};
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, SessionManagerLayer};
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};
use utoipa_axum::routes;

use crate::state::Shared;
use error::ApiError;

/// The console's session cookie.
pub const SESSION_COOKIE: &str = "countersign_session";

/// The console's page routes, walked out of the app once per process.
///
/// Walking them (`generate_route_list`) renders the app with resource
/// loading suppressed, and that switch is one flag for the whole process
/// (`leptos_server`'s `SuppressResourceLoad`): a page rendered by another
/// router of this process meanwhile would wait for its data forever. Once
/// per process, before the first router serves, nothing renders meanwhile;
/// this matters wherever several servers share a process (the in-process
/// test harness, docs/DECISIONS.md).
fn console_routes() -> Vec<leptos_axum::AxumRouteListing> {
    static ROUTES: std::sync::OnceLock<Vec<leptos_axum::AxumRouteListing>> = std::sync::OnceLock::new();
    ROUTES.get_or_init(|| generate_route_list(app::App)).clone()
}

/// Every route of the server, behind the layers every request goes
/// through (request id, trace, security headers), which wrap the routed
/// service once: `Router::layer` would wrap each route separately, boxing
/// every layer again (an allocation and a boxed future per layer and
/// request, on the status poll's path too; docs/BENCHMARKS.md, "Status poll throughput").
/// Served by `startup` with each connection's address (`ConnectInfo`).
pub fn app(
    state: Shared,
) -> impl Service<
    Request,
    Response = Response,
    Error = Infallible,
    Future = impl std::future::Future<Output = Result<Response, Infallible>> + Send + 'static,
> + Clone
       + Send
       + Sync
       + 'static {
    tower::ServiceBuilder::new()
        .map_request(observe::sanitize_request_id)
        .layer(tower_http::request_id::SetRequestIdLayer::x_request_id(observe::RequestIds))
        .layer(tower_http::request_id::PropagateRequestIdLayer::x_request_id())
        .map_response(|response: axum::http::Response<_>| response.map(axum::body::Body::new))
        .layer(
            tower_http::trace::TraceLayer::new_for_http()
                .make_span_with(observe::request_span)
                .on_request(())
                .on_response(observe::on_response),
        )
        .layer(observe::ScopeRequestIdLayer)
        .layer(SecurityHeadersLayer)
        .service(router(state))
}

/// Every route of the server (without the outer layers: [`app`]).
fn router(state: Shared) -> Router {
    let idle_secs = state.settings.console.idle_timeout_secs as i64;
    let sessions = session_store::ConsoleSessionStore::new(
        state.db.clone(),
        chrono::Duration::seconds(idle_secs),
        state.core.clock,
    );
    let session_layer = SessionManagerLayer::new(sessions)
        .with_name(SESSION_COOKIE)
        .with_http_only(true)
        // Lax: a link from Slack, email or a chat (a cross-site top-level
        // GET) arrives signed in. Writes stay guarded by the CSRF token and
        // the origin check (csrf.rs), and a cross-site POST carries no Lax
        // cookie anyway (docs/DECISIONS.md, "The session cookie is Lax").
        .with_same_site(SameSite::Lax)
        .with_secure(state.settings.secure_cookies())
        // Save on every request, so the idle timeout counts from the last
        // request rather than from sign-in (the store skips a save that
        // would barely move the expiry).
        .with_always_save(true)
        .with_expiry(Expiry::OnInactivity(time::Duration::seconds(idle_secs)));
    let csrf = middleware::from_fn_with_state(state.clone(), csrf::guard);

    // The document is read from the same registration (`openapi::document`).
    let (api, _) = api(tower::ServiceBuilder::new().layer(session_layer.clone()).layer(csrf.clone())).split_for_parts();

    let assets = Assets::of(&state.settings.site_root);
    let leptos_options = leptos_options(&state, &assets);
    let console_state = state.clone();
    let sign_in_options = crate::console::sign_in_options(&state.settings);
    let pages = Router::new()
        .leptos_routes_with_context(
            &leptos_options,
            console_routes(),
            move || {
                // One per request: what its reads share lives as long as it.
                provide_context(app::console::Port(Arc::new(crate::console::ConsoleService::new(
                    console_state.clone(),
                ))));
                provide_context(sign_in_options.clone());
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
        .with_state(leptos_options)
        // The pages' HTML (and the server functions' answers), compressed as
        // the browser accepts: brotli or gzip at tower-http's on-the-fly
        // levels. Event streams and tiny bodies are left alone (its default
        // predicate).
        .layer(tower_http::compression::CompressionLayer::new().br(true).gzip(true));
    let forms = Router::new()
        .route("/login", post(console::sign_in_form))
        .route("/logout", post(console::sign_out_form))
        .route("/auth/oidc/start", get(oidc::start))
        .route("/auth/oidc/callback", get(oidc::callback))
        .route("/proposals/{id}/decision", post(console::decide_form))
        .route("/bulk/decision", post(bulk::bulk_form))
        .route("/operations/{id}/resolve", post(console::resolve_form))
        .route("/batches/{id}/hold", post(batches::hold_form))
        .route("/batches/{id}/decide", post(batches::decide_form))
        .route("/admin/users", post(admin::admin_add_user))
        .route("/admin/agents", post(admin::admin_add_agent))
        .route("/admin/payees", post(admin::admin_add_payee))
        .route("/admin/payees/account", post(admin::admin_change_account))
        .route("/admin/invoices/import", post(admin::admin_import_invoices))
        .route("/admin/freezes", post(admin::admin_freeze))
        .route("/admin/freezes/lift", post(admin::admin_lift_freeze))
        .route("/admin/slack-links", post(admin::admin_link_slack))
        .route("/admin/changes/{id}/confirm", post(admin::admin_confirm_change))
        .route("/admin/policy", post(policy::policy_form))
        .route("/admin/changes/{id}/reject", post(admin::admin_reject_change))
        .route("/admin/passkeys/{id}/confirm", post(admin::admin_confirm_passkey))
        .route("/admin/passkeys/{id}/remove", post(admin::admin_remove_passkey))
        .route("/admin/enrolment-codes", post(admin::admin_propose_enrolment))
        .route("/admin/webhook-deliveries/{id}/redeliver", post(admin::admin_redeliver_webhook))
        .route("/admin/users/{username}", get(people::user_page))
        .route("/admin/users/{username}/deactivate", post(people::deactivate_form))
        .route("/admin/users/{username}/reactivate", post(people::reactivate_form))
        .route("/admin/users/{username}/sessions/end", post(people::end_sessions_form))
        .route("/admin/scim-tokens", post(people::propose_scim_token))
        .route("/admin/scim-tokens/{id}/revoke", post(people::revoke_scim_token))
        .route("/admin/agent-reassignments", post(people::reassign_agent))
        .route("/account/sessions", get(people::own_sessions_page))
        .route("/account/sessions/end", post(people::end_own_sessions))
        .route("/session/alive", get(console::session_alive))
        .with_state(state.clone());
    let console = forms
        .merge(pages)
        .layer(middleware::from_fn_with_state(state.clone(), console::load_viewer))
        .layer(csrf)
        .layer(session_layer)
        .layer(middleware::from_fn(session_store::mark_background));

    api
        // MCP over streamable HTTP: JSON-RPC described by the protocol and
        // its tools/list, not by the OpenAPI document (tools call the agent
        // API above, in-process).
        .route("/mcp", mcp::route(state.clone()))
        .route("/.well-known/oauth-protected-resource/mcp", mcp::resource_metadata_route(state.clone()))
        .route(
            "/integrations/slack/interactions",
            post(slack::interactions).layer(axum::extract::DefaultBodyLimit::max(slack::MAX_BODY)),
        )
        .route(
            "/integrations/teams/messages",
            post(teams::messages).layer(axum::extract::DefaultBodyLimit::max(teams::MAX_BODY)),
        )
        // The built console assets, outside the session layers: a script or
        // wasm request costs no session read or write. Compressed once, at
        // build time (`scripts/site.sh`: brotli and gzip files beside each),
        // and sent as the browser accepts — the wasm shrinks about sevenfold,
        // with no compression per request. Pages link them
        // under `/pkg/<version>/`, a hash of their content: cached for a year,
        // immutable. The plain `/pkg/` names stay, cached briefly.
        .nest_service(&format!("/pkg/{}", assets.version), assets_service(&assets.dir, IMMUTABLE))
        .nest_service("/pkg", assets_service(&assets.dir, "public, max-age=300"))
        .route("/metrics", get(metrics))
        // The console's icon, outside the session layers like the assets.
        .route("/favicon.svg", get(favicon))
        .route("/favicon.ico", get(|| async { axum::response::Redirect::permanent("/favicon.svg") }))
        // The passkey ceremonies' script (plain JavaScript, not wasm).
        .route("/passkeys.js", get(passkeys_js))
        // Drafts kept across an ended session, the idle warning.
        .route("/session.js", get(session_js))
        .route("/reach.js", get(reach_js))
        .route("/sw.js", get(service_worker))
        .route("/manifest.webmanifest", get(manifest))
        // SCIM 2.0 for the tenants' identity providers: a bearer token, no
        // session, no CSRF (docs/PEOPLE.md).
        .merge(scim::router())
        .with_state(state.clone())
        .merge(console)
        .route_layer(observe::RecordRouteLayer::new(state.clone()))
}

/// The documented routes (`openapi.rs`), each registered once with its
/// OpenAPI description: the agent API and the console's JSON API under
/// `/api/v1` (any other path there is a 404 envelope), and the public
/// discovery and health endpoints. `console_layers` wrap the console's JSON
/// routes (session, CSRF); the document does not depend on them.
///
/// Not documented, so registered in `router` directly: the Slack
/// interactions webhook (Slack's own format and signature, SPEC §11), the
/// MCP endpoint (JSON-RPC, `mcp.rs`), the metrics scrape, the console's
/// pages, forms and assets.
pub(crate) fn api<L>(console_layers: L) -> OpenApiRouter<Shared>
where
    L: Layer<Route> + Clone + Send + Sync + 'static,
    L::Service: Service<Request, Error = Infallible> + Clone + Send + Sync + 'static,
    <L::Service as Service<Request>>::Response: IntoResponse + 'static,
    <L::Service as Service<Request>>::Future: Send + 'static,
{
    let agent = agent_api();
    // Each route's own methods get the layers (`route_layer`), not the
    // method router's fallback: a method a route does not have is answered
    // 405 before any session is read or CSRF token asked for.
    let guarded = |(schemas, paths, methods): UtoipaMethodRouter<Shared>| {
        (schemas, paths, methods.route_layer(console_layers.clone()))
    };
    let console = OpenApiRouter::new()
        .routes(guarded(routes!(console::sign_in_json, console::sign_out_json)))
        .routes(guarded(routes!(passkey_sign_in::challenge)))
        .routes(guarded(routes!(passkey_sign_in::sign_in)))
        .routes(guarded(routes!(console::queue)))
        .routes(guarded(routes!(console::decide_json)))
        .routes(guarded(routes!(console::step_up_json)))
        .routes(guarded(routes!(bulk::step_up_json)))
        .routes(guarded(routes!(console::resolve_json)))
        .routes(guarded(routes!(console::rail_records_json)))
        .routes(guarded(routes!(evidence::console)))
        .routes(guarded(routes!(exports::payments)))
        .routes(guarded(routes!(payables::import_invoices)))
        .routes(guarded(routes!(batches::list)))
        .routes(guarded(routes!(batches::console_get)))
        .routes(guarded(routes!(batches::hold)))
        .routes(guarded(routes!(batches::decide)))
        .routes(guarded(routes!(passkeys::start)))
        .routes(guarded(routes!(passkeys::register, passkeys::list)))
        .routes(guarded(routes!(passkeys::remove)))
        .routes(guarded(routes!(passkeys::start_removal)))
        .routes(guarded(routes!(passkeys::notices)))
        .routes(guarded(routes!(passkeys::mark_notices_read)))
        .routes(guarded(routes!(reach::get)))
        .routes(guarded(routes!(reach::set_email)))
        .routes(guarded(routes!(reach::set_quiet_hours)))
        .routes(guarded(routes!(reach::subscribe)))
        .routes(guarded(routes!(reach::unsubscribe)))
        .routes(guarded(routes!(delegations::list, delegations::create)))
        .routes(guarded(routes!(delegations::end)))
        .routes(guarded(routes!(policy::status)))
        .routes(guarded(routes!(policy::backtest)))
        .routes(guarded(routes!(policy::propose)))
        .routes(guarded(routes!(policy::confirm)));
    // Registered under their full paths rather than nested: a nested router
    // rewrites every request's URI on the way in, on the status poll's path.
    OpenApiRouter::new()
        .merge(agent.merge(console))
        .route("/api/v1", any(|| async { ApiError::NotFound }))
        .route("/api/v1/{*rest}", any(|| async { ApiError::NotFound }))
        .routes(routes!(openapi_json))
        .routes(routes!(openapi_json_v1))
        .routes(routes!(jwks))
        .routes(routes!(log::info))
        .routes(routes!(log::checkpoint))
        .routes(routes!(log::inclusion))
        .routes(routes!(log::consistency))
        .routes(routes!(healthz))
        .routes(routes!(readyz))
}

/// The agent API's routes (documented through [`api`]); `/mcp` also calls
/// them in-process for its tools (`mcp.rs`).
pub(crate) fn agent_api() -> OpenApiRouter<Shared> {
    OpenApiRouter::new()
        .routes(routes!(agent::create, agent::list))
        .routes(routes!(agent::get))
        .routes(routes!(agent::cancel))
        .routes(routes!(agent::commit))
        .routes(routes!(evidence::agent))
        .routes(routes!(events::agent))
        .routes(routes!(events::proposal))
        .routes(routes!(payables::invoices))
        .routes(routes!(payables::invoice))
        .routes(routes!(payables::payees))
        .routes(routes!(batches::propose))
        .routes(routes!(batches::get))
        .routes(routes!(batches::cancel))
        .routes(routes!(batches::commit))
}

/// The console's icon: a check mark on the accent colour, plain SVG.
const FAVICON_SVG: &str = include_str!("../../assets/favicon.svg");

/// `GET /favicon.svg` (and `/favicon.ico`, which redirects here: browsers
/// ask for it whatever the page links).
async fn favicon() -> Response {
    built_in(FAVICON_SVG, "image/svg+xml", "public, max-age=86400")
}

/// A file compiled into the binary, with its type and cache lifetime.
fn built_in(body: &'static str, content_type: &'static str, cache: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    response
}

/// The browser side of passkeys: registration on the account page, step-up
/// on the approve and bulk forms (`assets/passkeys.js`).
const PASSKEYS_JS: &str = include_str!("../../assets/passkeys.js");

/// `GET /passkeys.js`
async fn passkeys_js() -> Response {
    built_in(PASSKEYS_JS, "text/javascript; charset=utf-8", "public, max-age=300")
}

const REACH_JS: &str = include_str!("../../assets/reach.js");

/// `GET /reach.js` — notification settings on the account page (`assets/reach.js`).
async fn reach_js() -> Response {
    built_in(REACH_JS, "text/javascript; charset=utf-8", "public, max-age=300")
}

const SERVICE_WORKER_JS: &str = include_str!("../../assets/sw.js");

/// `GET /sw.js` — the service worker that shows Web Push notifications
/// (`assets/sw.js`). Revalidated on every check, so a new version reaches
/// devices at once.
async fn service_worker() -> Response {
    built_in(SERVICE_WORKER_JS, "text/javascript; charset=utf-8", "no-cache")
}

const MANIFEST: &str = include_str!("../../assets/manifest.webmanifest");

/// `GET /manifest.webmanifest` — makes the console installable on a phone.
async fn manifest() -> Response {
    built_in(MANIFEST, "application/manifest+json", "public, max-age=3600")
}

const SESSION_JS: &str = include_str!("../../assets/session.js");

/// `GET /session.js` — the console's drafts and idle warning (`assets/session.js`).
async fn session_js() -> Response {
    built_in(SESSION_JS, "text/javascript; charset=utf-8", "public, max-age=300")
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
    // The database's gauges (backlogs, open operations) as of this scrape.
    if let Err(e) = crate::metrics::record_gauges(&state.db.read, state.now()).await {
        tracing::warn!(error = %e, "metrics: the database's gauges could not be read");
    }
    let mut response = state.metrics.render().into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    response
}

/// A year, never revalidated: the URL changes when the content does.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

fn assets_service(dir: &std::path::Path, cache: &'static str) -> axum::routing::MethodRouter {
    axum::routing::get_service(
        tower::ServiceBuilder::new()
            .layer(tower_http::set_header::SetResponseHeaderLayer::if_not_present(
                header::CACHE_CONTROL,
                HeaderValue::from_static(cache),
            ))
            // One URL, three encodings: a cache must key on what was asked.
            .layer(tower_http::set_header::SetResponseHeaderLayer::if_not_present(
                header::VARY,
                HeaderValue::from_static("accept-encoding"),
            ))
            // The `.br` and `.gz` files `scripts/site.sh` wrote beside each
            // asset, sent as they are (with `Vary: Accept-Encoding`): no
            // compression per request.
            .service(tower_http::services::ServeDir::new(dir).precompressed_br().precompressed_gzip()),
    )
}

/// Where the built assets are, and the version their URLs carry.
pub struct Assets {
    pub dir: std::path::PathBuf,
    /// The first 12 hex digits of a SHA-256 over every file's name and
    /// content: a new build is a new URL, so browsers never mix an old
    /// script with a new wasm.
    pub version: String,
}

impl Assets {
    pub fn of(site_root: &std::path::Path) -> Assets {
        use sha2::{Digest, Sha256};
        let dir = site_root.join("pkg");
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
            .map(|entries| entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_file()).collect())
            .unwrap_or_default();
        files.sort();
        let mut hash = Sha256::new();
        for file in &files {
            hash.update(file.file_name().map(|n| n.as_encoded_bytes()).unwrap_or_default());
            hash.update(std::fs::read(file).unwrap_or_default());
        }
        Assets { dir, version: hex::encode(&hash.finalize()[..6]) }
    }
}

fn leptos_options(state: &Shared, assets: &Assets) -> LeptosOptions {
    LeptosOptions::builder()
        .output_name("countersign")
        .site_root(state.settings.site_root.to_string_lossy().to_string())
        .site_pkg_dir(format!("pkg/{}", assets.version))
        .site_addr(state.settings.listen)
        .build()
}

/// This document
///
/// The OpenAPI 3.1 description of the agent and console APIs, with this
/// deployment's public URL as its server.
#[utoipa::path(
    get,
    path = "/openapi.json",
    operation_id = "getOpenApi",
    tags = ["agent", "public"],
    security(()),
    responses((status = 200, description = "The OpenAPI 3.1 description of the agent and console APIs.",
        content_type = "application/json", body = Object)),
)]
async fn openapi_json(State(state): State<Shared>) -> Json<utoipa::openapi::OpenApi> {
    Json(openapi::document(&state.settings.public_url))
}

/// This document, beside the rest of the API
///
/// The same document as `GET /openapi.json`, where a client looking under
/// the API's own prefix expects it.
#[utoipa::path(
    get,
    path = "/api/v1/openapi.json",
    operation_id = "getOpenApiUnderApi",
    tags = ["agent", "public"],
    security(()),
    responses((status = 200, description = "The OpenAPI 3.1 description of the agent and console APIs.",
        content_type = "application/json", body = Object)),
)]
async fn openapi_json_v1(state: State<Shared>) -> Json<utoipa::openapi::OpenApi> {
    openapi_json(state).await
}

/// A JSON Web Key Set (RFC 7517).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // the keys serialize themselves (`approval::keys`); this is their description
struct Jwks {
    keys: Vec<Jwk>,
}

/// A P-256 public key (RFC 7518 §6.2): one that signs approval tokens, or
/// the one that signs receipts (docs/EVIDENCE.md). The `kid` a token's or
/// receipt's header names picks it; a verifier also checks the JWS `typ`
/// (`countersign-approval+jwt` for a token), so a receipt key cannot pass
/// for a token key.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
struct Jwk {
    #[schema(pattern = "^EC$")]
    kty: String,
    #[schema(pattern = "^P-256$")]
    crv: String,
    /// base64url
    x: String,
    /// base64url
    y: String,
    kid: String,
    #[schema(pattern = "^ES256$")]
    alg: String,
    #[schema(rename = "use", pattern = "^sig$")]
    use_: String,
}

/// Approval-token verification keys
///
/// Every P-256 public key whose tokens may still be valid (the current key
/// and, after a rotation, the previous ones until their tokens expire), so a
/// rail or an auditor can verify an approval token independently.
#[utoipa::path(
    get,
    path = "/.well-known/jwks.json",
    operation_id = "getJwks",
    tag = "public",
    security(()),
    responses((status = 200, body = Jwks, description = "A JSON Web Key Set (RFC 7517).")),
)]
async fn jwks(State(state): State<Shared>) -> Response {
    let _ = state.keys.reload();
    let _ = state.receipt_keys.reload();
    // The token keys, then the receipt keys (docs/EVIDENCE.md): one set, by kid.
    let now = state.now();
    let mut set = state.keys.published_jwks(now);
    let receipts = state.receipt_keys.published_jwks(now);
    if let (Some(keys), Some(receipts)) = (set["keys"].as_array_mut(), receipts["keys"].as_array()) {
        keys.extend(receipts.iter().cloned());
    }
    let mut response = Json(set).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=60"));
    response
}

/// Liveness
///
/// The process is up and serving HTTP.
#[utoipa::path(
    get,
    path = "/healthz",
    operation_id = "healthz",
    tag = "public",
    security(()),
    responses((status = 200, body = String, description = "Alive: `ok`.", example = "ok")),
)]
async fn healthz() -> &'static str {
    "ok"
}

openapi::error_responses!(ReadyzErrors: InternalError);

/// Readiness
///
/// The server can take traffic: the database answers.
#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "readyz",
    tag = "public",
    security(()),
    responses((status = 200, body = String, description = "Ready: `ready`.", example = "ready"), ReadyzErrors),
)]
async fn readyz(State(state): State<Shared>) -> Response {
    match state.db.ping().await {
        Ok(_) => "ready".into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// The security headers of every response, set by one plain layer (nothing
/// boxed or allocated per request): no framing, no referrer, no sniffing;
/// `Cache-Control: no-store` unless the route set its own (nothing we answer
/// may be stored by a browser or a proxy: signed-in pages, console JSON,
/// approval tokens in status polls; the built assets and the JWKS set
/// theirs); a Content-Security-Policy that allows nothing unless the route
/// set its own (pages set one with the hydration script's nonce).
#[derive(Clone, Copy, Default)]
pub struct SecurityHeadersLayer;

const NO_STORE: HeaderValue = HeaderValue::from_static("no-store");
const NOTHING_ALLOWED: HeaderValue =
    HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");

fn set_security_headers(headers: &mut axum::http::HeaderMap) {
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.entry(header::CACHE_CONTROL).or_insert(NO_STORE);
    headers.entry(header::CONTENT_SECURITY_POLICY).or_insert(NOTHING_ALLOWED);
}

impl<S> Layer<S> for SecurityHeadersLayer {
    type Service = SecurityHeaders<S>;

    fn layer(&self, inner: S) -> SecurityHeaders<S> {
        SecurityHeaders { inner }
    }
}

#[derive(Clone)]
pub struct SecurityHeaders<S> {
    inner: S,
}

impl<S, B, R> Service<axum::http::Request<B>> for SecurityHeaders<S>
where
    S: Service<axum::http::Request<B>, Response = axum::http::Response<R>>,
{
    type Response = axum::http::Response<R>;
    type Error = S::Error;
    type Future = SecurityHeadersFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: axum::http::Request<B>) -> Self::Future {
        SecurityHeadersFuture { inner: self.inner.call(req) }
    }
}

pin_project_lite::pin_project! {
    pub struct SecurityHeadersFuture<F> {
        #[pin]
        inner: F,
    }
}

impl<F, R, E> std::future::Future for SecurityHeadersFuture<F>
where
    F: std::future::Future<Output = Result<axum::http::Response<R>, E>>,
{
    type Output = Result<axum::http::Response<R>, E>;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        let mut result = std::task::ready!(self.project().inner.poll(cx));
        if let Ok(response) = &mut result {
            set_security_headers(response.headers_mut());
        }
        std::task::Poll::Ready(result)
    }
}
