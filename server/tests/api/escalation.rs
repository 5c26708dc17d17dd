//! Escalation that fails closed (docs/NOTIFICATIONS.md):
//! the tenant's rule reminds the approvers after N seconds and escalates to
//! a named group after M; quiet hours hold back arrivals and reminders but
//! not an escalation; the queue and the detail page count down and say who
//! was told; and a proposal nobody decides ends `expired`, never approved,
//! with the reason in the agent's status. Push goes through the stand-in
//! that verifies and decrypts with `py_vapid` and `http_ece`.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use crate::console_client::{http_client, pending_for, status_of, Console};
use crate::helpers::*;
use crate::human_loop::{cell, row_of};
use crate::reach::{about, assert_nothing_secret, checker, subscribe, PushService};

const PUBLIC_URL: &str = "https://console.example";
const METRICS_TOKEN: &str = "escalation-metrics-token-0123456789";

/// Quiet hours around now, in UTC: from an hour ago to two hours from now.
fn quiet_now() -> String {
    let now = chrono::Utc::now();
    let hm = |t: chrono::DateTime<chrono::Utc>| t.format("%H:%M").to_string();
    format!("{}-{}", hm(now - chrono::Duration::hours(1)), hm(now + chrono::Duration::hours(2)))
}

async fn set_quiet(console: &Console, body: Value) -> Reply {
    send(console.authed(Method::PUT, "/api/v1/me/quiet-hours").json(&body)).await
}

#[tokio::test]
async fn a_rule_reminds_then_escalates_to_its_group_through_quiet_hours_and_expiry_never_approves() {
    let Some((_service, port)) = checker("push_service.py", &[]).await else { return };
    let push = PushService { base: format!("http://127.0.0.1:{port}") };
    // Reminder at 2 s, escalation to treasury (ana; maya, who may not
    // approve the agent's payments) at 4 s, expiry at 12 s.
    let server = TestServer::start_with(&format!(
        "public_url = \"{PUBLIC_URL}\"\n[metrics]\nbearer_token = \"{METRICS_TOKEN}\"\n\
         [proposals]\nttl_secs = 12\nexpiry_sweep_secs = 1\n\
         [notifications.push]\nallowed_hosts = [\"127.0.0.1\"]\n\
         [tenants.acme.approval_groups]\ntreasury = [\"ana\", \"maya\"]\n\
         [[tenants.acme.escalation]]\nremind_after_secs = 2\nescalate_after_secs = 4\nescalate_to = \"treasury\"\n"
    ))
    .await;
    let (ana, ben, maya) = (
        Console::sign_in_from(&server, "ana", PUBLIC_URL).await,
        Console::sign_in_from(&server, "ben", PUBLIC_URL).await,
        Console::sign_in_from(&server, "maya", PUBLIC_URL).await,
    );
    let (ana_phone, ben_phone, maya_phone) =
        (push.subscription(false).await, push.subscription(false).await, push.subscription(false).await);
    for (who, device) in [(&ana, &ana_phone), (&ben, &ben_phone), (&maya, &maya_phone)] {
        assert_eq!(subscribe(who, device, "Phone").await.status, 201);
    }

    // Quiet hours: every refusal names its field; CSRF as everywhere.
    let hours = quiet_now();
    for (body, field) in [
        (json!({"time_zone": "Mars/Olympus", "hours": hours}), "time_zone"),
        (json!({"time_zone": "UTC", "hours": "22:00"}), "hours"),
        (json!({"time_zone": "UTC", "hours": "07:00-07:00"}), "hours"),
        (json!({"time_zone": null, "hours": hours}), "time_zone"),
    ] {
        let r = set_quiet(&ana, body).await;
        r.assert_error(422, "validation_failed");
        assert_eq!(r.detail_fields(), [field.to_owned()].into(), "{}", r.text);
    }
    let r =
        send(ana.with_origin(Method::PUT, "/api/v1/me/quiet-hours").json(&json!({"time_zone": "UTC", "hours": hours})))
            .await;
    assert_eq!(r.status, 403, "no CSRF token: {}", r.text);
    let r = set_quiet(&ana, json!({"time_zone": "UTC", "hours": hours})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["quiet_hours"], json!({"time_zone": "UTC", "hours": hours}));

    let id = pending_for(&server, 25_000).await;
    let ben_endpoint = ben_phone["endpoint"].as_str().unwrap();
    let ana_endpoint = ana_phone["endpoint"].as_str().unwrap();
    let id_ = id.as_str();
    let kind = |k: &'static str| move |m: &Value| about(m, id_) && m["payload"]["kind"] == k;
    let kind_of = |m: &Value| m["payload"]["kind"].as_str().unwrap_or_default().to_owned();

    // Before the escalation, the queue counts down to it.
    let queue = send(ben.authed(Method::GET, "/")).await.text;
    let row = &queue[queue.find(&format!("data-proposal=\"{id}\"")).expect("listed")..];
    assert!(row[..row.find("</tr>").unwrap()].contains(r#"data-reach="escalates""#), "{row}");

    // ben hears of it, then is reminded; ana is quiet, so hears of neither.
    push.wait_for(ben_endpoint, "ben's arrival", kind("arrived")).await;
    let reminder = push.wait_for(ben_endpoint, "ben's reminder", kind("reminder")).await;
    assert_eq!(reminder["payload"]["title"], "Still waiting: 250.00 USD to Northwind Traders GmbH");
    // The escalation reaches ana through her quiet hours.
    let escalated = push.wait_for(ana_endpoint, "ana's escalation", kind("escalated")).await;
    assert!(escalated.get("error").is_none(), "verified and decrypted: {escalated}");
    assert_eq!(escalated["payload"]["title"], "Escalated to you: 250.00 USD to Northwind Traders GmbH");
    assert_eq!(escalated["payload"]["url"], format!("{PUBLIC_URL}/proposals/{id}"));
    assert_nothing_secret(&escalated["payload"].to_string());
    let to_ana: Vec<String> =
        push.for_endpoint(ana_endpoint).await.iter().filter(|m| about(m, &id)).map(kind_of).collect();
    assert_eq!(to_ana, ["escalated"], "quiet hours held back the arrival and the reminder, not the escalation");
    let to_ben: Vec<String> =
        push.for_endpoint(ben_endpoint).await.iter().filter(|m| about(m, &id)).map(kind_of).collect();
    assert!(!to_ben.contains(&"escalated".to_owned()), "ben is not in treasury: {to_ben:?}");
    assert_eq!(
        push.for_endpoint(maya_phone["endpoint"].as_str().unwrap()).await,
        Vec::<Value>::new(),
        "maya is in treasury but may not approve her agent's payment: never told"
    );

    // Audited, once, with the group; still waiting: nothing approved it.
    let escalations = server.audit_actions_where("proposal.escalated").await;
    assert_eq!(escalations.len(), 1, "{escalations:?}");
    assert_eq!(escalations[0]["actor"], "system:escalation");
    assert_eq!(escalations[0]["data"]["to"], "treasury");
    assert_eq!(status_of(&server, &id).await, "pending_approval");

    // The detail page: escalated, and who was told how (ana's quiet hours said).
    let html = send(ben.authed(Method::GET, &format!("/proposals/{id}"))).await.text;
    assert!(html.contains(r#"id="escalated" data-group="treasury""#), "{html}");
    let told = &html[html.find(r#"id="notified""#).expect("who was told")..];
    let ben_line = &told[told.find(r#"data-user="ben""#).expect("ben listed")..];
    assert!(ben_line[..ben_line.find("</li>").unwrap()].contains("by push"), "{told}");
    let ana_line = &told[told.find(r#"data-user="ana""#).expect("ana listed")..];
    let ana_line = &ana_line[..ana_line.find("</li>").unwrap()];
    assert!(ana_line.contains("(escalated)") && ana_line.contains("quiet hours"), "{ana_line}");
    assert!(!told.contains(r#"data-user="maya""#), "{told}");
    let queue = send(ben.authed(Method::GET, "/")).await.text;
    let row = &queue[queue.find(&format!("data-proposal=\"{id}\"")).expect("listed")..];
    assert!(row[..row.find("</tr>").unwrap()].contains(r#"data-reach="escalated""#), "{row}");

    // Nobody decides: it ends expired, with the reason, and was never approved.
    let mut status = String::new();
    for _ in 0..200 {
        status = status_of(&server, &id).await;
        if status == "expired" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, "expired");
    let agent_view = server.get_proposal(ACME_BOT_KEY, &id).await.body;
    assert_eq!(agent_view["status_reason"]["code"], "no_decision", "{agent_view}");
    assert!(agent_view["status_reason"]["message"].as_str().unwrap().contains("never approves by default"));
    assert_eq!(agent_view["approvals"], json!([]), "{agent_view}");
    assert!(agent_view["approval_token"].is_null());

    // Counted: the metric and the admins' human loop page.
    let metrics = send(http_client().get(server.url("/metrics")).bearer_auth(METRICS_TOKEN)).await.text;
    assert!(metrics.lines().any(|l| l == "countersign_escalations_total 1"), "{metrics}");
    apply_user(&server, "acme", "ada", &["admin"], 0).await;
    let ada = Console::sign_in_from(&server, "ada", PUBLIC_URL).await;
    let page = send(ada.authed(Method::GET, "/admin/loop")).await.text;
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert_eq!(cell(row_of(&page, &today), "escalations"), "1", "{page}");

    // Cleared, ana's quiet hours are gone.
    let r = set_quiet(&ana, json!({"time_zone": null, "hours": null})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.body["quiet_hours"].is_null(), "{}", r.text);
}

#[tokio::test]
async fn without_a_rule_nothing_is_planned_and_a_pending_status_has_no_reason() {
    let server = TestServer::start().await;
    let id = pending_for(&server, 25_000).await;
    let planned: i64 = server.scalar(&format!("SELECT COUNT(*) FROM escalations WHERE proposal_id = '{id}'")).await;
    assert_eq!(planned, 0);
    let view = server.get_proposal(ACME_BOT_KEY, &id).await.body;
    assert!(view["status_reason"].is_null(), "{view}");
}
