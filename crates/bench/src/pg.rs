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
        Ok(Deployment { dir, instances: procs, admin, database, url })
    }

    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.instances.iter().map(|p| p.addr).collect()
    }

    /// Stops the instances (the database stays until [`Deployment::drop_database`]).
    pub async fn stop_instances(&mut self) {
        for p in self.instances.drain(..) {
            p.stop().await;
        }
    }

    pub async fn drop_database(mut self) -> anyhow::Result<()> {
        self.stop_instances().await;
        sqlx::query(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.database)).execute(&self.admin).await?;
        self.admin.close().await;
        Ok(())
    }
}

pub async fn intake(env: &Env, load: &LoadArgs, admin_url: &str) -> anyhow::Result<Vec<Figure>> {
    let d = Deployment::start(env, "pg-intake", admin_url, "", 2).await?;
    let auth: Arc<str> = format!("Bearer {AGENT_KEY}").into();
    let addrs = d.addrs();
    let intake = |round: u32, on: Vec<SocketAddr>| {
        let auth = auth.clone();
        let spec = load.spec(on[0]);
        let tag = on.len();
        closed_loop_spread(on, spec, 201, move |addr, w, seq| {
            let body = transfer(&format!("pg-intake-{tag}-{round}-{w}-{seq}"), 25_000, PAYEE, SOURCE);
            post_json(addr, "/api/v1/proposals", &[("authorization", &auth)], body.to_string().into_bytes())
        })
    };
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
