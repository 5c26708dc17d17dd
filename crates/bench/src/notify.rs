//! Benchmark: how fast an approver is told, under the intake benchmark's
//! load (proposal → push delivered to a push service, goal p50
//! under 2 s). Two approvers each subscribe a device whose push service is
//! a receiver in this process; the agent proposes at full speed (the intake
//! benchmark's closed loop) for the measured duration; every post the
//! receiver gets is decrypted (the `ece` crate, with the device's own key)
//! to learn its proposal, and its arrival time is compared with the
//! proposal's `created_at` in the server's database (one clock: this
//! machine's). The figure is the first notice of each proposal.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde_json::json;

use crate::client::post_json;
use crate::env::{http, sign_in, transfer, Env, AGENT_KEY, APPROVERS, PAYEE, SOURCE};
use crate::stats::{closed_loop, Latency};
use crate::suite::{Figure, LoadArgs};

/// What the receiver got: (device, arrival, encrypted body).
type Received = Arc<Mutex<Vec<(usize, DateTime<Utc>, Vec<u8>)>>>;

async fn receive(State(got): State<Received>, Path(device): Path<usize>, body: axum::body::Bytes) -> StatusCode {
    let at = Utc::now();
    got.lock().expect("not poisoned").push((device, at, body.to_vec()));
    StatusCode::CREATED
}

pub async fn run(env: &Env, load: &LoadArgs) -> anyhow::Result<Vec<Figure>> {
    let got: Received = Arc::default();
    let receiver = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let push_addr = receiver.local_addr()?;
    let app = axum::Router::new().route("/push/{device}", axum::routing::post(receive)).with_state(got.clone());
    let receiving = tokio::spawn(async move { axum::serve(receiver, app).await });

    let server_dir = env.provision("notify", "[notifications.push]\nallowed_hosts = [\"127.0.0.1\"]\n").await?;
    let server = env.serve(&server_dir, &[]).await?;
    println!("  server:   countersign serve (pid {}) on {}, push service on {push_addr}", server.pid, server.url);

    // Each approver subscribes one device; the keys stay here.
    let client = http();
    let mut devices = Vec::new();
    for (i, username) in APPROVERS.iter().enumerate() {
        let session = sign_in(&client, &server.url, username).await?;
        let (keys, auth) = ece::generate_keypair_and_auth_secret().context("device keys")?;
        let b64 = |bytes: &[u8]| {
            use base64::Engine;
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
        };
        let body = json!({
            "endpoint": format!("http://{push_addr}/push/{i}"),
            "keys": {"p256dh": b64(&keys.pub_as_raw()?), "auth": b64(&auth)},
            "label": format!("bench device {i}"),
        });
        let r = client
            .post(format!("{}/api/v1/me/push-subscriptions", server.url))
            .header("cookie", &session.cookie)
            .header("x-csrf-token", &session.csrf)
            .header("origin", &server.url)
            .json(&body)
            .send()
            .await?;
        anyhow::ensure!(r.status().as_u16() == 201, "subscribing answered {}: {}", r.status(), r.text().await?);
        devices.push((keys.raw_components()?, auth));
    }

    // The intake benchmark's load, for its whole duration.
    let auth: Arc<str> = format!("Bearer {AGENT_KEY}").into();
    let addr = server.addr;
    let spec = crate::stats::LoadSpec { duration: Duration::from_secs(load.duration), ..load.spec(addr) };
    let report = closed_loop(spec, 201, move |w, seq| {
        let body = transfer(&format!("notify-{w}-{seq}"), 25_000, PAYEE, SOURCE);
        post_json(addr, "/api/v1/proposals", &[("authorization", &auth)], body.to_string().into_bytes())
    })
    .await?;
    println!("  intake:   {report}");

    // Then until the notices stop arriving (at most 60 s more).
    let mut last = 0;
    for _ in 0..60 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = got.lock().expect("not poisoned").len();
        if now == last {
            break;
        }
        last = now;
    }
    server.stop().await;
    receiving.abort();

    // The first arrival of each proposal, against its created_at.
    let mut first: HashMap<String, DateTime<Utc>> = HashMap::new();
    for (device, at, body) in got.lock().expect("not poisoned").iter() {
        let (components, auth) = &devices[*device];
        let plain = ece::decrypt(components, auth, body).context("a push that does not decrypt")?;
        let payload: serde_json::Value = serde_json::from_slice(&plain)?;
        let id = payload["proposal_id"].as_str().context("a payload without proposal_id")?.to_owned();
        first.entry(id).and_modify(|t| *t = (*t).min(*at)).or_insert(*at);
    }
    let created = created_at(&server_dir.db_path()).await?;
    let delays: Vec<Duration> =
        first.iter().filter_map(|(id, at)| created.get(id).map(|c| (*at - *c).to_std().unwrap_or_default())).collect();
    let notified = delays.len();
    let latency = Latency::from_durations(&delays);
    println!("  notices:  {notified} of {} proposals reached a device: {}", created.len(), latency.summary());
    let p50 = latency.pct(50.0);
    Ok(vec![Figure::new(
        "proposal → push delivered",
        format!(
            "p50 {:.0} ms, p90 {:.0} ms under intake load ({:.0} proposals/s; {notified} of {} notified)",
            p50.as_secs_f64() * 1000.0,
            latency.pct(90.0).as_secs_f64() * 1000.0,
            report.per_sec(),
            created.len()
        ),
        "p50 < 2 s",
        p50 < Duration::from_secs(2) && notified == created.len() && notified > 0,
    )])
}

/// Every proposal's `created_at`, by id.
async fn created_at(db: &std::path::Path) -> anyhow::Result<HashMap<String, DateTime<Utc>>> {
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}?mode=ro", db.display())).await?;
    let rows: Vec<(String, String)> = sqlx::query_as("SELECT id, created_at FROM proposals").fetch_all(&pool).await?;
    pool.close().await;
    Ok(rows
        .into_iter()
        .filter_map(|(id, at)| DateTime::parse_from_rfc3339(&at).ok().map(|t| (id, t.with_timezone(&Utc))))
        .collect())
}
