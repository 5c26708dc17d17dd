//! The Stripe connector against `localstripe` (PyPI), a Stripe emulator
//! this project did not write. localstripe has no Transfers and implements
//! Payouts partly (euros only, no idempotency keys, no list filters, and a
//! destination of its own choosing), so the full suite runs against the
//! fake built from Stripe's published description (stripe.rs); here, what
//! an independent implementation shows of the wire format:
//!
//! - it accepts the connector's form encoding (nested `metadata[…]`,
//!   `Idempotency-Key`, `Stripe-Version`) and keeps the metadata the
//!   connector finds its payouts by;
//! - the connector reads its payout objects, its 404, and its error
//!   envelope (a refusal, in the connector's own words);
//! - an answer that does not match the order (another destination) is
//!   never taken as the payment: it is unknown, and the rail's own record
//!   is what a human then compares.

use countersign::config::rails::STRIPE_API_VERSION;
use countersign::rail::stripe::{StripeConfig, StripeRail};
use countersign::rail::{CreateOutcome, Decline, Rail, RailConfig, RailStatus, UnknownCause};
use std::process::Stdio;

use crate::harness::{checkers_python, fresh, http_client, Child, Order};

struct LocalStripe {
    url: String,
    _child: Child,
}

async fn start() -> Option<LocalStripe> {
    let python = checkers_python()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Child(
        std::process::Command::new(&python)
            .args(["-m", "localstripe", "--from-scratch", "--port", &port.to_string()])
            .current_dir(std::env::temp_dir())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start localstripe"),
    );
    let url = format!("http://127.0.0.1:{port}");
    let http = http_client();
    for _ in 0..200 {
        let up = http.get(format!("{url}/v1/payouts")).bearer_auth("sk_test_x").send().await;
        if up.is_ok_and(|r| r.status().is_success()) {
            return Some(LocalStripe { url, _child: child });
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("localstripe did not start");
}

fn rail(url: &str) -> StripeRail {
    StripeRail::new(StripeConfig {
        http: RailConfig { api_key: Some("sk_test_localstripe".to_owned().into()), ..RailConfig::new(url) },
        api_version: STRIPE_API_VERSION.into(),
        account: None,
        resubmit_window: chrono::Duration::hours(23),
    })
    .unwrap()
}

#[tokio::test]
async fn localstripe_takes_the_connectors_payouts_and_its_answers_are_read() {
    let Some(ls) = start().await else { return };
    let rail = rail(&ls.url);
    let operation = fresh("op");
    let order = Order {
        key: format!("cs-{operation}"),
        operation: operation.clone(),
        amount: 4_200,
        currency: "EUR".into(),
        destination: "ba_localstripe0001".into(),
    };
    // localstripe pays a bank account of its own choosing: not the order's,
    // so not the payment the connector asked for.
    let outcome = rail.create_transfer(&order.as_order()).await;
    assert_eq!(outcome, CreateOutcome::Unknown(UnknownCause::BadResponse), "never taken as the payment");

    // Its record, read back through the connector: the metadata the
    // connector finds payouts by came through the form encoding.
    let listed: serde_json::Value = http_client()
        .get(format!("{}/v1/payouts", ls.url))
        .bearer_auth("sk_test_x")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let made = &listed["data"][0];
    assert_eq!(made["metadata"]["countersign_operation"], operation.as_str(), "{made}");
    assert_eq!(made["metadata"]["proposal_id"], "prop_conformance");
    assert_eq!(made["description"], "Invoice 1842: conformance");
    let id = made["id"].as_str().unwrap();
    let t = rail.get_transfer(id).await.unwrap().expect("read by id");
    assert_eq!((t.amount_minor, t.currency.as_str(), t.status), (4_200, "EUR", RailStatus::Pending));
    assert_eq!(t.transfer_group.as_deref(), Some(order.key.as_str()), "the key rides in the metadata");
    assert_ne!(t.destination, order.destination, "what a human compares on the operations page");

    // Its 404 and its error envelope.
    assert_eq!(rail.get_transfer("po_nothere0000001").await.unwrap(), None);
    let usd = Order { currency: "USD".into(), key: format!("cs-{}", fresh("op")), ..order.clone() };
    match rail.create_transfer(&usd.as_order()).await {
        CreateOutcome::Declined(r) => {
            assert_eq!(r.decline, Decline::RailRejected);
            assert_eq!(r.reason, "Stripe refused the payment.");
        }
        other => panic!("localstripe refuses dollars: {other:?}"),
    }
}
