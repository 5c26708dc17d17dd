//! CSRF and origin checks on cookie-authenticated state changes (SPEC
//! §10; docs/DECISIONS.md "Console security"): the JSON
//! approval endpoint, sign-out, the no-JavaScript decision form and sign-in.
//! Each refusal is 403 `forbidden` and leaves the proposal pending.

use reqwest::header::{ORIGIN, REFERER};
use reqwest::Method;
use serde_json::json;

use crate::console_client::*;
use crate::helpers::*;

const EVIL: &str = "http://evil.example";

/// A server, ana signed in, and a pending proposal.
async fn setup() -> (TestServer, Console, String) {
    let server = TestServer::start().await;
    let console = Console::sign_in(&server, "ana").await;
    let id = pending(&server).await;
    (server, console, id)
}

fn approvals_path(id: &str) -> String {
    format!("/api/v1/proposals/{id}/approvals")
}

/// Sends an approval built by `rb`, asserts 403 `forbidden` and that nothing changed.
async fn refused(server: &TestServer, id: &str, rb: reqwest::RequestBuilder) {
    let r = send(rb.json(&json!({"decision": "approve"}))).await;
    r.assert_error(403, "forbidden");
    assert_still_pending(server, id).await;
}

#[tokio::test]
async fn approving_without_the_csrf_token_is_403() {
    let (server, ana, id) = setup().await;
    refused(&server, &id, ana.with_origin(Method::POST, &approvals_path(&id))).await;
    // Control: the same request with the token goes through.
    let ok = ana.approve(&id).await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    assert_eq!(ok.body["status"], "approved");
}

#[tokio::test]
async fn approving_with_a_wrong_csrf_token_is_403() {
    let (server, ana, id) = setup().await;
    let path = approvals_path(&id);
    refused(&server, &id, ana.with_origin(Method::POST, &path).header("x-csrf-token", "0".repeat(64))).await;
    refused(&server, &id, ana.with_origin(Method::POST, &path).header("x-csrf-token", "")).await;
    // A prefix of the right token is not the token.
    refused(&server, &id, ana.with_origin(Method::POST, &path).header("x-csrf-token", &ana.csrf[..ana.csrf.len() - 1]))
        .await;
}

#[tokio::test]
async fn another_sessions_csrf_token_is_refused() {
    let (server, ana, id) = setup().await;
    let ben = Console::sign_in(&server, "ben").await;
    let path = approvals_path(&id);
    refused(&server, &id, ana.with_origin(Method::POST, &path).header("x-csrf-token", &ben.csrf)).await;
}

#[tokio::test]
async fn approving_from_a_foreign_origin_is_403_even_with_the_token() {
    let (server, ana, id) = setup().await;
    let rb = ana.bare(Method::POST, &approvals_path(&id)).header(ORIGIN, EVIL).header("x-csrf-token", &ana.csrf);
    refused(&server, &id, rb).await;
    // `Origin: null` without fetch metadata proves nothing either.
    let rb = ana.bare(Method::POST, &approvals_path(&id)).header(ORIGIN, "null").header("x-csrf-token", &ana.csrf);
    refused(&server, &id, rb).await;
    // Nor does a look-alike that only starts with our origin.
    let lookalike = format!("{}.evil.example", server.base);
    let rb = ana.bare(Method::POST, &approvals_path(&id)).header(ORIGIN, lookalike).header("x-csrf-token", &ana.csrf);
    refused(&server, &id, rb).await;
}

#[tokio::test]
async fn without_origin_referer_or_fetch_metadata_only_a_scripts_json_is_judged_by_its_token() {
    // No browser sends cross-site JSON without a preflight (never granted)
    // and an Origin: such a request is a script's, judged by its session and
    // CSRF token. A form body is what a page can send.
    let (server, ana, id) = setup().await;
    let form = ana.bare(Method::POST, &format!("/proposals/{id}/decision")).form(&[
        ("decision", "reject"),
        ("reason", "x"),
        ("csrf_token", ana.csrf.as_str()),
    ]);
    send(form).await.assert_error(403, "forbidden");
    assert_still_pending(&server, &id).await;
    refused(&server, &id, ana.bare(Method::POST, &approvals_path(&id))).await;
    let scripted = send(
        ana.bare(Method::POST, &approvals_path(&id))
            .header("x-csrf-token", &ana.csrf)
            .json(&json!({"decision": "approve"})),
    )
    .await;
    assert_eq!(scripted.status, 200, "{}", scripted.text);
}

#[tokio::test]
async fn approving_with_a_foreign_referer_is_403() {
    let (server, ana, id) = setup().await;
    for referer in [format!("{EVIL}/page"), format!("{}.evil.example/proposals/{id}", server.base)] {
        let rb =
            ana.bare(Method::POST, &approvals_path(&id)).header(REFERER, referer).header("x-csrf-token", &ana.csrf);
        refused(&server, &id, rb).await;
    }
}

#[tokio::test]
async fn approving_with_sec_fetch_site_cross_site_is_403() {
    let (server, ana, id) = setup().await;
    let path = approvals_path(&id);
    let rb = ana.bare(Method::POST, &path).header("sec-fetch-site", "cross-site").header("x-csrf-token", &ana.csrf);
    refused(&server, &id, rb).await;
    // The browser's own word wins over an Origin that looks like ours.
    let rb = ana.authed(Method::POST, &path).header("sec-fetch-site", "cross-site");
    refused(&server, &id, rb).await;
    // Same-site is not same-origin.
    let rb = ana.authed(Method::POST, &path).header("sec-fetch-site", "same-site");
    refused(&server, &id, rb).await;
}

#[tokio::test]
async fn same_origin_fetch_metadata_with_origin_null_and_the_token_is_accepted() {
    // What a browser sends for our own form posts under Referrer-Policy: no-referrer.
    let (_server, ana, id) = setup().await;
    let r = send(
        ana.bare(Method::POST, &approvals_path(&id))
            .header("sec-fetch-site", "same-origin")
            .header(ORIGIN, "null")
            .header("x-csrf-token", &ana.csrf)
            .json(&json!({"decision": "approve"})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "approved", "{}", r.text);
}

#[tokio::test]
async fn same_origin_fetch_metadata_does_not_replace_the_token() {
    let (server, ana, id) = setup().await;
    let rb =
        ana.bare(Method::POST, &approvals_path(&id)).header("sec-fetch-site", "same-origin").header(ORIGIN, "null");
    refused(&server, &id, rb).await;
}

#[tokio::test]
async fn a_same_origin_referer_without_origin_is_accepted() {
    let (_server, ana, id) = setup().await;
    let r = send(
        ana.bare(Method::POST, &approvals_path(&id))
            .header(REFERER, format!("{}/proposals/{id}", ana.base))
            .header("x-csrf-token", &ana.csrf)
            .json(&json!({"decision": "approve"})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "approved");
}

#[tokio::test]
async fn signing_out_needs_the_csrf_token_and_our_origin() {
    // A bare DELETE with no browser origin signal at all is a script's (no
    // page sends one cross-site without a preflight): it needs its token like
    // any other (offboarding.rs::sign_out_everywhere_and_a_scripts_bare_sign_out).
    let server = TestServer::start().await;
    let path = "/api/v1/session";
    type Build = fn(&Console, &str) -> reqwest::RequestBuilder;
    let attempts: [(&str, Build); 6] = [
        ("no token", |c, p| c.with_origin(Method::DELETE, p)),
        ("wrong token", |c, p| c.with_origin(Method::DELETE, p).header("x-csrf-token", "f".repeat(64))),
        ("foreign origin", |c, p| c.bare(Method::DELETE, p).header(ORIGIN, EVIL).header("x-csrf-token", &c.csrf)),
        ("no origin, no token", |c, p| c.bare(Method::DELETE, p)),
        ("cross-site", |c, p| c.authed(Method::DELETE, p).header("sec-fetch-site", "cross-site")),
        ("foreign referer", |c, p| {
            c.bare(Method::DELETE, p).header(REFERER, format!("{EVIL}/x")).header("x-csrf-token", &c.csrf)
        }),
    ];
    let mut problems = Vec::new();
    for (what, build) in attempts {
        // A fresh session for each, so one wrongly accepted sign-out does not hide the next.
        let ana = Console::sign_in(&server, "ana").await;
        let r = send(build(&ana, path)).await;
        if r.status != 403 || r.body["error"]["code"] != "forbidden" {
            problems.push(format!("{what}: expected 403 forbidden, got {} {}", r.status, r.text));
        }
        let still = ana.queue("").await.status;
        if still != 200 {
            problems.push(format!("{what}: the session did not survive the refused sign-out (queue {still})"));
        }
    }
    assert!(problems.is_empty(), "sign-out CSRF checks:\n{}", problems.join("\n"));
    let ana = Console::sign_in(&server, "ana").await;
    let out = ana.sign_out().await;
    assert_eq!(out.status, 204, "{}", out.text);
}

fn decision_path(id: &str) -> String {
    format!("/proposals/{id}/decision")
}

/// A browser's same-origin form post (fetch metadata, `Origin: null`).
fn browser_form(console: &Console, id: &str, fields: &[(&str, &str)]) -> reqwest::RequestBuilder {
    console
        .bare(Method::POST, &decision_path(id))
        .header("sec-fetch-site", "same-origin")
        .header(ORIGIN, "null")
        .form(fields)
}

#[tokio::test]
async fn the_decision_form_without_a_csrf_token_field_is_403() {
    let (server, ana, id) = setup().await;
    let r = send(browser_form(&ana, &id, &[("decision", "approve")])).await;
    r.assert_error(403, "forbidden");
    assert_still_pending(&server, &id).await;
    // Also from a script with our Origin.
    let r = send(ana.with_origin(Method::POST, &decision_path(&id)).form(&[("decision", "approve")])).await;
    r.assert_error(403, "forbidden");
    assert_still_pending(&server, &id).await;

    // Control: with the field, the form approves and redirects (on to the next
    // proposal waiting, or the queue: console_flow.rs).
    let r = send(browser_form(&ana, &id, &[("decision", "approve"), ("csrf_token", &ana.csrf)])).await;
    assert!([302, 303].contains(&r.status), "redirect after the form post: {} {}", r.status, r.text);
    assert_eq!(status_of(&server, &id).await, "approved");
}

#[tokio::test]
async fn the_decision_form_with_a_wrong_csrf_token_field_is_403() {
    let (server, ana, id) = setup().await;
    let wrong = "a".repeat(64);
    let r = send(browser_form(&ana, &id, &[("decision", "approve"), ("csrf_token", &wrong)])).await;
    r.assert_error(403, "forbidden");
    assert_still_pending(&server, &id).await;
}

#[tokio::test]
async fn the_decision_form_from_a_foreign_origin_is_403() {
    let (server, ana, id) = setup().await;
    let r = send(
        ana.bare(Method::POST, &decision_path(&id))
            .header(ORIGIN, EVIL)
            .form(&[("decision", "approve"), ("csrf_token", &ana.csrf)]),
    )
    .await;
    r.assert_error(403, "forbidden");
    let r = send(
        ana.bare(Method::POST, &decision_path(&id))
            .header("sec-fetch-site", "cross-site")
            .header(ORIGIN, "null")
            .form(&[("decision", "reject"), ("reason", "x"), ("csrf_token", &ana.csrf)]),
    )
    .await;
    r.assert_error(403, "forbidden");
    assert_still_pending(&server, &id).await;
}

#[tokio::test]
async fn signing_in_from_a_foreign_origin_is_403() {
    let server = TestServer::start().await;
    let body = json!({"username": "ana", "password": PASSWORD});
    // (No Origin at all is a script's JSON sign-in, judged by its password:
    // `consent::a_script_without_browser_origin_headers_is_judged_by_its_credentials`.)
    for origin in [Some(EVIL), Some("null")] {
        let r = sign_in_request(&server, &body, origin, None).await;
        r.assert_error(403, "forbidden");
        assert!(
            session_set_cookie(&r.headers).is_none_or(|c| c.is_removal()),
            "no session for {origin:?}: {:?}",
            r.headers
        );
    }
    // Login CSRF through the form as well.
    let r = send(
        http_client()
            .post(server.url("/login"))
            .header(ORIGIN, EVIL)
            .form(&[("username", "ana"), ("password", PASSWORD)]),
    )
    .await;
    r.assert_error(403, "forbidden");
    assert!(session_set_cookie(&r.headers).is_none_or(|c| c.is_removal()), "{:?}", r.headers);
    // Control: our own origin signs in.
    assert_eq!(sign_in_request(&server, &body, Some(&server.base), None).await.status, 200);
}

#[tokio::test]
async fn server_function_posts_need_the_csrf_token_too() {
    // The pages' server functions are reads (GET), but any POST to their
    // path goes through the same guard as every other state change.
    let (_server, ana, _id) = setup().await;
    let r = send(ana.with_origin(Method::POST, "/console/queue").form(&[("status", "pending_approval")])).await;
    r.assert_error(403, "forbidden");
    // Control: the read itself works with the session alone.
    let read = send(ana.bare(Method::GET, "/console/queue")).await;
    assert_eq!(read.status, 200, "{}", read.text);
}
