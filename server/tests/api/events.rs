//! Server-Sent Events: `GET /api/v1/proposals/{id}/events` and
//! `GET /api/v1/events` (resume with `Last-Event-ID`).

use futures::StreamExt;
use serde_json::{json, Value};
use std::time::Duration;

use crate::console_client::Console;
use crate::helpers::*;

/// One event as received: (id, event name, data as JSON).
#[derive(Debug)]
struct Received {
    id: String,
    event: String,
    data: Value,
}

/// An open event stream, parsed as it arrives.
struct Events {
    body: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<axum::body::Bytes>> + Send>>,
    buffer: String,
    version: reqwest::Version,
}

impl Events {
    async fn open(server: &TestServer, path: &str, key: &str, last_event_id: Option<&str>) -> Events {
        Events::open_with(&server.client, server, path, key, last_event_id).await
    }

    async fn open_with(
        client: &reqwest::Client,
        server: &TestServer,
        path: &str,
        key: &str,
        last_event_id: Option<&str>,
    ) -> Events {
        let mut request = client.get(server.url(path)).bearer_auth(key).timeout(Duration::from_secs(120));
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(content_type.starts_with("text/event-stream"), "{content_type}");
        let version = response.version();
        Events { body: Box::pin(response.bytes_stream()), buffer: String::new(), version }
    }

    /// The next event within `within`, None if none came (or the stream ended).
    async fn next(&mut self, within: Duration) -> Option<Received> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let (mut id, mut event, mut data) = (String::new(), String::new(), String::new());
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        id = v.trim_start().to_owned();
                    } else if let Some(v) = line.strip_prefix("event:") {
                        event = v.trim_start().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if event.is_empty() {
                    continue; // a keep-alive comment
                }
                return Some(Received { id, event, data: serde_json::from_str(&data).expect("JSON data") });
            }
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Ok(Some(chunk)) => self.buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap())),
                Ok(None) | Err(_) => return None,
            }
        }
    }

    /// Whether the server closed the stream within `within`.
    async fn ended(&mut self, within: Duration) -> bool {
        // HTTP/2 may close a stream with an empty DATA frame: a chunk of nothing.
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, self.body.next()).await {
                Ok(Some(Ok(chunk))) if chunk.is_empty() => continue,
                other => return matches!(other, Ok(None)),
            }
        }
    }
}

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_proposal_stream_sends_the_proposal_then_each_change_until_it_is_final() {
    let server = TestServer::start().await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/proposals/{id}/events");
    let mut events = Events::open(&server, &path, ACME_BOT_KEY, None).await;
    let first = events.next(WAIT).await.expect("the proposal as it is");
    assert_eq!((first.event.as_str(), first.data["status"].as_str()), ("proposal", Some("pending_approval")));
    assert_eq!(first.data["id"], id.as_str());
    let etag = server.get_proposal(ACME_BOT_KEY, &id).await.header("etag").unwrap().to_owned();
    assert_eq!(first.id, etag, "an event's id is the proposal's ETag");

    let ana = Console::sign_in(&server, "ana").await;
    assert_eq!(ana.approve(&id).await.status, 200);
    let approved = events.next(WAIT).await.expect("the approval arrives without polling");
    assert_eq!(approved.data["status"], "approved", "{:?}", approved);
    assert!(approved.data["approval_token"].is_string(), "the owner gets the token: {:?}", approved);

    // Reconnecting with the last id: nothing new, so nothing is sent.
    let mut again = Events::open(&server, &path, ACME_BOT_KEY, Some(&approved.id)).await;
    assert!(again.next(Duration::from_millis(800)).await.is_none());
    // A final status ends the stream after its event.
    assert_eq!(server.cancel(ACME_BOT_KEY, &id).await.status, 200);
    let cancelled = again.next(WAIT).await.expect("the cancellation");
    assert_eq!(cancelled.data["status"], "cancelled");
    assert!(again.ended(WAIT).await, "the stream ends at a final status");
}

#[tokio::test]
async fn a_proposal_stream_is_the_owners_only() {
    let server = TestServer::start().await;
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/proposals/{id}/events");
    for (key, status, code) in [
        (ACME_OTHER_KEY, 404, "not_found"),
        (GLOBEX_BOT_KEY, 404, "not_found"),
        ("cs_test_nope", 401, "unauthenticated"),
    ] {
        let r = send(server.client.get(server.url(&path)).bearer_auth(key)).await;
        r.assert_error(status, code);
    }
    let r = send(server.client.get(server.url("/api/v1/events"))).await;
    r.assert_error(401, "unauthenticated");
}

#[tokio::test]
async fn the_agent_stream_sends_its_own_changes_and_replays_what_a_reconnect_missed() {
    let server = TestServer::start().await;
    let run = |n: &str| with(transfer(), json!({ "run_id": format!("events-{n}") }));
    let a = server.create(&run("a")).await["id"].as_str().unwrap().to_owned();
    let b = server.create(&run("b")).await["id"].as_str().unwrap().to_owned();
    let theirs = server.propose_as(ACME_OTHER_KEY, &run("c")).await.body["id"].as_str().unwrap().to_owned();

    let mut events = Events::open(&server, "/api/v1/events", ACME_BOT_KEY, None).await;
    assert!(events.next(Duration::from_millis(500)).await.is_none(), "only changes from now on");
    assert_eq!(server.cancel(ACME_OTHER_KEY, &theirs).await.status, 200);
    assert_eq!(server.cancel(ACME_BOT_KEY, &a).await.status, 200);
    let got = events.next(WAIT).await.expect("a's cancellation");
    assert_eq!((got.data["id"].as_str(), got.data["status"].as_str()), (Some(a.as_str()), Some("cancelled")));
    drop(events);

    // While disconnected, b is approved; the reconnect gets it first.
    let ana = Console::sign_in(&server, "ana").await;
    assert_eq!(ana.approve(&b).await.status, 200);
    let mut resumed = Events::open(&server, "/api/v1/events", ACME_BOT_KEY, Some(&got.id)).await;
    let missed = resumed.next(WAIT).await.expect("the change made while disconnected");
    assert_eq!(missed.data["id"], b.as_str());
    assert_eq!(missed.data["status"], "approved");
    assert!(missed.data["approval_token"].is_string());
    assert!(resumed.next(Duration::from_millis(500)).await.is_none(), "another agent's change is not sent");

    let r = send(
        server.client.get(server.url("/api/v1/events")).bearer_auth(ACME_BOT_KEY).header("Last-Event-ID", "nonsense"),
    )
    .await;
    r.assert_error(422, "validation_failed");
}

/// A new proposal's event stream and a long-poll on it (`?wait=`), both
/// held with its current ETag over one HTTP/2 client (prior knowledge).
struct Held {
    id: String,
    etag: String,
    h2: reqwest::Client,
    events: Events,
    poll: tokio::task::JoinHandle<reqwest::Result<reqwest::Response>>,
}

impl Held {
    async fn over_http2(server: &TestServer, wait: u64) -> Held {
        let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
        let etag = server.get_proposal(ACME_BOT_KEY, &id).await.header("etag").unwrap().to_owned();
        let h2 = reqwest::Client::builder().http2_prior_knowledge().build().unwrap();
        let path = format!("/api/v1/proposals/{id}/events");
        let events = Events::open_with(&h2, server, &path, ACME_BOT_KEY, Some(&etag)).await;
        assert_eq!(events.version, reqwest::Version::HTTP_2);
        let poll = tokio::spawn(
            h2.get(server.url(&format!("/api/v1/proposals/{id}?wait={wait}")))
                .bearer_auth(ACME_BOT_KEY)
                .header("If-None-Match", &etag)
                .send(),
        );
        Held { id, etag, h2, events, poll }
    }
}

/// HTTP/2 with prior knowledge (h2c) on the API's own port: a proxy or an
/// agent fleet can carry its held requests as streams of one connection
/// (docs/DECISIONS.md, "HTTP/2 for held requests"). An event stream and a
/// long-poll are held at once over HTTP/2, and one change answers both.
#[tokio::test]
async fn over_http2_an_event_stream_and_a_long_poll_are_held_at_once_and_one_change_answers_both() {
    let server = TestServer::start().await;
    let Held { id, etag, h2, mut events, poll } = Held::over_http2(&server, 30).await;
    assert!(events.next(Duration::from_millis(800)).await.is_none(), "nothing changed: the stream is held");
    assert!(!poll.is_finished(), "nothing changed: the long-poll is held");

    assert_eq!(server.cancel(ACME_BOT_KEY, &id).await.status, 200);
    let answer = tokio::time::timeout(WAIT, poll).await.expect("the long-poll answers").unwrap().unwrap();
    assert_eq!(answer.version(), reqwest::Version::HTTP_2);
    assert_eq!(answer.status(), 200);
    assert_ne!(answer.headers()["etag"].to_str().unwrap(), etag);
    assert_eq!(answer.json::<Value>().await.unwrap()["status"], "cancelled");
    let cancelled = events.next(WAIT).await.expect("the stream's event");
    assert_eq!(cancelled.data["status"], "cancelled");
    assert!(events.ended(WAIT).await, "the stream ends at a final status");

    // The body cap holds over HTTP/2 too, and the connection serves on.
    let big = format!("{}{}", transfer(), " ".repeat(70 * 1024));
    let post = h2.post(server.url("/api/v1/proposals")).bearer_auth(ACME_BOT_KEY);
    let r = send(post.header(reqwest::header::CONTENT_TYPE, "application/json").body(big)).await;
    r.assert_error(413, "payload_too_large");
    let r = h2.get(server.url(&format!("/api/v1/proposals/{id}"))).bearer_auth(ACME_BOT_KEY).send().await.unwrap();
    assert_eq!((r.version(), r.status().as_u16()), (reqwest::Version::HTTP_2, 200));

    // A plain HTTP/1.1 client on the same port is served as before.
    let r = server
        .client
        .get(server.url(&format!("/api/v1/proposals/{id}")))
        .bearer_auth(ACME_BOT_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!((r.version(), r.status().as_u16()), (reqwest::Version::HTTP_11, 200));
}

/// Stopping the server (SIGTERM) drains HTTP/2 as it does HTTP/1.1: a held
/// long-poll and a held event stream on one HTTP/2 connection end cleanly
/// (the poll answers 304, the stream closes) and the process exits.
#[tokio::test]
async fn over_http2_held_requests_end_cleanly_when_the_server_stops() {
    let server = TestServer::start_process().await;
    let Held { mut events, poll, .. } = Held::over_http2(&server, 60).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    let exit = server.terminate().await;
    assert!(exit.success(), "a clean exit: {exit:?}");
    assert!(started.elapsed() < Duration::from_secs(15), "drained in {:?}", started.elapsed());
    let answer = tokio::time::timeout(WAIT, poll).await.expect("the long-poll answers").unwrap().unwrap();
    assert_eq!((answer.version(), answer.status().as_u16()), (reqwest::Version::HTTP_2, 304));
    assert!(events.ended(WAIT).await, "the stream ends, not breaks");
}
