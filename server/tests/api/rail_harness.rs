//! Harness for the commit tests: a real `countersign rail-sim` process, a
//! server pointed at it, and helpers to get a proposal approved and commit it.

#![allow(dead_code)]

use serde_json::{json, Value};
use std::time::Duration;
use tempfile::TempDir;
use tokio::process::{Child, Command};

use crate::helpers::*;

/// A `countersign rail-sim` process with its own SQLite file, killed when dropped.
pub struct RailSim {
    pub url: String,
    pub dir: TempDir,
    http: reqwest::Client,
    child: Child,
}

impl RailSim {
    pub async fn start() -> RailSim {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut cmd = Command::new(BIN);
        // Transfers settle in 200 ms rather than 2 s: the tests wait for it.
        cmd.args(["rail-sim", "--listen", "127.0.0.1:0", "--settle-after-ms", "200", "--db"])
            .arg(dir.path().join("rail.db"))
            .env("COUNTERSIGN_LOG", "warn");
        let (child, url) = countersign_testkit::spawn_listening(cmd, "rail-sim listening on ", Duration::from_secs(30))
            .await
            .expect("rail-sim listens within 30 s");
        RailSim { url, dir, http: reqwest::Client::new(), child }
    }

    async fn sim_post(&self, path: &str, body: Value) -> Value {
        let r = self.http.post(format!("{}{path}", self.url)).json(&body).send().await.expect("rail-sim answers");
        assert!(r.status().is_success(), "POST {path}: {}", r.status());
        r.json().await.expect("json")
    }

    /// Every transfer the rail holds, oldest first.
    pub async fn transfers(&self) -> Vec<Value> {
        let r = self.http.get(format!("{}/_sim/transfers", self.url)).send().await.expect("rail-sim answers");
        let body: Value = r.json().await.expect("json");
        body["data"].as_array().expect("data").clone()
    }

    /// `POST /_sim/faults`: the next `count` transfer creations misbehave.
    pub async fn fault(&self, mode: &str, count: u32) {
        self.sim_post("/_sim/faults", json!({"mode": mode, "count": count})).await;
    }

    /// [`RailSim::fault`], waiting `delay_ms` (`delay`, `drop_after_accept`).
    pub async fn fault_after(&self, mode: &str, count: u32, delay_ms: u64) {
        self.sim_post("/_sim/faults", json!({"mode": mode, "count": count, "delay_ms": delay_ms})).await;
    }

    /// How many requests a `/v1` route received, e.g. `"GET /v1/transfers"`.
    pub async fn calls(&self, route: &str) -> u64 {
        let r = self.http.get(format!("{}/_sim/calls", self.url)).send().await.expect("rail-sim answers");
        let body: Value = r.json().await.expect("json");
        body[route].as_u64().unwrap_or(0)
    }

    pub async fn set_balance(&self, account: &str, currency: &str, amount: i64) {
        self.sim_post("/_sim/balances", json!({"account": account, "currency": currency, "amount": amount})).await;
    }

    pub async fn close_destination(&self, destination: &str) {
        self.sim_post("/_sim/destinations/closed", json!({"destination": destination})).await;
    }

    pub async fn reopen_destination(&self, destination: &str) {
        self.sim_post("/_sim/destinations/closed", json!({"destination": destination, "closed": false})).await;
    }

    /// A transfer made on the rail directly, under `group` (as if the rail's
    /// own support had pushed a payment through), and settled (the rail's
    /// clock moves past its settlement delay). Returns the rail's record.
    pub async fn push_transfer(&self, group: &str, amount: u64, destination: &str) -> Value {
        let form = [
            ("amount", amount.to_string()),
            ("currency", "usd".into()),
            ("destination", destination.into()),
            ("transfer_group", group.into()),
            ("metadata[source_account]", ACME_SOURCE.into()),
        ];
        let r = self
            .http
            .post(format!("{}/v1/transfers", self.url))
            .header("Idempotency-Key", format!("support-{group}-{amount}-{destination}"))
            .form(&form)
            .send()
            .await
            .expect("rail answers");
        assert!(r.status().is_success(), "POST /v1/transfers: {}", r.status());
        let record: Value = r.json().await.expect("json");
        // Settled at once: past the simulator's settlement delay.
        self.advance_clock(5).await;
        record
    }

    /// `POST /_sim/faults` on reversals: the next `count` reversal creations
    /// answer 500 and reverse nothing.
    pub async fn fail_reversals(&self, count: u32) {
        self.sim_post("/_sim/faults", json!({"mode": "error_500", "count": count, "on": "reversals"})).await;
    }

    /// A reversal of rail transfer `transfer` made on the rail directly under
    /// idempotency key `key`, naming that key in its metadata as Countersign's
    /// connector does when `as_countersign` (else as the rail's support would,
    /// with none). Returns the rail's record.
    pub async fn push_reversal(&self, transfer: &str, key: &str, amount: u64, as_countersign: bool) -> Value {
        let mut form = vec![("amount".to_owned(), amount.to_string())];
        if as_countersign {
            form.push(("metadata[countersign_key]".to_owned(), key.to_owned()));
        }
        let r = self
            .http
            .post(format!("{}/v1/transfers/{transfer}/reversals", self.url))
            .header("Idempotency-Key", key)
            .form(&form)
            .send()
            .await
            .expect("rail answers");
        assert!(r.status().is_success(), "POST reversal: {}", r.status());
        r.json().await.expect("json")
    }

    pub async fn advance_clock(&self, secs: i64) {
        self.sim_post("/_sim/clock", json!({"advance_secs": secs})).await;
    }
}

/// A fixture server (with `config`) talking to a fresh rail-sim process.
pub async fn with_rail(config: &str) -> (TestServer, RailSim) {
    with_rail_env(config, &[]).await
}

/// [`with_rail`] with extra environment for the server: a process then
/// (the environment is the process's; failpoints, clock skew), else the
/// server runs in-process with the rail in its config file.
pub async fn with_rail_env(config: &str, extra: &[(&str, &str)]) -> (TestServer, RailSim) {
    let rail = RailSim::start().await;
    if extra.is_empty() {
        let server = TestServer::start_with(&rail_config(&rail, config)).await;
        return (server, rail);
    }
    let scratch = Scratch::with_fixture(config);
    scratch.apply_fixture().await;
    let server = scratch.serve(&env_for(&rail, extra)).await;
    (server, rail)
}

/// `config` with this rail as `rail.url` and reconciliation every second
/// (each unless `config` sets it), for servers and the CLI alike.
pub fn rail_config(rail: &RailSim, config: &str) -> String {
    let mut table: toml::Table = config.parse().expect("a test config is TOML");
    let section = table.entry("rail").or_insert_with(|| toml::Table::new().into());
    let section = section.as_table_mut().expect("[rail] is a table");
    section.entry("url").or_insert_with(|| rail.url.clone().into());
    section.entry("reconcile_interval_secs").or_insert(1.into());
    toml::to_string(&table).expect("the config serializes")
}

/// The rail environment plus `extra`, borrowed as the harness wants it.
pub fn env_for<'a>(rail: &'a RailSim, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut env: Vec<(&str, &str)> =
        vec![("COUNTERSIGN_RAIL__URL", rail.url.as_str()), ("COUNTERSIGN_RAIL__RECONCILE_INTERVAL_SECS", "1")];
    env.extend_from_slice(extra);
    env
}

static RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A fresh run id, so equal requests are distinct proposals.
pub fn fresh_run() -> String {
    format!("commit-run-{}", RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

/// A small payment to the trusted payee: approved by policy at once.
/// Returns (proposal id, approval token).
pub async fn auto_approved(server: &TestServer, amount_minor: u64) -> (String, String) {
    // An invoice of its own: a copy of another's is never approved by policy alone.
    let run = fresh_run();
    let body = with(
        transfer(),
        json!({"run_id": run, "amount_minor": amount_minor, "destination": ACME_TRUSTED_PAYEE, "invoice_id": run}),
    );
    let p = server.create(&body).await;
    assert_eq!(p["status"], "approved", "{p}");
    let id = p["id"].as_str().expect("id").to_owned();
    let token = p["approval_token"].as_str().unwrap_or_else(|| panic!("approval_token: {p}")).to_owned();
    (id, token)
}

impl TestServer {
    /// `POST /api/v1/proposals/{id}/commit` as the agent with `key`.
    pub async fn commit_as(&self, key: &str, id: &str, token: &str) -> Reply {
        send(self.post_json(&format!("/api/v1/proposals/{id}/commit"), key, &json!({"approval_token": token}))).await
    }

    /// Commits as the acme payout bot.
    pub async fn commit(&self, id: &str, token: &str) -> Reply {
        self.commit_as(ACME_BOT_KEY, id, token).await
    }

    /// Polls the proposal until `pred` holds on it (at most `secs` seconds).
    pub async fn wait_for(&self, id: &str, secs: u64, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let r = self.get_proposal(ACME_BOT_KEY, id).await;
            if r.status == 200 && pred(&r.body) {
                return r.body;
            }
            assert!(tokio::time::Instant::now() < deadline, "proposal {id} never got there: {}", r.text);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until the proposal's status is `status`.
    pub async fn wait_status(&self, id: &str, status: &str, secs: u64) -> Value {
        self.wait_for(id, secs, |p| p["status"] == status).await
    }
}

/// Commits each `(server, id, token)` at once; returns the answers in order.
pub async fn commit_all(commits: Vec<(std::sync::Arc<TestServer>, String, String)>) -> Vec<Reply> {
    let tasks: Vec<_> = commits
        .into_iter()
        .map(|(server, id, token)| tokio::spawn(async move { server.commit(&id, &token).await }))
        .collect();
    let mut replies = Vec::new();
    for t in tasks {
        replies.push(t.await.unwrap());
    }
    replies
}

/// (paid, refused by the daily budget) among commit answers; anything else fails.
pub fn budget_outcomes(replies: &[Reply]) -> (usize, usize) {
    let (mut ok, mut denied) = (0, 0);
    for r in replies {
        match r.status {
            200 => ok += 1,
            403 => {
                r.assert_error(403, "policy_denied");
                assert_eq!(r.detail_rules(), ["daily_budget"], "{}", r.text);
                denied += 1;
            }
            other => panic!("unexpected {other}: {}", r.text),
        }
    }
    (ok, denied)
}

/// The operation ids of commit answers, each of which must be 200.
pub fn operations_of(replies: &[Reply]) -> std::collections::BTreeSet<String> {
    replies
        .iter()
        .map(|r| {
            assert_eq!(r.status, 200, "{}", r.text);
            r.body["operation"]["id"].as_str().unwrap().to_owned()
        })
        .collect()
}
