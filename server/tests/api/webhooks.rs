//! Signed webhooks: `countersign agent webhook set|rotate|remove|log`, and
//! deliveries to a real HTTP receiver (wiremock) — signature checked here
//! independently, retries after a failure, rotation, the URL rules.

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use std::time::Duration;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::helpers::*;

const LOCAL_HOOKS: &str = "[webhooks]\nallow_http_loopback = true\nallowed_hosts = [\"hooks.example.com\"]\n";

/// Runs `countersign agent webhook <args…>` for acme's payout bot: (exit code, secret or output).
async fn webhook(server: &TestServer, args: &[&str]) -> (i32, String) {
    let mut all = vec!["agent", "webhook"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--tenant", "acme", "--id", "payout-bot"]);
    let (code, out, err) = server.cli(&all).await;
    let secret = out.split("whsec_").nth(1).map(|s| format!("whsec_{}", s.trim()));
    (code, secret.unwrap_or(format!("{out}{err}")))
}

/// The `v1` signatures of a request that verify with `secret` over `t.body`.
fn verifies(request: &Request, secret: &str) -> bool {
    let header = request.headers.get("countersign-signature").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let t = header.split(',').find_map(|p| p.strip_prefix("t=")).unwrap_or_default();
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(t.as_bytes());
    mac.update(b".");
    mac.update(&request.body);
    let expected = hex::encode(mac.finalize().into_bytes());
    let fresh = t.parse::<i64>().is_ok_and(|t| (chrono::Utc::now().timestamp() - t).abs() < 60);
    fresh && header.split(',').filter_map(|p| p.strip_prefix("v1=")).any(|v| v == expected)
}

/// The requests `receiver` got, waiting until there are at least `n`.
async fn received(receiver: &MockServer, n: usize) -> Vec<Request> {
    for _ in 0..150 {
        let got = receiver.received_requests().await.unwrap_or_default();
        if got.len() >= n {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("fewer than {n} deliveries arrived");
}

fn body(request: &Request) -> Value {
    serde_json::from_slice(&request.body).unwrap()
}

#[tokio::test]
async fn each_change_is_posted_signed_and_a_failure_is_retried_until_delivered() {
    let server = TestServer::start_with(LOCAL_HOOKS).await;
    let receiver = MockServer::start().await;
    // The first delivery fails; later ones succeed.
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&receiver)
        .await;
    Mock::given(method("POST")).and(path("/hook")).respond_with(ResponseTemplate::new(200)).mount(&receiver).await;
    let (code, secret) = webhook(&server, &["set", "--url", &format!("{}/hook", receiver.uri())]).await;
    assert_eq!(code, 0, "{secret}");
    assert!(secret.starts_with("whsec_") && secret.len() == "whsec_".len() + 64, "{secret}");

    // Its creation (refused once, then retried) and its cancellation.
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    received(&receiver, 2).await;
    assert_eq!(server.cancel(ACME_BOT_KEY, &id).await.status, 200);
    let got = received(&receiver, 3).await;
    for request in &got[..3] {
        assert!(verifies(request, &secret), "signed with the secret: {:?}", request.headers);
        let event = body(request);
        assert_eq!(event["type"], "proposal");
        assert_eq!(event["proposal"]["id"], id.as_str());
        assert_eq!(request.headers["countersign-event-id"].to_str().unwrap(), event["event_id"].as_str().unwrap());
    }
    assert_eq!(body(&got[0])["event_id"], body(&got[1])["event_id"], "the retry is the same event");
    assert_eq!(body(&got[1])["proposal"]["status"], "pending_approval");
    assert_eq!(body(&got[2])["proposal"]["status"], "cancelled");
    assert_ne!(body(&got[2])["event_id"], body(&got[1])["event_id"]);
    // Another agent's proposal is not this agent's webhook's business.
    let theirs = server.propose_as(ACME_OTHER_KEY, &transfer()).await.body["id"].as_str().unwrap().to_owned();
    assert_eq!(server.cancel(ACME_OTHER_KEY, &theirs).await.status, 200);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(receiver.received_requests().await.unwrap().len(), 3);

    let (code, log) = webhook(&server, &["log"]).await;
    assert_eq!(code, 0);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 3, "{log}");
    assert!(lines[0].contains("delivered") && lines[0].contains("HTTP 200"), "newest first: {log}");
    assert!(lines[2].contains("failed") && lines[2].contains("HTTP 503"), "{log}");
    let audit = server.scalar("SELECT COUNT(*) FROM audit_log WHERE action = 'registry.agent.webhook_set'").await;
    assert_eq!(audit, 1);
    let leaked = server.scalar(&format!("SELECT COUNT(*) FROM audit_log WHERE data LIKE '%{}%'", &secret[6..])).await;
    assert_eq!(leaked, 0, "the secret is not in the audit trail");
}

#[tokio::test]
async fn during_a_rotation_both_secrets_sign_and_removal_stops_deliveries() {
    let server = TestServer::start_with(LOCAL_HOOKS).await;
    let receiver = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(204)).mount(&receiver).await;
    let (_, old) = webhook(&server, &["set", "--url", &receiver.uri()]).await;
    let (code, new) = webhook(&server, &["rotate"]).await;
    assert_eq!(code, 0, "{new}");
    assert_ne!(old, new);
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    // Wait for the creation's delivery: a cancellation before it would be
    // coalesced into one event carrying the latest state (by design).
    received(&receiver, 1).await;
    assert_eq!(server.cancel(ACME_BOT_KEY, &id).await.status, 200);
    let got = received(&receiver, 2).await;
    assert!(verifies(&got[1], &new) && verifies(&got[1], &old), "both secrets sign");
    assert!(!verifies(&got[1], "whsec_someone_else"));

    assert_eq!(webhook(&server, &["remove"]).await.0, 0);
    let other = server.create(&with(transfer(), serde_json::json!({"run_id": "after-removal"}))).await;
    assert_eq!(server.cancel(ACME_BOT_KEY, other["id"].as_str().unwrap()).await.status, 200);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(receiver.received_requests().await.unwrap().len(), 2, "nothing after removal");
}

#[tokio::test]
async fn only_https_urls_to_allowed_hosts_can_be_set() {
    let server = TestServer::start_with("[webhooks]\nallowed_hosts = [\"hooks.example.com\"]\n").await;
    for url in [
        "http://hooks.example.com/x",
        "https://evil.example.net/x",
        "http://127.0.0.1:9/x",
        "https://u:p@hooks.example.com/",
    ] {
        let (code, out) = webhook(&server, &["set", "--url", url]).await;
        assert_eq!(code, 1, "{url}: {out}");
        assert!(out.contains("webhook URL refused"), "{url}: {out}");
    }
    assert_eq!(webhook(&server, &["set", "--url", "https://hooks.example.com/countersign"]).await.0, 0);
    assert_eq!(server.scalar("SELECT COUNT(*) FROM agent_webhooks").await, 1);
}
