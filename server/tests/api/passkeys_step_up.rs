//! Approving with a passkey assertion bound to the payment:
//! `POST /api/v1/proposals/{id}/step-up` hands out the challenge, the
//! approval carries the assertion. Each way it can fail is refused on its
//! own: none given, another proposal's or payment's challenge, another
//! nonce, a replay, a removed or someone else's passkey, no CSRF token.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use countersign::people::passkeys::soft::SoftKey;
use countersign::people::passkeys::step_up_challenge;
use reqwest::Method;
use serde_json::{json, Value};

use crate::console_client::*;
use crate::helpers::*;
use crate::passkeys::{answer, challenge, enrolment_code, register, with_code, ALL, PUBLIC_URL};

/// A server at `PUBLIC_URL` with `extra` config (TOML tables), where a new
/// passkey can approve at once (`passkeys.cool_off_secs = 0`: the cool-off
/// has its own tests, in `consent.rs`).
pub async fn serve(extra: &str) -> TestServer {
    TestServer::start_with(&no_cool_off(&format!("public_url = \"{PUBLIC_URL}\"\n{extra}"))).await
}

/// `config` with `passkeys.cool_off_secs = 0` added (to its `[passkeys]`
/// table if it has one).
pub fn no_cool_off(config: &str) -> String {
    match config.find("[passkeys]\n") {
        Some(at) => {
            let (head, tail) = config.split_at(at + "[passkeys]\n".len());
            format!("{head}cool_off_secs = 0\n{tail}")
        }
        None => format!("{config}\n[passkeys]\ncool_off_secs = 0\n"),
    }
}

pub async fn sign_in(server: &TestServer, who: &str) -> Console {
    Console::sign_in_from(server, who, PUBLIC_URL).await
}

/// Registers a new passkey for `console`'s user on `server`, with an
/// enrolment code; the key and the passkey's id.
pub async fn with_passkey(server: &TestServer, console: &Console) -> (SoftKey, String) {
    let key = SoftKey::new();
    let options = challenge(console).await;
    let username = console.user["username"].as_str().unwrap().to_owned();
    let code = enrolment_code(server, &username).await;
    let made = register(console, &with_code(answer(&key, &options, PUBLIC_URL, ALL, "Laptop"), &code)).await;
    assert_eq!(made.status, 201, "{}", made.text);
    (key, made.body["id"].as_str().unwrap().to_owned())
}

/// `POST /api/v1/proposals/{id}/step-up`, answered 201.
pub async fn step_up(console: &Console, id: &str) -> Value {
    let r = send(console.authed(Method::POST, &format!("/api/v1/proposals/{id}/step-up"))).await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.body
}

/// What the browser sends back: `key`'s assertion over `options`' challenge.
pub fn sign(key: &mut SoftKey, options: &Value) -> Value {
    crate::passkeys::sign_options(key, options)
}

pub async fn approve_with(console: &Console, id: &str, step_up: &Value) -> Reply {
    console.decide(id, &json!({"decision": "approve", "step_up": step_up})).await
}

#[track_caller]
pub fn assert_reason(reply: &Reply, status: u16, code: &str, reason: &str) {
    reply.assert_error(status, code);
    assert_eq!(reply.body["error"]["reason"], reason, "{}", reply.text);
}

async fn kept(server: &TestServer) -> i64 {
    server.scalar("SELECT COUNT(*) FROM approval_assertions").await
}

const ABOVE_200: &str = "[policy]\nstep_up_at_minor = { USD = 20_000 }\n";

#[tokio::test]
async fn approving_above_the_threshold_takes_an_assertion_over_the_payment() {
    let server = serve(ABOVE_200).await;
    let ana = sign_in(&server, "ana").await;
    let (mut key, passkey_id) = with_passkey(&server, &ana).await;
    let id = pending(&server).await; // 250.00 USD

    // Without an assertion: refused, saying what to do.
    let bare = ana.approve(&id).await;
    assert_reason(&bare, 403, "step_up_required", "assertion_required");
    assert!(bare.body["error"]["message"].as_str().unwrap().contains("passkey"), "{}", bare.text);
    assert_still_pending(&server, &id).await;

    let options = step_up(&ana, &id).await;
    assert_eq!(options["rp_id"], "console.example");
    assert_eq!(options["user_verification"], "required");
    assert_eq!(options["allow_credentials"], json!([URL_SAFE_NO_PAD.encode(&key.credential_id)]));
    // The challenge is the payment's: request hash, proposal, approver, nonce.
    let nonce: String = one("SELECT challenge FROM passkey_challenges WHERE id = ? AND purpose = 'step_up'")
        .bind(options["challenge_id"].as_str().unwrap())
        .fetch_one(&server.db().await)
        .await
        .unwrap();
    let hash = server.get_proposal(ACME_BOT_KEY, &id).await.body["request_hash"].as_str().unwrap().to_owned();
    let expected = step_up_challenge(&hash, &id, &ana.user_id(), &URL_SAFE_NO_PAD.decode(nonce).unwrap());
    assert_eq!(options["challenge"], URL_SAFE_NO_PAD.encode(expected));

    let approved = approve_with(&ana, &id, &sign(&mut key, &options)).await;
    assert_eq!(approved.status, 200, "{}", approved.text);
    assert_eq!(approved.body["status"], "approved");
    let (token, _) = token_of(&server, &id).await;
    assert_eq!(decode_jws(&token).claims["amr"], json!(["passkey"]));
    assert_eq!(kept(&server).await, 1, "the assertion is kept with the approval");
    let row = query("SELECT sign_count, last_used_at FROM passkeys WHERE id = ?")
        .bind(&passkey_id)
        .fetch_one(&server.db().await)
        .await
        .unwrap();
    let (count, used) = (row.int("sign_count"), row.get::<Option<String>>("last_used_at"));
    assert_eq!((count, used.is_some()), (1, true), "the counter and last use are recorded");
    let amr: String =
        one("SELECT amr FROM approvals WHERE proposal_id = ?").bind(&id).fetch_one(&server.db().await).await.unwrap();
    assert_eq!(amr, "passkey");
    let audit: String = one("SELECT data FROM audit_log WHERE action = 'proposal.approval_given' AND proposal_id = ?")
        .bind(&id)
        .fetch_one(&server.db().await)
        .await
        .unwrap();
    assert!(audit.contains("\"amr\":\"passkey\"") && audit.contains(&passkey_id), "{audit}");
    let key_text = URL_SAFE_NO_PAD.encode(&key.credential_id);
    assert!(!audit.contains(&key_text), "no key material in the audit: {audit}");
}

#[tokio::test]
async fn below_the_threshold_no_assertion_is_needed_and_without_a_passkey_one_is_told_to_register() {
    let server = serve("[policy]\nstep_up_at_minor = { USD = 30_000 }\n").await;
    let ana = sign_in(&server, "ana").await;
    with_passkey(&server, &ana).await;
    let below = pending_for(&server, 29_999).await;
    let approved = ana.approve(&below).await;
    assert_eq!(approved.status, 200, "{}", approved.text);
    assert_eq!(decode_jws(&token_of(&server, &below).await.0).claims["amr"], json!(["pwd"]));

    // At the threshold, ben has no passkey: he is told to register one.
    let ben = sign_in(&server, "ben").await;
    let at = pending_for(&server, 30_000).await;
    let refused = ben.approve(&at).await;
    assert_reason(&refused, 403, "step_up_required", "no_passkey");
    assert!(refused.body["error"]["message"].as_str().unwrap().contains("register one"), "{}", refused.text);
    let no_options = send(ben.authed(Method::POST, &format!("/api/v1/proposals/{at}/step-up"))).await;
    assert_reason(&no_options, 403, "step_up_required", "no_passkey");
    assert_still_pending(&server, &at).await;
}

#[tokio::test]
async fn an_assertion_for_another_payment_proposal_or_nonce_is_refused() {
    let server = serve(ABOVE_200).await;
    let ana = sign_in(&server, "ana").await;
    let (mut key, _) = with_passkey(&server, &ana).await;
    let (a, b) = (pending(&server).await, pending(&server).await);

    // Signed a's challenge, sent under b's challenge id.
    let for_a = step_up(&ana, &a).await;
    let for_b = step_up(&ana, &b).await;
    let mut crossed = sign(&mut key, &for_a);
    crossed["challenge_id"] = for_b["challenge_id"].clone();
    assert_reason(&approve_with(&ana, &b, &crossed).await, 403, "passkey_refused", "wrong_challenge");
    // a's own answer, sent to approve b: the nonce is a's, not b's.
    let for_a_again = step_up(&ana, &a).await;
    let a_answer = sign(&mut key, &for_a_again);
    assert_reason(&approve_with(&ana, &b, &a_answer).await, 403, "passkey_refused", "no_challenge");

    // Another nonce for the same proposal.
    let (first, second) = (step_up(&ana, &b).await, step_up(&ana, &b).await);
    let mut other_nonce = sign(&mut key, &first);
    other_nonce["challenge_id"] = second["challenge_id"].clone();
    assert_reason(&approve_with(&ana, &b, &other_nonce).await, 403, "passkey_refused", "wrong_challenge");

    // The payment changed after the challenge (as an amendment would):
    // the assertion is for the old request hash.
    let options = step_up(&ana, &b).await;
    let signed = sign(&mut key, &options);
    query("UPDATE proposals SET request_hash = ? WHERE id = ?")
        .bind(format!("sha256:{}", "ab".repeat(32)))
        .bind(&b)
        .execute(&server.db().await)
        .await
        .unwrap();
    assert_reason(&approve_with(&ana, &b, &signed).await, 403, "passkey_refused", "wrong_challenge");

    assert_still_pending(&server, &a).await;
    assert_eq!(status_of(&server, &b).await, "pending_approval");
    assert_eq!(kept(&server).await, 0);
}

#[tokio::test]
async fn a_replayed_assertion_is_refused() {
    // Two approvals needed, so the first leaves the proposal waiting.
    let server = serve(&format!("{ABOVE_200}dual_approval_at_minor = {{ USD = 20_000 }}\n")).await;
    let ana = sign_in(&server, "ana").await;
    let (mut key, _) = with_passkey(&server, &ana).await;
    let id = pending(&server).await;
    let good = sign(&mut key, &step_up(&ana, &id).await);
    let first = approve_with(&ana, &id, &good).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.body["status"], "pending_approval");
    assert_reason(&approve_with(&ana, &id, &good).await, 403, "passkey_refused", "no_challenge");

    // A refused answer spends its nonce too: the good one is then too late.
    let other = pending(&server).await;
    let options = step_up(&ana, &other).await;
    let mut broken = sign(&mut key, &options);
    broken["signature"] = json!(URL_SAFE_NO_PAD.encode([0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01]));
    assert_reason(&approve_with(&ana, &other, &broken).await, 403, "passkey_refused", "bad_signature");
    let late = sign(&mut key, &options);
    assert_reason(&approve_with(&ana, &other, &late).await, 403, "passkey_refused", "no_challenge");
    assert_still_pending(&server, &other).await;
    assert_eq!(kept(&server).await, 1);
}

#[tokio::test]
async fn a_removed_or_someone_elses_passkey_is_refused() {
    let server = serve(ABOVE_200).await;
    let ana = sign_in(&server, "ana").await;
    let ben = sign_in(&server, "ben").await;
    let (mut removed, removed_id) = with_passkey(&server, &ana).await;
    let id = pending(&server).await;
    let options = step_up(&ana, &id).await;
    let signed = sign(&mut removed, &options);
    let gone = crate::passkeys::remove_with(&ana, &mut removed, &removed_id).await;
    assert_eq!(gone.status, 204, "{}", gone.text);
    assert_reason(&approve_with(&ana, &id, &signed).await, 403, "passkey_refused", "unknown_passkey");

    // Ben's passkey signing ana's challenge.
    with_passkey(&server, &ana).await;
    let (mut bens, _) = with_passkey(&server, &ben).await;
    let options = step_up(&ana, &id).await;
    assert_reason(
        &approve_with(&ana, &id, &sign(&mut bens, &options)).await,
        403,
        "passkey_refused",
        "unknown_passkey",
    );
    // Ben answering ana's challenge with his own passkey.
    let options = step_up(&ana, &id).await;
    assert_reason(&approve_with(&ben, &id, &sign(&mut bens, &options)).await, 403, "passkey_refused", "no_challenge");
    assert_still_pending(&server, &id).await;
}

#[tokio::test]
async fn step_up_needs_the_session_and_the_csrf_token() {
    let server = serve(ABOVE_200).await;
    let ana = sign_in(&server, "ana").await;
    let (mut key, _) = with_passkey(&server, &ana).await;
    let id = pending(&server).await;
    let path = format!("/api/v1/proposals/{id}/step-up");
    send(ana.with_origin(Method::POST, &path)).await.assert_error(403, "forbidden");
    let signed = sign(&mut key, &step_up(&ana, &id).await);
    let forged = ana
        .with_origin(Method::POST, &format!("/api/v1/proposals/{id}/approvals"))
        .json(&json!({"decision": "approve", "step_up": signed}));
    send(forged).await.assert_error(403, "forbidden");
    assert_still_pending(&server, &id).await;
    // Another tenant's proposal is not found.
    let gus = sign_in(&server, "gus").await;
    send(gus.authed(Method::POST, &path)).await.assert_error(404, "not_found");
}

#[tokio::test]
async fn the_decision_form_carries_the_assertion() {
    let server = serve(ABOVE_200).await;
    let ana = sign_in(&server, "ana").await;
    let (mut key, _) = with_passkey(&server, &ana).await;
    let id = pending(&server).await;
    let path = format!("/proposals/{id}/decision");
    let bare = ana.form(&path, &[("decision", "approve")]).await;
    assert_eq!(bare.status, 303, "{}", bare.text);
    assert!(bare.header("location").unwrap().contains("error=step_up_required"), "{:?}", bare.header("location"));
    let signed = sign(&mut key, &step_up(&ana, &id).await);
    let field = |name: &str| signed[name].as_str().unwrap().to_owned();
    let fields = [
        ("decision", "approve".to_owned()),
        ("step_up_challenge_id", field("challenge_id")),
        ("step_up_credential_id", field("credential_id")),
        ("step_up_authenticator_data", field("authenticator_data")),
        ("step_up_client_data_json", field("client_data_json")),
        ("step_up_signature", field("signature")),
    ];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let done = ana.form(&path, &fields).await;
    assert_eq!(done.status, 303, "{}", done.text);
    assert!(done.header("location").unwrap().contains("done=approved"), "{:?}", done.header("location"));
    assert_eq!(decode_jws(&token_of(&server, &id).await.0).claims["amr"], json!(["passkey"]));
}

#[tokio::test]
async fn commit_can_require_every_approval_to_be_given_with_a_passkey() {
    use crate::rail_harness::*;
    // Step-up from 300.00, but commit wants passkeys from 200.00: a password
    // approval between the two is recorded, and its token cannot commit.
    let config = format!(
        "public_url = \"{PUBLIC_URL}\"\n[policy]\nstep_up_at_minor = {{ USD = 30_000 }}\n\
         commit_requires_passkey_at_minor = {{ USD = 20_000 }}\n"
    );
    let (server, rail) = with_rail(&no_cool_off(&config)).await;
    let ben = sign_in(&server, "ben").await;
    let by_password = pending(&server).await; // 250.00
    assert_eq!(ben.approve(&by_password).await.status, 200);
    let (token, _) = token_of(&server, &by_password).await;
    assert_eq!(decode_jws(&token).claims["amr"], json!(["pwd"]));
    let refused = server.commit(&by_password, &token).await;
    refused.assert_error(401, "approval_token_invalid");
    assert_eq!(refused.body["error"]["reason"], "passkey_required", "{}", refused.text);
    assert!(rail.transfers().await.is_empty(), "no rail call");

    // The same amount approved with a passkey commits.
    let ana = sign_in(&server, "ana").await;
    let (mut key, _) = with_passkey(&server, &ana).await;
    let by_passkey = pending(&server).await;
    let approved = approve_with(&ana, &by_passkey, &sign(&mut key, &step_up(&ana, &by_passkey).await)).await;
    assert_eq!(approved.status, 200, "{}", approved.text);
    let (token, _) = token_of(&server, &by_passkey).await;
    let paid = server.commit(&by_passkey, &token).await;
    assert_eq!(paid.status, 200, "{}", paid.text);

    // Below the threshold, a password approval commits as before.
    let small = pending_for(&server, 19_999).await;
    assert_eq!(ben.approve(&small).await.status, 200);
    let (token, _) = token_of(&server, &small).await;
    assert_eq!(server.commit(&small, &token).await.status, 200);
    assert_eq!(rail.transfers().await.len(), 2);
}

#[tokio::test]
async fn slack_presses_at_or_above_the_threshold_are_sent_to_the_console() {
    use crate::slack_harness::*;
    let slack = FakeSlack::start().await;
    let config = format!(
        "public_url = \"{PUBLIC_URL}\"\n{}\n[policy]\nstep_up_at_minor = {{ USD = 30_000 }}\n",
        slack_config(&slack)
    );
    let server = TestServer::start_with(&config).await;
    link_slack(&server, "acme", "ben", "U0BEN").await;
    let big = pending_for(&server, 30_000).await;
    let big = server.get_proposal(ACME_BOT_KEY, &big).await.body;
    let id = big["id"].as_str().unwrap();
    let announced = loop {
        let found = slack.received("/hook/acme").await.into_iter().find(|m| message_text(&m.body).contains(id));
        if let Some(m) = found {
            break m.body;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(!action_ids(&announced).contains(&"approve".to_owned()), "{announced}");
    assert!(action_ids(&announced).contains(&"approve_in_console".to_owned()), "{announced}");
    // A forged or stale approve press changes nothing and links the console.
    press_signed(&server, NEW_SECRET, &press_body("U0BEN", "approve", &button_value(&big), &slack.url("/r/big"))).await;
    let reply = message_text(&slack.wait_for("/r/big", 1, 10).await[0].body);
    assert!(reply.contains(&format!("{PUBLIC_URL}/proposals/{id}")), "{reply}");
    assert_still_pending(&server, id).await;
    // Below it, the button approves as before.
    let small = pending_for(&server, 29_999).await;
    let small = server.get_proposal(ACME_BOT_KEY, &small).await.body;
    press_signed(&server, NEW_SECRET, &press_body("U0BEN", "approve", &button_value(&small), &slack.url("/r/small")))
        .await;
    slack.wait_for("/r/small", 1, 10).await;
    assert_eq!(status_of(&server, small["id"].as_str().unwrap()).await, "approved");
}

#[tokio::test]
async fn without_a_threshold_a_passkey_is_asked_from_the_dual_approval_amount_and_not_below() {
    // No `policy.step_up_at_minor`: whoever holds a passkey steps up from
    // the amount at which two approvers are needed (10,000.00 USD by
    // default). A passkey registered on a laptop does not stop a small
    // approval from a phone, by password session or by Slack; and someone
    // without a passkey approves as before.
    use crate::slack_harness::*;
    let slack = FakeSlack::start().await;
    let config = format!("public_url = \"{PUBLIC_URL}\"\n{}", slack_config(&slack));
    let server = TestServer::start_with(&no_cool_off(&config)).await;
    link_slack(&server, "acme", "ben", "U0BEN").await;
    let ben = sign_in(&server, "ben").await;
    let (mut key, _) = with_passkey(&server, &ben).await;

    let small = pending_for(&server, 31_000).await; // 310.00 USD
    let r = ben.approve(&small).await;
    assert_eq!(r.status, 200, "no passkey asked below the threshold: {}", r.text);
    assert_eq!(decode_jws(&token_of(&server, &small).await.0).claims["amr"], json!(["pwd"]));
    let by_slack = server.get_proposal(ACME_BOT_KEY, &pending_for(&server, 32_000).await).await.body;
    press_signed(
        &server,
        NEW_SECRET,
        &press_body("U0BEN", "approve", &button_value(&by_slack), &slack.url("/r/small")),
    )
    .await;
    assert_eq!(status_of(&server, by_slack["id"].as_str().unwrap()).await, "approved");

    // At the dual-approval amount: the passkey, in the console only.
    let large = pending_for(&server, 1_000_000).await; // 10,000.00 USD
    assert_reason(&ben.approve(&large).await, 403, "step_up_required", "assertion_required");
    let p = server.get_proposal(ACME_BOT_KEY, &large).await.body;
    press_signed(&server, NEW_SECRET, &press_body("U0BEN", "approve", &button_value(&p), &slack.url("/r/large"))).await;
    let reply = message_text(&slack.wait_for("/r/large", 1, 10).await[0].body);
    assert!(reply.contains("in the console") && reply.contains(PUBLIC_URL), "{reply}");
    assert_still_pending(&server, &large).await;
    let r = approve_with(&ben, &large, &sign(&mut key, &step_up(&ben, &large).await)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["approvals"][0]["approver_id"], ben.user_id().as_str(), "{}", r.text);
    add_acme_approver(&server, "kim", 5_000_000).await;
    let kim = sign_in(&server, "kim").await;
    assert_eq!(kim.approve(&large).await.status, 200, "no passkey, no step-up");
    assert_eq!(decode_jws(&token_of(&server, &large).await.0).claims["amr"], json!(["passkey", "pwd"]));
}

#[tokio::test]
async fn a_threshold_of_zero_asks_a_passkey_for_every_approval() {
    let server = serve("[policy]\nstep_up_at_minor = { USD = 0 }\n").await;
    let ana = sign_in(&server, "ana").await;
    let (mut key, _) = with_passkey(&server, &ana).await;
    let id = pending_for(&server, 1_000).await; // 10.00 USD
    assert_reason(&ana.approve(&id).await, 403, "step_up_required", "assertion_required");
    let r = approve_with(&ana, &id, &sign(&mut key, &step_up(&ana, &id).await)).await;
    assert_eq!(r.status, 200, "{}", r.text);
}

#[tokio::test]
async fn audit_verify_approvals_re_verifies_every_kept_assertion_offline() {
    let server = serve(ABOVE_200).await;
    let ana = sign_in(&server, "ana").await;
    let (mut key, passkey_id) = with_passkey(&server, &ana).await;
    let (a, b) = (pending(&server).await, pending(&server).await);
    for id in [&a, &b] {
        let r = approve_with(&ana, id, &sign(&mut key, &step_up(&ana, id).await)).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    // Removing the passkey afterwards does not unmake what it signed.
    let gone = crate::passkeys::remove_with(&ana, &mut key, &passkey_id).await;
    assert_eq!(gone.status, 204, "{}", gone.text);
    let (code, stdout, stderr) = server.cli(&["audit", "verify-approvals"]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("2 verified, 0 failed"), "{stdout}");

    // A signature changed in the database.
    let db = server.db().await;
    let signature: String =
        one("SELECT signature FROM approval_assertions WHERE proposal_id = ?").bind(&b).fetch_one(&db).await.unwrap();
    let mut bytes = URL_SAFE_NO_PAD.decode(&signature).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    query("UPDATE approval_assertions SET signature = ? WHERE proposal_id = ?")
        .bind(URL_SAFE_NO_PAD.encode(&bytes))
        .bind(&b)
        .execute(&db)
        .await
        .unwrap();
    let (code, stdout, stderr) = server.cli(&["audit", "verify-approvals"]).await;
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("1 verified, 1 failed"), "{stdout}");
    assert!(stderr.contains(&b) && stderr.contains("bad_signature"), "{stderr}");

    // A request hash changed, in the kept row and the proposal alike: the
    // recomputed challenge is not the one signed.
    let honest: String = one("SELECT request_hash FROM approval_assertions WHERE proposal_id = ?")
        .bind(&a)
        .fetch_one(&db)
        .await
        .unwrap();
    let forged = format!("sha256:{}", "cd".repeat(32));
    let set_hash = |table_and_key: &'static str, hash: String| {
        let db = db.clone();
        let a = a.clone();
        async move {
            let sql = format!("UPDATE {table_and_key}");
            query(&sql).bind(hash).bind(a).execute(&db).await.unwrap();
        }
    };
    set_hash("approval_assertions SET request_hash = ? WHERE proposal_id = ?", forged.clone()).await;
    set_hash("proposals SET request_hash = ? WHERE id = ?", forged).await;
    let (code, stdout, stderr) = server.cli(&["audit", "verify-approvals"]).await;
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("0 verified, 2 failed"), "{stdout}");
    assert!(stderr.contains(&a) && stderr.contains("wrong_challenge"), "{stderr}");
    // The kept row put back alone: it no longer names its proposal's hash.
    set_hash("approval_assertions SET request_hash = ? WHERE proposal_id = ?", honest).await;
    let (code, stdout, stderr) = server.cli(&["audit", "verify-approvals"]).await;
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stderr.contains("not the one the assertion was kept with"), "{stderr}");
}

/// `POST /api/v1/bulk/step-up` for `ids`, answered 201.
async fn bulk_step_up(console: &Console, ids: &[&str]) -> Value {
    let r = send(console.authed(Method::POST, "/api/v1/bulk/step-up").json(&json!({"ids": ids}))).await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.body
}

/// The bulk form approving `ids`, with `signed` (an assertion) if any; its `Location`.
async fn bulk_approve(console: &Console, ids: &[&str], signed: Option<&Value>) -> String {
    let mut fields: Vec<(String, String)> = vec![("decision".into(), "approve".into())];
    fields.extend(ids.iter().map(|id| ("id".to_owned(), (*id).to_owned())));
    if let Some(signed) = signed {
        for name in ["challenge_id", "credential_id", "authenticator_data", "client_data_json", "signature"] {
            fields.push((format!("step_up_{name}"), signed[name].as_str().unwrap().to_owned()));
        }
    }
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let r = console.form("/bulk/decision", &fields).await;
    assert_eq!(r.status, 303, "{}", r.text);
    r.header("location").unwrap().to_owned()
}

#[tokio::test]
async fn a_bulk_approval_takes_one_assertion_over_the_listed_set() {
    let server = serve(ABOVE_200).await;
    let ana = sign_in(&server, "ana").await;
    let (mut key, _) = with_passkey(&server, &ana).await;
    let (a, b) = (pending(&server).await, pending(&server).await);

    let bare = bulk_approve(&ana, &[&a, &b], None).await;
    assert!(bare.contains(&format!("outcome={a}%3Astep_up_required")), "{bare}");
    assert_still_pending(&server, &a).await;

    let signed = sign(&mut key, &bulk_step_up(&ana, &[&a, &b]).await);
    let done = bulk_approve(&ana, &[&a, &b], Some(&signed)).await;
    for id in [&a, &b] {
        assert!(done.contains(&format!("outcome={id}%3Aapproved")), "{done}");
        assert_eq!(decode_jws(&token_of(&server, id).await.0).claims["amr"], json!(["passkey"]));
    }
    assert_eq!(server.scalar("SELECT COUNT(*) FROM approval_assertions WHERE kind = 'bulk_step_up'").await, 2);
    let (code, stdout, stderr) = server.cli(&["audit", "verify-approvals"]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("2 verified, 0 failed"), "{stdout}");
}

#[tokio::test]
async fn a_bulk_assertion_over_another_set_is_refused() {
    let server = serve(ABOVE_200).await;
    let ana = sign_in(&server, "ana").await;
    let (mut key, _) = with_passkey(&server, &ana).await;
    let (c, d, e) = (pending(&server).await, pending(&server).await, pending(&server).await);
    let refused = |location: &str| location.contains("error=passkey_refused");

    // One added, one left out, the order changed.
    for sent in [vec![&c, &d, &e], vec![&c], vec![&d, &c]] {
        let signed = sign(&mut key, &bulk_step_up(&ana, &[&c, &d]).await);
        let ids: Vec<&str> = sent.iter().map(|s| s.as_str()).collect();
        let location = bulk_approve(&ana, &ids, Some(&signed)).await;
        assert!(refused(&location), "{ids:?}: {location}");
    }
    // A listed payment changed after the challenge.
    let signed = sign(&mut key, &bulk_step_up(&ana, &[&c, &d]).await);
    query("UPDATE proposals SET request_hash = ? WHERE id = ?")
        .bind(format!("sha256:{}", "ef".repeat(32)))
        .bind(&d)
        .execute(&server.db().await)
        .await
        .unwrap();
    assert!(refused(&bulk_approve(&ana, &[&c, &d], Some(&signed)).await));
    // A replay of a spent bulk assertion.
    let signed = sign(&mut key, &bulk_step_up(&ana, &[&c, &e]).await);
    assert!(bulk_approve(&ana, &[&c, &e], Some(&signed)).await.contains(&format!("outcome={c}%3Aapproved")));
    assert!(refused(&bulk_approve(&ana, &[&c, &e], Some(&signed)).await));
    assert_still_pending(&server, &d).await;
    assert_eq!(server.scalar("SELECT COUNT(*) FROM approval_assertions").await, 2);
}

#[tokio::test]
async fn a_role_can_require_a_passkey_before_any_approval() {
    // Step-up only from 10,000.00; approvers must hold a passkey regardless.
    let server =
        serve("[policy]\nstep_up_at_minor = { USD = 1_000_000 }\n[passkeys]\nrequired_roles = [\"approver\"]\n").await;
    let ben = sign_in(&server, "ben").await; // signing in works without one
    let id = pending(&server).await; // 250.00: below the step-up threshold
    let refused = ben.approve(&id).await;
    assert_reason(&refused, 403, "step_up_required", "no_passkey");
    assert!(refused.body["error"]["message"].as_str().unwrap().contains("register one"), "{}", refused.text);
    let form = ben.form(&format!("/proposals/{id}/decision"), &[("decision", "approve")]).await;
    assert!(form.header("location").unwrap().contains("error=passkey_required"), "{:?}", form.header("location"));
    assert_still_pending(&server, &id).await;

    // Once registered, below the threshold no assertion is asked for.
    with_passkey(&server, &ben).await;
    let approved = ben.approve(&id).await;
    assert_eq!(approved.status, 200, "{}", approved.text);
}

#[tokio::test]
async fn the_account_page_and_the_ceremony_script_are_served() {
    let server = serve("").await;
    let script = send(http_client().get(server.url("/passkeys.js"))).await;
    assert_eq!(script.status, 200);
    assert!(script.header("content-type").is_some_and(|t| t.starts_with("text/javascript")), "{:?}", script.headers);
    assert!(script.text.contains("navigator.credentials.get") && script.text.contains("navigator.credentials.create"));
    let ana = sign_in(&server, "ana").await;
    let page = send(ana.bare(Method::GET, "/account")).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.text.contains("id=\"passkey-list\"") && page.text.contains("data-passkey-register"), "{}", page.text);
    // Signed out, the page asks to sign in first.
    let anonymous = send(http_client().get(server.url("/account"))).await;
    assert_eq!(anonymous.status, 303, "{}", anonymous.text);
}
