//! Approval tokens (SPEC §5, §9): who gets to see the
//! token, its JOSE header and every claim, the ES256 signature against the
//! published JWKS, lifetimes and `approval_expired`, auto-approval tokens,
//! the key files' permissions and rotation while the server runs.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use crate::console_client::*;
use crate::helpers::*;

/// A server with one proposal approved by ana; returns (server, ana, id).
async fn approved_by_ana(config: &str) -> (TestServer, Console, String) {
    approved_by_ana_on(TestServer::start_with(config).await).await
}

/// [`approved_by_ana`] on a given server (e.g. a process, to restart it).
async fn approved_by_ana_on(server: TestServer) -> (TestServer, Console, String) {
    let ana = Console::sign_in(&server, "ana").await;
    let id = pending(&server).await;
    let r = ana.approve(&id).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "approved", "{}", r.text);
    (server, ana, id)
}

#[tokio::test]
async fn the_token_is_shown_only_to_the_owning_agent() {
    let (server, ana, id) = approved_by_ana("").await;
    let (token, view) = token_of(&server, &id).await;
    assert!(!token.is_empty());
    let expires = rfc3339(&view.body["approval_expires_at"]);
    assert!(expires > chrono::Utc::now() - chrono::Duration::seconds(5), "{expires}");

    // Another agent of the same tenant, and another tenant's agent: not found.
    server.get_proposal(ACME_OTHER_KEY, &id).await.assert_error(404, "not_found");
    server.get_proposal(GLOBEX_BOT_KEY, &id).await.assert_error(404, "not_found");
    let listed = server.list(ACME_OTHER_KEY, "status=approved").await;
    assert!(!listed.text.contains(&token), "{}", listed.text);

    // The console never carries it: not in the queue, not in a decision's answer.
    for query in ["status=all", "status=approved", ""] {
        let q = ana.queue(query).await;
        assert_eq!(q.status, 200, "{}", q.text);
        assert!(!q.text.contains(&token), "queue {query} leaks the token");
        for item in q.body["data"].as_array().unwrap() {
            assert_eq!(item["approval_token"], Value::Null, "{item}");
        }
    }
    let second = pending(&server).await;
    let answer = ana.approve(&second).await;
    assert_eq!(answer.body["status"], "approved");
    assert_eq!(answer.body["approval_token"], Value::Null, "the approver's answer has no token: {}", answer.text);
    let (second_token, _) = token_of(&server, &second).await;
    assert!(!answer.text.contains(&second_token));
}

#[tokio::test]
async fn the_token_header_and_claims_follow_spec_section_5() {
    let (server, ana, id) = approved_by_ana("").await;
    let (token, view) = token_of(&server, &id).await;
    let jws = decode_jws(&token);

    assert_eq!(jws.header["alg"], "ES256", "{}", jws.header);
    assert_eq!(jws.header["typ"], "countersign-approval+jwt", "{}", jws.header);
    let kid = jws.header["kid"].as_str().expect("kid");
    assert!(jwk(&server, kid).await.is_some(), "kid {kid} is published in the JWKS");

    let c = &jws.claims;
    assert_eq!(c["iss"], "http://localhost:8080", "the default public URL: {c}");
    assert_eq!(c["aud"], "countersign:commit", "{c}");
    assert_eq!(c["sub"], ana.user_id().as_str(), "{c}");
    assert_eq!(c["approvers"], json!([ana.user_id()]), "{c}");
    assert_eq!(c["tid"], "acme", "{c}");
    assert_eq!(c["pid"], id.as_str(), "{c}");
    assert_eq!(c["rh"], view.body["request_hash"], "{c}");
    assert!(is_request_hash(c["rh"].as_str().unwrap()));
    assert_eq!(c["azp"], "payout-bot", "{c}");
    assert_eq!(c["amr"], json!(["pwd"]), "{c}");
    let (iat, nbf, exp) =
        (c["iat"].as_i64().expect("iat"), c["nbf"].as_i64().expect("nbf"), c["exp"].as_i64().expect("exp"));
    assert_eq!(exp - iat, 300, "default lifetime: {c}");
    assert!(nbf <= iat, "{c}");
    let now = chrono::Utc::now().timestamp();
    assert!((now - iat).abs() <= 30, "issued now: iat {iat}, now {now}");
    assert!(c["jti"].as_str().is_some_and(|j| j.len() >= 16), "{c}");

    // The status response's expiry is the token's.
    assert_eq!(rfc3339(&view.body["approval_expires_at"]).timestamp(), exp, "{}", view.text);
}

#[tokio::test]
async fn the_token_signature_verifies_against_the_jwks() {
    let (server, _ana, id) = approved_by_ana("").await;
    let (token, _) = token_of(&server, &id).await;
    let jws = decode_jws(&token);
    let kid = jws.header["kid"].as_str().unwrap();
    let key = jwk(&server, kid).await.expect("the token's key is published");
    assert_eq!(key["kty"], "EC", "{key}");
    assert_eq!(key["crv"], "P-256", "{key}");
    assert!(key.get("d").is_none(), "no private part in the JWKS: {key}");
    assert_eq!(jws.signature.len(), 64, "ES256 signatures are r||s, 64 bytes");
    assert!(es256_verifies(&jws, &key), "the ES256 signature verifies");

    // Control: a changed claim under the same signature does not.
    let mut forged = jws.clone();
    let mut claims = jws.claims.clone();
    claims["pid"] = json!("prop_someone_else");
    let header_b64 = jws.signing_input.split('.').next().unwrap();
    forged.signing_input = format!("{header_b64}.{}", URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap()));
    assert!(!es256_verifies(&forged, &key));

    // kid is the RFC 7638 thumbprint of the key.
    let canonical = format!(
        r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
        key["x"].as_str().unwrap(),
        key["y"].as_str().unwrap()
    );
    use sha2::Digest;
    assert_eq!(URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(canonical.as_bytes())), kid);
}

#[tokio::test]
async fn every_token_has_its_own_jti() {
    let (server, ana, first) = approved_by_ana("").await;
    let second = pending(&server).await;
    assert_eq!(ana.approve(&second).await.body["status"], "approved");
    let a = decode_jws(&token_of(&server, &first).await.0).claims;
    let b = decode_jws(&token_of(&server, &second).await.0).claims;
    assert_ne!(a["jti"], b["jti"], "{a} {b}");
    assert_eq!(a["pid"], first.as_str());
    assert_eq!(b["pid"], second.as_str());
}

#[tokio::test]
async fn the_issuer_is_the_configured_public_url() {
    let server = TestServer::start_with("public_url = \"https://console.example\"\n").await;
    let ana = Console::sign_in_from(&server, "ana", "https://console.example").await;
    let id = pending(&server).await;
    assert_eq!(ana.approve(&id).await.body["status"], "approved");
    let claims = decode_jws(&token_of(&server, &id).await.0).claims;
    assert_eq!(claims["iss"], "https://console.example", "{claims}");
}

#[tokio::test]
async fn the_configured_lifetime_is_used_up_to_900_seconds() {
    let (server, _ana, id) = approved_by_ana("[approval]\ntoken_ttl_secs = 900\n").await;
    let (token, view) = token_of(&server, &id).await;
    let c = decode_jws(&token).claims;
    assert_eq!(c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(), 900, "{c}");
    assert_eq!(rfc3339(&view.body["approval_expires_at"]).timestamp(), c["exp"].as_i64().unwrap());
}

#[tokio::test]
async fn a_token_lifetime_above_900_seconds_is_refused_at_start() {
    let scratch = Scratch::new("[approval]\ntoken_ttl_secs = 901\n");
    let (code, stdout, stderr) =
        cli_env(&scratch.config, &scratch.data_dir(), &["serve", "--listen", "127.0.0.1:0"], None, &[]).await;
    assert_ne!(code, 0, "serve must refuse the config\nstdout: {stdout}\nstderr: {stderr}");
    assert!(!stdout.contains("listening on"), "{stdout}");
    assert!(stderr.contains("approval.token_ttl_secs"), "names the key: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test]
async fn an_auto_approved_proposal_carries_a_policy_token() {
    let server = TestServer::start().await;
    let p = server.create(&with(transfer(), json!({"destination": ACME_TRUSTED_PAYEE, "amount_minor": 9_999}))).await;
    assert_eq!(p["status"], "approved", "{p}");
    let id = p["id"].as_str().unwrap();
    let (token, view) = token_of(&server, id).await;
    let jws = decode_jws(&token);
    let c = &jws.claims;
    assert_eq!(c["sub"], "policy:auto_approve_trusted_payee", "{c}");
    assert_eq!(c["amr"], json!(["policy"]), "{c}");
    assert_eq!(c["approvers"], json!(["policy:auto_approve_trusted_payee"]), "{c}");
    assert_eq!(c["pid"], id);
    assert_eq!(c["rh"], view.body["request_hash"]);
    assert_eq!(c["azp"], "payout-bot");
    assert_eq!(c["aud"], "countersign:commit");
    assert_eq!(c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(), 300);
    let key = jwk(&server, jws.header["kid"].as_str().unwrap()).await.expect("published key");
    assert!(es256_verifies(&jws, &key));
}

#[tokio::test]
async fn an_unredeemed_approval_expires_and_a_human_can_approve_again() {
    let config = "[approval]\ntoken_ttl_secs = 1\n[proposals]\nexpiry_sweep_secs = 1\n";
    let (server, _ana, id) = approved_by_ana_on(TestServer::start_process_with(config).await).await;
    let (first_token, view) = token_of(&server, &id).await;
    let first = decode_jws(&first_token).claims;
    assert_eq!(first["exp"].as_i64().unwrap() - first["iat"].as_i64().unwrap(), 1);

    // The token's 30 s clock-skew leeway at commit comes first: rather than
    // wait it out, restart the server with its clock 45 s ahead (test hook).
    let (dir, config) = server.stop().await;
    let server = TestServer::spawn_env(dir, config, &[("COUNTERSIGN_CLOCK_SKEW_SECS", "45")]).await;
    let ana = Console::sign_in(&server, "ana").await;
    // Long-poll until the sweep moves it.
    let mut etag = view.header("etag").unwrap().to_owned();
    let mut status = "approved".to_owned();
    let started = Instant::now();
    while status == "approved" {
        assert!(started.elapsed() < Duration::from_secs(20), "approval_expired within 20 s");
        let r =
            send(server.get(&format!("/api/v1/proposals/{id}?wait=10"), ACME_BOT_KEY).header("If-None-Match", &etag))
                .await;
        match r.status {
            200 => {
                etag = r.header("etag").unwrap().to_owned();
                status = r.body["status"].as_str().unwrap().to_owned();
                if status == "approval_expired" {
                    assert_eq!(r.body["approval_token"], Value::Null, "an expired token is not handed out: {}", r.text);
                }
            }
            304 => {}
            other => panic!("unexpected {other}: {}", r.text),
        }
    }
    assert_eq!(status, "approval_expired");
    assert!(server.audit_actions(&id).await.contains(&"proposal.approval_expired".to_owned()));

    // The console keeps the lapsed round's approval in view, apart.
    let detail = |ana: &Console| {
        let r = ana.bare(reqwest::Method::GET, &format!("/console/proposal?id={id}"));
        async move { send(r).await.body }
    };
    let lapsed = detail(&ana).await;
    assert_eq!((lapsed["status"].as_str(), lapsed["approval_round"].as_i64()), (Some("approval_expired"), Some(2)));
    assert_eq!(lapsed["approvals"].as_array().unwrap().len(), 1, "{lapsed}");
    assert_eq!(lapsed["approvals"][0]["round"], 1);
    assert_eq!(lapsed["token_ttl_secs"], 1);

    // A human approves again: approved, with a new token.
    let again = ana.approve(&id).await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.body["status"], "approved", "{}", again.text);
    let (second_token, _) = token_of(&server, &id).await;
    let second = decode_jws(&second_token).claims;
    assert_ne!(second["jti"], first["jti"], "a new token");
    assert_eq!(second["pid"], id.as_str());
    assert_eq!(second["approvers"], json!([ana.user_id()]), "this round's approvers only: {second}");
    let rounds = detail(&ana).await;
    let by_round: Vec<i64> =
        rounds["approvals"].as_array().unwrap().iter().map(|a| a["round"].as_i64().unwrap()).collect();
    assert_eq!(by_round, [1, 2], "{rounds}");
    assert_eq!(rounds["token_expires_at"].as_str().map(|t| t.ends_with('Z')), Some(true), "{rounds}");

    // One clock: the new token's expiry and the sweep read the same (skewed)
    // time, so the sweep leaves it alone for its 1 s life plus the 30 s
    // leeway. (Decisions once took the wall clock while the sweep took the
    // server's, and it expired at the next sweep.)
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let later = detail(&ana).await;
    assert_eq!(later["status"], "approved", "still approved after two sweeps: {later}");
}

#[tokio::test]
async fn key_files_are_private() {
    let (server, _ana, id) = approved_by_ana("").await;
    let keys = server.data_dir().join("keys");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&keys), 0o700, "{}", keys.display());
    let pems: Vec<_> = std::fs::read_dir(&keys)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pem"))
        .collect();
    assert!(!pems.is_empty(), "a key file in {}", keys.display());
    for pem in &pems {
        assert_eq!(mode(pem), 0o600, "{}", pem.display());
    }
    // The key that signed the token is one of them.
    let kid = decode_jws(&token_of(&server, &id).await.0).header["kid"].as_str().unwrap().to_owned();
    assert!(pems.iter().any(|p| p.file_stem().unwrap() == kid.as_str()), "{kid} in {pems:?}");
}

#[tokio::test]
async fn rotating_keys_while_running_signs_new_tokens_with_the_new_key() {
    let (server, ana, before) = approved_by_ana("").await;
    let (old_token, _) = token_of(&server, &before).await;
    let old = decode_jws(&old_token);
    let old_kid = old.header["kid"].as_str().unwrap().to_owned();

    let (code, stdout, stderr) = server.cli(&["keys", "rotate"]).await;
    assert_eq!(code, 0, "keys rotate: {stdout}{stderr}");
    // The server notices a rotation by another process within a second.
    tokio::time::sleep(Duration::from_millis(1200)).await;

    let after = pending(&server).await;
    assert_eq!(ana.approve(&after).await.body["status"], "approved");
    let (new_token, _) = token_of(&server, &after).await;
    let new = decode_jws(&new_token);
    let new_kid = new.header["kid"].as_str().unwrap().to_owned();
    assert_ne!(new_kid, old_kid, "new tokens use the new key");
    assert!(stdout.contains(&new_kid), "the CLI names the new kid: {stdout}");

    let new_key = jwk(&server, &new_kid).await.expect("new key published");
    let old_key = jwk(&server, &old_kid).await.expect("old key still published");
    assert!(es256_verifies(&new, &new_key));
    assert!(es256_verifies(&old, &old_key), "old tokens stay verifiable");
    assert!(!es256_verifies(&old, &new_key), "control: the keys differ");

    // Private files for the new key too.
    let pem = server.data_dir().join("keys").join(format!("{new_kid}.pem"));
    assert_eq!(std::fs::metadata(&pem).unwrap().permissions().mode() & 0o777, 0o600, "{}", pem.display());
}

#[tokio::test]
async fn a_key_marked_compromised_stops_verifying_at_once_and_its_tokens_are_refused_at_commit() {
    let (server, _rail) = crate::rail_harness::with_rail("").await;
    let (server, ana, id) = approved_by_ana_on(server).await;
    let (token, _) = token_of(&server, &id).await;
    let kid = decode_jws(&token).header["kid"].as_str().unwrap().to_owned();
    assert!(jwk(&server, &kid).await.is_some(), "published while trusted");

    let (code, out, err) = server.cli(&["keys", "compromised", &kid]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("key {kid} marked compromised; it was active: new signing key")), "{out}");
    // The running server follows another process's mark within a second.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let r = server.commit(&id, &token).await;
    r.assert_error(401, "approval_token_invalid");
    assert_eq!(r.body["error"]["reason"], "key_compromised", "{}", r.text);
    assert!(jwk(&server, &kid).await.is_none(), "a compromised key leaves the JWKS at once");

    // New approvals are signed with the new key and commit.
    let next = pending(&server).await;
    assert_eq!(ana.approve(&next).await.body["status"], "approved");
    let (fresh, _) = token_of(&server, &next).await;
    let fresh_kid = decode_jws(&fresh).header["kid"].as_str().unwrap().to_owned();
    assert_ne!(fresh_kid, kid);
    let r = server.commit(&next, &fresh).await;
    assert_eq!(r.status, 200, "{}", r.text);

    let (code, _, err) = server.cli(&["keys", "compromised", "nope"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("there is no key nope"), "{err}");
}
