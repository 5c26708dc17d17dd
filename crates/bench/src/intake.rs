//! Benchmark 2: intake throughput. `POST /api/v1/proposals` (valid, distinct
//! run ids, no `Idempotency-Key`) for 250.00 USD to an untrusted payee, so
//! policy says `needs_approval`: each request stores the proposal and its
//! audit entry in one transaction. The baseline is raw SQLite: one row of the
//! same size (the proposal row and its audit entry together) per
//! transaction, through a pool opened by the server's own
//! `store::writer_pool` (WAL, `synchronous=FULL`, one connection), with the
//! same number of concurrent writers and the same duration.

use std::sync::Arc;
use std::time::Instant;

use countersign::store::writer_pool;
use sqlx::SqlitePool;

use crate::client::post_json;
use crate::env::{transfer, Env, AGENT_KEY, PAYEE, SOURCE};
use crate::stats::{closed_loop, Latency, LoadReport, LoadSpec};
use crate::suite::{Figure, LoadArgs};

pub async fn run(env: &Env, load: &LoadArgs) -> anyhow::Result<Vec<Figure>> {
    let server_dir = env.provision("intake", "").await?;
    let server = env.serve(&server_dir, &[]).await?;
    println!("  server:   countersign serve (pid {}) on {}", server.pid, server.url);
    let auth: Arc<str> = format!("Bearer {AGENT_KEY}").into();
    let intake = |round: u32| {
        let auth = auth.clone();
        let addr = server.addr;
        closed_loop(load.spec(addr), 201, move |w, seq| {
            let body = transfer(&format!("intake-{round}-{w}-{seq}"), 25_000, PAYEE, SOURCE);
            post_json(addr, "/api/v1/proposals", &[("authorization", &auth)], body.to_string().into_bytes())
        })
    };
    // A first round tells the size of what the server stores per proposal.
    let mut real_rounds = vec![intake(0).await?];
    let row_bytes = stored_bytes_per_proposal(&server_dir.db_path()).await?;
    let raw = RawTable::sqlite(&env.scratch("intake-raw")?.join("raw.db"), row_bytes).await?;
    println!("  baseline: raw SQLite inserts of {row_bytes}-byte rows (a proposal row and its audit entry), one per transaction");
    let mut base_rounds = Vec::new();
    for round in 1..=load.rounds.max(1) {
        if round > 1 {
            real_rounds.push(intake(round).await?);
        }
        let b = raw.run(load.spec(server.addr)).await?;
        println!("  round {round}: raw inserts {}, server {}", b.short(), real_rounds.last().expect("a round").short());
        base_rounds.push(b);
    }
    raw.close().await;
    server.stop().await;
    let (base, real) = (LoadReport::merge(base_rounds), LoadReport::merge(real_rounds));
    println!("  server:   {real} (policy: needs_approval, so no token is minted)");
    println!("  baseline: {base}");

    let ratio = real.per_sec() / base.per_sec().max(1.0) * 100.0;
    Ok(vec![Figure::new(
        "intake throughput",
        format!("{:.0} proposals/s vs raw inserts {:.0} rows/s = {ratio:.1} %", real.per_sec(), base.per_sec()),
        "≥ 75 % of baseline",
        ratio >= 75.0 && real.failed == 0,
    )])
}

/// Bytes of a stored proposal plus its `proposal.created` audit entry.
async fn stored_bytes_per_proposal(db: &std::path::Path) -> anyhow::Result<usize> {
    let pool = SqlitePool::connect(&format!("sqlite://{}?mode=ro", db.display())).await?;
    let proposal: f64 = sqlx::query_scalar(
        "SELECT avg(length(id) + length(tenant_id) + length(agent_id) + length(run_id) + length(kind)
                  + length(status) + length(currency) + length(payee_id) + length(canonical_request)
                  + length(request_hash) + length(policy) + length(created_at) + length(updated_at)
                  + length(expires_at) + 4 * 8)
         FROM proposals",
    )
    .fetch_one(&pool)
    .await?;
    let audit: f64 = sqlx::query_scalar(
        "SELECT avg(length(at) + length(tenant_id) + length(actor) + length(action) + length(proposal_id)
                  + length(request_hash) + length(data) + length(prev_hash) + length(hash) + 8)
         FROM audit_log WHERE action = 'proposal.created'",
    )
    .fetch_one(&pool)
    .await?;
    pool.close().await;
    Ok((proposal + audit).round() as usize)
}

/// The raw-insert baseline: a table of (id, body) rows, in its own SQLite
/// file opened by the server's own `writer_pool`, or in a PostgreSQL
/// database (`pg-intake`).
#[derive(Clone)]
pub enum RawTable {
    Sqlite(SqlitePool, Arc<str>),
    Pg(sqlx::PgPool, Arc<str>),
}

impl RawTable {
    pub async fn sqlite(path: &std::path::Path, row_bytes: usize) -> anyhow::Result<RawTable> {
        let pool = writer_pool(path).await?;
        sqlx::query(RawTable::CREATE).execute(&pool).await?;
        Ok(RawTable::Sqlite(pool, RawTable::body(row_bytes)))
    }

    pub async fn postgres(pool: sqlx::PgPool, row_bytes: usize) -> anyhow::Result<RawTable> {
        sqlx::query(RawTable::CREATE).execute(&pool).await?;
        Ok(RawTable::Pg(pool, RawTable::body(row_bytes)))
    }

    const CREATE: &str = "CREATE TABLE raw_rows (id TEXT PRIMARY KEY, body TEXT NOT NULL)";

    /// A row's body: the id takes 32 of the row's bytes.
    fn body(row_bytes: usize) -> Arc<str> {
        "x".repeat(row_bytes.saturating_sub(32)).into()
    }

    /// `spec.connections` tasks inserting rows, one per transaction, for the
    /// warm-up and the measured duration.
    pub async fn run(&self, spec: LoadSpec) -> anyhow::Result<LoadReport> {
        let table = self.clone();
        timed_inserts(spec, move |id| {
            let table = table.clone();
            async move {
                match &table {
                    RawTable::Sqlite(pool, body) => {
                        let insert = sqlx::query("INSERT INTO raw_rows (id, body) VALUES (?, ?)");
                        insert.bind(id).bind(&**body).execute(pool).await.is_ok()
                    }
                    RawTable::Pg(pool, body) => {
                        let insert = sqlx::query("INSERT INTO raw_rows (id, body) VALUES ($1, $2)");
                        insert.bind(id).bind(&**body).execute(pool).await.is_ok()
                    }
                }
            }
        })
        .await
    }

    pub async fn close(&self) {
        match self {
            RawTable::Sqlite(pool, _) => pool.close().await,
            RawTable::Pg(pool, _) => pool.close().await,
        }
    }
}

/// A raw-insert baseline: `spec.connections` tasks each calling `insert`
/// with a fresh id (true: the row was stored) in a loop, for the warm-up and
/// the measured duration; each insert's latency is a sample.
pub async fn timed_inserts<F, Fut>(spec: LoadSpec, insert: F) -> anyhow::Result<LoadReport>
where
    F: Fn(String) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = bool> + Send,
{
    let start = Instant::now();
    let (from, until) = (start + spec.warmup, start + spec.warmup + spec.duration);
    let mut tasks = Vec::new();
    for _ in 0..spec.connections {
        let insert = insert.clone();
        tasks.push(tokio::spawn(async move {
            let (mut samples, mut failed) = (Vec::new(), 0u64);
            while Instant::now() < until {
                let id = countersign::store::new_id("row", chrono::Utc::now());
                let t0 = Instant::now();
                let stored = insert(id).await;
                let done = Instant::now();
                if done >= from && done < until {
                    match stored {
                        true => samples.push((done - t0).as_micros() as u64),
                        false => failed += 1,
                    }
                }
            }
            (samples, failed)
        }));
    }
    let (mut samples, mut failed) = (Vec::new(), 0);
    for t in tasks {
        let (s, f) = t.await?;
        samples.extend(s);
        failed += f;
    }
    Ok(LoadReport {
        ok: samples.len() as u64,
        failed,
        statuses: Default::default(),
        window: spec.duration,
        latency: Latency::new(samples),
        first_failure: None,
    })
}
