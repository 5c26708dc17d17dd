//! Signing in with a passkey: a single-use challenge,
//! the assertion of a registered passkey of an active user, and a session
//! whose approvals are not passkey approvals. Each way it can fail gets the
//! same 401: a replay, a bad signature, an unknown key, another user's
//! handle, a key still cooling off, a deactivated user; another site's
//! page is refused before that.

use countersign::people::passkeys::soft::SoftKey;
use reqwest::header::ORIGIN;
use serde_json::{json, Value};

use crate::console_client::*;
use crate::helpers::*;
use crate::passkeys::{sign_options, PUBLIC_URL};
use crate::passkeys_step_up::{serve, sign_in, with_passkey};

/// `POST path` with `body` as the sign-in page's script sends it (our origin, no session).
async fn post(server: &TestServer, path: &str, body: Option<&Value>, origin: &str) -> Reply {
    let request = http_client().post(server.url(path)).header(ORIGIN, origin);
    send(match body {
        Some(body) => request.json(body),
        None => request.header("content-type", "application/json"),
    })
    .await
}

async fn options(server: &TestServer) -> Value {
    let r = post(server, "/api/v1/session/passkey-challenges", None, PUBLIC_URL).await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.body
}

/// What the browser sends back: `key`'s assertion over `options`, with the
/// user handle of `user_id`.
fn answer(key: &mut SoftKey, options: &Value, user_id: &str) -> Value {
    use base64::Engine;
    let mut body = sign_options(key, options);
    body["user_handle"] = json!(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(user_id));
    body
}

fn without_request_id(body: &Value) -> Value {
    let mut b = body.clone();
    b["error"].as_object_mut().expect("error object").remove("request_id");
    b
}

#[tokio::test]
async fn a_registered_passkey_signs_in_and_its_approvals_are_not_passkey_approvals() {
    let server = serve("[policy]\nstep_up_at_minor = { USD = 50_000 }\n").await;
    let ana = sign_in(&server, "ana").await;
    let (mut key, _) = with_passkey(&server, &ana).await;

    let options = options(&server).await;
    assert_eq!(options["allow_credentials"], json!([]), "the browser offers its own");
    assert_eq!(options["rp_id"], "console.example");
    assert_eq!(options["user_verification"], "required");
    let r =
        post(&server, "/api/v1/session/passkey", Some(&answer(&mut key, &options, &ana.user_id())), PUBLIC_URL).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["user"]["username"], "ana");
    let console = Console::from_reply(&server, PUBLIC_URL, &r);
    assert!(console.set_cookie.has("HttpOnly"), "{:?}", console.set_cookie);
    assert_eq!(console.queue("").await.status, 200, "the session works");
    let signed_in = server.audit_actions_where("session.signed_in").await;
    assert_eq!(signed_in.last().unwrap()["data"]["amr"], "passkey_session");

    // Below the threshold it approves, and the token says so, not "passkey".
    let small = pending_for(&server, 30_000).await;
    assert_eq!(console.approve(&small).await.status, 200);
    assert_eq!(decode_jws(&token_of(&server, &small).await.0).claims["amr"], json!(["passkey_session"]));
    // At the threshold the payment still needs its own assertion.
    let large = pending_for(&server, 60_000).await;
    console.approve(&large).await.assert_error(403, "step_up_required");
    let (code, out, err) = server.cli(&["audit", "verify-approvals"]).await;
    assert_eq!(code, 0, "no approval claims a passkey it did not use: {out}{err}");
}

#[tokio::test]
async fn every_way_a_passkey_sign_in_fails_gets_the_same_401() {
    let server = serve("").await;
    let ana = sign_in(&server, "ana").await;
    let ben = sign_in(&server, "ben").await;
    let (mut key, _) = with_passkey(&server, &ana).await;
    let mut refusals = Vec::new();
    let mut refused = |r: Reply, what: &str| {
        assert_eq!(r.status, 401, "{what}: {}", r.text);
        assert!(session_set_cookie(&r.headers).is_none_or(|c| c.is_removal()), "{what}: no session");
        refusals.push((what.to_owned(), without_request_id(&r.body)));
    };

    // A replay: the challenge is spent by the first answer.
    let o = options(&server).await;
    let good = answer(&mut key, &o, &ana.user_id());
    assert_eq!(post(&server, "/api/v1/session/passkey", Some(&good), PUBLIC_URL).await.status, 200);
    refused(post(&server, "/api/v1/session/passkey", Some(&good), PUBLIC_URL).await, "replay");
    // A bad signature: refused, and its challenge is spent too.
    let o = options(&server).await;
    let mut forged = answer(&mut key, &o, &ana.user_id());
    forged["signature"] = answer(&mut key, &options(&server).await, &ana.user_id())["signature"].clone();
    refused(post(&server, "/api/v1/session/passkey", Some(&forged), PUBLIC_URL).await, "bad signature");
    let retry = answer(&mut key, &o, &ana.user_id());
    refused(post(&server, "/api/v1/session/passkey", Some(&retry), PUBLIC_URL).await, "spent by a failure");
    // A key nobody registered; another user's handle; an unknown challenge.
    let mut stranger = SoftKey::new();
    let o = options(&server).await;
    refused(
        post(&server, "/api/v1/session/passkey", Some(&answer(&mut stranger, &o, &ana.user_id())), PUBLIC_URL).await,
        "unknown key",
    );
    let o = options(&server).await;
    refused(
        post(&server, "/api/v1/session/passkey", Some(&answer(&mut key, &o, &ben.user_id())), PUBLIC_URL).await,
        "another user's handle",
    );
    let mut unknown = answer(&mut key, &options(&server).await, &ana.user_id());
    unknown["challenge_id"] = json!("pkc_does_not_exist");
    refused(post(&server, "/api/v1/session/passkey", Some(&unknown), PUBLIC_URL).await, "unknown challenge");
    // Ana deactivated: her passkey signs no one in.
    query("UPDATE users SET active = 0 WHERE username = 'ana'").execute(&server.db().await).await.unwrap();
    let o = options(&server).await;
    refused(
        post(&server, "/api/v1/session/passkey", Some(&answer(&mut key, &o, &ana.user_id())), PUBLIC_URL).await,
        "deactivated",
    );

    let first = refusals[0].1.clone();
    for (what, body) in &refusals {
        assert_eq!(body, &first, "{what} answers like the others");
    }
    // Another site's page cannot even ask.
    let r = post(&server, "/api/v1/session/passkey-challenges", None, "https://evil.example").await;
    r.assert_error(403, "forbidden");
    let o = options(&server).await;
    let r =
        post(&server, "/api/v1/session/passkey", Some(&answer(&mut key, &o, &ana.user_id())), "https://evil.example")
            .await;
    r.assert_error(403, "forbidden");
}

#[tokio::test]
async fn a_passkey_still_cooling_off_signs_no_one_in() {
    // The cool-off of a passkey registered with an enrolment code applies
    // to signing in as to approving.
    let server = TestServer::start_with(&format!("public_url = \"{PUBLIC_URL}\"\n")).await;
    let ana = sign_in(&server, "ana").await;
    let (mut key, _) = with_passkey(&server, &ana).await;
    let o = options(&server).await;
    let r = post(&server, "/api/v1/session/passkey", Some(&answer(&mut key, &o, &ana.user_id())), PUBLIC_URL).await;
    r.assert_error(401, "unauthenticated");
}
