//! Benchmarks 7 and 8, with `--postgres URL` only: intake and status poll on
//! PostgreSQL, against one instance and against two `serve` processes that
//! share one database (the client spreads its connections over them, as a
//! proxy would). Each benchmark gets a fresh database on the server `URL`
//! names (`CREATE DATABASE … LOCALE 'C'`, dropped at the end).
//!
//! - **pg-intake**: the same requests as `intake`. Baseline: raw PostgreSQL,
//!   one row of the same size as a stored proposal and its audit entry per
//!   transaction, from as many connections as the client has.
//! - **pg-poll**: the same requests as `poll`, against the same baseline
//!   server (`countersign-bench baseline`).
//! - **pg-scale**: the same requests as `intake`, each instance held to a
//!   share of a core (`--instance-cpus`, a cgroup's CPU quota) as if it ran
//!   on a machine of its own, the database not: two instances against one.
//!   On one machine the unconfined instances share its cores with the
//!   database, so a second one adds no CPU to use; held to a quota, what a
//!   second instance adds shows whether the instances wait on each other
//!   (docs/BENCHMARKS.md, "PostgreSQL, one and two instances").
//!
//! Run with a durable cluster (`scripts/pg.sh start DIR --durable`, as
//! `scripts/bench.sh pg` does): the test cluster skips fsync.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;

use crate::client::{get, post_json};
use crate::env::{propose, transfer, Env, Proc, ServerDir, AGENT_KEY, PAYEE, SOURCE};
use crate::intake::RawTable;
use crate::stats::{closed_loop_spread, LoadReport};
use crate::suite::{Figure, LoadArgs};

/// A fresh database on the benchmark's PostgreSQL server, with
/// `countersign serve` instances on it sharing one data directory (the
/// signing keys), as docs/DEPLOY.md deploys them.
pub struct Deployment {
    pub dir: ServerDir,
    pub instances: Vec<Proc>,
    /// Each instance's CPU quota, when held to one (pg-scale).
    budgets: Vec<CpuBudget>,
    admin: PgPool,
    database: String,
    pub url: String,
}

impl Deployment {
    /// `instances` servers with `extra` in their config, on a new database
    /// named after `name` on the server `admin_url` names.
    pub async fn start(
        env: &Env,
        name: &str,
        admin_url: &str,
        extra: &str,
        instances: usize,
    ) -> anyhow::Result<Deployment> {
        let admin =
            PgPoolOptions::new().max_connections(2).connect(admin_url).await.context("connecting to --postgres")?;
        let database = format!("cs_bench_{}_{}", name.replace('-', "_"), std::process::id());
        sqlx::query(&format!("DROP DATABASE IF EXISTS {database}")).execute(&admin).await?;
        sqlx::query(&format!("CREATE DATABASE {database} TEMPLATE template0 LOCALE 'C'")).execute(&admin).await?;
        let (server, _) = admin_url.rsplit_once('/').context("--postgres must name a database: postgres://…/DB")?;
        let url = format!("{server}/{database}");
        let dir = env.provision(name, &format!("{extra}\n[database]\nurl = {url:?}\n")).await?;
        let mut procs = Vec::new();
        for _ in 0..instances {
            // One after the other: the first creates the signing keys in the shared data directory.
            procs.push(env.serve(&dir, &[]).await?);
        }
        for p in &procs {
            println!("  instance: countersign serve (pid {}) on {}", p.pid, p.url);
        }
        Ok(Deployment { dir, instances: procs, budgets: Vec::new(), admin, database, url })
    }

    /// Holds each instance to `cores` of CPU from now on.
    pub fn confine(&mut self, cores: f64) -> anyhow::Result<()> {
        for p in &self.instances {
            self.budgets.push(CpuBudget::hold(p.pid, cores)?);
        }
        Ok(())
    }

    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.instances.iter().map(|p| p.addr).collect()
    }

    /// Stops the instances (the database stays until [`Deployment::drop_database`]).
    pub async fn stop_instances(&mut self) {
        for p in self.instances.drain(..) {
            p.stop().await;
        }
        // Empty now: the cgroups can go.
        self.budgets.clear();
    }

    pub async fn drop_database(mut self) -> anyhow::Result<()> {
        self.stop_instances().await;
        sqlx::query(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.database)).execute(&self.admin).await?;
        self.admin.close().await;
        Ok(())
    }
}

/// One closed-loop round of proposals spread over the instances `on`, each
/// in a run of its own named from `prefix`, the round and the instance count.
async fn proposals(load: &LoadArgs, prefix: &str, round: u32, on: Vec<SocketAddr>) -> anyhow::Result<LoadReport> {
    let auth: Arc<str> = format!("Bearer {AGENT_KEY}").into();
    let spec = load.spec(on[0]);
    let run = format!("{prefix}-{}-{round}", on.len());
    closed_loop_spread(on, spec, 201, move |addr, w, seq| {
        let body = transfer(&format!("{run}-{w}-{seq}"), 25_000, PAYEE, SOURCE);
        post_json(addr, "/api/v1/proposals", &[("authorization", &auth)], body.to_string().into_bytes())
    })
    .await
}

pub async fn intake(env: &Env, load: &LoadArgs, admin_url: &str) -> anyhow::Result<Vec<Figure>> {
    let d = Deployment::start(env, "pg-intake", admin_url, "", 2).await?;
    let addrs = d.addrs();
    let intake = |round: u32, on: Vec<SocketAddr>| proposals(load, "pg-intake", round, on);
    // A first round tells the size of what the server stores per proposal.
    let mut two = vec![intake(0, addrs.clone()).await?];
    let pool = PgPoolOptions::new().max_connections(load.connections as u32 + 1).connect(&d.url).await?;
    let row_bytes = stored_bytes_per_proposal(&pool).await?;
    let raw = RawTable::postgres(pool, row_bytes).await?;
    println!("  baseline: raw PostgreSQL inserts of {row_bytes}-byte rows, one per transaction");
    let (mut base_rounds, mut one) = (Vec::new(), Vec::new());
    for round in 1..=load.rounds.max(1) {
        if round > 1 {
            two.push(intake(round, addrs.clone()).await?);
        }
        let b = raw.run(load.spec(addrs[0])).await?;
        let o = intake(round, addrs[..1].to_vec()).await?;
        println!(
            "  round {round}: raw inserts {}, one instance {}, two instances {}",
            b.short(),
            o.short(),
            two.last().expect("a round").short()
        );
        base_rounds.push(b);
        one.push(o);
    }
    raw.close().await;
    d.drop_database().await?;
    Ok(vec![compare(
        "intake throughput, PostgreSQL",
        ("proposals/s", "raw inserts", "rows/s"),
        "≥ 40 % of baseline (reported next to SQLite's)",
        40.0,
        [base_rounds, one, two],
    )])
}

pub async fn poll(env: &Env, load: &LoadArgs, admin_url: &str) -> anyhow::Result<Vec<Figure>> {
    let d = Deployment::start(env, "pg-poll", admin_url, "", 2).await?;
    let http = crate::env::http();
    let mut paths = Vec::with_capacity(crate::poll::PROPOSALS);
    for i in 0..crate::poll::PROPOSALS {
        let body = transfer(&format!("pg-poll-{i}"), 25_000, PAYEE, SOURCE);
        let p = propose(&http, &d.instances[0].url, &body, 201).await?;
        paths.push(format!("/api/v1/proposals/{}", p["id"].as_str().unwrap_or_default()));
    }
    let paths = Arc::new(paths);
    let auth: Arc<str> = format!("Bearer {AGENT_KEY}").into();
    let baseline = env.baseline().await?;
    let poll = |on: Vec<SocketAddr>| {
        let (paths, auth) = (paths.clone(), auth.clone());
        let spec = load.spec(on[0]);
        async move {
            closed_loop_spread(on, spec, 200, move |addr, w, seq| {
                get(addr, &paths[(w + seq as usize) % paths.len()], &[("authorization", &auth)])
            })
            .await
        }
    };
    let addrs = d.addrs();
    let (mut base, mut one, mut two) = (Vec::new(), Vec::new(), Vec::new());
    for round in 1..=load.rounds.max(1) {
        let b = poll(vec![baseline.addr]).await?;
        let o = poll(addrs[..1].to_vec()).await?;
        let t = poll(addrs.clone()).await?;
        println!("  round {round}: baseline {}, one instance {}, two instances {}", b.short(), o.short(), t.short());
        base.push(b);
        one.push(o);
        two.push(t);
    }
    baseline.stop().await;
    d.drop_database().await?;
    Ok(vec![compare(
        "status poll throughput, PostgreSQL",
        ("req/s", "baseline", "req/s"),
        "≥ 50 % of baseline (reported next to SQLite's)",
        50.0,
        [base, one, two],
    )])
}

/// pg-scale: intake on one instance and on two, each held to `cores` of
/// CPU; met when two instances take at least 1.6 times what one takes.
pub async fn scale(env: &Env, load: &LoadArgs, admin_url: &str, cores: f64) -> anyhow::Result<Vec<Figure>> {
    anyhow::ensure!(cores > 0.0, "--instance-cpus must be more than 0 (cores per instance)");
    let mut d = Deployment::start(env, "pg-scale", admin_url, "", 2).await?;
    if let Err(e) = d.confine(cores) {
        // Nothing measured: the instances and their database go.
        d.drop_database().await?;
        return Err(e);
    }
    println!("  each instance held to {cores} cores (cgroup CPU quota); the database and the client are not");
    let addrs = d.addrs();
    let intake = |round: u32, on: Vec<SocketAddr>| proposals(load, "pg-scale", round, on);
    let (mut one, mut two) = (Vec::new(), Vec::new());
    for round in 1..=load.rounds.max(1) {
        let o = intake(round, addrs[..1].to_vec()).await?;
        let t = intake(round, addrs.clone()).await?;
        println!("  round {round}: one instance {}, two instances {}", o.short(), t.short());
        one.push(o);
        two.push(t);
    }
    d.drop_database().await?;
    let (one, two) = (LoadReport::merge(one), LoadReport::merge(two));
    println!("  one instance:  {one}");
    println!("  two instances: {two}");
    let times = two.per_sec() / one.per_sec().max(1.0);
    Ok(vec![Figure::new(
        "intake scale-out, PostgreSQL",
        format!(
            "two instances {:.0} proposals/s = {times:.2}x one instance's {:.0}, each held to {cores} cores",
            two.per_sec(),
            one.per_sec()
        ),
        "two instances ≥ 1.6x one",
        times >= 1.6 && one.failed == 0 && two.failed == 0,
    )])
}

/// A cgroup holding one process to a share of the CPU (cgroup v2's
/// `cpu.max`, or v1's CFS quota); removed when dropped, once the process
/// has left it. Needs a writable cgroup file system (root, or a delegated
/// subtree).
struct CpuBudget {
    dir: std::path::PathBuf,
}

impl CpuBudget {
    const PERIOD_US: u64 = 100_000;

    fn hold(pid: u32, cores: f64) -> anyhow::Result<CpuBudget> {
        let root = std::path::Path::new("/sys/fs/cgroup");
        let v2 = root.join("cgroup.controllers").exists();
        let parent = if v2 { root.to_path_buf() } else { root.join("cpu") };
        let dir = parent.join(format!("countersign-bench-{pid}"));
        std::fs::create_dir(&dir)
            .with_context(|| format!("creating {} (a CPU quota needs a writable cgroup file system)", dir.display()))?;
        let budget = CpuBudget { dir };
        let quota = ((cores * Self::PERIOD_US as f64) as u64).max(1_000);
        if v2 {
            budget.write("cpu.max", &format!("{quota} {}", Self::PERIOD_US))?;
        } else {
            budget.write("cpu.cfs_period_us", &Self::PERIOD_US.to_string())?;
            budget.write("cpu.cfs_quota_us", &quota.to_string())?;
        }
        // Every thread of the process moves with it.
        budget.write("cgroup.procs", &pid.to_string())?;
        Ok(budget)
    }

    fn write(&self, file: &str, value: &str) -> anyhow::Result<()> {
        let path = self.dir.join(file);
        std::fs::write(&path, value).with_context(|| format!("writing {value:?} to {}", path.display()))
    }
}

impl Drop for CpuBudget {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The figure of a benchmark's rounds (`[baseline, one instance, two
/// instances]`, each merged and printed): both instance counts as a share
/// of the baseline, met when two instances reach `goal_pct` without a
/// failure. `units`: the instances' unit, the baseline's name and unit.
fn compare(
    name: &'static str,
    (unit, baseline, baseline_unit): (&str, &str, &str),
    goal: &'static str,
    goal_pct: f64,
    rounds: [Vec<LoadReport>; 3],
) -> Figure {
    let [base, one, two] = rounds.map(LoadReport::merge);
    println!("  one instance:  {one}");
    println!("  two instances: {two}");
    println!("  baseline:      {base}");
    let ratio = |r: &LoadReport| r.per_sec() / base.per_sec().max(1.0) * 100.0;
    Figure::new(
        name,
        format!(
            "one instance {:.0} {unit} ({:.1} %), two instances {:.0} {unit} ({:.1} %) vs {baseline} {:.0} {baseline_unit}",
            one.per_sec(),
            ratio(&one),
            two.per_sec(),
            ratio(&two),
            base.per_sec()
        ),
        goal,
        ratio(&two) >= goal_pct && one.failed == 0 && two.failed == 0,
    )
}

/// Bytes of a stored proposal plus its `proposal.created` audit entry.
async fn stored_bytes_per_proposal(pool: &PgPool) -> anyhow::Result<usize> {
    let proposal: f64 = sqlx::query_scalar(
        "SELECT avg(length(id) + length(tenant_id) + length(agent_id) + length(run_id) + length(kind)
                  + length(status) + length(currency) + length(payee_id) + length(canonical_request)
                  + length(request_hash) + length(policy) + length(created_at) + length(updated_at)
                  + length(expires_at) + 4 * 8)::float8
         FROM proposals",
    )
    .fetch_one(pool)
    .await?;
    let audit: f64 = sqlx::query_scalar(
        "SELECT avg(length(at) + length(tenant_id) + length(actor) + length(action) + length(proposal_id)
                  + length(request_hash) + length(data) + length(prev_hash) + length(hash) + 8)::float8
         FROM audit_log WHERE action = 'proposal.created'",
    )
    .fetch_one(pool)
    .await?;
    Ok((proposal + audit).round() as usize)
}
