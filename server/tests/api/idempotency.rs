//! `Idempotency-Key` with Stripe semantics (SPEC §3), and duplicate
//! collapsing under concurrency.

use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;

use crate::helpers::*;

async fn propose_with_key(server: &TestServer, agent: &str, key: &str, body: &serde_json::Value) -> Reply {
    send(server.post_json("/api/v1/proposals", agent, body).header("Idempotency-Key", key)).await
}

#[tokio::test]
async fn replay_returns_the_same_status_and_body_with_idempotent_replayed() {
    let server = TestServer::start().await;
    let first = propose_with_key(&server, ACME_BOT_KEY, "key-1", &transfer()).await;
    assert_eq!(first.status, 201, "{}", first.text);
    assert_ne!(first.header("idempotent-replayed"), Some("true"), "the first response is not a replay");

    let replay = propose_with_key(&server, ACME_BOT_KEY, "key-1", &transfer()).await;
    assert_eq!(replay.status, 201, "a replay has the first response's status: {}", replay.text);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(replay.text, first.text, "a replay has the first response's body, byte for byte");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, 1);
}

#[tokio::test]
async fn replay_of_an_error_outcome_is_the_same_error() {
    let server = TestServer::start().await;
    let denied = with(transfer(), json!({"purpose_code": "payroll"}));
    let first = propose_with_key(&server, ACME_BOT_KEY, "key-denied", &denied).await;
    first.assert_error(403, "policy_denied");
    let again = propose_with_key(&server, ACME_BOT_KEY, "key-denied", &denied).await;
    assert_eq!(again.status, 403, "{}", again.text);
    assert_eq!(again.body["error"]["code"], "policy_denied");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, 0);
}

#[tokio::test]
async fn same_key_with_a_different_body_is_422_idempotency_key_reused() {
    let server = TestServer::start().await;
    let first = propose_with_key(&server, ACME_BOT_KEY, "key-2", &transfer()).await;
    assert_eq!(first.status, 201, "{}", first.text);
    let other = with(transfer(), json!({"amount_minor": 25001}));
    let r = propose_with_key(&server, ACME_BOT_KEY, "key-2", &other).await;
    r.assert_error(422, "idempotency_key_reused");
    assert_ne!(r.header("idempotent-replayed"), Some("true"));
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, 1, "the second body was not proposed");
}

#[tokio::test]
async fn the_same_key_from_another_agent_is_independent() {
    let server = TestServer::start().await;
    let mine = propose_with_key(&server, ACME_BOT_KEY, "shared-key", &transfer()).await;
    assert_eq!(mine.status, 201, "{}", mine.text);

    let other = propose_with_key(&server, ACME_OTHER_KEY, "shared-key", &transfer()).await;
    assert_eq!(other.status, 201, "{}", other.text);
    assert_ne!(other.header("idempotent-replayed"), Some("true"), "not another agent's replay");
    assert_ne!(other.body["id"], mine.body["id"]);
    assert_eq!(other.body["canonical_request"]["agent_id"], "other-bot");

    let globex = propose_with_key(&server, GLOBEX_BOT_KEY, "shared-key", &globex_transfer()).await;
    assert_eq!(globex.status, 201, "a different body under the same key is fine for another tenant: {}", globex.text);
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, 3);
}

#[tokio::test]
async fn a_key_whose_first_request_is_still_in_flight_is_409_idempotency_key_in_use() {
    let server = TestServer::start().await;
    // Stand in for a first request that has claimed the key and not finished:
    // the claim row as the server writes it (fingerprint = SHA-256 of the
    // body's JCS form), still `in_flight`.
    let fingerprint = sha256_prefixed(jcs(&transfer()).as_bytes()).trim_start_matches("sha256:").to_owned();
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    query(
        "INSERT INTO idempotency_keys (tenant_id, agent_id, key, fingerprint, state, created_at)
         VALUES ('acme', 'payout-bot', 'busy-key', ?, 'in_flight', ?)",
    )
    .bind(&fingerprint)
    .bind(&now)
    .execute(&server.db().await)
    .await
    .unwrap();

    let r = propose_with_key(&server, ACME_BOT_KEY, "busy-key", &transfer()).await;
    r.assert_error(409, "idempotency_key_in_use");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, 0, "the second request did not run");
    // Another agent's identical key is not blocked by it.
    let r = propose_with_key(&server, ACME_OTHER_KEY, "busy-key", &transfer()).await;
    assert_eq!(r.status, 201, "{}", r.text);
}

#[tokio::test]
async fn key_longer_than_255_characters_is_refused() {
    let server = TestServer::start().await;
    let r = propose_with_key(&server, ACME_BOT_KEY, &"k".repeat(256), &transfer()).await;
    r.assert_error(422, "validation_failed");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, 0);

    let r = propose_with_key(&server, ACME_BOT_KEY, &"k".repeat(255), &transfer()).await;
    assert_eq!(r.status, 201, "255 characters is allowed: {}", r.text);
}

#[tokio::test]
async fn the_same_key_fired_20_times_at_once_creates_exactly_one_proposal() {
    let server = Arc::new(TestServer::start().await);
    let body = transfer();
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let server = server.clone();
            let body = body.clone();
            tokio::spawn(async move { propose_with_key(&server, ACME_BOT_KEY, "storm-key", &body).await })
        })
        .collect();
    let replies: Vec<Reply> = futures::future::join_all(tasks).await.into_iter().map(|r| r.expect("task")).collect();

    let mut fresh = 0;
    let mut ids = BTreeSet::new();
    for r in &replies {
        match r.status {
            201 | 200 => {
                if r.header("idempotent-replayed") != Some("true") && r.status == 201 {
                    fresh += 1;
                }
                ids.insert(r.body["id"].as_str().expect("a proposal").to_owned());
            }
            409 => r.assert_error(409, "idempotency_key_in_use"),
            other => panic!("unexpected {other}: {}", r.text),
        }
    }
    let statuses: Vec<u16> = replies.iter().map(|r| r.status).collect();
    assert!(statuses.contains(&201), "at least one 201: {statuses:?}");
    assert_eq!(fresh, 1, "exactly one request ran, the rest replayed or waited: {statuses:?}");
    assert_eq!(ids.len(), 1, "every success names the same proposal: {ids:?}");

    assert_eq!(server.all_ids(ACME_BOT_KEY).await, ids.iter().cloned().collect::<Vec<_>>());
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, 1);
    assert_eq!(server.scalar("SELECT COUNT(*) FROM audit_log WHERE action = 'proposal.created'").await, 1);
}

#[tokio::test]
async fn the_same_proposal_fired_20_times_at_once_without_a_key_collapses_into_one() {
    let server = Arc::new(TestServer::start().await);
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let server = server.clone();
            tokio::spawn(async move { server.propose_as(ACME_BOT_KEY, &transfer()).await })
        })
        .collect();
    let replies: Vec<Reply> = futures::future::join_all(tasks).await.into_iter().map(|r| r.expect("task")).collect();
    let statuses: Vec<u16> = replies.iter().map(|r| r.status).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1, "one created: {statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 19, "the rest are the existing one: {statuses:?}");
    let ids: BTreeSet<_> = replies.iter().map(|r| r.body["id"].to_string()).collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, 1);
}
