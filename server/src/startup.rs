//! `countersign serve`: open the database, start background tasks, bind,
//! serve until SIGINT/SIGTERM, then drain.

use std::io::Write;
use tokio::net::TcpListener;

use crate::config::Settings;
use crate::state::AppState;
use crate::store::{self, Db};

pub async fn serve(settings: Settings, demo: bool) -> anyhow::Result<()> {
    let db = Db::open(&settings.data_dir).await?;
    let keys = crate::approval::keys::KeyStore::open_or_create(&settings.data_dir)?;
    if demo && store::directory::count_tenants(&db.read).await? == 0 {
        let summary = crate::demo::load(&db, &settings, &keys).await?;
        println!("{summary}");
    }
    let listener = TcpListener::bind(settings.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", settings.listen))?;
    let addr = listener.local_addr()?;

    let (trigger, shutdown) = crate::shutdown::channel();
    let state = AppState::new(db.clone(), settings, keys, shutdown.clone());
    let housekeeping = tokio::spawn(crate::expiry::run(state.clone(), shutdown.clone()));
    let sessions = tower_sessions_sqlx_store::SqliteStore::new(db.write.clone());
    sessions.migrate().await?;
    let app =
        crate::http::router(state.clone(), sessions).into_make_service_with_connect_info::<std::net::SocketAddr>();

    // Tests and scripts read this line to learn the port: keep its shape.
    println!("countersign listening on http://{addr}");
    std::io::stdout().flush()?;
    tracing::info!(%addr, public_url = %state.settings.public_url, "serving");

    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            wait_for_signal().await;
            tracing::info!("shutting down: finishing in-flight requests");
            trigger.fire();
        })
        .await?;
    let _ = housekeeping.await;
    db.close().await;
    Ok(())
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
