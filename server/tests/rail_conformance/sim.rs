//! The bundled simulator, in-process on a loopback port with its own
//! SQLite file, behind the proxy.

use countersign::rail::sim::{self, SimOptions};
use countersign::rail::simulator::SimulatorRail;
use countersign::rail::{Decline, Rail, RailConfig};
use serde_json::json;

use crate::harness::{control, fresh, http_client, Garbage, Harness, Order, Proxy, Refusing};

pub struct SimHarness {
    rail: SimulatorRail,
    base: String,
    http: reqwest::Client,
    proxy: Proxy,
    task: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Drop for SimHarness {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SimHarness {
    pub async fn start() -> SimHarness {
        let dir = tempfile::tempdir().unwrap();
        let options = SimOptions { settle_after: std::time::Duration::from_secs(1), ..SimOptions::default() };
        let (addr, task) =
            sim::spawn("127.0.0.1:0".parse().unwrap(), &dir.path().join("sim.db"), options).await.unwrap();
        let proxy = Proxy::start(addr).await;
        let cfg = RailConfig { total_timeout: std::time::Duration::from_secs(5), ..RailConfig::new(proxy.url()) };
        let rail = SimulatorRail::new(cfg).unwrap();
        SimHarness { rail, base: format!("http://{addr}"), http: http_client(), proxy, task, _dir: dir }
    }
}

#[async_trait::async_trait]
impl Harness for SimHarness {
    fn rail(&self) -> &dyn Rail {
        &self.rail
    }

    fn order(&self, amount: u64) -> Order {
        let operation = fresh("op");
        Order {
            key: format!("cs-{operation}"),
            operation,
            amount,
            currency: "USD".into(),
            destination: "acct_conformance0001".into(),
        }
    }

    async fn count(&self, o: &Order) -> usize {
        let all: serde_json::Value =
            self.http.get(format!("{}/_sim/transfers", self.base)).send().await.unwrap().json().await.unwrap();
        all["data"].as_array().unwrap().iter().filter(|t| t["transfer_group"] == o.key.as_str()).count()
    }

    async fn settle(&self) {
        control(&self.http, format!("{}/_sim/clock", self.base), json!({"advance_secs": 60})).await;
    }

    async fn refused_order(&self) -> (Order, Decline, Refusing) {
        let o = Order { destination: "acct_closed000001".into(), ..self.order(5_000) };
        let body = json!({"destination": o.destination, "closed": true});
        control(&self.http, format!("{}/_sim/destinations/closed", self.base), body).await;
        (o, Decline::DestinationClosed, Refusing::AtOnce)
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
