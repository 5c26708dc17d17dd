//! What every client sees: the OpenAPI description (SPEC §9) and the
//! response headers (SPEC §10), on successes and errors alike.

use serde_json::{json, Value};
use std::collections::BTreeSet;

use crate::console_client::Console;
use crate::helpers::*;

/// The path item for `path`, whether the document lists full paths or puts
/// `/api/v1` in its server URL.
fn path_item<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    let paths = doc["paths"].as_object()?;
    paths.get(path).or_else(|| paths.get(path.trim_start_matches("/api/v1")))
}

/// Follows a local `$ref` (`#/components/...`), if `v` is one.
fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v["$ref"].as_str().and_then(|r| r.strip_prefix('#')) {
        Some(pointer) => doc.pointer(pointer).unwrap_or_else(|| panic!("dangling $ref {pointer}")),
        None => v,
    }
}

#[tokio::test]
async fn openapi_json_is_openapi_3_1_and_describes_every_agent_route() {
    let server = TestServer::start().await;
    let r = send(server.client.get(server.url("/openapi.json"))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.header("content-type").is_some_and(|ct| ct.starts_with("application/json")));
    let doc = &r.body;
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.1")), "OpenAPI 3.1: {}", doc["openapi"]);
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string());
    for (method, path) in [
        ("post", "/api/v1/proposals"),
        ("get", "/api/v1/proposals"),
        ("get", "/api/v1/proposals/{id}"),
        ("post", "/api/v1/proposals/{id}/cancel"),
        ("post", "/api/v1/proposals/{id}/commit"),
    ] {
        let item = path_item(doc, path).unwrap_or_else(|| panic!("{path} is described"));
        let op = &item[method];
        assert!(op.is_object(), "{method} {path} is described");
        assert!(op["responses"].is_object(), "{method} {path} has responses");
    }
    // The long-poll and pagination parameters are part of the contract.
    let names = |item: &Value, method: &str| -> BTreeSet<String> {
        let mut params: Vec<Value> = item["parameters"].as_array().cloned().unwrap_or_default();
        params.extend(item[method]["parameters"].as_array().cloned().unwrap_or_default());
        params.iter().filter_map(|p| resolve(doc, p)["name"].as_str().map(str::to_owned)).collect()
    };
    let get_one = names(path_item(doc, "/api/v1/proposals/{id}").unwrap(), "get");
    assert!(get_one.contains("wait"), "{get_one:?}");
    let list = names(path_item(doc, "/api/v1/proposals").unwrap(), "get");
    for p in ["status", "limit", "cursor"] {
        assert!(list.contains(p), "listing parameter {p}: {list:?}");
    }
    // Reachable without a credential, like any public description.
    assert_eq!(send(server.client.get(server.url("/openapi.json"))).await.status, 200);
}

/// The served document is the one generated from the route registration,
/// and the router serves exactly what it describes: every documented
/// operation is routed (it never gets the router's 404 or 405), and every
/// other method on a documented path is a 405.
#[tokio::test]
async fn the_router_serves_exactly_the_documented_operations() {
    use countersign::http::openapi::{document, AGENT_ROUTES, CONSOLE_ROUTES, PUBLIC_ROUTES};
    let server = TestServer::start().await;
    let doc = send(server.client.get(server.url("/openapi.json"))).await.body;
    let public_url = doc["servers"][0]["url"].as_str().expect("a server URL");
    assert_eq!(doc, serde_json::to_value(document(public_url)).unwrap(), "the served document is the generated one");

    let listed: BTreeSet<(&str, &str)> =
        AGENT_ROUTES.iter().chain(CONSOLE_ROUTES).chain(PUBLIC_ROUTES).copied().collect();
    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.insert((method.to_uppercase(), path.clone()));
        }
    }
    let listed_owned: BTreeSet<(String, String)> = listed.iter().map(|(m, p)| (m.to_string(), p.to_string())).collect();
    assert_eq!(documented, listed_owned, "the document describes exactly the route lists");

    // Documented: routed to its handler, which answers a caller without a
    // credential (401, 403, 415 or 200), never the router's 404 or 405.
    // Not documented: a signed-in caller whose CSRF token and agent key pass
    // every layer still gets the router's 405.
    let console = Console::sign_in(&server, "ana").await;
    let concrete =
        |path: &str| path.replace("{id}", if path.contains("/operations/") { "op_none" } else { "prop_none" });
    let paths: BTreeSet<&str> = listed.iter().map(|(_, p)| *p).collect();
    for path in paths {
        for method in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
            if listed.contains(&(method, path)) {
                let anonymous = server
                    .client
                    .request(method.parse().unwrap(), server.url(&concrete(path)))
                    .header("origin", &server.base);
                let r = send(anonymous).await;
                assert!(
                    r.status != 404 && r.status != 405,
                    "{method} {path} is documented but not routed: {}",
                    r.status
                );
            } else {
                let signed_in = console.authed(method.parse().unwrap(), &concrete(path)).bearer_auth(ACME_BOT_KEY);
                let r = send(signed_in).await;
                assert_eq!(r.status, 405, "{method} {path} is routed but not documented: {}", r.text);
            }
        }
    }

    // The one exemption: `/mcp` is served but not documented here. It speaks
    // the Model Context Protocol (JSON-RPC, described by the protocol and its
    // tools/list; tests/api/mcp.rs), and its tools are calls to the
    // documented agent API above.
    assert!(doc["paths"].get("/mcp").is_none(), "/mcp is not an OpenAPI operation");
    let mcp = send(server.client.post(server.url("/mcp"))).await;
    mcp.assert_error(401, "unauthenticated");
}

#[track_caller]
fn assert_security_headers(r: &Reply) {
    assert_eq!(r.header("x-frame-options"), Some("DENY"), "{:?}", r.headers);
    assert_eq!(r.header("referrer-policy"), Some("no-referrer"), "{:?}", r.headers);
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"), "{:?}", r.headers);
    assert!(r.header("x-request-id").is_some_and(|id| !id.is_empty()), "{:?}", r.headers);
}

#[tokio::test]
async fn api_responses_carry_the_security_headers_and_a_request_id() {
    let server = TestServer::start().await;
    let created = server.propose_as(ACME_BOT_KEY, &transfer()).await;
    assert_eq!(created.status, 201);
    assert_security_headers(&created);
    let id = created.body["id"].as_str().unwrap().to_owned();

    let errors = [
        server.propose_as(ACME_BOT_KEY, &json!({"run_id": 1})).await,
        server.propose_as("cs_test_wrong", &transfer()).await,
        server.get_proposal(GLOBEX_BOT_KEY, &id).await,
        server.propose_raw(Some("application/json"), "{").await,
        server.propose_raw(Some("text/plain"), "{}").await,
        send(server.client.get(server.url("/api/v1/no-such-route")).bearer_auth(ACME_BOT_KEY)).await,
    ];
    let mut ids = BTreeSet::new();
    for r in &errors {
        assert_security_headers(r);
        assert!(r.status >= 400, "{}", r.text);
        assert_envelope(&r.body, r.body["error"]["code"].as_str().unwrap_or("<missing>"));
        assert_eq!(
            r.header("x-request-id"),
            r.body["error"]["request_id"].as_str(),
            "header and body name one request"
        );
        ids.insert(r.header("x-request-id").unwrap().to_owned());
    }
    assert_eq!(ids.len(), errors.len(), "every request has its own id");

    let etag = server.get_proposal(ACME_BOT_KEY, &id).await.header("etag").unwrap().to_owned();
    let not_modified =
        send(server.get(&format!("/api/v1/proposals/{id}"), ACME_BOT_KEY).header("If-None-Match", etag)).await;
    assert_eq!(not_modified.status, 304);
    assert_security_headers(&not_modified);
    for r in [
        server.get_proposal(ACME_BOT_KEY, &id).await,
        server.list(ACME_BOT_KEY, "").await,
        server.cancel(ACME_BOT_KEY, &id).await,
        send(server.client.get(server.url("/openapi.json"))).await,
    ] {
        assert!(r.status < 300, "{}", r.text);
        assert_security_headers(&r);
    }
}

#[tokio::test]
async fn an_unknown_api_route_is_a_404_envelope() {
    let server = TestServer::start().await;
    let r = send(server.client.get(server.url("/api/v1/transfers")).bearer_auth(ACME_BOT_KEY)).await;
    r.assert_error(404, "not_found");
}

/// The in-process harness (helpers.rs) and the library's entry point it
/// runs (`startup::bind`, `Bound::serve_until`) keep working, whichever way
/// the rest of the suite runs: the API, the console and the workers.
#[tokio::test]
async fn the_server_library_serves_in_process() {
    let server = TestServer::start_in_process_with("").await;
    assert_eq!(send(server.client.get(server.url("/healthz"))).await.status, 200);
    let p = server.create(&transfer()).await;
    assert_eq!(p["status"], "pending_approval", "{p}");
    let listed = server.all_ids(ACME_BOT_KEY).await;
    assert_eq!(listed, [p["id"].as_str().unwrap()]);
    let login = send(server.client.get(server.url("/login"))).await;
    assert_eq!(login.status, 200, "{}", login.text);
    assert!(login.text.contains("<script"), "the console page renders: {}", login.text);
    // The fixture was applied by the library: globex exists, and is not acme.
    assert_eq!(server.list(GLOBEX_BOT_KEY, "limit=10").await.body["data"], json!([]));
}
