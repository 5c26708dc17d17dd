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
//!
//! Then the same loop against the floor (`countersign-bench commit-floor`,
//! the same rail simulator process): a server on the same stack that does
//! only what no commit keeping the contract can skip — a durable write
//! before the rail call, the call, a durable write of its answer. Its net
//! figures are what this machine sets before Countersign does anything of
//! its own; they are printed beside the goal's figure, which stays the
//! server's own.

use serde_json::json;
use std::time::Duration;

use crate::client::{post_json, request, Conn};
use crate::env::{propose, transfer, Env, AGENT_KEY, SOURCE, TRUSTED_PAYEE};
use crate::stats::{ms, ms_diff, Latency};
use crate::suite::Figure;

/// Commits made before measuring (connections, statement caches).
pub(crate) const WARMUP: usize = 20;
pub(crate) const AMOUNT: u64 = 5_000;

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
    let headers = [("authorization", auth.as_str())];
    let commits: Vec<(String, Vec<u8>)> = approved
        .iter()
        .map(|(id, token)| (id.clone(), json!({"approval_token": token}).to_string().into_bytes()))
        .collect();
    let measured = alternated(server.addr, &headers, &commits, rail.addr).await?;
    server.stop().await;

    // The floor: the same loop against a server that does only the two
    // durable writes around the rail call (`countersign-bench commit-floor`).
    let floor_dir = env.scratch("commit-floor")?;
    let floor = env.commit_floor(&rail.url, &floor_dir).await?;
    let floor_measured = alternated(floor.addr, &[], &commits, rail.addr).await?;
    floor.stop().await;
    rail.stop().await;

    let (commit, rail, net50, net99) =
        measured.report(&format!("commit (server + rail), {} commits", commits.len() - WARMUP));
    let (_, _, floor50, floor99) = floor_measured.report(&format!(
        "floor (countersign-bench commit-floor: two durable SQLite writes around the rail call, nothing else), {} commits",
        commits.len() - WARMUP
    ));
    println!("  answered {:?}; the floor answered {:?}", measured.outcomes, floor_measured.outcomes);
    println!(
        "  the floor on this machine, rail subtracted: p50 {floor50:.2} ms, p99 {floor99:.2} ms; \
         Countersign's commit above it: p50 {:+.2} ms, p99 {:+.2} ms",
        net50 - floor50,
        net99 - floor99
    );
    Ok(vec![Figure::new(
        "commit latency, rail subtracted",
        format!(
            "p50 {net50:.2} ms, p99 {net99:.2} ms (commit p50 {} / p99 {}; rail p50 {} / p99 {}; \
             the floor p50 {floor50:.2} / p99 {floor99:.2})",
            ms(commit.pct(50.0)),
            ms(commit.pct(99.0)),
            ms(rail.pct(50.0)),
            ms(rail.pct(99.0))
        ),
        "p99 < 2.5 ms",
        net99 < 2.5,
    )])
}

/// The form the server's connector sends the rail for one of these
/// commits' transfers, under `group`: the benchmark's direct calls and the
/// floor's send the same.
pub(crate) fn rail_form(group: &str, proposal_id: &str) -> String {
    format!(
        "amount={AMOUNT}&currency=usd&destination={TRUSTED_PAYEE}&transfer_group={group}\
         &metadata%5Bsource_account%5D={SOURCE}&metadata%5Bproposal_id%5D={proposal_id}"
    )
}

/// One loop's times: each commit's, each direct rail call's (paired), and
/// what the commits answered.
pub(crate) struct Measured {
    commits: Vec<Duration>,
    rails: Vec<Duration>,
    pub(crate) outcomes: std::collections::BTreeMap<String, u32>,
}

impl Measured {
    /// Prints the three distributions under `label`; returns the commit's
    /// and the rail's, and the net p50 and p99 (ms).
    pub(crate) fn report(&self, label: &str) -> (Latency, Latency, f64, f64) {
        let pairs: Vec<Duration> = self.commits.iter().zip(&self.rails).map(|(c, r)| c.saturating_sub(*r)).collect();
        let (commit, rail, paired) = (
            Latency::from_durations(&self.commits),
            Latency::from_durations(&self.rails),
            Latency::from_durations(&pairs),
        );
        println!("  {label}: {}", commit.summary());
        if self.rails.iter().any(|r| !r.is_zero()) {
            println!("    rail alone (direct POST /v1/transfers):  {}", rail.summary());
        }
        println!("    per-pair difference (commit − its rail call): {}", paired.summary());
        let net50 = ms_diff(commit.pct(50.0), rail.pct(50.0));
        let net99 = ms_diff(commit.pct(99.0), rail.pct(99.0));
        (commit, rail, net50, net99)
    }
}

/// Each of `commits` (proposal id, body) posted to `server`, one at a time
/// on one connection, each beside a direct `POST /v1/transfers` to the
/// simulator at `rail` (a fresh idempotency key), alternating which goes
/// first; the first [`WARMUP`] are not counted.
async fn alternated(
    server: std::net::SocketAddr,
    headers: &[(&str, &str)],
    commits: &[(String, Vec<u8>)],
    rail: std::net::SocketAddr,
) -> anyhow::Result<Measured> {
    let direct = Direct { addr: rail, headers: Vec::new(), form: Box::new(rail_form) };
    alternated_with(server, headers, commits, Some(&direct)).await
}

/// The form of a direct rail call for (idempotency key, proposal id).
pub(crate) type FormFn = Box<dyn Fn(&str, &str) -> String + Send + Sync>;

/// The direct call that stands for a commit's rail call: `POST
/// /v1/transfers` to `addr` with these headers (and the idempotency key)
/// and the form `form(key, proposal id)` gives.
pub(crate) struct Direct {
    pub addr: std::net::SocketAddr,
    pub headers: Vec<(&'static str, String)>,
    pub form: FormFn,
}

/// [`alternated`], with the rail's direct call of `direct` (none: a rail
/// Countersign runs in-process, whose time is part of the commit's own).
pub(crate) async fn alternated_with(
    server: std::net::SocketAddr,
    headers: &[(&str, &str)],
    commits: &[(String, Vec<u8>)],
    direct: Option<&Direct>,
) -> anyhow::Result<Measured> {
    let mut to_server = Conn::open(server).await?;
    let mut to_rail = match direct {
        Some(d) => Some(Conn::open(d.addr).await?),
        None => None,
    };
    let mut measured = Measured { commits: Vec::new(), rails: Vec::new(), outcomes: Default::default() };
    let run = rand::random::<u32>();
    for (i, (id, body)) in commits.iter().enumerate() {
        let commit = post_json(server, &format!("/api/v1/proposals/{id}/commit"), headers, body.clone());
        let key = format!("bench-direct-{run}-{i}");
        let (c, r) = match (direct, to_rail.as_mut()) {
            (Some(d), Some(to_rail)) => {
                let mut h: Vec<(&str, &str)> =
                    vec![("idempotency-key", &key), ("content-type", "application/x-www-form-urlencoded")];
                h.extend(d.headers.iter().map(|(k, v)| (*k, v.as_str())));
                let call =
                    request(hyper::Method::POST, d.addr, "/v1/transfers", &h, (d.form)(&key, id).into_bytes().into());
                if i % 2 == 0 {
                    let c = to_server.timed(commit).await?;
                    (c, Some(to_rail.timed(call).await?))
                } else {
                    let r = to_rail.timed(call).await?;
                    (to_server.timed(commit).await?, Some(r))
                }
            }
            _ => (to_server.timed(commit).await?, None),
        };
        let rail_status = r.as_ref().map_or(200, |r| r.0.status);
        if c.0.status != 200 || rail_status != 200 {
            anyhow::bail!(
                "commit answered {} ({}), rail answered {} ({})",
                c.0.status,
                c.0.text(),
                rail_status,
                r.as_ref().map(|r| r.0.text()).unwrap_or_default()
            );
        }
        *measured.outcomes.entry(c.0.json()["status"].as_str().unwrap_or("?").to_owned()).or_insert(0) += 1;
        if i >= WARMUP {
            measured.commits.push(c.1);
            measured.rails.push(r.map_or(Duration::ZERO, |r| r.1));
        }
    }
    Ok(measured)
}
