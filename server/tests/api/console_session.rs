//! Console sign-in, sessions and sign-out (SPEC §10):
//! the answer's shape, the cookie's flags, the id cycled at sign-in, the same
//! 401 for a wrong password and an unknown user, throttling, sign-out, and
//! the idle and absolute timeouts.

use reqwest::Method;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

use crate::console_client::*;
use crate::helpers::*;

#[tokio::test]
async fn sign_in_returns_the_user_and_csrf_token_and_a_lax_http_only_cookie() {
    let server = TestServer::start().await;
    let reply = sign_in_as(&server, "ana", PASSWORD).await;
    assert_eq!(reply.status, 200, "{}", reply.text);

    let body = reply.body.as_object().expect("object");
    let mut members: Vec<&String> = body.keys().collect();
    members.sort();
    assert_eq!(members, ["csrf_token", "user"], "{}", reply.text);
    let user = reply.body["user"].as_object().expect("user object");
    let mut fields: Vec<&String> = user.keys().collect();
    fields.sort();
    assert_eq!(fields, ["id", "roles", "tenant_id", "username"], "{}", reply.text);
    assert!(user["id"].as_str().is_some_and(|id| !id.is_empty()), "{}", reply.text);
    assert_eq!(user["username"], "ana");
    assert_eq!(user["tenant_id"], "acme");
    assert_eq!(user["roles"], json!(["approver"]));
    let csrf = reply.body["csrf_token"].as_str().expect("csrf_token");
    assert!(csrf.len() >= 32, "a CSRF token with real entropy: {csrf}");
    assert!(!reply.text.contains(PASSWORD) && !reply.text.contains("argon2"), "{}", reply.text);

    let cookie = session_set_cookie(&reply.headers).expect("countersign_session cookie");
    assert!(!cookie.value.is_empty());
    assert!(cookie.has("HttpOnly"), "HttpOnly: {}", cookie.raw);
    assert_eq!(cookie.get("SameSite").map(str::to_ascii_lowercase).as_deref(), Some("lax"), "{}", cookie.raw);
    assert!(!cookie.has("Secure"), "not Secure for an http public URL: {}", cookie.raw);
    assert_ne!(cookie.value, csrf, "the CSRF token is not the session id");

    // The cookie is a working session.
    let console = Console::from_reply(&server, &server.base, &reply);
    let queue = console.queue("").await;
    assert_eq!(queue.status, 200, "{}", queue.text);
}

#[tokio::test]
async fn cookie_is_secure_when_the_public_url_is_https() {
    let server = TestServer::start_with("public_url = \"https://console.example\"\n").await;
    // Sign-in's origin check accepts the public URL's origin.
    let console = Console::sign_in_from(&server, "ana", "https://console.example").await;
    let cookie = &console.set_cookie;
    assert!(cookie.has("Secure"), "Secure for an https public URL: {}", cookie.raw);
    assert!(cookie.has("HttpOnly"), "{}", cookie.raw);
    assert_eq!(cookie.get("SameSite").map(str::to_ascii_lowercase).as_deref(), Some("lax"), "{}", cookie.raw);
    // And the Host the request was sent to, under the public URL's scheme.
    let host_origin = server.base.replacen("http://", "https://", 1);
    let body = json!({"username": "ben", "password": PASSWORD});
    let r = sign_in_request(&server, &body, Some(&host_origin), None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(session_set_cookie(&r.headers).expect("cookie").has("Secure"));
}

#[tokio::test]
async fn signing_in_again_cycles_the_session_id() {
    let server = TestServer::start().await;
    let first = Console::sign_in(&server, "ana").await;
    let body = json!({"username": "ana", "password": PASSWORD});
    let again = sign_in_request(&server, &body, Some(&server.base), Some(&first.cookie)).await;
    let second = Console::from_reply(&server, &server.base, &again);
    assert_ne!(second.cookie, first.cookie, "the session id changes at sign-in");
    assert_ne!(second.csrf, first.csrf, "and so does the CSRF token");
    assert_eq!(second.queue("").await.status, 200);
    // The id held before sign-in is worthless afterwards (no session fixation).
    first.queue("").await.assert_error(401, "unauthenticated");

    // Signing in as someone else over an existing session cycles it too.
    let other = sign_in_request(
        &server,
        &json!({"username": "ben", "password": PASSWORD}),
        Some(&server.base),
        Some(&second.cookie),
    )
    .await;
    let ben = Console::from_reply(&server, &server.base, &other);
    assert_ne!(ben.cookie, second.cookie);
    second.queue("").await.assert_error(401, "unauthenticated");
}

#[tokio::test]
async fn a_wrong_password_is_401_unauthenticated() {
    let server = TestServer::start().await;
    let r = sign_in_as(&server, "ana", "correct horse battery stapler").await;
    r.assert_error(401, "unauthenticated");
    assert!(r.body.get("csrf_token").is_none() && r.body.get("user").is_none(), "{}", r.text);
    // Whatever cookie came back (if any) opens nothing.
    if let Some(cookie) = session_set_cookie(&r.headers) {
        let console = Console {
            base: server.base.clone(),
            origin: server.base.clone(),
            http: http_client(),
            cookie: cookie.value.clone(),
            csrf: String::new(),
            user: Value::Null,
            set_cookie: cookie,
        };
        console.queue("").await.assert_error(401, "unauthenticated");
    }
}

fn without_request_id(body: &Value) -> Value {
    let mut b = body.clone();
    b["error"].as_object_mut().expect("error object").remove("request_id");
    b
}

#[tokio::test]
async fn an_unknown_user_gets_the_same_401_as_a_wrong_password() {
    let server = TestServer::start().await;
    let wrong = sign_in_as(&server, "ana", "not the password").await;
    let unknown = sign_in_as(&server, "nobody-here", "not the password").await;
    wrong.assert_error(401, "unauthenticated");
    unknown.assert_error(401, "unauthenticated");
    assert_eq!(without_request_id(&wrong.body), without_request_id(&unknown.body), "identical but for request_id");
    assert_ne!(wrong.body["error"]["request_id"], unknown.body["error"]["request_id"]);
    assert_eq!(wrong.header("www-authenticate"), unknown.header("www-authenticate"));
    assert_eq!(wrong.header("content-type"), unknown.header("content-type"));
    assert_eq!(
        session_set_cookie(&wrong.headers).is_some(),
        session_set_cookie(&unknown.headers).is_some(),
        "cookies do not tell them apart either"
    );
}

#[tokio::test]
async fn an_unknown_user_costs_a_password_check_like_a_known_one() {
    // Coarse on purpose: without the dummy-hash check an unknown user would
    // answer orders of magnitude faster than a wrong password (argon2id).
    // The known users get their hashes from the server itself, with the
    // default parameters (the fixture's are cheap, see helpers.rs).
    let server = TestServer::start().await;
    for username in ["kim", "lou", "max"] {
        let (code, out, err) = server
            .cli_stdin(
                &["user", "add", "--tenant", "acme", "--username", username, "--role", "viewer"],
                &format!("{PASSWORD}\n"),
            )
            .await;
        assert_eq!(code, 0, "user add {username}: {out}{err}");
    }
    let timed = |username: String| {
        let server = &server;
        async move {
            let started = Instant::now();
            let r = sign_in_as(server, &username, "not the password").await;
            assert_eq!(r.status, 401, "{}", r.text);
            started.elapsed()
        }
    };
    let mut known = Vec::new();
    let mut unknown = Vec::new();
    for i in 0..3 {
        known.push(timed(["kim", "lou", "max"][i].to_owned()).await);
        unknown.push(timed(format!("ghost-{i}")).await);
    }
    known.sort();
    unknown.sort();
    let (known_median, unknown_median) = (known[1], unknown[1]);
    assert!(
        unknown_median * 3 >= known_median,
        "unknown users answer much faster ({unknown:?}) than wrong passwords ({known:?}): usernames can be enumerated"
    );
}

#[tokio::test]
async fn repeated_failures_for_one_username_are_throttled_without_locking_out_others() {
    let server = TestServer::start().await;
    for attempt in 1..=5 {
        let r = sign_in_as(&server, "ana", "guess").await;
        assert_eq!(r.status, 401, "attempt {attempt}: {}", r.text);
    }
    let r = sign_in_as(&server, "ana", "guess").await;
    r.assert_error(429, "rate_limited");
    let retry: u64 = r.header("retry-after").expect("Retry-After").parse().expect("Retry-After in seconds");
    assert!(retry >= 1, "{retry}");
    // The right password does not get through a throttled username either.
    sign_in_as(&server, "ana", PASSWORD).await.assert_error(429, "rate_limited");
    // Case does not make it another username.
    sign_in_as(&server, "ANA", "guess").await.assert_error(429, "rate_limited");

    // Another user from the same address is not locked out.
    let ben = sign_in_as(&server, "ben", PASSWORD).await;
    assert_eq!(ben.status, 200, "{}", ben.text);
}

#[tokio::test]
async fn repeated_failures_from_one_address_are_slowed_but_never_lock_out_correct_credentials() {
    let server = std::sync::Arc::new(TestServer::start().await);
    // One failure each for many usernames (password spraying): past 50 from
    // one address, each further failure from it takes at least a second,
    // one at a time.
    for i in 0..50 {
        let r = sign_in_as(&server, &format!("sprayed-{i}"), "guess").await;
        assert_eq!(r.status, 401, "attempt {i}: {}", r.text);
    }
    let started = std::time::Instant::now();
    let slow = {
        let server = server.clone();
        tokio::spawn(async move { sign_in_as(&server, "sprayed-slow", "guess").await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let meanwhile = sign_in_as(&server, "sprayed-meanwhile", "guess").await;
    meanwhile.assert_error(429, "rate_limited");
    assert!(meanwhile.header("retry-after").is_some(), "Retry-After");
    assert_eq!(slow.await.unwrap().status, 401);
    assert!(started.elapsed() >= std::time::Duration::from_secs(1), "a failure past the limit is slowed");
    // The right password from the same address still signs in, at once.
    let ben = sign_in_as(&server, "ben", PASSWORD).await;
    assert_eq!(ben.status, 200, "{}", ben.text);
}

#[tokio::test]
async fn signing_out_ends_and_purges_the_session() {
    let server = TestServer::start().await;
    let console = Console::sign_in(&server, "ana").await;
    assert_eq!(console.queue("").await.status, 200);
    let db = server.db().await;
    let rows = |id: String| {
        let db = db.clone();
        async move {
            one::<i64>("SELECT COUNT(*) FROM console_sessions WHERE id = ?")
                .bind(id)
                .fetch_one(&db)
                .await
                .expect("count sessions")
        }
    };
    assert_eq!(rows(console.cookie.clone()).await, 1, "the session is stored in the database");

    let out = console.sign_out().await;
    assert_eq!(out.status, 204, "{}", out.text);
    assert!(out.text.is_empty());
    if let Some(cookie) = session_set_cookie(&out.headers) {
        assert!(cookie.is_removal(), "the cookie is cleared: {}", cookie.raw);
    }
    console.queue("").await.assert_error(401, "unauthenticated");
    assert_eq!(rows(console.cookie.clone()).await, 0, "the session record is purged");
    // Nothing is left to sign out of.
    send(console.authed(Method::DELETE, "/api/v1/session")).await.assert_error(401, "unauthenticated");
}

#[tokio::test]
async fn a_session_idle_longer_than_the_idle_timeout_has_ended() {
    let server = TestServer::start_with("[console]\nidle_timeout_secs = 1\n").await;
    let console = Console::sign_in(&server, "ana").await;
    assert_eq!(console.queue("").await.status, 200, "fresh session works");
    // The behaviour under test is the passing of time.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    console.queue("").await.assert_error(401, "unauthenticated");
    // A state change with the old session is refused too.
    let id = pending(&server).await;
    let r = console.approve(&id).await;
    assert_eq!(r.status, 401, "{}", r.text);
    assert_still_pending(&server, &id).await;
}

#[tokio::test]
async fn activity_keeps_a_session_alive_past_the_idle_timeout() {
    // Idle means without a request: a reviewer working through the queue
    // must not be signed out idle_timeout_secs after signing in.
    let server = TestServer::start_with("[console]\nidle_timeout_secs = 2\n").await;
    let console = Console::sign_in(&server, "ana").await;
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(4500) {
        let r = console.queue("").await;
        assert_eq!(r.status, 200, "active for {:?}, never idle for 2 s: {}", started.elapsed(), r.text);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Then idle past the timeout: gone.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    console.queue("").await.assert_error(401, "unauthenticated");
}

#[tokio::test]
async fn a_session_older_than_the_absolute_timeout_has_ended_even_while_active() {
    let server = TestServer::start_with("[console]\nabsolute_timeout_secs = 1\n").await;
    let console = Console::sign_in(&server, "ana").await;
    assert_eq!(console.queue("").await.status, 200, "fresh session works");
    // Keep it busy (well inside the 30 min idle timeout) past the absolute one.
    let started = Instant::now();
    let mut last = 200;
    while started.elapsed() < Duration::from_millis(2600) {
        tokio::time::sleep(Duration::from_millis(400)).await;
        let r = console.queue("").await;
        assert!(!(last == 401 && r.status == 200), "an ended session does not come back: {}", r.text);
        last = r.status;
    }
    console.queue("").await.assert_error(401, "unauthenticated");
}

#[tokio::test]
async fn the_queue_needs_a_session() {
    let server = TestServer::start().await;
    send(http_client().get(server.url("/api/v1/queue"))).await.assert_error(401, "unauthenticated");
    let forged = send(
        http_client()
            .get(server.url("/api/v1/queue"))
            .header("cookie", format!("{SESSION_COOKIE}=AAAAAAAAAAAAAAAAAAAAAA")),
    )
    .await;
    forged.assert_error(401, "unauthenticated");
    // An agent's bearer key is no console credential.
    send(server.get("/api/v1/queue", ACME_BOT_KEY)).await.assert_error(401, "unauthenticated");
}

/// A page's form post, as the browser sends it: `Origin`, the session
/// cookie, the form's own `csrf_token` and `return_to`, no header token.
async fn page_form(console: &Console, path: &str, csrf: &str, fields: &[(&str, &str)]) -> Reply {
    let mut fields = fields.to_vec();
    fields.push(("csrf_token", csrf));
    send(console.with_origin(Method::POST, path).form(&fields)).await
}

#[tokio::test]
async fn a_form_posted_after_the_session_ended_goes_to_sign_in_and_back_to_its_page() {
    let server = TestServer::start_with("[console]\nidle_timeout_secs = 1\n").await;
    let ana = Console::sign_in(&server, "ana").await;
    let (id, other) = (pending(&server).await, pending(&server).await);
    // The behaviour under test is the passing of time.
    tokio::time::sleep(Duration::from_millis(2500)).await;

    let back = format!("/proposals/{id}");
    let reject = [("decision", "reject"), ("reason", "Not ours"), ("return_to", back.as_str())];
    let r = page_form(&ana, &format!("/proposals/{id}/decision"), &ana.csrf, &reject).await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(r.header("location"), Some(format!("/login?next=/proposals/{id}&expired=1").as_str()));
    // The bulk page, with its listed ids, and the admin page: the same.
    let bulk = format!("/bulk?id={id}&id={other}");
    let fields = [("decision", "approve"), ("id", id.as_str()), ("id", other.as_str()), ("return_to", bulk.as_str())];
    let r = page_form(&ana, "/bulk/decision", &ana.csrf, &fields).await;
    let expected = format!("/login?next=/bulk%3Fid%3D{id}%26id%3D{other}&expired=1");
    assert_eq!(r.header("location"), Some(expected.as_str()), "{}", r.text);
    let r = page_form(&ana, "/admin/freezes", &ana.csrf, &[("scope", "tenant"), ("return_to", "/admin")]).await;
    assert_eq!(r.header("location"), Some("/login?next=/admin&expired=1"));
    // A page that is not ours, or an empty one: sign-in, then the queue.
    for return_to in ["//evil.example/x", "https://evil.example/", ""] {
        let fields = [("decision", "reject"), ("reason", "x"), ("return_to", return_to)];
        let r = page_form(&ana, &format!("/proposals/{id}/decision"), &ana.csrf, &fields).await;
        assert_eq!(r.header("location"), Some("/login?expired=1"), "{return_to}");
    }
    // A script's JSON call, or a form naming no page, still gets its 401;
    // another site's form its 403.
    ana.reject(&id, "Not ours").await.assert_error(401, "unauthenticated");
    let r = page_form(&ana, &format!("/proposals/{id}/decision"), &ana.csrf, &reject[..2]).await;
    r.assert_error(401, "unauthenticated");
    let foreign = send(
        ana.bare(Method::POST, &format!("/proposals/{id}/decision"))
            .header("origin", "https://evil.example")
            .form(&reject),
    )
    .await;
    assert_eq!(foreign.status, 403, "{}", foreign.text);
    for id in [&id, &other] {
        assert_still_pending(&server, id).await;
    }
}

#[tokio::test]
async fn a_form_of_another_session_goes_back_to_its_page_and_does_nothing() {
    let server = TestServer::start().await;
    let ana = Console::sign_in(&server, "ana").await;
    let id = pending(&server).await;
    // Signed out and in again in another tab: this page's token is stale.
    let back = format!("/proposals/{id}?q=kept");
    let fields = [("decision", "reject"), ("reason", "Not ours"), ("return_to", back.as_str())];
    let r = page_form(&ana, &format!("/proposals/{id}/decision"), "stale-token-of-an-ended-session", &fields).await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(r.header("location"), Some(back.as_str()));
    assert_still_pending(&server, &id).await;
    // A form that names no page (not the console's) and a script: their 403.
    let r = page_form(&ana, &format!("/proposals/{id}/decision"), "stale", &[("decision", "reject")]).await;
    r.assert_error(403, "forbidden");
    let r = send(ana.with_origin(Method::POST, &format!("/api/v1/proposals/{id}/approvals")).json(&json!({}))).await;
    r.assert_error(403, "forbidden");
    // The right token still works.
    let r = page_form(&ana, &format!("/proposals/{id}/decision"), &ana.csrf, &fields).await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(status_of(&server, &id).await, "rejected");
}

#[tokio::test]
async fn a_live_pages_own_reads_do_not_keep_a_session_alive_but_the_person_does() {
    let server = TestServer::start_with("[console]\nidle_timeout_secs = 2\n").await;
    let (left_open, at_work) = (Console::sign_in(&server, "ana").await, Console::sign_in(&server, "ben").await);
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(4500) {
        // The title's count, read again and again by an open tab.
        let r = send(left_open.bare(Method::GET, "/console/waiting")).await;
        assert!(r.status == 200 || started.elapsed() > Duration::from_millis(1900), "{}", r.text);
        // A key or a click, reported by /session.js.
        let r = send(at_work.bare(Method::GET, "/session/alive")).await;
        assert_eq!(r.status, 204, "active for {:?}: {}", started.elapsed(), r.text);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    left_open.queue("").await.assert_error(401, "unauthenticated");
    send(left_open.bare(Method::GET, "/session/alive")).await.assert_error(401, "unauthenticated");
    assert_eq!(at_work.queue("").await.status, 200);
}
