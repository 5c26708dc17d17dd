//! What a reviewer sees before deciding: who may
//! approve and what is still needed, from the same rule `decide` enforces;
//! risk signals from the registry and the history; the payee and source
//! context. Read through the console's own data endpoints
//! (`/console/proposal`, `/console/queue`), as the pages read them.

use reqwest::Method;
use serde_json::{json, Value};

use crate::console_client::*;
use crate::helpers::*;

/// The console's data for one proposal, as `viewer` sees it.
async fn detail(viewer: &Console, id: &str) -> Value {
    let r = send(viewer.bare(Method::GET, &format!("/console/proposal?id={id}"))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

/// The console queue's item for `id` (status `all`).
async fn queue_item(viewer: &Console, id: &str) -> Value {
    let r = send(viewer.bare(Method::GET, "/console/queue?query=status%3Dall")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["items"].as_array().unwrap().iter().find(|i| i["id"] == id).cloned().unwrap_or_else(|| panic!("{id}"))
}

fn codes(detail: &Value) -> Vec<String> {
    detail["signals"].as_array().unwrap().iter().map(|s| s["code"].as_str().unwrap().to_owned()).collect()
}

async fn execute(server: &TestServer, sql: &str) {
    query(sql).execute(&server.db().await).await.unwrap();
}

/// Makes the fixture's payees old, so only the signals a test sets up show.
async fn payees_added_long_ago(server: &TestServer) {
    execute(server, "UPDATE payees SET created_at = '2020-01-01T00:00:00.000Z'").await;
}

/// Marks proposals paid (as a settled commit would leave them).
async fn mark_paid(server: &TestServer, ids: &[&str]) {
    execute(server, &format!("UPDATE proposals SET status = 'succeeded' WHERE id IN ('{}')", ids.join("','"))).await;
}

/// A transfer with its own invoice id (the run's) unless `changes` names one.
async fn propose(server: &TestServer, changes: Value) -> String {
    let run = changes["run_id"].as_str().unwrap_or("run").to_owned();
    let body = with(with(transfer(), json!({"invoice_id": run})), changes);
    let r = server.propose_as(ACME_BOT_KEY, &body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.body["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn approve_is_offered_only_to_those_who_may_and_says_why_to_the_others() {
    let server = TestServer::start().await;
    // 20,000.00 USD: two approvals (dual approval from 10,000.00). Ana's limit
    // is 5,000.00; maya is the person the agent acts for; vic is a viewer.
    let id = propose(&server, json!({"amount_minor": 2_000_000, "run_id": "who-can"})).await;
    let (ana, ben, maya, vic) = (
        Console::sign_in(&server, "ana").await,
        Console::sign_in(&server, "ben").await,
        Console::sign_in(&server, "maya").await,
        Console::sign_in(&server, "vic").await,
    );
    let seen = detail(&ana, &id).await;
    assert_eq!(seen["can_approve"], false);
    let why = seen["approve_blocker"].as_str().unwrap();
    assert_eq!(why, "20,000.00 USD is above your approval limit of 5,000.00 USD.");
    assert_eq!(seen["can_reject"], true, "over the limit, ana may still reject");
    // The refusal `decide` gives is the same sentence.
    let refused = ana.approve(&id).await;
    refused.assert_error(403, "policy_denied");
    assert!(refused.text.contains(why), "{}", refused.text);

    let seen = detail(&maya, &id).await;
    assert_eq!(seen["can_approve"], false);
    assert!(seen["approve_blocker"].as_str().unwrap().contains("acts for"), "{seen}");
    let seen = detail(&vic, &id).await;
    assert_eq!((seen["can_approve"].clone(), seen["can_reject"].clone()), (json!(false), json!(false)));

    // Only ben may approve, and two different people must: flagged.
    let seen = detail(&ben, &id).await;
    assert_eq!(seen["can_approve"], true, "{seen}");
    assert_eq!(seen["approve_blocker"], Value::Null);
    let needed = seen["still_needed"].as_str().unwrap();
    assert!(needed.starts_with("2 more approvals needed from different people, but only ben"), "{needed}");
    assert_eq!(seen["no_one_can_approve"], true);
    assert_eq!(queue_item(&ben, &id).await["no_one_can_approve"], true);

    // Within ana's limit and below dual approval: ana or ben, one approval.
    let small = propose(&server, json!({"amount_minor": 300_000, "run_id": "small"})).await;
    let seen = detail(&ben, &small).await;
    assert_eq!(seen["still_needed"], "1 more approval needed, from: ana or ben.");
    assert_eq!(seen["no_one_can_approve"], false);
    assert_eq!(queue_item(&ben, &small).await["no_one_can_approve"], false);
}

#[tokio::test]
async fn after_approving_the_approver_is_told_so_and_the_next_one_is_named() {
    let server = TestServer::start().await;
    // A second approver whose limit covers the dual-approval amount.
    add_acme_approver(&server, "cleo", 5_000_000).await;
    let id = propose(&server, json!({"amount_minor": 2_000_000, "run_id": "next-one"})).await;
    let (ben, cleo) = (Console::sign_in(&server, "ben").await, Console::sign_in(&server, "cleo").await);
    assert_eq!(detail(&ben, &id).await["still_needed"], "2 more approvals needed, from: ben or cleo.");
    assert_eq!(ben.approve(&id).await.status, 200);
    let seen = detail(&ben, &id).await;
    assert_eq!(seen["can_approve"], false);
    assert!(seen["approve_blocker"].as_str().unwrap().starts_with("You have already approved"), "{seen}");
    assert_eq!(seen["still_needed"], "1 more approval needed, from: cleo.");
    assert_eq!(seen["no_one_can_approve"], false);
    assert_eq!(detail(&cleo, &id).await["can_approve"], true);
}

#[tokio::test]
async fn no_limit_in_the_currency_is_said_as_such_and_flagged_in_the_queue() {
    let server = TestServer::start().await;
    let id = propose(&server, json!({"currency": "GBP", "amount_minor": 50_000, "run_id": "gbp"})).await;
    let ben = Console::sign_in(&server, "ben").await;
    let seen = detail(&ben, &id).await;
    assert_eq!(seen["can_approve"], false);
    assert_eq!(seen["approve_blocker"], "You have no approval limit in GBP.");
    assert_eq!(seen["no_one_can_approve"], true);
    assert!(seen["still_needed"].as_str().unwrap().contains("no one in this tenant can give it"), "{seen}");
    assert_eq!(queue_item(&ben, &id).await["no_one_can_approve"], true);
    // decide refuses with the same words, not "above your limit".
    let refused = ben.approve(&id).await;
    refused.assert_error(403, "policy_denied");
    assert!(refused.text.contains("no approval limit in GBP") && !refused.text.contains("above"), "{}", refused.text);
}

#[tokio::test]
async fn risk_signals_come_from_the_registry_and_the_history() {
    let server = TestServer::start().await;
    let ben = Console::sign_in(&server, "ben").await;

    // Fresh registry: the payee was just added, and never paid.
    let first = propose(&server, json!({"invoice_id": "INV-7", "run_id": "r1"})).await;
    let seen = detail(&ben, &first).await;
    assert_eq!(codes(&seen), ["first_payment", "new_payee"], "{seen}");
    assert_eq!(queue_item(&ben, &first).await["signals"], json!(["First payment", "New payee"]));

    payees_added_long_ago(&server).await;
    // The same invoice to the same payee, by another agent in another run:
    // both proposals are flagged, each naming the other.
    let same_invoice = with(transfer(), json!({"invoice_id": "INV-7", "run_id": "r2"}));
    let second = server.propose_as(ACME_OTHER_KEY, &same_invoice).await.body["id"].as_str().unwrap().to_owned();
    for (this, other) in [(&second, &first), (&first, &second)] {
        let seen = detail(&ben, this).await;
        assert_eq!(codes(&seen), ["duplicate_invoice", "first_payment"], "{seen}");
        // The twin is linked by id, and the sentence carries no raw id.
        assert_eq!(seen["signals"][0]["related"][0]["id"], other.as_str(), "{seen}");
        assert_eq!(seen["signals"][0]["related"][0]["status"], "Waiting for approval", "{seen}");
        let message = seen["signals"][0]["message"].as_str().unwrap();
        assert_eq!(message, "Invoice INV-7 to this payee is also in another proposal (Waiting for approval).");
    }
    // The console API's queue carries them too.
    let api = ben.queue("").await;
    let entry = api.body["data"].as_array().unwrap().iter().find(|p| p["id"] == first.as_str()).unwrap().clone();
    let api_codes: Vec<&str> =
        entry["risk_signals"].as_array().unwrap().iter().map(|s| s["code"].as_str().unwrap()).collect();
    assert_eq!(api_codes, ["duplicate_invoice", "first_payment"], "{entry}");
    assert!(entry.get("approval_token").is_none_or(Value::is_null), "never the token: {entry}");
    let other_invoice = propose(&server, json!({"invoice_id": "INV-8", "run_id": "r3"})).await;
    assert_eq!(codes(&detail(&ben, &other_invoice).await), ["first_payment"]);

    // Three paid payments of 100.00; then 1,000.00 is unusual, 250.00 is not.
    let mut paid = Vec::new();
    for run in ["p1", "p2", "p3"] {
        paid.push(propose(&server, json!({"amount_minor": 10_000, "run_id": run})).await);
    }
    mark_paid(&server, &paid.iter().map(String::as_str).collect::<Vec<_>>()).await;
    // Judged when shown, against the payee's paid history as it is now: a
    // proposal made before those payments is no longer a "first payment".
    assert_eq!(codes(&detail(&ben, &other_invoice).await), Vec::<String>::new());
    let big = propose(&server, json!({"amount_minor": 100_000, "run_id": "big"})).await;
    let seen = detail(&ben, &big).await;
    assert_eq!(codes(&seen), ["unusual_amount"], "{seen}");
    assert!(seen["signals"][0]["message"].as_str().unwrap().starts_with("10.0× this payee's usual amount"), "{seen}");
    let usual = propose(&server, json!({"amount_minor": 25_000, "run_id": "usual"})).await;
    assert_eq!(codes(&detail(&ben, &usual).await), Vec::<String>::new());
    // The history lists the earlier proposals to the payee, newest first.
    let history = detail(&ben, &usual).await["payee_history"].clone();
    assert_eq!(history[0]["id"], big.as_str(), "{history}");
    assert_eq!(history.as_array().unwrap().len(), 5, "at most five");

    // Renaming the payee (a change of its details) flags what waits for it.
    let renamed = "[[payee]]\ntenant = \"acme\"\nid = \"ba_northwind0007\"\nlegal_name = \"Northwind Traders AG\"\n";
    let file = server.dir.path().join("renamed.toml");
    std::fs::write(&file, renamed).unwrap();
    let (code, out, err) = server.cli(&["apply", file.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{out}{err}");
    let seen = detail(&ben, &usual).await;
    assert_eq!(codes(&seen), ["payee_changed"], "{seen}");
    assert!(seen["signals"][0]["message"].as_str().unwrap().contains("after this proposal"), "{seen}");

    // A page of the queue reads its signals in one batch: each entry still
    // carries its own (they differ from row to row here), as its page does.
    let page = ben.queue("").await;
    let entries = page.body["data"].as_array().unwrap();
    assert!(entries.iter().filter(|e| e["status"] == "pending_approval").count() >= 5, "{}", page.text);
    let mut differing = std::collections::BTreeSet::new();
    for entry in entries.iter().filter(|e| e["status"] == "pending_approval") {
        let listed: Vec<String> =
            entry["risk_signals"].as_array().unwrap().iter().map(|s| s["code"].as_str().unwrap().to_owned()).collect();
        assert_eq!(listed, codes(&detail(&ben, entry["id"].as_str().unwrap()).await), "{entry}");
        differing.insert(listed);
    }
    assert!(differing.len() >= 3, "rows with different signals: {differing:?}");
}

#[tokio::test]
async fn payee_and_source_context_tell_accounts_apart() {
    let config = "[console.source_account_labels]\nacct_0123456789abcdef = \"Operating account\"\n";
    let server = TestServer::start_with(config).await;
    let ben = Console::sign_in(&server, "ben").await;
    let id = propose(&server, json!({"amount_minor": 40_000, "run_id": "ctx"})).await;
    let seen = detail(&ben, &id).await;
    assert_eq!(seen["source_label"], "Operating account");
    assert_eq!(seen["source_masked"], "acct_…cdef");
    let payee = seen["payee_masked"].as_str().unwrap();
    assert!(payee.starts_with("ba_…0007 #") && payee.len() == "ba_…0007 #".len() + 4, "{payee}");
    assert!(!seen.to_string().contains("northwind0007"), "no full account number");
    // The fixture's 50,000.00 USD daily budget, nothing used yet.
    assert_eq!(seen["budget_today"], "0.00 USD of 50,000.00 USD used today");
    // A currency without a budget shows none.
    let gbp = propose(&server, json!({"currency": "GBP", "amount_minor": 40_000, "run_id": "ctx-gbp"})).await;
    assert_eq!(detail(&ben, &gbp).await["budget_today"], Value::Null);
}

#[tokio::test]
async fn with_extra_approval_a_signal_adds_one_approval_and_stops_automatic_approval() {
    let server = TestServer::start_with("[risk]\nextra_approval = true\n").await;
    // A small payment to a trusted payee is approved by policy alone …
    // unless it carries a signal (here: first payment, new payee).
    let small = json!({"destination": ACME_TRUSTED_PAYEE, "amount_minor": 500, "invoice_id": "A-1"});
    let auto = server.create(&with(transfer(), small)).await;
    assert_eq!(auto["status"], "pending_approval", "{auto}");
    assert_eq!(auto["policy"]["required_approvals"], 1);
    assert!(auto["policy"]["reasons"].to_string().contains("risk_signals"), "{auto}");

    // 3,000.00 USD needs one approval by policy; with the signals, two.
    let id = propose(&server, json!({"amount_minor": 300_000, "run_id": "extra"})).await;
    let p = server.get_proposal(ACME_BOT_KEY, &id).await;
    assert_eq!(p.body["policy"]["required_approvals"], 2, "{}", p.text);
    let (ana, ben) = (Console::sign_in(&server, "ana").await, Console::sign_in(&server, "ben").await);
    assert_eq!(detail(&ben, &id).await["still_needed"], "2 more approvals needed, from: ana or ben.");
    assert_eq!(ben.approve(&id).await.body["status"], "pending_approval");
    assert_eq!(ana.approve(&id).await.body["status"], "approved");

    // Signals that appear after the proposal count when approvals are
    // counted: without signals at intake, one approval would do.
    payees_added_long_ago(&server).await;
    let paid = propose(&server, json!({"amount_minor": 300_000, "run_id": "paid-before"})).await;
    mark_paid(&server, &[&paid]).await;
    let later = propose(&server, json!({"amount_minor": 300_000, "run_id": "later", "invoice_id": "INV-9"})).await;
    assert_eq!(server.get_proposal(ACME_BOT_KEY, &later).await.body["policy"]["required_approvals"], 1);
    propose(&server, json!({"amount_minor": 300_000, "run_id": "dup", "invoice_id": "INV-9"})).await;
    let after = ben.approve(&later).await;
    assert_eq!(after.body["status"], "pending_approval", "{}", after.text);
    assert_eq!(after.body["policy"]["required_approvals"], 2, "raised and stored: {}", after.text);
    assert!(after.body["policy"]["reasons"].to_string().contains("Risk signals (Duplicate invoice)"), "{}", after.text);
}
