//! `GET /api/v1/proposals/{id}`: ETag, If-None-Match and `?wait=N`
//! long-polling (SPEC §9), and tenant/agent isolation.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::helpers::*;

fn poll(server: &TestServer, id: &str, wait: u64, etag: &str) -> reqwest::RequestBuilder {
    server.get(&format!("/api/v1/proposals/{id}?wait={wait}"), ACME_BOT_KEY).header("If-None-Match", etag)
}

#[tokio::test]
async fn get_returns_200_with_the_proposal_and_an_etag() {
    let server = TestServer::start().await;
    let created = server.create(&transfer()).await;
    let id = created["id"].as_str().unwrap();
    let r = server.get_proposal(ACME_BOT_KEY, id).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, created, "GET shows the same proposal object POST returned");
    let etag = r.header("etag").expect("ETag header");
    assert!(!etag.is_empty());
    // Stable while nothing changes.
    let again = server.get_proposal(ACME_BOT_KEY, id).await;
    assert_eq!(again.header("etag"), Some(etag));
}

#[tokio::test]
async fn matching_if_none_match_is_304_at_once() {
    let server = TestServer::start().await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    let etag = server.get_proposal(ACME_BOT_KEY, &id).await.header("etag").unwrap().to_owned();

    let started = Instant::now();
    let r = send(server.get(&format!("/api/v1/proposals/{id}"), ACME_BOT_KEY).header("If-None-Match", &etag)).await;
    assert_eq!(r.status, 304, "{}", r.text);
    assert!(started.elapsed() < Duration::from_secs(2), "no wait asked, none done: {:?}", started.elapsed());
    assert!(r.text.is_empty(), "304 has no body");
    assert_eq!(r.header("etag"), Some(etag.as_str()));

    let r =
        send(server.get(&format!("/api/v1/proposals/{id}"), ACME_BOT_KEY).header("If-None-Match", "\"stale\"")).await;
    assert_eq!(r.status, 200, "a different ETag gets the proposal: {}", r.text);
}

#[tokio::test]
async fn long_poll_wakes_with_200_as_soon_as_the_proposal_is_cancelled() {
    let server = Arc::new(TestServer::start().await);
    let (id, etag, waiter) = parked_long_poll(&server, 10).await;
    let started = Instant::now();
    // Let the poll start waiting; the cancel then happens while it is parked.
    tokio::time::sleep(Duration::from_millis(750)).await;
    let cancelled = server.cancel(ACME_BOT_KEY, &id).await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.text);

    let r = waiter.await.expect("poll task");
    let elapsed = started.elapsed();
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "cancelled", "the poll answered after the change: {}", r.text);
    assert!(elapsed < Duration::from_secs(5), "woke promptly, not at the 10 s deadline: {elapsed:?}");
    assert_ne!(r.header("etag"), Some(etag.as_str()), "a new ETag");
}

#[tokio::test]
async fn long_poll_with_nothing_changing_is_304_after_the_wait() {
    let server = TestServer::start().await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    let etag = server.get_proposal(ACME_BOT_KEY, &id).await.header("etag").unwrap().to_owned();
    let started = Instant::now();
    let r = send(poll(&server, &id, 1, &etag)).await;
    let elapsed = started.elapsed();
    assert_eq!(r.status, 304, "{}", r.text);
    assert!(elapsed >= Duration::from_millis(900), "it waited: {elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "no longer than asked: {elapsed:?}");
    assert_eq!(r.header("etag"), Some(etag.as_str()));
}

#[tokio::test]
async fn long_poll_without_if_none_match_answers_at_once() {
    let server = TestServer::start().await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    let started = Instant::now();
    let r = server.get_proposal(ACME_BOT_KEY, &format!("{id}?wait=60")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[tokio::test]
async fn wait_above_60_seconds_is_422() {
    let server = TestServer::start().await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    let r = server.get_proposal(ACME_BOT_KEY, &format!("{id}?wait=61")).await;
    r.assert_error(422, "validation_failed");
    assert!(r.detail_fields().contains("wait"), "{}", r.text);
    let r = server.get_proposal(ACME_BOT_KEY, &format!("{id}?wait=soon")).await;
    r.assert_error(422, "validation_failed");
}

#[tokio::test]
async fn another_tenants_proposal_is_404_not_found() {
    let server = TestServer::start().await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    let theirs = server.get_proposal(GLOBEX_BOT_KEY, &id).await;
    theirs.assert_error(404, "not_found");
    assert!(!theirs.text.contains("Northwind"), "{}", theirs.text);

    // Indistinguishable from an id that does not exist.
    let missing = server.get_proposal(GLOBEX_BOT_KEY, "prop_00000000000000000000000000").await;
    missing.assert_error(404, "not_found");
    assert_eq!(theirs.body["error"]["message"], missing.body["error"]["message"]);
    assert_eq!(theirs.body["error"]["details"], missing.body["error"]["details"]);

    // And long-polling it does not wait or leak either.
    let r =
        send(server.get(&format!("/api/v1/proposals/{id}?wait=5"), GLOBEX_BOT_KEY).header("If-None-Match", "\"x\""))
            .await;
    r.assert_error(404, "not_found");
}

#[tokio::test]
async fn another_agent_of_the_same_tenant_gets_404() {
    let server = TestServer::start().await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    server.get_proposal(ACME_OTHER_KEY, &id).await.assert_error(404, "not_found");
}

#[tokio::test]
async fn a_created_proposal_carries_the_etag_a_long_poll_starts_from() {
    let server = TestServer::start().await;
    let r = server.propose_as(ACME_BOT_KEY, &transfer()).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let etag = r.header("etag").expect("ETag on 201").to_owned();
    let id = r.body["id"].as_str().unwrap();
    let get = server.get_proposal(ACME_BOT_KEY, id).await;
    assert_eq!(get.header("etag"), Some(etag.as_str()), "the same ETag as a GET");
    let poll =
        send(server.get(&format!("/api/v1/proposals/{id}?wait=1"), ACME_BOT_KEY).header("If-None-Match", &etag)).await;
    assert_eq!(poll.status, 304, "unchanged since the create");
    // The duplicate collapses to the same proposal (200), with its ETag.
    let again = server.propose_as(ACME_BOT_KEY, &transfer()).await;
    assert_eq!((again.status, again.header("etag")), (200, Some(etag.as_str())));
    // An idempotent replay repeats the first answer, maybe stale: no ETag.
    let keyed = |key: &str| {
        server
            .post_json("/api/v1/proposals", ACME_BOT_KEY, &with(transfer(), serde_json::json!({"run_id": "etag-2"})))
            .header("Idempotency-Key", key.to_owned())
    };
    let first = send(keyed("k-etag")).await;
    assert!(first.header("etag").is_some(), "{:?}", first.headers);
    let replay = send(keyed("k-etag")).await;
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(replay.header("etag"), None);
}

/// Sends `request` on a fresh connection of its own and reads one answer
/// (head and `content-length` body) within `within`.
async fn raw_exchange(stream: &mut tokio::net::TcpStream, request: &str, within: Duration) -> (String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let read = async {
        loop {
            let text = String::from_utf8_lossy(&got).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .map_or(0, |n| n.trim().parse::<usize>().unwrap());
                if body.len() >= length {
                    return (head.to_owned(), body.to_owned());
                }
            }
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the connection closed before the answer: {text}");
            got.extend_from_slice(&chunk[..n]);
        }
    };
    tokio::time::timeout(within, read).await.expect("an answer in time")
}

fn header_names(head: &str) -> std::collections::BTreeSet<String> {
    head.lines().skip(1).filter_map(|l| l.split_once(": ")).map(|(name, _)| name.to_ascii_lowercase()).collect()
}

/// A long-poll on a connection of its own (served without hyper's
/// connection, server/src/http/held.rs) is held, wakes on a change with the
/// same headers the ordinary path sends, and its connection stays usable
/// for the next long-poll.
#[tokio::test]
async fn a_long_poll_on_its_own_connection_wakes_with_every_header_and_the_connection_is_kept() {
    let server = TestServer::start().await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    let first = send(server.get(&format!("/api/v1/proposals/{id}"), ACME_BOT_KEY)).await;
    let etag = first.header("etag").unwrap().to_owned();
    let addr = server.url("").trim_start_matches("http://").trim_end_matches('/').to_owned();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let held = format!(
        "GET /api/v1/proposals/{id}?wait=10 HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {ACME_BOT_KEY}\r\n\
         if-none-match: {etag}\r\n\r\n"
    );
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(server.cancel(ACME_BOT_KEY, &id).await.status, 200);
    };
    let started = Instant::now();
    let ((head, body), ()) = tokio::join!(raw_exchange(&mut stream, &held, Duration::from_secs(8)), cancel);
    assert!(started.elapsed() >= Duration::from_millis(450), "held until the change");
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    let view: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(view["status"], "cancelled", "{body}");
    // The ordinary path's answer to the same proposal, for its header names.
    let ordinary = server.get(&format!("/api/v1/proposals/{id}"), ACME_BOT_KEY).send().await.unwrap();
    let mut expected: std::collections::BTreeSet<String> =
        ordinary.headers().keys().map(|name| name.as_str().to_owned()).collect();
    expected.insert("date".into());
    assert_eq!(header_names(&head), expected, "{head}");
    let new_etag = ordinary.headers()["etag"].to_str().unwrap().to_owned();
    assert!(head.contains(&format!("etag: {new_etag}\r\n")) || head.ends_with(&format!("etag: {new_etag}")), "{head}");

    // The same connection holds the next long-poll; nothing changes: 304.
    let again = format!(
        "GET /api/v1/proposals/{id}?wait=1 HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {ACME_BOT_KEY}\r\n\
         if-none-match: {new_etag}\r\n\r\n"
    );
    let started = Instant::now();
    let (head, body) = raw_exchange(&mut stream, &again, Duration::from_secs(5)).await;
    assert!(head.starts_with("HTTP/1.1 304 Not Modified\r\n") && body.is_empty(), "{head}");
    assert!(started.elapsed() >= Duration::from_millis(900), "it waited");
    // A wrong key on the held route is refused as on any other.
    let wrong =
        format!("GET /api/v1/proposals/{id}?wait=1 HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer cs_wrong\r\n\r\n");
    let (head, _) = raw_exchange(&mut stream, &wrong, Duration::from_secs(5)).await;
    assert!(head.starts_with("HTTP/1.1 401 "), "{head}");
}

/// Stopping the server (SIGTERM) answers a long-poll held on its own
/// HTTP/1.1 connection (304, `connection: close`) and exits cleanly.
#[tokio::test]
async fn a_long_poll_held_over_http1_ends_with_connection_close_when_the_server_stops() {
    let server = TestServer::start_process().await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    let etag = server.get_proposal(ACME_BOT_KEY, &id).await.header("etag").unwrap().to_owned();
    let addr = server.url("").trim_start_matches("http://").trim_end_matches('/').to_owned();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let held = format!(
        "GET /api/v1/proposals/{id}?wait=60 HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {ACME_BOT_KEY}\r\n\
         if-none-match: {etag}\r\n\r\n"
    );
    let answer = tokio::spawn(async move {
        let answer = raw_exchange(&mut stream, &held, Duration::from_secs(30)).await;
        let mut rest = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut stream, &mut rest).await.unwrap();
        (answer, rest)
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let exit = server.terminate().await;
    assert!(exit.success(), "a clean exit: {exit:?}");
    assert!(started.elapsed() < Duration::from_secs(15), "drained in {:?}", started.elapsed());
    let ((head, body), rest) = answer.await.unwrap();
    assert!(head.starts_with("HTTP/1.1 304 Not Modified\r\n") && body.is_empty(), "{head}");
    assert!(head.contains("connection: close"), "{head}");
    assert!(rest.is_empty(), "then the connection closes");
}
