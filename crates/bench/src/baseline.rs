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

/// The line the commit floor prints once bound.
pub const FLOOR_LISTENING: &str = "bench-commit-floor listening on ";

/// What the commit floor's handler shares: its database, written by one
/// connection as the product's writer is, and a client for the rail.
struct Floor {
    db: sqlx::SqlitePool,
    rail: reqwest::Client,
    transfers: String,
}

/// The commit benchmark's floor (`countersign-bench commit-floor`): the
/// least any commit that keeps Countersign's contract on SQLite can do on
/// this machine — one durable write before the rail is called, the call,
/// one durable write of its answer — and nothing else: no token, no reads,
/// no checks, no receipts, no audit trail. The same stack as
/// `countersign serve`: axum on this runtime, sqlx's SQLite driver with
/// one writer connection (WAL, `synchronous = FULL`), reqwest to the rail.
/// Not part of the product; `countersign-bench suite --only commit` runs it
/// beside the real server to show how much of a commit's time the machine
/// itself sets.
pub async fn commit_floor(listen: SocketAddr, rail: &str, db: &std::path::Path) -> anyhow::Result<()> {
    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
    let options = SqliteConnectOptions::new()
        .filename(db)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full);
    let db = SqlitePoolOptions::new().max_connections(1).connect_with(options).await?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS operations (id TEXT PRIMARY KEY, body TEXT NOT NULL, \
         status TEXT NOT NULL, answer TEXT)",
    )
    .execute(&db)
    .await?;
    let floor = std::sync::Arc::new(Floor {
        db,
        rail: reqwest::Client::builder().build()?,
        transfers: format!("{}/v1/transfers", rail.trim_end_matches('/')),
    });
    let listener = TcpListener::bind(listen).await?;
    println!("{FLOOR_LISTENING}http://{}", listener.local_addr()?);
    std::io::stdout().flush()?;
    let app = Router::new().route("/api/v1/proposals/{id}/commit", axum::routing::post(floor_commit)).with_state(floor);
    axum::serve(listener, app).await?;
    Ok(())
}

async fn floor_commit(
    axum::extract::State(floor): axum::extract::State<std::sync::Arc<Floor>>,
    Path(id): Path<String>,
    body: String,
) -> Result<Json<Value>, (axum::http::StatusCode, String)> {
    let failed = |e: &dyn std::fmt::Display| (axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string());
    sqlx::query("INSERT INTO operations (id, body, status) VALUES (?, ?, 'pending')")
        .bind(&id)
        .bind(&body)
        .execute(&floor.db)
        .await
        .map_err(|e| failed(&e))?;
    // The form the server's connector sends (as the benchmark's direct calls do).
    let form = crate::commit::rail_form(&id, &id);
    let answer = floor
        .rail
        .post(&floor.transfers)
        .header("idempotency-key", format!("floor-{id}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .map_err(|e| failed(&e))?;
    let status = answer.status();
    let text = answer.text().await.map_err(|e| failed(&e))?;
    sqlx::query("UPDATE operations SET status = ?, answer = ? WHERE id = ?")
        .bind(if status.is_success() { "sent" } else { "failed" })
        .bind(&text)
        .bind(&id)
        .execute(&floor.db)
        .await
        .map_err(|e| failed(&e))?;
    if !status.is_success() {
        // The benchmark stops at an answer other than 200: a floor whose
        // rail calls fail would measure something else.
        return Err((axum::http::StatusCode::BAD_GATEWAY, format!("the rail answered {status}: {text}")));
    }
    Ok(Json(json!({"id": id, "status": "executing"})))
}
