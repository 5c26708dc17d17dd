//! `countersign-bench`: the benchmarks and the soak test (docs/BENCHMARKS.md).
//!
//! Everything runs against real processes on loopback: `countersign serve`
//! (the release binary next to this one, or `--bin`), `countersign rail-sim`
//! and `countersign-bench baseline` (this binary again), each with its own
//! SQLite files on disk under `--work-dir`. This process is the client.
//!
//! ```text
//! countersign-bench suite [--only poll,intake,commit,longpoll,queue,wasm,notify] [--connections 32] [--duration 10]
//! countersign-bench suite --postgres postgres://…/DB --only pg-intake,pg-poll   # PostgreSQL, two instances
//! countersign-bench soak [--minutes 2]
//! countersign-bench baseline [--listen 127.0.0.1:0]   # the status poll's baseline server
//! countersign-bench commit-floor --rail URL --db FILE  # the commit's floor (suite --only commit runs it)
//! ```

mod backtest;
mod baseline;
mod client;
mod commit;
mod env;
mod intake;
mod longpoll;
mod notify;
mod pg;
mod poll;
mod queue;
mod rails;
mod soak;
mod stats;
mod suite;
mod wasm;

use anyhow::Context;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// The same allocator as `countersign serve`, so the baselines served by
/// this binary (`baseline`) are measured on equal terms.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(name = "countersign-bench", about = "Benchmarks and soak test for countersign")]
struct Cli {
    /// The `countersign` binary under test (default: the one next to this binary).
    #[arg(long, global = true)]
    bin: Option<PathBuf>,
    /// Scratch directory for the databases and logs of each run (emptied per benchmark).
    #[arg(long, global = true, default_value = "data/bench")]
    work_dir: PathBuf,
    /// The built console (`site_root`, containing `pkg/`).
    #[arg(long, global = true, default_value = "target/site")]
    site_root: PathBuf,
    /// Worker threads of this client's runtime (the server has its own).
    #[arg(long, global = true, default_value_t = 1)]
    client_threads: usize,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the benchmarks and print each figure with its baseline and goal.
    Suite(suite::SuiteArgs),
    /// Mixed traffic with rail faults, then consistency checks.
    Soak(soak::SoakArgs),
    /// The status-poll benchmark's baseline: a minimal axum server.
    Baseline {
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
    },
    /// The commit benchmark's floor: two durable SQLite writes around a rail
    /// call, nothing else (not the product).
    CommitFloor {
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
        /// The rail simulator's base URL.
        #[arg(long)]
        rail: String,
        /// The floor's own SQLite file.
        #[arg(long)]
        db: PathBuf,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if let Command::Baseline { listen } = cli.command {
        // The same runtime `countersign serve` gets (`#[tokio::main]`).
        return tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(baseline::run(listen));
    }
    if let Command::CommitFloor { listen, rail, db } = &cli.command {
        return tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(baseline::commit_floor(*listen, rail, db));
    }
    let limit = env::raise_nofile();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cli.client_threads.max(1))
        .enable_all()
        .build()
        .context("building the client runtime")?;
    let bin = match &cli.bin {
        Some(bin) => bin.clone(),
        None => std::env::current_exe()?.with_file_name("countersign"),
    };
    anyhow::ensure!(bin.exists(), "{} does not exist (build it, or pass --bin)", bin.display());
    let env = env::Env { bin, work: std::path::absolute(&cli.work_dir)?, site_root: cli.site_root.clone() };
    std::fs::create_dir_all(&env.work)?;
    println!("open-file limit {limit} (inherited by the servers); client threads {}", cli.client_threads.max(1));
    let code = runtime.block_on(async {
        match &cli.command {
            Command::Suite(args) => suite::run(&env, args).await,
            Command::Soak(args) => soak::run(&env, args).await,
            Command::Baseline { .. } | Command::CommitFloor { .. } => unreachable!("served above"),
        }
    })?;
    std::process::exit(code);
}
