//! A fake Slack on loopback, built on `wiremock`: it records every message
//! posted to it (the incoming webhook and the `response_url`s) and can fail,
//! redirect or stall on demand. Interaction payloads are signed here the way
//! Slack signs them (written from Slack's documented scheme, independently of
//! the server's verifier): that is not a mock's concern, so it stays ours.
//!
//! "Slack is down" is a switch read by a custom matcher on a mock of the
//! highest priority, not a scoped mock that is dropped when Slack comes back:
//! in wiremock 0.6 a `MockGuard` names its mock by its index in the mounted
//! set, and every request sorts that set by priority, so a guard dropped after
//! a request can deactivate another mock and leave its own answering (a 500
//! that outlives its guard). `MockServer::reset` would also forget the
//! requests received so far, which the crash test counts across the outage.

#![allow(dead_code)]

use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use wiremock::matchers::{method, path_regex};
use wiremock::{Match, Mock, MockServer, Request, ResponseTemplate};

use crate::helpers::*;

/// The signing secrets the Slack test servers accept (rotation: both).
pub const OLD_SECRET: &str = "old-signing-secret-0123456789";
pub const NEW_SECRET: &str = "new-signing-secret-9876543210";

#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub body: Value,
}

pub struct FakeSlack {
    pub base: String,
    server: MockServer,
    down: Arc<AtomicBool>,
}

/// Matches every request while Slack is "down".
struct Down(Arc<AtomicBool>);

impl Match for Down {
    fn matches(&self, _: &Request) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

impl FakeSlack {
    /// Listens on a random loopback port of its own (not wiremock's pool of
    /// reused servers: a server from another test must never reach this
    /// one). Every request is recorded; a POST to `/redirect…` answers 302 to
    /// `/landed`; to `/slow…`, 200 after 10 s; to anything else, 200; while
    /// failing, everything answers 500.
    pub async fn start() -> FakeSlack {
        let server = MockServer::builder().start().await;
        let down = Arc::new(AtomicBool::new(false));
        Mock::given(Down(down.clone()))
            .respond_with(ResponseTemplate::new(500).set_body_string("down"))
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path_regex("^/redirect"))
            .respond_with(ResponseTemplate::new(302).insert_header("location", "/landed"))
            .with_priority(2)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path_regex("^/slow"))
            .respond_with(ResponseTemplate::new(200).set_body_string("ok").set_delay(Duration::from_secs(10)))
            .with_priority(2)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_string("ok"))
            .with_priority(3)
            .mount(&server)
            .await;
        FakeSlack { base: server.uri(), server, down }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// While `failing`, every request is answered 500 (and still recorded).
    pub fn set_failing(&self, failing: bool) {
        self.down.store(failing, Ordering::SeqCst);
    }

    /// Every message received on a path starting with `prefix`, in order
    /// (the body parsed as JSON, `Null` if it is not).
    pub async fn received(&self, prefix: &str) -> Vec<Received> {
        let all = self.server.received_requests().await.expect("request recording is on");
        all.iter()
            .filter(|r| r.url.path().starts_with(prefix))
            .map(|r| Received {
                path: r.url.path().to_owned(),
                body: serde_json::from_slice(&r.body).unwrap_or(Value::Null),
            })
            .collect()
    }

    /// Waits (up to `secs`) until at least `n` messages arrived on `prefix`.
    pub async fn wait_for(&self, prefix: &str, n: usize, secs: u64) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let got = self.received(prefix).await;
            if got.len() >= n {
                return got;
            }
            assert!(tokio::time::Instant::now() < deadline, "{n} message(s) on {prefix} within {secs} s; got {got:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
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
