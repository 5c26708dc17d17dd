//! Benchmark 5: the queue page, server-side rendered, with 100,000 proposals
//! (10,000 pending) in the database.
//!
//! One proposal is made through the API as a template; with the server
//! stopped, the tenant is seeded straight into its SQLite file (through the
//! server's own `store::writer_pool`): copies of the template row with their
//! own ids, run ids, times and statuses; approvals for the decided ones;
//! approval tokens and operations for the paid and failed ones. (The audit
//! trail is not seeded: the queue never reads it.) The server is restarted,
//! an approver signs in, and `GET /` — the queue, pending first page, 25
//! rows — is timed one request at a time with the session cookie.

use chrono::{Duration as TimeDelta, Utc};
use countersign::store::{new_id, ts, writer_pool};
use sqlx::Row;
use std::time::Instant;

use crate::client::{get, Conn};
use crate::env::{propose, sign_in, transfer, Env, PAYEE, SOURCE};
use crate::stats::{ms, Latency};
use crate::suite::Figure;

/// Statuses of the non-pending seeded proposals, in rotation.
const DECIDED: [&str; 9] = [
    "succeeded",
    "succeeded",
    "succeeded",
    "succeeded",
    "rejected",
    "expired",
    "cancelled",
    "failed",
    "approval_expired",
];
const WARMUP: usize = 20;

pub struct QueueArgs {
    pub proposals: usize,
    pub pending: usize,
    pub requests: usize,
}

pub async fn run(env: &Env, args: &QueueArgs) -> anyhow::Result<Vec<Figure>> {
    let server_dir = env.provision("queue", "").await?;
    let server = env.serve(&server_dir, &[]).await?;
    let http = crate::env::http();
    let template = propose(&http, &server.url, &transfer("queue-template", 25_000, PAYEE, SOURCE), 201).await?;
    server.stop().await;

    let seeding = Instant::now();
    let counts = seed(&server_dir.db_path(), template["id"].as_str().unwrap_or_default(), args).await?;
    println!("  seeded {counts} in {:.1} s", seeding.elapsed().as_secs_f64());

    let server = env.serve(&server_dir, &[]).await?;
    println!("  server: countersign serve (pid {}) on {}", server.pid, server.url);
    let session = sign_in(&http, &server.url, "ana").await?;
    let mut conn = Conn::open(server.addr).await?;
    let pages: [(&str, usize); 4] = [
        ("/", args.requests),
        ("/?status=pending_approval&order=oldest", args.requests / 4),
        ("/?status=all", args.requests / 4),
        ("/api/v1/queue", args.requests / 4),
    ];
    let mut main = Latency::default();
    for (path, n) in pages {
        let mut times = Vec::with_capacity(n);
        let mut rows = 0;
        for i in 0..n + WARMUP {
            let req = get(server.addr, path, &[("cookie", &session.cookie), ("accept", "text/html")]);
            let (reply, took) = conn.timed(req).await?;
            anyhow::ensure!(reply.status == 200, "GET {path} answered {}: {}", reply.status, reply.text());
            if i == 0 {
                let text = reply.text();
                rows = if path.starts_with("/api/") {
                    reply.json()["data"].as_array().map_or(0, Vec::len)
                } else {
                    anyhow::ensure!(text.contains("Approval queue"), "GET {path} did not render the queue");
                    text.matches("data-proposal=\"").count()
                };
            }
            if i >= WARMUP {
                times.push(took);
            }
        }
        let latency = Latency::from_durations(&times);
        println!("  GET {path:<40} {rows} rows, {} requests: {}", latency.count(), latency.summary());
        if path == "/" {
            main = latency;
        }
    }
    server.stop().await;
    Ok(vec![Figure::new(
        "queue page SSR (100k proposals, 10k pending)",
        format!("GET / p50 {}, p99 {}", ms(main.pct(50.0)), ms(main.pct(99.0))),
        "p50 < 3 ms",
        main.pct(50.0).as_secs_f64() < 0.003,
    )])
}

/// Seeds `args.proposals` proposals copied from `template_id`; returns a summary.
async fn seed(db: &std::path::Path, template_id: &str, args: &QueueArgs) -> anyhow::Result<String> {
    let pool = writer_pool(db).await?;
    let t = sqlx::query("SELECT * FROM proposals WHERE id = ?").bind(template_id).fetch_one(&pool).await?;
    let approver: String = sqlx::query_scalar("SELECT id FROM users WHERE username = 'ana'").fetch_one(&pool).await?;
    let (tenant, agent): (String, String) = (t.get("tenant_id"), t.get("agent_id"));
    let now = Utc::now();
    let every = (args.proposals / args.pending.max(1)).max(1);
    let token_text = format!("eyJ{}", "x".repeat(700));
    let (mut pending, mut approvals, mut operations) = (0usize, 0usize, 0usize);
    let mut tx = pool.begin().await?;
    for i in 0..args.proposals {
        // Oldest first, one every 8 s: the newest is about now.
        let created = now - TimeDelta::seconds(8 * (args.proposals - i) as i64);
        let id = new_id("prop", created);
        let is_pending = i % every == 0 && pending < args.pending;
        let status = if is_pending { "pending_approval" } else { DECIDED[i % DECIDED.len()] };
        let expires = if is_pending { now + TimeDelta::days(1) } else { created + TimeDelta::days(1) };
        pending += usize::from(is_pending);
        sqlx::query(
            "INSERT INTO proposals (id, tenant_id, agent_id, run_id, kind, status, amount_minor, currency, payee_id,
                 invoice_id, canonical_request, request_hash, policy, required_approvals, version, created_at,
                 updated_at, expires_at, approval_round)
             VALUES (?, ?, ?, ?, 'transfer', ?, ?, ?, ?, ?, ?, ?, ?, ?, 3, ?, ?, ?, ?)",
        )
        .bind(&id)
        .bind(&tenant)
        .bind(&agent)
        .bind(format!("seed-{i}"))
        .bind(status)
        .bind(t.get::<i64, _>("amount_minor"))
        .bind(t.get::<String, _>("currency"))
        .bind(t.get::<String, _>("payee_id"))
        .bind(t.get::<Option<String>, _>("invoice_id"))
        .bind(t.get::<String, _>("canonical_request"))
        .bind(t.get::<String, _>("request_hash"))
        .bind(t.get::<String, _>("policy"))
        .bind(t.get::<i64, _>("required_approvals"))
        .bind(ts(created))
        .bind(ts(created))
        .bind(ts(expires))
        // A lapsed approval starts a new round, as `expiry` does: the
        // round-1 approval stays on record and counts no more.
        .bind(if status == "approval_expired" { 2 } else { 1 })
        .execute(&mut *tx)
        .await?;
        let decided = matches!(status, "succeeded" | "failed" | "rejected" | "approval_expired");
        if decided {
            let decision = if status == "rejected" { "reject" } else { "approve" };
            sqlx::query(
                "INSERT INTO approvals (proposal_id, round, approver_id, decision, reason, via, amr, at)
                 VALUES (?, 1, ?, ?, ?, 'console', 'pwd', ?)",
            )
            .bind(&id)
            .bind(&approver)
            .bind(decision)
            .bind((decision == "reject").then_some("not ours"))
            .bind(ts(created + TimeDelta::minutes(5)))
            .execute(&mut *tx)
            .await?;
            approvals += 1;
        }
        if matches!(status, "succeeded" | "failed") {
            let jti = new_id("jti", created);
            let at = created + TimeDelta::minutes(5);
            sqlx::query(
                "INSERT INTO approval_tokens (jti, proposal_id, round, token, kid, issued_at, expires_at, used_at)
                 VALUES (?, ?, 1, ?, 'seed', ?, ?, ?)",
            )
            .bind(&jti)
            .bind(&id)
            .bind(&token_text)
            .bind(ts(at))
            .bind(ts(at + TimeDelta::minutes(5)))
            .bind(ts(at + TimeDelta::seconds(1)))
            .execute(&mut *tx)
            .await?;
            let failed = status == "failed";
            sqlx::query(
                "INSERT INTO operations (id, proposal_id, jti, idempotency_key, tenant_id, kind, status, amount_minor,
                     currency, budget_day, rail_reference, error_code, error_message, attempts, next_check_at,
                     created_at, updated_at)
                 VALUES (?, ?, ?, ?, ?, 'transfer', ?, ?, 'USD', ?, ?, ?, ?, 1, ?, ?, ?)",
            )
            .bind(new_id("op", at))
            .bind(&id)
            .bind(&jti)
            .bind(format!("cs-{id}-seed"))
            .bind(&tenant)
            .bind(status)
            .bind(t.get::<i64, _>("amount_minor"))
            .bind(at.format("%Y-%m-%d").to_string())
            .bind((!failed).then(|| new_id("tr", at)))
            .bind(failed.then_some("insufficient_funds"))
            .bind(failed.then_some("The source account has insufficient funds."))
            .bind(ts(at))
            .bind(ts(at))
            .bind(ts(at))
            .execute(&mut *tx)
            .await?;
            operations += 1;
        }
        if i % 5_000 == 4_999 {
            tx.commit().await?;
            tx = pool.begin().await?;
        }
    }
    tx.commit().await?;
    pool.close().await;
    Ok(format!(
        "{} proposals ({pending} pending, plus the template), {approvals} approvals, {operations} tokens and operations",
        args.proposals
    ))
}
