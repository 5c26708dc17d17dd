//! Test harness: a real server process per test.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub const BIN: &str = env!("CARGO_BIN_EXE_countersign");

/// Bearer keys of the fixture agents.
pub const ACME_BOT_KEY: &str = "cs_test_acme0payout0bot0key0000000000000";
pub const ACME_OTHER_KEY: &str = "cs_test_acme0other0bot0key00000000000000";
pub const GLOBEX_BOT_KEY: &str = "cs_test_globex0bot0key000000000000000000";
pub const PASSWORD: &str = "correct horse battery staple";

/// Source account configured for the acme agents.
pub const ACME_SOURCE: &str = "acct_0123456789abcdef";
/// Payees of tenant acme.
pub const ACME_TRUSTED_PAYEE: &str = "acct_acme0000000001";
pub const ACME_PAYEE: &str = "ba_northwind0007";
/// A payee that only tenant globex has.
pub const GLOBEX_PAYEE: &str = "acct_globex000000001";

/// Two tenants, so every test can check isolation.
pub const FIXTURE: &str = r#"
[[tenant]]
id = "acme"
name = "Acme Corp"
daily_budget_minor = { USD = 5_000_000 }

[[tenant]]
id = "globex"
name = "Globex"

[[user]]
tenant = "acme"
username = "ana"
password = "correct horse battery staple"
roles = ["approver"]
approval_limit_minor = { USD = 500_000 }

[[user]]
tenant = "acme"
username = "ben"
password = "correct horse battery staple"
roles = ["approver"]
approval_limit_minor = { USD = 50_000_000 }

[[user]]
tenant = "acme"
username = "maya"
password = "correct horse battery staple"
roles = ["approver"]
approval_limit_minor = { USD = 50_000_000 }

[[user]]
tenant = "acme"
username = "vic"
password = "correct horse battery staple"
roles = ["viewer"]

[[user]]
tenant = "globex"
username = "gus"
password = "correct horse battery staple"
roles = ["approver", "admin"]
approval_limit_minor = { USD = 50_000_000 }

[[agent]]
tenant = "acme"
id = "payout-bot"
key = "cs_test_acme0payout0bot0key0000000000000"
acts_for = "maya"
source_accounts = ["acct_0123456789abcdef"]
purposes = ["vendor", "refund"]

[[agent]]
tenant = "acme"
id = "other-bot"
key = "cs_test_acme0other0bot0key00000000000000"
acts_for = "maya"
source_accounts = ["acct_0123456789abcdef"]
purposes = ["vendor"]

[[agent]]
tenant = "globex"
id = "payout-bot"
key = "cs_test_globex0bot0key000000000000000000"
acts_for = "gus"
source_accounts = ["acct_fedcba9876543210"]
purposes = ["vendor"]

[[payee]]
tenant = "acme"
id = "acct_acme0000000001"
legal_name = "Acme Supplies Ltd"
trusted = true

[[payee]]
tenant = "acme"
id = "ba_northwind0007"
legal_name = "Northwind Traders GmbH"

[[payee]]
tenant = "globex"
id = "acct_globex000000001"
legal_name = "Globex Payee"
trusted = true
"#;

pub struct TestServer {
    pub base: String,
    pub dir: TempDir,
    pub config: PathBuf,
    pub client: reqwest::Client,
    child: Child,
}

/// Runs the CLI against `data_dir` with `config`; returns (exit code, stdout, stderr).
pub async fn cli(config: &Path, data_dir: &Path, args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
    use tokio::io::AsyncWriteExt;
    let mut cmd = Command::new(BIN);
    cmd.arg("--config").arg(config).arg("--data-dir").arg(data_dir).args(args);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.env_remove("COUNTERSIGN_USER_PASSWORD");
    let mut child = cmd.spawn().expect("spawn countersign");
    let mut pipe = child.stdin.take().expect("stdin");
    if let Some(input) = stdin {
        pipe.write_all(input.as_bytes()).await.expect("write stdin");
    }
    drop(pipe);
    let out = child.wait_with_output().await.expect("countersign runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

impl TestServer {
    /// The fixture registry and default settings.
    pub async fn start() -> TestServer {
        Self::start_with("").await
    }

    /// The fixture registry and `config` as the TOML config file.
    pub async fn start_with(config: &str) -> TestServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let config_path = dir.path().join("countersign.toml");
        std::fs::write(&config_path, config).expect("write config");
        let data = dir.path().join("data");
        let fixture = dir.path().join("fixture.toml");
        std::fs::write(&fixture, FIXTURE).expect("write fixture");
        let (code, _, stderr) = cli(&config_path, &data, &["apply", fixture.to_str().unwrap()], None).await;
        assert_eq!(code, 0, "apply failed: {stderr}");
        Self::spawn(dir, config_path).await
    }

    /// Starts `countersign serve` on a random port and waits for its
    /// "listening on" line (no sleeping until ready).
    pub async fn spawn(dir: TempDir, config: PathBuf) -> TestServer {
        let mut child = Command::new(BIN)
            .arg("--config")
            .arg(&config)
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("COUNTERSIGN_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn countersign serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let base = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.expect("read stdout") {
                if let Some(url) = line.strip_prefix("countersign listening on ") {
                    return url.trim().to_owned();
                }
            }
            panic!("server exited before listening");
        })
        .await
        .expect("server listens within 30 s");
        // Keep draining stdout so the server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        TestServer {
            base,
            config,
            client: reqwest::Client::builder().timeout(Duration::from_secs(90)).build().expect("client"),
            dir,
            child,
        }
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn cli(&self, args: &[&str]) -> (i32, String, String) {
        cli(&self.config, &self.data_dir(), args, None).await
    }

    /// Stops the server (SIGKILL) and returns its directory for a restart.
    pub async fn stop(mut self) -> (TempDir, PathBuf) {
        self.child.kill().await.expect("kill server");
        (self.dir, self.config)
    }

    pub fn get(&self, path: &str, key: &str) -> reqwest::RequestBuilder {
        self.client.get(self.url(path)).bearer_auth(key)
    }

    pub fn post_json(&self, path: &str, key: &str, body: &serde_json::Value) -> reqwest::RequestBuilder {
        self.client.post(self.url(path)).bearer_auth(key).json(body)
    }

    /// Proposes `body` as the acme payout bot; returns (status, json).
    pub async fn propose(&self, body: &serde_json::Value) -> (u16, serde_json::Value) {
        let r = self.post_json("/api/v1/proposals", ACME_BOT_KEY, body).send().await.expect("request");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(serde_json::Value::Null))
    }

    /// A direct read-write connection to the server's database, for tests
    /// that tamper with rows.
    pub async fn db(&self) -> sqlx::SqlitePool {
        sqlx::SqlitePool::connect(&format!("sqlite://{}", self.data_dir().join("countersign.db").display()))
            .await
            .expect("open database")
    }
}

/// A valid transfer for acme's payout bot: 250.00 USD to an untrusted payee.
pub fn transfer() -> serde_json::Value {
    serde_json::json!({
        "run_id": "run-42",
        "amount_minor": 25000,
        "currency": "USD",
        "source_account": ACME_SOURCE,
        "destination": ACME_PAYEE,
        "reference": "Invoice 1842",
        "purpose_code": "vendor",
        "invoice_id": "1842"
    })
}
