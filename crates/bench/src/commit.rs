//! Benchmark 3: commit latency with the rail simulator on loopback, the
//! rail's own time subtracted.
//!
//! Proposals are approved by policy (50.00 USD to a trusted payee), so each
//! POST answers with its approval token. Then, one at a time on one
//! connection each: `POST /api/v1/proposals/{id}/commit` to the server, and
//! a direct `POST /v1/transfers` to the same simulator process (the same
//! form the connector sends, a fresh idempotency key), alternating which
//! goes first. The rail's contribution is estimated from the direct calls'
//! distribution: net p50 = commit p50 − rail p50, net p99 = commit p99 −
//! rail p99. (The per-pair differences are printed too.)

use serde_json::json;
use std::time::Duration;

use crate::client::{post_json, request, Conn};
use crate::env::{propose, transfer, Env, AGENT_KEY, SOURCE, TRUSTED_PAYEE};
use crate::stats::{ms, ms_diff, Latency};
use crate::suite::Figure;

/// Commits made before measuring (connections, statement caches).
const WARMUP: usize = 20;
const AMOUNT: u64 = 5_000;

pub async fn run(env: &Env, commits: usize) -> anyhow::Result<Vec<Figure>> {
    let rail_dir = env.scratch("commit-rail")?;
    let rail = env.rail_sim(&rail_dir).await?;
    let server_dir =
        env.provision("commit", &format!("[rail]\nurl = {:?}\nreconcile_interval_secs = 1\n", rail.url)).await?;
    let server = env.serve(&server_dir, &[]).await?;
    println!(
        "  server: countersign serve (pid {}) on {}; rail: countersign rail-sim (pid {}) on {}",
        server.pid, server.url, rail.pid, rail.url
    );

    let http = crate::env::http();
    let total = commits + WARMUP;
    let mut approved = Vec::with_capacity(total);
    for i in 0..total {
        let p =
            propose(&http, &server.url, &transfer(&format!("commit-{i}"), AMOUNT, TRUSTED_PAYEE, SOURCE), 201).await?;
        match (p["status"].as_str(), p["id"].as_str(), p["approval_token"].as_str()) {
            (Some("approved"), Some(id), Some(token)) => approved.push((id.to_owned(), token.to_owned())),
            _ => anyhow::bail!("expected an auto-approved proposal: {p}"),
        }
    }

    let auth = format!("Bearer {AGENT_KEY}");
    let mut to_server = Conn::open(server.addr).await?;
    let mut to_rail = Conn::open(rail.addr).await?;
    let (mut commit_times, mut rail_times, mut outcomes) = (Vec::new(), Vec::new(), std::collections::BTreeMap::new());
    for (i, (id, token)) in approved.iter().enumerate() {
        let commit = post_json(
            server.addr,
            &format!("/api/v1/proposals/{id}/commit"),
            &[("authorization", &auth)],
            json!({"approval_token": token}).to_string().into_bytes(),
        );
        let key = format!("bench-direct-{i}");
        let form = format!(
            "amount={AMOUNT}&currency=usd&destination={TRUSTED_PAYEE}&transfer_group={key}\
             &metadata%5Bsource_account%5D={SOURCE}&metadata%5Bproposal_id%5D={id}"
        );
        let direct = request(
            hyper::Method::POST,
            rail.addr,
            "/v1/transfers",
            &[("idempotency-key", &key), ("content-type", "application/x-www-form-urlencoded")],
            form.into_bytes().into(),
        );
        let (c, r) = if i % 2 == 0 {
            let c = to_server.timed(commit).await?;
            (c, to_rail.timed(direct).await?)
        } else {
            let r = to_rail.timed(direct).await?;
            (to_server.timed(commit).await?, r)
        };
        if c.0.status != 200 || r.0.status != 200 {
            anyhow::bail!(
                "commit answered {} ({}), rail answered {} ({})",
                c.0.status,
                c.0.text(),
                r.0.status,
                r.0.text()
            );
        }
        *outcomes.entry(c.0.json()["status"].as_str().unwrap_or("?").to_owned()).or_insert(0u32) += 1;
        if i >= WARMUP {
            commit_times.push(c.1);
            rail_times.push(r.1);
        }
    }
    server.stop().await;
    rail.stop().await;

    let pairs: Vec<Duration> = commit_times.iter().zip(&rail_times).map(|(c, r)| c.saturating_sub(*r)).collect();
    let (commit, rail, paired) =
        (Latency::from_durations(&commit_times), Latency::from_durations(&rail_times), Latency::from_durations(&pairs));
    println!("  commit (server + rail), {} commits: {}; answered {outcomes:?}", commit.count(), commit.summary());
    println!("  rail alone (direct POST /v1/transfers):  {}", rail.summary());
    println!("  per-pair difference (commit − its rail call): {}", paired.summary());
    let net50 = ms_diff(commit.pct(50.0), rail.pct(50.0));
    let net99 = ms_diff(commit.pct(99.0), rail.pct(99.0));
    Ok(vec![Figure::new(
        "commit latency, rail subtracted",
        format!(
            "p50 {net50:.2} ms, p99 {net99:.2} ms (commit p50 {} / p99 {}; rail p50 {} / p99 {})",
            ms(commit.pct(50.0)),
            ms(commit.pct(99.0)),
            ms(rail.pct(50.0)),
            ms(rail.pct(99.0))
        ),
        "p99 < 2.5 ms (issue 31)",
        net99 < 2.5,
    )])
}
