//! One invoice is paid once. Twins — proposals to the
//! same payee with the same invoice id — are never approved together in one
//! bulk decision; approving one whose twin is already approved or paid
//! needs the approver's "not a duplicate" statement and one more approver;
//! the detail page's data sets the twins side by side. Enforced by the one
//! approval path: the console's forms, its JSON API and Slack all refuse.

use reqwest::Method;
use serde_json::{json, Value};

use crate::console_client::*;
use crate::helpers::*;
use crate::rail_harness::*;
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

/// A 50.00 USD transfer to the trusted payee for `invoice` in a fresh run:
/// what policy approves alone.
async fn propose_small(server: &TestServer, invoice: &str) -> Value {
    let body = with(
        transfer(),
        json!({"run_id": fresh_run(), "amount_minor": 5_000, "destination": ACME_TRUSTED_PAYEE, "invoice_id": invoice}),
    );
    let r = server.propose_as(ACME_BOT_KEY, &body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.body
}

fn rules_of(proposal: &Value) -> Vec<String> {
    proposal["policy"]["reasons"].as_array().unwrap().iter().map(|r| r["rule"].as_str().unwrap().to_owned()).collect()
}

/// Rail transfers made for the given proposals.
async fn transfers_for(rail: &RailSim, ids: &[&str]) -> usize {
    rail.transfers().await.iter().filter(|t| ids.iter().any(|id| t["metadata"]["proposal_id"] == *id)).count()
}

/// The outside review's first finding: one 50.00 USD invoice to a trusted
/// payee, proposed under two run ids, was approved by policy twice and
/// paid twice. A copy of an invoice that another live or paid proposal
/// names waits for a human; a human approving it after the first was paid
/// needs the statement; a cancelled first copy does not block a new one.
#[tokio::test]
async fn a_copy_of_an_invoice_is_never_approved_by_policy_alone_nor_paid_twice() {
    let (server, rail) = with_rail("").await;
    let first = propose_small(&server, "INV-50").await;
    assert_eq!(first["status"], "approved", "policy approves the first alone: {first}");
    let second = propose_small(&server, "INV-50").await;
    assert_eq!(second["status"], "pending_approval", "{second}");
    assert_eq!(second["approval_token"], Value::Null);
    assert!(rules_of(&second).contains(&"duplicate_invoice".to_owned()), "{second}");
    let why = second["policy"]["reasons"].to_string();
    assert!(why.contains(first["id"].as_str().unwrap()) && why.contains("never approved by policy alone"), "{why}");
    let (first_id, second_id) = (first["id"].as_str().unwrap(), second["id"].as_str().unwrap());
    // The audit trail records the decision it was stored with.
    let created = server.audit_actions_where("proposal.created").await;
    let entry = created.iter().find(|e| e["data"]["policy"]["outcome"] == "needs_approval").expect("audited");
    assert!(entry["data"]["policy"].to_string().contains("duplicate_invoice"), "{entry}");

    let r = server.commit(first_id, first["approval_token"].as_str().unwrap()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    server.wait_status(first_id, "succeeded", 30).await;
    // A human approving the copy of a paid invoice states why, or is refused.
    let ana = Console::sign_in(&server, "ana").await;
    let refused = ana.approve(second_id).await;
    refused.assert_error(403, "policy_denied");
    assert_eq!(refused.detail_rules(), ["duplicate_invoice"], "{}", refused.text);
    assert_eq!(transfers_for(&rail, &[first_id, second_id]).await, 1, "paid once");

    // A first copy cancelled before it was paid blocks nothing.
    let dropped = propose_small(&server, "INV-51").await;
    assert_eq!(dropped["status"], "approved");
    assert_eq!(server.cancel(ACME_BOT_KEY, dropped["id"].as_str().unwrap()).await.status, 200);
    let retry = propose_small(&server, "INV-51").await;
    assert_eq!(retry["status"], "approved", "{retry}");
}

/// Copies proposed at the same moment (stored by one intake batch or by
/// batches one after another) are not approved by policy more than once,
/// and whatever was approved is paid once.
#[tokio::test]
async fn copies_proposed_at_once_are_approved_by_policy_at_most_once_and_paid_once() {
    let (server, rail) = with_rail("").await;
    let server = std::sync::Arc::new(server);
    let copies: Vec<Value> = futures::future::join_all((0..8).map(|_| {
        let server = server.clone();
        async move { propose_small(&server, "INV-ONCE").await }
    }))
    .await;
    let approved: Vec<&Value> = copies.iter().filter(|p| p["status"] == "approved").collect();
    assert!(approved.len() <= 1, "approved by policy more than once: {copies:?}");
    for p in copies.iter().filter(|p| p["status"] != "approved") {
        assert_eq!(p["status"], "pending_approval");
        assert!(rules_of(p).contains(&"duplicate_invoice".to_owned()), "{p}");
    }
    let commits: Vec<_> = approved
        .iter()
        .map(|p| {
            (server.clone(), p["id"].as_str().unwrap().to_owned(), p["approval_token"].as_str().unwrap().to_owned())
        })
        .collect();
    for r in commit_all(commits).await {
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let ids: Vec<&str> = copies.iter().map(|p| p["id"].as_str().unwrap()).collect();
    assert!(transfers_for(&rail, &ids).await <= 1);
}

/// The review's race: two copies of one invoice approved by two approvers
/// within the same moment, then committed at once. The database lets one
/// operation hold an invoice, so the rail sees one transfer every round;
/// the other commit is refused before the rail, with the rule, and
/// audited. A failed payment lets go of its invoice, so the copy is then
/// paid.
#[tokio::test]
async fn two_copies_approved_at_the_same_moment_by_two_approvers_are_paid_once() {
    let (server, rail) = with_rail("").await;
    let server = std::sync::Arc::new(server);
    let (ana, ben) = (Console::sign_in(&server, "ana").await, Console::sign_in(&server, "ben").await);
    let mut raced = 0;
    for round in 0..12 {
        let invoice = format!("INV-RACE-{round}");
        let (a, b) = (
            propose(&server, &invoice, &format!("race-a-{round}")).await,
            propose(&server, &invoice, &format!("race-b-{round}")).await,
        );
        let (ra, rb) = tokio::join!(ana.approve(&a), ben.approve(&b));
        let approved: Vec<&str> =
            [(&a, &ra), (&b, &rb)].iter().filter(|(_, r)| r.status == 200).map(|(id, _)| id.as_str()).collect();
        for (_, r) in [(&a, &ra), (&b, &rb)].iter().filter(|(_, r)| r.status != 200) {
            r.assert_error(403, "policy_denied");
            assert_eq!(r.detail_rules(), ["duplicate_invoice"], "{}", r.text);
        }
        let mut commits = Vec::new();
        for id in &approved {
            let view = server.get_proposal(ACME_BOT_KEY, id).await.body;
            commits.push((server.clone(), id.to_string(), view["approval_token"].as_str().unwrap().to_owned()));
        }
        let replies = commit_all(commits).await;
        let paid = replies.iter().filter(|r| r.status == 200).count();
        assert_eq!(
            paid,
            1,
            "round {round}: exactly one commit pays: {:?}",
            replies.iter().map(|r| &r.text).collect::<Vec<_>>()
        );
        for r in replies.iter().filter(|r| r.status != 200) {
            r.assert_error(403, "policy_denied");
            assert_eq!(r.detail_rules(), ["duplicate_invoice"], "{}", r.text);
            assert!(r.text.contains("already paid or being paid"), "{}", r.text);
            raced += 1;
        }
        assert_eq!(transfers_for(&rail, &[&a, &b]).await, 1, "round {round}: one transfer");
    }
    eprintln!("{raced} of 12 rounds had both copies approved; the database stopped the second commit each time");
    let refused = server.audit_actions_where("operation.refused").await;
    assert_eq!(refused.len(), raced, "each refusal audited: {refused:?}");
    assert!(refused.iter().all(|e| e["data"]["rule"] == "duplicate_invoice"));

    // A payment the rail declines lets go of its invoice: the copy pays.
    let invoice = "INV-DECLINED";
    let (a, b) = (propose(&server, invoice, "declined-a").await, propose(&server, invoice, "declined-b").await);
    assert_eq!(ana.approve(&a).await.status, 200);
    rail.close_destination(ACME_PAYEE).await;
    let token = server.get_proposal(ACME_BOT_KEY, &a).await.body["approval_token"].as_str().unwrap().to_owned();
    let r = server.commit(&a, &token).await;
    assert_eq!(r.body["status"], "failed", "{}", r.text);
    rail.reopen_destination(ACME_PAYEE).await;
    assert_eq!(ben.approve(&b).await.status, 200, "a failed twin is no approved or paid twin");
    let token = server.get_proposal(ACME_BOT_KEY, &b).await.body["approval_token"].as_str().unwrap().to_owned();
    let r = server.commit(&b, &token).await;
    assert_eq!(r.status, 200, "{}", r.text);
    server.wait_status(&b, "succeeded", 30).await;
}
