//! The soak test: `--minutes` of mixed traffic against a real server and a
//! real rail simulator (each its own process, SQLite on disk), with rail
//! faults injected all along, then a drain and consistency checks. With
//! `--postgres URL`, two servers share one fresh PostgreSQL database (as
//! docs/DEPLOY.md deploys them) and the clients alternate between them:
//! agent `i` and approver `i` talk to instance `i % 2`.
//!
//! Traffic:
//! - agents propose (auto-approved small payments to a trusted payee; single
//!   and dual approvals; payments the rail declines: a closed destination,
//!   an empty source account), sometimes repeat a request under its
//!   `Idempotency-Key` (a replay), sometimes cancel; they long-poll for a
//!   decision, commit the approved ones (sometimes twice at once, as a retry
//!   storm would), and long-poll for the outcome;
//! - two approvers (`ana`, `ben`) signed in to the console JSON API read the
//!   pending queue and approve (sometimes reject, with a reason); dual
//!   approvals take both;
//! - a fault injector arms the simulator (`POST /_sim/faults`) every few
//!   seconds: `error_500`, `drop_after_accept`, `delay` past the server's
//!   rail timeout (a timeout), and short delays.
//!
//! Then new proposals stop, the agents finish what they started, faults are
//! cleared and reconciliation is given time to settle every open operation.
//! The server is stopped and the checks run: every proposal in a final state
//! (anything else listed with its operation and why), `countersign audit
//! verify`, and exactly one rail transfer per succeeded operation (none for
//! failed ones, none the server does not know about).

use clap::Args;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use sqlx::{Column, Row, SqlitePool};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::env::{
    sign_in, transfer, Env, Session, AGENT_KEY, APPROVERS, CLOSED_PAYEE, PAYEE, SOURCE, SOURCE_EMPTY, TRUSTED_PAYEE,
};
use crate::stats::Latency;

#[derive(Args, Debug, Clone)]
pub struct SoakArgs {
    /// Minutes of mixed traffic (the documented run is 10).
    #[arg(long, default_value_t = 2)]
    pub minutes: u64,
    /// Concurrent agents.
    #[arg(long, default_value_t = 8)]
    pub agents: usize,
    /// Seed of the traffic mix (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run two instances on a fresh database of this PostgreSQL server
    /// (`postgres://…/DB`) instead of one on SQLite.
    #[arg(long)]
    pub postgres: Option<String>,
}

/// The server's rail timeout in the soak; `timeout` faults delay longer.
const RAIL_TIMEOUT_MS: u64 = 1_500;
/// Final proposal statuses.
const FINAL: [&str; 6] = ["succeeded", "failed", "rejected", "cancelled", "expired", "reversed"];

/// What the traffic did, as the clients saw it.
#[derive(Default)]
struct Tally {
    proposed: BTreeMap<&'static str, u64>,
    replays: u64,
    replay_mismatches: u64,
    cancels: BTreeMap<u16, u64>,
    commits: BTreeMap<String, u64>,
    double_commits: u64,
    commit_retries: u64,
    commit_latency: Vec<Duration>,
    decisions: BTreeMap<String, u64>,
    faults: BTreeMap<&'static str, u64>,
    unexpected: BTreeMap<String, u64>,
    gave_up_waiting: u64,
}

struct Soak {
    http: reqwest::Client,
    /// The instances' URLs; client `i` talks to `bases[i % len]`.
    bases: Vec<String>,
    rail: String,
    stop_proposing: AtomicBool,
    stop_approving: AtomicBool,
    stop_faults: AtomicBool,
    tally: Mutex<Tally>,
    seq: AtomicU64,
}

impl Soak {
    fn note(&self, f: impl FnOnce(&mut Tally)) {
        f(&mut self.tally.lock().expect("tally"));
    }

    fn unexpected(&self, what: String) {
        self.note(|t| *t.unexpected.entry(what).or_default() += 1);
    }

    /// The instance client `index` talks to.
    fn base(&self, index: usize) -> &str {
        &self.bases[index % self.bases.len()]
    }

    fn agent_get(&self, index: usize, path: &str) -> reqwest::RequestBuilder {
        self.http.get(format!("{}{path}", self.base(index))).bearer_auth(AGENT_KEY)
    }

    fn agent_post(&self, index: usize, path: &str) -> reqwest::RequestBuilder {
        self.http.post(format!("{}{path}", self.base(index))).bearer_auth(AGENT_KEY)
    }
}

/// A kind of proposal in the mix, with its weight.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Auto,
    Single,
    Dual,
    Closed,
    Empty,
    Cancel,
}

const MIX: [(Kind, u32); 6] =
    [(Kind::Auto, 35), (Kind::Single, 30), (Kind::Dual, 12), (Kind::Closed, 8), (Kind::Empty, 7), (Kind::Cancel, 8)];

impl Kind {
    fn pick(rng: &mut StdRng) -> Kind {
        let total: u32 = MIX.iter().map(|(_, w)| w).sum();
        let mut n = rng.gen_range(0..total);
        for (kind, w) in MIX {
            if n < w {
                return kind;
            }
            n -= w;
        }
        Kind::Auto
    }

    fn label(self) -> &'static str {
        match self {
            Kind::Auto => "auto-approved (trusted payee)",
            Kind::Single => "one approval",
            Kind::Dual => "dual approval",
            Kind::Closed => "closed destination (rail declines)",
            Kind::Empty => "empty source account (rail declines)",
            Kind::Cancel => "cancelled by the agent",
        }
    }

    /// Amount, destination and source of a proposal of this kind.
    fn request(self, rng: &mut StdRng) -> (u64, &'static str, &'static str) {
        match self {
            Kind::Auto => (rng.gen_range(100..10_000), TRUSTED_PAYEE, SOURCE),
            Kind::Single | Kind::Cancel => (rng.gen_range(10_000..1_000_000), PAYEE, SOURCE),
            Kind::Dual => (rng.gen_range(1_000_000..5_000_000), PAYEE, SOURCE),
            Kind::Closed => (rng.gen_range(10_000..500_000), CLOSED_PAYEE, SOURCE),
            Kind::Empty => (rng.gen_range(10_000..500_000), PAYEE, SOURCE_EMPTY),
        }
    }
}

pub async fn run(env: &Env, args: &SoakArgs) -> anyhow::Result<i32> {
    let seed = args.seed.unwrap_or_else(|| chrono::Utc::now().timestamp_millis() as u64);
    let rail_dir = env.scratch("soak-rail")?;
    let rail = env.rail_sim(&rail_dir).await?;
    let config =
        format!("[rail]\nurl = {:?}\nreconcile_interval_secs = 1\ntotal_timeout_ms = {RAIL_TIMEOUT_MS}\n", rail.url);
    println!("soak: {} min of traffic, {} agents, seed {seed}", args.minutes, args.agents);
    let mut deployment = match &args.postgres {
        Some(admin) => Some(crate::pg::Deployment::start(env, "soak", admin, &config, 2).await?),
        None => None,
    };
    let (server_dir, mut instances) = match deployment.as_mut() {
        Some(d) => (d.dir.clone(), std::mem::take(&mut d.instances)),
        None => {
            let dir = env.provision("soak", &config).await?;
            let server = env.serve(&dir, &[]).await?;
            println!("  server: countersign serve (pid {}) on {}, data {}", server.pid, server.url, dir.dir.display());
            (dir, vec![server])
        }
    };
    println!("  rail:   countersign rail-sim (pid {}) on {}, data {}", rail.pid, rail.url, rail_dir.display());
    println!("  load average {}", crate::env::loadavg());

    let soak = Arc::new(Soak {
        http: crate::env::http(),
        bases: instances.iter().map(|p| p.url.clone()).collect(),
        rail: rail.url.clone(),
        stop_proposing: AtomicBool::new(false),
        stop_approving: AtomicBool::new(false),
        stop_faults: AtomicBool::new(false),
        tally: Mutex::new(Tally::default()),
        seq: AtomicU64::new(0),
    });
    // The rail's side of the declines.
    let sim_post = |path: &str, body: Value| soak.http.post(format!("{}{path}", soak.rail)).json(&body).send();
    sim_post("/_sim/destinations/closed", json!({"destination": CLOSED_PAYEE})).await?.error_for_status()?;
    sim_post("/_sim/balances", json!({"account": SOURCE_EMPTY, "currency": "usd", "amount": 0}))
        .await?
        .error_for_status()?;

    let started = Instant::now();
    let traffic_for = Duration::from_secs(args.minutes * 60);
    let mut approvers = Vec::new();
    for (i, name) in APPROVERS.iter().enumerate() {
        let session = sign_in(&soak.http, soak.base(i), name).await?;
        let rng = StdRng::seed_from_u64(seed ^ (100 + i as u64));
        approvers.push(tokio::spawn(approver(soak.clone(), i, session, rng)));
    }
    let agents: Vec<_> = (0..args.agents)
        .map(|i| tokio::spawn(agent(soak.clone(), i, StdRng::seed_from_u64(seed ^ i as u64))))
        .collect();
    let faults = tokio::spawn(fault_injector(soak.clone(), StdRng::seed_from_u64(seed ^ 999)));

    // Memory is watched on the first instance.
    let mut peak = instances[0].usage()?;
    let initial = peak;
    while started.elapsed() < traffic_for {
        tokio::time::sleep(Duration::from_secs(30).min(traffic_for.saturating_sub(started.elapsed()))).await;
        let now = instances[0].usage()?;
        peak = if now.rss_kb > peak.rss_kb { now } else { peak };
        let (proposed, commits) = {
            let t = soak.tally.lock().expect("tally");
            (t.proposed.values().sum::<u64>(), t.commits.values().sum::<u64>())
        };
        println!(
            "  {:>4.0} s: {proposed} proposed, {commits} commit answers; server {now}; load {}",
            started.elapsed().as_secs_f64(),
            crate::env::loadavg()
        );
    }

    println!("  traffic stops: agents finish what they started");
    soak.stop_proposing.store(true, Ordering::SeqCst);
    for a in agents {
        let _ = tokio::time::timeout(Duration::from_secs(240), a).await;
    }
    soak.stop_approving.store(true, Ordering::SeqCst);
    soak.stop_faults.store(true, Ordering::SeqCst);
    for a in approvers {
        let _ = a.await;
    }
    let _ = faults.await;
    soak.http.delete(format!("{}/_sim/faults", soak.rail)).send().await?;

    let db = match &deployment {
        Some(d) => CheckDb::Pg(sqlx::PgPool::connect(&d.url).await?),
        None => {
            CheckDb::Sqlite(SqlitePool::connect(&format!("sqlite://{}?mode=ro", server_dir.db_path().display())).await?)
        }
    };
    let settle = Instant::now();
    loop {
        let open = db
            .count(
                "SELECT (SELECT COUNT(*) FROM operations WHERE status IN ('pending', 'accepted', 'unknown'))
                      + (SELECT COUNT(*) FROM proposals WHERE status IN ('executing', 'unknown')) AS n",
            )
            .await?;
        if open == 0 || settle.elapsed() > Duration::from_secs(180) {
            println!("  reconciliation: {open} open after {:.0} s", settle.elapsed().as_secs_f64());
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let end_usage = instances[0].usage()?;
    let total_time = started.elapsed();
    for server in instances.drain(..) {
        server.stop().await;
    }

    let report = check(env, &server_dir, &db, &soak).await?;
    db.close().await;
    if let Some(d) = deployment {
        if std::env::var_os("COUNTERSIGN_SOAK_KEEP_DATABASE").is_some() {
            println!("  kept the database for inspection: {}", d.url);
        } else {
            d.drop_database().await?;
        }
    }
    rail.stop().await;
    let log = std::fs::read_to_string(server_dir.dir.join("server.log")).unwrap_or_default();
    let (errors, panics) = (log.lines().filter(|l| l.contains("ERROR")).count(), log.matches("panicked").count());

    let t = soak.tally.lock().expect("tally");
    println!("\n== soak summary (seed {seed})");
    println!(
        "  duration: {} min of traffic, {:.1} min in all; load average at the end {}",
        args.minutes,
        total_time.as_secs_f64() / 60.0,
        crate::env::loadavg()
    );
    println!("  proposed: {} in all", t.proposed.values().sum::<u64>());
    for (kind, n) in &t.proposed {
        println!("    {n:>6}  {kind}");
    }
    println!("  idempotent replays: {} ({} not identical)", t.replays, t.replay_mismatches);
    println!("  agent cancels (HTTP status: count): {:?}", t.cancels);
    println!("  approver decisions: {:?}", t.decisions);
    println!(
        "  commit answers (operation status: count): {:?}; {} sent twice at once, {} retried after an error",
        t.commits, t.double_commits, t.commit_retries
    );
    let commit = Latency::from_durations(&t.commit_latency);
    println!("  commit latency (rail included, faults included): {}", commit.summary());
    println!("  rail faults armed: {:?}", t.faults);
    println!("  agents that stopped waiting on a proposal (left to reconciliation): {}", t.gave_up_waiting);
    println!("  unexpected answers: {:?}", t.unexpected);
    println!(
        "  server memory: start {:.1} MB, peak seen {:.1} MB, end {end_usage}",
        mb(initial.rss_kb),
        mb(peak.rss_kb)
    );
    println!("  server log: {errors} ERROR lines, {panics} panics");
    println!("{}", report.text);
    let passed = report.passed && panics == 0 && t.replay_mismatches == 0;
    println!("  RESULT: {}", if passed { "PASS" } else { "FAIL" });
    Ok(if passed { 0 } else { 1 })
}

fn mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

/// One agent: propose, wait, commit, wait, until told to stop proposing.
async fn agent(soak: Arc<Soak>, index: usize, mut rng: StdRng) {
    while !soak.stop_proposing.load(Ordering::SeqCst) {
        let kind = Kind::pick(&mut rng);
        if let Err(e) = one_proposal(&soak, index, kind, &mut rng).await {
            soak.unexpected(format!("agent error: {e:#}").chars().take(160).collect());
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

async fn one_proposal(soak: &Soak, index: usize, kind: Kind, rng: &mut StdRng) -> anyhow::Result<()> {
    let n = soak.seq.fetch_add(1, Ordering::SeqCst);
    let (amount, destination, source) = kind.request(rng);
    let body = transfer(&format!("soak-{index}-{n}"), amount, destination, source);
    let key = format!("soak-key-{index}-{n}");
    let send = || soak.agent_post(index, "/api/v1/proposals").header("idempotency-key", &key).json(&body).send();
    let r = send().await?;
    let status = r.status().as_u16();
    let created: Value = r.json().await?;
    if status != 201 {
        soak.unexpected(format!("propose answered {status}: {}", created["error"]["code"]));
        return Ok(());
    }
    soak.note(|t| *t.proposed.entry(kind.label()).or_default() += 1);
    let id = created["id"].as_str().unwrap_or_default().to_owned();
    if rng.gen_bool(0.05) {
        let again = send().await?;
        let replayed = again.headers().get("idempotent-replayed").is_some_and(|v| v == "true");
        let same = again.json::<Value>().await?["id"] == created["id"];
        soak.note(|t| {
            t.replays += 1;
            t.replay_mismatches += u64::from(!(replayed && same));
        });
    }
    if let Kind::Cancel = kind {
        let r = soak.agent_post(index, &format!("/api/v1/proposals/{id}/cancel")).send().await?;
        let code = r.status().as_u16();
        soak.note(|t| *t.cancels.entry(code).or_default() += 1);
        return Ok(());
    }

    // Wait for a decision (humans may take a while).
    let Some(view) = wait_while(soak, index, &id, &created, &["pending_approval"], Duration::from_secs(180)).await?
    else {
        return Ok(());
    };
    if view["status"] != "approved" {
        return Ok(());
    }
    let token = view["approval_token"].as_str().unwrap_or_default().to_owned();
    let commit = || {
        soak.agent_post(index, &format!("/api/v1/proposals/{id}/commit")).json(&json!({"approval_token": token})).send()
    };
    let t0 = Instant::now();
    let first = if rng.gen_bool(0.05) {
        // A retry storm: the same commit twice at once; the rail must see one transfer.
        soak.note(|t| t.double_commits += 1);
        let (a, b) = tokio::join!(commit(), commit());
        if let Ok(b) = b {
            let _ = b.bytes().await;
        }
        a
    } else {
        commit().await
    };
    let answer = match first {
        Ok(r) if r.status().is_success() => r.json::<Value>().await?,
        other => {
            // A lost or failed answer: retry with the same token (never a second payment).
            let why = match other {
                Ok(r) => format!("HTTP {}", r.status().as_u16()),
                Err(e) => format!("{e}"),
            };
            soak.note(|t| t.commit_retries += 1);
            soak.unexpected(format!("commit answered {why}; retried"));
            tokio::time::sleep(Duration::from_secs(1)).await;
            commit().await?.json::<Value>().await?
        }
    };
    let took = t0.elapsed();
    let op_status = answer["operation"]["status"].as_str().unwrap_or("none").to_owned();
    soak.note(|t| {
        *t.commits.entry(op_status).or_default() += 1;
        t.commit_latency.push(took);
    });
    // Wait for the outcome; reconciliation settles what the rail left open.
    wait_while(soak, index, &id, &answer, &["executing", "unknown"], Duration::from_secs(30)).await?;
    Ok(())
}

/// Long-polls `id` while its status is one of `waiting`; returns the view
/// that left them, or None when `limit` passed first.
async fn wait_while(
    soak: &Soak,
    index: usize,
    id: &str,
    view: &Value,
    waiting: &[&str],
    limit: Duration,
) -> anyhow::Result<Option<Value>> {
    let deadline = Instant::now() + limit;
    let mut view = view.clone();
    let mut etag: Option<String> = None;
    loop {
        let status = view["status"].as_str().unwrap_or_default();
        if !waiting.contains(&status) {
            return Ok(Some(view));
        }
        if Instant::now() >= deadline {
            soak.note(|t| t.gave_up_waiting += 1);
            return Ok(None);
        }
        let mut req = soak.agent_get(index, &format!("/api/v1/proposals/{id}?wait=15"));
        if let Some(tag) = &etag {
            req = req.header("if-none-match", tag);
        }
        let r = req.send().await?;
        match r.status().as_u16() {
            200 => {
                etag = r.headers().get("etag").and_then(|v| v.to_str().ok()).map(str::to_owned);
                view = r.json().await?;
            }
            304 => {}
            other => {
                soak.unexpected(format!("status poll answered {other}"));
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

/// An approver: reads the pending queue, approves (sometimes rejects) what
/// it has not decided yet, until told to stop.
async fn approver(soak: Arc<Soak>, index: usize, session: Session, mut rng: StdRng) {
    let base = soak.base(index).to_owned();
    while !soak.stop_approving.load(Ordering::SeqCst) {
        let page = soak
            .http
            .get(format!("{base}/api/v1/queue?status=pending_approval&order=oldest&limit=50"))
            .header("cookie", &session.cookie)
            .send()
            .await;
        let page: Value = match page {
            Ok(r) if r.status().is_success() => r.json().await.unwrap_or(Value::Null),
            Ok(r) => {
                soak.unexpected(format!("queue answered {}", r.status().as_u16()));
                Value::Null
            }
            Err(e) => {
                soak.unexpected(format!("queue failed: {e}"));
                Value::Null
            }
        };
        let mut decided = 0;
        for p in page["data"].as_array().map(Vec::as_slice).unwrap_or_default() {
            let mine = p["approvals"].as_array().is_some_and(|a| a.iter().any(|a| a["approver_id"] == session.user_id));
            if mine {
                continue;
            }
            let body = if rng.gen_bool(0.05) {
                json!({"decision": "reject", "reason": "soak: not this one"})
            } else {
                json!({"decision": "approve"})
            };
            let id = p["id"].as_str().unwrap_or_default();
            let r = soak
                .http
                .post(format!("{base}/api/v1/proposals/{id}/approvals"))
                .header("cookie", &session.cookie)
                .header("origin", &base)
                .header("x-csrf-token", &session.csrf)
                .json(&body)
                .send()
                .await;
            let outcome = match r {
                Ok(r) => match r.status().as_u16() {
                    200 => format!("{} ok", body["decision"].as_str().unwrap_or_default()),
                    409 => "409 (decided by the other approver first)".to_owned(),
                    code => {
                        let text = r.text().await.unwrap_or_default();
                        soak.unexpected(format!(
                            "decision answered {code}: {}",
                            text.chars().take(120).collect::<String>()
                        ));
                        format!("{code}")
                    }
                },
                Err(e) => {
                    soak.unexpected(format!("decision failed: {e}"));
                    "error".to_owned()
                }
            };
            soak.note(|t| *t.decisions.entry(outcome).or_default() += 1);
            decided += 1;
        }
        if decided == 0 {
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
}

/// Arms a rail fault every 2–6 s until told to stop.
async fn fault_injector(soak: Arc<Soak>, mut rng: StdRng) {
    while !soak.stop_faults.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(rng.gen_range(2_000..6_000))).await;
        let (label, body) = match rng.gen_range(0..4) {
            0 => ("error_500", json!({"mode": "error_500", "count": rng.gen_range(1..=2)})),
            1 => ("drop_after_accept", json!({"mode": "drop_after_accept", "count": rng.gen_range(1..=2)})),
            2 => ("timeout (delay past the rail timeout)", json!({"mode": "delay", "count": 1, "delay_ms": 2_500})),
            _ => ("slow (300 ms delay)", json!({"mode": "delay", "count": rng.gen_range(1..=3), "delay_ms": 300})),
        };
        let count = body["count"].as_u64().unwrap_or(1);
        match soak.http.post(format!("{}/_sim/faults", soak.rail)).json(&body).send().await {
            Ok(r) if r.status().is_success() => soak.note(|t| *t.faults.entry(label).or_default() += count),
            _ => soak.unexpected("arming a rail fault failed".into()),
        }
    }
}

struct Report {
    text: String,
    passed: bool,
}

/// The end-of-run checks, on the stopped server's database and the rail's records.
async fn check(env: &Env, server_dir: &crate::env::ServerDir, db: &CheckDb, soak: &Soak) -> anyhow::Result<Report> {
    let mut report = Report { text: String::new(), passed: true };
    let mut line = |ok: bool, text: String| {
        report.text.push_str(&format!("  [{}] {text}\n", if ok { "ok" } else { "FAIL" }));
        report.passed &= ok;
    };

    // 1. Every proposal in a final state, or explained.
    let counts = |rows: Vec<Value>| -> Vec<(String, i64)> {
        rows.iter()
            .map(|r| (r["status"].as_str().unwrap_or_default().to_owned(), r["n"].as_i64().unwrap_or(0)))
            .collect()
    };
    let by_status =
        counts(db.rows("SELECT status, COUNT(*) AS n FROM proposals GROUP BY status ORDER BY n DESC").await?);
    let ops = counts(db.rows("SELECT status, COUNT(*) AS n FROM operations GROUP BY status ORDER BY n DESC").await?);
    let total: i64 = by_status.iter().map(|(_, n)| n).sum();
    let open: Vec<Value> = db
        .rows(
            "SELECT p.id, p.status, o.status AS op_status, o.error_message AS why FROM proposals p
             LEFT JOIN operations o ON o.proposal_id = p.id ORDER BY p.id",
        )
        .await?
        .into_iter()
        .filter(|r| !FINAL.contains(&r["status"].as_str().unwrap_or_default()))
        .map(|r| json!({"id": r["id"], "status": r["status"], "operation": r["op_status"], "why": r["why"]}))
        .collect();
    let explained = open.iter().all(|p| matches!(p["status"].as_str(), Some("unknown" | "needs_review")));
    let not_final = match (open.is_empty(), explained) {
        (true, _) => String::new(),
        (false, true) => format!(
            "; NOT final ({}, only unknown/needs_review: the rail's record could not be read or decided): {open:?}",
            open.len()
        ),
        (false, false) => format!("; NOT final ({}): {open:?}", open.len()),
    };
    line(
        open.is_empty(),
        format!("{total} proposals, all in a final state: {by_status:?}; operations {ops:?}{not_final}"),
    );

    // 2. The audit chain.
    let verify = env.cli(server_dir, &["audit", "verify"]).await?;
    let said =
        String::from_utf8_lossy(&verify.stdout).trim().to_owned() + String::from_utf8_lossy(&verify.stderr).trim();
    line(verify.status.success(), format!("countersign audit verify: {said}"));

    // 3. Exactly one rail transfer per succeeded operation.
    let transfers: Value = soak.http.get(format!("{}/_sim/transfers", soak.rail)).send().await?.json().await?;
    let transfers = transfers["data"].as_array().cloned().unwrap_or_default();
    let mut by_key: HashMap<String, Vec<&Value>> = HashMap::new();
    for t in &transfers {
        by_key.entry(t["transfer_group"].as_str().unwrap_or_default().to_owned()).or_default().push(t);
    }
    let operations =
        db.rows("SELECT id, status, idempotency_key, amount_minor, rail_reference FROM operations").await?;
    let (mut one, mut problems) = (0usize, Vec::new());
    for op in &operations {
        let (status, key) =
            (op["status"].as_str().unwrap_or_default(), op["idempotency_key"].as_str().unwrap_or_default());
        let found = by_key.remove(key).unwrap_or_default();
        let amount_ok = found.iter().all(|t| t["amount"].as_i64() == op["amount_minor"].as_i64());
        let reference_ok = found.first().is_none_or(|t| t["id"].as_str() == op["rail_reference"].as_str());
        match status {
            "succeeded" if found.len() == 1 && amount_ok && reference_ok => one += 1,
            "failed" if found.is_empty() => {}
            "unknown" | "needs_review" if found.len() <= 1 => {}
            _ => problems.push(format!(
                "{} {status}: {} transfer(s) under {key}{}",
                op["id"].as_str().unwrap_or_default(),
                found.len(),
                if amount_ok && reference_ok { "" } else { ", amount or rail reference differs" }
            )),
        }
    }
    let succeeded = operations.iter().filter(|o| o["status"] == "succeeded").count();
    let orphans: Vec<String> = by_key.keys().cloned().collect();
    line(
        problems.is_empty() && orphans.is_empty() && one == succeeded,
        format!(
            "rail: {} transfers; {one} of {succeeded} succeeded operations have exactly one (same amount and id), failed \
             ones none; {} problem(s) {problems:?}; {} transfer(s) no operation knows {orphans:?}",
            transfers.len(),
            problems.len(),
            orphans.len()
        ),
    );
    Ok(report)
}

/// The servers' database, as the checks read it: the SQLite file, or the
/// PostgreSQL database the instances shared.
enum CheckDb {
    Sqlite(SqlitePool),
    Pg(sqlx::PgPool),
}

impl CheckDb {
    /// The rows of `sql`, each an object of its columns (integers, text or null).
    async fn rows(&self, sql: &str) -> anyhow::Result<Vec<Value>> {
        Ok(match self {
            CheckDb::Sqlite(pool) => sqlx::query(sql).fetch_all(pool).await?.iter().map(as_json).collect(),
            CheckDb::Pg(pool) => sqlx::query(sql).fetch_all(pool).await?.iter().map(as_json).collect(),
        })
    }

    /// Column `n` of the one row of `sql`.
    async fn count(&self, sql: &str) -> anyhow::Result<i64> {
        let rows = self.rows(sql).await?;
        Ok(rows.first().and_then(|r| r["n"].as_i64()).unwrap_or(0))
    }

    async fn close(&self) {
        match self {
            CheckDb::Sqlite(pool) => pool.close().await,
            CheckDb::Pg(pool) => pool.close().await,
        }
    }
}

/// A row as a JSON object: each column an integer, else text, else null.
fn as_json<R: Row>(row: &R) -> Value
where
    usize: sqlx::ColumnIndex<R>,
    for<'r> Option<i64>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let mut object = serde_json::Map::new();
    for (i, column) in row.columns().iter().enumerate() {
        let value = match row.try_get::<Option<i64>, _>(i) {
            Ok(n) => json!(n),
            Err(_) => json!(row.try_get::<Option<String>, _>(i).ok().flatten()),
        };
        object.insert(column.name().to_owned(), value);
    }
    Value::Object(object)
}
