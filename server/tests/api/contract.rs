//! The OpenAPI document held to the server by a third party: schemathesis
//! (e2e/schemathesis.toml says which checks) generates a few requests per
//! agent and console operation against a real server and fails on a 5xx,
//! an undocumented status, a non-conforming body or header, an invalid
//! request accepted, or a method answered with anything but 405. And the
//! precise answers it found missing, each pinned here.

use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;

use crate::console_client::Console;
use crate::helpers::*;

const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../e2e/schemathesis.toml");

/// Runs schemathesis on the operations tagged `tag`, as the agent and as
/// ana (her session's cookie through the document's `consoleSession`
/// scheme, her CSRF token as a header).
async fn schemathesis(server: &TestServer, ana: &Console, tag: &str) -> (bool, String) {
    let python = checkers_python().expect("scripts/setup.sh --tests made the checkers' venv");
    let bin = python.with_file_name("schemathesis");
    // Its working files (`.schemathesis/`) go to a scratch directory.
    let scratch = tempfile::tempdir().expect("a temp dir");
    let out = Command::new(bin)
        .current_dir(scratch.path())
        .args(["--config-file", CONFIG, "run", &server.url("/openapi.json"), "--include-tag", tag])
        // Signing out would end the session the rest of the run uses.
        .args(["--exclude-path", "/api/v1/session"])
        .args(["-H", &format!("X-CSRF-Token: {}", ana.csrf), "-H", &format!("Origin: {}", server.base)])
        .args(["--max-examples", "5", "--seed", "1", "--workers", "1", "--generation-database", "none"])
        // An event stream stays open while its proposal waits: read for 5 s
        // (its events so far are checked), then go on.
        .args(["--request-timeout", "5", "--no-color", "--output-truncate", "true"])
        .env("COUNTERSIGN_AGENT_KEY", ACME_BOT_KEY)
        .env("COUNTERSIGN_SESSION", &ana.cookie)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(300), out).await.expect("schemathesis ends").unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[tokio::test]
async fn schemathesis_finds_no_5xx_undocumented_status_or_nonconforming_body() {
    if on_postgres() {
        return; // The contract is the HTTP layer's: one backend is enough.
    }
    let server = TestServer::start().await;
    for run in ["cs-1", "cs-2"] {
        server.create(&with(transfer(), serde_json::json!({ "run_id": run }))).await;
    }
    let ana = Console::sign_in(&server, "ana").await;
    for tag in ["agent", "console"] {
        let (passed, output) = schemathesis(&server, &ana, tag).await;
        assert!(passed, "schemathesis on the {tag} operations:\n{output}");
        assert!(output.contains(" passed"), "{output}");
    }
}

#[tokio::test]
async fn an_empty_query_value_is_refused_naming_it_rather_than_ignored() {
    let server = TestServer::start().await;
    let listed = server.list(ACME_BOT_KEY, "status=").await;
    listed.assert_error(422, "validation_failed");
    assert_eq!(listed.body["error"]["details"][0]["field"], "status", "{}", listed.text);
    server.list(ACME_BOT_KEY, "cursor").await.assert_error(422, "validation_failed");
    assert_eq!(server.list(ACME_BOT_KEY, "status=pending_approval").await.status, 200);

    let ana = Console::sign_in(&server, "ana").await;
    for query in ["to=", "status=", "payee=&currency=USD"] {
        let reply = ana.queue(query).await;
        reply.assert_error(422, "validation_failed");
        let field = query.split('=').next().unwrap();
        assert_eq!(reply.body["error"]["details"][0]["field"], field, "{query}: {}", reply.text);
    }
    assert_eq!(ana.queue("status=all&to=2030-01-01").await.status, 200);
    // The queue page's search form sends every field, empty ones included:
    // the page still reads an empty field as none.
    let page = send(ana.bare(reqwest::Method::GET, "/?payee=&currency=&status=")).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(!page.text.contains("is empty"), "the page reads empty fields as none");
}

#[tokio::test]
async fn a_method_a_route_does_not_have_is_405_before_any_session_or_csrf_check() {
    let server = TestServer::start().await;
    let http = reqwest::Client::new();
    // No session cookie, no CSRF token, a foreign Origin: still 405, with
    // the methods the route has.
    for (method, path) in [
        (reqwest::Method::PUT, "/api/v1/queue"),
        (reqwest::Method::POST, "/api/v1/queue"),
        (reqwest::Method::DELETE, "/api/v1/proposals/prop_x/approvals"),
        (reqwest::Method::PATCH, "/api/v1/me/passkeys"),
        (reqwest::Method::PUT, "/api/v1/proposals"),
    ] {
        let reply = http
            .request(method.clone(), server.url(path))
            .header("origin", "https://evil.example")
            .send()
            .await
            .expect("the server answers");
        assert_eq!(reply.status(), 405, "{method} {path}");
        assert!(reply.headers().contains_key("allow"), "{method} {path}: an Allow header");
    }
    // A route's own method still meets the CSRF guard first.
    let reply = http
        .post(server.url("/api/v1/proposals/prop_x/approvals"))
        .header("origin", "https://evil.example")
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 403);
}

#[tokio::test]
async fn a_body_that_is_not_json_is_a_documented_415() {
    let server = TestServer::start().await;
    let ana = Console::sign_in(&server, "ana").await;
    let doc = send(server.client.get(server.url("/openapi.json"))).await.body;
    for path in ["/api/v1/bulk/step-up", "/api/v1/me/passkeys", "/api/v1/operations/op_x/resolution"] {
        let reply = send(ana.authed(reqwest::Method::POST, path)).await;
        reply.assert_error(415, "unsupported_media_type");
        let template = path.replace("op_x", "{id}");
        assert!(doc["paths"][&template]["post"]["responses"]["415"].is_object(), "{template} documents its 415");
    }
}

#[tokio::test]
async fn the_limits_the_document_states_are_the_ones_the_server_enforces() {
    let server = TestServer::start().await;
    let ana = Console::sign_in(&server, "ana").await;
    let doc = send(server.client.get(server.url("/openapi.json"))).await.body;
    let ids = &doc["components"]["schemas"]["BulkStepUpRequest"]["properties"]["ids"];
    assert_eq!((ids["minItems"].as_u64(), ids["maxItems"].as_u64()), (Some(1), Some(50)), "{ids}");
    let step_up = |ids: Vec<String>| {
        send(ana.authed(reqwest::Method::POST, "/api/v1/bulk/step-up").json(&serde_json::json!({ "ids": ids })))
    };
    for count in [0, 51] {
        let reply = step_up((0..count).map(|n| format!("prop_{n}")).collect()).await;
        reply.assert_error(422, "validation_failed");
        assert_eq!(reply.body["error"]["details"][0]["field"], "ids", "{count}: {}", reply.text);
    }
    let reason = &doc["components"]["schemas"]["DecisionRequest"]["properties"]["reason"];
    assert!(reason.to_string().contains("\"maxLength\":500"), "{reason}");
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    ana.reject(&id, &"x".repeat(501)).await.assert_error(422, "validation_failed");
}
