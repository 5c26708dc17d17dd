//! The baseline of the status-poll benchmark (`countersign-bench baseline`):
//! the smallest useful axum server, with the runtime `countersign serve`
//! gets, serving a small JSON document on the status-poll path.
//! `countersign-bench` compares the real endpoint against it. Not part of
//! the product: no state, no database, no middleware.

use axum::extract::Path;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::io::Write;
use std::net::SocketAddr;
use tokio::net::TcpListener;

/// The line printed once bound; the benchmark reads the address from it.
pub const LISTENING: &str = "bench-baseline listening on ";

async fn status(Path(id): Path<String>) -> Json<Value> {
    Json(json!({"id": id, "status": "pending_approval", "version": 1}))
}

/// Serves until the process is killed.
pub async fn run(listen: SocketAddr) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen).await?;
    println!("{LISTENING}http://{}", listener.local_addr()?);
    std::io::stdout().flush()?;
    let app = Router::new().route("/api/v1/proposals/{id}", get(status));
    axum::serve(listener, app).await?;
    Ok(())
}
