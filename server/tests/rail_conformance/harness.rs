//! What the suite asks of each rail's harness, and what harnesses share:
//! orders, the Python checkers, a TCP proxy that can take a rail down.

use countersign::rail::{Decline, Rail, TransferOrder};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};

/// One order, owned.
#[derive(Clone, Debug)]
pub struct Order {
    pub key: String,
    pub operation: String,
    pub amount: u64,
    pub currency: String,
    pub destination: String,
}

impl Order {
    pub fn as_order(&self) -> TransferOrder<'_> {
        TransferOrder {
            idempotency_key: &self.key,
            operation_id: &self.operation,
            amount_minor: self.amount,
            currency: &self.currency,
            destination: &self.destination,
            payee_name: "Conformance Payee Ltd",
            reference: "Invoice 1842: conformance",
            source_account: "acct_conformance000001",
            metadata: &[("proposal_id", "prop_conformance")],
        }
    }
}

/// A fresh operation id (≤ 35 characters, unique per run).
pub fn fresh(prefix: &str) -> String {
    let n: u64 = rand::random();
    format!("{prefix}_{n:016x}")
}

/// How a rail refuses: at once, or by a later document.
pub enum Refusing {
    AtOnce,
    Later,
}

#[async_trait::async_trait]
pub trait Harness: Send + Sync {
    fn rail(&self) -> &dyn Rail;
    /// Whether this harness's payments can be reversed through the rail
    /// (else a reversal is too late).
    fn reverses(&self) -> bool {
        self.rail().profile().reverses
    }
    /// A new order to a destination the rail pays.
    fn order(&self, amount: u64) -> Order;
    /// How many payments the rail itself holds for the key (its own
    /// records: the simulator's ledger, Stripe's objects, the bank's files).
    async fn count(&self, order: &Order) -> usize;
    /// Lets the rail settle what it was given (time passes, the bank books).
    async fn settle(&self);
    /// An order the rail will refuse, and the refusal expected.
    async fn refused_order(&self) -> (Order, Decline, Refusing);
    /// Takes the rail down; [`Harness::up`] brings it back.
    async fn down(&self);
    async fn up(&self);
    /// The next creation is made at the rail and its answer lost (the
    /// connection closed): false when the rail has no such transport.
    async fn drop_next(&self) -> bool;
    /// Makes what the rail says next garbage (not its API's).
    async fn garbage(&self) -> Garbage;
}

/// Where a rail's garbage comes.
pub enum Garbage {
    /// The next creation is made, and answered with a body that is not the API's.
    NextAnswer,
    /// The next document the rail reads is not one it can read.
    Document,
}

/// The independent checkers' Python (the project's venv), or none: the
/// tests that need it then say they skipped (and fail when `CI` is set).
pub fn checkers_python() -> Option<PathBuf> {
    let venv = match std::env::var_os("COUNTERSIGN_VENV") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/countersign/venv"),
    };
    let python = venv.join("bin/python");
    if python.exists() {
        return Some(python);
    }
    assert!(std::env::var_os("CI").is_none(), "the checkers' venv is missing: scripts/setup.sh --tests");
    eprintln!("SKIPPED: the checkers' venv is missing (scripts/setup.sh --tests)");
    None
}

/// The repository's root (the tests run in `server/`).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("repository root").to_owned()
}

/// A TCP proxy on loopback in front of `target`: while down, every
/// connection is closed at once (the rail "refuses" it).
pub struct Proxy {
    pub addr: SocketAddr,
    down: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    pub async fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("proxy bind");
        let addr = listener.local_addr().expect("proxy address");
        let down = Arc::new(AtomicBool::new(false));
        let flag = down.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else { continue };
                if flag.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                tokio::spawn(async move {
                    if let Ok(mut upstream) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                    }
                });
            }
        });
        Proxy { addr, down, task }
    }

    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A JSON control request to an HTTP counterpart; panics unless 2xx.
pub async fn control(http: &reqwest::Client, url: String, body: serde_json::Value) -> serde_json::Value {
    let r = http.post(&url).json(&body).send().await.expect("control request");
    let status = r.status();
    let text = r.text().await.expect("control answer");
    assert!(status.is_success(), "{url}: {status} {text}");
    serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
}

pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().timeout(std::time::Duration::from_secs(30)).build().expect("client")
}

/// A child process, killed and reaped when dropped (a test that fails
/// while starting it leaves nothing behind).
pub struct Child(pub std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
