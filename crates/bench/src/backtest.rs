//! The policy backtest over 100,000 recorded proposals
//! (`countersign policy backtest CANDIDATE --since 90d`, docs/POLICY.md):
//! the real command, timed from start to exit, on a SQLite database seeded
//! with `--proposals` proposals spread over the last 89 days, in the five
//! default currencies, at amounts around every default threshold, to the
//! trusted and to an ordinary payee. The candidate is the default rules
//! converted to Cedar with no approval by policy alone (`policy to-cedar`,
//! its auto-approval policies removed), so every auto-approval is a change.

use chrono::{Duration as TimeDelta, Utc};
use countersign::store::{new_id, ts, writer_pool};
use sqlx::Row;
use std::time::Instant;

use crate::env::{propose, transfer, Env, PAYEE, SOURCE, TRUSTED_PAYEE};
use crate::suite::Figure;

/// Amounts (minor units) per currency, in rotation: around the default
/// auto-approval and dual-approval thresholds.
const AMOUNTS: [(&str, [u64; 4]); 5] = [
    ("USD", [9_999, 10_000, 999_999, 1_000_000]),
    ("EUR", [5_000, 10_001, 250_000, 2_000_000]),
    ("GBP", [1, 9_999, 1_000_000, 40_000]),
    ("JPY", [14_999, 15_000, 1_499_999, 1_500_000]),
    ("VND", [2_499_999, 2_500_000, 249_999_999, 250_000_000]),
];

pub async fn run(env: &Env, proposals: usize) -> anyhow::Result<Vec<Figure>> {
    let server_dir = env.provision("backtest", "").await?;
    let server = env.serve(&server_dir, &[]).await?;
    let http = crate::env::http();
    let template =
        propose(&http, &server.url, &transfer("backtest-template", 5_000, TRUSTED_PAYEE, SOURCE), 201).await?;
    server.stop().await;

    let seeding = Instant::now();
    seed(&server_dir.db_path(), template["id"].as_str().unwrap_or_default(), proposals).await?;
    println!("  seeded {proposals} proposals in {:.1} s", seeding.elapsed().as_secs_f64());

    let converted = env.cli(&server_dir, &["policy", "to-cedar"]).await?;
    anyhow::ensure!(converted.status.success(), "policy to-cedar failed");
    let text = String::from_utf8(converted.stdout)?;
    let candidate: String =
        text.split("\n\n").filter(|block| !block.contains("Action::\"auto_approve\"")).collect::<Vec<_>>().join("\n\n");
    let file = server_dir.dir.join("candidate.cedar");
    std::fs::write(&file, candidate)?;

    let mut runs = Vec::new();
    let mut last = String::new();
    for _ in 0..3 {
        let started = Instant::now();
        let out = env
            .cli(
                &server_dir,
                &["policy", "backtest", file.to_str().unwrap_or_default(), "--tenant", "bench", "--since", "90d"],
            )
            .await?;
        runs.push(started.elapsed());
        anyhow::ensure!(out.status.success(), "policy backtest failed: {}", String::from_utf8_lossy(&out.stderr));
        last = String::from_utf8_lossy(&out.stdout).into_owned();
    }
    for line in last.lines().take(8) {
        println!("  | {line}");
    }
    runs.sort();
    let median = runs[runs.len() / 2];
    println!(
        "  3 runs of the command, start to exit: {}",
        runs.iter().map(|d| format!("{:.2} s", d.as_secs_f64())).collect::<Vec<_>>().join(", ")
    );
    Ok(vec![Figure::new(
        "policy backtest, 100k recorded proposals (CLI, start to exit)",
        format!("median {:.2} s of 3", median.as_secs_f64()),
        "< 10 s",
        median.as_secs_f64() < 10.0,
    )])
}

/// `proposals` copies of the template with their own ids, amounts,
/// currencies, payees and times (the canonical request rewritten to match).
async fn seed(db: &std::path::Path, template_id: &str, proposals: usize) -> anyhow::Result<()> {
    let pool = writer_pool(db).await?;
    let t = sqlx::query("SELECT * FROM proposals WHERE id = ?").bind(template_id).fetch_one(&pool).await?;
    let canonical: serde_json::Value = serde_json::from_str(&t.get::<String, _>("canonical_request"))?;
    let (tenant, agent): (String, String) = (t.get("tenant_id"), t.get("agent_id"));
    let now = Utc::now();
    let span = TimeDelta::days(89).num_seconds();
    let mut tx = pool.begin().await?;
    for i in 0..proposals {
        let created = now - TimeDelta::seconds(span - (span * i as i64) / proposals.max(1) as i64);
        let id = new_id("prop", created);
        let (currency, amounts) = AMOUNTS[i % AMOUNTS.len()];
        let amount = amounts[(i / AMOUNTS.len()) % amounts.len()];
        let payee = if i % 3 == 0 { PAYEE } else { TRUSTED_PAYEE };
        let mut request = canonical.clone();
        request["amount_minor"] = amount.into();
        request["currency"] = currency.into();
        request["destination"]["id"] = payee.into();
        sqlx::query(
            "INSERT INTO proposals (id, tenant_id, agent_id, run_id, kind, status, amount_minor, currency, payee_id,
                 invoice_id, canonical_request, request_hash, policy, required_approvals, version, created_at,
                 updated_at, expires_at, approval_round)
             VALUES (?, ?, ?, ?, 'transfer', 'expired', ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, 1)",
        )
        .bind(&id)
        .bind(&tenant)
        .bind(&agent)
        .bind(format!("seed-{i}"))
        .bind(amount as i64)
        .bind(currency)
        .bind(payee)
        .bind(t.get::<Option<String>, _>("invoice_id"))
        .bind(request.to_string())
        .bind(t.get::<String, _>("request_hash"))
        .bind(t.get::<String, _>("policy"))
        .bind(t.get::<i64, _>("required_approvals"))
        .bind(ts(created))
        .bind(ts(created))
        .bind(ts(created + TimeDelta::days(1)))
        .execute(&mut *tx)
        .await?;
        if i % 5_000 == 4_999 {
            tx.commit().await?;
            tx = pool.begin().await?;
        }
    }
    tx.commit().await?;
    pool.close().await;
    Ok(())
}
