//! `POST /api/v1/proposals/{id}/cancel` (SPEC §2, §9).

use serde_json::{json, Value};

use crate::helpers::*;

/// The `current_status` an `invalid_state` error reports (in `details` or
/// next to the code).
fn current_status(r: &Reply) -> Option<String> {
    let e = &r.body["error"];
    e["current_status"].as_str().map(str::to_owned).or_else(|| {
        e["details"].as_array()?.iter().find_map(|d: &Value| d["current_status"].as_str().map(str::to_owned))
    })
}

#[tokio::test]
async fn cancelling_a_pending_proposal_returns_it_cancelled() {
    let server = TestServer::start().await;
    let created = server.create(&transfer()).await;
    let id = created["id"].as_str().unwrap();
    let before = server.get_proposal(ACME_BOT_KEY, id).await;

    let r = server.cancel(ACME_BOT_KEY, id).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["id"], id);
    assert_eq!(r.body["status"], "cancelled");
    assert_eq!(r.body["request_hash"], created["request_hash"], "the request itself is unchanged");
    assert_eq!(r.body["canonical_request"], created["canonical_request"]);
    assert!(rfc3339(&r.body["updated_at"]) >= rfc3339(&created["updated_at"]));

    let after = server.get_proposal(ACME_BOT_KEY, id).await;
    assert_eq!(after.body["status"], "cancelled");
    assert_ne!(after.header("etag"), before.header("etag"), "the ETag changes with the status");
    assert_eq!(server.audit_actions(id).await, ["proposal.created", "proposal.cancelled"]);
}

#[tokio::test]
async fn cancelling_twice_is_409_invalid_state_with_the_current_status() {
    let server = TestServer::start().await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    assert_eq!(server.cancel(ACME_BOT_KEY, &id).await.status, 200);
    let r = server.cancel(ACME_BOT_KEY, &id).await;
    r.assert_error(409, "invalid_state");
    assert_eq!(current_status(&r).as_deref(), Some("cancelled"), "{}", r.text);
    assert_eq!(server.audit_actions(&id).await, ["proposal.created", "proposal.cancelled"], "no second transition");
}

#[tokio::test]
async fn an_approved_proposal_can_be_withdrawn() {
    let server = TestServer::start().await;
    let p = server.create(&with(transfer(), json!({"destination": ACME_TRUSTED_PAYEE, "amount_minor": 1_000}))).await;
    assert_eq!(p["status"], "approved");
    let r = server.cancel(ACME_BOT_KEY, p["id"].as_str().unwrap()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "cancelled");
}

#[tokio::test]
async fn cancelling_another_tenants_proposal_is_404_and_changes_nothing() {
    let server = TestServer::start().await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    server.cancel(GLOBEX_BOT_KEY, &id).await.assert_error(404, "not_found");
    server.cancel(ACME_OTHER_KEY, &id).await.assert_error(404, "not_found");
    server.cancel(ACME_BOT_KEY, "prop_00000000000000000000000000").await.assert_error(404, "not_found");
    assert_eq!(server.get_proposal(ACME_BOT_KEY, &id).await.body["status"], "pending_approval");
    assert_eq!(server.audit_actions(&id).await, ["proposal.created"]);
}

#[tokio::test]
async fn cancel_without_a_key_is_401() {
    let server = TestServer::start().await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    let r = send(server.client.post(server.url(&format!("/api/v1/proposals/{id}/cancel")))).await;
    r.assert_error(401, "unauthenticated");
    assert_eq!(server.get_proposal(ACME_BOT_KEY, &id).await.body["status"], "pending_approval");
}
