//! Roles, tenancy and `decide()` through `POST /api/v1/proposals/{id}/approvals`
//! (SPEC §4, §10): viewers cannot decide, other
//! tenants see nothing, segregation of duties, approver limits, dual
//! approval by distinct people, reasons for rejections, 409 for anything not
//! pending, and policy re-checked at approval time.

use serde_json::{json, Value};
use std::time::Duration;

use crate::console_client::*;
use crate::helpers::*;

fn current_status(r: &Reply) -> Option<String> {
    let e = &r.body["error"];
    e["current_status"]
        .as_str()
        .or_else(|| e["details"].as_array()?.iter().find_map(|d| d["current_status"].as_str()))
        .map(str::to_owned)
}

#[tokio::test]
async fn a_viewer_cannot_approve_or_reject() {
    let server = TestServer::start().await;
    let id = pending(&server).await;
    let vic = Console::sign_in(&server, "vic").await;
    assert_eq!(vic.user["roles"], json!(["viewer"]));
    // A viewer reads the queue …
    assert!(vic.queue_ids("").await.contains(&id), "viewers see the tenant's queue");
    // … but decides nothing.
    vic.approve(&id).await.assert_error(403, "forbidden");
    vic.reject(&id, "looks wrong").await.assert_error(403, "forbidden");
    assert_still_pending(&server, &id).await;
}

#[tokio::test]
async fn another_tenants_user_sees_none_of_its_proposals_in_the_queue() {
    let server = TestServer::start().await;
    let pending_id = pending(&server).await;
    let auto = server.create(&with(transfer(), json!({"destination": ACME_TRUSTED_PAYEE, "amount_minor": 500}))).await;
    assert_eq!(auto["status"], "approved");
    let theirs = server.propose_as(GLOBEX_BOT_KEY, &globex_transfer()).await;
    assert_eq!(theirs.status, 201, "{}", theirs.text);
    let theirs_id = theirs.body["id"].as_str().unwrap().to_owned();

    let gus = Console::sign_in(&server, "gus").await;
    let mut seen = Vec::new();
    for query in ["", "status=all", "status=pending_approval", "status=approved", "order=oldest&status=all"] {
        let r = gus.queue(query).await;
        assert_eq!(r.status, 200, "{query}: {}", r.text);
        assert!(!r.text.contains("Northwind") && !r.text.contains("acme"), "{query}: {}", r.text);
        seen.extend(gus.queue_ids(query).await);
    }
    assert!(!seen.contains(&pending_id) && !seen.contains(&auto["id"].as_str().unwrap().to_owned()), "{seen:?}");
    assert!(seen.contains(&theirs_id), "control: gus sees globex's own proposal");

    // And acme's approver sees acme's, not globex's.
    let ana = Console::sign_in(&server, "ana").await;
    let acme = ana.queue_ids("status=all").await;
    assert!(acme.contains(&pending_id) && !acme.contains(&theirs_id), "{acme:?}");
}

#[tokio::test]
async fn another_tenants_user_deciding_gets_404_as_for_a_missing_proposal() {
    let server = TestServer::start().await;
    let id = pending(&server).await;
    let gus = Console::sign_in(&server, "gus").await;
    let approve = gus.approve(&id).await;
    approve.assert_error(404, "not_found");
    assert!(!approve.text.contains("Northwind"), "{}", approve.text);
    gus.reject(&id, "not mine").await.assert_error(404, "not_found");
    let missing = gus.approve("prop_00000000000000000000000000").await;
    missing.assert_error(404, "not_found");
    assert_eq!(approve.body["error"]["message"], missing.body["error"]["message"]);
    assert_eq!(approve.body["error"]["details"], missing.body["error"]["details"]);
    assert_still_pending(&server, &id).await;
}

#[tokio::test]
async fn the_person_the_agent_acts_for_cannot_approve_its_proposals() {
    let server = TestServer::start().await;
    let id = pending(&server).await;
    let maya = Console::sign_in(&server, "maya").await;
    let r = maya.approve(&id).await;
    r.assert_error(403, "policy_denied");
    assert!(r.detail_rules().contains(&"segregation_of_duties".to_owned()), "{}", r.text);
    assert_still_pending(&server, &id).await;
    // Control: someone else may.
    let ben = Console::sign_in(&server, "ben").await;
    assert_eq!(ben.approve(&id).await.body["status"], "approved");
}

#[tokio::test]
async fn an_approver_above_their_limit_cannot_approve() {
    let server = TestServer::start().await;
    let ana = Console::sign_in(&server, "ana").await;
    let over = pending_for(&server, 600_000).await;
    let r = ana.approve(&over).await;
    r.assert_error(403, "policy_denied");
    assert!(r.detail_rules().contains(&"approver_limit".to_owned()), "{}", r.text);
    assert_still_pending(&server, &over).await;

    // Exactly at the limit is within it.
    let at = pending_for(&server, 500_000).await;
    let r = ana.approve(&at).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "approved");
}

#[tokio::test]
async fn dual_approval_needs_two_distinct_approvers() {
    let server = TestServer::start().await;
    let id = pending_for(&server, 1_200_000).await;
    let p = server.get_proposal(ACME_BOT_KEY, &id).await;
    assert_eq!(p.body["policy"]["required_approvals"], 2, "{}", p.text);

    let ben = Console::sign_in(&server, "ben").await;
    let first = ben.approve(&id).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.body["status"], "pending_approval", "one approval of two: {}", first.text);
    let approvals = first.body["approvals"].as_array().expect("approvals");
    assert_eq!(approvals.len(), 1, "{}", first.text);
    assert_eq!(approvals[0]["approver_id"], ben.user_id().as_str());
    assert_eq!(approvals[0]["decision"], "approve");
    rfc3339(&approvals[0]["at"]);
    let p = server.get_proposal(ACME_BOT_KEY, &id).await;
    assert_eq!(p.body["approval_token"], Value::Null, "no token before the second approval: {}", p.text);

    // The same person cannot count twice.
    let again = ben.approve(&id).await;
    again.assert_error(403, "policy_denied");
    assert!(again.detail_rules().contains(&"distinct_approvers".to_owned()), "{}", again.text);
    // Not even from a second session.
    let ben2 = Console::sign_in(&server, "ben").await;
    let again = ben2.approve(&id).await;
    again.assert_error(403, "policy_denied");
    assert!(again.detail_rules().contains(&"distinct_approvers".to_owned()), "{}", again.text);
    // Ana's limit is too low for this amount.
    let ana = Console::sign_in(&server, "ana").await;
    let r = ana.approve(&id).await;
    r.assert_error(403, "policy_denied");
    assert!(r.detail_rules().contains(&"approver_limit".to_owned()), "{}", r.text);
    let p = server.get_proposal(ACME_BOT_KEY, &id).await;
    assert_eq!(p.body["status"], "pending_approval");
    assert_eq!(p.body["approvals"].as_array().unwrap().len(), 1, "{}", p.text);

    // A second distinct approver with a high enough limit completes it.
    add_acme_approver(&server, "dora", 50_000_000).await;
    let dora = Console::sign_in(&server, "dora").await;
    let done = dora.approve(&id).await;
    assert_eq!(done.status, 200, "{}", done.text);
    assert_eq!(done.body["status"], "approved", "{}", done.text);
    let who: Vec<&str> =
        done.body["approvals"].as_array().unwrap().iter().map(|a| a["approver_id"].as_str().unwrap()).collect();
    assert_eq!(who, [ben.user_id(), dora.user_id()]);

    // The token names both approvers in order; the last one is `sub`.
    let (token, _) = token_of(&server, &id).await;
    let claims = decode_jws(&token).claims;
    assert_eq!(claims["approvers"], json!([ben.user_id(), dora.user_id()]), "{claims}");
    assert_eq!(claims["sub"], dora.user_id().as_str());
    assert_eq!(claims["amr"], json!(["pwd"]));
}

#[tokio::test]
async fn rejecting_needs_a_reason() {
    let server = TestServer::start().await;
    let id = pending(&server).await;
    let ana = Console::sign_in(&server, "ana").await;
    let bodies = [
        json!({"decision": "reject"}),
        json!({"decision": "reject", "reason": ""}),
        json!({"decision": "reject", "reason": "   "}),
    ];
    for body in bodies {
        let r = ana.decide(&id, &body).await;
        r.assert_error(422, "validation_failed");
        assert!(r.detail_fields().contains("reason"), "{body}: {}", r.text);
        assert_still_pending(&server, &id).await;
    }
    // And the decision itself must be one of the two.
    let r = ana.decide(&id, &json!({"decision": "maybe"})).await;
    r.assert_error(422, "validation_failed");
    assert!(r.detail_fields().contains("decision"), "{}", r.text);
    assert_still_pending(&server, &id).await;
}

#[tokio::test]
async fn rejecting_with_a_reason_is_final_and_the_agent_sees_it() {
    let server = TestServer::start().await;
    let id = pending(&server).await;
    let before = server.get_proposal(ACME_BOT_KEY, &id).await;
    let etag = before.header("etag").expect("etag").to_owned();

    let ana = Console::sign_in(&server, "ana").await;
    let r = ana.reject(&id, "Invoice 1842 was already paid by wire").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "rejected", "{}", r.text);
    assert_eq!(r.body["id"], id.as_str());

    // The agent's long poll on its old ETag answers at once with the rejection.
    let started = std::time::Instant::now();
    let poll =
        send(server.get(&format!("/api/v1/proposals/{id}?wait=10"), ACME_BOT_KEY).header("If-None-Match", &etag)).await;
    assert_eq!(poll.status, 200, "{}", poll.text);
    assert_eq!(poll.body["status"], "rejected", "{}", poll.text);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(poll.body["approval_token"], Value::Null);
    let decisions: Vec<&str> =
        poll.body["approvals"].as_array().unwrap().iter().map(|a| a["decision"].as_str().unwrap()).collect();
    assert_eq!(decisions, ["reject"], "{}", poll.text);

    // Final: approving now is a state conflict.
    let ben = Console::sign_in(&server, "ben").await;
    let late = ben.approve(&id).await;
    late.assert_error(409, "invalid_state");
    assert_eq!(current_status(&late).as_deref(), Some("rejected"), "{}", late.text);
}

#[tokio::test]
async fn deciding_a_proposal_that_is_not_pending_is_409_invalid_state() {
    let server = TestServer::start().await;
    let ana = Console::sign_in(&server, "ana").await;

    let cancelled = pending(&server).await;
    assert_eq!(server.cancel(ACME_BOT_KEY, &cancelled).await.status, 200);
    let r = ana.approve(&cancelled).await;
    r.assert_error(409, "invalid_state");
    assert_eq!(current_status(&r).as_deref(), Some("cancelled"), "{}", r.text);
    let r = ana.reject(&cancelled, "too late").await;
    r.assert_error(409, "invalid_state");
    assert_eq!(status_of(&server, &cancelled).await, "cancelled");

    let rejected = pending(&server).await;
    assert_eq!(ana.reject(&rejected, "duplicate").await.status, 200);
    let r = ana.approve(&rejected).await;
    r.assert_error(409, "invalid_state");
    assert_eq!(current_status(&r).as_deref(), Some("rejected"), "{}", r.text);

    let approved = pending(&server).await;
    assert_eq!(ana.approve(&approved).await.status, 200);
    let ben = Console::sign_in(&server, "ben").await;
    let r = ben.approve(&approved).await;
    r.assert_error(409, "invalid_state");
    assert_eq!(current_status(&r).as_deref(), Some("approved"), "{}", r.text);
    let r = ben.reject(&approved, "changed my mind").await;
    r.assert_error(409, "invalid_state");
    assert_eq!(status_of(&server, &approved).await, "approved");
}

#[tokio::test]
async fn policy_is_rechecked_at_approval_time() {
    let server = TestServer::start().await;
    let id = pending(&server).await; // purpose `vendor`
                                     // The operator narrows the agent's scope after the proposal was made.
    let narrowed = r#"
[[agent]]
tenant = "acme"
id = "payout-bot"
key = "cs_test_acme0payout0bot0key0000000000000"
acts_for = "maya"
source_accounts = ["acct_0123456789abcdef"]
purposes = ["refund"]
"#;
    let file = server.dir.path().join("narrowed.toml");
    std::fs::write(&file, narrowed).unwrap();
    let (code, stdout, stderr) = server.cli(&["apply", file.to_str().unwrap()]).await;
    assert_eq!(code, 0, "apply: {stdout}{stderr}");

    let ben = Console::sign_in(&server, "ben").await;
    let r = ben.approve(&id).await;
    r.assert_error(403, "policy_denied");
    assert!(r.detail_rules().contains(&"purpose_not_allowed".to_owned()), "{}", r.text);
    assert_still_pending(&server, &id).await;
    let p = server.get_proposal(ACME_BOT_KEY, &id).await;
    assert_eq!(p.body["approval_token"], Value::Null, "{}", p.text);
}

/// Two approvers giving the two approvals of a dual approval at the same
/// moment (the soak's two instances on PostgreSQL did, and each counted
/// only its own): the proposal is approved every time, with both.
#[tokio::test]
async fn two_approvals_given_at_the_same_moment_both_count() {
    let server = TestServer::start().await;
    apply_user(&server, "acme", "cleo", &["approver"], 50_000_000).await;
    let (ben, cleo) = (Console::sign_in(&server, "ben").await, Console::sign_in(&server, "cleo").await);
    for round in 0..10 {
        let body = with(
            transfer(),
            json!({"run_id": format!("race-{round}"), "amount_minor": 2_000_000,
                                          "invoice_id": format!("race-{round}")}),
        );
        let p = server.create(&body).await;
        assert_eq!(p["policy"]["required_approvals"], 2, "{p}");
        let id = p["id"].as_str().unwrap();
        let (a, b) = tokio::join!(ben.approve(id), cleo.approve(id));
        assert_eq!((a.status, b.status), (200, 200), "{} / {}", a.text, b.text);
        let after = server.get_proposal(ACME_BOT_KEY, id).await.body;
        assert_eq!(after["status"], "approved", "round {round}: both approvals count: {after}");
        assert_eq!(after["approvals"].as_array().unwrap().len(), 2);
    }
}
