//! A user's passkeys over the console API: register (challenge, then the
//! browser's answer), list, remove; each way a registration can be refused.
//! A software authenticator (`countersign::passkeys::soft`) plays the browser.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use countersign::passkeys::soft::SoftKey;
use countersign::passkeys::webauthn::{FLAG_AT, FLAG_UP, FLAG_UV};
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

/// The browser's answer to `options`, made by `key` with these flags and
/// this origin.
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

pub async fn register(console: &Console, body: &Value) -> Reply {
    send(console.authed(Method::POST, "/api/v1/me/passkeys").json(body)).await
}

pub const ALL: u8 = FLAG_UP | FLAG_UV | FLAG_AT;

#[tokio::test]
async fn a_passkey_is_registered_listed_and_removed_audited() {
    let (server, ana) = start().await;
    let options = challenge(&ana).await;
    assert_eq!(options["rp_id"], "console.example");
    assert_eq!(options["algorithms"], json!([-7]));
    assert_eq!(options["user_verification"], "required");

    let key = SoftKey::new();
    let made = register(&ana, &answer(&key, &options, PUBLIC_URL, ALL, "Laptop")).await;
    assert_eq!(made.status, 201, "{}", made.text);
    let id = made.body["id"].as_str().unwrap().to_owned();
    assert_eq!(made.body["name"], "Laptop");
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
    send(ben.authed(Method::DELETE, &format!("/api/v1/me/passkeys/{id}"))).await.assert_error(404, "not_found");

    let removed = send(ana.authed(Method::DELETE, &format!("/api/v1/me/passkeys/{id}"))).await;
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
    let key_text = URL_SAFE_NO_PAD.encode(&key.credential_id);
    assert!(!audited.contains(&key_text), "no key material in the audit: {audited}");
}

#[tokio::test]
async fn each_flaw_in_a_registration_is_refused_and_the_challenge_is_spent() {
    let (server, ana) = start().await;
    let key = SoftKey::new();
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
    // The same passkey twice.
    let options = challenge(&ana).await;
    assert_eq!(register(&ana, &answer(&key, &options, PUBLIC_URL, ALL, "Key")).await.status, 201);
    let options = challenge(&ana).await;
    refused(
        register(&ana, &answer(&key, &options, PUBLIC_URL, ALL, "Again")).await,
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
    let body = answer(&SoftKey::new(), &options, PUBLIC_URL, ALL, "Key");
    send(ana.with_origin(Method::POST, "/api/v1/me/passkeys").json(&body)).await.assert_error(403, "forbidden");
    let anonymous = send(http_client().get(format!("{}/api/v1/me/passkeys", server.base))).await;
    anonymous.assert_error(401, "unauthenticated");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM passkeys").await, 0);
}
