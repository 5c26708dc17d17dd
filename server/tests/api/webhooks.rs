//! Signed webhooks: `countersign agent webhook set|rotate|remove|log`, and
//! deliveries to a real HTTP receiver (wiremock) — signature checked here
//! independently, retries after a failure, rotation, the URL rules; the
//! delivery log on the admin page and its Redeliver button.

use hmac::{Hmac, Mac};
use reqwest::header::ORIGIN;
use reqwest::Method;
use serde_json::Value;
use sha2::Sha256;
use std::time::Duration;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::console_client::*;
use crate::helpers::*;

const LOCAL_HOOKS: &str = "[webhooks]\nallow_http_loopback = true\nallowed_hosts = [\"hooks.example.com\"]\n";

/// Runs `countersign agent webhook <args…>` for acme's payout bot: (exit code, secret or output).
async fn webhook(server: &TestServer, args: &[&str]) -> (i32, String) {
    webhook_of(server, "payout-bot", args).await
}

/// [`webhook`] for another of acme's agents.
async fn webhook_of(server: &TestServer, agent: &str, args: &[&str]) -> (i32, String) {
    let mut all = vec!["agent", "webhook"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--tenant", "acme", "--id", agent]);
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

/// Waits until the delivery log has at least `n` rows matching `filter` (an SQL condition).
async fn logged(server: &TestServer, filter: &str, n: i64) {
    let sql = format!("SELECT COUNT(*) FROM webhook_deliveries WHERE {filter}");
    for _ in 0..150 {
        if server.scalar(&sql).await >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("fewer than {n} logged deliveries where {filter}");
}

/// One text value from the server's database.
async fn text(server: &TestServer, sql: &str) -> String {
    one(sql).fetch_one(&server.db().await).await.unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// What a logged attempt's Redeliver button posts to.
fn redeliver_path(delivery: &str) -> String {
    format!("/admin/webhook-deliveries/{delivery}/redeliver")
}

/// The admin page as the server renders it for `console`.
async fn admin_page(console: &Console) -> String {
    let page = send(console.bare(Method::GET, "/admin")).await;
    assert_eq!(page.status, 200, "{}", page.text);
    page.text
}

/// The webhook section of `agent` on a rendered admin page.
#[track_caller]
fn section<'a>(page: &'a str, agent: &str) -> &'a str {
    let start =
        page.find(&format!("data-agent=\"{agent}\"")).unwrap_or_else(|| panic!("no webhook of {agent}: {page}"));
    let rest = &page[start..];
    &rest[..rest.find("</section>").unwrap_or(rest.len())]
}

#[tokio::test]
async fn the_admin_page_shows_each_webhooks_state_and_latest_attempts_but_no_secret() {
    let server = TestServer::start_with(LOCAL_HOOKS).await;
    let receiver = MockServer::start().await;
    Mock::given(method("POST")).and(path("/down")).respond_with(ResponseTemplate::new(503)).mount(&receiver).await;
    Mock::given(method("POST")).and(path("/hook")).respond_with(ResponseTemplate::new(200)).mount(&receiver).await;
    // A receiver may put a token of its own in the query string: never shown.
    let url = format!("{}/hook?token=receiver-token-42", receiver.uri());
    let (code, secret) = webhook(&server, &["set", "--url", &url]).await;
    assert_eq!(code, 0, "{secret}");
    let (code, other_secret) =
        webhook_of(&server, "other-bot", &["set", "--url", &format!("{}/down", receiver.uri())]).await;
    assert_eq!(code, 0, "{other_secret}");
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    let theirs = server.propose_as(ACME_OTHER_KEY, &transfer()).await.body["id"].as_str().unwrap().to_owned();
    logged(&server, "outcome = 'delivered'", 1).await;
    logged(&server, "outcome = 'failed'", 1).await;

    let ada = add_admin(&server, "acme", "ada").await;
    let page = admin_page(&ada).await;
    let delivered = section(&page, "payout-bot");
    let host = receiver.uri().trim_start_matches("http://").to_owned();
    assert!(delivered.contains(&format!("http://{host}/hook")), "host and path: {delivered}");
    assert!(delivered.contains(&id), "the proposal: {delivered}");
    assert!(delivered.contains("data-outcome=\"delivered\""), "{delivered}");
    assert!(delivered.contains("No failed attempt"), "{delivered}");
    let delivery = text(&server, "SELECT id FROM webhook_deliveries WHERE agent_id = 'payout-bot'").await;
    assert!(delivered.contains(&redeliver_path(&delivery)), "a Redeliver button: {delivered}");
    let failing = section(&page, "other-bot");
    assert!(failing.contains(&theirs) && failing.contains("data-outcome=\"failed\""), "{failing}");
    assert!(failing.contains("503"), "the receiver's status: {failing}");
    assert!(failing.contains("failed attempt") && failing.contains("next attempt"), "the stream's state: {failing}");
    for hidden in [&secret[6..], &other_secret[6..], "receiver-token-42"] {
        assert!(!page.contains(hidden), "{hidden} is not on the page");
    }

    // Another tenant's admin sees none of it; a non-admin gets no admin page.
    let gus = Console::sign_in(&server, "gus").await;
    let other_tenant = admin_page(&gus).await;
    assert!(other_tenant.contains("No agent has a webhook"), "{other_tenant}");
    assert!(!other_tenant.contains(&id) && !other_tenant.contains(&host), "{other_tenant}");
    for user in ["ana", "vic"] {
        let denied = send(Console::sign_in(&server, user).await.bare(Method::GET, "/admin")).await;
        assert_eq!(denied.status, 403, "{user}: the page says so with its status too");
        assert!(denied.text.contains("Your role does not allow this page"), "{user}: {}", denied.text);
        assert!(!denied.text.contains(&id) && !denied.text.contains(&host), "{user}: {}", denied.text);
    }
}

#[tokio::test]
async fn redeliver_sends_an_abandoned_proposal_again_with_its_current_state_as_a_new_signed_event() {
    let server = TestServer::start_with("[webhooks]\nallow_http_loopback = true\nmax_attempts = 1\n").await;
    let receiver = MockServer::start().await;
    // Down for the first event, which is abandoned at once (max_attempts = 1).
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&receiver)
        .await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200)).mount(&receiver).await;
    let (_, secret) = webhook(&server, &["set", "--url", &format!("{}/hook", receiver.uri())]).await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    logged(&server, "outcome = 'abandoned'", 1).await;
    assert_eq!(server.cancel(ACME_BOT_KEY, &id).await.status, 200);
    let got = received(&receiver, 2).await;
    logged(&server, "outcome = 'delivered'", 1).await;
    assert_eq!(body(&got[0])["proposal"]["status"], "pending_approval");
    let abandoned = text(&server, "SELECT id FROM webhook_deliveries WHERE outcome = 'abandoned'").await;
    let stream =
        "SELECT cursor_at || ' ' || cursor_id || ' ' || attempts || ' ' || next_attempt_at FROM agent_webhooks";
    let stream_before = text(&server, stream).await;

    let ada = add_admin(&server, "acme", "ada").await;
    let page = admin_page(&ada).await;
    assert!(section(&page, "payout-bot").contains(&redeliver_path(&abandoned)), "{page}");
    let r = ada.form(&redeliver_path(&abandoned), &[]).await;
    assert_eq!(r.status, 303, "{}", r.text);
    let flash = ada.admin_flash().await;
    assert!(flash.contains("Redelivery queued") && flash.contains(&id), "{flash}");

    let got = received(&receiver, 3).await;
    let again = &got[2];
    assert!(verifies(again, &secret), "signed with the secret: {:?}", again.headers);
    let event = body(again);
    assert_eq!(again.headers["countersign-event-id"].to_str().unwrap(), event["event_id"].as_str().unwrap());
    assert_ne!(event["event_id"], body(&got[0])["event_id"], "a new event, not the abandoned one again");
    assert_ne!(event["event_id"], body(&got[1])["event_id"]);
    assert_eq!(event["type"], "proposal");
    assert_eq!(event["proposal"]["id"], id.as_str());
    assert_eq!(event["proposal"]["status"], "cancelled", "the proposal as it is now");

    // Logged as a redelivery; the stream's cursor and attempts did not move; sent once.
    logged(&server, "redelivery_id IS NOT NULL AND outcome = 'delivered'", 1).await;
    assert_eq!(text(&server, stream).await, stream_before);
    let page = admin_page(&ada).await;
    assert!(section(&page, "payout-bot").contains("redelivery, attempt 1"), "{page}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(receiver.received_requests().await.unwrap().len(), 3);

    // Audited with the admin as actor: ids only, no URL, no secret.
    let audited = "SELECT actor || ' ' || data FROM audit_log WHERE action = 'webhook.redelivery.requested'";
    let row = text(&server, audited).await;
    assert!(row.starts_with(&format!("user:{} ", ada.user_id())), "{row}");
    assert!(row.contains(&abandoned), "{row}");
    assert!(!row.contains("127.0.0.1") && !row.contains(&secret[6..]), "{row}");
    assert_eq!(server.audit_actions(&id).await.last().map(String::as_str), Some("webhook.redelivery.requested"));
}

#[tokio::test]
async fn redeliver_is_refused_without_csrf_to_non_admins_and_for_unknown_or_another_tenants_delivery() {
    let server = TestServer::start_with(LOCAL_HOOKS).await;
    let receiver = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200)).mount(&receiver).await;
    webhook(&server, &["set", "--url", &receiver.uri()]).await;
    server.create(&transfer()).await;
    logged(&server, "outcome = 'delivered'", 1).await;
    let delivery = text(&server, "SELECT id FROM webhook_deliveries").await;
    let path = redeliver_path(&delivery);
    let ada = add_admin(&server, "acme", "ada").await;

    // No CSRF token, a wrong one, no session.
    let r = send(ada.with_origin(Method::POST, &path).form(&[("note", "x")])).await;
    assert_eq!(r.status, 403, "no token: {}", r.text);
    let r = send(ada.with_origin(Method::POST, &path).form(&[("csrf_token", "not-the-token")])).await;
    assert_eq!(r.status, 403, "wrong token: {}", r.text);
    let r = send(http_client().post(server.url(&path)).header(ORIGIN, &server.base).form(&[("csrf_token", "x")])).await;
    assert_eq!(r.status, 401, "signed out: {}", r.text);
    // Approvers and viewers are not admins.
    for user in ["ana", "vic"] {
        let r = Console::sign_in(&server, user).await.form(&path, &[]).await;
        assert_eq!(r.status, 403, "{user}: {}", r.text);
    }
    // Another tenant's delivery is answered as an unknown one.
    let gus = Console::sign_in(&server, "gus").await;
    let r = gus.form(&path, &[]).await;
    assert_eq!(r.status, 303, "{}", r.text);
    let flash = gus.admin_flash().await;
    assert!(flash.starts_with("Not saved: there is no such delivery in the log"), "{flash}");
    ada.form(&redeliver_path("whd_0000000000000000000000000"), &[]).await;
    let flash = ada.admin_flash().await;
    assert!(flash.starts_with("Not saved: there is no such delivery in the log"), "{flash}");
    // A deactivated agent is sent nothing.
    let (code, _, err) = server.cli(&["agent", "deactivate", "--tenant", "acme", "--id", "payout-bot"]).await;
    assert_eq!(code, 0, "{err}");
    ada.form(&path, &[]).await;
    let flash = ada.admin_flash().await;
    assert!(flash.starts_with("Not saved: agent payout-bot is deactivated"), "{flash}");
    // An agent whose webhook was removed.
    assert_eq!(webhook(&server, &["remove"]).await.0, 0);
    ada.form(&path, &[]).await;
    let flash = ada.admin_flash().await;
    assert!(flash.starts_with("Not saved: agent payout-bot has no webhook"), "{flash}");

    assert_eq!(server.scalar("SELECT COUNT(*) FROM webhook_redeliveries").await, 0, "nothing queued");
    let audited = "SELECT COUNT(*) FROM audit_log WHERE action = 'webhook.redelivery.requested'";
    assert_eq!(server.scalar(audited).await, 0, "nothing audited");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(receiver.received_requests().await.unwrap().len(), 1, "nothing sent again");
}

#[tokio::test]
async fn a_queued_redelivery_is_retried_on_its_own_and_pressing_again_meanwhile_is_refused() {
    let server = TestServer::start_with(LOCAL_HOOKS).await;
    let receiver = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(500)).mount(&receiver).await;
    webhook(&server, &["set", "--url", &receiver.uri()]).await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    logged(&server, "outcome = 'failed'", 1).await;
    let delivery = text(&server, "SELECT id FROM webhook_deliveries").await;
    let ada = add_admin(&server, "acme", "ada").await;

    ada.form(&redeliver_path(&delivery), &[]).await;
    assert!(ada.admin_flash().await.starts_with("Redelivery queued"));
    ada.form(&redeliver_path(&delivery), &[]).await;
    let flash = ada.admin_flash().await;
    let expected = format!("Not saved: a redelivery of proposal {id} to agent payout-bot is already queued");
    assert!(flash.starts_with(&expected), "{flash}");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM webhook_redeliveries").await, 1);
    // It fails like the stream does and is tried again, counted on itself.
    logged(&server, "redelivery_id IS NOT NULL AND outcome = 'failed'", 2).await;
    assert!(server.scalar("SELECT attempts FROM webhook_redeliveries").await >= 1);
    let page = admin_page(&ada).await;
    assert!(section(&page, "payout-bot").contains("1 redelivery queued"), "{page}");

    // Removing the webhook drops what was queued for it.
    assert_eq!(webhook(&server, &["remove"]).await.0, 0);
    assert_eq!(server.scalar("SELECT COUNT(*) FROM webhook_redeliveries").await, 0);
}
