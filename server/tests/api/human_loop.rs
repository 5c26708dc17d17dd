//! The human loop, measured: the admin page `/admin/loop`
//! counts today's approvals, rejections and expiries from the history and
//! draws the time to decide by channel as server-rendered SVG; Prometheus
//! gets the same delay as a histogram. Only admins see the page.

use reqwest::Method;
use std::time::Duration;

use crate::console_client::{http_client, pending_for, status_of, Console};
use crate::helpers::*;

const TOKEN: &str = "human-loop-metrics-token-0123456789";

/// The `<tr data-day=…>` row of `day` in the page's table, as text.
pub(crate) fn row_of<'a>(html: &'a str, day: &str) -> &'a str {
    let start = html.find(&format!("data-day=\"{day}\"")).unwrap_or_else(|| panic!("no row for {day}: {html}"));
    let end = html[start..].find("</tr>").unwrap() + start;
    &html[start..end]
}

pub(crate) fn cell(row: &str, class: &str) -> String {
    let start =
        row.find(&format!("class=\"{class}\">")).unwrap_or_else(|| panic!("no {class} in {row}")) + class.len() + 9;
    row[start..].split('<').next().unwrap().to_owned()
}

#[tokio::test]
async fn the_admin_page_counts_decisions_and_expiries_and_charts_the_time_to_decide() {
    let server =
        TestServer::start_with(&format!("[metrics]\nbearer_token = \"{TOKEN}\"\n[proposals]\nexpiry_sweep_secs = 1\n"))
            .await;
    apply_user(&server, "acme", "ada", &["admin"], 0).await;
    let (ana, ben, ada) = (
        Console::sign_in(&server, "ana").await,
        Console::sign_in(&server, "ben").await,
        Console::sign_in(&server, "ada").await,
    );

    let (approved, rejected, expiring) =
        (pending_for(&server, 25_000).await, pending_for(&server, 26_000).await, pending_for(&server, 27_000).await);
    assert_eq!(ana.approve(&approved).await.body["status"], "approved");
    assert_eq!(ben.reject(&rejected, "not ours").await.body["status"], "rejected");
    // Nobody decides the third: its deadline passes.
    query("UPDATE proposals SET expires_at = '2020-01-01T00:00:00.000000Z' WHERE id = ?")
        .bind(&expiring)
        .execute(&server.db().await)
        .await
        .unwrap();
    let mut status = String::new();
    for _ in 0..100 {
        status = status_of(&server, &expiring).await;
        if status == "expired" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, "expired");

    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let r = send(ada.authed(Method::GET, "/admin/loop")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let html = &r.text;
    let row = row_of(html, &today);
    assert_eq!(
        (cell(row, "approvals"), cell(row, "rejections"), cell(row, "expiries")),
        ("1".into(), "1".into(), "1".into()),
        "{row}"
    );
    assert!(html.contains("1 approved, 1 rejected, 1 expired undecided"), "{html}");
    // The charts are SVG in the page itself, described for screen readers.
    assert!(html.contains(r#"<svg id="per-day-chart" role="img" aria-label="Bar chart: per day"#), "{html}");
    let times = &html[html.find(r#"id="decision-times""#).expect("the decision chart")..];
    assert!(times.starts_with(r#"id="decision-times" role="img" aria-label="api: median "#), "{times}");
    assert!(times.contains(r#"class="bars""#) && times.contains("<svg "), "the bars are SVG: {times}");
    assert!(times.contains(r#"data-channel="api""#), "the console JSON API decided both");
    assert!(html.contains(r#"class="bar approved""#) && html.contains(r#"class="bar expired""#));
    assert!(html.contains(r#"id="notice-times""#), "the notice chart (or its empty note) is there");

    // Prometheus has the time to decide, by channel.
    let metrics = send(http_client().get(server.url("/metrics")).bearer_auth(TOKEN)).await.text;
    assert!(
        metrics.lines().any(|l| l.starts_with("countersign_decision_delay_seconds_count{channel=\"api\"}")),
        "{metrics}"
    );

    // Not for an approver.
    let r = send(ana.authed(Method::GET, "/admin/loop")).await;
    assert!(r.text.contains("Your role does not allow this page."), "{}", r.text);
    assert!(!r.text.contains("per-day-chart"));
}
