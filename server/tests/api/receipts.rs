//! Signed receipts (docs/EVIDENCE.md), black-box: each
//! consequential step of a payment leaves a receipt in its audit entry,
//! an ES256 JWS by a receipt key the JWKS publishes, naming the previous
//! receipt of the same payment by digest.

use serde_json::{json, Value};

use crate::console_client::*;
use crate::helpers::*;
use crate::rail_harness::*;

/// The receipts of `id`'s audit entries, oldest first: (action, compact JWS).
async fn receipts(server: &TestServer, id: &str) -> Vec<(String, String)> {
    let rows = query("SELECT action, data FROM audit_log WHERE proposal_id = ? ORDER BY seq")
        .bind(id)
        .fetch_all(&server.db().await)
        .await
        .unwrap();
    rows.iter()
        .filter_map(|row| {
            let data: Value = serde_json::from_str(&row.get::<String>("data")).unwrap();
            data["receipt"].as_str().map(|r| (row.get::<String>("action"), r.to_owned()))
        })
        .collect()
}

/// Checks every receipt's signature against the JWKS and the chain of
/// `prev` digests; returns their claims.
async fn verified(server: &TestServer, id: &str) -> Vec<Value> {
    let mut prev = Value::Null;
    let mut claims = Vec::new();
    for (action, receipt) in receipts(server, id).await {
        let jws = decode_jws(&receipt);
        assert_eq!(jws.header["typ"], "countersign-receipt+jws");
        assert_eq!(jws.header["alg"], "ES256");
        let kid = jws.header["kid"].as_str().unwrap();
        let key = jwk(server, kid).await.unwrap_or_else(|| panic!("receipt key {kid} is published"));
        assert!(es256_verifies(&jws, &key), "{action}: the receipt's signature verifies");
        assert_eq!(jws.claims["action"], action.as_str());
        assert_eq!(jws.claims["pid"], id);
        assert_eq!(jws.claims["prev"], prev, "{action} names the receipt before it");
        prev = json!(sha256_prefixed(receipt.as_bytes()));
        claims.push(jws.claims);
    }
    claims
}

fn kinds(claims: &[Value]) -> Vec<&str> {
    claims.iter().map(|c| c["kind"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn a_payment_leaves_a_chain_of_signed_receipts_from_approval_to_the_rails_answer() {
    let (server, _rail) = with_rail("").await;
    let ana = Console::sign_in(&server, "ana").await;
    let id = pending(&server).await;
    let r = ana.approve(&id).await;
    assert_eq!(r.body["status"], "approved", "{}", r.text);
    let (token, _) = token_of(&server, &id).await;
    let r = server.commit(&id, &token).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let done = server.wait_status(&id, "succeeded", 20).await;

    let claims = verified(&server, &id).await;
    assert_eq!(kinds(&claims)[..3], ["approval", "approval_token", "authorization"], "{claims:#?}");
    let last = claims.last().unwrap();
    assert!(["rail_answer", "reconciliation"].contains(&last["kind"].as_str().unwrap()), "{claims:#?}");
    assert_eq!(last["data"]["operation_to"], "succeeded");
    assert_eq!(last["data"]["rail_reference"], done["operation"]["rail_reference"]);

    let approval = &claims[0];
    assert_eq!(approval["actor"], format!("user:{}", ana.user_id()));
    assert_eq!(approval["data"]["via"], "api", "the console's JSON API");
    assert_eq!(approval["data"]["amr"], "pwd");
    assert_eq!(approval["rh"], done["request_hash"]);
    assert_eq!(approval["iss"], decode_jws(&token).claims["iss"], "the issuer the tokens name (public_url)");
    let jti = decode_jws(&token).claims["jti"].clone();
    assert_eq!(claims[1]["data"]["jti"], jti, "the grant names the token");
    let authorization = &claims[2];
    assert_eq!(authorization["data"]["jti"], jti, "the authorization names the token it redeemed");
    assert_eq!(authorization["data"]["operation_id"], done["operation"]["id"]);
    assert_eq!(authorization["data"]["idempotency_key"], done["operation"]["idempotency_key"]);
    assert_eq!(authorization["data"]["amount_minor"], done["canonical_request"]["amount_minor"]);
    assert_eq!(authorization["data"]["currency"], done["canonical_request"]["currency"]);

    // A changed receipt no longer verifies; and no receipt repeats a
    // predecessor (each names the one before it, so none can be dropped
    // unnoticed).
    let (_, first) = &receipts(&server, &id).await[0];
    let mut jws = decode_jws(first);
    let mut changed = jws.claims.clone();
    changed["data"]["amr"] = json!("passkey");
    let header = jws.signing_input.split('.').next().unwrap().to_owned();
    jws.signing_input = format!("{header}.{}", b64url_json(&changed));
    let key = jwk(&server, jws.header["kid"].as_str().unwrap()).await.unwrap();
    assert!(!es256_verifies(&jws, &key));
}

fn b64url_json(v: &Value) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
}

#[tokio::test]
async fn a_rejection_is_a_signed_receipt_and_unconsequential_entries_carry_none() {
    let server = TestServer::start().await;
    let ana = Console::sign_in(&server, "ana").await;
    let id = pending(&server).await;
    let r = ana.reject(&id, "not this month").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let claims = verified(&server, &id).await;
    assert_eq!(kinds(&claims), ["rejection"]);
    assert_eq!(claims[0]["prev"], Value::Null, "the payment's first receipt");
    assert_eq!(claims[0]["data"]["reason"], "not this month");
    // Its creation is audited without a receipt (the agent's request is the
    // request hash every receipt names).
    let created: String = one("SELECT data FROM audit_log WHERE proposal_id = ? AND action = 'proposal.created'")
        .bind(&id)
        .fetch_one(&server.db().await)
        .await
        .unwrap();
    assert!(!created.contains("receipt"), "{created}");
}

#[tokio::test]
async fn a_rotated_receipt_key_signs_new_receipts_and_the_old_one_stays_published() {
    let server = TestServer::start().await;
    let ana = Console::sign_in(&server, "ana").await;
    let first = pending(&server).await;
    ana.reject(&first, "one").await;
    let old_kid = decode_jws(&receipts(&server, &first).await[0].1).header["kid"].as_str().unwrap().to_owned();
    let token_kids: Vec<Value> =
        jwks(&server).await["keys"].as_array().unwrap().iter().map(|k| k["kid"].clone()).collect();

    let (code, out, err) = server.cli(&["keys", "rotate", "--receipts"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("new receipt key"), "{out}");
    // The server follows within a second or two (it re-reads the directory).
    tokio::time::sleep(std::time::Duration::from_millis(1_200)).await;
    let second = pending(&server).await;
    ana.reject(&second, "two").await;
    let new_kid = decode_jws(&receipts(&server, &second).await[0].1).header["kid"].as_str().unwrap().to_owned();
    assert_ne!(new_kid, old_kid, "new receipts are signed with the new key");
    let published: Vec<Value> =
        jwks(&server).await["keys"].as_array().unwrap().iter().map(|k| k["kid"].clone()).collect();
    assert!(published.contains(&json!(old_kid)) && published.contains(&json!(new_kid)), "{published:?}");
    assert_eq!(published.len(), token_kids.len() + 1, "one more key, the token keys unchanged");
    verified(&server, &first).await;
    verified(&server, &second).await;
}

#[tokio::test]
async fn an_approval_with_a_passkey_names_the_assertion_in_its_receipt() {
    use crate::passkeys_step_up::{approve_with, serve, sign, sign_in, step_up, with_passkey};
    let server = serve("[policy]\nstep_up_at_minor = { USD = 20_000 }\n").await;
    let ana = sign_in(&server, "ana").await;
    let (mut key, passkey_id) = with_passkey(&server, &ana).await;
    let id = pending(&server).await;
    let options = step_up(&ana, &id).await;
    let assertion = sign(&mut key, &options);
    let approved = approve_with(&ana, &id, &assertion).await;
    assert_eq!(approved.status, 200, "{}", approved.text);

    let claims = verified(&server, &id).await;
    assert_eq!(kinds(&claims), ["approval", "approval_token"]);
    let data = &claims[0]["data"];
    assert_eq!(data["amr"], "passkey");
    assert_eq!(data["passkey_id"], passkey_id.as_str());
    // The digest of what the browser sent, recomputed here from the kept row.
    let row =
        query("SELECT authenticator_data, client_data_json, signature FROM approval_assertions WHERE proposal_id = ?")
            .bind(&id)
            .fetch_one(&server.db().await)
            .await
            .unwrap();
    let joined = format!(
        "{}.{}.{}",
        row.get::<String>("authenticator_data"),
        row.get::<String>("client_data_json"),
        row.get::<String>("signature")
    );
    assert_eq!(data["assertion_sha256"], sha256_prefixed(joined.as_bytes()));
    assert_eq!(
        row.get::<String>("signature"),
        assertion["signature"].as_str().unwrap(),
        "the assertion sent is the one kept"
    );
}

#[tokio::test]
async fn a_call_the_rail_never_recorded_is_receipted_as_withheld() {
    let (server, rail) = with_rail("[rail]\nresubmit_window_secs = 0\n").await;
    let (id, _) = crate::commit_recovery::needing_review(&server, &rail).await;
    assert!(rail.transfers().await.is_empty(), "nothing reached the rail");
    let claims = verified(&server, &id).await;
    let last = claims.last().unwrap();
    assert_eq!(last["kind"], "reconciliation", "{claims:#?}");
    assert_eq!(last["data"]["rail_record"], "withheld", "{last:#}");
    assert_eq!(last["data"]["operation_to"], "needs_review");
    // A reconciliation that found the rail's record says which, not withheld.
    let (paid, token) = auto_approved(&server, 6_000).await;
    assert_eq!(server.commit(&paid, &token).await.status, 200);
    server.wait_status(&paid, "succeeded", 20).await;
    let claims = verified(&server, &paid).await;
    assert!(claims.iter().all(|c| c["data"].get("rail_record").is_none()), "{claims:#?}");
    assert!(claims.last().unwrap()["data"]["rail_reference"].as_str().is_some_and(|r| r.starts_with("tr_")));
}
