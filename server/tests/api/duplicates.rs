//! One invoice is paid once (issue 27, item 1). Twins — proposals to the
//! same payee with the same invoice id — are never approved together in one
//! bulk decision; approving one whose twin is already approved or paid
//! needs the approver's "not a duplicate" statement and one more approver;
//! the detail page's data sets the twins side by side. Enforced by the one
//! approval path: the console's forms, its JSON API and Slack all refuse.

use reqwest::Method;
use serde_json::{json, Value};

use crate::console_client::*;
use crate::helpers::*;
use crate::slack_harness::*;

/// A 320.00 USD transfer for invoice `invoice` in run `run`.
async fn propose(server: &TestServer, invoice: &str, run: &str) -> String {
    let body = with(transfer(), json!({"amount_minor": 32_000, "invoice_id": invoice, "run_id": run}));
    let r = server.propose_as(ACME_BOT_KEY, &body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.body["id"].as_str().unwrap().to_owned()
}

async fn detail(viewer: &Console, id: &str) -> Value {
    let r = send(viewer.bare(Method::GET, &format!("/console/proposal?id={id}"))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

/// `POST /bulk/decision` approving `ids`: where it sends the reviewer.
async fn bulk_approve(console: &Console, ids: &[&str]) -> String {
    let mut fields = vec![("decision", "approve")];
    fields.extend(ids.iter().map(|id| ("id", *id)));
    let r = console.form("/bulk/decision", &fields).await;
    assert_eq!(r.status, 303, "{}", r.text);
    r.header("location").unwrap().to_owned()
}

/// Marks a proposal paid, as a settled commit leaves it.
async fn mark_paid(server: &TestServer, id: &str) {
    let sql = format!("UPDATE proposals SET status = 'succeeded' WHERE id = '{id}'");
    query(&sql).execute(&server.db().await).await.unwrap();
}

async fn approvals_given(server: &TestServer) -> i64 {
    server.scalar("SELECT COUNT(*) FROM approvals WHERE decision = 'approve'").await
}

#[tokio::test]
async fn a_bulk_approval_listing_both_copies_of_an_invoice_is_refused_whole_until_one_is_dropped() {
    let server = TestServer::start().await;
    let ana = Console::sign_in(&server, "ana").await;
    let copy = propose(&server, "INV-320", "copy-a").await;
    let twin = propose(&server, "INV-320", "copy-b").await;
    let others = [
        propose(&server, "INV-1", "other-1").await,
        propose(&server, "INV-2", "other-2").await,
        propose(&server, "INV-3", "other-3").await,
    ];

    // The bulk page's data pairs them (and only them).
    let listed = [&copy, &others[0], &twin, &others[1], &others[2]];
    let query: Vec<String> = listed.iter().map(|id| format!("id={id}")).collect();
    let page = send(ana.bare(Method::GET, &format!("/console/bulk?query=%3F{}", query.join("%26")))).await;
    assert_eq!(page.status, 200, "{}", page.text);
    let twins_of =
        |id: &str| page.body["items"].as_array().unwrap().iter().find(|i| i["id"] == id).unwrap()["twins"].clone();
    assert_eq!(twins_of(&copy), json!([twin]), "{}", page.body);
    assert_eq!(twins_of(&twin), json!([copy]));
    for other in &others {
        assert_eq!(twins_of(other), json!([]));
    }

    // "Approve 5 payments": refused whole, nothing decided.
    let location = bulk_approve(&ana, &listed.map(String::as_str)).await;
    assert!(location.contains("error=duplicate_pair"), "{location}");
    assert!(!location.contains("outcome="), "nothing decided: {location}");
    for id in listed {
        assert_still_pending(&server, id).await;
    }
    assert_eq!(approvals_given(&server).await, 0);

    // One copy dropped: the four are approved.
    let location = bulk_approve(&ana, &[&copy, &others[0], &others[1], &others[2]]).await;
    for id in [&copy, &others[0], &others[1], &others[2]] {
        assert!(location.contains(&format!("outcome={id}%3Aapproved")), "{id}: {location}");
    }
    // The dropped copy, listed again on its own, is now a copy of an
    // approved invoice: refused for it alone (its own page asks why).
    let more = propose(&server, "INV-4", "other-4").await;
    let location = bulk_approve(&ana, &[&twin, &more]).await;
    assert!(location.contains(&format!("outcome={twin}%3Aduplicate_invoice")), "{location}");
    assert!(location.contains(&format!("outcome={more}%3Aapproved")), "{location}");
    assert_still_pending(&server, &twin).await;

    // Rejecting both copies at once is no approval: allowed.
    let (c, d) = (propose(&server, "INV-9", "copy-c").await, propose(&server, "INV-9", "copy-d").await);
    let r =
        ana.form("/bulk/decision", &[("decision", "reject"), ("reason", "Sent twice"), ("id", &c), ("id", &d)]).await;
    assert_eq!(r.status, 303, "{}", r.text);
    for id in [&c, &d] {
        assert_eq!(status_of(&server, id).await, "rejected");
    }
}

#[tokio::test]
async fn approving_a_copy_of_an_approved_invoice_needs_a_statement_and_one_more_approver() {
    let server = TestServer::start().await;
    add_acme_approver(&server, "cleo", 5_000_000).await;
    let (ben, cleo) = (Console::sign_in(&server, "ben").await, Console::sign_in(&server, "cleo").await);
    let first = propose(&server, "INV-77", "first").await;
    let second = propose(&server, "INV-77", "second").await;

    // While neither is approved, each approves as policy says (one approval).
    let seen = detail(&ben, &second).await;
    assert_eq!(seen["twins"][0]["id"], first.as_str(), "{seen}");
    assert_eq!(seen["twins"][0]["approved_or_paid"], false);
    assert_eq!(seen["twins"][0]["amount"], "320.00 USD");
    assert_eq!(ben.approve(&first).await.status, 200);
    assert_eq!(status_of(&server, &first).await, "approved");

    // Now the second is a copy of an approved invoice.
    let seen = detail(&ben, &second).await;
    assert_eq!(seen["twins"][0]["approved_or_paid"], true, "{seen}");
    assert_eq!(seen["twins"][0]["status"], "approved");
    let refused = ben.approve(&second).await;
    refused.assert_error(403, "policy_denied");
    assert_eq!(refused.detail_rules(), ["duplicate_invoice"], "{}", refused.text);
    assert!(refused.text.contains(&first) && refused.text.contains("INV-77"), "{}", refused.text);
    let blank = ben.decide(&second, &json!({"decision": "approve", "not_duplicate_reason": "   "})).await;
    blank.assert_error(403, "policy_denied");
    let long = ben.decide(&second, &json!({"decision": "approve", "not_duplicate_reason": "x".repeat(501)})).await;
    long.assert_error(422, "validation_failed");
    assert!(long.detail_fields().contains("not_duplicate_reason"), "{}", long.text);
    assert_still_pending(&server, &second).await;
    assert_eq!(approvals_given(&server).await, 1);

    // With a statement: recorded, and one more approver is now needed.
    let why = "Second delivery under the same invoice, agreed with the vendor";
    let r = ben.decide(&second, &json!({"decision": "approve", "not_duplicate_reason": why})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "pending_approval", "{}", r.text);
    assert_eq!(r.body["policy"]["required_approvals"], 2, "{}", r.text);
    let rules: Vec<&str> =
        r.body["policy"]["reasons"].as_array().unwrap().iter().map(|x| x["rule"].as_str().unwrap()).collect();
    assert!(rules.contains(&"duplicate_invoice"), "{rules:?}");
    let given = server.audit_actions_where("proposal.approval_given").await;
    let entry = given.iter().find(|e| e["data"].get("not_duplicate").is_some()).unwrap();
    assert_eq!(given.len(), 2, "the first proposal's approval and this one: {given:?}");
    assert_eq!(entry["data"]["not_duplicate"]["reason"], why, "{entry}");
    assert_eq!(entry["data"]["not_duplicate"]["twins"], json!([first]), "{entry}");
    let seen = detail(&ben, &second).await;
    assert_eq!(seen["required_approvals"], 2);
    let line = seen["approvals"].as_array().unwrap().iter().find(|a| a["decision"] != Value::Null).unwrap().clone();
    assert_eq!(line["reason"], why, "the statement shows beside the approval: {seen}");

    // The next approver must state it too, then the payment is approved.
    cleo.approve(&second).await.assert_error(403, "policy_denied");
    let r = cleo
        .decide(&second, &json!({"decision": "approve", "not_duplicate_reason": "Checked the PO: two deliveries"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(status_of(&server, &second).await, "approved");
}

#[tokio::test]
async fn the_decision_form_asks_for_the_statement_and_rejects_a_copy_as_duplicate() {
    let server = TestServer::start().await;
    let ana = Console::sign_in(&server, "ana").await;
    let paid = propose(&server, "INV-55", "paid").await;
    let copy = propose(&server, "INV-55", "copy").await;
    let again = propose(&server, "INV-55", "again").await;
    mark_paid(&server, &paid).await;

    // The form without the statement goes back to the page, worded.
    let form = |extra: Vec<(&'static str, &'static str)>| {
        let mut fields = vec![("decision", "approve")];
        fields.extend(extra);
        fields
    };
    let r = ana.form(&format!("/proposals/{copy}/decision"), &form(vec![])).await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(r.header("location").unwrap(), format!("/proposals/{copy}?error=duplicate_invoice"));
    assert_still_pending(&server, &copy).await;
    let r = ana.form(&format!("/proposals/{copy}/decision"), &form(vec![("not_duplicate", "A second shipment")])).await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert!(r.header("location").unwrap().contains("done=approval_recorded"), "{:?}", r.header("location"));
    assert_eq!(status_of(&server, &copy).await, "pending_approval", "one more approver is needed");

    // "Reject as duplicate": one click, a reason naming the twin.
    let reason = format!("Duplicate of {paid} (invoice INV-55).");
    let r = ana.form(&format!("/proposals/{again}/decision"), &[("decision", "reject"), ("reason", &reason)]).await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(status_of(&server, &again).await, "rejected");
}

#[tokio::test]
async fn a_slack_approval_of_a_copy_of_a_paid_invoice_is_refused_and_sent_to_the_console() {
    let slack = FakeSlack::start().await;
    let server = TestServer::start_with(&slack_config(&slack)).await;
    link_slack(&server, "acme", "ben", "U0BEN").await;
    let paid = propose(&server, "INV-88", "paid").await;
    let copy = propose(&server, "INV-88", "copy").await;
    mark_paid(&server, &paid).await;
    let proposal = server.get_proposal(ACME_BOT_KEY, &copy).await.body;
    let r = press_signed(
        &server,
        NEW_SECRET,
        &press_body("U0BEN", "approve", &button_value(&proposal), &slack.url("/r/dup")),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let reply = message_text(&slack.wait_for("/r/dup", 1, 10).await[0].body);
    assert!(
        reply.contains("Nothing was done") && reply.contains("already paid") && reply.contains("console"),
        "{reply}"
    );
    assert_still_pending(&server, &copy).await;
}
