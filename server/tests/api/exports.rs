//! Exports for finance (docs/DEPLOY.md "Exports for
//! finance"): payments by date range as CSV or JSON on the console (admins
//! and auditors) and the CLI, audited, one tenant's only, no account
//! number in them; and the reconciliation report, on demand and nightly.

use reqwest::Method;
use serde_json::{json, Value};

use crate::console_client::*;
use crate::helpers::*;
use crate::rail_harness::*;

fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

/// The CSV export's rows, as maps from column to cell.
fn csv_rows(text: &str) -> (Vec<String>, Vec<std::collections::BTreeMap<String, String>>) {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_owned).collect();
    let rows =
        reader.records().map(|r| header.iter().cloned().zip(r.unwrap().iter().map(str::to_owned)).collect()).collect();
    (header, rows)
}

#[tokio::test]
async fn payments_export_as_csv_and_json_with_approvers_operations_and_no_account_numbers() {
    let (server, _rail) = with_rail("").await;
    // Paid, approved by policy.
    let (paid, token) = auto_approved(&server, 5_000).await;
    assert_eq!(server.commit(&paid, &token).await.status, 200);
    server.wait_status(&paid, "succeeded", 30).await;
    // Approved by ana on the console; rejected by ana.
    let ana = Console::sign_in(&server, "ana").await;
    let approved = server.create(&with(transfer(), json!({"run_id": "export-1"}))).await;
    let approved = approved["id"].as_str().unwrap().to_owned();
    assert_eq!(ana.approve(&approved).await.status, 200);
    let rejected = server.create(&with(transfer(), json!({"run_id": "export-2"}))).await;
    let rejected = rejected["id"].as_str().unwrap().to_owned();
    assert_eq!(ana.reject(&rejected, "not ours").await.status, 200);
    // Another tenant's payment is never in acme's export.
    let globex = with(transfer(), json!({"source_account": GLOBEX_SOURCE, "destination": GLOBEX_PAYEE}));
    let globex = server.propose_as(GLOBEX_BOT_KEY, &globex).await;
    assert_eq!(globex.status, 201, "{}", globex.text);

    let ada = add_admin(&server, "acme", "ada").await;
    let path = format!("/api/v1/console/exports/payments?from={}", today());
    let r = send(ada.bare(Method::GET, &path)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.header("content-type").unwrap().starts_with("text/csv"), "{:?}", r.headers);
    let disposition = r.header("content-disposition").unwrap();
    assert!(disposition.starts_with("attachment; filename=\"payments-acme-"), "{disposition}");
    let (header, rows) = csv_rows(&r.text);
    assert_eq!(header, countersign::evidence::exports::COLUMNS);
    let ids: Vec<&str> = rows.iter().map(|r| r["proposal_id"].as_str()).collect();
    assert_eq!(ids, [paid.as_str(), approved.as_str(), rejected.as_str()], "acme's, oldest first");
    let row = |id: &str| rows.iter().find(|r| r["proposal_id"] == id).unwrap();

    let p = row(&paid);
    assert_eq!((p["status"].as_str(), p["operation_status"].as_str()), ("succeeded", "succeeded"));
    assert!(p["rail_reference"].starts_with("tr_"), "{p:?}");
    assert!(p["operation_id"].starts_with("op_"), "{p:?}");
    // Approved by the policy rule, named as the audit trail names it.
    assert_eq!(p["approvers"], "policy:auto_approve_trusted_payee");
    assert_eq!(p["policy_outcome"], "auto_approved");
    assert_eq!((p["amount"].as_str(), p["currency"].as_str(), p["amount_minor"].as_str()), ("50.00", "USD", "5000"));
    let a = row(&approved);
    // ana decided through the console's JSON API: channel `api`.
    assert_eq!((a["approvers"].as_str(), a["approval_channels"].as_str()), ("ana", "api"));
    assert_eq!(a["status"], "approved");
    assert!(a["decision_seconds"].parse::<i64>().unwrap() >= 0, "{a:?}");
    assert!(!a["decided_at"].is_empty());
    assert_eq!(a["operation_id"], "", "not committed");
    let j = row(&rejected);
    assert_eq!((j["rejected_by"].as_str(), j["approvers"].as_str(), j["status"].as_str()), ("ana", "", "rejected"));
    // The evidence id is the request hash the proposal (and its bundle) carries.
    let view = server.get_proposal(ACME_BOT_KEY, &approved).await;
    assert_eq!(a["evidence_id"], view.body["request_hash"].as_str().unwrap());
    for account in [ACME_PAYEE, ACME_SOURCE, ACME_TRUSTED_PAYEE] {
        assert!(!r.text.contains(account), "{account} appears in the export");
    }
    assert_eq!(a["destination"], countersign::domain::mask_account_tagged(ACME_PAYEE));

    // JSON: the same records.
    let r = send(ada.bare(Method::GET, &format!("{path}&to={}&format=json", today()))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let records = r.body.as_array().unwrap();
    assert_eq!(records.len(), 3);
    assert_eq!(records[1]["approvers"], "ana");
    assert_eq!(records[0]["amount_minor"], 5000);

    // An auditor may export; an approver may not; nobody signed out.
    apply_user(&server, "acme", "audrey", &["auditor"], 0).await;
    let audrey = Console::sign_in(&server, "audrey").await;
    assert_eq!(send(audrey.bare(Method::GET, &path)).await.status, 200);
    send(ana.bare(Method::GET, &path)).await.assert_error(403, "forbidden");
    send(http_client().get(server.url(&path))).await.assert_error(401, "unauthenticated");
    // Bad ranges and formats name their parameter.
    for (query, field) in
        [("from=2026-02-30", "from"), ("to=2026-01-01", "from"), ("from=2026-02-02&to=2026-02-01", "to")]
    {
        let r = send(ada.bare(Method::GET, &format!("/api/v1/console/exports/payments?{query}"))).await;
        r.assert_error(422, "validation_failed");
        assert_eq!(r.body["error"]["details"][0]["field"], field, "{query}: {}", r.text);
    }
    let r = send(ada.bare(Method::GET, &format!("{path}&format=xlsx"))).await;
    assert_eq!(r.body["error"]["details"][0]["field"], "format", "{}", r.text);
    // A day with nothing: the header alone.
    let r = send(ada.bare(Method::GET, "/api/v1/console/exports/payments?from=2020-01-01")).await;
    assert_eq!(csv_rows(&r.text).1.len(), 0);
    assert!(r.text.starts_with("proposal_id,"), "{}", r.text);

    // Every export is in the audit trail, with who and what.
    let exported = server.audit_actions_where("export.payments").await;
    assert_eq!(exported.len(), 4, "{exported:?}");

    // The CLI writes the same export for the operator.
    let (code, out, err) =
        server.cli(&["export", "payments", "--tenant", "acme", "--from", &today(), "--format", "json"]).await;
    assert_eq!(code, 0, "{err}");
    let cli: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(cli, *records, "the console's and the CLI's exports agree");
    assert!(err.contains("3 payments exported"), "{err}");
}

#[tokio::test]
async fn the_reconciliation_report_lists_unknown_operations_on_demand_and_nightly() {
    let reports = TestDir::new();
    let config = format!("[reports]\nreconciliation_hour_utc = 0\ndir = {:?}\n", reports.path().display().to_string());
    let (server, rail) = with_rail(&config).await;
    // The nightly report of today is written once the server runs (hour 0).
    let nightly = reports.path().join(format!("reconciliation-{}.json", today()));
    for _ in 0..100 {
        if nightly.exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let written: Value = serde_json::from_slice(&std::fs::read(&nightly).expect("the nightly report")).unwrap();
    assert_eq!(written["open"], 0, "{written}");

    // An operation the rail answered 500 (and keeps answering) stays unknown.
    rail.fault("error_500", 1000).await;
    let (id, token) = auto_approved(&server, 5_000).await;
    let r = server.commit(&id, &token).await;
    assert_eq!(r.body["operation"]["status"], "unknown", "{}", r.text);
    let op = r.body["operation"]["id"].as_str().unwrap().to_owned();

    let out = reports.path().join("now.json");
    let (code, stdout, err) = server.cli(&["report", "reconciliation", "--out", out.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("1 operation(s) unknown or needing review"), "{stdout}");
    let text = std::fs::read_to_string(&out).unwrap();
    let report: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["open"], 1);
    let listed = &report["operations"][0];
    assert_eq!(
        (listed["operation_id"].as_str(), listed["proposal_id"].as_str()),
        (Some(op.as_str()), Some(id.as_str()))
    );
    assert_eq!((listed["status"].as_str(), listed["amount"].as_str()), (Some("unknown"), Some("50.00")));
    assert!(!text.contains(ACME_TRUSTED_PAYEE) && !text.contains(ACME_SOURCE), "{text}");
}
