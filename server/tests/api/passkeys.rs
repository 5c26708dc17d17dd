//! A user's passkeys over the console API: register (challenge, then the
//! browser's answer with what allows it), list, remove; each way a
//! registration can be refused. A software authenticator
//! (`countersign::people::passkeys::soft`) plays the browser. What a stolen session
//! cannot do with passkeys is in `consent.rs`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use countersign::people::passkeys::soft::SoftKey;
use countersign::people::passkeys::webauthn::{FLAG_AT, FLAG_UP, FLAG_UV};
use reqwest::Method;
use serde_json::{json, Value};

use crate::console_client::{http_client, Console};
use crate::helpers::*;

pub const PUBLIC_URL: &str = "https://console.example";

async fn start() -> (TestServer, Console) {
    let server = TestServer::start_with(&format!("public_url = \"{PUBLIC_URL}\"\n")).await;
    let ana = Console::sign_in_from(&server, "ana", PUBLIC_URL).await;
    (server, ana)
}

pub async fn challenge(console: &Console) -> Value {
    let r = send(console.authed(Method::POST, "/api/v1/me/passkeys/challenges")).await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.body
}

/// A one-time enrolment code for `username` of acme, as `countersign user
/// enrolment-code` issues one (written straight into the database: only
/// its digest is kept).
pub async fn enrolment_code(server: &TestServer, username: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static SERIAL: AtomicU32 = AtomicU32::new(0);
    let code = format!("TEST-CODE-{username}-{}", SERIAL.fetch_add(1, Ordering::Relaxed));
    let db = server.db().await;
    let user: String = one("SELECT id FROM users WHERE username = ?").bind(username).fetch_one(&db).await.unwrap();
    let tenant: String = one("SELECT tenant_id FROM users WHERE id = ?").bind(&user).fetch_one(&db).await.unwrap();
    query(
        "INSERT INTO passkey_enrolments (id, tenant_id, user_id, code_sha256, issued_by, created_at, expires_at)
         VALUES (?, ?, ?, ?, 'operator', '2020-01-01T00:00:00Z', '2999-01-01T00:00:00Z')",
    )
    .bind(format!("pke_{code}"))
    .bind(tenant)
    .bind(user)
    .bind(countersign::people::passkeys::registry::enrolment_sha256(&code))
    .execute(&db)
    .await
    .unwrap();
    code
}

/// The browser's answer to `options`, made by `key` with these flags and
/// this origin (and nothing yet that allows it: see [`with_code`]).
pub fn answer(key: &SoftKey, options: &Value, origin: &str, flags: u8, name: &str) -> Value {
    let challenge = URL_SAFE_NO_PAD.decode(options["challenge"].as_str().unwrap()).unwrap();
    let rp_id = options["rp_id"].as_str().unwrap();
    let (client, attestation) = key.register_with(&challenge, origin, rp_id, flags, key.cose());
    json!({
        "challenge_id": options["challenge_id"],
        "name": name,
        "client_data_json": URL_SAFE_NO_PAD.encode(client),
        "attestation_object": URL_SAFE_NO_PAD.encode(attestation),
    })
}

/// `body` allowed by an enrolment `code`.
pub fn with_code(mut body: Value, code: &str) -> Value {
    body["enrolment_code"] = json!(code);
    body
}

pub async fn register(console: &Console, body: &Value) -> Reply {
    send(console.authed(Method::POST, "/api/v1/me/passkeys").json(body)).await
}

/// `key`'s assertion over `options` (a step-up's or an authorization's), as
/// the browser sends it back.
pub fn sign_options(key: &mut SoftKey, options: &Value) -> Value {
    let challenge = URL_SAFE_NO_PAD.decode(options["challenge"].as_str().unwrap()).unwrap();
    let a = key.assert_with(&challenge, "webauthn.get", PUBLIC_URL, "console.example", FLAG_UP | FLAG_UV);
    json!({
        "challenge_id": options["challenge_id"],
        "credential_id": URL_SAFE_NO_PAD.encode(&a.credential_id),
        "authenticator_data": URL_SAFE_NO_PAD.encode(&a.authenticator_data),
        "client_data_json": URL_SAFE_NO_PAD.encode(&a.client_data_json),
        "signature": URL_SAFE_NO_PAD.encode(&a.signature),
    })
}

/// Removes passkey `id` of `console`'s user with `key`'s assertion over the
/// removal challenge.
pub async fn remove_with(console: &Console, key: &mut SoftKey, id: &str) -> Reply {
    let options = send(console.authed(Method::POST, &format!("/api/v1/me/passkeys/{id}/removal-challenges"))).await;
    assert_eq!(options.status, 201, "{}", options.text);
    let body = json!({"authorization": sign_options(key, &options.body)});
    send(console.authed(Method::DELETE, &format!("/api/v1/me/passkeys/{id}")).json(&body)).await
}

pub const ALL: u8 = FLAG_UP | FLAG_UV | FLAG_AT;

#[tokio::test]
async fn a_passkey_is_registered_listed_and_removed_audited() {
    let (server, ana) = start().await;
    let options = challenge(&ana).await;
    assert_eq!(options["rp_id"], "console.example");
    assert_eq!(options["algorithms"], json!([-7]));
    assert_eq!(options["user_verification"], "required");

    assert_eq!(options["authorization"], Value::Null, "nothing to sign with yet: an enrolment code allows the first");
    let mut key = SoftKey::new();
    let code = enrolment_code(&server, "ana").await;
    let made = register(&ana, &with_code(answer(&key, &options, PUBLIC_URL, ALL, "Laptop"), &code)).await;
    assert_eq!(made.status, 201, "{}", made.text);
    let id = made.body["id"].as_str().unwrap().to_owned();
    assert_eq!(made.body["name"], "Laptop");
    assert!(made.body["usable_from"].is_string(), "a new passkey cools off: {}", made.text);
    assert!(made.body.get("public_key").is_none() && made.body.get("credential_id").is_none(), "{}", made.text);

    let listed = send(ana.bare(Method::GET, "/api/v1/me/passkeys")).await;
    assert_eq!(listed.body["data"].as_array().unwrap().len(), 1, "{}", listed.text);
    // The next challenge excludes the registered credential.
    let next = challenge(&ana).await;
    assert_eq!(next["exclude_credentials"], json!([URL_SAFE_NO_PAD.encode(&key.credential_id)]));
    // Another user neither sees nor removes it.
    let ben = Console::sign_in_from(&server, "ben", PUBLIC_URL).await;
    let theirs = send(ben.bare(Method::GET, "/api/v1/me/passkeys")).await;
    assert_eq!(theirs.body["data"], json!([]), "{}", theirs.text);
    send(ben.authed(Method::POST, &format!("/api/v1/me/passkeys/{id}/removal-challenges")))
        .await
        .assert_error(404, "not_found");

    let removed = remove_with(&ana, &mut key, &id).await;
    assert_eq!(removed.status, 204, "{}", removed.text);
    let listed = send(ana.bare(Method::GET, "/api/v1/me/passkeys")).await;
    assert_eq!(listed.body["data"], json!([]));

    let audited: Vec<String> =
        one("SELECT action || ':' || data FROM audit_log WHERE action LIKE 'passkey.%' ORDER BY seq")
            .fetch_all(&server.db().await)
            .await
            .unwrap();
    let audited = audited.join(" | ");
    assert!(audited.contains("passkey.registered") && audited.contains("passkey.removed"), "{audited}");
    assert!(audited.contains(&id) && audited.contains("Laptop"), "{audited}");
    let print = countersign::people::passkeys::fingerprint(&key.sec1());
    assert!(audited.contains(&print), "the key's fingerprint is audited: {audited}");
    let key_text = URL_SAFE_NO_PAD.encode(&key.credential_id);
    assert!(!audited.contains(&key_text), "no key material in the audit: {audited}");
}

#[tokio::test]
async fn each_flaw_in_a_registration_is_refused_and_the_challenge_is_spent() {
    let (server, ana) = start().await;
    let key = SoftKey::new();
    // A refused registration does not spend the code that allows it.
    let code = enrolment_code(&server, "ana").await;
    let answer = |key: &SoftKey, options: &Value, origin: &str, flags: u8, name: &str| {
        with_code(answer(key, options, origin, flags, name), &code)
    };
    let refused = |reply: Reply, field: &str, code: &str| {
        reply.assert_error(422, "validation_failed");
        assert!(
            reply.body["error"]["details"].as_array().unwrap().iter().any(|d| d["field"] == field && d["code"] == code),
            "{field}/{code}: {}",
            reply.text
        );
    };
    for (origin, flags, code) in [
        ("https://console.example.evil.test", ALL, "wrong_origin"),
        (PUBLIC_URL, FLAG_UP | FLAG_AT, "user_not_verified"),
        (PUBLIC_URL, FLAG_UV | FLAG_AT, "user_not_present"),
    ] {
        let options = challenge(&ana).await;
        let body = answer(&key, &options, origin, flags, "Key");
        refused(register(&ana, &body).await, "credential", code);
        // The refused answer spent its challenge: even a good one is too late.
        let good = answer(&key, &options, PUBLIC_URL, ALL, "Key");
        refused(register(&ana, &good).await, "challenge_id", "invalid_value");
    }
    // An answer to another challenge than the one it names.
    let (first, second) = (challenge(&ana).await, challenge(&ana).await);
    let mut crossed = answer(&key, &second, PUBLIC_URL, ALL, "Key");
    crossed["challenge_id"] = first["challenge_id"].clone();
    refused(register(&ana, &crossed).await, "credential", "wrong_challenge");
    // Another user's challenge cannot be answered by this one.
    let ben = Console::sign_in_from(&server, "ben", PUBLIC_URL).await;
    let bens = challenge(&ben).await;
    refused(register(&ana, &answer(&key, &bens, PUBLIC_URL, ALL, "Key")).await, "challenge_id", "invalid_value");
    // A name that could read as something else.
    let options = challenge(&ana).await;
    refused(register(&ana, &answer(&key, &options, PUBLIC_URL, ALL, "Lap\u{202e}top")).await, "name", "invalid_value");
    // The same passkey twice (with a code of its own: the first is spent).
    let options = challenge(&ana).await;
    assert_eq!(register(&ana, &answer(&key, &options, PUBLIC_URL, ALL, "Key")).await.status, 201);
    let options = challenge(&ana).await;
    let again = crate::passkeys::answer(&key, &options, PUBLIC_URL, ALL, "Again");
    refused(
        register(&ana, &with_code(again, &enrolment_code(&server, "ana").await)).await,
        "credential",
        "already_registered",
    );
    // Nothing but the one good registration was stored.
    assert_eq!(server.scalar("SELECT COUNT(*) FROM passkeys").await, 1);
}

#[tokio::test]
async fn registration_needs_the_session_and_the_csrf_token() {
    let (server, ana) = start().await;
    let no_csrf = send(ana.with_origin(Method::POST, "/api/v1/me/passkeys/challenges")).await;
    no_csrf.assert_error(403, "forbidden");
    let options = challenge(&ana).await;
    let body =
        with_code(answer(&SoftKey::new(), &options, PUBLIC_URL, ALL, "Key"), &enrolment_code(&server, "ana").await);
    send(ana.with_origin(Method::POST, "/api/v1/me/passkeys").json(&body)).await.assert_error(403, "forbidden");
    let anonymous = send(http_client().get(format!("{}/api/v1/me/passkeys", server.base))).await;
    anonymous.assert_error(401, "unauthenticated");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM passkeys").await, 0);
}
