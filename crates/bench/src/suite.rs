//! The benchmark suite: runs the selected benchmarks in order and prints
//! every figure next to its goal.

use clap::Args;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::env::{loadavg, Env};
use crate::stats::LoadSpec;

/// The benchmarks, in the order they run.
pub const ALL: [&str; 10] =
    ["poll", "intake", "commit", "commit-stripe", "commit-bank", "longpoll", "queue", "wasm", "notify", "backtest"];
/// The PostgreSQL benchmarks, run after those when `--postgres` is given.
pub const ON_POSTGRES: [&str; 3] = ["pg-intake", "pg-poll", "pg-scale"];

#[derive(Args, Debug, Clone)]
pub struct SuiteArgs {
    /// Only these benchmarks (comma-separated): poll, intake, commit, commit-stripe, commit-bank,
    /// longpoll, queue, wasm, notify, backtest,
    /// and with `--postgres` pg-intake, pg-poll, pg-scale.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// A PostgreSQL server (`postgres://…/DB`, DB used to create one fresh
    /// database per benchmark): adds pg-intake, pg-poll and pg-scale, two instances each.
    #[arg(long)]
    pub postgres: Option<String>,
    /// pg-scale: the CPU each instance may use, in cores (a cgroup's quota),
    /// as if each ran on a machine of its own.
    #[arg(long, default_value_t = 0.25)]
    pub instance_cpus: f64,
    #[command(flatten)]
    pub load: LoadArgs,
    /// Commits measured by `commit` (after 20 warm-up commits).
    #[arg(long, default_value_t = 300)]
    pub commits: usize,
    /// Concurrent long-polls held by `longpoll`.
    #[arg(long, default_value_t = 100_000)]
    pub longpolls: usize,
    /// Proposals seeded for `queue`.
    #[arg(long, default_value_t = 100_000)]
    pub proposals: usize,
    /// ... of which pending.
    #[arg(long, default_value_t = 10_000)]
    pub pending: usize,
    /// Timed requests of the queue page (more for `/`, a quarter for the variants).
    #[arg(long, default_value_t = 200)]
    pub page_requests: usize,
}

/// Settings of the throughput runs (`poll`, `intake`), the same for the
/// server and its baseline. The machine is shared, so the two targets are
/// measured in alternating rounds (baseline, server, baseline, server, ...)
/// and each figure is the total of its rounds: a change of background load
/// hits both alike.
#[derive(Args, Debug, Clone, Copy)]
pub struct LoadArgs {
    /// Concurrent connections (one request in flight on each).
    #[arg(long, default_value_t = 32)]
    pub connections: usize,
    /// Measured seconds per target, split over the rounds.
    #[arg(long, default_value_t = 12)]
    pub duration: u64,
    /// Alternating rounds per target.
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Warm-up seconds at the start of every round (new connections).
    #[arg(long, default_value_t = 1)]
    pub warmup: u64,
}

impl LoadArgs {
    /// The spec of one round against `addr`.
    pub fn spec(&self, addr: SocketAddr) -> LoadSpec {
        LoadSpec {
            addr,
            connections: self.connections,
            warmup: Duration::from_secs(self.warmup),
            duration: Duration::from_secs(self.duration) / self.rounds.max(1),
        }
    }
}

/// One result line: what was measured, against which goal.
pub struct Figure {
    pub name: &'static str,
    pub value: String,
    pub goal: &'static str,
    pub met: bool,
}

impl Figure {
    pub fn new(name: &'static str, value: String, goal: &'static str, met: bool) -> Figure {
        Figure { name, value, goal, met }
    }
}

pub async fn run(env: &Env, args: &SuiteArgs) -> anyhow::Result<i32> {
    let known: Vec<&str> =
        ALL.iter().chain(args.postgres.is_some().then_some(&ON_POSTGRES).into_iter().flatten()).copied().collect();
    let selected: Vec<&str> = if args.only.is_empty() {
        known.clone()
    } else {
        for name in &args.only {
            anyhow::ensure!(
                known.contains(&name.as_str()),
                "unknown benchmark `{name}` (one of {}{})",
                known.join(", "),
                if args.postgres.is_none() { "; pg-intake, pg-poll and pg-scale need --postgres" } else { "" }
            );
        }
        known.iter().copied().filter(|b| args.only.iter().any(|o| o == b)).collect()
    };
    let postgres = args.postgres.as_deref().unwrap_or_default();
    println!("countersign-bench: {}", selected.join(", "));
    println!("  binary {}", env.bin.display());
    println!(
        "  load settings: {} connections; per target {} rounds of {} s warm-up + {:.1} s measured, alternating",
        args.load.connections,
        args.load.rounds.max(1),
        args.load.warmup,
        args.load.duration as f64 / f64::from(args.load.rounds.max(1))
    );
    let started = Instant::now();
    let mut figures = Vec::new();
    for bench in selected {
        println!("\n== {bench} (load average {})", loadavg());
        let t = Instant::now();
        let result = match bench {
            "poll" => crate::poll::run(env, &args.load).await,
            "intake" => crate::intake::run(env, &args.load).await,
            "commit" => crate::commit::run(env, args.commits).await,
            "commit-stripe" => crate::rails::stripe(env, args.commits).await,
            "commit-bank" => crate::rails::bank(env, args.commits).await,
            "longpoll" => {
                async {
                    let mut figures = crate::longpoll::run(env, args.longpolls).await?;
                    figures.extend(crate::longpoll::run_http2(env, args.longpolls).await?);
                    Ok(figures)
                }
                .await
            }
            "queue" => {
                let q = crate::queue::QueueArgs {
                    proposals: args.proposals,
                    pending: args.pending,
                    requests: args.page_requests,
                };
                crate::queue::run(env, &q).await
            }
            "wasm" => crate::wasm::run(&env.site_root).await,
            "notify" => crate::notify::run(env, &args.load).await,
            "backtest" => crate::backtest::run(env, args.proposals).await,
            "pg-intake" => crate::pg::intake(env, &args.load, postgres).await,
            "pg-poll" => crate::pg::poll(env, &args.load, postgres).await,
            "pg-scale" => crate::pg::scale(env, &args.load, postgres, args.instance_cpus).await,
            _ => unreachable!("checked above"),
        };
        match result {
            Ok(f) => figures.extend(f),
            Err(e) => {
                println!("  FAILED: {e:#}");
                figures.push(Figure::new(bench_name(bench), format!("did not run: {e:#}"), "-", false));
            }
        }
        println!("  ({:.1} s)", t.elapsed().as_secs_f64());
    }
    println!("\n== summary ({:.0} s, load average now {})", started.elapsed().as_secs_f64(), loadavg());
    for f in &figures {
        println!("  [{}] {}: {} (goal {})", if f.met { "met" } else { "MISSED" }, f.name, f.value, f.goal);
    }
    Ok(0)
}

fn bench_name(bench: &str) -> &'static str {
    match bench {
        "poll" => "status poll throughput",
        "intake" => "intake throughput",
        "commit" => "commit latency, rail subtracted",
        "commit-stripe" => "commit latency on Stripe, rail subtracted",
        "commit-bank" => "commit latency on bank files",
        "longpoll" => "concurrent long-polls: server memory",
        "queue" => "queue page SSR (100k proposals, 10k pending)",
        "notify" => "proposal → push delivered",
        "backtest" => "policy backtest, 100k recorded proposals (CLI, start to exit)",
        "pg-intake" => "intake throughput, PostgreSQL",
        "pg-poll" => "status poll throughput, PostgreSQL",
        "pg-scale" => "intake scale-out, PostgreSQL",
        _ => "release hydrate wasm size",
    }
}
