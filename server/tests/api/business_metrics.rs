//! The business metrics on `GET /metrics` (docs/CONFIG.md
//! `metrics.bearer_token`): proposals by status, decisions by channel and
//! verdict, commits by outcome, open `unknown`/`needs_review` operations,
//! the Slack and webhook backlogs and their oldest age, reconciliation lag
//! and approval tokens that expired unused. The exposition is parsed by the
//! `prometheus_client` package's own parser (`e2e/prom_parse.py`), and each
//! family must move between two scrapes.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::console_client::Console;
use crate::helpers::*;
use crate::rail_harness::*;

const TOKEN: &str = "scrape-me-0123456789";

/// One scrape, parsed by prometheus_client: sample name + labels -> value.
async fn scrape(server: &TestServer, python: &PathBuf) -> Vec<Value> {
    let r = send(server.client.get(server.url("/metrics")).bearer_auth(TOKEN)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut child = std::process::Command::new(python)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../e2e/prom_parse.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(r.text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "prometheus_client refused the exposition:\n{}", r.text);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The value of `name` with exactly these `labels` (0 when absent).
fn value(samples: &[Value], name: &str, labels: Value) -> f64 {
    samples.iter().find(|s| s["name"] == name && s["labels"] == labels).and_then(|s| s["value"].as_f64()).unwrap_or(0.0)
}

#[tokio::test]
async fn each_business_metric_moves_and_parses_with_a_real_prometheus_parser() {
    let Some(python) = checkers_python() else {
        eprintln!("SKIPPED: ~/.cache/countersign/venv is missing (scripts/setup.sh --tests)");
        return;
    };
    let rail = RailSim::start().await;
    // A Slack webhook and an agent webhook that never answer (backlogs),
    // a reconciler that runs once an hour (lag), two-second tokens.
    let config = format!(
        "[metrics]\nbearer_token = \"{TOKEN}\"\n\
         [approval]\ntoken_ttl_secs = 2\n\
         [slack]\nwebhook_url = \"http://127.0.0.1:9/slack\"\nallowed_hosts = [\"127.0.0.1\"]\n\
         [webhooks]\nallowed_hosts = [\"127.0.0.1\"]\nallow_http_loopback = true\n\
         [rail]\nreconcile_interval_secs = 3600\n"
    );
    let scratch = Scratch::with_fixture(&rail_config(&rail, &config));
    scratch.apply_fixture().await;
    let (code, _, err) = scratch
        .cli(
            &["agent", "webhook", "set", "--tenant", "acme", "--id", "payout-bot", "--url", "http://127.0.0.1:9/hook"],
            None,
        )
        .await;
    assert_eq!(code, 0, "{err}");
    // A process of its own: the recorder is per process.
    let server = scratch.serve(&[]).await;
    let before = scrape(&server, &python).await;

    let ana = Console::sign_in(&server, "ana").await;
    let approved = server.create(&with(transfer(), json!({"run_id": "m-1"}))).await["id"].as_str().unwrap().to_owned();
    assert_eq!(ana.approve(&approved).await.status, 200);
    let rejected = server.create(&with(transfer(), json!({"run_id": "m-2"}))).await["id"].as_str().unwrap().to_owned();
    assert_eq!(ana.reject(&rejected, "no").await.status, 200);
    // Left waiting: its Slack message cannot be delivered (backlog).
    server.create(&with(transfer(), json!({"run_id": "m-3"}))).await;
    let (paid, token) = auto_approved(&server, 5_000).await;
    assert_eq!(server.commit(&paid, &token).await.status, 200);
    rail.fault("error_500", 1000).await;
    let (lost, token) = auto_approved(&server, 6_000).await;
    assert_eq!(server.commit(&lost, &token).await.body["status"], "unknown");
    // Tokens nobody commits: ana's approval's, and this one's.
    auto_approved(&server, 7_000).await;
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    let after = scrape(&server, &python).await;

    let moved = |name: &str, labels: Value| value(&after, name, labels.clone()) - value(&before, name, labels);
    assert_eq!(moved("countersign_proposals_total", json!({"status": "pending_approval"})), 3.0);
    assert_eq!(moved("countersign_proposals_total", json!({"status": "approved"})), 3.0);
    assert_eq!(moved("countersign_decisions_total", json!({"channel": "api", "verdict": "approve"})), 1.0);
    assert_eq!(moved("countersign_decisions_total", json!({"channel": "api", "verdict": "reject"})), 1.0);
    let paid_outcome = moved("countersign_commits_total", json!({"outcome": "executing"}))
        + moved("countersign_commits_total", json!({"outcome": "succeeded"}));
    assert_eq!(paid_outcome, 1.0);
    assert_eq!(moved("countersign_commits_total", json!({"outcome": "unknown"})), 1.0);
    assert_eq!(value(&after, "countersign_operations_open", json!({"status": "unknown"})), 1.0);
    assert_eq!(value(&after, "countersign_operations_open", json!({"status": "needs_review"})), 0.0);
    for outbox in ["slack", "webhook"] {
        assert!(value(&after, "countersign_outbox_backlog", json!({"outbox": outbox})) >= 1.0, "{outbox}: {after:?}");
        assert!(value(&after, "countersign_outbox_oldest_age_seconds", json!({"outbox": outbox})) > 1.0, "{outbox}");
    }
    // The unknown operation has waited since its commit.
    assert!(value(&after, "countersign_reconciliation_lag_seconds", json!({})) > 2.0, "{after:?}");
    assert!(value(&after, "countersign_approval_tokens_expired_unused", json!({})) >= 2.0, "{after:?}");
    // The types are what a scraper expects.
    let type_of = |family: &str| after.iter().find(|s| s["family"] == family).map(|s| s["type"].clone());
    assert_eq!(type_of("countersign_proposals"), Some(json!("counter")));
    assert_eq!(type_of("countersign_operations_open"), Some(json!("gauge")));
    // No id, tenant or amount in any label.
    for s in &after {
        for (_, v) in s["labels"].as_object().unwrap() {
            let v = v.as_str().unwrap();
            assert!(!v.starts_with("prop_") && !v.starts_with("op_") && v != "acme", "{s}");
        }
    }
}
