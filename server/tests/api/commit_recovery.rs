//! What happens around a commit (SPEC §4, §7, §8): the
//! server killed at each step of the commit path converges to one transfer;
//! budgets under concurrency; reconciliation by the CLI; `needs_review`
//! decided by an admin; reversals and `too_late`. Real server and rail-sim
//! processes throughout.

use serde_json::{json, Value};
use std::sync::Arc;

use crate::console_client::*;
use crate::helpers::*;
use crate::rail_harness::*;

/// Kills the server (SIGKILL, by the failpoint) at `step` of its first
/// commit, restarts it, lets the agent retry: one transfer, `succeeded`.
async fn crash_at(step: &str) {
    let rail = RailSim::start().await;
    let scratch = Scratch::with_fixture("");
    scratch.apply_fixture().await;
    // A short rail timeout: the crashed call's claim (the timeout and a
    // margin, `operations::rail_call_lease`) lapses sooner for the retry.
    let fast = [("COUNTERSIGN_RAIL__TOTAL_TIMEOUT_MS", "2000")];
    let server = scratch.serve(&env_for(&rail, &[("COUNTERSIGN_FAILPOINT", step), fast[0]])).await;
    let (id, token) = auto_approved(&server, 5_000).await;
    let path = format!("/api/v1/proposals/{id}/commit");
    let died = server.post_json(&path, ACME_BOT_KEY, &json!({"approval_token": token})).send().await;
    assert!(died.is_err(), "the server died at {step} instead of answering: {died:?}");
    let (dir, config) = server.crashed().await;

    let server = TestServer::spawn_env(dir, config, &env_for(&rail, &fast)).await;
    // The agent lost its answer, so it retries with the token it has.
    let r = server.commit(&id, &token).await;
    assert_eq!(r.status, 200, "retry after a crash at {step}: {}", r.text);
    let done = server.wait_status(&id, "succeeded", 40).await;
    let transfers = rail.transfers().await;
    assert_eq!(transfers.len(), 1, "crash at {step}: exactly one transfer, got {transfers:?}");
    assert_eq!(done["operation"]["rail_reference"], transfers[0]["id"]);
    assert_eq!(server.scalar("SELECT COUNT(*) FROM operations").await, 1);
    let (code, out, err) = server.cli(&["audit", "verify"]).await;
    assert_eq!(code, 0, "{out}{err}");
}

#[tokio::test]
async fn killed_before_the_operation_is_recorded_the_retry_pays_once() {
    crash_at("commit.before_record").await;
}

#[tokio::test]
async fn killed_after_the_operation_is_recorded_reconciliation_pays_once() {
    crash_at("commit.after_record").await;
}

#[tokio::test]
async fn killed_after_the_rail_answered_reconciliation_finds_the_transfer() {
    crash_at("commit.after_rail").await;
}

#[tokio::test]
async fn killed_after_the_outcome_is_written_nothing_more_happens() {
    crash_at("commit.after_outcome").await;
}

/// Sets acme's USD daily budget through the CLI (the server reads it at commit).
async fn set_usd_budget(server: &TestServer, minor: u64) {
    let budget = format!("USD={minor}");
    let (code, out, err) =
        server.cli(&["tenant", "add", "--id", "acme", "--name", "Acme Corp", "--budget", &budget]).await;
    assert_eq!(code, 0, "{out}{err}");
}

#[tokio::test]
async fn concurrent_commits_cannot_overspend_the_daily_budget() {
    let (server, rail) = with_rail("").await;
    set_usd_budget(&server, 20_000).await;
    let mut approved = Vec::new();
    for _ in 0..5 {
        approved.push(auto_approved(&server, 5_000).await);
    }
    let server = Arc::new(server);
    let replies = commit_all(approved.into_iter().map(|(id, token)| (server.clone(), id, token)).collect()).await;
    let (ok, denied) = budget_outcomes(&replies);
    assert_eq!((ok, denied), (4, 1), "20,000 of budget holds four 5,000 payments");
    assert_eq!(rail.transfers().await.len(), 4);
    assert_eq!(server.scalar("SELECT reserved_minor FROM budget_days WHERE tenant_id = 'acme'").await, 20_000);
}

#[tokio::test]
async fn a_failed_operation_releases_its_reservation() {
    let (server, rail) = with_rail("").await;
    set_usd_budget(&server, 10_000).await;
    rail.set_balance(ACME_SOURCE, "usd", 1_000).await;
    let (failed, token) = auto_approved(&server, 5_000).await;
    let r = server.commit(&failed, &token).await;
    assert_eq!(r.body["operation"]["error"]["code"], "insufficient_funds", "{}", r.text);
    assert_eq!(server.scalar("SELECT reserved_minor FROM budget_days WHERE tenant_id = 'acme'").await, 0);

    rail.set_balance(ACME_SOURCE, "usd", 1_000_000).await;
    for _ in 0..2 {
        let (id, token) = auto_approved(&server, 5_000).await;
        let r = server.commit(&id, &token).await;
        assert_eq!(r.status, 200, "the released budget is usable again: {}", r.text);
    }
    let (id, token) = auto_approved(&server, 5_000).await;
    server.commit(&id, &token).await.assert_error(403, "policy_denied");
    assert_eq!(status_of(&server, &id).await, "approved", "a budget refusal changes nothing");
    assert_eq!(rail.transfers().await.len(), 2);
}

#[tokio::test]
async fn the_reconcile_command_settles_an_unknown_operation() {
    // A worker that waits an hour, so only the command can settle it.
    let (server, rail) = with_rail_env("", &[("COUNTERSIGN_RAIL__RECONCILE_INTERVAL_SECS", "3600")]).await;
    rail.fault("drop_after_accept", 1).await;
    let (id, token) = auto_approved(&server, 5_000).await;
    let r = server.commit(&id, &token).await;
    assert_eq!(r.body["status"], "unknown", "{}", r.text);
    let op = r.body["operation"]["id"].as_str().unwrap().to_owned();

    let env = [("COUNTERSIGN_RAIL__URL", rail.url.as_str())];
    let (code, out, err) =
        cli_env(&server.config, &server.data_dir(), &["reconcile", "--operation", &op], None, &env).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&op) && out.contains("unknown -> "), "{out}");
    // Settled at the rail after 2 s; the next run closes it.
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    let (code, out, err) = cli_env(&server.config, &server.data_dir(), &["reconcile"], None, &env).await;
    assert_eq!(code, 0, "{out}{err}");
    let p = server.wait_status(&id, "succeeded", 5).await;
    assert_eq!(rail.transfers().await.len(), 1);
    assert_eq!(p["operation"]["rail_reference"], rail.transfers().await[0]["id"]);
    let (code, _, err) =
        cli_env(&server.config, &server.data_dir(), &["reconcile", "--operation", "op_nope"], None, &env).await;
    assert_ne!(code, 0);
    assert!(err.contains("no operation op_nope"), "{err}");
}

async fn resolve(console: &Console, op: &str, body: Value) -> Reply {
    send(console.authed(reqwest::Method::POST, &format!("/api/v1/operations/{op}/resolution")).json(&body)).await
}

/// A proposal whose operation reconciliation handed to a human.
pub async fn needing_review(server: &TestServer, rail: &RailSim) -> (String, String) {
    rail.fault("error_500", 1).await;
    let (id, token) = auto_approved(server, 5_000).await;
    let r = server.commit(&id, &token).await;
    assert_eq!(r.body["status"], "unknown", "{}", r.text);
    let p = server.wait_status(&id, "needs_review", 20).await;
    assert_eq!(p["operation"]["status"], "needs_review");
    assert_eq!(p["operation"]["error"]["code"], "no_rail_record", "{p}");
    (id, p["operation"]["id"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn past_the_resubmit_window_a_human_decides_and_it_is_audited() {
    let (server, rail) = with_rail("[rail]\nresubmit_window_secs = 0\n").await;
    let (id, op) = needing_review(&server, &rail).await;
    assert!(rail.transfers().await.is_empty(), "past the window nothing is resubmitted");

    let ana = Console::sign_in(&server, "ana").await;
    resolve(&ana, &op, json!({"outcome": "failed", "reason": "x"})).await.assert_error(403, "forbidden");
    let gus = Console::sign_in(&server, "gus").await;
    resolve(&gus, &op, json!({"outcome": "failed", "reason": "x"})).await.assert_error(404, "not_found");
    let ada = add_admin(&server, "acme", "ada").await;
    let no_csrf = send(
        ada.with_origin(reqwest::Method::POST, &format!("/api/v1/operations/{op}/resolution"))
            .json(&json!({"outcome": "failed", "reason": "x"})),
    )
    .await;
    assert_eq!(no_csrf.status, 403, "{}", no_csrf.text);
    let r = resolve(&ada, &op, json!({"outcome": "succeeded"})).await;
    r.assert_error(422, "validation_failed");
    assert_eq!(r.detail_fields(), ["rail_reference".to_string()].into_iter().collect());
    resolve(&ada, &op, json!({"outcome": "failed"})).await.assert_error(422, "validation_failed");
    resolve(&ada, &op, json!({"outcome": "maybe"})).await.assert_error(422, "validation_failed");

    let r = resolve(&ada, &op, json!({"outcome": "failed", "reason": "Rail support confirms nothing was sent."})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "failed");
    assert_eq!(r.body["operation"]["status"], "failed");
    assert_eq!(server.scalar("SELECT reserved_minor FROM budget_days WHERE tenant_id = 'acme'").await, 0);
    resolve(&ada, &op, json!({"outcome": "failed", "reason": "again"})).await.assert_error(409, "invalid_state");

    // The second one really went out (the rail's support pushed it through
    // under the operation's key): marked succeeded with that record.
    let (second, op2) = needing_review(&server, &rail).await;
    let key = server.get_proposal(ACME_BOT_KEY, &second).await.body["operation"]["idempotency_key"].clone();
    let record = rail.push_transfer(key.as_str().unwrap(), 5_000, ACME_TRUSTED_PAYEE).await;
    let r = resolve(&ada, &op2, json!({"outcome": "succeeded", "rail_reference": record["id"]})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "succeeded");
    assert_eq!(r.body["operation"]["rail_reference"], record["id"]);

    for (proposal, action) in [(&id, "operation.failed"), (&second, "operation.succeeded")] {
        let actions = server.audit_actions(proposal).await;
        assert!(actions.iter().any(|a| a == "operation.needs_review"), "{actions:?}");
        assert!(actions.iter().any(|a| a == action), "{actions:?}");
    }
    let actor: String = one(
        "SELECT actor FROM audit_log WHERE proposal_id = ? AND action = 'operation.failed' ORDER BY seq DESC LIMIT 1",
    )
    .bind(&id)
    .fetch_one(&server.db().await)
    .await
    .unwrap();
    assert_eq!(actor, format!("user:{}", ada.user_id()));
}

/// A 5,000 transfer to the trusted payee, committed and settled.
pub async fn succeeded_transfer(server: &TestServer) -> String {
    let (id, token) = auto_approved(server, 5_000).await;
    assert_eq!(server.commit(&id, &token).await.status, 200);
    server.wait_status(&id, "succeeded", 20).await;
    id
}

/// Proposes the reversal of `transfer`, has ana approve it, and commits it.
pub async fn reverse(server: &TestServer, transfer: &str) -> (String, Reply) {
    let body = json!({"run_id": fresh_run(), "kind": "reversal", "transfer_id": transfer, "reason_code": "duplicate"});
    let p = server.create(&body).await;
    assert_eq!(p["status"], "pending_approval", "a reversal always needs a human: {p}");
    let id = p["id"].as_str().unwrap().to_owned();
    let ana = Console::sign_in(server, "ana").await;
    assert_eq!(ana.approve(&id).await.body["status"], "approved");
    let (token, _) = token_of(server, &id).await;
    let r = server.commit(&id, &token).await;
    (id, r)
}

#[tokio::test]
async fn a_reversal_goes_through_the_same_path_and_reverses_the_transfer() {
    let (server, rail) = with_rail("").await;
    let transfer = succeeded_transfer(&server).await;
    let (reversal, r) = reverse(&server, &transfer).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "succeeded", "{}", r.text);
    assert!(r.body["operation"]["rail_reference"].as_str().unwrap().starts_with("trr_"), "{}", r.text);
    assert_eq!(status_of(&server, &transfer).await, "reversed");
    let transfers = rail.transfers().await;
    assert_eq!(transfers.len(), 1, "a reversal creates no transfer");
    assert_eq!(transfers[0]["status"], "reversed");
    let actions = server.audit_actions(&transfer).await;
    assert!(actions.iter().any(|a| a == "proposal.reversed"), "{actions:?}");
    assert!(server.audit_actions(&reversal).await.iter().any(|a| a == "operation.succeeded"));
}

#[tokio::test]
async fn a_reversal_past_the_rails_cutoff_is_too_late_and_escalated() {
    let (server, rail) = with_rail("").await;
    let transfer = succeeded_transfer(&server).await;
    rail.advance_clock(8 * 24 * 3600).await;
    // Named by the rail's transfer id this time.
    let rail_id = server.get_proposal(ACME_BOT_KEY, &transfer).await.body["operation"]["rail_reference"].clone();
    let (_, r) = reverse(&server, rail_id.as_str().unwrap()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let op = &r.body["operation"];
    assert_eq!(op["status"], "too_late", "{}", r.text);
    assert_eq!(op["action_required"], "escalate_to_ops");
    assert_eq!(op["error"]["code"], "too_late");
    assert_eq!(r.body["status"], "failed", "too_late is terminal, not retried");
    assert_eq!(status_of(&server, &transfer).await, "succeeded", "the transfer stands");
}
