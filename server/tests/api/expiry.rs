//! Expiry (SPEC §2): a pending proposal not decided within its
//! TTL becomes `expired`, by a background task, observed by long-polling.

use serde_json::json;
use std::time::{Duration, Instant};

use crate::helpers::*;

const FAST_EXPIRY: &str = "[proposals]\nttl_secs = 1\nexpiry_sweep_secs = 1\n";

#[tokio::test]
async fn a_pending_proposal_expires_after_its_ttl() {
    let server = TestServer::start_with(FAST_EXPIRY).await;
    // Created first, so its deadline passes no later than the pending one's.
    let approved =
        server.create(&with(transfer(), json!({"destination": ACME_TRUSTED_PAYEE, "amount_minor": 500}))).await;
    assert_eq!(approved["status"], "approved");

    let p = server.create(&transfer()).await;
    let id = p["id"].as_str().unwrap();
    assert_eq!(p["status"], "pending_approval");
    assert_eq!((rfc3339(&p["expires_at"]) - rfc3339(&p["created_at"])).num_seconds(), 1, "the configured TTL");

    let first = server.get_proposal(ACME_BOT_KEY, id).await;
    let mut etag = first.header("etag").unwrap().to_owned();
    let mut status = first.body["status"].as_str().unwrap().to_owned();
    let started = Instant::now();
    while status == "pending_approval" {
        assert!(started.elapsed() < Duration::from_secs(20), "expired within 20 s");
        let r =
            send(server.get(&format!("/api/v1/proposals/{id}?wait=10"), ACME_BOT_KEY).header("If-None-Match", &etag))
                .await;
        match r.status {
            200 => {
                etag = r.header("etag").unwrap().to_owned();
                status = r.body["status"].as_str().unwrap().to_owned();
            }
            304 => {}
            other => panic!("unexpected {other}: {}", r.text),
        }
    }
    assert_eq!(status, "expired");
    assert!(started.elapsed() < Duration::from_secs(10), "the long-poll woke when it expired: {:?}", started.elapsed());

    let actions = server.audit_actions(id).await;
    assert_eq!(actions, ["proposal.created", "proposal.expired"]);
    let actor: String = one("SELECT actor FROM audit_log WHERE action = 'proposal.expired' AND proposal_id = ?")
        .bind(id)
        .fetch_one(&server.db().await)
        .await
        .unwrap();
    assert!(!actor.starts_with("agent:"), "a background task expired it, not the agent: {actor}");

    // Terminal: it cannot be cancelled any more.
    let r = server.cancel(ACME_BOT_KEY, id).await;
    r.assert_error(409, "invalid_state");

    // Only pending proposals expire; an approved one keeps its status.
    let r = server.get_proposal(ACME_BOT_KEY, approved["id"].as_str().unwrap()).await;
    assert_eq!(r.body["status"], "approved", "{}", r.text);

    let listed = server.list(ACME_BOT_KEY, "status=expired").await;
    assert_eq!(listed.body["data"][0]["id"], id);
}
