//! The controls from the security review (an outside review and a black-box
//! conformance run), one test per finding, each against a real server:
//! cross-agent reversals, sign-out that sticks, sign-in throttling that
//! counts before hashing and behind a proxy, no cross-tenant username
//! probing, long-polls of deactivated agents, agent keys never in the
//! session store, evidence-backed operation resolution, and four-eyes
//! registry changes.

use reqwest::Method;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

use crate::console_client::*;
use crate::helpers::*;
use crate::rail_harness::*;

// ---------------------------------------------------------------------------
// 1. Reversals name only the agent's own succeeded transfers
// ---------------------------------------------------------------------------

fn reversal_of(transfer: &str) -> Value {
    json!({"run_id": fresh_run(), "kind": "reversal", "transfer_id": transfer, "reason_code": "duplicate"})
}

/// The refusal of a reversal request, with its request id blanked: every
/// miss must be byte-for-byte the same answer.
fn refusal(r: &Reply) -> Value {
    r.assert_error(422, "validation_failed");
    let mut body = r.body.clone();
    body["error"]["request_id"] = json!("-");
    body
}

#[tokio::test]
async fn a_reversal_can_name_only_the_agents_own_succeeded_transfer_and_every_miss_looks_the_same() {
    let (server, _rail) = with_rail("").await;
    let (id, token) = auto_approved(&server, 5_000).await;
    assert_eq!(server.commit(&id, &token).await.status, 200);
    let done = server.wait_status(&id, "succeeded", 20).await;
    let rail_id = done["operation"]["rail_reference"].as_str().unwrap().to_owned();
    let (pending_id, _) = auto_approved(&server, 6_000).await; // approved, never committed

    let other_by_id = refusal(&server.propose_as(ACME_OTHER_KEY, &reversal_of(&id)).await);
    let other_by_rail_id = refusal(&server.propose_as(ACME_OTHER_KEY, &reversal_of(&rail_id)).await);
    let absent = refusal(&server.propose_as(ACME_OTHER_KEY, &reversal_of("prop_01nosuchproposal0000000000")).await);
    let absent_rail = refusal(&server.propose_as(ACME_OTHER_KEY, &reversal_of("tr_nosuchtransfer")).await);
    let not_succeeded = refusal(&server.propose_as(ACME_BOT_KEY, &reversal_of(&pending_id)).await);
    let other_tenant = refusal(&server.propose_as(GLOBEX_BOT_KEY, &reversal_of(&id)).await);
    for (what, body) in [
        ("by rail id", &other_by_rail_id),
        ("absent", &absent),
        ("absent rail id", &absent_rail),
        ("not succeeded", &not_succeeded),
        ("other tenant", &other_tenant),
    ] {
        assert_eq!(body, &other_by_id, "{what}: the same answer as another agent's transfer");
    }
    assert!(other_by_id["error"]["details"][0]["message"].as_str().unwrap().contains("of this agent"));

    // The owner can, by either name.
    assert_eq!(server.propose_as(ACME_BOT_KEY, &reversal_of(&id)).await.status, 201);
    assert_eq!(server.propose_as(ACME_BOT_KEY, &reversal_of(&rail_id)).await.status, 201);
    assert_eq!(status_of(&server, &id).await, "succeeded", "nothing was reversed");
}

#[tokio::test]
async fn commit_checks_again_that_the_reversed_transfer_is_the_agents_own() {
    let (server, rail) = with_rail("").await;
    let (id, token) = auto_approved(&server, 5_000).await;
    assert_eq!(server.commit(&id, &token).await.status, 200);
    server.wait_status(&id, "succeeded", 20).await;
    let reversal = server.create(&reversal_of(&id)).await;
    let reversal = reversal["id"].as_str().unwrap().to_owned();
    let ana = Console::sign_in(&server, "ana").await;
    assert_eq!(ana.approve(&reversal).await.body["status"], "approved");
    let (token, _) = token_of(&server, &reversal).await;
    // Between approval and commit, the transfer stops being this agent's.
    query("UPDATE proposals SET agent_id = 'other-bot' WHERE id = ?")
        .bind(&id)
        .execute(&server.db().await)
        .await
        .unwrap();
    let r = server.commit(&reversal, &token).await;
    r.assert_error(403, "policy_denied");
    assert_eq!(r.detail_rules(), ["reversal"]);
    let transfers = rail.transfers().await;
    assert_eq!(transfers[0]["amount_reversed"], 0, "the rail was not called: {transfers:?}");
}

// ---------------------------------------------------------------------------
// 2. A signed-out session stays signed out
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_request_in_flight_at_sign_out_cannot_bring_the_session_back() {
    let server = Arc::new(TestServer::start().await);
    let ana = Console::sign_in(&server, "ana").await;
    // The console's live-update long-poll, in flight with the session: it
    // waits for more changes than the queue page has seen.
    let queue = send(ana.bare(Method::GET, "/console/queue")).await;
    let seen = queue.body["change_seq"].as_u64().unwrap_or_else(|| panic!("change_seq: {}", queue.text));
    let poll = tokio::spawn(send(ana.bare(Method::GET, &format!("/console/changes?seen={seen}"))));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(ana.sign_out().await.status, 204);
    // A change ends the long-poll, after the sign-out.
    pending(&server).await;
    let finished = tokio::time::timeout(Duration::from_secs(30), poll).await.expect("the poll ends").unwrap();
    assert!(finished.status < 500, "{}", finished.text);

    let after = ana.queue("").await;
    after.assert_error(401, "unauthenticated");
    let id = pending(&server).await;
    let approve = ana.approve(&id).await;
    assert!(approve.status == 401 || approve.status == 403, "{}", approve.text);
    assert_still_pending(&server, &id).await;
    assert_eq!(server.scalar("SELECT COUNT(*) FROM console_sessions").await, 0, "no session row came back");
    let audited = server
        .scalar(&format!(
            "SELECT COUNT(*) FROM audit_log WHERE action = 'session.signed_out' AND actor = 'user:{}'",
            ana.user_id()
        ))
        .await;
    assert_eq!(audited, 1, "sign-out is audited");
}

#[tokio::test]
async fn signed_in_pages_and_console_answers_are_never_stored() {
    let server = TestServer::start().await;
    let ana = Console::sign_in(&server, "ana").await;
    let id = pending(&server).await;
    for path in ["/", &format!("/proposals/{id}"), "/api/v1/queue", "/console/queue"] {
        let r = send(ana.bare(Method::GET, path)).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        assert_eq!(r.header("cache-control"), Some("no-store"), "{path}");
    }
    let poll = server.get_proposal(ACME_BOT_KEY, &id).await;
    assert_eq!(poll.header("cache-control"), Some("no-store"), "status polls carry approval tokens");
    let asset = send(server.client.get(server.url("/pkg/countersign.css"))).await;
    if asset.status == 200 {
        assert_ne!(asset.header("cache-control"), Some("no-store"), "built assets stay cacheable");
    }
}

#[tokio::test]
async fn expired_sessions_are_deleted() {
    let server = TestServer::start_with("[proposals]\nexpiry_sweep_secs = 1\n").await;
    let _ana = Console::sign_in(&server, "ana").await;
    query("INSERT INTO console_sessions (id, user_id, data, expires_at, created_at) VALUES ('old', NULL, '{}', '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z')")
        .execute(&server.db().await)
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while server.scalar("SELECT COUNT(*) FROM console_sessions WHERE id = 'old'").await > 0 {
        assert!(tokio::time::Instant::now() < deadline, "the expired session was never deleted");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(server.scalar("SELECT COUNT(*) FROM console_sessions").await, 1, "the live one stays");
}

// ---------------------------------------------------------------------------
// 3–4. Sign-in throttling
// ---------------------------------------------------------------------------

async fn sign_in_from_address(server: &TestServer, username: &str, password: &str, address: Option<&str>) -> u16 {
    let mut rb = http_client()
        .post(server.url("/api/v1/session"))
        .header("origin", &server.base)
        .json(&json!({"username": username, "password": password}));
    if let Some(address) = address {
        rb = rb.header("x-forwarded-for", address);
    }
    send(rb).await.status
}

#[tokio::test]
async fn concurrent_wrong_passwords_are_counted_before_any_is_checked() {
    let server = Arc::new(TestServer::start().await);
    let attempts = (0..30).map(|_| {
        let server = server.clone();
        tokio::spawn(async move { sign_in_from_address(&server, "ana", "wrong password", None).await })
    });
    let statuses: Vec<u16> = futures::future::join_all(attempts).await.into_iter().map(Result::unwrap).collect();
    let mut checked = statuses.iter().filter(|s| **s == 401).count();
    assert!(checked <= 5, "only the window's room is admitted: {statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 30 - checked, "{statuses:?}");
    // One at a time, the rest of the window's room, and not one more.
    loop {
        match sign_in_from_address(&server, "ana", "wrong password", None).await {
            429 => break,
            401 => checked += 1,
            other => panic!("{other}"),
        }
        assert!(checked <= 5, "more than five wrong passwords were checked");
    }
    assert_eq!(checked, 5);
    assert_eq!(sign_in_from_address(&server, "ana", PASSWORD, None).await, 429, "the pair stays throttled");
    assert_eq!(sign_in_from_address(&server, "ben", PASSWORD, None).await, 200, "other users are not");
}

#[tokio::test]
async fn a_burst_of_bad_sign_ins_is_refused_without_growing_the_process() {
    // A process of its own: its resident memory is measured.
    let server = Arc::new(TestServer::start_process().await);
    // Warm up: the password gate's buffers are allocated once.
    for _ in 0..3 {
        sign_in_from_address(&server, "nobody-warm", "x", None).await;
    }
    let before = server.resident_kib();
    let attempts = (0..100).map(|i| {
        let server = server.clone();
        tokio::spawn(async move { sign_in_from_address(&server, &format!("ghost{i}"), "guess", None).await })
    });
    let statuses: Vec<u16> = futures::future::join_all(attempts).await.into_iter().map(Result::unwrap).collect();
    assert!(statuses.iter().all(|s| *s == 401 || *s == 429), "{statuses:?}");
    assert!(statuses.iter().filter(|s| **s == 429).count() >= 50, "most are refused before hashing: {statuses:?}");
    let grown_mib = server.resident_kib().saturating_sub(before) / 1024;
    // Each argon2 check needs ~19 MiB: unbounded, 100 of them grew the
    // process by over a GiB and kept much of it.
    assert!(grown_mib < 48, "resident memory grew by {grown_mib} MiB");
    assert_eq!(sign_in_from_address(&server, "ana", PASSWORD, None).await, 200);
}

const BEHIND_PROXY: &str = "[console]\ntrusted_proxies = [\"127.0.0.1\"]\n";

#[tokio::test]
async fn behind_a_listed_proxy_the_forwarded_client_is_throttled_per_username() {
    let server = TestServer::start_with(BEHIND_PROXY).await;
    let office = Some("203.0.113.10");
    for _ in 0..5 {
        assert_eq!(sign_in_from_address(&server, "ana", "wrong", office).await, 401);
    }
    assert_eq!(sign_in_from_address(&server, "ana", PASSWORD, office).await, 429, "this pair is throttled");
    assert_eq!(sign_in_from_address(&server, "ana", PASSWORD, Some("198.51.100.7")).await, 200, "not ana elsewhere");
    assert_eq!(sign_in_from_address(&server, "ben", PASSWORD, office).await, 200, "not the office");

    // A whole office of failures never refuses correct credentials.
    for i in 0..50 {
        let status = sign_in_from_address(&server, &format!("typo{i}"), "wrong", office).await;
        assert!(status == 401 || status == 429, "{status}");
    }
    assert_eq!(sign_in_from_address(&server, "maya", PASSWORD, office).await, 200);
    // A client cannot forge its way out: the proxy's entry is the rightmost.
    assert_eq!(sign_in_from_address(&server, "ana", PASSWORD, Some("1.2.3.4, 203.0.113.10")).await, 429);
}

#[tokio::test]
async fn forwarding_headers_are_ignored_unless_the_peer_is_a_listed_proxy() {
    let server = TestServer::start().await;
    for i in 0..5 {
        let forged = format!("198.51.100.{i}");
        assert_eq!(sign_in_from_address(&server, "ana", "wrong", Some(&forged)).await, 401);
    }
    assert_eq!(sign_in_from_address(&server, "ana", PASSWORD, Some("198.51.100.99")).await, 429);
}

#[tokio::test]
async fn an_invalid_proxy_list_is_refused_at_start() {
    let scratch = Scratch::new("[console]\ntrusted_proxies = [\"10.0.0.0/40\"]\n");
    let (code, _, stderr) = scratch.cli(&["migrate"], None).await;
    assert_ne!(code, 0);
    assert!(stderr.contains("console.trusted_proxies"), "{stderr}");
}

// ---------------------------------------------------------------------------
// 5. No probing of another tenant's usernames
// ---------------------------------------------------------------------------

#[tokio::test]
async fn an_admin_cannot_probe_another_tenants_username() {
    let server = TestServer::start().await;
    let ana_hash = || async {
        one::<String>("SELECT password_hash FROM users WHERE username = 'ana'")
            .fetch_one(&server.db().await)
            .await
            .unwrap()
    };
    let before = ana_hash().await;
    let gus = Console::sign_in(&server, "gus").await;
    let mut messages = Vec::new();
    for password in [PASSWORD, "a wrong password"] {
        let r = gus.form("/admin/users", &[("username", "ana"), ("password", password), ("role_viewer", "on")]).await;
        assert!(r.status == 303 || r.status == 302, "{}", r.text);
        messages.push(gus.admin_flash().await);
    }
    assert_eq!(messages[0], messages[1], "right and wrong passwords get the same answer");
    assert!(messages[0].contains("username `ana` is not available"), "{messages:?}");
    assert_eq!(ana_hash().await, before);
    assert_eq!(server.scalar("SELECT COUNT(*) FROM registry_changes").await, 0, "nothing was proposed");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM audit_log WHERE action = 'registry.change.refused'").await, 2);
}

// ---------------------------------------------------------------------------
// 6. A deactivated agent's long-poll delivers nothing more
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_long_poll_of_a_deactivated_agent_ends_without_the_token() {
    let server = Arc::new(TestServer::start().await);
    let (id, _etag, poll) = parked_long_poll(&server, 30).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (code, _, err) = server.cli(&["agent", "deactivate", "--tenant", "acme", "--id", "payout-bot"]).await;
    assert_eq!(code, 0, "{err}");
    let ana = Console::sign_in(&server, "ana").await;
    assert_eq!(ana.approve(&id).await.body["status"], "approved");
    let r = tokio::time::timeout(Duration::from_secs(20), poll).await.expect("the poll wakes").unwrap();
    r.assert_error(401, "unauthenticated");
    assert!(!r.text.contains("approval_token\":\"ey"), "{}", r.text);
}

// ---------------------------------------------------------------------------
// 7. A new agent key is shown in the answer, never kept in the session store
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_new_agent_key_is_shown_once_in_the_answer_and_never_stored_in_the_session() {
    let server = TestServer::start().await;
    let gus = Console::sign_in(&server, "gus").await;
    let r = gus
        .form(
            "/admin/agents",
            &[("id", "new-bot"), ("acts_for", "gus"), ("source_accounts", GLOBEX_SOURCE), ("purposes", "vendor")],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let start = r.text.find("cs_live_").expect("the key is in the answer");
    let key: String = r.text[start..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    assert_eq!(key.len(), 40, "{key}");
    let sessions: Vec<String> = one("SELECT data FROM console_sessions").fetch_all(&server.db().await).await.unwrap();
    assert!(sessions.iter().all(|d| !d.contains(&key) && !d.contains("cs_live_")), "{sessions:?}");
    assert!(!gus.admin_flash().await.contains(&key));
    let changes: Vec<String> = one("SELECT change FROM registry_changes").fetch_all(&server.db().await).await.unwrap();
    assert!(changes.iter().all(|c| !c.contains(&key)), "only the key's hash is kept");
}

// ---------------------------------------------------------------------------
// 8. An operation is marked succeeded only with the rail's own matching record
// ---------------------------------------------------------------------------

/// A commit whose rail answer was lost, past the resubmit window: `needs_review`.
async fn needing_review(server: &TestServer, rail: &RailSim) -> (String, Value) {
    rail.fault("error_500", 1).await;
    let (id, token) = auto_approved(server, 5_000).await;
    assert_eq!(server.commit(&id, &token).await.body["status"], "unknown");
    let p = server.wait_status(&id, "needs_review", 20).await;
    (id, p["operation"].clone())
}

async fn resolve(console: &Console, op: &str, body: Value) -> Reply {
    send(console.authed(Method::POST, &format!("/api/v1/operations/{op}/resolution")).json(&body)).await
}

#[tokio::test]
async fn marking_an_operation_succeeded_needs_the_rails_own_matching_record() {
    let (server, rail) = with_rail("[rail]\nresubmit_window_secs = 0\n").await;
    let ada = add_admin(&server, "acme", "ada").await;
    let (id, op) = needing_review(&server, &rail).await;
    let (op_id, key) = (op["id"].as_str().unwrap(), op["idempotency_key"].as_str().unwrap());

    // A made-up reference, or nothing at all on the rail: refused.
    let r = resolve(&ada, op_id, json!({"outcome": "succeeded", "rail_reference": "tr_madeup0000001"})).await;
    r.assert_error(422, "validation_failed");
    assert_eq!(r.detail_fields(), ["rail_reference".to_string()].into_iter().collect());

    // The rail holds a record under the key, but for another amount: listed, refused.
    let wrong = rail.push_transfer(key, 4_999, ACME_TRUSTED_PAYEE).await;
    let records = send(ada.bare(Method::GET, &format!("/api/v1/operations/{op_id}/rail-records"))).await;
    assert_eq!(records.status, 200, "{}", records.text);
    assert_eq!(records.body["data"][0]["settles_operation"], false, "{}", records.text);
    assert!(records.body["data"][0]["mismatch"].as_str().unwrap().contains("amount"), "{}", records.text);
    let r = resolve(&ada, op_id, json!({"outcome": "succeeded", "rail_reference": wrong["id"]})).await;
    r.assert_error(422, "validation_failed");

    // Another tenant's admin sees nothing; a non-admin may not look.
    let gus = Console::sign_in(&server, "gus").await;
    send(gus.bare(Method::GET, &format!("/api/v1/operations/{op_id}/rail-records")))
        .await
        .assert_error(404, "not_found");
    let ana = Console::sign_in(&server, "ana").await;
    send(ana.bare(Method::GET, &format!("/api/v1/operations/{op_id}/rail-records")))
        .await
        .assert_error(403, "forbidden");

    // The matching record settles it.
    let right = rail.push_transfer(key, 5_000, ACME_TRUSTED_PAYEE).await;
    let records = send(ada.bare(Method::GET, &format!("/api/v1/operations/{op_id}/rail-records"))).await;
    let settling: Vec<&Value> =
        records.body["data"].as_array().unwrap().iter().filter(|r| r["settles_operation"] == true).collect();
    assert_eq!(settling.len(), 1, "{}", records.text);
    assert_eq!(settling[0]["rail_reference"], right["id"]);
    let r = resolve(&ada, op_id, json!({"outcome": "succeeded", "rail_reference": right["id"]})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "succeeded");
    assert_eq!(r.body["operation"]["rail_reference"], right["id"]);
    assert_eq!(status_of(&server, &id).await, "succeeded");
}

#[tokio::test]
async fn a_rail_reference_settles_one_operation_only() {
    let (server, rail) = with_rail("[rail]\nresubmit_window_secs = 0\n").await;
    let ada = add_admin(&server, "acme", "ada").await;
    let (_, first) = needing_review(&server, &rail).await;
    let (_, second) = needing_review(&server, &rail).await;
    // The same record pushed under both keys would be two records; instead
    // the second operation's key gets a record whose id the first takes.
    let record = rail.push_transfer(first["idempotency_key"].as_str().unwrap(), 5_000, ACME_TRUSTED_PAYEE).await;
    let r =
        resolve(&ada, first["id"].as_str().unwrap(), json!({"outcome": "succeeded", "rail_reference": record["id"]}))
            .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // The database refuses a second operation naming the same rail record.
    let taken = query("UPDATE operations SET rail_reference = ? WHERE id = ?")
        .bind(record["id"].as_str().unwrap())
        .bind(second["id"].as_str().unwrap())
        .execute(&server.db().await)
        .await;
    assert!(taken.is_err(), "rail_reference is unique");
}

#[tokio::test]
async fn marking_failed_records_the_admins_reason_for_the_agent() {
    let (server, rail) = with_rail("[rail]\nresubmit_window_secs = 0\n").await;
    let ada = add_admin(&server, "acme", "ada").await;
    let (id, op) = needing_review(&server, &rail).await;
    let reason = "Rail support confirms nothing was sent (ticket 4411).";
    let r = resolve(&ada, op["id"].as_str().unwrap(), json!({"outcome": "failed", "reason": reason})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let error = &server.get_proposal(ACME_BOT_KEY, &id).await.body["operation"]["error"];
    assert_eq!(error["code"], "marked_failed", "{error}");
    assert_eq!(error["message"], format!("Marked failed after review: {reason}"));
    assert!(!error["message"].as_str().unwrap().contains("rail did not"), "{error}");
}

#[tokio::test]
async fn the_resolve_form_needs_the_confirmation_that_restates_the_payment() {
    let (server, rail) = with_rail("[rail]\nresubmit_window_secs = 0\n").await;
    let ada = add_admin(&server, "acme", "ada").await;
    let (id, op) = needing_review(&server, &rail).await;
    let op_id = op["id"].as_str().unwrap();
    let record = rail.push_transfer(op["idempotency_key"].as_str().unwrap(), 5_000, ACME_TRUSTED_PAYEE).await;
    let reference = record["id"].as_str().unwrap();

    let page = send(ada.bare(Method::GET, &format!("/operations/{op_id}/resolve"))).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.text.contains(reference), "the page lists the rail's record");
    assert!(page.text.contains("I confirm the rail settled this payment"), "{}", page.text);

    let path = format!("/operations/{op_id}/resolve");
    let r = ada.form(&path, &[("outcome", "succeeded"), ("rail_reference", reference)]).await;
    assert_eq!(r.header("location"), Some(format!("/operations/{op_id}/resolve?error=confirm").as_str()));
    assert_eq!(status_of(&server, &id).await, "needs_review");
    let r = ada.form(&path, &[("outcome", "succeeded"), ("rail_reference", "tr_other"), ("confirm", "yes")]).await;
    assert_eq!(r.header("location"), Some(format!("/operations/{op_id}/resolve?error=rail_reference").as_str()));
    let r = ada.form(&path, &[("outcome", "succeeded"), ("rail_reference", reference), ("confirm", "yes")]).await;
    assert_eq!(r.header("location"), Some("/operations?result=succeeded"));
    assert_eq!(status_of(&server, &id).await, "succeeded");
}

// ---------------------------------------------------------------------------
// 9. Registry changes from the console need a second admin
// ---------------------------------------------------------------------------

async fn actor_of(server: &TestServer, action: &str) -> String {
    one("SELECT actor FROM audit_log WHERE action = ? ORDER BY seq DESC LIMIT 1")
        .bind(action)
        .fetch_one(&server.db().await)
        .await
        .unwrap_or_else(|e| panic!("{action} audited: {e}"))
}

#[tokio::test]
async fn a_new_approver_waits_for_a_second_admin_who_is_not_the_proposer() {
    let server = TestServer::start().await;
    let gus = Console::sign_in(&server, "gus").await;
    let gia = add_admin(&server, "globex", "gia").await;
    let r = gus
        .form(
            "/admin/users",
            &[("username", "gwen"), ("password", PASSWORD), ("role_approver", "on"), ("limit_USD", "5,000.00")],
        )
        .await;
    assert!(r.status == 303 || r.status == 302, "{}", r.text);
    assert!(gus.admin_flash().await.starts_with("Proposed"), "a proposal, not a change");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM users WHERE username = 'gwen'").await, 0, "not yet");
    assert_eq!(sign_in_as(&server, "gwen", PASSWORD).await.status, 401);
    let change = pending_change_ids(&server).await.pop().expect("a pending change");

    // The proposer cannot confirm their own.
    gus.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    assert!(gus.admin_flash().await.contains("another admin must confirm"));
    assert_eq!(server.scalar("SELECT COUNT(*) FROM users WHERE username = 'gwen'").await, 0);
    // Another tenant's admin cannot even see it.
    let ada = add_admin(&server, "acme", "ada").await;
    ada.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    assert!(ada.admin_flash().await.contains("no such change"));

    let page = send(gia.bare(Method::GET, "/admin")).await;
    assert!(page.text.contains("Create user gwen with roles approver"), "{}", page.text);
    assert!(page.text.contains("Approval limit 5,000.00 USD"), "amounts in major units");
    gia.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    assert!(gia.admin_flash().await.starts_with("Change confirmed"));
    assert_eq!(usd_limit(&server, "gwen").await, Some(500_000), "5,000.00 USD typed, 500000 minor stored");
    assert_eq!(sign_in_as(&server, "gwen", PASSWORD).await.status, 200);
    assert_eq!(actor_of(&server, "registry.change.proposed").await, format!("user:{}", gus.user_id()));
    assert_eq!(actor_of(&server, "registry.change.confirmed").await, format!("user:{}", gia.user_id()));
    assert_eq!(actor_of(&server, "registry.user.created").await, format!("user:{}", gia.user_id()));
    // Confirmed once only.
    gus.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    assert_eq!(server.scalar("SELECT COUNT(*) FROM audit_log WHERE action = 'registry.change.confirmed'").await, 1);
}

#[tokio::test]
async fn raising_a_limit_waits_and_lowering_one_does_not() {
    let server = TestServer::start().await;
    let gus = Console::sign_in(&server, "gus").await;
    let gia = add_admin(&server, "globex", "gia").await;
    // gus's own limit (USD 500,000.00): raising it needs gia, and gus cannot confirm it.
    gia.form(
        "/admin/users",
        &[("username", "gus"), ("role_approver", "on"), ("role_admin", "on"), ("limit_USD", "900,000")],
    )
    .await;
    let raise = pending_change_ids(&server).await.pop().expect("pending");
    gus.form(&format!("/admin/changes/{raise}/confirm"), &[]).await;
    assert!(gus.admin_flash().await.contains("your own account"));
    assert_eq!(usd_limit(&server, "gus").await, Some(50_000_000));
    gus.form(&format!("/admin/changes/{raise}/reject"), &[("note", "not now")]).await;
    assert_eq!(server.scalar("SELECT COUNT(*) FROM registry_changes WHERE status = 'rejected'").await, 1);

    // Lowering applies at once.
    gia.form(
        "/admin/users",
        &[("username", "gus"), ("role_approver", "on"), ("role_admin", "on"), ("limit_USD", "100")],
    )
    .await;
    assert!(gia.admin_flash().await.contains("saved"), "{}", gia.admin_flash().await);
    assert_eq!(usd_limit(&server, "gus").await, Some(10_000));
    assert!(pending_change_ids(&server).await.is_empty());

    // A bad amount is refused with the currency named.
    gia.form("/admin/users", &[("username", "gus"), ("role_approver", "on"), ("limit_USD", "1.005")]).await;
    assert!(gia.admin_flash().await.contains("USD limit has more than 2 decimals"), "{}", gia.admin_flash().await);
}

#[tokio::test]
async fn trusting_a_payee_and_adding_an_agent_wait_for_a_second_admin() {
    let server = TestServer::start().await;
    let gus = Console::sign_in(&server, "gus").await;
    let gia = add_admin(&server, "globex", "gia").await;

    // An untrusted payee at once; trusting it waits.
    gus.form("/admin/payees", &[("id", "acct_globexnew0001"), ("legal_name", "New Payee GmbH")]).await;
    let trusted = || server.scalar("SELECT COALESCE(MAX(trusted), -1) FROM payees WHERE id = 'acct_globexnew0001'");
    assert_eq!(trusted().await, 0);
    gus.form("/admin/payees", &[("id", "acct_globexnew0001"), ("legal_name", "New Payee GmbH"), ("trusted", "on")])
        .await;
    assert_eq!(trusted().await, 0, "not trusted yet");
    let change = pending_change_ids(&server).await.pop().expect("pending");
    let page = send(gia.bare(Method::GET, "/admin")).await;
    // Masked with the account's tag, as the proposal pages show it: two
    // payees ending alike do not look alike.
    let tagged = countersign::domain::mask_account_tagged("acct_globexnew0001");
    assert!(tagged.starts_with("acct_…0001 #"), "{tagged}");
    assert!(page.text.contains(&format!("Trust payee New Payee GmbH ({tagged})")), "masked: {}", page.text);
    assert!(page.text.contains(&format!(r#"data-label="Account" class="payee-account">{tagged}<"#)), "{}", page.text);
    // Phone cards label each cell; the other admin's change is rejected,
    // one's own withdrawn.
    assert!(page.text.contains(r#"data-label="Username""#) && page.text.contains(r#"data-label="Roles""#));
    assert!(page.text.contains(">Reject<") && !page.text.contains(">Withdraw<"), "{}", page.text);
    let own = send(gus.bare(Method::GET, "/admin")).await;
    assert!(own.text.contains(">Withdraw<") && !own.text.contains(">Reject<"), "{}", own.text);
    gia.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    assert_eq!(trusted().await, 1);
    assert_eq!(actor_of(&server, "registry.payee.updated").await, format!("user:{}", gia.user_id()));

    // An agent: its key works only after confirmation.
    let r = gus
        .form(
            "/admin/agents",
            &[("id", "new-bot"), ("acts_for", "gus"), ("source_accounts", GLOBEX_SOURCE), ("purposes", "vendor")],
        )
        .await;
    let start = r.text.find("cs_live_").expect("key shown");
    let key: String = r.text[start..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    server.propose_as(&key, &globex_transfer()).await.assert_error(401, "unauthenticated");
    let change = pending_change_ids(&server).await.pop().expect("pending");
    gia.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    assert_eq!(server.propose_as(&key, &globex_transfer()).await.status, 201);

    // A Slack link waits too; an unlink does not.
    gus.form("/admin/slack-links", &[("username", "gia"), ("slack_user_id", "U0GIA")]).await;
    assert_eq!(server.scalar("SELECT COUNT(*) FROM users WHERE slack_user_id = 'U0GIA'").await, 0);
    let change = pending_change_ids(&server).await.pop().expect("pending");
    gia.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    assert!(gia.admin_flash().await.contains("your own account"), "gia cannot link her own Slack id");
}

#[tokio::test]
async fn a_password_reset_waits_and_ends_the_users_sessions() {
    let server = TestServer::start().await;
    let gus = Console::sign_in(&server, "gus").await;
    let gia = add_admin(&server, "globex", "gia").await;
    let args = ["user", "add", "--tenant", "globex", "--username", "gil", "--role", "approver"];
    let env = [("COUNTERSIGN_USER_PASSWORD", PASSWORD)];
    assert_eq!(cli_env(&server.config, &server.data_dir(), &args, None, &env).await.0, 0);
    let gil = Console::sign_in(&server, "gil").await;
    gus.form("/admin/users", &[("username", "gil"), ("password", "a brand new password"), ("role_approver", "on")])
        .await;
    assert_eq!(gil.queue("").await.status, 200, "nothing happens before confirmation");
    let change = pending_change_ids(&server).await.pop().expect("pending");
    let stored: String = one("SELECT change FROM registry_changes WHERE id = ?")
        .bind(&change)
        .fetch_one(&server.db().await)
        .await
        .unwrap();
    assert!(!stored.contains("a brand new password") && stored.contains("$argon2id$"), "only a hash is kept");
    gia.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    gil.queue("").await.assert_error(401, "unauthenticated");
    assert_eq!(sign_in_as(&server, "gil", "a brand new password").await.status, 200);
}
