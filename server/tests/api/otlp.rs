//! Traces out over OTLP/HTTP (docs/DEPLOY.md "Tracing"):
//! a server with `[tracing] otlp_endpoint` sends its spans to a receiver
//! that decodes them with the OpenTelemetry project's own protobuf classes
//! (`e2e/otlp_receiver.py`, `opentelemetry-proto` from PyPI). One span per
//! use case, inside its request's trace, with the proposal and operation
//! ids and the outcome as attributes; reconciliation spans marked so; no
//! account number anywhere.

use std::time::Duration;

use serde_json::Value;

use crate::helpers::*;
use crate::rail_harness::*;

/// The spans received so far.
fn spans(out: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect()
}

#[tokio::test]
async fn use_cases_are_traced_over_otlp_with_ids_and_outcomes_and_no_account_numbers() {
    let Some(python) = checkers_python() else {
        // make test always has it (scripts/setup.sh --tests); a bare
        // `cargo test` on a machine without it says so.
        eprintln!("SKIPPED: ~/.cache/countersign/venv is missing (scripts/setup.sh --tests)");
        return;
    };
    let dir = TestDir::new();
    let out = dir.path().join("spans.jsonl");
    let mut cmd = tokio::process::Command::new(python);
    cmd.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../e2e/otlp_receiver.py")).arg(&out);
    let (_receiver, port) = countersign_testkit::spawn_listening(cmd, "listening on ", Duration::from_secs(30))
        .await
        .expect("the receiver starts");

    let rail = RailSim::start().await;
    let config = format!("[tracing]\notlp_endpoint = \"http://127.0.0.1:{port}/v1/traces\"\n");
    let scratch = Scratch::with_fixture(&rail_config(&rail, &config));
    scratch.apply_fixture().await;
    // Export every 200 ms (the SDK's OTEL_BSP_SCHEDULE_DELAY), not every 5 s.
    let server = scratch.serve(&[("OTEL_BSP_SCHEDULE_DELAY", "200")]).await;

    // A payment paid at once, and one whose rail call fails (500): unknown,
    // then settled by reconciliation.
    let (paid, token) = auto_approved(&server, 5_000).await;
    let committed = server.commit(&paid, &token).await;
    let paid_op = committed.body["operation"]["id"].as_str().unwrap().to_owned();
    rail.fault("error_500", 1).await;
    let (late, token) = auto_approved(&server, 6_000).await;
    let r = server.commit(&late, &token).await;
    assert_eq!(r.body["status"], "unknown", "{}", r.text);
    let late_op = r.body["operation"]["id"].as_str().unwrap().to_owned();
    server.wait_status(&late, "succeeded", 30).await;

    let find = |spans: &[Value], name: &str, key: &str, id: &str| {
        spans.iter().find(|s| s["name"] == name && s["attributes"][key] == id).cloned()
    };
    let mut got = Vec::new();
    for _ in 0..100 {
        got = spans(&out);
        let moved = |s: &Value| s["attributes"]["operation_status"] == "succeeded";
        let reconciled = got
            .iter()
            .any(|s| s["name"] == "reconcile" && s["attributes"]["operation_id"] == late_op.as_str() && moved(s));
        if reconciled && find(&got, "commit", "proposal_id", &paid).is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(got.iter().all(|s| s.get("error").is_none()), "the receiver refused an export: {got:?}");
    assert!(!got.is_empty(), "no span arrived");
    assert!(got.iter().all(|s| s["resource"]["service.name"] == "countersign"), "{:?}", got[0]);

    let propose = find(&got, "propose", "proposal_id", &paid).expect("the propose span");
    assert_eq!(propose["attributes"]["outcome"], "ok");
    assert_eq!(propose["attributes"]["tenant"], "acme");

    let commit = find(&got, "commit", "proposal_id", &paid).expect("the commit span");
    assert_eq!(commit["attributes"]["operation_id"], paid_op.as_str());
    assert_eq!(commit["attributes"]["outcome"], "ok");
    // The proposal's status as the commit left it (the rail may settle later).
    let status = commit["attributes"]["payment_status"].as_str().unwrap();
    assert!(["executing", "succeeded"].contains(&status), "{commit}");
    // Inside the trace of its HTTP request.
    let parent = got.iter().find(|s| s["span_id"] == commit["parent_span_id"]).expect("the commit's parent span");
    assert_eq!(parent["trace_id"], commit["trace_id"]);
    assert_eq!(parent["name"], "request", "{parent}");

    let unknown = find(&got, "commit", "proposal_id", &late).expect("the second commit span");
    assert_eq!(unknown["attributes"]["payment_status"], "unknown");
    let reconcile = got
        .iter()
        .find(|s| {
            let a = &s["attributes"];
            s["name"] == "reconcile" && a["operation_id"] == late_op.as_str() && a["operation_status"] == "succeeded"
        })
        .expect("the reconciliation that settled it");
    assert_eq!(reconcile["attributes"]["reconciliation"], true);
    assert_eq!(reconcile["attributes"]["operation_id"], late_op.as_str());
    assert_eq!(reconcile["attributes"]["proposal_id"], late.as_str());

    // A refused commit is an error span.
    let again = server.commit(&paid, "not-a-token").await;
    again.assert_error(401, "approval_token_invalid");
    let mut refused = None;
    for _ in 0..50 {
        refused = spans(&out).into_iter().find(|s| {
            s["name"] == "commit"
                && s["attributes"]["proposal_id"] == paid.as_str()
                && s["attributes"]["outcome"] == "error"
        });
        if refused.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(refused.expect("the refused commit's span")["status"], 2, "STATUS_CODE_ERROR");

    let text = std::fs::read_to_string(&out).unwrap();
    for account in [ACME_SOURCE, ACME_TRUSTED_PAYEE, ACME_PAYEE] {
        assert!(!text.contains(account), "{account} is in a span");
    }
}
