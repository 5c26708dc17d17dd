//! Stripe: the connector against e2e/rails/stripe/stripe_fake.py, a Python
//! process that checks every request and answer against Stripe's published
//! OpenAPI description (the vendored excerpt), behind the proxy. Transfers
//! pay a connected account; payouts pay a bank account of the tenant's
//! connected account (`Stripe-Account`).

use countersign::config::rails::STRIPE_API_VERSION;
use countersign::rail::stripe::{StripeConfig, StripeRail};
use countersign::rail::{Decline, Rail, RailConfig};
use serde_json::{json, Value};
use std::process::Stdio;

use crate::harness::{
    checkers_python, control, fresh, http_client, repo, Child, Garbage, Harness, Order, Proxy, Refusing,
};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Transfers,
    Payouts,
}

/// The connected account payouts leave from, and its bank account.
const TENANT_ACCOUNT: &str = "acct_tenant0000000001";
const PAYEE_ACCOUNT: &str = "acct_payee00000000001";
const PAYEE_BANK: &str = "ba_payee0000000000001";

pub struct StripeHarness {
    rail: StripeRail,
    mode: Mode,
    base: String,
    http: reqwest::Client,
    proxy: Proxy,
    _child: Child,
    _dir: tempfile::TempDir,
}

/// Starts the Stripe fake; its URL once it serves.
pub async fn start_fake(dir: &std::path::Path) -> Option<(Child, String)> {
    let python = checkers_python()?;
    let url_file = dir.join("stripe.url");
    let child = Child(
        std::process::Command::new(python)
            .arg(repo().join("e2e/rails/stripe/stripe_fake.py"))
            .arg("--url-file")
            .arg(&url_file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the Stripe fake"),
    );
    for _ in 0..200 {
        if let Ok(url) = std::fs::read_to_string(&url_file) {
            return Some((child, url.trim().to_owned()));
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the Stripe fake did not start");
}

impl StripeHarness {
    pub async fn start(mode: Mode) -> Option<StripeHarness> {
        let dir = tempfile::tempdir().unwrap();
        let (child, base) = start_fake(dir.path()).await?;
        let http = http_client();
        let accounts = [
            json!({"id": TENANT_ACCOUNT, "external_accounts": [PAYEE_BANK, "ba_closed000000000001"]}),
            json!({"id": PAYEE_ACCOUNT}),
            json!({"id": "acct_closed0000000001", "closed": true}),
        ];
        for account in accounts {
            control(&http, format!("{base}/_sim/accounts"), account).await;
        }
        let addr = base.trim_start_matches("http://").parse().expect("the fake's address");
        let proxy = Proxy::start(addr).await;
        let rail = StripeRail::new(StripeConfig {
            http: RailConfig {
                api_key: Some("sk_test_conformance".to_owned().into()),
                total_timeout: std::time::Duration::from_secs(5),
                ..RailConfig::new(proxy.url())
            },
            api_version: STRIPE_API_VERSION.into(),
            account: (mode == Mode::Payouts).then(|| TENANT_ACCOUNT.to_owned()),
            resubmit_window: chrono::Duration::hours(23),
        })
        .unwrap();
        Some(StripeHarness { rail, mode, base, http, proxy, _child: child, _dir: dir })
    }

    async fn objects(&self) -> Vec<Value> {
        let all: Value =
            self.http.get(format!("{}/_sim/objects", self.base)).send().await.unwrap().json().await.unwrap();
        all["data"].as_array().unwrap().clone()
    }

    /// Every request the fake received.
    pub async fn requests(&self) -> Vec<Value> {
        let all: Value =
            self.http.get(format!("{}/_sim/requests", self.base)).send().await.unwrap().json().await.unwrap();
        all["data"].as_array().cloned().unwrap_or_else(|| all.as_array().cloned().unwrap_or_default())
    }
}

#[async_trait::async_trait]
impl Harness for StripeHarness {
    fn rail(&self) -> &dyn Rail {
        &self.rail
    }

    /// A paid payout left Stripe for the bank: too late.
    fn reverses(&self) -> bool {
        self.mode == Mode::Transfers
    }

    fn order(&self, amount: u64) -> Order {
        let operation = fresh("op");
        let destination = match self.mode {
            Mode::Transfers => PAYEE_ACCOUNT,
            Mode::Payouts => PAYEE_BANK,
        };
        Order {
            key: format!("cs-{operation}"),
            operation,
            amount,
            currency: "EUR".into(),
            destination: destination.into(),
        }
    }

    async fn count(&self, o: &Order) -> usize {
        self.objects()
            .await
            .iter()
            .filter(|t| {
                (t["object"] == "transfer" && t["transfer_group"] == o.key.as_str())
                    || (t["object"] == "payout" && t["metadata"]["countersign_key"] == o.key.as_str())
            })
            .count()
    }

    async fn settle(&self) {
        control(&self.http, format!("{}/_sim/clock", self.base), json!({"advance_secs": 60})).await;
    }

    async fn refused_order(&self) -> (Order, Decline, Refusing) {
        match self.mode {
            Mode::Transfers => {
                let o = Order { destination: "acct_closed0000000001".into(), ..self.order(5_000) };
                (o, Decline::DestinationClosed, Refusing::AtOnce)
            }
            Mode::Payouts => {
                let body = json!({"account": TENANT_ACCOUNT, "currency": "eur", "amount": 100});
                control(&self.http, format!("{}/_sim/balances", self.base), body).await;
                (self.order(5_000), Decline::InsufficientFunds, Refusing::AtOnce)
            }
        }
    }

    async fn down(&self) {
        self.proxy.set_down(true);
    }

    async fn up(&self) {
        self.proxy.set_down(false);
    }

    async fn drop_next(&self) -> bool {
        control(&self.http, format!("{}/_sim/faults", self.base), json!({"mode": "drop_after_accept", "count": 1}))
            .await;
        true
    }

    async fn garbage(&self) -> Garbage {
        control(&self.http, format!("{}/_sim/faults", self.base), json!({"mode": "garbage", "count": 1})).await;
        Garbage::NextAnswer
    }
}

/// What the connector sends is what Stripe's API takes: every request the
/// fake saw (each checked there against the published description) carried
/// the pinned `Stripe-Version`, form encoding on creations, an
/// `Idempotency-Key` on each creation, `Stripe-Account` on payouts only.
#[tokio::test]
async fn requests_carry_the_pinned_version_the_key_and_the_account() {
    for mode in [Mode::Transfers, Mode::Payouts] {
        let Some(h) = StripeHarness::start(mode).await else { return };
        let o = h.order(1_234);
        let _ = h.rail().create_transfer(&o.as_order()).await;
        let _ = h.rail().list_since(chrono::Utc::now() - chrono::Duration::minutes(5), 10).await.unwrap();
        let requests = h.requests().await;
        assert!(requests.len() >= 3, "{requests:?}");
        for r in &requests {
            let headers = &r["headers"];
            assert_eq!(headers["Stripe-Version"], STRIPE_API_VERSION, "{r}");
            let path = r["path"].as_str().unwrap();
            let payout = path.starts_with("/v1/payouts");
            if mode == Mode::Payouts && payout {
                assert_eq!(headers["Stripe-Account"], TENANT_ACCOUNT, "{r}");
            } else {
                assert!(headers["Stripe-Account"].is_null(), "transfers are the platform's own: {r}");
            }
            if r["method"] == "POST" {
                assert_eq!(headers["Idempotency-Key"], o.key.as_str(), "{r}");
                assert!(headers["Content-Type"].as_str().unwrap().starts_with("application/x-www-form-urlencoded"));
                assert_eq!(r["params"]["metadata"]["countersign_operation"], o.operation.as_str());
            }
            assert!(r["status"].as_u64().unwrap() < 300, "the fake accepted it as Stripe's API: {r}");
        }
    }
}

/// The fake itself, checked: a request Stripe's description does not allow
/// is refused with Stripe's envelope, and the connector maps it to a
/// refusal that names no rail text.
#[tokio::test]
async fn a_parameter_stripe_does_not_know_is_refused_in_stripes_envelope() {
    let Some(h) = StripeHarness::start(Mode::Transfers).await else { return };
    let r = h
        .http
        .post(format!("{}/v1/transfers", h.base))
        .bearer_auth("sk_test_conformance")
        .header("Stripe-Version", STRIPE_API_VERSION)
        .form(&[("amount", "100"), ("currency", "eur"), ("destination", PAYEE_ACCOUNT), ("status", "paid")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        (body["error"]["type"].as_str(), body["error"]["code"].as_str()),
        (Some("invalid_request_error"), Some("parameter_unknown"))
    );
    assert_eq!(body["error"]["param"], "status");
}

/// An operation id that is not this run's cannot match another's key.
#[tokio::test]
async fn a_key_finds_only_its_own_payouts() {
    let Some(h) = StripeHarness::start(Mode::Payouts).await else { return };
    let (a, b) = (h.order(1_000), h.order(1_000));
    let _ = h.rail().create_transfer(&a.as_order()).await;
    let _ = h.rail().create_transfer(&b.as_order()).await;
    let lookup = countersign::rail::Lookup {
        key: &a.key,
        destination: &a.destination,
        since: chrono::Utc::now() - chrono::Duration::minutes(5),
    };
    let found = h.rail().find(&lookup).await.unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].transfer_group.as_deref(), Some(a.key.as_str()));
    let _ = fresh("x");
}
