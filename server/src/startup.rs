//! `countersign serve`: open the database, reach the rail (or start the
//! bundled simulator), start background tasks, bind, serve until
//! SIGINT/SIGTERM, then drain (in-flight commits finish).

use std::io::Write;
use std::path::PathBuf;
use tokio::net::TcpListener;

use crate::config::Settings;
use crate::platform::shutdown::Shutdown;
use crate::state::{AppState, Shared};
use crate::store::{self, Db};

/// Where `serve` writes the in-process simulator's URL, for `countersign reconcile`.
pub fn simulator_url_file(settings: &Settings) -> PathBuf {
    settings.data_dir.join("rail-sim.url")
}

/// The rail of a command that is not `serve`: `rail.url`, else the bundled
/// simulator a running `serve` started (its URL file).
pub fn configured_rail_url(settings: &Settings) -> Option<String> {
    settings.rail.url.clone().or_else(|| {
        std::fs::read_to_string(simulator_url_file(settings))
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    })
}

/// The signing keys in `data_dir`, made private (0700) first on every
/// backend: on PostgreSQL no database file does it, yet the directory still
/// holds the keys and the bundled simulator's ledger.
fn open_keys(settings: &Settings) -> anyhow::Result<crate::decision::approval::keys::KeyStore> {
    let data_dir = &settings.data_dir;
    store::ensure_private_dir(data_dir)
        .map_err(|source| store::OpenError::DataDir { path: data_dir.display().to_string(), source })?;
    Ok(crate::decision::approval::keys::KeyStore::open_or_create(data_dir)?)
}

/// The shared state for a command that does not serve (no rail calls unless
/// a rail is configured or a server's simulator is running).
pub async fn offline_state(settings: Settings) -> anyhow::Result<(Shared, crate::platform::shutdown::Trigger)> {
    let db = Db::connect(&settings.backend()?).await?;
    crate::store::policies::refresh(&db.read, &settings.policies).await?;
    let keys = open_keys(&settings)?;
    // Port 9 (discard) on loopback: any call fails fast as "unknown", never as a decline.
    let url = configured_rail_url(&settings).unwrap_or_else(|| "http://127.0.0.1:9".into());
    let rails = crate::rail::build(&settings, &url, &db)?;
    let (trigger, shutdown) = crate::platform::shutdown::channel();
    Ok((AppState::new(db, settings, keys, rails, shutdown)?, trigger))
}

/// A server that listens and runs its background tasks, before it serves:
/// what `serve` runs, and what the black-box tests run in-process.
pub struct Bound {
    addr: std::net::SocketAddr,
    listener: TcpListener,
    state: Shared,
    trigger: crate::platform::shutdown::Trigger,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    simulator: Option<tokio::task::JoinHandle<()>>,
    /// The in-process rail simulator's URL, when `rail.url` is not set.
    pub simulator_url: Option<String>,
    /// What loading the demo tenant did, when it was asked for and done.
    pub demo_summary: Option<String>,
}

/// Opens the database, reaches the rail (or starts the bundled simulator),
/// binds `settings.listen` and starts the background tasks. Prints nothing
/// and installs no signal handler: the caller decides when to stop.
pub async fn bind(mut settings: Settings, demo: bool) -> anyhow::Result<Bound> {
    if demo {
        crate::platform::demo::escalation_defaults(&mut settings);
    }
    let db = Db::connect(&settings.backend()?).await?;
    // What the identity provider's groups grant, under the mapping now configured.
    crate::people::groups::refresh_all(&db, &settings).await?;
    // The policies confirmed changes set win over the config's files.
    crate::store::policies::refresh(&db.read, &settings.policies).await?;
    let keys = open_keys(&settings)?;
    let (rail_url, simulator) = match &settings.rail.url {
        Some(url) => (url.clone(), None),
        None => {
            let sim_db = settings.data_dir.join("rail-sim.db");
            let (addr, task) = crate::rail::sim::spawn(
                settings.rail.simulator_listen,
                &sim_db,
                crate::rail::sim::SimOptions::default(),
            )
            .await?;
            let url = format!("http://{addr}");
            std::fs::write(simulator_url_file(&settings), &url)?;
            (url, Some(task))
        }
    };
    let simulator_url = simulator.as_ref().map(|_| rail_url.clone());
    let rails = crate::rail::build(&settings, &rail_url, &db)?;
    let listener = listen(settings.listen).map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", settings.listen))?;
    let addr = listener.local_addr()?;

    let (trigger, shutdown) = crate::platform::shutdown::channel();
    let state = AppState::new(db.clone(), settings, keys, rails, shutdown.clone())?;
    if state.hooks.any() {
        tracing::warn!(hooks = ?state.hooks, "TEST HOOKS ARE SET: never run a deployment like this");
    }
    let mut demo_summary = None;
    if demo && store::directory::count_tenants(&db.read).await? == 0 {
        demo_summary = Some(crate::platform::demo::load(&state).await?.to_string());
    }
    if simulator.is_some() && db.is_postgres() {
        tracing::warn!(
            "rail.url is unset: this process runs its own bundled rail simulator; with several instances on one \
             PostgreSQL database set rail.url to one shared rail (docs/DEPLOY.md)"
        );
    }
    let tasks = background(&state, &shutdown);
    tracing::info!(%addr, public_url = %state.settings.public_url, rail = %rail_url, "serving");
    Ok(Bound { addr, listener, state, trigger, tasks, simulator, simulator_url, demo_summary })
}

impl Bound {
    /// The address it listens on (the real port when `listen` asked for port 0).
    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// Serves until `stop` resolves, then drains: in-flight requests and
    /// commits finish, long-polls return, background tasks end, the
    /// database is closed.
    pub async fn serve_until(self, stop: impl std::future::Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
        let Bound { listener, state, trigger, tasks, simulator, .. } = self;
        let db = state.db.clone();
        let app = crate::http::app(state);
        crate::http::connections::serve(
            listener,
            app,
            async move {
                stop.await;
                tracing::info!("shutting down: finishing in-flight requests");
            },
            // After the connections know of the drain: a long-poll woken
            // here is answered with `connection: close`.
            move || trigger.fire(),
        )
        .await;
        for task in tasks {
            let _ = task.await;
        }
        if let Some(task) = simulator {
            task.abort();
        }
        db.close().await;
        Ok(())
    }
}

pub async fn serve(settings: Settings, demo: bool) -> anyhow::Result<()> {
    let bound = bind(settings, demo).await?;
    if let Some(url) = &bound.simulator_url {
        println!("rail simulator (in-process) listening on {url}");
    }
    if let Some(summary) = &bound.demo_summary {
        println!("{summary}");
    }
    // Tests and scripts read this line to learn the port: keep its shape.
    println!("countersign listening on http://{}", bound.addr());
    std::io::stdout().flush()?;
    bound.serve_until(wait_for_signal()).await
}

/// Connections the kernel may queue before the server accepts them (capped
/// by `net.core.somaxconn`): a burst of agents reconnecting their
/// long-polls at once is queued rather than refused (tokio's default is
/// 1,024).
const LISTEN_BACKLOG: u32 = 4_096;

fn listen(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

fn background(state: &Shared, shutdown: &Shutdown) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks = Vec::new();
    if !state.db.is_postgres() {
        // SQLite's WAL is copied back off the writer's thread.
        let (dir, priority, shutdown) = (state.settings.data_dir.clone(), state.db.priority.clone(), shutdown.clone());
        tasks.push(tokio::spawn(async move { store::checkpoints(&dir, &priority, &shutdown).await }));
    }
    tasks.extend([
        tokio::spawn(crate::decision::expiry::run(state.clone(), shutdown.clone())),
        tokio::spawn(crate::commit::operations::run(state.clone(), shutdown.clone())),
        tokio::spawn(crate::notify::slack::outbox::run(state.clone(), shutdown.clone())),
        tokio::spawn(crate::notify::teams::outbox::run(state.clone(), shutdown.clone())),
        tokio::spawn(crate::notify::worker::run(state.clone(), shutdown.clone())),
        tokio::spawn(crate::notify::webhooks::run(state.clone(), shutdown.clone())),
        tokio::spawn(crate::platform::changes::follow(state.clone(), shutdown.clone())),
        crate::intake::proposals::group_commit::spawn(state.clone(), shutdown.clone()),
        tokio::spawn(crate::evidence::tlog::run(state.clone(), shutdown.clone())),
        tokio::spawn(crate::evidence::exports::run(state.clone(), shutdown.clone())),
        tokio::spawn(metrics_upkeep(state.clone(), shutdown.clone())),
        tokio::spawn(policy_refresh(state.clone(), shutdown.clone())),
    ]);
    tasks
}

/// Every few seconds, the policies confirmed on any instance are laid over
/// the config's (one small read; nothing changes when none was confirmed).
async fn policy_refresh(state: Shared, shutdown: Shutdown) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(crate::decision::policy::REFRESH_EVERY) => {
                if let Err(error) = crate::store::policies::refresh(&state.db.read, &state.settings.policies).await {
                    tracing::warn!(%error, "reading the confirmed policies failed; the ones in force stay");
                }
            }
            _ = shutdown.wait() => return,
        }
    }
}

/// Every few seconds, the request histograms' samples go into their buckets
/// (`Metrics::upkeep`): memory stays flat whether or not anyone scrapes.
async fn metrics_upkeep(state: Shared, shutdown: Shutdown) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_secs(5)) => {
                state.db.priority.yield_to_foreground().await;
                state.metrics.upkeep()
            }
            _ = shutdown.wait() => return,
        }
    }
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
