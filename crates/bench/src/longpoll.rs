//! Benchmark 4: concurrent long-polls (100,000 by default, the goal: held in < 1 GB; the client spreads them over
//! several loopback source addresses). Each is its own connection
//! holding `GET /api/v1/proposals/{id}?wait=60` with the proposal's current
//! ETag in `If-None-Match`, spread over 100 pending proposals. Once every
//! connection is open and no answer has come back, the server's VmRSS and
//! VmHWM are read from /proc; then the proposals are cancelled and the time
//! until every poll has its 200 is measured (the wake-up storm).
//!
//! Then the same over HTTP/2 (prior knowledge, as a proxy or an agent fleet
//! multiplexing its held requests would send them): 100,000 held requests,
//! half long-polls and half event streams (`GET /api/v1/proposals/{id}/events`
//! with the current ETag as `Last-Event-ID`, so nothing is sent until a
//! change), 200 streams per connection (the server's advertised limit), read
//! and woken the same way. Over HTTP/2 no descriptor limit stands in the way:
//! the figure is held, not projected.
//!
//! The per-agent request limit is off in every benchmark's config
//! (`Env::provision`): one agent key holds all the polls.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

use crate::client::{get, Body, Conn};
use crate::env::{propose, transfer, Env, Usage, AGENT_KEY, PAYEE, SOURCE};
use crate::stats::{ms, Latency};
use crate::suite::Figure;

const PROPOSALS: usize = 100;
const BATCH: usize = 500;
/// Connections per loopback source address.
const PER_SOURCE: usize = 20_000;
/// Descriptors kept free for the server's database, logs and listener.
const FD_MARGIN: usize = 1_000;
/// The goal: 100,000 held under 1 GB.
const GOAL_MB: f64 = 1024.0;
const GOAL_HELD: usize = 100_000;

pub async fn run(env: &Env, asked: usize) -> anyhow::Result<Vec<Figure>> {
    // Each held poll is a descriptor in the server and one in this client:
    // both live under the open-file limit (inherited), which only a process
    // allowed to raise its hard limit (CAP_SYS_RESOURCE) can lift.
    let limit = crate::env::nofile_limit() as usize;
    let count = asked.min(limit.saturating_sub(FD_MARGIN));
    if count < asked {
        println!(
            "  {asked} long-polls asked, {count} held: the open-file limit is {limit} here and cannot be raised \
             (no CAP_SYS_RESOURCE); the 100,000 figure is projected from the memory per held poll"
        );
    }
    let (server, http, targets, idle) = start(env, "longpoll", "server").await?;

    let connected = Arc::new(AtomicUsize::new(0));
    let answered = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(AtomicUsize::new(0));
    let results: Arc<Mutex<Vec<(u16, Instant)>>> = Arc::new(Mutex::new(Vec::with_capacity(count)));
    let auth = format!("Bearer {AGENT_KEY}");
    let ramp = Instant::now();
    for i in 0..count {
        let (all, up, done, failed, out, auth) =
            (targets.clone(), connected.clone(), answered.clone(), failures.clone(), results.clone(), auth.clone());
        let addr = server.addr;
        tokio::spawn(async move {
            let (id, etag) = &all[i % all.len()];
            let mut conn = None;
            // 20,000 connections per loopback source address (127.0.0.1,
            // 127.0.0.2, …): each has about 28,000 ephemeral ports.
            let from = std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 1 + (i / PER_SOURCE) as u8));
            for _ in 0..20 {
                match Conn::open_from(addr, from).await {
                    Ok(c) => {
                        conn = Some(c);
                        break;
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
            let Some(mut conn) = conn else {
                failed.fetch_add(1, Ordering::SeqCst);
                return;
            };
            up.fetch_add(1, Ordering::SeqCst);
            let path = format!("/api/v1/proposals/{id}?wait=60");
            let req = get(addr, &path, &[("authorization", &auth), ("if-none-match", etag)]);
            let status = match conn.send(req).await {
                Ok(reply) => reply.status,
                Err(_) => 0,
            };
            done.fetch_add(1, Ordering::SeqCst);
            out.lock().expect("results").push((status, Instant::now()));
        });
        if (i + 1) % BATCH == 0 {
            wait_until(Duration::from_secs(20), || {
                connected.load(Ordering::SeqCst) + failures.load(Ordering::SeqCst) > i
            })
            .await;
        }
    }
    wait_until(Duration::from_secs(120), || {
        connected.load(Ordering::SeqCst) + failures.load(Ordering::SeqCst) >= count
    })
    .await;
    // Every connection is open on our side; wait for the server to hold them all.
    let held_fds = idle.fds as usize + count;
    let pid = server.pid;
    wait_until(Duration::from_secs(120), || Usage::of(pid).map(|u| u.fds as usize >= held_fds).unwrap_or(false)).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let ramp_time = ramp.elapsed();
    let holding = server.usage()?;
    let early = answered.load(Ordering::SeqCst);
    let open = connected.load(Ordering::SeqCst);
    println!(
        "  holding: {open} connections open after {:.1} s, {early} answered early, {} failed to connect",
        ramp_time.as_secs_f64(),
        failures.load(Ordering::SeqCst)
    );
    println!("  holding: {holding}");

    // The wake-up storm: cancel every proposal; each waiter answers 200.
    let (_, after) = wake_up_storm(&http, server, &targets, &answered, open, &results).await?;

    let mb = |kb: u64| kb as f64 / 1024.0;
    let all_held = open == count && early == 0;
    // What each held poll adds, and what 100,000 would take at that rate.
    let per_poll_kb = holding.hwm_kb.saturating_sub(idle.rss_kb) as f64 / open.max(1) as f64;
    let projected_mb = mb(idle.rss_kb) + per_poll_kb * GOAL_HELD as f64 / 1024.0;
    Ok(vec![Figure::new(
        "concurrent long-polls: server memory",
        format!(
            "{open} held: VmRSS {:.1} MB, VmHWM {:.1} MB (idle {:.1} MB; after the wake-up storm VmHWM {:.1} MB); \
             {per_poll_kb:.1} KB per held poll, 100,000 projected at {projected_mb:.0} MB",
            mb(holding.rss_kb),
            mb(holding.hwm_kb),
            mb(idle.rss_kb),
            mb(after.hwm_kb)
        ),
        "100,000 held in < 1 GB",
        all_held && count >= GOAL_HELD && mb(holding.hwm_kb) < GOAL_MB,
    )])
}

/// Streams per HTTP/2 connection: hyper's server advertises 200 concurrent
/// streams (`SETTINGS_MAX_CONCURRENT_STREAMS`).
const STREAMS_PER_CONNECTION: usize = 200;

/// The same held requests over HTTP/2: `asked` of them (half long-polls,
/// half event streams) on `asked / 200` connections.
pub async fn run_http2(env: &Env, asked: usize) -> anyhow::Result<Vec<Figure>> {
    let count = asked.max(2);
    let connections = count.div_ceil(STREAMS_PER_CONNECTION);
    let (server, http, targets, idle) = start(env, "longpoll-h2", "HTTP/2").await?;

    let mut senders = Vec::with_capacity(connections);
    for _ in 0..connections {
        senders.push(H2::open(server.addr).await?);
    }
    let (streams_open, answered) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let results: Arc<Mutex<Vec<(u16, Instant)>>> = Arc::new(Mutex::new(Vec::with_capacity(count)));
    let auth = format!("Bearer {AGENT_KEY}");
    let ramp = Instant::now();
    for i in 0..count {
        let (all, open, done, out, auth) =
            (targets.clone(), streams_open.clone(), answered.clone(), results.clone(), auth.clone());
        let h2 = senders[i / STREAMS_PER_CONNECTION].clone();
        tokio::spawn(async move {
            let (id, etag) = &all[i % all.len()];
            let status = if i % 2 == 0 {
                let path = format!("/api/v1/proposals/{id}?wait=60");
                h2.send(&path, &[("authorization", &auth), ("if-none-match", etag)]).await.unwrap_or(0)
            } else {
                let path = format!("/api/v1/proposals/{id}/events");
                h2.first_event(&path, &[("authorization", &auth), ("last-event-id", etag)], &open).await.unwrap_or(0)
            };
            done.fetch_add(1, Ordering::SeqCst);
            out.lock().expect("results").push((status, Instant::now()));
        });
    }
    // The event streams' answers start at once (their heads); the long-polls'
    // do not, so the ramp ends when the server has nothing left to do.
    let streams = count / 2;
    wait_until(Duration::from_secs(120), || streams_open.load(Ordering::SeqCst) >= streams).await;
    wait_for_quiet(server.pid, Duration::from_secs(60)).await;
    let ramp_time = ramp.elapsed();
    let holding = server.usage()?;
    let early = answered.load(Ordering::SeqCst);
    println!(
        "  HTTP/2 holding: {count} requests ({} long-polls, {streams} event streams) on {connections} connections \
         after {:.1} s, {early} answered early",
        count - streams,
        ramp_time.as_secs_f64()
    );
    println!("  HTTP/2 holding: {holding}");

    let (results, _) = wake_up_storm(&http, server, &targets, &answered, count, &results).await?;

    let mb = |kb: u64| kb as f64 / 1024.0;
    let all_held = early == 0 && results.iter().all(|(status, _)| *status == 200);
    let per_request_kb = holding.hwm_kb.saturating_sub(idle.rss_kb) as f64 / count as f64;
    Ok(vec![Figure::new(
        "concurrent long-polls and event streams over HTTP/2: server memory",
        format!(
            "{count} held ({} long-polls, {streams} event streams, {connections} connections): VmRSS {:.1} MB, \
             VmHWM {:.1} MB (idle {:.1} MB); {per_request_kb:.1} KB per held request",
            count - streams,
            mb(holding.rss_kb),
            mb(holding.hwm_kb),
            mb(idle.rss_kb)
        ),
        "100,000 held in < 1 GB",
        all_held && count >= GOAL_HELD && mb(holding.hwm_kb) < GOAL_MB,
    )])
}

/// One HTTP/2 connection (prior knowledge), shared by its streams.
#[derive(Clone)]
struct H2 {
    addr: std::net::SocketAddr,
    sender: hyper::client::conn::http2::SendRequest<Body>,
}

impl H2 {
    async fn open(addr: std::net::SocketAddr) -> anyhow::Result<H2> {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(H2 { addr, sender })
    }

    async fn head(&self, path: &str, headers: &[(&str, &str)]) -> anyhow::Result<hyper::Response<Incoming>> {
        let mut builder = hyper::Request::get(format!("http://{}{path}", self.addr));
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let mut sender = self.sender.clone();
        sender.ready().await?;
        Ok(sender.send_request(builder.body(Body::default())?).await?)
    }

    /// A request's status, once its whole answer is read.
    async fn send(&self, path: &str, headers: &[(&str, &str)]) -> anyhow::Result<u16> {
        let response = self.head(path, headers).await?;
        let status = response.status().as_u16();
        response.into_body().collect().await?;
        Ok(status)
    }

    /// An event stream's status once its first event arrives (its head is
    /// counted in `open`), read to its end.
    async fn first_event(&self, path: &str, headers: &[(&str, &str)], open: &AtomicUsize) -> anyhow::Result<u16> {
        let response = self.head(path, headers).await?;
        open.fetch_add(1, Ordering::SeqCst);
        let status = response.status().as_u16();
        let mut body = response.into_body();
        let mut seen = Vec::new();
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame?.into_data() {
                seen.extend_from_slice(&data);
            }
            if seen.windows(15).any(|w| w == b"event: proposal") {
                return Ok(status);
            }
        }
        Ok(0)
    }
}

/// A fresh server (its directory named `run`) with 100 pending proposals:
/// the server, a client, the proposals with their current ETags, and the
/// server's usage idle.
async fn start(
    env: &Env,
    run: &str,
    label: &str,
) -> anyhow::Result<(crate::env::Proc, reqwest::Client, Arc<Vec<(String, String)>>, Usage)> {
    let server_dir = env.provision(run, "").await?;
    let server = env.serve(&server_dir, &[]).await?;
    let http = crate::env::http();
    let base = &server.url;
    let mut targets = Vec::with_capacity(PROPOSALS);
    for i in 0..PROPOSALS {
        let p = propose(&http, base, &transfer(&format!("{run}-{i}"), 25_000, PAYEE, SOURCE), 201).await?;
        let id = p["id"].as_str().unwrap_or_default().to_owned();
        let r = http.get(format!("{base}/api/v1/proposals/{id}")).bearer_auth(AGENT_KEY).send().await?;
        let etag = r.headers().get("etag").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        targets.push((id, etag));
    }
    let idle = server.usage()?;
    println!("  {label}: countersign serve (pid {}) on {base}; idle: {idle}", server.pid);
    Ok((server, http, Arc::new(targets), idle))
}

/// The wake-up storm: cancels every proposal, waits (70 s at most) for
/// `expected` answers, stops the server and reports; returns each answer's
/// status and time, and the server's usage before it stopped.
async fn wake_up_storm(
    http: &reqwest::Client,
    server: crate::env::Proc,
    targets: &[(String, String)],
    answered: &AtomicUsize,
    expected: usize,
    results: &Mutex<Vec<(u16, Instant)>>,
) -> anyhow::Result<(Vec<(u16, Instant)>, Usage)> {
    let wake = Instant::now();
    for (id, _) in targets {
        let r = http.post(format!("{}/api/v1/proposals/{id}/cancel", server.url)).bearer_auth(AGENT_KEY).send().await?;
        anyhow::ensure!(r.status().is_success(), "cancel answered {}", r.status());
    }
    wait_until(Duration::from_secs(70), || answered.load(Ordering::SeqCst) >= expected).await;
    let after = server.usage()?;
    server.stop().await;
    let results = results.lock().expect("results").clone();
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    for (status, _) in &results {
        *statuses.entry(*status).or_default() += 1;
    }
    let wake_lat = Latency::from_durations(
        &results.iter().filter(|(_, at)| *at >= wake).map(|(_, at)| at.duration_since(wake)).collect::<Vec<_>>(),
    );
    println!(
        "  wake-up: cancelling {} proposals answered {} held requests (statuses {statuses:?}); all answered \
         within {} (p50 {})",
        targets.len(),
        results.len(),
        ms(wake_lat.max()),
        ms(wake_lat.pct(50.0))
    );
    println!("  after:   {after}");
    Ok((results, after))
}

/// Waits until the server's CPU time stops growing (under 2 ticks in half a
/// second), at most `limit`: every request sent has then been read and is
/// waiting.
async fn wait_for_quiet(pid: u32, limit: Duration) {
    let ticks = || -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // After the command's name in parentheses: utime and stime are the
        // 12th and 13th fields.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
        rest.split_whitespace().skip(11).take(2).filter_map(|v| v.parse::<u64>().ok()).sum()
    };
    let deadline = Instant::now() + limit;
    let mut last = ticks();
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = ticks();
        if now.saturating_sub(last) < 2 {
            return;
        }
        last = now;
    }
}

async fn wait_until(limit: Duration, done: impl Fn() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
