//! The strict request schema and the transport-level errors of
//! `POST /api/v1/proposals` (SPEC §3, §9): every refusal uses the error
//! envelope and a 422 names every offending field.

use serde_json::json;
use std::collections::BTreeSet;

use crate::helpers::*;

fn set(fields: &[&str]) -> BTreeSet<String> {
    fields.iter().map(|f| f.to_string()).collect()
}

/// Proposes `body`, expects 422 `validation_failed` naming exactly `fields`,
/// and checks nothing was stored.
async fn refused(server: &TestServer, body: &serde_json::Value, fields: &[&str]) {
    let r = server.propose_as(ACME_BOT_KEY, body).await;
    r.assert_error(422, "validation_failed");
    assert_eq!(r.detail_fields(), set(fields), "details name every offending field: {}", r.text);
    for d in r.body["error"]["details"].as_array().unwrap() {
        assert!(d["message"].as_str().is_some_and(|m| !m.is_empty()), "each detail explains itself: {d}");
    }
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, 0, "nothing stored for {body}");
}

#[tokio::test]
async fn identity_fields_in_the_body_are_unknown_fields() {
    let server = TestServer::start().await;
    let body = with(transfer(), json!({"tenant": "globex", "user_id": "usr_1"}));
    refused(&server, &body, &["tenant", "user_id"]).await;
    refused(&server, &with(transfer(), json!({"agent_id": "other-bot"})), &["agent_id"]).await;
}

#[tokio::test]
async fn float_amount_is_refused() {
    let server = TestServer::start().await;
    refused(&server, &with(transfer(), json!({"amount_minor": 2500.0})), &["amount_minor"]).await;
    // Raw, so no serializer can turn it into an integer on the way.
    let raw = transfer().to_string().replace("25000", "2.5e4");
    let r = server.propose_raw(Some("application/json"), raw).await;
    r.assert_error(422, "validation_failed");
    assert_eq!(r.detail_fields(), set(&["amount_minor"]));
}

#[tokio::test]
async fn string_amount_is_refused() {
    let server = TestServer::start().await;
    refused(&server, &with(transfer(), json!({"amount_minor": "2500"})), &["amount_minor"]).await;
}

#[tokio::test]
async fn wrong_types_are_refused() {
    let server = TestServer::start().await;
    let body = with(transfer(), json!({"run_id": 42, "reference": ["Invoice"], "currency": true}));
    refused(&server, &body, &["run_id", "reference", "currency"]).await;
    // A body that is JSON but not an object is not a proposal request.
    for raw in ["[]", "\"transfer\"", "42", "null"] {
        let r = server.propose_raw(Some("application/json"), raw).await;
        r.assert_error(422, "validation_failed");
    }
}

#[tokio::test]
async fn missing_required_fields_are_all_named() {
    let server = TestServer::start().await;
    refused(
        &server,
        &json!({}),
        &["run_id", "amount_minor", "currency", "source_account", "destination", "purpose_code"],
    )
    .await;
    refused(&server, &with(transfer(), json!({"run_id": null, "destination": null})), &["run_id", "destination"]).await;
}

#[tokio::test]
async fn zero_amount_is_refused() {
    let server = TestServer::start().await;
    refused(&server, &with(transfer(), json!({"amount_minor": 0})), &["amount_minor"]).await;
}

#[tokio::test]
async fn negative_amount_is_refused() {
    let server = TestServer::start().await;
    refused(&server, &with(transfer(), json!({"amount_minor": -2500})), &["amount_minor"]).await;
}

#[tokio::test]
async fn amount_above_the_currency_cap_is_refused() {
    let server = TestServer::start().await;
    refused(&server, &with(transfer(), json!({"amount_minor": 100_000_001u64})), &["amount_minor"]).await;
    refused(&server, &with(transfer(), json!({"amount_minor": u64::MAX})), &["amount_minor"]).await;
    // An integer beyond any machine range is still just out of range.
    let raw = transfer().to_string().replace("25000", "18446744073709551616");
    let r = server.propose_raw(Some("application/json"), raw).await;
    r.assert_error(422, "validation_failed");
    assert_eq!(r.detail_fields(), set(&["amount_minor"]));
    // The cap itself is allowed.
    let r = server.propose_as(ACME_BOT_KEY, &with(transfer(), json!({"amount_minor": 100_000_000}))).await;
    assert_eq!(r.status, 201, "{}", r.text);
}

#[tokio::test]
async fn bad_patterns_are_all_named_in_one_response() {
    let server = TestServer::start().await;
    let body = json!({
        "run_id": "run 42!",
        "kind": "gift",
        "amount_minor": 25000,
        "currency": "USD",
        "source_account": "acct_short",
        "destination": "iban_DE0012",
        "reference": "line one\nline two",
        "purpose_code": "bribe",
        "invoice_id": "inv/1842"
    });
    refused(
        &server,
        &body,
        &["run_id", "kind", "source_account", "destination", "reference", "purpose_code", "invoice_id"],
    )
    .await;
}

#[tokio::test]
async fn field_limits_are_enforced() {
    let server = TestServer::start().await;
    let long_reference = "x".repeat(141);
    let long_run = "r".repeat(129);
    let long_invoice = "i".repeat(65);
    let body = with(
        transfer(),
        json!({"reference": long_reference, "run_id": long_run, "invoice_id": long_invoice, "currency": "XXX"}),
    );
    refused(&server, &body, &["reference", "run_id", "invoice_id", "currency"]).await;
    // A currency that exists but is not on the deployment's allowlist.
    refused(&server, &with(transfer(), json!({"currency": "CHF"})), &["currency"]).await;
    // Reversal-only fields are forbidden on a transfer.
    refused(
        &server,
        &with(transfer(), json!({"transfer_id": "prop_x", "reason_code": "duplicate"})),
        &["transfer_id", "reason_code"],
    )
    .await;
    // The reference limit counts characters, not bytes.
    refused(&server, &with(transfer(), json!({"reference": "é".repeat(141)})), &["reference"]).await;
    // The limits themselves are allowed.
    let body = with(
        transfer(),
        json!({"reference": "x".repeat(140), "run_id": "r".repeat(128), "invoice_id": "i".repeat(64)}),
    );
    let r = server.propose_as(ACME_BOT_KEY, &body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let body =
        with(transfer(), json!({"reference": "é".repeat(140), "run_id": "run_1.2:3-X", "invoice_id": "INV_7-a"}));
    let r = server.propose_as(ACME_BOT_KEY, &body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["canonical_request"]["reference"], "é".repeat(140));
}

#[tokio::test]
async fn destination_not_in_the_registry_is_unknown_destination() {
    let server = TestServer::start().await;
    let r = server.propose_as(ACME_BOT_KEY, &with(transfer(), json!({"destination": "acct_nobody0000000001"}))).await;
    r.assert_error(422, "unknown_destination");
    assert!(!r.text.contains("acct_nobody0000000001"), "the full account is not echoed: {}", r.text);
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, 0);
}

#[tokio::test]
async fn a_payee_of_another_tenant_is_unknown_destination() {
    let server = TestServer::start().await;
    let r = server.propose_as(ACME_BOT_KEY, &with(transfer(), json!({"destination": GLOBEX_PAYEE}))).await;
    r.assert_error(422, "unknown_destination");
    assert!(!r.text.contains("Globex Payee"), "the other tenant's registry does not leak: {}", r.text);
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, 0);
}

#[tokio::test]
async fn malformed_json_is_400_invalid_json() {
    let server = TestServer::start().await;
    for raw in ["{", "{\"run_id\": }", "", "{\"run_id\": \"a\"} trailing", "{'run_id': 'a'}"] {
        let r = server.propose_raw(Some("application/json"), raw).await;
        r.assert_error(400, "invalid_json");
    }
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, 0);
}

#[tokio::test]
async fn deeply_nested_json_is_400_invalid_json_and_the_server_survives() {
    let server = TestServer::start().await;
    let deep = format!("{{\"run_id\": {}{}}}", "[".repeat(30_000), "]".repeat(30_000));
    let r = server.propose_raw(Some("application/json"), deep).await;
    assert!(r.status == 400 || r.status == 422, "refused as malformed or invalid: {} {}", r.status, r.text);
    let r = server.propose_raw(Some("application/json"), "[".repeat(60_000)).await;
    r.assert_error(400, "invalid_json");
    // Still serving.
    let r = server.propose_as(ACME_BOT_KEY, &transfer()).await;
    assert_eq!(r.status, 201, "{}", r.text);
}

#[tokio::test]
async fn duplicate_member_names_are_400_invalid_json() {
    let server = TestServer::start().await;
    let raw = r#"{"run_id": "run-42", "amount_minor": 25000, "amount_minor": 2500000, "currency": "USD",
        "source_account": "acct_0123456789abcdef", "destination": "ba_northwind0007",
        "reference": "Invoice 1842", "purpose_code": "vendor"}"#;
    let r = server.propose_raw(Some("application/json"), raw).await;
    r.assert_error(400, "invalid_json");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, 0);
}

#[tokio::test]
async fn body_over_64_kib_is_413_payload_too_large() {
    let server = TestServer::start().await;
    // Pad a valid body with spaces (still valid JSON) to a given size.
    let base = transfer().to_string();
    let padded = |len: usize| format!("{}{}", base, " ".repeat(len - base.len()));

    // Exactly 64 KiB is not "over".
    let r = server.propose_raw(Some("application/json"), padded(64 * 1024)).await;
    assert_eq!(r.status, 201, "{}", r.text);

    // The server closes the connection after refusing an oversized body
    // unread, so each of these goes on a connection of its own.
    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let post = |body: String| {
        client
            .post(server.url("/api/v1/proposals"))
            .bearer_auth(ACME_BOT_KEY)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
    };
    let r = send(post(padded(64 * 1024 + 1))).await;
    r.assert_error(413, "payload_too_large");
    let huge = with(transfer(), json!({"reference": "x".repeat(200 * 1024), "run_id": "huge"})).to_string();
    let r = send(post(huge)).await;
    r.assert_error(413, "payload_too_large");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, 1, "only the at-limit body was proposed");
}

/// Sends a chunked request (no Content-Length) over a raw connection;
/// returns the status code and the body text.
async fn raw_chunked_post(server: &TestServer, body: &[u8]) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = server.base.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.expect("connect");
    let head = format!(
        "POST /api/v1/proposals HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {ACME_BOT_KEY}\r\n\
         Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    for chunk in body.chunks(8 * 1024) {
        let frame = [format!("{:x}\r\n", chunk.len()).as_bytes(), chunk, b"\r\n"].concat();
        if stream.write_all(&frame).await.is_err() {
            break; // the server may answer and close before reading it all
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response).await;
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn chunked_body_over_64_kib_is_413_payload_too_large() {
    let server = TestServer::start().await;
    let big = with(transfer(), json!({"reference": "x".repeat(100 * 1024)})).to_string();
    let (status, body) = raw_chunked_post(&server, big.as_bytes()).await;
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("payload_too_large"), "{body}");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, 0);
    // A small chunked body is fine.
    let (status, body) = raw_chunked_post(&server, transfer().to_string().as_bytes()).await;
    assert_eq!(status, 201, "{body}");
}

#[tokio::test]
async fn text_plain_is_415_unsupported_media_type() {
    let server = TestServer::start().await;
    let r = server.propose_raw(Some("text/plain"), transfer().to_string()).await;
    r.assert_error(415, "unsupported_media_type");
    let r = server.propose_raw(None, transfer().to_string()).await;
    r.assert_error(415, "unsupported_media_type");
    let r = server.propose_raw(Some("application/x-www-form-urlencoded"), "run_id=run-42").await;
    r.assert_error(415, "unsupported_media_type");
    // Parameters on the JSON media type are fine.
    let r = server.propose_raw(Some("application/json; charset=utf-8"), transfer().to_string()).await;
    assert_eq!(r.status, 201, "{}", r.text);
}

#[tokio::test]
async fn no_key_is_401_unauthenticated() {
    let server = TestServer::start().await;
    let r = send(server.client.post(server.url("/api/v1/proposals")).json(&transfer())).await;
    r.assert_error(401, "unauthenticated");
    let r = send(server.client.get(server.url("/api/v1/proposals"))).await;
    r.assert_error(401, "unauthenticated");
    // A non-Bearer scheme is no key either.
    let r = send(
        server.client.get(server.url("/api/v1/proposals")).header("authorization", format!("Basic {ACME_BOT_KEY}")),
    )
    .await;
    r.assert_error(401, "unauthenticated");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, 0);
}

#[tokio::test]
async fn wrong_key_is_401_unauthenticated() {
    let server = TestServer::start().await;
    for key in ["cs_test_not0a0real0key00000000000000000000", "x", &ACME_BOT_KEY[..ACME_BOT_KEY.len() - 1]] {
        let r = server.propose_as(key, &transfer()).await;
        r.assert_error(401, "unauthenticated");
        let r = server.list(key, "").await;
        r.assert_error(401, "unauthenticated");
    }
    assert_eq!(server.scalar("SELECT COUNT(*) FROM proposals").await, 0);
}
