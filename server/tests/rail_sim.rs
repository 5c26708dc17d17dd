//! The rail simulator (SPEC section 12), spawned in-process on a loopback
//! port with its own temporary SQLite file.

use countersign::rail::sim::{self, SimOptions};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Sim {
    base: String,
    addr: std::net::SocketAddr,
    db: PathBuf,
    task: tokio::task::JoinHandle<()>,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(20)).build().unwrap()
}

async fn start(options: SimOptions) -> Sim {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sub").join("rail-sim.db");
    let (addr, task) = sim::spawn("127.0.0.1:0".parse().unwrap(), &db, options).await.unwrap();
    Sim { base: format!("http://{addr}"), addr, db, task, http: client(), _dir: dir }
}

fn transfer_params(amount: &str, group: &str) -> Vec<(String, String)> {
    vec![
        ("amount".into(), amount.into()),
        ("currency".into(), "USD".into()),
        ("destination".into(), "acct_dest".into()),
        ("transfer_group".into(), group.into()),
        ("metadata[proposal]".into(), "prop_1".into()),
        ("source_transaction".into(), "ignored".into()),
    ]
}

fn with(mut params: Vec<(String, String)>, k: &str, v: &str) -> Vec<(String, String)> {
    params.retain(|(key, _)| key != k);
    params.push((k.into(), v.into()));
    params
}

struct Answer {
    status: StatusCode,
    replayed: bool,
    text: String,
    json: Value,
}

async fn answer(r: reqwest::Response) -> Answer {
    let status = r.status();
    let replayed = r.headers().get("idempotent-replayed").is_some_and(|v| v == "true");
    let text = r.text().await.unwrap();
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    Answer { status, replayed, text, json }
}

impl Sim {
    async fn form(&self, path: &str, key: Option<&str>, params: &[(String, String)]) -> Answer {
        let mut req = self.http.post(format!("{}{path}", self.base)).form(params);
        if let Some(key) = key {
            req = req.header("Idempotency-Key", key);
        }
        answer(req.send().await.unwrap()).await
    }

    async fn create(&self, key: &str, params: &[(String, String)]) -> Answer {
        self.form("/v1/transfers", Some(key), params).await
    }

    async fn get(&self, path: &str) -> Answer {
        answer(self.http.get(format!("{}{path}", self.base)).send().await.unwrap()).await
    }

    async fn control(&self, path: &str, body: Value) -> Answer {
        let a = answer(self.http.post(format!("{}{path}", self.base)).json(&body).send().await.unwrap()).await;
        assert_eq!(a.status, StatusCode::OK, "{path}: {}", a.text);
        a
    }

    async fn all(&self) -> Vec<Value> {
        let a = self.get("/_sim/transfers").await;
        assert_eq!(a.status, StatusCode::OK);
        a.json["data"].as_array().unwrap().clone()
    }

    async fn advance(&self, secs: i64) {
        self.control("/_sim/clock", json!({"advance_secs": secs})).await;
    }

    async fn stop(self) -> (PathBuf, tempfile::TempDir) {
        self.task.abort();
        let _ = self.task.await;
        (self.db, self._dir)
    }
}

fn assert_error(a: &Answer, status: StatusCode, kind: &str, code: Option<&str>) {
    assert_eq!(a.status, status, "{}", a.text);
    assert_eq!(a.json["error"]["type"], kind, "{}", a.text);
    if let Some(code) = code {
        assert_eq!(a.json["error"]["code"], code, "{}", a.text);
    }
}

#[tokio::test]
async fn create_then_replay_returns_the_same_transfer() {
    let s = start(SimOptions::default()).await;
    let params = transfer_params("1250", "op_key_1");
    let first = s.create("op_key_1", &params).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    assert!(!first.replayed);
    let t = &first.json;
    assert!(t["id"].as_str().unwrap().starts_with("tr_"));
    assert_eq!(t["object"], "transfer");
    assert_eq!(t["amount"], 1250);
    assert_eq!(t["currency"], "usd");
    assert_eq!(t["destination"], "acct_dest");
    assert_eq!(t["transfer_group"], "op_key_1");
    assert_eq!(t["status"], "pending");
    assert_eq!(t["metadata"], json!({"proposal": "prop_1"}));
    assert_eq!(t["reversed"], false);
    assert_eq!(t["amount_reversed"], 0);
    assert!(t["created"].as_i64().unwrap() > 1_600_000_000);

    // Parameter order does not matter for the replay.
    let mut reordered = params.clone();
    reordered.reverse();
    let again = s.create("op_key_1", &reordered).await;
    assert_eq!(again.status, StatusCode::OK);
    assert!(again.replayed);
    assert_eq!(again.text, first.text, "identical body");

    assert_eq!(s.all().await.len(), 1);
    let fetched = s.get(&format!("/v1/transfers/{}", t["id"].as_str().unwrap())).await;
    assert_eq!(fetched.json["id"], t["id"]);
    assert_error(
        &s.get("/v1/transfers/tr_nope").await,
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        Some("resource_missing"),
    );
}

#[tokio::test]
async fn same_key_with_different_parameters_is_refused() {
    let s = start(SimOptions::default()).await;
    assert_eq!(s.create("k1", &transfer_params("100", "k1")).await.status, StatusCode::OK);
    let other = s.create("k1", &transfer_params("101", "k1")).await;
    assert_error(&other, StatusCode::BAD_REQUEST, "idempotency_error", None);
    assert!(other.json["error"]["message"].as_str().unwrap().contains("same parameters"));
    // Another endpoint with the same key is a mismatch too.
    let id = s.all().await[0]["id"].as_str().unwrap().to_string();
    let rev = s.form(&format!("/v1/transfers/{id}/reversals"), Some("k1"), &[]).await;
    assert_error(&rev, StatusCode::BAD_REQUEST, "idempotency_error", None);
    assert_eq!(s.all().await.len(), 1);
}

#[tokio::test]
async fn a_key_can_be_reused_after_its_window() {
    let s = start(SimOptions { key_window: Duration::from_secs(3600), ..SimOptions::default() }).await;
    let first = s.create("kw", &transfer_params("100", "kw")).await;
    assert_eq!(first.status, StatusCode::OK);
    s.advance(3599).await;
    assert!(s.create("kw", &transfer_params("100", "kw")).await.replayed);
    assert_eq!(s.create("kw", &transfer_params("200", "kw")).await.status, StatusCode::BAD_REQUEST);
    s.advance(2).await;
    let reused = s.create("kw", &transfer_params("200", "kw")).await;
    assert_eq!(reused.status, StatusCode::OK, "{}", reused.text);
    assert!(!reused.replayed);
    assert_ne!(reused.json["id"], first.json["id"]);
    assert_eq!(s.all().await.len(), 2);
    // The clock endpoint reports the offset.
    let clock = s.get("/_sim/clock").await;
    assert_eq!(clock.json["offset_secs"], 3601);
}

#[tokio::test]
async fn insufficient_funds_is_declined_stored_and_replayed() {
    let s = start(SimOptions::default()).await;
    s.control("/_sim/balances", json!({"account": "acct_src", "currency": "usd", "amount": 500})).await;
    let params = with(transfer_params("600", "poor"), "metadata[source_account]", "acct_src");
    let declined = s.create("poor", &params).await;
    assert_error(&declined, StatusCode::PAYMENT_REQUIRED, "card_error", Some("insufficient_funds"));
    let replay = s.create("poor", &params).await;
    assert!(replay.replayed);
    assert_eq!(replay.status, StatusCode::PAYMENT_REQUIRED);
    assert_eq!(replay.text, declined.text);
    assert!(s.all().await.is_empty(), "a decline stores no transfer");

    // 400 fits, and is debited: a second 400 no longer does.
    let ok = s.create("rich1", &with(transfer_params("400", "rich1"), "metadata[source_account]", "acct_src")).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.text);
    assert_eq!(ok.json["metadata"]["source_account"], "acct_src");
    let again = s.create("rich2", &with(transfer_params("400", "rich2"), "metadata[source_account]", "acct_src")).await;
    assert_error(&again, StatusCode::PAYMENT_REQUIRED, "card_error", Some("insufficient_funds"));
    // Other currencies and accounts keep the default balance.
    let eur = s.create("eur", &with(transfer_params("400", "eur"), "currency", "eur")).await;
    assert_eq!(eur.status, StatusCode::OK);
    assert_eq!(s.all().await.len(), 2);
}

#[tokio::test]
async fn closed_destination_is_declined() {
    let s = start(SimOptions::default()).await;
    s.control("/_sim/destinations/closed", json!({"destination": "acct_dest"})).await;
    let a = s.create("closed", &transfer_params("100", "closed")).await;
    assert_error(&a, StatusCode::BAD_REQUEST, "invalid_request_error", Some("account_closed"));
    assert_eq!(a.json["error"]["param"], "destination");
    assert!(s.all().await.is_empty());
    s.control("/_sim/destinations/closed", json!({"destination": "acct_dest", "closed": false})).await;
    assert_eq!(s.create("reopened", &transfer_params("100", "reopened")).await.status, StatusCode::OK);
}

#[tokio::test]
async fn limit_exceeded_above_the_per_transfer_limit() {
    let s = start(SimOptions { per_transfer_limit: 1_000, ..SimOptions::default() }).await;
    let a = s.create("big", &transfer_params("1001", "big")).await;
    assert_error(&a, StatusCode::PAYMENT_REQUIRED, "card_error", Some("limit_exceeded"));
    assert_eq!(s.create("ok", &transfer_params("1000", "ok")).await.status, StatusCode::OK);
    assert_eq!(s.all().await.len(), 1);
}

#[tokio::test]
async fn malformed_requests_are_400_and_not_stored() {
    let s = start(SimOptions::default()).await;
    let no_key = s.form("/v1/transfers", None, &transfer_params("100", "g")).await;
    assert_error(&no_key, StatusCode::BAD_REQUEST, "invalid_request_error", Some("parameter_missing"));
    for (bad, code) in [
        (with(transfer_params("100", "g"), "amount", "-5"), "parameter_invalid_integer"),
        (with(transfer_params("100", "g"), "amount", "abc"), "parameter_invalid_integer"),
        (with(transfer_params("100", "g"), "currency", "dollars"), "parameter_invalid"),
        (with(transfer_params("100", "g"), "surprise", "1"), "parameter_unknown"),
        (transfer_params("100", "g").into_iter().filter(|(k, _)| k != "destination").collect(), "parameter_missing"),
    ] {
        let a = s.create("mal", &bad).await;
        assert_error(&a, StatusCode::BAD_REQUEST, "invalid_request_error", Some(code));
    }
    // Not stored: the same key works with good parameters.
    assert_eq!(s.create("mal", &transfer_params("100", "g")).await.status, StatusCode::OK);
    // Garbage bodies never crash it.
    let raw = s
        .http
        .post(format!("{}/v1/transfers", s.base))
        .header("Idempotency-Key", "garbage")
        .body(vec![0xff, 0xfe, b'%', b'z', b'&', b'='])
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), StatusCode::BAD_REQUEST);
    let huge = s
        .http
        .post(format!("{}/v1/transfers", s.base))
        .header("Idempotency-Key", "huge")
        .body(vec![b'a'; 70 * 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(huge.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let bad_json = s.http.post(format!("{}/_sim/faults", s.base)).body("{").send().await.unwrap();
    assert_eq!(bad_json.status(), StatusCode::BAD_REQUEST);
    assert_eq!(s.all().await.len(), 1);
}

#[tokio::test]
async fn pending_becomes_paid_after_settle_after() {
    let s = start(SimOptions { settle_after: Duration::from_millis(200), ..SimOptions::default() }).await;
    let t = s.create("settle", &transfer_params("100", "settle")).await;
    assert_eq!(t.json["status"], "pending");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let id = t.json["id"].as_str().unwrap();
    assert_eq!(s.get(&format!("/v1/transfers/{id}")).await.json["status"], "paid");

    // The injectable clock settles too.
    let s = start(SimOptions::default()).await;
    let t = s.create("settle", &transfer_params("100", "settle")).await;
    assert_eq!(t.json["status"], "pending");
    s.advance(3).await;
    assert_eq!(s.get("/v1/transfers?transfer_group=settle").await.json["data"][0]["status"], "paid");
}

#[tokio::test]
async fn list_by_transfer_group() {
    let s = start(SimOptions::default()).await;
    s.create("a", &transfer_params("100", "group_a")).await;
    s.create("b", &transfer_params("200", "group_b")).await;
    s.create("a2", &transfer_params("300", "group_a")).await;
    let a = s.get("/v1/transfers?transfer_group=group_a").await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.json["object"], "list");
    assert_eq!(a.json["has_more"], false);
    let amounts: Vec<i64> = a.json["data"].as_array().unwrap().iter().map(|t| t["amount"].as_i64().unwrap()).collect();
    assert_eq!(amounts, vec![300, 100], "newest first");
    let none = s.get("/v1/transfers?transfer_group=nothing").await;
    assert_eq!(none.json["data"], json!([]));
    let limited = s.get("/v1/transfers?limit=2").await;
    assert_eq!(limited.json["data"].as_array().unwrap().len(), 2);
    assert_eq!(limited.json["has_more"], true);
    assert_eq!(s.get("/v1/transfers?bogus=1").await.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn reversals_partial_full_overdraw_and_past_cutoff() {
    let s = start(SimOptions::default()).await;
    let t = s.create("rv", &transfer_params("1000", "rv")).await;
    let id = t.json["id"].as_str().unwrap().to_string();
    let path = format!("/v1/transfers/{id}/reversals");
    let partial = vec![("amount".to_string(), "400".to_string()), ("metadata[reason]".to_string(), "oops".to_string())];
    let r = s.form(&path, Some("rv1"), &partial).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(r.json["id"].as_str().unwrap().starts_with("trr_"));
    assert_eq!(r.json["object"], "transfer_reversal");
    assert_eq!(r.json["amount"], 400);
    assert_eq!(r.json["transfer"], id.as_str());
    let replay = s.form(&path, Some("rv1"), &partial).await;
    assert!(replay.replayed);
    assert_eq!(replay.text, r.text);
    let after = s.get(&format!("/v1/transfers/{id}")).await.json;
    assert_eq!((after["amount_reversed"].as_i64(), after["reversed"].as_bool()), (Some(400), Some(false)));

    let too_much = s.form(&path, Some("rv2"), &[("amount".into(), "601".into())]).await;
    assert_error(&too_much, StatusCode::BAD_REQUEST, "invalid_request_error", Some("amount_too_large"));
    let rest = s.form(&path, Some("rv3"), &[]).await;
    assert_eq!(rest.json["amount"], 600);
    let after = s.get(&format!("/v1/transfers/{id}")).await.json;
    assert_eq!(after["reversed"], true);
    assert_eq!(after["amount_reversed"], 1000);
    assert_eq!(after["status"], "reversed");
    let again = s.form(&path, Some("rv4"), &[]).await;
    assert_error(&again, StatusCode::BAD_REQUEST, "invalid_request_error", Some("transfer_already_reversed"));
    let missing = s.form("/v1/transfers/tr_missing/reversals", Some("rv5"), &[]).await;
    assert_error(&missing, StatusCode::NOT_FOUND, "invalid_request_error", Some("resource_missing"));

    // The transfer's reversals are listed, newest first, with their metadata.
    let listed = s.get(&path).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
    assert_eq!(listed.json["object"], "list");
    let data = listed.json["data"].as_array().unwrap();
    assert_eq!(data.iter().map(|r| r["amount"].as_i64().unwrap()).collect::<Vec<_>>(), vec![600, 400]);
    assert_eq!(data[1]["metadata"]["reason"], "oops");
    assert_eq!(data[1]["id"], r.json["id"]);
    assert!(data.iter().all(|r| r["transfer"] == id.as_str() && r["object"] == "transfer_reversal"));
    let unknown = s.get("/v1/transfers/tr_missing/reversals").await;
    assert_error(&unknown, StatusCode::NOT_FOUND, "invalid_request_error", Some("resource_missing"));

    // Past the cutoff (7 days by default), measured with the simulator clock.
    let old = s.create("old", &transfer_params("1000", "old")).await;
    let old_id = old.json["id"].as_str().unwrap();
    s.advance(7 * 24 * 3600 + 1).await;
    let late = s.form(&format!("/v1/transfers/{old_id}/reversals"), Some("late"), &[]).await;
    assert_error(&late, StatusCode::BAD_REQUEST, "invalid_request_error", Some("transfer_reversal_window_closed"));
    assert_eq!(s.get(&format!("/v1/transfers/{old_id}")).await.json["amount_reversed"], 0);
}

/// Writes a raw HTTP/1.1 create and returns every byte the server sent back.
async fn raw_create(addr: std::net::SocketAddr, key: &str, body: &str) -> Vec<u8> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST /v1/transfers HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Idempotency-Key: {key}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => received.extend_from_slice(&buf[..n]),
            Err(_) => panic!("the connection stayed open; received {:?}", String::from_utf8_lossy(&received)),
        }
    }
    received
}

#[tokio::test]
async fn drop_after_accept_creates_the_transfer_and_answers_nothing() {
    let s = start(SimOptions::default()).await;
    s.control("/_sim/faults", json!({"mode": "drop_after_accept", "count": 1})).await;
    assert_eq!(s.get("/_sim/faults").await.json["count"], 1);
    let body = "amount=700&currency=usd&destination=acct_dest&transfer_group=dropped";
    let received = raw_create(s.addr, "dropped", body).await;
    assert!(received.is_empty(), "got {:?}", String::from_utf8_lossy(&received));
    assert_eq!(s.get("/_sim/faults").await.json["count"], 0);
    let all = s.all().await;
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["transfer_group"], "dropped");
    // A retry with the same key replays the original answer: still one transfer.
    let received = raw_create(s.addr, "dropped", body).await;
    let text = String::from_utf8_lossy(&received);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.to_ascii_lowercase().contains("idempotent-replayed: true"), "{text}");
    assert_eq!(s.get("/v1/transfers?transfer_group=dropped").await.json["data"].as_array().unwrap().len(), 1);
    // The next creation is normal again.
    assert_eq!(s.create("after", &transfer_params("1", "after")).await.status, StatusCode::OK);
}

#[tokio::test]
async fn error_500_creates_nothing_and_answers_html() {
    let s = start(SimOptions::default()).await;
    s.control("/_sim/faults", json!({"mode": "error_500", "count": 2})).await;
    for _ in 0..2 {
        let r = s
            .http
            .post(format!("{}/v1/transfers", s.base))
            .header("Idempotency-Key", "e500")
            .form(&transfer_params("100", "e500"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
        let text = r.text().await.unwrap();
        assert!(text.starts_with("<html>") && text.contains("Internal Server Error"), "{text}");
    }
    assert!(s.all().await.is_empty());
    // Not stored under the key: the retry with the same key creates it.
    let ok = s.create("e500", &transfer_params("100", "e500")).await;
    assert_eq!(ok.status, StatusCode::OK);
    assert!(!ok.replayed);
    assert_eq!(s.all().await.len(), 1);
}

#[tokio::test]
async fn an_error_500_on_reversals_reverses_nothing_and_leaves_transfers_alone() {
    let s = start(SimOptions::default()).await;
    let t = s.create("rf", &transfer_params("1000", "rf")).await;
    let id = t.json["id"].as_str().unwrap().to_string();
    let set = s.control("/_sim/faults", json!({"mode": "error_500", "count": 1, "on": "reversals"})).await;
    assert_eq!(set.json["on"], "reversals");
    // A transfer creation is not what the fault is for.
    assert_eq!(s.create("rf2", &transfer_params("10", "rf2")).await.status, StatusCode::OK);
    let path = format!("/v1/transfers/{id}/reversals");
    let failed = s.form(&path, Some("rfr"), &[]).await;
    assert_eq!(failed.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(s.get(&format!("/v1/transfers/{id}")).await.json["amount_reversed"], 0);
    assert_eq!(s.get(&path).await.json["data"], json!([]));
    // The key was not kept: the same request again reverses.
    assert_eq!(s.form(&path, Some("rfr"), &[]).await.status, StatusCode::OK);
    // Only error_500 applies to reversals.
    let bad = s.http.post(format!("{}/_sim/faults", s.base)).json(&json!({"mode": "delay", "on": "reversals"}));
    assert_eq!(bad.send().await.unwrap().status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn delay_answers_normally_after_the_delay() {
    let s = start(SimOptions::default()).await;
    s.control("/_sim/faults", json!({"mode": "delay", "count": 1, "delay_ms": 400})).await;
    let started = Instant::now();
    let a = s.create("slow", &transfer_params("100", "slow")).await;
    assert!(started.elapsed() >= Duration::from_millis(400));
    assert_eq!(a.status, StatusCode::OK);
    let started = Instant::now();
    s.create("fast", &transfer_params("100", "fast")).await;
    assert!(started.elapsed() < Duration::from_millis(400));
    // Clearing faults.
    s.control("/_sim/faults", json!({"mode": "delay", "count": 5, "delay_ms": 10_000})).await;
    let cleared = answer(s.http.delete(format!("{}/_sim/faults", s.base)).send().await.unwrap()).await;
    assert_eq!(cleared.json["count"], 0);
}

#[tokio::test]
async fn state_survives_a_restart() {
    let s = start(SimOptions::default()).await;
    let params = transfer_params("4242", "persist");
    let first = s.create("persist", &params).await;
    assert_eq!(first.status, StatusCode::OK);
    s.control("/_sim/destinations/closed", json!({"destination": "acct_gone"})).await;
    s.advance(10).await;
    let (db, dir) = s.stop().await;

    let (addr, task) = sim::spawn("127.0.0.1:0".parse().unwrap(), &db, SimOptions::default()).await.unwrap();
    let s = Sim { base: format!("http://{addr}"), addr, db, task, http: client(), _dir: dir };
    let all = s.all().await;
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["id"], first.json["id"]);
    let replay = s.create("persist", &params).await;
    assert!(replay.replayed);
    assert_eq!(replay.json["id"], first.json["id"]);
    assert_eq!(s.create("persist", &transfer_params("1", "persist")).await.status, StatusCode::BAD_REQUEST);
    let gone = s.create("gone", &with(transfer_params("1", "gone"), "destination", "acct_gone")).await;
    assert_error(&gone, StatusCode::BAD_REQUEST, "invalid_request_error", Some("account_closed"));
    assert_eq!(s.get("/_sim/clock").await.json["offset_secs"], 10);
}

#[tokio::test]
async fn concurrent_creates_with_one_key_make_one_transfer() {
    let s = start(SimOptions::default()).await;
    let params = transfer_params("500", "race");
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (http, url, params) = (s.http.clone(), format!("{}/v1/transfers", s.base), params.clone());
        tasks.push(tokio::spawn(async move {
            http.post(url).header("Idempotency-Key", "race").form(&params).send().await.unwrap().status()
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), StatusCode::OK);
    }
    assert_eq!(s.all().await.len(), 1);
}
