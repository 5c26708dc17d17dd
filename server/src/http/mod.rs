//! HTTP: the agent API, the console (Leptos), health, and the layers every
//! response goes through (request id, security headers).

pub mod agent;
pub mod error;
pub mod extract;
pub mod openapi;

use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use leptos::config::LeptosOptions;
use leptos_axum::{generate_route_list, LeptosRoutes};
use rand::RngCore;

use crate::state::Shared;
use error::{ApiError, REQUEST_ID};

/// Every route of the server.
pub fn router(state: Shared) -> Router {
    let api = Router::new()
        .route("/proposals", post(agent::create).get(agent::list))
        .route("/proposals/{id}", get(agent::get))
        .route("/proposals/{id}/cancel", post(agent::cancel))
        .fallback(|| async { ApiError::NotFound })
        .with_state(state.clone());

    let leptos_options = leptos_options(&state);
    let routes = generate_route_list(app::App);
    let console = Router::new()
        .leptos_routes(&leptos_options, routes, {
            let options = leptos_options.clone();
            move || app::shell(options.clone())
        })
        .fallback(leptos_axum::file_and_error_handler(app::shell))
        .with_state(leptos_options);

    Router::new()
        .nest("/api/v1", api)
        .route("/openapi.json", get(openapi_json))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(state)
        .merge(console)
        .layer(middleware::from_fn(request_context))
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

async fn readyz(State(state): State<Shared>) -> Response {
    match sqlx::query("SELECT 1").execute(&state.db.read).await {
        Ok(_) => "ready".into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// Gives every request an id (echoed in `X-Request-Id` and error bodies) and
/// sets the security headers on every response.
async fn request_context(req: Request, next: Next) -> Response {
    let mut bytes = [0u8; 12];
    rand::thread_rng().fill_bytes(&mut bytes);
    let id = format!("req_{}", hex::encode(bytes));
    let mut response = REQUEST_ID.scope(id.clone(), next.run(req)).await;
    let headers = response.headers_mut();
    for (name, value) in [
        ("x-request-id", id.as_str()),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        ("x-content-type-options", "nosniff"),
    ] {
        if let Ok(v) = HeaderValue::from_str(value) {
            headers.insert(HeaderName::from_static(name), v);
        }
    }
    response
}
