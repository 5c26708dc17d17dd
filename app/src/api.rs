//! Server functions: the pages' read-only data calls. They parse, call one
//! port method with the signed-in viewer, and map the result; every state
//! change goes through a plain form post to the server instead (so it works
//! without JavaScript and passes the CSRF guard).

use leptos::prelude::*;
use leptos::server_fn::codec::GetUrl;

use crate::codec::MiniJson;
use crate::views::{
    AdminData, BatchList, BatchReview, BulkPage, ConsoleError, HumanLoopPage, OperationsPage, PolicyPage,
    ProposalDetail, QueuePage, ResolvePage,
};

#[cfg(feature = "ssr")]
fn context() -> Result<(crate::console::Port, crate::views::Viewer), ServerFnError> {
    let port = use_context::<crate::console::Port>().ok_or_else(|| failure(ConsoleError::Unavailable))?;
    let viewer = use_context::<crate::views::Viewer>().ok_or_else(|| failure(ConsoleError::SignInRequired))?;
    Ok((port, viewer))
}

/// Errors carry only a fixed code; the page turns it into a fixed message.
/// The HTTP status says the same (a server function's answer, or the page
/// rendered around it): 401 signed out, 403, 404, 503 — never a 500 for a
/// session that ended, never a 200 for a proposal that does not exist.
#[cfg(feature = "ssr")]
fn failure(e: ConsoleError) -> ServerFnError {
    use http::StatusCode;
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(match e {
            ConsoleError::SignInRequired => StatusCode::UNAUTHORIZED,
            ConsoleError::Forbidden => StatusCode::FORBIDDEN,
            ConsoleError::NotFound => StatusCode::NOT_FOUND,
            ConsoleError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        });
    }
    ServerFnError::new(e.code())
}

/// The `ConsoleError` a failed call stands for.
pub fn console_error(e: &ServerFnError) -> ConsoleError {
    match e {
        ServerFnError::ServerError(code) => ConsoleError::from_code(code),
        _ => ConsoleError::Unavailable,
    }
}

#[server(input = GetUrl, output = MiniJson, prefix = "/console", endpoint = "queue")]
pub async fn load_queue(#[server(default)] query: String) -> Result<QueuePage, ServerFnError> {
    let (port, viewer) = context()?;
    port.0.queue(&viewer, query).await.map_err(failure)
}

#[server(input = GetUrl, output = MiniJson, prefix = "/console", endpoint = "proposal")]
pub async fn load_proposal(id: String) -> Result<ProposalDetail, ServerFnError> {
    let (port, viewer) = context()?;
    port.0.proposal(&viewer, id).await.map_err(failure)
}

#[server(input = GetUrl, output = MiniJson, prefix = "/console", endpoint = "bulk")]
pub async fn load_bulk(query: String) -> Result<BulkPage, ServerFnError> {
    let (port, viewer) = context()?;
    port.0.bulk(&viewer, query).await.map_err(failure)
}

#[server(input = GetUrl, output = MiniJson, prefix = "/console", endpoint = "admin")]
pub async fn load_admin() -> Result<AdminData, ServerFnError> {
    let (port, viewer) = context()?;
    port.0.admin(&viewer).await.map_err(failure)
}

#[server(input = GetUrl, output = MiniJson, prefix = "/console", endpoint = "policy")]
pub async fn load_policy() -> Result<PolicyPage, ServerFnError> {
    let (port, viewer) = context()?;
    port.0.policy(&viewer).await.map_err(failure)
}

#[server(input = GetUrl, output = MiniJson, prefix = "/console", endpoint = "human-loop")]
pub async fn load_human_loop() -> Result<HumanLoopPage, ServerFnError> {
    let (port, viewer) = context()?;
    port.0.human_loop(&viewer).await.map_err(failure)
}

#[server(input = GetUrl, output = MiniJson, prefix = "/console", endpoint = "operations")]
pub async fn load_operations() -> Result<OperationsPage, ServerFnError> {
    let (port, viewer) = context()?;
    port.0.operations(&viewer).await.map_err(failure)
}

#[server(input = GetUrl, output = MiniJson, prefix = "/console", endpoint = "resolution")]
pub async fn load_resolution(id: String) -> Result<ResolvePage, ServerFnError> {
    let (port, viewer) = context()?;
    port.0.resolution(&viewer, id).await.map_err(failure)
}

#[server(input = GetUrl, output = MiniJson, prefix = "/console", endpoint = "batches")]
pub async fn load_batches() -> Result<BatchList, ServerFnError> {
    let (port, viewer) = context()?;
    port.0.batches(&viewer).await.map_err(failure)
}

#[server(input = GetUrl, output = MiniJson, prefix = "/console", endpoint = "batch")]
pub async fn load_batch(id: String) -> Result<BatchReview, ServerFnError> {
    let (port, viewer) = context()?;
    port.0.batch(&viewer, id).await.map_err(failure)
}

/// How many pending proposals the signed-in user may approve now; zero when
/// signed out (the page titles carry it).
#[server(input = GetUrl, output = MiniJson, prefix = "/console", endpoint = "waiting")]
pub async fn load_waiting_count() -> Result<u32, ServerFnError> {
    let Some(viewer) = use_context::<crate::views::Viewer>() else { return Ok(0) };
    let port = use_context::<crate::console::Port>().ok_or_else(|| failure(ConsoleError::Unavailable))?;
    port.0.waiting_count(&viewer).await.map_err(failure)
}

/// Long-poll: returns once more than `seen` changes have been published (at
/// once if that happened already, or after 25 s) with the count then, so the
/// queue refreshes itself without a reload and misses no change made while
/// no poll was waiting.
#[server(input = GetUrl, output = MiniJson, prefix = "/console", endpoint = "changes")]
pub async fn wait_for_change(seen: u64) -> Result<u64, ServerFnError> {
    let (port, _viewer) = context()?;
    Ok(port.0.wait_for_change(25, seen).await)
}

/// In the browser: waits for published changes from `seen` on (the count the
/// page's data was read at, so nothing made between rendering and the first
/// wait is missed) and calls `changed` after each; stops when `changed`
/// returns false (the page is gone). The queue and the operations page
/// refresh themselves with it.
#[cfg(feature = "hydrate")]
pub fn follow_changes(mut seen: u64, changed: impl Fn() -> bool + 'static) {
    leptos::task::spawn_local(async move {
        while let Ok(now) = wait_for_change(seen).await {
            if now != seen && !changed() {
                break;
            }
            seen = now;
        }
    });
}
