//! Consent that cannot be manufactured: each finding of the
//! attack on `serve --demo` with step-up and commit-requires-passkey at
//! 1,000.00 USD, played again against the real server. docs/SECURITY.md
//! ("Consent that cannot be manufactured") lists each test here.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use countersign::people::passkeys::soft::SoftKey;
use countersign::people::passkeys::webauthn::{FLAG_UP, FLAG_UV};
use reqwest::header::{COOKIE, SET_COOKIE};
use reqwest::Method;
use serde_json::{json, Value};

use crate::console_client::*;
use crate::helpers::*;
use crate::passkeys::{
    answer, challenge, enrolment_code, register, remove_with, sign_options, with_code, ALL, PUBLIC_URL,
};
use crate::passkeys_step_up::{approve_with, assert_reason, sign, sign_in, step_up};
use crate::rail_harness::*;

/// Step-up and commit-requires-passkey at 1,000.00 USD, as in the attack.
const AT_1000: &str =
    "[policy]\nstep_up_at_minor = { USD = 100_000 }\ncommit_requires_passkey_at_minor = { USD = 100_000 }\n";

/// A server at `PUBLIC_URL` with `extra` config; the default cool-off (24 h).
async fn serve(extra: &str) -> TestServer {
    TestServer::start_with(&format!("public_url = \"{PUBLIC_URL}\"\n{extra}")).await
}

/// Adds `username` to acme with `roles` and a USD limit, and signs them in
/// (from `PUBLIC_URL`, the servers' `public_url` here).
async fn add_user(server: &TestServer, username: &str, roles: &[&str], usd_limit_minor: u64) -> Console {
    add_user_from(server, username, roles, usd_limit_minor, PUBLIC_URL).await
}

async fn add_user_from(
    server: &TestServer,
    username: &str,
    roles: &[&str],
    usd_limit_minor: u64,
    origin: &str,
) -> Console {
    apply_user(server, "acme", username, roles, usd_limit_minor).await;
    Console::sign_in_from(server, username, origin).await
}

/// Two acme admins, ada (also an approver up to 5,000.00 USD) and abe.
async fn admins(server: &TestServer) -> (Console, Console) {
    (add_user(server, "ada", &["admin", "approver"], 500_000).await, add_user(server, "abe", &["admin"], 0).await)
}

/// Registers a passkey for `console`'s user with an enrolment code; the key
/// and the answer.
async fn enrol(server: &TestServer, console: &Console) -> (SoftKey, Reply) {
    let key = SoftKey::new();
    let username = console.user["username"].as_str().unwrap().to_owned();
    let code = enrolment_code(server, &username).await;
    let options = challenge(console).await;
    let made = register(console, &with_code(answer(&key, &options, PUBLIC_URL, ALL, "Laptop"), &code)).await;
    (key, made)
}

async fn passkeys_of(server: &TestServer, username: &str) -> i64 {
    one::<i64>("SELECT COUNT(*) FROM passkeys p JOIN users u ON u.id = p.user_id WHERE u.username = ?")
        .bind(username)
        .fetch_one(&server.db().await)
        .await
        .unwrap()
}

fn field_refused(reply: &Reply, field: &str) {
    reply.assert_error(422, "validation_failed");
    assert!(reply.detail_fields().contains(field), "{field}: {}", reply.text);
}

// ---------------------------------------------------------------------------
// 1. A stolen session cannot mint its own passkey consent
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_stolen_session_cannot_enrol_a_passkey_of_its_own() {
    let server = serve(AT_1000).await;
    // The thief holds ana's session cookie and CSRF token, nothing else.
    let ana = sign_in(&server, "ana").await;
    let thief = SoftKey::new();
    let options = challenge(&ana).await;
    assert_eq!(options["authorization"], Value::Null, "ana holds no passkey: only an enrolment code allows one");
    let bare = register(&ana, &answer(&thief, &options, PUBLIC_URL, ALL, "Thief")).await;
    assert_reason(&bare, 403, "step_up_required", "authorization_required");
    // A guessed code, and another user's real one.
    let options = challenge(&ana).await;
    field_refused(
        &register(&ana, &with_code(answer(&thief, &options, PUBLIC_URL, ALL, "Thief"), "ABCD-EFGH-JKMN")).await,
        "enrolment_code",
    );
    let bens = enrolment_code(&server, "ben").await;
    let options = challenge(&ana).await;
    field_refused(
        &register(&ana, &with_code(answer(&thief, &options, PUBLIC_URL, ALL, "Thief"), &bens)).await,
        "enrolment_code",
    );
    assert_eq!(passkeys_of(&server, "ana").await, 0);

    // So the 2,000 USD payment cannot be approved with a manufactured passkey.
    let id = pending_for(&server, 200_000).await;
    assert_reason(&ana.approve(&id).await, 403, "step_up_required", "no_passkey");
    assert_still_pending(&server, &id).await;
}

#[tokio::test]
async fn holding_a_passkey_another_is_added_only_with_its_assertion() {
    let server = serve(AT_1000).await;
    let ana = sign_in(&server, "ana").await;
    let (mut own, made) = enrol(&server, &ana).await;
    assert_eq!(made.status, 201, "{}", made.text);
    let thief = SoftKey::new();

    // The options now ask for an assertion by ana's passkey over this very
    // registration.
    let options = challenge(&ana).await;
    let authorization = &options["authorization"];
    assert_eq!(authorization["challenge_id"], options["challenge_id"]);
    assert_eq!(authorization["allow_credentials"], json!([URL_SAFE_NO_PAD.encode(&own.credential_id)]));
    let expected = countersign::people::passkeys::add_challenge(
        &ana.user_id(),
        options["challenge_id"].as_str().unwrap(),
        &URL_SAFE_NO_PAD.decode(options["challenge"].as_str().unwrap()).unwrap(),
    );
    assert_eq!(authorization["challenge"], URL_SAFE_NO_PAD.encode(expected));
    let bare = register(&ana, &answer(&thief, &options, PUBLIC_URL, ALL, "Thief")).await;
    assert_reason(&bare, 403, "step_up_required", "authorization_required");

    // Signed by the thief's own key: not one of ana's.
    let options = challenge(&ana).await;
    let mut body = answer(&thief, &options, PUBLIC_URL, ALL, "Thief");
    body["authorization"] = sign_options(&mut thief_clone(&thief), &options["authorization"]);
    assert_reason(&register(&ana, &body).await, 403, "passkey_refused", "unknown_passkey");

    // Ana's key over another registration's challenge.
    let (first, second) = (challenge(&ana).await, challenge(&ana).await);
    let mut body = answer(&thief, &second, PUBLIC_URL, ALL, "Thief");
    let mut signed = sign_options(&mut own, &first["authorization"]);
    signed["challenge_id"] = second["challenge_id"].clone();
    body["authorization"] = signed;
    assert_reason(&register(&ana, &body).await, 403, "passkey_refused", "wrong_challenge");
    assert_eq!(passkeys_of(&server, "ana").await, 1, "nothing added");

    // Ana's own assertion over this registration allows it.
    let options = challenge(&ana).await;
    let second_key = SoftKey::new();
    let mut body = answer(&second_key, &options, PUBLIC_URL, ALL, "Phone");
    body["authorization"] = sign_options(&mut own, &options["authorization"]);
    let added = register(&ana, &body).await;
    assert_eq!(added.status, 201, "{}", added.text);
    let audit: String = one("SELECT data FROM audit_log WHERE action = 'passkey.registered' ORDER BY seq DESC")
        .fetch_one(&server.db().await)
        .await
        .unwrap();
    let made_id = made.body["id"].as_str().unwrap();
    assert!(audit.contains(&format!("\"authorized_by\":{{\"passkey_id\":\"{made_id}\"}}")), "{audit}");
}

/// A key with the same secret as `key` (so an assertion is the thief's own
/// credential id and key, nothing of ana's).
fn thief_clone(key: &SoftKey) -> SoftKey {
    SoftKey { signing: key.signing.clone(), credential_id: key.credential_id.clone(), counter: key.counter }
}

#[tokio::test]
async fn removing_a_passkey_needs_an_assertion_so_a_thief_cannot_drop_the_step_up() {
    // A threshold of 0: every USD approval by ana needs her passkey.
    let server = serve("[passkeys]\ncool_off_secs = 0\n[policy]\nstep_up_at_minor = { USD = 0 }\n").await;
    let ana = sign_in(&server, "ana").await;
    let (mut own, made) = enrol(&server, &ana).await;
    let passkey = made.body["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/me/passkeys/{passkey}");

    // The thief's attempts: no body, no authorization, a foreign assertion.
    // The refusal says what was refused: a removal, not an addition.
    let bare = send(ana.authed(Method::DELETE, &path)).await;
    assert_reason(&bare, 403, "step_up_required", "authorization_required");
    let message = bare.body["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("Removing a passkey needs"), "{message}");
    assert!(!message.contains("adding"), "{message}");
    field_refused(&send(ana.authed(Method::DELETE, &path).json(&json!({}))).await, "authorization");
    let options = send(ana.authed(Method::POST, &format!("{path}/removal-challenges"))).await;
    assert_eq!(options.status, 201, "{}", options.text);
    let expected = countersign::people::passkeys::remove_challenge(
        &ana.user_id(),
        &passkey,
        &removal_nonce(&server, &options.body).await,
    );
    assert_eq!(options.body["challenge"], URL_SAFE_NO_PAD.encode(expected), "bound to the user and the passkey");
    let mut thief = SoftKey::new();
    let forged = json!({"authorization": sign_options(&mut thief, &options.body)});
    assert_reason(
        &send(ana.authed(Method::DELETE, &path).json(&forged)).await,
        403,
        "passkey_refused",
        "unknown_passkey",
    );
    assert_eq!(passkeys_of(&server, "ana").await, 1);

    // So ana still steps up: her approval without the assertion is refused.
    let id = pending(&server).await;
    assert_reason(&ana.approve(&id).await, 403, "step_up_required", "assertion_required");

    // Ana herself removes it with her passkey.
    let removed = remove_with(&ana, &mut own, &passkey).await;
    assert_eq!(removed.status, 204, "{}", removed.text);
    assert_eq!(passkeys_of(&server, "ana").await, 0);
}

/// The nonce behind a removal challenge (stored server-side).
async fn removal_nonce(server: &TestServer, options: &Value) -> Vec<u8> {
    let nonce: String = one("SELECT challenge FROM passkey_challenges WHERE id = ? AND purpose = 'passkey_remove'")
        .bind(options["challenge_id"].as_str().unwrap())
        .fetch_one(&server.db().await)
        .await
        .unwrap();
    URL_SAFE_NO_PAD.decode(nonce).unwrap()
}

#[tokio::test]
async fn a_new_passkey_cannot_approve_until_its_cool_off_ends_or_another_admin_confirms_it() {
    let server = serve(AT_1000).await;
    let (ada, abe) = admins(&server).await;
    let ana = sign_in(&server, "ana").await;
    let (mut key, made) = enrol(&server, &ana).await;
    assert_eq!(made.status, 201, "{}", made.text);
    let passkey = made.body["id"].as_str().unwrap().to_owned();
    let usable_from = rfc3339(&made.body["usable_from"]);
    let hours = (usable_from - chrono::Utc::now().fixed_offset()).num_minutes() as f64 / 60.0;
    assert!((23.9..=24.0).contains(&hours), "a day's cool-off by default: {hours} h");

    let id = pending_for(&server, 200_000).await;
    let cooling = send(ana.authed(Method::POST, &format!("/api/v1/proposals/{id}/step-up"))).await;
    assert_reason(&cooling, 403, "step_up_required", "passkey_cooling_off");
    assert_reason(&ana.approve(&id).await, 403, "step_up_required", "passkey_cooling_off");
    assert_still_pending(&server, &id).await;

    // Ana cannot confirm it (not an admin); ada cannot confirm her own.
    send(
        ana.authed(Method::POST, &format!("/admin/passkeys/{passkey}/confirm"))
            .form(&[("csrf_token", ana.csrf.as_str())]),
    )
    .await
    .assert_error(403, "forbidden");
    let (_, adas) = enrol(&server, &ada).await;
    let adas = adas.body["id"].as_str().unwrap().to_owned();
    ada.form(&format!("/admin/passkeys/{adas}/confirm"), &[]).await;
    assert!(ada.admin_flash().await.contains("your own passkey"), "ada's own");

    // Abe confirms ana's: it approves at once, and ana is told.
    abe.form(&format!("/admin/passkeys/{passkey}/confirm"), &[]).await;
    assert!(abe.admin_flash().await.contains("confirmed"), "confirmed");
    let approved = approve_with(&ana, &id, &sign(&mut key, &step_up(&ana, &id).await)).await;
    assert_eq!(approved.status, 200, "{}", approved.text);
    let (token, _) = token_of(&server, &id).await;
    assert_eq!(decode_jws(&token).claims["amr"], json!(["passkey"]));
    let notices = send(ana.bare(Method::GET, "/api/v1/me/notices")).await;
    let kinds: Vec<&str> =
        notices.body["data"].as_array().unwrap().iter().map(|n| n["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["passkey.confirmed", "passkey.registered"]);
    let confirmed_by: String = one("SELECT actor FROM audit_log WHERE action = 'passkey.confirmed'")
        .fetch_one(&server.db().await)
        .await
        .unwrap();
    assert_eq!(confirmed_by, format!("user:{}", abe.user_id()));
}

#[tokio::test]
async fn an_enrolment_code_takes_two_admins_and_the_one_shown_it_cannot_cut_the_cool_off() {
    let server = serve(AT_1000).await;
    let (ada, abe) = admins(&server).await;
    let ben = sign_in(&server, "ben").await;

    ada.form("/admin/enrolment-codes", &[("username", "ben")]).await;
    let change = pending_change_ids(&server).await.pop().expect("the code waits for a second admin");
    ada.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    assert!(ada.admin_flash().await.contains("another admin must confirm"), "not the proposer");
    let shown = abe.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    assert_eq!(shown.status, 200, "the code is shown once, to abe: {}", shown.text);
    assert_eq!(shown.header("cache-control"), Some("no-store"));
    let element = shown.text.find("id=\"one-time-secret\"").expect("the code");
    let start = element + shown.text[element..].find('>').unwrap() + 1;
    let code: String = shown.text[start..].chars().take_while(|c| *c != '<').collect();
    let stored: Vec<String> =
        one("SELECT code_sha256 FROM passkey_enrolments").fetch_all(&server.db().await).await.unwrap();
    assert_eq!(stored, [countersign::people::passkeys::registry::enrolment_sha256(&code)], "only the digest is kept");

    let key = SoftKey::new();
    let options = challenge(&ben).await;
    let made = register(&ben, &with_code(answer(&key, &options, PUBLIC_URL, ALL, "Laptop"), &code)).await;
    assert_eq!(made.status, 201, "{}", made.text);
    // Spent: the same code does not enrol a second passkey.
    let options = challenge(&ben).await;
    let again = register(&ben, &with_code(answer(&SoftKey::new(), &options, PUBLIC_URL, ALL, "Other"), &code)).await;
    field_refused(&again, "enrolment_code");

    let passkey = made.body["id"].as_str().unwrap();
    abe.form(&format!("/admin/passkeys/{passkey}/confirm"), &[]).await;
    assert!(abe.admin_flash().await.contains("shown the enrolment code"), "abe saw the code");
    ada.form(&format!("/admin/passkeys/{passkey}/confirm"), &[]).await;
    assert!(ada.admin_flash().await.contains("confirmed"), "ada did not");
}

#[tokio::test]
async fn adding_and_removing_a_passkey_is_told_to_its_holder_and_audited_with_its_fingerprint() {
    let server = serve("[passkeys]\ncool_off_secs = 0\n").await;
    let ana = sign_in(&server, "ana").await;
    let (mut key, made) = enrol(&server, &ana).await;
    let passkey = made.body["id"].as_str().unwrap().to_owned();
    let print = countersign::people::passkeys::fingerprint(&key.sec1());
    assert_eq!(made.body["fingerprint"], print);

    let registered: String = one("SELECT data FROM audit_log WHERE action = 'passkey.registered'")
        .fetch_one(&server.db().await)
        .await
        .unwrap();
    let registered: Value = serde_json::from_str(&registered).unwrap();
    assert_eq!(registered["fingerprint"], print);
    assert_eq!(registered["rp_id"], "console.example");
    assert_eq!(registered["origin"], PUBLIC_URL);
    assert_eq!(registered["holder"], ana.user_id());

    let notices = send(ana.bare(Method::GET, "/api/v1/me/notices")).await;
    assert_eq!(notices.body["unread"], 1, "{}", notices.text);
    assert_eq!(notices.body["data"][0]["kind"], "passkey.registered");
    let short = &print[..("sha256:".len() + 16)];
    assert!(notices.body["data"][0]["message"].as_str().unwrap().contains(short), "{}", notices.text);
    // The top bar flags it on every page until read.
    let page = send(ana.bare(Method::GET, "/account")).await;
    assert!(page.text.contains("id=\"notice-count\""), "flagged");
    assert_eq!(send(ana.authed(Method::POST, "/api/v1/me/notices/read")).await.status, 204);
    assert!(!send(ana.bare(Method::GET, "/account")).await.text.contains("id=\"notice-count\""), "read");

    assert_eq!(remove_with(&ana, &mut key, &passkey).await.status, 204);
    let removed: String =
        one("SELECT data FROM audit_log WHERE action = 'passkey.removed'").fetch_one(&server.db().await).await.unwrap();
    assert!(removed.contains(&print), "{removed}");
    let notices = send(ana.bare(Method::GET, "/api/v1/me/notices")).await;
    assert_eq!(
        (notices.body["unread"].as_i64(), notices.body["data"][0]["kind"].as_str()),
        (Some(1), Some("passkey.removed"))
    );
}

#[tokio::test]
async fn the_last_passkey_of_a_role_that_needs_one_is_removed_only_by_two_admins() {
    let server = serve("[passkeys]\nrequired_roles = [\"approver\"]\ncool_off_secs = 0\n").await;
    let (ada, abe) = admins(&server).await;
    let ana = sign_in(&server, "ana").await;
    let (mut key, made) = enrol(&server, &ana).await;
    let passkey = made.body["id"].as_str().unwrap().to_owned();
    let refused = remove_with(&ana, &mut key, &passkey).await;
    refused.assert_error(403, "forbidden");
    assert!(refused.text.contains("last"), "{}", refused.text);
    assert_eq!(passkeys_of(&server, "ana").await, 1);

    ada.form(&format!("/admin/passkeys/{passkey}/remove"), &[]).await;
    assert_eq!(passkeys_of(&server, "ana").await, 1, "waits for a second admin");
    let change = pending_change_ids(&server).await.pop().expect("pending");
    let page = send(abe.bare(Method::GET, "/admin")).await;
    assert!(page.text.contains("last passkey"), "the change says so");
    abe.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    assert_eq!(passkeys_of(&server, "ana").await, 0);
    let actor: String = one("SELECT actor FROM audit_log WHERE action = 'passkey.removed'")
        .fetch_one(&server.db().await)
        .await
        .unwrap();
    assert_eq!(actor, format!("user:{}", abe.user_id()));
    let notices = send(ana.bare(Method::GET, "/api/v1/me/notices")).await;
    assert_eq!(notices.body["data"][0]["kind"], "passkey.removed", "{}", notices.text);
}

// ---------------------------------------------------------------------------
// 2. Confirming an old change never restores authority revoked since
// ---------------------------------------------------------------------------

async fn usd_limit_of(server: &TestServer, username: &str) -> Option<i64> {
    one::<i64>(
        "SELECT l.limit_minor FROM approval_limits l JOIN users u ON u.id = l.user_id
         WHERE u.username = ? AND l.currency = 'USD'",
    )
    .bind(username)
    .fetch_optional(&server.db().await)
    .await
    .unwrap()
}

async fn change_status(server: &TestServer, id: &str) -> String {
    one("SELECT status FROM registry_changes WHERE id = ?").bind(id).fetch_one(&server.db().await).await.unwrap()
}

#[tokio::test]
async fn confirming_an_old_change_never_restores_authority_revoked_since() {
    let server = serve("").await;
    let (ada, abe) = admins(&server).await;
    assert_eq!(usd_limit_of(&server, "ben").await, Some(50_000_000));

    // Ada proposes a password reset for ben (the form carries his whole state).
    let reset = [
        ("username", "ben"),
        ("password", "a new password for ben"),
        ("role_approver", "on"),
        ("limit_USD", "500,000.00"),
    ];
    ada.form("/admin/users", &reset).await;
    let change = pending_change_ids(&server).await.pop().expect("the reset waits");
    // Abe removes all of ben's limits: applied at once, and the reset,
    // proposed against the old limits, is withdrawn.
    abe.form("/admin/users", &[("username", "ben"), ("role_approver", "on")]).await;
    assert_eq!(usd_limit_of(&server, "ben").await, None);
    assert_eq!(change_status(&server, &change).await, "superseded");
    abe.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    assert!(abe.admin_flash().await.contains("not pending"), "withdrawn");
    assert_eq!(usd_limit_of(&server, "ben").await, None, "the limits stay gone");

    // Authority reduced outside the console (the operator's CLI) leaves the
    // change pending, but confirming it compares with the registry now.
    ada.form("/admin/users", &reset).await;
    let change = pending_change_ids(&server).await.pop().expect("pending");
    let args = ["user", "add", "--tenant", "acme", "--username", "ben", "--role", "approver", "--limit", "USD=100"];
    let env = [("COUNTERSIGN_USER_PASSWORD", PASSWORD)];
    let (code, _, stderr) = cli_env(&server.config, &server.data_dir(), &args, None, &env).await;
    assert_eq!(code, 0, "{stderr}");
    let page = send(abe.bare(Method::GET, "/admin")).await;
    assert!(page.text.contains("Stale"), "the page shows it would now do something else");
    abe.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    let flash = abe.admin_flash().await;
    assert!(flash.contains("registry changed") && flash.contains("Raise ben"), "{flash}");
    assert_eq!(usd_limit_of(&server, "ben").await, Some(100), "nothing it did not say was granted");
    assert_eq!(change_status(&server, &change).await, "superseded");
}

// ---------------------------------------------------------------------------
// 3. Whoever is given an agent's key cannot approve its payments
// ---------------------------------------------------------------------------

/// The key on a one-time key page.
fn shown_key(page: &Reply) -> String {
    let start = page.text.find("cs_live_").expect("the key is shown");
    page.text[start..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
}

#[tokio::test]
async fn whoever_is_given_an_agent_key_cannot_approve_its_payments() {
    let (server, _rail) = with_rail("").await;
    let ada = add_user_from(&server, "ada", &["admin", "approver"], 500_000, &server.base).await;
    let abe = add_user_from(&server, "abe", &["admin"], 0, &server.base).await;
    let page = ada
        .form(
            "/admin/agents",
            &[("id", "ada-bot"), ("acts_for", "vic"), ("source_accounts", ACME_SOURCE), ("purposes", "vendor")],
        )
        .await;
    let key = shown_key(&page);
    let admin = send(abe.bare(Method::GET, "/admin")).await;
    assert!(admin.text.contains("Its key was shown only to ada"), "the confirming admin is told who holds the key");
    let change = pending_change_ids(&server).await.pop().expect("pending");
    abe.form(&format!("/admin/changes/{change}/confirm"), &[]).await;

    let proposal =
        server.propose_as(&key, &with(transfer(), json!({"amount_minor": 90_000, "run_id": "ada-run"}))).await;
    assert_eq!(proposal.status, 201, "{}", proposal.text);
    let id = proposal.body["id"].as_str().unwrap();
    let refused = ada.approve(id).await;
    refused.assert_error(403, "policy_denied");
    assert!(refused.text.contains("segregation_of_duties") && refused.text.contains("key"), "{}", refused.text);
    // Another approver may; the agent commits.
    let ben = Console::sign_in(&server, "ben").await;
    let approved = ben.approve(id).await;
    assert_eq!(approved.body["status"], "approved", "{}", approved.text);
    let token = server.get_proposal(&key, id).await.body["approval_token"].as_str().unwrap().to_owned();
    let committed = server.commit_as(&key, id, &token).await;
    assert_eq!(committed.status, 200, "{}", committed.text);

    // Replacing an agent's key names its new holder the same way.
    let page = ada
        .form(
            "/admin/agents",
            &[
                ("id", "payout-bot"),
                ("acts_for", "maya"),
                ("source_accounts", ACME_SOURCE),
                ("purposes", "vendor refund"),
            ],
        )
        .await;
    let new_key = shown_key(&page);
    let change = pending_change_ids(&server).await.pop().expect("pending");
    abe.form(&format!("/admin/changes/{change}/confirm"), &[]).await;
    let p = server.propose_as(&new_key, &with(transfer(), json!({"run_id": "rekeyed"}))).await;
    assert_eq!(p.status, 201, "{}", p.text);
    ada.approve(p.body["id"].as_str().unwrap()).await.assert_error(403, "policy_denied");
}

// ---------------------------------------------------------------------------
// 4. `audit verify-approvals` trusts the audit trail, not each row
// ---------------------------------------------------------------------------

#[tokio::test]
async fn verify_approvals_checks_each_assertion_against_the_registration_in_the_audit_trail() {
    let server = serve("[passkeys]\ncool_off_secs = 0\n[policy]\nstep_up_at_minor = { USD = 20_000 }\n").await;
    let ana = sign_in(&server, "ana").await;
    let (mut key, _) = enrol(&server, &ana).await;
    let id = pending(&server).await;
    assert_eq!(approve_with(&ana, &id, &sign(&mut key, &step_up(&ana, &id).await)).await.status, 200);
    let (code, stdout, stderr) = server.cli(&["audit", "verify-approvals"]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("1 verified, 0 failed"), "{stdout}");
    let db = server.db().await;

    // A forged row: a fresh key of its own and an unknown passkey id, with
    // an assertion that verifies under that key.
    let mut forger = SoftKey::new();
    let row = query("SELECT * FROM approval_assertions").fetch_one(&db).await.unwrap();
    let (nonce, hash): (String, String) = (row.get("nonce"), row.get("request_hash"));
    let challenge = countersign::people::passkeys::step_up_challenge(
        &hash,
        &id,
        &ana.user_id(),
        &URL_SAFE_NO_PAD.decode(&nonce).unwrap(),
    );
    let a = forger.assert_with(&challenge, "webauthn.get", PUBLIC_URL, "console.example", FLAG_UP | FLAG_UV);
    query(
        "UPDATE approval_assertions SET passkey_id = 'pk_forged', public_key = ?, credential_id = ?,
             authenticator_data = ?, client_data_json = ?, signature = ?",
    )
    .bind(URL_SAFE_NO_PAD.encode(forger.sec1()))
    .bind(URL_SAFE_NO_PAD.encode(&a.credential_id))
    .bind(URL_SAFE_NO_PAD.encode(&a.authenticator_data))
    .bind(URL_SAFE_NO_PAD.encode(&a.client_data_json))
    .bind(URL_SAFE_NO_PAD.encode(&a.signature))
    .execute(&db)
    .await
    .unwrap();
    let (code, stdout, stderr) = server.cli(&["audit", "verify-approvals"]).await;
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stderr.contains("never registered"), "{stderr}");

    // The same forged key under the real passkey id: not the registered key.
    let real: String = one("SELECT id FROM passkeys").fetch_one(&db).await.unwrap();
    query("UPDATE approval_assertions SET passkey_id = ?").bind(&real).execute(&db).await.unwrap();
    let (code, _, stderr) = server.cli(&["audit", "verify-approvals"]).await;
    assert_eq!(code, 1);
    assert!(stderr.contains("is not the one registered"), "{stderr}");

    // Every kept row deleted: the passkey approval has nothing to show.
    query("DELETE FROM approval_assertions").execute(&db).await.unwrap();
    let (code, stdout, stderr) = server.cli(&["audit", "verify-approvals"]).await;
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stderr.contains("approved with a passkey, but no assertion is kept"), "{stderr}");
    assert!(stdout.contains("0 verified, 1 failed"), "{stdout}");
}

// ---------------------------------------------------------------------------
// 5. Nobody can lock a chosen approver out
// ---------------------------------------------------------------------------

const BEHIND_PROXY: &str = "[console]\ntrusted_proxies = [\"127.0.0.1\"]\n";

/// `POST /api/v1/session` for `username` from `address` (behind the listed
/// proxy), with the browser's device cookie if any; the reply.
async fn sign_in_from(
    server: &TestServer,
    username: &str,
    password: &str,
    address: &str,
    device: Option<&str>,
) -> Reply {
    let mut rb = http_client()
        .post(server.url("/api/v1/session"))
        .header("origin", PUBLIC_URL)
        .header("x-forwarded-for", address)
        .json(&json!({"username": username, "password": password}));
    if let Some(device) = device {
        rb = rb.header(COOKIE, format!("countersign_device={device}"));
    }
    send(rb).await
}

fn device_cookie(reply: &Reply) -> Option<String> {
    reply
        .headers
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|c| c.strip_prefix("countersign_device="))
        .map(|rest| rest.split(';').next().unwrap_or_default().to_owned())
}

#[tokio::test]
async fn twenty_wrong_passwords_from_anywhere_do_not_lock_the_approver_out() {
    let server = serve(BEHIND_PROXY).await;
    // Maya's own browser, from a sign-in before the attack.
    let first = sign_in_from(&server, "maya", PASSWORD, "198.51.100.1", None).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let device = device_cookie(&first).expect("a browser that signed in is remembered");
    let set = first
        .headers
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|c| c.starts_with("countersign_device="))
        .unwrap();
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict"), "{set}");

    // The attack: twenty wrong passwords from twenty addresses in a moment.
    for i in 0..20 {
        let r = sign_in_from(&server, "maya", "wrong guess", &format!("203.0.113.{i}"), None).await;
        assert_eq!(r.status, 401, "{}", r.text);
    }
    // Her own browser gets in at once; so does a new one (after its turn).
    let own = sign_in_from(&server, "maya", PASSWORD, "198.51.100.1", Some(&device)).await;
    assert_eq!(own.status, 200, "{}", own.text);
    assert_eq!(device_cookie(&own), None, "already known");
    let elsewhere = sign_in_from(&server, "maya", PASSWORD, "192.0.2.77", None).await;
    assert_eq!(elsewhere.status, 200, "not refused: {}", elsewhere.text);

    // The guessing goes on, slowed: a wrong password now takes a second.
    let started = std::time::Instant::now();
    assert_eq!(sign_in_from(&server, "maya", "wrong guess", "203.0.113.99", None).await.status, 401);
    assert!(started.elapsed() >= std::time::Duration::from_millis(900), "slowed: {:?}", started.elapsed());
    // One address still gets its few tries, then is refused.
    for _ in 0..4 {
        sign_in_from(&server, "maya", "wrong guess", "203.0.113.99", None).await;
    }
    assert_eq!(sign_in_from(&server, "maya", PASSWORD, "203.0.113.99", None).await.status, 429);
    // A device cookie of someone else is no way around it.
    assert_eq!(sign_in_from(&server, "ana", "wrong guess", "203.0.113.99", Some(&device)).await.status, 401);
}

// ---------------------------------------------------------------------------
// 6. Oversized passkey data is refused before it is decoded
// ---------------------------------------------------------------------------

#[tokio::test]
async fn an_oversized_registration_is_refused_before_it_is_decoded() {
    let server = serve("").await;
    let ana = sign_in(&server, "ana").await;
    let code = enrolment_code(&server, "ana").await;
    // The report's 9,000-entry CBOR map (36 KB, inside the 64 KiB body limit).
    let mut huge = vec![0xb9, 0x23, 0x28];
    for i in 0..9000u16 {
        huge.push(0x19);
        huge.extend(i.to_be_bytes());
        huge.push(0x00);
    }
    let options = challenge(&ana).await;
    let mut body = with_code(answer(&SoftKey::new(), &options, PUBLIC_URL, ALL, "Key"), &code);
    body["attestation_object"] = json!(URL_SAFE_NO_PAD.encode(&huge));
    let r = register(&ana, &body).await;
    field_refused(&r, "attestation_object");
    assert!(r.text.contains("too_large"), "{}", r.text);
    // Small in bytes, but a map of too many entries: refused as malformed.
    let mut wide = vec![0xb8, 40];
    for i in 0..40u8 {
        wide.extend([0x18, 24 + i, 0x00]);
    }
    let options = challenge(&ana).await;
    let mut body = with_code(answer(&SoftKey::new(), &options, PUBLIC_URL, ALL, "Key"), &code);
    body["attestation_object"] = json!(URL_SAFE_NO_PAD.encode(&wide));
    field_refused(&register(&ana, &body).await, "credential");
    assert_eq!(passkeys_of(&server, "ana").await, 0);
}

// ---------------------------------------------------------------------------
// 7. Smaller holes: the stdio MCP's URL, a reversal's evidence
// ---------------------------------------------------------------------------

#[tokio::test]
async fn the_stdio_mcp_server_never_sends_the_agent_key_in_clear_off_this_machine() {
    let server = serve("").await;
    let env = [("COUNTERSIGN_AGENT_KEY", ACME_BOT_KEY)];
    for url in ["http://pay.example.com", "http://10.0.0.5:8080", "ftp://localhost"] {
        let (code, _, stderr) =
            cli_env(&server.config, &server.data_dir(), &["mcp", "--url", url], Some(""), &env).await;
        assert_eq!(code, 2, "{url}: {stderr}");
        assert!(stderr.contains("https"), "{url}: {stderr}");
    }
    // Loopback over http is allowed (the key goes nowhere else).
    let (_, _, stderr) =
        cli_env(&server.config, &server.data_dir(), &["mcp", "--url", &server.base], Some(""), &env).await;
    assert!(!stderr.contains("in clear"), "{stderr}");
}

/// A reversal of a succeeded 5,000 transfer whose rail call answered 500,
/// past the resubmit window: `needs_review`. (reversal proposal, its
/// operation, the transfer's rail id)
async fn reversal_needing_review(server: &TestServer, rail: &RailSim) -> (String, Value, String) {
    let transfer = crate::commit_recovery::succeeded_transfer(server).await;
    let rail_id = server.get_proposal(ACME_BOT_KEY, &transfer).await.body["operation"]["rail_reference"]
        .as_str()
        .unwrap()
        .to_owned();
    rail.fail_reversals(1).await;
    let (reversal, r) = crate::commit_recovery::reverse(server, &transfer).await;
    assert_eq!(r.body["status"], "unknown", "{}", r.text);
    let p = server.wait_status(&reversal, "needs_review", 20).await;
    (reversal, p["operation"].clone(), rail_id)
}

#[tokio::test]
async fn a_reversal_is_marked_succeeded_only_on_its_own_record() {
    let (server, rail) = with_rail("[rail]\nresubmit_window_secs = 0\n").await;
    let ada = add_admin(&server, "acme", "ada").await;
    let resolve = |op: &str, reference: &str| {
        let body = json!({"outcome": "succeeded", "rail_reference": reference});
        send(ada.authed(Method::POST, &format!("/api/v1/operations/{op}/resolution")).json(&body))
    };

    // The transfer reversed in full by someone else (the rail's support):
    // neither that reversal nor the transfer itself is this reversal's evidence.
    let (_, op, transfer) = reversal_needing_review(&server, &rail).await;
    let op_id = op["id"].as_str().unwrap();
    let other = rail.push_reversal(&transfer, "support-manual-1", 5_000, false).await;
    let records = send(ada.bare(Method::GET, &format!("/api/v1/operations/{op_id}/rail-records"))).await;
    assert_eq!(records.body["data"][0]["rail_reference"], other["id"], "{}", records.text);
    assert_eq!(records.body["data"][0]["settles_operation"], false, "{}", records.text);
    field_refused(&resolve(op_id, other["id"].as_str().unwrap()).await, "rail_reference");
    field_refused(&resolve(op_id, &transfer).await, "rail_reference");

    // Its own record (made under its key, answer lost): accepted, and kept.
    let (reversal, op, transfer) = reversal_needing_review(&server, &rail).await;
    let (op_id, key) = (op["id"].as_str().unwrap(), op["idempotency_key"].as_str().unwrap());
    let own = rail.push_reversal(&transfer, key, 5_000, true).await;
    let r = resolve(op_id, own["id"].as_str().unwrap()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["operation"]["rail_reference"], own["id"]);
    assert_eq!(status_of(&server, &reversal).await, "succeeded");
}

// ---------------------------------------------------------------------------
// 9. Scripts are judged by their credentials; the API reference is served
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_script_without_browser_origin_headers_is_judged_by_its_credentials() {
    let server = serve("").await;
    let client = http_client();
    // Sign-in: JSON, no Origin, Referer or Sec-Fetch-Site.
    let signed_in =
        send(client.post(server.url("/api/v1/session")).json(&json!({"username": "ana", "password": PASSWORD}))).await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.text);
    let cookie = session_set_cookie(&signed_in.headers).expect("session cookie").value;
    let csrf = signed_in.body["csrf_token"].as_str().unwrap().to_owned();
    let id = pending(&server).await;
    let approve = |csrf: Option<&str>, origin: Option<&str>| {
        let mut rb = client
            .post(server.url(&format!("/api/v1/proposals/{id}/approvals")))
            .header(COOKIE, format!("{SESSION_COOKIE}={cookie}"))
            .json(&json!({"decision": "approve"}));
        if let Some(csrf) = csrf {
            rb = rb.header("x-csrf-token", csrf);
        }
        if let Some(origin) = origin {
            rb = rb.header("origin", origin);
        }
        send(rb)
    };
    // No CSRF token: still refused; a foreign Origin: still refused.
    approve(None, None).await.assert_error(403, "forbidden");
    approve(Some(&csrf), Some("https://evil.example")).await.assert_error(403, "forbidden");
    // The script with its session and token: judged by them, and allowed.
    let ok = approve(Some(&csrf), None).await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    // A form post (what a foreign page can send) without Origin stays refused.
    let form = send(
        client
            .post(server.url("/api/v1/session"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("username=ana&password=x"),
    )
    .await;
    form.assert_error(403, "forbidden");
}

#[tokio::test]
async fn the_openapi_document_is_served_under_the_api_prefix_too() {
    let server = serve("").await;
    let root = send(http_client().get(server.url("/openapi.json"))).await;
    let under = send(http_client().get(server.url("/api/v1/openapi.json"))).await;
    assert_eq!((root.status, under.status), (200, 200), "{}", under.text);
    assert_eq!(root.body, under.body);
    assert!(under.body["paths"]["/api/v1/openapi.json"].is_object());
}

#[test]
fn the_readme_links_only_inside_the_repository_and_the_api_reference_exists() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    for (i, line) in readme.lines().enumerate() {
        assert!(!line.contains("](../"), "README.md:{}: a link outside the repository: {line}", i + 1);
    }
    assert!(readme.contains("docs/API.md"), "the README points at the API reference");
    let api = std::fs::read_to_string(root.join("docs/API.md")).expect("docs/API.md");
    for must in
        ["/api/v1/proposals", "approval_token_invalid", "request_hash", "approval_expired", "azp", "Idempotency-Key"]
    {
        assert!(api.contains(must), "docs/API.md names {must}");
    }
}
