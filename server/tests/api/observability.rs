//! Observability: request ids, one structured log line per request (id,
//! route, status, latency, tenant, principal), and `GET /metrics`.

use serde_json::Value;

use crate::helpers::*;

/// The JSON log line that answered `request_id` (waits up to 10 s for it).
async fn answered_line(log_path: &std::path::Path, request_id: &str) -> Value {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(log_path).unwrap();
        let found = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|l| l["fields"]["message"] == "answered" && l["span"]["request_id"] == request_id);
        if let Some(line) = found {
            return line;
        }
        assert!(tokio::time::Instant::now() < deadline, "no line for {request_id} in:\n{text}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

const METRICS: &str = "[metrics]\nbearer_token = \"scrape-me-0123456789\"\n";

#[tokio::test]
async fn every_request_is_one_structured_line_naming_its_route_and_principal() {
    let scratch = Scratch::with_fixture("log_format = \"json\"\n");
    scratch.apply_fixture().await;
    let log_path = scratch.dir.path().join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let server =
        TestServer::spawn_logging(scratch.dir, scratch.config, &[("COUNTERSIGN_LOG", "info,sqlx=warn")], log).await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    let poll = server.get_proposal(ACME_BOT_KEY, &id).await;
    let request_id = poll.header("x-request-id").expect("X-Request-Id").to_owned();
    assert!(request_id.starts_with("req_") && request_id.len() == 28, "{request_id}");

    let line = answered_line(&log_path, &request_id).await;
    let span = &line["span"];
    assert_eq!(span["route"], "/api/v1/proposals/{id}", "{line}");
    assert_eq!(span["method"], "GET");
    assert_eq!(span["tenant"], "acme");
    assert_eq!(span["principal"], "agent:payout-bot");
    assert_eq!(line["fields"]["status"], 200);
    assert!(line["fields"]["latency_ms"].as_f64().is_some(), "{line}");
    let text = std::fs::read_to_string(&log_path).unwrap();
    assert_eq!(text.matches(&format!("\"request_id\":\"{request_id}\"")).count(), 1, "exactly one line: {text}");
    assert!(!text.contains(ACME_BOT_KEY), "the key is never logged");

    // A console request names its user, through the session layer's own span.
    let ana = crate::console_client::Console::sign_in(&server, "ana").await;
    let queue = ana.queue("").await;
    let queue_id = queue.header("x-request-id").unwrap().to_owned();
    let line = answered_line(&log_path, &queue_id).await;
    assert_eq!(line["span"]["route"], "/api/v1/queue", "{line}");
    assert_eq!(line["span"]["tenant"], "acme", "{line}");
    assert_eq!(line["span"]["principal"], format!("user:{}", ana.user_id()), "{line}");
}

#[tokio::test]
async fn a_plain_incoming_request_id_is_kept_and_anything_else_replaced() {
    let server = TestServer::start().await;
    let kept = send(server.client.get(server.url("/healthz")).header("x-request-id", "proxy-abc.123")).await;
    assert_eq!(kept.header("x-request-id"), Some("proxy-abc.123"));
    let replaced =
        send(server.client.get(server.url("/healthz")).header("x-request-id", "<script>alert(1)</script>")).await;
    let id = replaced.header("x-request-id").unwrap();
    assert!(id.starts_with("req_"), "{id}");
    let error = server.get_proposal(ACME_BOT_KEY, "prop_nope").await;
    assert_eq!(error.header("x-request-id"), error.body["error"]["request_id"].as_str(), "the body names the same id");
}

#[tokio::test]
async fn metrics_count_requests_and_use_cases_for_a_scraper_with_the_token() {
    // A process: the metrics recorder is global to a process (the `metrics`
    // facade), and in-process servers share this test binary.
    let server = TestServer::start_process_with(METRICS).await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    assert_eq!(server.get_proposal(ACME_BOT_KEY, &id).await.status, 200);
    let scrape = |token: Option<&str>| {
        let mut rb = server.client.get(server.url("/metrics"));
        if let Some(token) = token {
            rb = rb.bearer_auth(token);
        }
        send(rb)
    };
    scrape(None).await.assert_error(401, "unauthenticated");
    scrape(Some("wrong")).await.assert_error(401, "unauthenticated");
    let metrics = scrape(Some("scrape-me-0123456789")).await;
    assert_eq!(metrics.status, 200);
    assert!(metrics.header("content-type").unwrap().starts_with("text/plain"));
    let text = metrics.text;
    assert!(
        text.contains(
            "countersign_http_requests_total{route=\"/api/v1/proposals/{id}\",method=\"GET\",status=\"200\"} 1"
        ),
        "{text}"
    );
    assert!(text.contains("route=\"/api/v1/proposals\",method=\"POST\",status=\"201\"} 1"), "{text}");
    assert!(
        text.contains("countersign_use_case_duration_seconds_count{use_case=\"propose\",outcome=\"ok\"} 1"),
        "{text}"
    );
    assert!(!text.contains("acme") && !text.contains(&id), "no tenant or id in a label");
}

#[tokio::test]
async fn without_a_token_configured_there_is_no_metrics_endpoint() {
    let server = TestServer::start().await;
    send(server.client.get(server.url("/metrics")).bearer_auth("anything")).await.assert_error(404, "not_found");
}

#[tokio::test]
async fn text_logs_to_a_file_have_no_colour_codes_and_stale_cookies_no_warnings() {
    let scratch = Scratch::with_fixture("");
    scratch.apply_fixture().await;
    let log_path = scratch.dir.path().join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let server = TestServer::spawn_logging(scratch.dir, scratch.config, &[("COUNTERSIGN_LOG", "info")], log).await;
    server.create(&transfer()).await;
    // A session cookie naming no session, many times.
    for _ in 0..20 {
        let r =
            send(server.client.get(server.url("/")).header("cookie", "countersign_session=bm90LWEtc2Vzc2lvbg")).await;
        assert!(r.status < 500);
    }
    let bad = send(server.get("/api/v1/proposals/prop_unknown", "cs_test_wrong0key0000000000000000000000")).await;
    assert_eq!(bad.status, 401);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let text = std::fs::read_to_string(&log_path).unwrap();
    assert!(text.contains("INFO") || text.contains("WARN"), "the log has lines: {text}");
    assert!(!text.contains('\u{1b}'), "no ANSI escape in a file: {text:?}");
    assert!(!text.contains("possibly suspicious activity"), "{text}");
}
