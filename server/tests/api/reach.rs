//! Reaching approvers (docs/NOTIFICATIONS.md):
//! Web Push to each device of whoever may approve, checked by a push
//! service stand-in that verifies the VAPID signature with `py_vapid` and
//! decrypts with `http_ece` (`e2e/push_service.py`); email through a real
//! SMTP server (`aiosmtpd`, `e2e/smtp_sink.py`). Nobody who may not
//! approve is told; nothing carries a full account number or a secret; a
//! device its push service calls gone is removed; a reminder before expiry
//! goes out only while the payment still waits.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use crate::console_client::{http_client, pending_for, Console};
use crate::helpers::*;

const PUBLIC_URL: &str = "https://console.example";
const METRICS_TOKEN: &str = "reach-metrics-token-0123456789";

/// Starts a checker from `e2e/` and returns it with its port.
pub(crate) async fn checker(script: &str, args: &[&std::path::Path]) -> Option<(tokio::process::Child, String)> {
    let Some(python) = checkers_python() else {
        eprintln!("SKIPPED: ~/.cache/countersign/venv is missing (scripts/setup.sh --tests)");
        return None;
    };
    let mut cmd = tokio::process::Command::new(python);
    cmd.arg(format!("{}/../e2e/{script}", env!("CARGO_MANIFEST_DIR"))).args(args);
    Some(countersign_testkit::spawn_listening(cmd, "listening on ", Duration::from_secs(30)).await.expect("it starts"))
}

/// The push service stand-in's address.
pub(crate) struct PushService {
    pub(crate) base: String,
}

impl PushService {
    /// A new subscription (endpoint and keys), as a browser would get it.
    pub(crate) async fn subscription(&self, gone: bool) -> Value {
        let url = format!("{}/subscriptions{}", self.base, if gone { "?gone=1" } else { "" });
        http_client().post(url).send().await.unwrap().json().await.unwrap()
    }

    pub(crate) async fn messages(&self) -> Vec<Value> {
        http_client().get(format!("{}/messages", self.base)).send().await.unwrap().json().await.unwrap()
    }

    /// The records for `endpoint`'s subscription.
    pub(crate) async fn for_endpoint(&self, endpoint: &str) -> Vec<Value> {
        let id = endpoint.rsplit('/').next().unwrap();
        self.messages().await.into_iter().filter(|m| m["subscription"] == id).collect()
    }

    /// Waits until `endpoint` has a record that `matches`.
    pub(crate) async fn wait_for(&self, endpoint: &str, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..150 {
            if let Some(m) = self.for_endpoint(endpoint).await.into_iter().find(&matches) {
                return m;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{what}: not received; the push service has {:#?}", self.messages().await);
    }
}

pub(crate) async fn subscribe(console: &Console, subscription: &Value, label: &str) -> Reply {
    let body = with(subscription.clone(), json!({"label": label}));
    send(console.authed(Method::POST, "/api/v1/me/push-subscriptions").json(&body)).await
}

pub(crate) fn about(message: &Value, id: &str) -> bool {
    message["payload"]["proposal_id"] == id
}

/// Nothing a notification shows may name a full account or carry a secret.
pub(crate) fn assert_nothing_secret(text: &str) {
    for secret in [ACME_PAYEE, ACME_SOURCE, ACME_BOT_KEY, "sha256:", "eyJ"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
}

#[tokio::test]
async fn push_reaches_each_device_of_whoever_may_approve_encrypted_and_signed() {
    let Some((_service, port)) = checker("push_service.py", &[]).await else { return };
    let push = PushService { base: format!("http://127.0.0.1:{port}") };
    // Proposals live 40 s; the reminder goes 30 s before: 10 s in.
    let server = TestServer::start_with(&format!(
        "public_url = \"{PUBLIC_URL}\"\n[metrics]\nbearer_token = \"{METRICS_TOKEN}\"\n[proposals]\nttl_secs = 40\n\
         [notifications]\nexpiry_warning_secs = 30\n[notifications.push]\nallowed_hosts = [\"127.0.0.1\"]\n"
    ))
    .await;
    let (ana, ben, maya, vic) = (
        Console::sign_in_from(&server, "ana", PUBLIC_URL).await,
        Console::sign_in_from(&server, "ben", PUBLIC_URL).await,
        Console::sign_in_from(&server, "maya", PUBLIC_URL).await,
        Console::sign_in_from(&server, "vic", PUBLIC_URL).await,
    );

    // Nobody in acme can be reached yet: intake queues nothing for it.
    let unheard = pending_for(&server, 24_000).await;
    let queued: i64 =
        server.scalar(&format!("SELECT COUNT(*) FROM notifications WHERE proposal_id = '{unheard}'")).await;
    assert_eq!(queued, 0, "no notification rows while nobody can be reached");

    // Subscribing: each refusal names its field; CSRF and sign-in as on every console route.
    let phone = push.subscription(false).await;
    for (change, field) in [
        (json!({"endpoint": "https://evil.example/push/1"}), "endpoint"),
        (json!({"endpoint": "http://169.254.169.254/latest"}), "endpoint"),
        (json!({"keys": {"p256dh": "AAAA", "auth": phone["keys"]["auth"]}}), "keys.p256dh"),
        (json!({"keys": {"p256dh": phone["keys"]["p256dh"], "auth": "AAAA"}}), "keys.auth"),
    ] {
        let r = subscribe(&ana, &with(phone.clone(), change), "Phone").await;
        r.assert_error(422, "validation_failed");
        assert_eq!(r.detail_fields(), [field.to_owned()].into(), "{}", r.text);
        assert!(!r.text.contains("evil") && !r.text.contains("169.254"), "the endpoint is not echoed: {}", r.text);
    }
    subscribe(&ana, &phone, "").await.assert_error(422, "validation_failed");
    let r = send(
        ana.with_origin(Method::POST, "/api/v1/me/push-subscriptions")
            .json(&with(phone.clone(), json!({"label": "x"}))),
    )
    .await;
    assert_eq!(r.status, 403, "no CSRF token: {}", r.text);
    let r = send(http_client().post(server.url("/api/v1/me/push-subscriptions")).json(&phone)).await;
    assert_eq!(r.status, 401, "{}", r.text);

    let r = subscribe(&ana, &phone, "Ana's phone").await;
    assert_eq!(r.status, 201, "{}", r.text);
    let ana_device = r.body["id"].as_str().unwrap().to_owned();
    assert!(!r.text.contains(phone["endpoint"].as_str().unwrap()), "the endpoint is never shown back");
    let ben_laptop = push.subscription(false).await;
    let ben_old = push.subscription(true).await;
    assert_eq!(subscribe(&ben, &ben_laptop, "Laptop").await.status, 201);
    assert_eq!(subscribe(&ben, &ben_old, "Old phone").await.status, 201);
    // maya is the agent's own human and vic a viewer: neither may approve.
    let (maya_phone, vic_phone) = (push.subscription(false).await, push.subscription(false).await);
    assert_eq!(subscribe(&maya, &maya_phone, "Phone").await.status, 201);
    assert_eq!(subscribe(&vic, &vic_phone, "Phone").await.status, 201);
    // Someone else's device is not found.
    let r = send(ben.authed(Method::DELETE, &format!("/api/v1/me/push-subscriptions/{ana_device}"))).await;
    r.assert_error(404, "not_found");

    let settings = send(ana.authed(Method::GET, "/api/v1/me/notifications")).await;
    assert_eq!(settings.status, 200, "{}", settings.text);
    let vapid_key = settings.body["vapid_public_key"].as_str().unwrap().to_owned();
    assert_eq!(settings.body["devices"][0]["label"], "Ana's phone");

    // A payment ana and ben may approve: both their devices, nobody else's.
    let small = pending_for(&server, 25_000).await;
    let queued: i64 = server.scalar(&format!("SELECT COUNT(*) FROM notifications WHERE proposal_id = '{small}'")).await;
    assert!(queued >= 1, "someone can be reached now: queued");
    let m = push.wait_for(phone["endpoint"].as_str().unwrap(), "ana's notice", |m| about(m, &small)).await;
    assert!(m.get("error").is_none(), "the push service refused it: {m}");
    let payload = &m["payload"];
    assert_eq!(payload["title"], "Approve 250.00 USD to Northwind Traders GmbH?");
    assert_eq!(payload["url"], format!("{PUBLIC_URL}/proposals/{small}"));
    assert_eq!(payload["kind"], "arrived");
    assert!(payload["body"].as_str().unwrap().contains("New payee"), "risk signals are shown: {payload}");
    assert_eq!(m["vapid"]["aud"], push.base, "VAPID names the push service's origin");
    assert_eq!(m["vapid"]["sub"], PUBLIC_URL);
    assert_eq!(m["vapid"]["k"], vapid_key.as_str(), "signed with the key browsers subscribed with");
    assert_eq!(m["urgency"], "high");
    assert!((1..=40).contains(&m["ttl"].as_i64().unwrap()), "held no longer than the proposal lives: {m}");
    assert_nothing_secret(&payload.to_string());
    let m = push.wait_for(ben_laptop["endpoint"].as_str().unwrap(), "ben's notice", |m| about(m, &small)).await;
    assert!(m.get("error").is_none(), "{m}");

    // The device its push service calls gone (410) is removed.
    push.wait_for(ben_old["endpoint"].as_str().unwrap(), "the gone device's attempt", |m| m["gone"] == true).await;
    let mut devices = Vec::new();
    for _ in 0..50 {
        devices = send(ben.authed(Method::GET, "/api/v1/me/notifications")).await.body["devices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["label"].as_str().unwrap().to_owned())
            .collect();
        if devices.len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(devices, ["Laptop"], "the gone subscription is removed");

    // Over ana's 5,000.00 USD limit: ben only.
    let large = pending_for(&server, 600_000).await;
    push.wait_for(ben_laptop["endpoint"].as_str().unwrap(), "ben's notice of the large one", |m| about(m, &large))
        .await;
    let r = ben.reject(&large, "not this one").await;
    assert!(r.status < 400, "{}", r.text);

    // The reminder before expiry: for the one still waiting, not the one decided.
    let m = push
        .wait_for(phone["endpoint"].as_str().unwrap(), "ana's reminder", |m| {
            about(m, &small) && m["payload"]["kind"] == "expiring"
        })
        .await;
    assert!(m["payload"]["title"].as_str().unwrap().starts_with("Expires in "), "{m}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let all = push.messages().await;
    assert!(!all.iter().any(|m| about(m, &large) && m["payload"]["kind"] == "expiring"), "decided: no reminder");
    assert!(!all
        .iter()
        .any(|m| about(m, &large)
            && m["subscription"] == phone["endpoint"].as_str().unwrap().rsplit('/').next().unwrap()));
    for endpoint in [&maya_phone, &vic_phone] {
        assert_eq!(
            push.for_endpoint(endpoint["endpoint"].as_str().unwrap()).await,
            Vec::<Value>::new(),
            "may not approve: not told"
        );
    }
    assert!(all.iter().all(|m| m.get("error").is_none()), "every message verified and decrypted: {all:#?}");

    // The delay is measured, by channel.
    let metrics = send(http_client().get(server.url("/metrics")).bearer_auth(METRICS_TOKEN)).await.text;
    assert!(
        metrics.lines().any(|l| l.starts_with("countersign_notification_delay_seconds_count{channel=\"push\"}")),
        "{metrics}"
    );

    // The admins' human loop page charts it too.
    apply_user(&server, "acme", "ada", &["admin"], 0).await;
    let ada = Console::sign_in_from(&server, "ada", PUBLIC_URL).await;
    let page = send(ada.authed(Method::GET, "/admin/loop")).await.text;
    let notices = &page[page.find(r#"id="notice-times""#).expect("the notice chart")..];
    assert!(notices.contains(r#"data-channel="push""#), "{notices}");

    // Removing a device stops it.
    let r = send(ana.authed(Method::DELETE, &format!("/api/v1/me/push-subscriptions/{ana_device}"))).await;
    assert_eq!(r.status, 204, "{}", r.text);
    let later = pending_for(&server, 26_000).await;
    push.wait_for(ben_laptop["endpoint"].as_str().unwrap(), "ben's notice of a later one", |m| about(m, &later)).await;
    assert!(!push.for_endpoint(phone["endpoint"].as_str().unwrap()).await.iter().any(|m| about(m, &later)));
}

/// The outside review's finding: a user of another tenant who learnt a
/// device's push endpoint could subscribe it and take it away from its
/// owner, who then stopped being notified. A subscription belongs to one
/// user of one tenant; subscribing an endpoint someone else holds makes a
/// row of one's own and never moves theirs.
#[tokio::test]
async fn subscribing_an_endpoint_another_user_holds_never_takes_it_from_them() {
    let Some((_service, port)) = checker("push_service.py", &[]).await else { return };
    let push = PushService { base: format!("http://127.0.0.1:{port}") };
    let server = TestServer::start_with(&format!(
        "public_url = \"{PUBLIC_URL}\"\n[notifications.push]\nallowed_hosts = [\"127.0.0.1\"]\n"
    ))
    .await;
    let (ana, gus) = (
        Console::sign_in_from(&server, "ana", PUBLIC_URL).await,
        Console::sign_in_from(&server, "gus", PUBLIC_URL).await,
    );
    let phone = push.subscription(false).await;
    assert_eq!(subscribe(&ana, &phone, "Ana's phone").await.status, 201);

    // Gus (globex) subscribes ana's endpoint with keys of his own.
    let theirs = push.subscription(false).await;
    let taken = with(phone.clone(), json!({"keys": theirs["keys"].clone()}));
    let r = subscribe(&gus, &taken, "Not mine").await;
    assert_eq!(r.status, 201, "{}", r.text);
    let devices = |console: &Console| {
        let request = console.authed(Method::GET, "/api/v1/me/notifications");
        async move {
            let body = send(request).await.body;
            body["devices"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["label"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(devices(&ana).await, ["Ana's phone"], "ana keeps her device");
    assert_eq!(devices(&gus).await, ["Not mine"]);
    let rows: i64 = server
        .scalar(&format!(
            "SELECT COUNT(*) FROM push_subscriptions WHERE endpoint = '{}'",
            phone["endpoint"].as_str().unwrap()
        ))
        .await;
    assert_eq!(rows, 2, "one row each");

    // Ana subscribing again replaces her own row only.
    assert_eq!(subscribe(&ana, &phone, "Ana's phone, again").await.status, 201);
    assert_eq!(devices(&ana).await, ["Ana's phone, again"]);
    assert_eq!(devices(&gus).await, ["Not mine"]);

    // And she is still told, with her own keys: the push service decrypts it.
    let id = pending_for(&server, 25_000).await;
    let m = push.wait_for(phone["endpoint"].as_str().unwrap(), "ana's notice", |m| about(m, &id)).await;
    assert!(m.get("error").is_none(), "encrypted to ana's keys: {m}");
}

/// The messages the SMTP server accepted.
fn mails(out: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect()
}

#[tokio::test]
async fn email_goes_to_whoever_may_approve_with_a_link_and_no_account_number() {
    let dir = TestDir::new();
    let out = dir.path().join("mail.jsonl");
    let Some((_sink, port)) = checker("smtp_sink.py", &[&out]).await else { return };
    let server = TestServer::start_with(&format!(
        "public_url = \"{PUBLIC_URL}\"\n[notifications.email]\nsmtp_url = \"smtp://127.0.0.1:{port}\"\n\
         from = \"Countersign <countersign@acme.example>\"\n[notifications.push]\nenabled = false\n"
    ))
    .await;
    let (ana, maya) = (
        Console::sign_in_from(&server, "ana", PUBLIC_URL).await,
        Console::sign_in_from(&server, "maya", PUBLIC_URL).await,
    );
    let set = |console: &Console, email: Value| {
        let request = console.authed(Method::PUT, "/api/v1/me/email").json(&json!({"email": email}));
        send(request)
    };
    let r = set(&ana, json!("not an address")).await;
    r.assert_error(422, "validation_failed");
    assert_eq!(r.detail_fields(), ["email".to_owned()].into());
    let r = set(&ana, json!("ana@acme.example")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["email"], "ana@acme.example");
    assert_eq!(r.body["email_available"], true);
    assert_eq!(set(&maya, json!("maya@acme.example")).await.status, 200);

    let id = pending_for(&server, 25_000).await;
    let mut got = Vec::new();
    for _ in 0..150 {
        got = mails(&out);
        if !got.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(got.len(), 1, "one message: ana's (maya may not approve her agent's payment): {got:#?}");
    let mail = &got[0];
    assert_eq!(mail["rcpt_tos"], json!(["ana@acme.example"]));
    assert_eq!(mail["mail_from"], "countersign@acme.example");
    let data = mail["data"].as_str().unwrap();
    assert!(data.contains("Subject: Approval needed: 250.00 USD to Northwind Traders GmbH"), "{data}");
    assert!(data.contains(&format!("{PUBLIC_URL}/proposals/{id}\r\n")), "a link to the proposal: {data}");
    assert!(data.contains("Hello ana,"), "{data}");
    assert!(data.contains("0007"), "the masked account: {data}");
    // The only link is the proposal's page (sign-in first): no approve-by-link.
    let links: Vec<&str> = data.split_whitespace().filter(|w| w.contains("://")).collect();
    assert_eq!(links, [format!("{PUBLIC_URL}/proposals/{id}")], "{data}");
    assert_nothing_secret(data);

    // Cleared: no more email to ana.
    let r = set(&ana, Value::Null).await;
    assert_eq!(r.body["email"], Value::Null, "{}", r.text);
    let quiet = pending_for(&server, 26_000).await;
    for _ in 0..100 {
        let pending: i64 = server
            .scalar(&format!(
                "SELECT COUNT(*) FROM notifications WHERE proposal_id = '{quiet}' AND kind = 'arrived' AND status = 'pending'"
            ))
            .await;
        if pending == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let sent: i64 = server
        .scalar(&format!("SELECT COUNT(*) FROM notifications WHERE proposal_id = '{quiet}' AND channel = 'email'"))
        .await;
    assert_eq!(sent, 0, "nobody who may approve it has an address now");
    assert_eq!(mails(&out).len(), 1);
}
