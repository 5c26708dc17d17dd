//! The simulator connector (SPEC sections 6 and 12) against the bundled rail
//! simulator, spawned in-process on a loopback port with a temporary SQLite
//! file.

use countersign::rail::sim::{self, SimOptions};
use countersign::rail::simulator::{
    CreateOutcome, Decline, RailConfig, RailStatus, RailTransfer, ReversalOutcome, SimulatorRail as RailClient,
    TransferOrder, UnknownCause,
};
use serde_json::{json, Value};
use std::time::Duration;

struct Sim {
    base: String,
    http: reqwest::Client,
    task: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Drop for Sim {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn start(options: SimOptions) -> Sim {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rail-sim.db");
    let (addr, task) = sim::spawn("127.0.0.1:0".parse().unwrap(), &db, options).await.unwrap();
    let http = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(20)).build().unwrap();
    Sim { base: format!("http://{addr}"), http, task, _dir: dir }
}

impl Sim {
    fn client(&self) -> RailClient {
        RailClient::new(RailConfig::new(&self.base)).unwrap()
    }

    fn client_with_timeout(&self, total: Duration) -> RailClient {
        RailClient::new(RailConfig { total_timeout: total, ..RailConfig::new(&self.base) }).unwrap()
    }

    async fn control(&self, path: &str, body: Value) {
        let r = self.http.post(format!("{}{path}", self.base)).json(&body).send().await.unwrap();
        assert!(r.status().is_success(), "{path}: {}", r.text().await.unwrap());
    }

    async fn all(&self) -> Vec<Value> {
        let r = self.http.get(format!("{}/_sim/transfers", self.base)).send().await.unwrap();
        let v: Value = r.json().await.unwrap();
        v["data"].as_array().unwrap().clone()
    }
}

const META: &[(&str, &str)] = &[("proposal_id", "prop_1")];

fn order<'a>(key: &'a str, amount: u64) -> TransferOrder<'a> {
    TransferOrder {
        idempotency_key: key,
        operation_id: "",
        amount_minor: amount,
        currency: "USD",
        destination: "acct_dest",
        payee_name: "Dest Ltd",
        reference: "Invoice 1",
        source_account: "acct_src",
        metadata: META,
    }
}

fn accepted(outcome: CreateOutcome) -> RailTransfer {
    match outcome {
        CreateOutcome::Accepted(t) => t,
        other => panic!("expected Accepted, got {other:?}"),
    }
}

#[tokio::test]
async fn accepted_transfer_is_parsed() {
    let s = start(SimOptions::default()).await;
    let t = accepted(s.client().create_transfer(&order("op_accept", 1250)).await);
    assert!(t.id.starts_with("tr_"), "{t:?}");
    assert_eq!(t.amount_minor, 1250);
    assert_eq!(t.currency, "USD");
    assert_eq!(t.destination, "acct_dest");
    assert_eq!(t.transfer_group.as_deref(), Some("op_accept"));
    assert_eq!(t.status, RailStatus::Pending);
    let all = s.all().await;
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["metadata"], json!({"source_account": "acct_src", "proposal_id": "prop_1"}));
}

#[tokio::test]
async fn replay_with_the_same_key_returns_the_same_transfer() {
    let s = start(SimOptions::default()).await;
    let c = s.client();
    let first = accepted(c.create_transfer(&order("op_replay", 700)).await);
    let again = accepted(c.create_transfer(&order("op_replay", 700)).await);
    assert_eq!(first.id, again.id);
    assert_eq!(s.all().await.len(), 1);
    let found = c.find_by_group("op_replay").await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].id, first.id);
}

#[tokio::test]
async fn insufficient_funds_is_a_typed_decline() {
    let s = start(SimOptions::default()).await;
    s.control("/_sim/balances", json!({"account": "acct_src", "currency": "usd", "amount": 500})).await;
    let outcome = s.client().create_transfer(&order("op_poor", 501)).await;
    assert_eq!(outcome, CreateOutcome::Declined(Decline::InsufficientFunds.into()));
    assert_eq!(Decline::InsufficientFunds.code(), "insufficient_funds");
    assert!(s.all().await.is_empty());
    // Exactly the balance goes through.
    accepted(s.client().create_transfer(&order("op_rich", 500)).await);
}

#[tokio::test]
async fn closed_destination_is_a_typed_decline() {
    let s = start(SimOptions::default()).await;
    s.control("/_sim/destinations/closed", json!({"destination": "acct_dest"})).await;
    let outcome = s.client().create_transfer(&order("op_closed", 100)).await;
    assert_eq!(outcome, CreateOutcome::Declined(Decline::DestinationClosed.into()));
    assert_eq!(Decline::DestinationClosed.code(), "destination_closed");
    assert!(s.all().await.is_empty());
}

#[tokio::test]
async fn over_the_per_transfer_limit_is_a_typed_decline() {
    let s = start(SimOptions { per_transfer_limit: 1_000, ..SimOptions::default() }).await;
    let outcome = s.client().create_transfer(&order("op_limit", 1_001)).await;
    assert_eq!(outcome, CreateOutcome::Declined(Decline::LimitExceeded.into()));
    assert_eq!(Decline::LimitExceeded.code(), "limit_exceeded");
    assert!(s.all().await.is_empty());
}

#[tokio::test]
async fn malformed_request_is_rail_rejected() {
    let s = start(SimOptions::default()).await;
    let mut o = order("op_bad_currency", 100);
    o.currency = "DOLLARS";
    assert_eq!(s.client().create_transfer(&o).await, CreateOutcome::Declined(Decline::RailRejected.into()));
    assert_eq!(Decline::RailRejected.code(), "rail_rejected");
    assert!(s.all().await.is_empty());
}

#[tokio::test]
async fn drop_after_accept_is_unknown_and_the_transfer_exists() {
    let s = start(SimOptions::default()).await;
    s.control("/_sim/faults", json!({"mode": "drop_after_accept", "count": 1})).await;
    let c = s.client();
    let outcome = c.create_transfer(&order("op_dropped", 900)).await;
    assert_eq!(outcome, CreateOutcome::Unknown(UnknownCause::Connection));
    let found = c.find_by_group("op_dropped").await.unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].amount_minor, found[0].currency.as_str()), (900, "USD"));
    assert_eq!(found[0].transfer_group.as_deref(), Some("op_dropped"));
    // The retry with the same key replays the original transfer.
    let again = accepted(c.create_transfer(&order("op_dropped", 900)).await);
    assert_eq!(again.id, found[0].id);
    assert_eq!(s.all().await.len(), 1);
}

#[tokio::test]
async fn error_500_is_unknown_without_the_html() {
    let s = start(SimOptions::default()).await;
    s.control("/_sim/faults", json!({"mode": "error_500", "count": 1})).await;
    let outcome = s.client().create_transfer(&order("op_500", 100)).await;
    assert_eq!(outcome, CreateOutcome::Unknown(UnknownCause::ServerError(500)));
    let debug = format!("{outcome:?} {outcome:#?}").to_ascii_lowercase();
    assert!(!debug.contains('<') && !debug.contains("html") && !debug.contains("internal server"), "{debug}");
    assert!(s.all().await.is_empty());
}

#[tokio::test]
async fn delay_past_the_total_timeout_is_unknown_timeout() {
    let s = start(SimOptions::default()).await;
    s.control("/_sim/faults", json!({"mode": "delay", "count": 1, "delay_ms": 1_500})).await;
    let c = s.client_with_timeout(Duration::from_millis(300));
    let started = std::time::Instant::now();
    let outcome = c.create_transfer(&order("op_slow", 100)).await;
    assert_eq!(outcome, CreateOutcome::Unknown(UnknownCause::Timeout));
    assert!(started.elapsed() < Duration::from_millis(1_400), "{:?}", started.elapsed());
    // The transfer was created by the rail all the same.
    assert_eq!(c.find_by_group("op_slow").await.unwrap().len(), 1);
}

#[tokio::test]
async fn connection_refused_is_unknown_connection() {
    // Bind then drop a listener: nothing listens on that port any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let c = RailClient::new(RailConfig::new(format!("http://127.0.0.1:{port}"))).unwrap();
    assert_eq!(c.create_transfer(&order("op_refused", 100)).await, CreateOutcome::Unknown(UnknownCause::Connection));
    assert_eq!(c.find_by_group("op_refused").await, Err(UnknownCause::Connection));
    assert_eq!(c.reverse("tr_x", "rev_refused", None).await, ReversalOutcome::Unknown(UnknownCause::Connection));
}

#[tokio::test]
async fn find_by_group_for_an_unknown_key_is_empty() {
    let s = start(SimOptions::default()).await;
    let c = s.client();
    accepted(c.create_transfer(&order("op_other", 100)).await);
    assert_eq!(c.find_by_group("op_never_used").await.unwrap(), vec![]);
}

#[tokio::test]
async fn reverse_then_too_late_past_the_cutoff() {
    let s = start(SimOptions::default()).await;
    let c = s.client();
    let t = accepted(c.create_transfer(&order("op_rev", 1_000)).await);
    match c.reverse(&t.id, "rev_1", None).await {
        ReversalOutcome::Reversed { reversal_id } => assert!(reversal_id.starts_with("trr_"), "{reversal_id}"),
        other => panic!("expected Reversed, got {other:?}"),
    }
    // Replaying the reversal key gives the same answer, not a second reversal.
    assert!(matches!(c.reverse(&t.id, "rev_1", None).await, ReversalOutcome::Reversed { .. }));
    let found = c.find_by_group("op_rev").await.unwrap();
    assert_eq!(found[0].status, RailStatus::Reversed);
    // Already fully reversed: a definite refusal, not a timeout or success.
    assert_eq!(c.reverse(&t.id, "rev_2", None).await, ReversalOutcome::Declined(Decline::RailRejected.into()));

    let late = accepted(c.create_transfer(&order("op_late", 1_000)).await);
    s.control("/_sim/clock", json!({"advance_secs": 8 * 86_400})).await;
    assert_eq!(c.reverse(&late.id, "rev_late", Some(500)).await, ReversalOutcome::TooLate);
}

#[tokio::test]
async fn config_is_validated() {
    use secrecy::SecretString;
    assert!(RailClient::new(RailConfig::new("not a url")).is_err());
    assert!(RailClient::new(RailConfig::new("ftp://127.0.0.1/")).is_err());
    let key = Some(SecretString::from("sk_test_123"));
    let remote_http = RailConfig { api_key: key.clone(), ..RailConfig::new("http://rail.example.com") };
    assert!(RailClient::new(remote_http).is_err());
    let local_http = RailConfig { api_key: key.clone(), ..RailConfig::new("http://127.0.0.1:1") };
    let client = RailClient::new(local_http).unwrap();
    assert!(!format!("{client:?}").contains("sk_test"));
    assert!(RailClient::new(RailConfig { api_key: key, ..RailConfig::new("https://rail.example.com") }).is_ok());
}
