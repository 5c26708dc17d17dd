//! Benchmark 1: status-poll throughput. `GET /api/v1/proposals/{id}` with
//! the agent's key against the real server, and the same requests against
//! `countersign-bench baseline` (a minimal axum handler returning a small
//! JSON document), same client, connections and duration.

use std::sync::Arc;

use crate::client::get;
use crate::env::{propose, transfer, Env, AGENT_KEY, PAYEE};
use crate::stats::{closed_loop, LoadReport};
use crate::suite::{Figure, LoadArgs};

/// Distinct proposals the pollers rotate over.
pub const PROPOSALS: usize = 64;

pub async fn run(env: &Env, load: &LoadArgs) -> anyhow::Result<Vec<Figure>> {
    let server_dir = env.provision("poll", "").await?;
    let server = env.serve(&server_dir, &[]).await?;
    let http = crate::env::http();
    let mut paths = Vec::with_capacity(PROPOSALS);
    for i in 0..PROPOSALS {
        let p = propose(&http, &server.url, &transfer(&format!("poll-{i}"), 25_000, PAYEE, crate::env::SOURCE), 201)
            .await?;
        paths.push(format!("/api/v1/proposals/{}", p["id"].as_str().unwrap_or_default()));
    }
    let paths = Arc::new(paths);
    let auth: Arc<str> = format!("Bearer {AGENT_KEY}").into();
    let baseline = env.baseline().await?;
    println!("  baseline: countersign-bench baseline (pid {}) on {}", baseline.pid, baseline.url);
    println!(
        "  server:   countersign serve (pid {}) on {}, polling {PROPOSALS} pending proposals",
        server.pid, server.url
    );

    let poll = |addr| {
        let (paths, auth) = (paths.clone(), auth.clone());
        closed_loop(load.spec(addr), 200, move |w, seq| {
            get(addr, &paths[(w + seq as usize) % paths.len()], &[("authorization", &auth)])
        })
    };
    let (mut base_rounds, mut real_rounds) = (Vec::new(), Vec::new());
    for round in 1..=load.rounds.max(1) {
        let b = poll(baseline.addr).await?;
        let r = poll(server.addr).await?;
        println!("  round {round}: baseline {}, server {}", b.short(), r.short());
        base_rounds.push(b);
        real_rounds.push(r);
    }
    // Where the gap comes from: the real server's own stack with no database
    // (`/healthz`) and with exactly one trivial query (`/readyz`: SELECT 1).
    let mut floors = Vec::new();
    for path in ["/healthz", "/readyz"] {
        let addr = server.addr;
        let r = closed_loop(load.spec(addr), 200, move |_, _| get(addr, path, &[])).await?;
        floors.push(format!("{path} {:.0} req/s", r.per_sec()));
    }
    baseline.stop().await;
    server.stop().await;
    let (base, real) = (LoadReport::merge(base_rounds), LoadReport::merge(real_rounds));
    println!("  baseline: {base}");
    println!("  server:   {real}");
    println!("  the server's floors (one round each): {}", floors.join(", "));

    let ratio = real.per_sec() / base.per_sec().max(1.0) * 100.0;
    Ok(vec![Figure::new(
        "status poll throughput",
        format!("{:.0} req/s vs baseline {:.0} req/s = {ratio:.1} %", real.per_sec(), base.per_sec()),
        "≥ 85 % of baseline",
        ratio >= 85.0 && real.failed == 0,
    )])
}
