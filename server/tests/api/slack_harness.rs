//! A fake Slack on loopback: it records every message posted to it (the
//! incoming webhook and the `response_url`s), can fail, redirect or stall on
//! demand, and signs interaction payloads the way Slack does (written here
//! from Slack's documented scheme, independently of the server's verifier).

#![allow(dead_code)]

use axum::body::Bytes;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::helpers::*;

/// The signing secrets the Slack test servers accept (rotation: both).
pub const OLD_SECRET: &str = "old-signing-secret-0123456789";
pub const NEW_SECRET: &str = "new-signing-secret-9876543210";

#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub body: Value,
}

#[derive(Default)]
struct Shared {
    received: Vec<Received>,
    failing: bool,
}

pub struct FakeSlack {
    pub base: String,
    shared: Arc<Mutex<Shared>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeSlack {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeSlack {
    /// Listens on a random loopback port. Every POST is recorded; `/redirect…`
    /// answers 302 to `/landed`; `/slow…` answers after 10 s; while failing,
    /// everything answers 500 (and is recorded as an attempt).
    pub async fn start() -> FakeSlack {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let app = axum::Router::new().fallback({
            let shared = shared.clone();
            move |uri: Uri, body: Bytes| {
                let shared = shared.clone();
                async move { respond(shared, uri, body).await }
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind fake slack");
        let base = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("fake slack serves");
        });
        FakeSlack { base, shared, task }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn set_failing(&self, failing: bool) {
        self.shared.lock().unwrap().failing = failing;
    }

    /// Every message received on a path starting with `prefix`, in order.
    pub fn received(&self, prefix: &str) -> Vec<Received> {
        self.shared.lock().unwrap().received.iter().filter(|r| r.path.starts_with(prefix)).cloned().collect()
    }

    /// Waits (up to `secs`) until at least `n` messages arrived on `prefix`.
    pub async fn wait_for(&self, prefix: &str, n: usize, secs: u64) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let got = self.received(prefix);
            if got.len() >= n {
                return got;
            }
            assert!(tokio::time::Instant::now() < deadline, "{n} message(s) on {prefix} within {secs} s; got {got:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn respond(shared: Arc<Mutex<Shared>>, uri: Uri, body: Bytes) -> Response {
    let path = uri.path().to_owned();
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let failing = {
        let mut s = shared.lock().unwrap();
        s.received.push(Received { path: path.clone(), body });
        s.failing
    };
    if failing {
        return (StatusCode::INTERNAL_SERVER_ERROR, "down").into_response();
    }
    if path.starts_with("/redirect") {
        return (StatusCode::FOUND, [("location", "/landed")], "").into_response();
    }
    if path.starts_with("/slow") {
        tokio::time::sleep(Duration::from_secs(10)).await;
    }
    (StatusCode::OK, "ok").into_response()
}

/// The server config for a Slack test: acme posts to `/hook/acme`, every
/// other tenant to `/hook/default`; approvals from Slack up to 20,000.00 USD.
pub fn slack_config(slack: &FakeSlack) -> String {
    format!(
        r#"
[slack]
webhook_url = "{default}"
signing_secrets = ["{OLD_SECRET}", "{NEW_SECRET}"]
allowed_hosts = ["127.0.0.1"]
max_direct_approve_minor = {{ USD = 2000000 }}

[slack.webhook_urls]
acme = "{acme}"
"#,
        default = slack.url("/hook/default"),
        acme = slack.url("/hook/acme"),
    )
}

/// `v0=` HMAC-SHA256 over `v0:{timestamp}:{body}`.
pub fn slack_signature(secret: &str, timestamp: &str, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key");
    mac.update(b"v0:");
    mac.update(timestamp.as_bytes());
    mac.update(b":");
    mac.update(body.as_bytes());
    format!("v0={}", hex::encode(mac.finalize().into_bytes()))
}

pub fn now_unix() -> i64 {
    chrono::Utc::now().timestamp()
}

/// The form body of a `block_actions` press, shaped like Slack's.
pub fn press_body(slack_user: &str, action_id: &str, value: &str, response_url: &str) -> String {
    let payload = json!({
        "type": "block_actions",
        "user": {"id": slack_user, "username": slack_user.to_lowercase(), "team_id": "T0TEST"},
        "team": {"id": "T0TEST", "domain": "acme"},
        "api_app_id": "A0TEST",
        "token": "deprecated-verification-token",
        "trigger_id": "1.2.3",
        "container": {"type": "message", "message_ts": "1700000000.000100"},
        "channel": {"id": "C0PAYMENTS", "name": "payments"},
        "response_url": response_url,
        "actions": [{
            "type": "button", "action_id": action_id, "block_id": "decision", "value": value,
            "action_ts": "1700000001.000200", "text": {"type": "plain_text", "text": action_id},
        }],
    });
    serde_urlencoded::to_string([("payload", payload.to_string())]).expect("form")
}

/// POSTs a body to the interactions endpoint with the given headers.
pub async fn post_interaction(
    server: &TestServer,
    body: &str,
    timestamp: Option<&str>,
    signature: Option<&str>,
) -> Reply {
    let mut rb = server
        .client
        .post(server.url("/integrations/slack/interactions"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body.to_owned());
    if let Some(ts) = timestamp {
        rb = rb.header("x-slack-request-timestamp", ts);
    }
    if let Some(sig) = signature {
        rb = rb.header("x-slack-signature", sig);
    }
    send(rb).await
}

/// A press signed now with `secret`, as Slack sends it.
pub async fn press_signed(server: &TestServer, secret: &str, body: &str) -> Reply {
    let ts = now_unix().to_string();
    post_interaction(server, body, Some(&ts), Some(&slack_signature(secret, &ts, body))).await
}

/// The `value` of a decision button for `proposal`.
pub fn button_value(proposal: &Value) -> String {
    format!("{}:{}", proposal["id"].as_str().unwrap(), proposal["request_hash"].as_str().unwrap())
}

/// Links `username` of `tenant` to `slack_user` with `countersign user link-slack`.
pub async fn link_slack(server: &TestServer, tenant: &str, username: &str, slack_user: &str) {
    let args = ["user", "link-slack", "--tenant", tenant, "--username", username, "--slack-user-id", slack_user];
    let (code, stdout, stderr) = server.cli(&args).await;
    assert_eq!(code, 0, "link-slack: {stdout}{stderr}");
}

/// Every `action_id` in a message's blocks.
pub fn action_ids(message: &Value) -> Vec<String> {
    message["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|b| b["elements"].as_array().cloned().unwrap_or_default())
        .filter_map(|e| e["action_id"].as_str().map(str::to_owned))
        .collect()
}

/// Every `text` string anywhere in a message, joined (what a person reads).
pub fn message_text(message: &Value) -> String {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(t)) = m.get("text") {
                    out.push(t.clone());
                }
                m.values().for_each(|x| walk(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(message, &mut out);
    out.join("\n")
}
