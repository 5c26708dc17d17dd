//! Commit (SPEC §6): every forged-token variant is
//! refused with zero rail transfers; one proposal pays once, whatever the
//! retries or concurrency; outcomes map to the contract's statuses.
//! Each test runs a real server process and a real rail-sim process.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey};
use p256::elliptic_curve::Generate;
use p256::pkcs8::EncodePrivateKey;
use serde_json::{json, Value};

use crate::console_client::*;
use crate::helpers::*;
use crate::rail_harness::*;

fn b64json(v: &Value) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
}

fn sign(key: &EncodingKey, alg: Algorithm, header: &Value, claims: &Value) -> String {
    let input = format!("{}.{}", b64json(header), b64json(claims));
    let sig = jsonwebtoken::crypto::sign(input.as_bytes(), key, alg).unwrap();
    format!("{input}.{sig}")
}

#[track_caller]
fn assert_refused(r: &Reply, reason: &str) {
    r.assert_error(401, "approval_token_invalid");
    assert_eq!(r.body["error"]["reason"], reason, "{}", r.text);
}

#[tokio::test]
async fn a_commit_pays_once_and_reports_the_operation() {
    let (server, rail) = with_rail("").await;
    let (id, token) = auto_approved(&server, 5_000).await;
    let r = server.commit(&id, &token).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.header("etag").is_some());
    let p = &r.body;
    assert!(["executing", "succeeded"].contains(&p["status"].as_str().unwrap()), "{}", r.text);
    let op = &p["operation"];
    assert!(op["id"].as_str().unwrap().starts_with("op_"), "{op}");
    let hash = p["request_hash"].as_str().unwrap();
    let key = format!("cs-{id}-{}", &hash["sha256:".len().."sha256:".len() + 16]);
    assert_eq!(op["idempotency_key"], key.as_str(), "the key is derived from the proposal id and hash");
    let reference = op["rail_reference"].as_str().expect("rail_reference").to_owned();
    assert!(reference.starts_with("tr_"), "{op}");
    assert_eq!(op["error"], Value::Null);
    assert_eq!(p["approval_token"], Value::Null, "a redeemed token is not shown again");

    let transfers = rail.transfers().await;
    assert_eq!(transfers.len(), 1);
    assert_eq!(transfers[0]["id"], reference.as_str());
    assert_eq!(transfers[0]["transfer_group"], key.as_str());
    assert_eq!(transfers[0]["amount"], 5_000);
    assert_eq!(transfers[0]["destination"], ACME_TRUSTED_PAYEE);
    assert_eq!(transfers[0]["metadata"]["proposal_id"], id.as_str());

    // Settlement (the simulator's 2 s) is picked up by reconciliation.
    let done = server.wait_status(&id, "succeeded", 20).await;
    assert_eq!(done["operation"]["status"], "succeeded");
    assert_eq!(done["operation"]["rail_reference"], reference.as_str());

    // A retry, with the same token, returns the same operation and pays nothing more.
    let again = server.commit(&id, &token).await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.body["operation"]["id"], op["id"]);
    assert_eq!(again.body["status"], "succeeded");
    assert_eq!(rail.transfers().await.len(), 1);

    let actions = server.audit_actions(&id).await;
    for want in ["proposal.created", "proposal.approved", "operation.created", "operation.succeeded"] {
        assert!(actions.iter().any(|a| a == want), "{want} missing from {actions:?}");
    }
    let used = server
        .scalar(&format!("SELECT COUNT(*) FROM approval_tokens WHERE proposal_id = '{id}' AND used_at IS NOT NULL"))
        .await;
    assert_eq!(used, 1, "the token's jti is recorded as used");
    let (code, out, err) = server.cli(&["audit", "verify"]).await;
    assert_eq!(code, 0, "{out}{err}");
}

#[tokio::test]
async fn every_forged_token_is_refused_and_nothing_is_paid() {
    let (server, rail) = with_rail("").await;
    let (id, token) = auto_approved(&server, 5_000).await;
    let (other_id, other_token) = auto_approved(&server, 6_000).await;
    let jws = decode_jws(&token);
    let (_, encoded_claims_sig) = token.split_once('.').unwrap();
    let signature = encoded_claims_sig.split_once('.').unwrap().1;

    // Another proposal's token.
    assert_refused(&server.commit(&id, &other_token).await, "wrong_proposal");
    // A changed claim under the old signature.
    let mut longer = jws.claims.clone();
    longer["exp"] = json!(longer["exp"].as_i64().unwrap() + 3600);
    let tampered = format!("{}.{}.{signature}", b64json(&jws.header), b64json(&longer));
    assert_refused(&server.commit(&id, &tampered).await, "bad_signature");
    let mut elsewhere = jws.claims.clone();
    elsewhere["rh"] = json!(format!("sha256:{}", "0".repeat(64)));
    let tampered = format!("{}.{}.{signature}", b64json(&jws.header), b64json(&elsewhere));
    assert_refused(&server.commit(&id, &tampered).await, "bad_signature");
    // alg none, with and without a signature.
    let mut none = jws.header.clone();
    none["alg"] = json!("none");
    assert_refused(&server.commit(&id, &format!("{}.{}.", b64json(&none), b64json(&jws.claims))).await, "wrong_alg");
    assert_refused(
        &server.commit(&id, &format!("{}.{}.{signature}", b64json(&none), b64json(&jws.claims))).await,
        "wrong_alg",
    );
    // HS256 with the published public key (JWK and its coordinates) as the HMAC secret.
    let kid = jws.header["kid"].as_str().unwrap();
    let jwk = jwk(&server, kid).await.expect("the kid is published");
    let mut hs = jws.header.clone();
    hs["alg"] = json!("HS256");
    for secret in [serde_json::to_vec(&jwk).unwrap(), jwk["x"].as_str().unwrap().as_bytes().to_vec()] {
        let forged = sign(&EncodingKey::from_secret(&secret).unwrap(), Algorithm::HS256, &hs, &jws.claims);
        assert_refused(&server.commit(&id, &forged).await, "wrong_alg");
    }
    // A foreign P-256 key claiming our kid.
    let foreign = p256::SecretKey::generate();
    let foreign = EncodingKey::from_ec_der(foreign.to_pkcs8_der().unwrap().as_bytes());
    let forged = sign(&foreign, Algorithm::ES256, &jws.header, &jws.claims);
    assert_refused(&server.commit(&id, &forged).await, "bad_signature");
    // Another agent of the same tenant, and another tenant's agent, with the real token.
    assert_refused(&server.commit_as(ACME_OTHER_KEY, &id, &token).await, "wrong_agent");
    assert_refused(&server.commit_as(GLOBEX_BOT_KEY, &id, &token).await, "wrong_tenant");
    // Not a token at all.
    assert_refused(&server.commit(&id, "not.a.token").await, "malformed");
    assert_refused(&server.commit(&id, "x").await, "malformed");

    assert!(rail.transfers().await.is_empty(), "no forgery reached the rail");
    assert_eq!(status_of(&server, &id).await, "approved");
    assert_eq!(status_of(&server, &other_id).await, "approved");
    // The genuine token still works: the refusals consumed nothing.
    let ok = server.commit(&id, &token).await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    assert_eq!(rail.transfers().await.len(), 1);
}

#[tokio::test]
async fn an_expired_token_is_refused_by_the_servers_clock() {
    let rail = RailSim::start().await;
    let scratch = Scratch::with_fixture("[approval]\ntoken_ttl_secs = 60\n");
    scratch.apply_fixture().await;
    let server = scratch.serve(&env_for(&rail, &[])).await;
    let (id, token) = auto_approved(&server, 5_000).await;
    let (dir, config) = server.stop().await;
    // The same server, its clock 10 minutes on: past exp + the 30 s leeway.
    let env = env_for(&rail, &[("COUNTERSIGN_CLOCK_SKEW_SECS", "600")]);
    let server = TestServer::spawn_env(dir, config, &env).await;
    assert_refused(&server.commit(&id, &token).await, "expired");
    assert!(rail.transfers().await.is_empty());
}

#[tokio::test]
async fn a_tampered_stored_request_is_caught_by_the_recomputed_hash() {
    let (server, rail) = with_rail("").await;
    let (id, token) = auto_approved(&server, 5_000).await;
    let db = server.db().await;
    // Someone with database access swaps the payee but keeps the stored hash.
    query("UPDATE proposals SET canonical_request = replace(canonical_request, ?, ?) WHERE id = ?")
        .bind(ACME_TRUSTED_PAYEE)
        .bind(ACME_PAYEE)
        .bind(&id)
        .execute(&db)
        .await
        .unwrap();
    assert_refused(&server.commit(&id, &token).await, "request_hash_mismatch");
    assert!(rail.transfers().await.is_empty());
}

#[tokio::test]
async fn twenty_concurrent_commits_of_one_proposal_make_one_transfer() {
    let (server, rail) = with_rail("").await;
    let (id, token) = auto_approved(&server, 5_000).await;
    let server = std::sync::Arc::new(server);
    let ops = operations_of(&commit_all((0..20).map(|_| (server.clone(), id.clone(), token.clone())).collect()).await);
    assert_eq!(ops.len(), 1, "every answer names the one operation: {ops:?}");
    assert_eq!(rail.transfers().await.len(), 1);
    assert_eq!(server.scalar(&format!("SELECT COUNT(*) FROM operations WHERE proposal_id = '{id}'")).await, 1);
}

#[tokio::test]
async fn a_commit_of_a_proposal_that_is_not_approved_is_a_conflict() {
    let (server, rail) = with_rail("").await;
    let (id, token) = auto_approved(&server, 5_000).await;
    assert_eq!(server.cancel(ACME_BOT_KEY, &id).await.status, 200);
    let r = server.commit(&id, &token).await;
    r.assert_error(409, "invalid_state");
    assert_eq!(r.body["error"]["current_status"], "cancelled", "{}", r.text);
    assert!(rail.transfers().await.is_empty());
    // Unknown proposal, and a malformed body.
    server.commit("prop_doesnotexist", &token).await.assert_error(401, "approval_token_invalid");
    let bad =
        send(server.post_json(&format!("/api/v1/proposals/{id}/commit"), ACME_BOT_KEY, &json!({"token": token}))).await;
    bad.assert_error(422, "validation_failed");
    assert_eq!(bad.detail_fields(), ["token".to_string()].into_iter().collect());
}

#[tokio::test]
async fn policy_is_checked_again_at_commit() {
    let (server, rail) = with_rail("").await;
    // Approved by policy because the payee is trusted; then it no longer is.
    let (id, token) = auto_approved(&server, 5_000).await;
    let (code, out, err) = server
        .cli(&["payee", "add", "--tenant", "acme", "--id", ACME_TRUSTED_PAYEE, "--legal-name", "Acme Supplies Ltd"])
        .await;
    assert_eq!(code, 0, "{out}{err}");
    let r = server.commit(&id, &token).await;
    r.assert_error(403, "policy_denied");
    assert!(r.detail_rules().contains(&"auto_approve".to_owned()), "{}", r.text);

    // Approved by ana; then her limit is lowered below the amount.
    let ana = Console::sign_in(&server, "ana").await;
    let second = pending(&server).await;
    assert_eq!(ana.approve(&second).await.body["status"], "approved");
    let (token, _) = token_of(&server, &second).await;
    add_acme_approver(&server, "ana", 100).await;
    let r = server.commit(&second, &token).await;
    r.assert_error(403, "policy_denied");
    assert!(r.detail_rules().contains(&"approver_limit".to_owned()), "{}", r.text);
    assert!(rail.transfers().await.is_empty());
    assert_eq!(status_of(&server, &second).await, "approved", "a refusal changes nothing");
}

#[tokio::test]
async fn typed_declines_fail_the_operation_with_their_code() {
    let (server, rail) = with_rail("").await;
    rail.set_balance(ACME_SOURCE, "usd", 1_000).await;
    let (id, token) = auto_approved(&server, 5_000).await;
    let r = server.commit(&id, &token).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "failed", "{}", r.text);
    assert_eq!(r.body["operation"]["status"], "failed");
    assert_eq!(r.body["operation"]["error"]["code"], "insufficient_funds");
    assert!(!r.text.contains("card_error"), "no upstream body reaches the agent: {}", r.text);

    rail.set_balance(ACME_SOURCE, "usd", 1_000_000).await;
    rail.close_destination(ACME_TRUSTED_PAYEE).await;
    let (id, token) = auto_approved(&server, 5_000).await;
    let r = server.commit(&id, &token).await;
    assert_eq!(r.body["operation"]["error"]["code"], "destination_closed", "{}", r.text);
    assert_eq!(r.body["status"], "failed");
}

#[tokio::test]
async fn a_5xx_is_unknown_and_reconciliation_resubmits_with_the_same_key() {
    let (server, rail) = with_rail("").await;
    rail.fault("error_500", 1).await;
    let (id, token) = auto_approved(&server, 5_000).await;
    let r = server.commit(&id, &token).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "unknown", "an ambiguous outcome is never failed: {}", r.text);
    assert_eq!(r.body["operation"]["status"], "unknown");
    assert!(!r.text.contains("<html") && !r.text.contains("Internal Server Error"), "{}", r.text);
    let key = r.body["operation"]["idempotency_key"].as_str().unwrap().to_owned();

    let done = server.wait_status(&id, "succeeded", 30).await;
    let transfers = rail.transfers().await;
    assert_eq!(transfers.len(), 1);
    assert_eq!(transfers[0]["transfer_group"], key.as_str(), "resubmitted under the same key");
    assert_eq!(done["operation"]["rail_reference"], transfers[0]["id"]);
}

#[tokio::test]
async fn accept_then_drop_is_unknown_then_reconciled_to_succeeded_with_one_transfer() {
    let (server, rail) = with_rail("").await;
    rail.fault("drop_after_accept", 1).await;
    let (id, token) = auto_approved(&server, 5_000).await;
    let r = server.commit(&id, &token).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "unknown", "{}", r.text);
    assert_eq!(rail.transfers().await.len(), 1, "the rail did create it");

    let done = server.wait_status(&id, "succeeded", 30).await;
    let transfers = rail.transfers().await;
    assert_eq!(transfers.len(), 1, "reconciliation found it rather than paying again");
    assert_eq!(done["operation"]["rail_reference"], transfers[0]["id"]);
    let actions = server.audit_actions(&id).await;
    assert!(actions.iter().any(|a| a == "operation.unknown"), "{actions:?}");
}
