//! Batches (docs/PAYABLES.md "Batches"): an agent proposes several payments
//! at once; lines that fail their checks are held back; people review the
//! totals, may hold back more lines (a new batch hash, a new round), and
//! approve the batch as one, naming the hash they saw; one token bound to
//! the batch hash pays each included line as a payment of its own on the
//! rail, reconciled on its own.

use reqwest::Method;
use serde_json::{json, Value};

use crate::console_client::*;
use crate::helpers::*;
use crate::payables::import_rows;
use crate::rail_harness::*;

/// A line paying `invoice` to `destination`.
fn line(amount_minor: u64, destination: &str, invoice: &str) -> Value {
    json!({"amount_minor": amount_minor, "currency": "USD", "source_account": ACME_SOURCE,
           "destination": destination, "reference": format!("Invoice {invoice}"), "purpose_code": "vendor",
           "invoice_id": invoice})
}

fn batch(lines: Vec<Value>) -> Value {
    json!({"run_id": fresh_run(), "label": "Vendor run", "lines": lines})
}

async fn propose(server: &TestServer, body: &Value) -> Reply {
    send(server.post_json("/api/v1/batches", ACME_BOT_KEY, body)).await
}

/// Proposes `body`; panics unless 201. The batch.
async fn proposed(server: &TestServer, body: &Value) -> Value {
    let r = propose(server, body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.body
}

async fn read(server: &TestServer, key: &str, id: &str) -> Reply {
    send(server.get(&format!("/api/v1/batches/{id}"), key)).await
}

async fn hold(console: &Console, id: &str, line: i64, reason: &str) -> Reply {
    send(
        console
            .authed(Method::POST, &format!("/api/v1/console/batches/{id}/lines/{line}/hold"))
            .json(&json!({"reason": reason})),
    )
    .await
}

async fn approve(console: &Console, id: &str, hash: &str) -> Reply {
    let body = json!({"decision": "approve", "batch_hash": hash});
    send(console.authed(Method::POST, &format!("/api/v1/console/batches/{id}/approvals")).json(&body)).await
}

async fn commit_as(server: &TestServer, key: &str, id: &str, token: &str) -> Reply {
    send(server.post_json(&format!("/api/v1/batches/{id}/commit"), key, &json!({"approval_token": token}))).await
}

fn statuses(b: &Value) -> Vec<String> {
    b["lines"].as_array().unwrap().iter().map(|l| l["status"].as_str().unwrap().to_owned()).collect()
}

fn held_rules(b: &Value, n: usize) -> Vec<String> {
    b["lines"][n]["held_reasons"].as_array().unwrap().iter().map(|r| r["rule"].as_str().unwrap().to_owned()).collect()
}

/// A batch of two lines (150.00 and 75.00 USD) approved by ben: (id, token).
async fn approved_batch(server: &TestServer) -> (String, String) {
    let b = proposed(
        server,
        &batch(vec![line(15_000, ACME_PAYEE, &fresh_run()), line(7_500, ACME_TRUSTED_PAYEE, &fresh_run())]),
    )
    .await;
    let id = b["id"].as_str().unwrap().to_owned();
    let ben = Console::sign_in(server, "ben").await;
    let r = approve(&ben, &id, b["batch_hash"].as_str().unwrap()).await;
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("approved")), "{}", r.text);
    assert_eq!(r.body["approval_token"], Value::Null, "the console never sees the token");
    let r = read(server, ACME_BOT_KEY, &id).await;
    (id, r.body["approval_token"].as_str().unwrap_or_else(|| panic!("token: {}", r.text)).to_owned())
}

#[tokio::test]
async fn a_batch_holds_back_the_lines_that_fail_their_checks_and_totals_the_rest() {
    let server = TestServer::start().await;
    import_rows(&server, &format!("INV-P,Northwind Traders GmbH,{ACME_PAYEE},90.00,USD,2026-12-01,paid,90.00,\n"))
        .await;
    let body = batch(vec![
        line(12_000, ACME_PAYEE, "B-1"),
        line(5_000, ACME_TRUSTED_PAYEE, "B-2"),
        line(3_000, ACME_TRUSTED_PAYEE, "B-3"),
        line(0, ACME_PAYEE, "B-4"),
        line(1_000, "ba_nobody000001", "B-5"),
        line(2_000, ACME_PAYEE, "B-1"),
        line(9_000, ACME_PAYEE, "INV-P"),
        json!("pay everyone twice"),
        with(line(4_000, ACME_TRUSTED_PAYEE, "B-9"), json!({"currency": "EUR"})),
    ]);
    let b = proposed(&server, &body).await;
    assert!(b["id"].as_str().unwrap().starts_with("bat_"), "{b}");
    assert_eq!(b["status"], "pending_approval", "never approved by policy alone, small trusted lines or not: {b}");
    assert_eq!(b["label"], "Vendor run");
    assert_eq!(
        statuses(&b),
        ["included", "included", "included", "held", "held", "held", "held", "held", "included"],
        "{b}"
    );
    assert_eq!(held_rules(&b, 3), ["validation_failed"]);
    assert_eq!(held_rules(&b, 4), ["unknown_destination"]);
    assert_eq!(held_rules(&b, 5), ["duplicate_invoice"], "a second line for one invoice: {b}");
    assert!(b["lines"][5]["held_reasons"][0]["message"].as_str().unwrap().contains("Line 1"), "{b}");
    assert!(!held_rules(&b, 6).is_empty(), "an invoice the registry says is paid: {b}");
    assert_eq!(held_rules(&b, 7), ["validation_failed"]);
    for n in 3..8 {
        assert_eq!(b["lines"][n]["held_by"], "checks", "{b}");
    }
    assert!(b["lines"][0]["masked_account"].as_str().unwrap().starts_with("ba_…0007"), "{b}");
    assert_eq!(b["lines"][0]["amount"], "120.00 USD");

    // Totals over the included lines only, per currency (never converted):
    // 200.00 USD and 40.00 EUR; by payee, 120.00 USD to Northwind, 80.00 USD
    // and 40.00 EUR to Acme.
    let t = &b["totals"];
    let mut by_currency: Vec<Value> = t["by_currency"].as_array().unwrap().clone();
    by_currency.sort_by_key(|c| c["currency"].as_str().unwrap().to_owned());
    assert_eq!(
        by_currency,
        [
            json!({"currency": "EUR", "amount_minor": 4_000, "amount": "40.00 EUR", "lines": 1}),
            json!({"currency": "USD", "amount_minor": 20_000, "amount": "200.00 USD", "lines": 3}),
        ]
    );
    let mut by_payee: Vec<(String, String, u64, u64)> = t["by_payee"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let text = |k: &str| p[k].as_str().unwrap().to_owned();
            (text("legal_name"), text("currency"), p["amount_minor"].as_u64().unwrap(), p["lines"].as_u64().unwrap())
        })
        .collect();
    by_payee.sort();
    assert_eq!(
        by_payee,
        [
            ("Acme Supplies Ltd".into(), "EUR".into(), 4_000, 1),
            ("Acme Supplies Ltd".into(), "USD".into(), 8_000, 2),
            ("Northwind Traders GmbH".into(), "USD".into(), 12_000, 1),
        ]
    );
    assert!(b["policy"]["reasons"][0]["message"].as_str().unwrap().contains("never by policy alone"), "{b}");
    assert_eq!(b["approval_token"], Value::Null);

    // The same batch again in its run is the same batch.
    let again = propose(&server, &body).await;
    assert_eq!((again.status, again.body["id"].clone()), (200, b["id"].clone()), "{}", again.text);
    // Audited once, with no full account number in the trail.
    let created = server.audit_actions_where("batch.created").await;
    assert_eq!(created.len(), 1, "{created:?}");
    assert_eq!((created[0]["data"]["included"].as_u64(), created[0]["data"]["held"].as_u64()), (Some(4), Some(5)));
    assert_eq!(created[0]["data"]["held_lines"][1], json!({"line": 5, "rules": ["unknown_destination"]}));
    let trail = serde_json::to_string(&created).unwrap();
    assert!(!trail.contains(ACME_PAYEE) && !trail.contains(ACME_SOURCE), "{trail}");

    // No line passes, every one malformed: bad input, 422 naming each line, nothing kept.
    let r = propose(&server, &batch(vec![line(0, ACME_PAYEE, "Z-1"), json!("not a line")])).await;
    r.assert_error(422, "validation_failed");
    assert_eq!(r.detail_fields(), ["lines[0]", "lines[1]"].iter().map(|s| s.to_string()).collect());
    assert!(r.text.contains("Line 2: A line must be a JSON object."), "{}", r.text);
    assert!(server.audit_actions_where("batch.denied").await.is_empty());
    // No line passes, one refused by a check: an outcome, 403, nothing stored but the audit entry.
    let r = propose(&server, &batch(vec![line(0, ACME_PAYEE, "Z-1"), line(1_000, "ba_nobody000001", "Z-2")])).await;
    r.assert_error(403, "policy_denied");
    assert_eq!(server.audit_actions_where("batch.denied").await.len(), 1);
    // The envelope itself: every bad field named.
    let r = propose(&server, &json!({"lines": [], "tenant": "globex"})).await;
    r.assert_error(422, "validation_failed");
    assert_eq!(r.detail_fields(), ["lines", "run_id", "tenant"].iter().map(|s| s.to_string()).collect());
    let r = send(server.post_json("/api/v1/batches", "cs_test_wrong", &body)).await;
    assert_eq!(r.status, 401);
}

#[tokio::test]
async fn a_line_held_back_by_a_reviewer_changes_the_hash_and_an_approval_of_the_old_one_is_refused() {
    let server = TestServer::start().await;
    let b = proposed(
        &server,
        &batch(vec![
            line(20_000, ACME_PAYEE, "H-1"),
            line(30_000, ACME_PAYEE, "H-2"),
            line(4_000, ACME_TRUSTED_PAYEE, "H-3"),
        ]),
    )
    .await;
    let id = b["id"].as_str().unwrap();
    let seen = b["batch_hash"].as_str().unwrap().to_owned();
    let ben = Console::sign_in(&server, "ben").await;

    // Holding back: CSRF, role and tenant first.
    let path = format!("/api/v1/console/batches/{id}/lines/2/hold");
    let r = send(ben.with_origin(Method::POST, &path).json(&json!({"reason": "no"}))).await;
    r.assert_error(403, "forbidden");
    let vic = Console::sign_in(&server, "vic").await;
    hold(&vic, id, 2, "not mine to say").await.assert_error(403, "forbidden");
    let gus = Console::sign_in(&server, "gus").await;
    hold(&gus, id, 2, "another tenant").await.assert_error(404, "not_found");
    assert_eq!(send(gus.bare(Method::GET, &format!("/api/v1/console/batches/{id}"))).await.status, 404);
    hold(&ben, id, 2, "  ").await.assert_error(422, "validation_failed");
    hold(&ben, id, 9, "no such line").await.assert_error(404, "not_found");

    let r = hold(&ben, id, 2, "Vendor asked to wait until next month").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let after = r.body;
    assert_eq!(statuses(&after), ["included", "held", "included"]);
    assert_eq!(after["lines"][1]["held_by"], "reviewer");
    assert_eq!(after["lines"][1]["held_reasons"][0]["message"], "Vendor asked to wait until next month");
    assert_eq!(after["totals"]["by_currency"][0]["amount_minor"], 24_000);
    assert_eq!(after["round"], 2);
    let now = after["batch_hash"].as_str().unwrap().to_owned();
    assert_ne!(now, seen, "holding back a line changes the batch hash");
    hold(&ben, id, 2, "again").await.assert_error(409, "invalid_state");

    // An approval naming the hash seen before is refused; without one too.
    let stale = approve(&ben, id, &seen).await;
    stale.assert_error(409, "invalid_state");
    assert!(stale.body["error"]["message"].as_str().unwrap().contains("review it again"), "{}", stale.text);
    let r = send(
        ben.authed(Method::POST, &format!("/api/v1/console/batches/{id}/approvals"))
            .json(&json!({"decision": "approve"})),
    )
    .await;
    r.assert_error(422, "validation_failed");
    let r = send(
        ben.with_origin(Method::POST, &format!("/api/v1/console/batches/{id}/approvals"))
            .json(&json!({"decision": "approve", "batch_hash": now})),
    )
    .await;
    r.assert_error(403, "forbidden");
    assert_eq!(read(&server, ACME_BOT_KEY, id).await.body["status"], "pending_approval");

    let r = approve(&ben, id, &now).await;
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("approved")), "{}", r.text);
    assert_eq!(r.body["approvals"][0]["batch_hash"], now.as_str());
    hold(&ben, id, 1, "too late").await.assert_error(409, "invalid_state");
    let token = read(&server, ACME_BOT_KEY, id).await.body["approval_token"].as_str().unwrap().to_owned();
    let claims = decode_jws(&token).claims;
    assert_eq!((claims["pid"].as_str(), claims["rh"].as_str()), (Some(id), Some(now.as_str())));
    // Another agent of the tenant, and another tenant's, never see it.
    assert_eq!(read(&server, ACME_OTHER_KEY, id).await.status, 404);
    assert_eq!(read(&server, GLOBEX_BOT_KEY, id).await.status, 404);

    for action in ["batch.line_held", "batch.approval_given", "batch.approved"] {
        assert!(!server.audit_actions_where(action).await.is_empty(), "{action} audited");
    }
}

#[tokio::test]
async fn a_batch_needs_the_approvals_its_total_needs_from_approvers_whose_limit_covers_it() {
    let server = TestServer::start().await;
    add_acme_approver(&server, "cal", 50_000_000).await;
    // Each line under the dual-approval threshold, together above it.
    let b = proposed(&server, &batch(vec![line(600_000, ACME_PAYEE, "D-1"), line(500_000, ACME_PAYEE, "D-2")])).await;
    assert_eq!(b["policy"]["required_approvals"], 2, "{b}");
    let id = b["id"].as_str().unwrap();
    let hash = b["batch_hash"].as_str().unwrap();

    // ana's limit (5,000.00) does not cover the 11,000.00 total.
    let ana = Console::sign_in(&server, "ana").await;
    let r = approve(&ana, id, hash).await;
    r.assert_error(403, "policy_denied");
    assert_eq!(r.detail_rules(), ["approver_limit"]);
    // maya is whom the agent acts for.
    let maya = Console::sign_in(&server, "maya").await;
    let r = approve(&maya, id, hash).await;
    assert!(r.status == 403, "{}", r.text);
    let ben = Console::sign_in(&server, "ben").await;
    let r = approve(&ben, id, hash).await;
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("pending_approval")), "{}", r.text);
    approve(&ben, id, hash).await.assert_error(403, "policy_denied");
    let cal = Console::sign_in(&server, "cal").await;
    let r = approve(&cal, id, hash).await;
    assert_eq!(r.body["status"], "approved", "{}", r.text);
    let token = read(&server, ACME_BOT_KEY, id).await.body["approval_token"].as_str().unwrap().to_owned();
    let approvers = decode_jws(&token).claims["approvers"].as_array().unwrap().len();
    assert_eq!(approvers, 2);

    // Rejecting needs a reason, and ends the batch.
    let b = proposed(&server, &batch(vec![line(1_000, ACME_PAYEE, "R-1")])).await;
    let rid = b["id"].as_str().unwrap();
    let path = format!("/api/v1/console/batches/{rid}/approvals");
    let r = send(ben.authed(Method::POST, &path).json(&json!({"decision": "reject"}))).await;
    r.assert_error(422, "validation_failed");
    let r =
        send(ben.authed(Method::POST, &path).json(&json!({"decision": "reject", "reason": "Not this month"}))).await;
    assert_eq!(r.body["status"], "rejected", "{}", r.text);
    approve(&cal, rid, b["batch_hash"].as_str().unwrap()).await.assert_error(409, "invalid_state");
    let listed = send(ben.bare(Method::GET, "/api/v1/console/batches?status=rejected")).await;
    assert_eq!(listed.body["data"][0]["id"], rid, "{}", listed.text);
    let listed = send(ben.bare(Method::GET, "/api/v1/console/batches?status=owed")).await;
    listed.assert_error(422, "validation_failed");
}

#[tokio::test]
async fn the_batch_token_pays_only_its_own_batch_once() {
    let (server, rail) = with_rail("").await;
    let (id, token) = approved_batch(&server).await;
    let (other, other_token) = approved_batch(&server).await;

    // Another batch's token, a single proposal's token, a forged signature.
    commit_as(&server, ACME_BOT_KEY, &id, &other_token).await.assert_error(401, "approval_token_invalid");
    let (single, single_token) = auto_approved(&server, 5_000).await;
    let r = commit_as(&server, ACME_BOT_KEY, &id, &single_token).await;
    r.assert_error(401, "approval_token_invalid");
    // ... and the batch's token on a single proposal.
    server.commit(&single, &token).await.assert_error(401, "approval_token_invalid");
    let mut forged = token.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == 'A' { 'B' } else { 'A' });
    let r = commit_as(&server, ACME_BOT_KEY, &id, &forged).await;
    r.assert_error(401, "approval_token_invalid");
    // Another agent of the tenant, another tenant's agent.
    let r = commit_as(&server, ACME_OTHER_KEY, &id, &token).await;
    assert!(r.status == 401 || r.status == 404, "{}", r.text);
    let r = commit_as(&server, GLOBEX_BOT_KEY, &id, &token).await;
    assert!(r.status == 401 || r.status == 404, "{}", r.text);
    let r =
        send(server.post_json(&format!("/api/v1/batches/{id}/commit"), ACME_BOT_KEY, &json!({"token": token}))).await;
    r.assert_error(422, "validation_failed");
    assert!(rail.transfers().await.is_empty(), "nothing paid by a refused commit");

    // A line tampered with in the database: its canonical request no longer
    // hashes to what was approved.
    let db = server.db().await;
    let canonical: String =
        one(&format!("SELECT canonical_request FROM batch_lines WHERE batch_id = '{other}' AND line = 1"))
            .fetch_one(&db)
            .await
            .unwrap();
    let tampered = canonical.replace("15000", "95000");
    assert_ne!(tampered, canonical);
    query("UPDATE batch_lines SET canonical_request = ? WHERE batch_id = ? AND line = 1")
        .bind(&tampered)
        .bind(&other)
        .execute(&db)
        .await
        .unwrap();
    let r = commit_as(&server, ACME_BOT_KEY, &other, &other_token).await;
    r.assert_error(401, "approval_token_invalid");
    assert_eq!(r.body["error"]["reason"], "request_hash_mismatch", "{}", r.text);

    // The right token pays; a second commit sends nothing again.
    let first = commit_as(&server, ACME_BOT_KEY, &id, &token).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.body["status"], "committed");
    let second = commit_as(&server, ACME_BOT_KEY, &id, &token).await;
    assert_eq!(second.status, 200, "{}", second.text);
    let ids = |b: &Value| -> Vec<String> {
        b["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["payment"]["proposal_id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&first.body), ids(&second.body));
    assert_eq!(rail.transfers().await.len(), 2, "one transfer per line, once");
    let r = send(server.post_json(&format!("/api/v1/batches/{id}/cancel"), ACME_BOT_KEY, &json!({}))).await;
    r.assert_error(409, "invalid_state");
}

#[tokio::test]
async fn an_expired_batch_token_pays_nothing() {
    let config = "[approval]\ntoken_ttl_secs = 1\n";
    let server = TestServer::start_process_with(config).await;
    let (id, token) = approved_batch(&server).await;
    // Past the token's 30 s leeway without waiting: the server's clock 45 s ahead.
    let (dir, config) = server.stop().await;
    let server = TestServer::spawn_env(dir, config, &[("COUNTERSIGN_CLOCK_SKEW_SECS", "45")]).await;
    let r = commit_as(&server, ACME_BOT_KEY, &id, &token).await;
    r.assert_error(401, "approval_token_invalid");
    assert_eq!(r.body["error"]["reason"], "expired", "{}", r.text);
    assert_eq!(server.scalar("SELECT COUNT(*) FROM operations").await, 0);
}

#[tokio::test]
async fn each_line_is_paid_on_the_rail_as_a_payment_of_its_own() {
    let (server, rail) = with_rail("").await;
    let (id, token) = approved_batch(&server).await;
    let r = commit_as(&server, ACME_BOT_KEY, &id, &token).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(statuses(&r.body), ["committed", "committed"]);
    let mut keys = Vec::new();
    for l in r.body["lines"].as_array().unwrap() {
        let pid = l["payment"]["proposal_id"].as_str().unwrap();
        let p = server.wait_status(pid, "succeeded", 15).await;
        assert_eq!(
            p["amount_minor"].as_u64().or(p["canonical_request"]["amount_minor"].as_u64()),
            l["amount_minor"].as_u64()
        );
        keys.push(p["operation"]["idempotency_key"].as_str().unwrap().to_owned());
        assert!(server.audit_actions(pid).await.contains(&"proposal.created".to_owned()));
    }
    assert_ne!(keys[0], keys[1], "each line its own rail idempotency key");
    assert_eq!(rail.transfers().await.len(), 2);
    let b = read(&server, ACME_BOT_KEY, &id).await.body;
    for l in b["lines"].as_array().unwrap() {
        assert_eq!(l["payment"]["operation_status"], "succeeded", "{b}");
        assert!(l["payment"]["rail_reference"].as_str().is_some(), "{b}");
    }
    assert_eq!(b["approval_token"], Value::Null, "no token once committed");
}

#[tokio::test]
async fn a_line_whose_rail_outcome_is_unknown_is_reconciled_on_its_own() {
    let (server, rail) = with_rail("").await;
    let (id, token) = approved_batch(&server).await;
    rail.fault("drop_after_accept", 1).await;
    let r = commit_as(&server, ACME_BOT_KEY, &id, &token).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let ops: Vec<String> = r.body["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["payment"]["operation_status"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ops.iter().filter(|s| *s == "unknown").count(), 1, "one line's outcome lost: {ops:?}");
    for l in r.body["lines"].as_array().unwrap() {
        server.wait_status(l["payment"]["proposal_id"].as_str().unwrap(), "succeeded", 20).await;
    }
    assert_eq!(rail.transfers().await.len(), 2, "reconciled by its key: never paid twice");
}

#[tokio::test]
async fn a_line_for_an_invoice_paid_meanwhile_is_held_back_and_never_paid() {
    let (server, rail) = with_rail("").await;
    // Invoice X-1 is in flight as a single payment: a batch line for it is held back at intake.
    let single = with(
        transfer(),
        json!({"run_id": fresh_run(), "amount_minor": 5_000, "destination": ACME_TRUSTED_PAYEE, "invoice_id": "X-1"}),
    );
    let p = server.create(&single).await;
    let b =
        proposed(&server, &batch(vec![line(5_000, ACME_TRUSTED_PAYEE, "X-1"), line(6_000, ACME_PAYEE, "X-2")])).await;
    assert_eq!(statuses(&b), ["held", "included"], "{b}");
    assert_eq!(held_rules(&b, 0), ["duplicate_invoice"]);

    // X-3 is paid by a single payment after the batch was approved: held back at commit.
    let b =
        proposed(&server, &batch(vec![line(4_000, ACME_TRUSTED_PAYEE, "X-3"), line(6_500, ACME_PAYEE, "X-4")])).await;
    let id = b["id"].as_str().unwrap();
    let ben = Console::sign_in(&server, "ben").await;
    assert_eq!(approve(&ben, id, b["batch_hash"].as_str().unwrap()).await.body["status"], "approved");
    let token = read(&server, ACME_BOT_KEY, id).await.body["approval_token"].as_str().unwrap().to_owned();
    let first = server
        .create(&with(single.clone(), json!({"run_id": fresh_run(), "amount_minor": 4_000, "invoice_id": "X-3"})))
        .await;
    let first_id = first["id"].as_str().unwrap();
    if first["status"] != "approved" {
        assert_eq!(ben.approve(first_id).await.status, 200);
    }
    let (t, _) = token_of(&server, first_id).await;
    assert_eq!(server.commit(first_id, &t).await.status, 200);
    server.wait_status(first_id, "succeeded", 15).await;

    let r = commit_as(&server, ACME_BOT_KEY, id, &token).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(statuses(&r.body), ["held", "committed"], "{}", r.text);
    assert_eq!(r.body["lines"][0]["held_by"], "commit");
    assert_eq!(held_rules(&r.body, 0), ["duplicate_invoice"], "{}", r.text);
    server.wait_status(r.body["lines"][1]["payment"]["proposal_id"].as_str().unwrap(), "succeeded", 15).await;
    let paid_x3 = rail.transfers().await.iter().filter(|t| t["amount"] == 4_000).count();
    assert_eq!(paid_x3, 1, "invoice X-3 paid once");
    let _ = p;
}

#[tokio::test]
async fn two_commits_of_one_batch_at_the_same_moment_pay_each_line_once() {
    let (server, rail) = with_rail("").await;
    let mut batches = Vec::new();
    for _ in 0..3 {
        batches.push(approved_batch(&server).await);
    }
    for (id, token) in &batches {
        let (a, b) =
            tokio::join!(commit_as(&server, ACME_BOT_KEY, id, token), commit_as(&server, ACME_BOT_KEY, id, token));
        assert_eq!((a.status, b.status), (200, 200), "both answer the batch: {} / {}", a.text, b.text);
        let b = read(&server, ACME_BOT_KEY, id).await.body;
        assert_eq!(statuses(&b), ["committed", "committed"], "{b}");
        for l in b["lines"].as_array().unwrap() {
            server.wait_status(l["payment"]["proposal_id"].as_str().unwrap(), "succeeded", 15).await;
        }
    }
    assert_eq!(rail.transfers().await.len(), 6, "each line of each batch paid once");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM operations").await, 6);
    assert_eq!(server.audit_actions_where("batch.committed").await.len(), 3, "one commit each");
}

#[tokio::test]
async fn only_an_approver_of_the_tenant_decides_and_a_cancelled_batch_is_decided_by_nobody() {
    let server = TestServer::start().await;
    let b = proposed(&server, &batch(vec![line(2_000, ACME_PAYEE, &fresh_run())])).await;
    let id = b["id"].as_str().unwrap();
    let hash = b["batch_hash"].as_str().unwrap();
    let vic = Console::sign_in(&server, "vic").await;
    approve(&vic, id, hash).await.assert_error(403, "forbidden");
    let gus = Console::sign_in(&server, "gus").await;
    approve(&gus, id, hash).await.assert_error(404, "not_found");
    let r = send(
        Console::sign_in(&server, "ben")
            .await
            .bare(Method::POST, &format!("/api/v1/console/batches/{id}/approvals"))
            .json(&json!({"decision": "approve", "batch_hash": hash})),
    )
    .await;
    assert!(r.status == 403 || r.status == 401, "no Origin, no CSRF token: {}", r.text);
    // Another agent cannot withdraw it; its own can, and then nobody decides.
    let cancel = |key: &'static str| send(server.post_json(&format!("/api/v1/batches/{id}/cancel"), key, &json!({})));
    cancel(ACME_OTHER_KEY).await.assert_error(404, "not_found");
    let r = cancel(ACME_BOT_KEY).await;
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("cancelled")), "{}", r.text);
    let ben = Console::sign_in(&server, "ben").await;
    approve(&ben, id, hash).await.assert_error(409, "invalid_state");
    hold(&ben, id, 1, "too late").await.assert_error(409, "invalid_state");
    assert_eq!(server.audit_actions_where("batch.cancelled").await.len(), 1);
}

#[tokio::test]
async fn a_line_to_an_account_replaced_after_approval_is_held_back_at_commit_and_the_rest_is_paid() {
    let (server, rail) = with_rail("").await;
    let (id, token) = approved_batch(&server).await;
    // After the approval, a verified change of bank account replaces the
    // account line 1 pays (two admins, the call-back recorded).
    let ada = add_admin(&server, "acme", "ada").await;
    let abe = add_admin(&server, "acme", "abe").await;
    let r = ada.form("/admin/payees/account", &[("payee", ACME_PAYEE), ("new_account", "ba_northwind0099")]).await;
    assert_eq!(r.status, 303, "{}", r.text);
    let change = pending_change_ids(&server).await;
    let call_back = [
        ("spoke_to", "Jo Park"),
        ("phone", "+49 30 1234 5678"),
        ("number_source", "vendor master file"),
        ("confirmed", "on"),
    ];
    abe.form(&format!("/admin/changes/{}/confirm", change[0]), &call_back).await;
    assert!(abe.admin_flash().await.contains("Change confirmed"));

    let r = commit_as(&server, ACME_BOT_KEY, &id, &token).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(statuses(&r.body), ["held", "committed"], "{}", r.text);
    assert_eq!(r.body["lines"][0]["held_by"], "commit");
    assert_eq!(held_rules(&r.body, 0), ["payee_account_replaced"], "{}", r.text);
    server.wait_status(r.body["lines"][1]["payment"]["proposal_id"].as_str().unwrap(), "succeeded", 15).await;
    let paid: Vec<String> =
        rail.transfers().await.iter().map(|t| t["destination"].as_str().unwrap_or("").to_owned()).collect();
    assert_eq!(paid, [ACME_TRUSTED_PAYEE], "the replaced account is never paid");
    let held = server.audit_actions_where("batch.line_held").await;
    assert_eq!(held.len(), 1, "{held:?}");
    assert!(!serde_json::to_string(&held).unwrap().contains(ACME_PAYEE), "accounts masked in the trail: {held:?}");
}

/// The human loop's page counts a batch's decision once, as its approver
/// made it, never its lines' copies of it (made at commit, at once).
#[tokio::test]
async fn the_human_loop_counts_a_batch_decision_once_and_not_its_lines() {
    let (server, _rail) = with_rail("").await;
    apply_user(&server, "acme", "ada", &["admin"], 0).await;
    let (id, token) = approved_batch(&server).await;
    let r = commit_as(&server, ACME_BOT_KEY, &id, &token).await;
    assert_eq!(statuses(&r.body), ["committed", "committed"], "{}", r.text);

    let ada = Console::sign_in(&server, "ada").await;
    let r = send(ada.authed(Method::GET, "/admin/loop")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let row = crate::human_loop::row_of(&r.text, &today);
    assert_eq!(crate::human_loop::cell(row, "approvals"), "1", "one batch, one approval: {row}");
    let times = &r.text[r.text.find(r#"id="decision-times""#).expect("the decision chart")..];
    let label = times.split('>').next().unwrap();
    assert!(label.contains(r#"aria-label="api: median "#), "ben approved through the console's JSON API: {label}");
    assert!(!label.contains("batch:"), "the lines' copies are not decisions: {label}");
}

/// The value of one sample in a Prometheus exposition (0 when absent).
fn sample(exposition: &str, name_and_labels: &str) -> f64 {
    exposition.lines().find_map(|l| l.strip_prefix(name_and_labels)?.trim().parse().ok()).unwrap_or(0.0)
}

#[tokio::test]
async fn a_batch_decision_counts_once_in_the_decision_metrics() {
    const TOKEN: &str = "scrape-me-0123456789";
    let scratch = Scratch::with_fixture(&format!("[metrics]\nbearer_token = \"{TOKEN}\"\n"));
    scratch.apply_fixture().await;
    // A process of its own: the metrics recorder is per process.
    let server = scratch.serve(&[]).await;
    let scrape = || async { send(server.client.get(server.url("/metrics")).bearer_auth(TOKEN)).await.text };
    let approvals = r#"countersign_decisions_total{channel="api",verdict="approve"}"#;
    let rejections = r#"countersign_decisions_total{channel="api",verdict="reject"}"#;
    let delays = r#"countersign_decision_delay_seconds_count{channel="api"}"#;
    let before = scrape().await;

    let lines = || vec![line(15_000, ACME_PAYEE, &fresh_run()), line(7_500, ACME_TRUSTED_PAYEE, &fresh_run())];
    let (paid, refused) = (proposed(&server, &batch(lines())).await, proposed(&server, &batch(lines())).await);
    let ben = Console::sign_in(&server, "ben").await;
    let r = approve(&ben, paid["id"].as_str().unwrap(), paid["batch_hash"].as_str().unwrap()).await;
    assert_eq!(r.body["status"], "approved", "{}", r.text);
    let body = json!({"decision": "reject", "reason": "not this week"});
    let path = format!("/api/v1/console/batches/{}/approvals", refused["id"].as_str().unwrap());
    let r = send(ben.authed(Method::POST, &path).json(&body)).await;
    assert_eq!(r.body["status"], "rejected", "{}", r.text);
    // A refused decision (the batch is decided already) is no decision.
    let r = approve(&ben, paid["id"].as_str().unwrap(), paid["batch_hash"].as_str().unwrap()).await;
    assert_ne!(r.status, 200, "{}", r.text);

    let after = scrape().await;
    assert_eq!(sample(&after, approvals) - sample(&before, approvals), 1.0, "one batch, two lines: {after}");
    assert_eq!(sample(&after, rejections) - sample(&before, rejections), 1.0, "{after}");
    assert_eq!(sample(&after, delays) - sample(&before, delays), 2.0, "{after}");
}
