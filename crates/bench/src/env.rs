//! The processes under test: `countersign serve`, `countersign rail-sim` and
//! `countersign-bench baseline`, each in its own process with its own files
//! under the work directory, plus the registry they are provisioned with.

use anyhow::{bail, Context};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

use crate::client::addr_of;

/// The agent's bearer key.
pub const AGENT_KEY: &str = "cs_test_bench0agent0key00000000000000000";
/// The agent's funded source account.
pub const SOURCE: &str = "acct_bench0source0001";
/// A source account the soak empties at the rail (declines: insufficient funds).
pub const SOURCE_EMPTY: &str = "acct_bench0empty00001";
/// A trusted payee: small payments to it are approved by policy.
pub const TRUSTED_PAYEE: &str = "acct_trusted0000000001";
/// An ordinary payee: payments to it wait for humans.
pub const PAYEE: &str = "ba_vendor0000001";
/// A payee the soak closes at the rail (declines: destination closed).
pub const CLOSED_PAYEE: &str = "card_closed0001";
/// Password of every console user.
pub const PASSWORD: &str = "bench-password-not-secret";
/// Approvers (the agent acts for `maya`, who therefore never approves).
pub const APPROVERS: [&str; 2] = ["ana", "ben"];

/// One tenant, two approvers, the person the agent acts for, one agent with
/// two source accounts, three payees; budgets and limits far above what the
/// benchmarks spend, so they never refuse a payment.
const FIXTURE: &str = r#"
[[tenant]]
id = "bench"
name = "Bench Corp"
daily_budget_minor = { USD = 900_000_000_000 }

[[user]]
tenant = "bench"
username = "ana"
password = "bench-password-not-secret"
roles = ["approver"]
approval_limit_minor = { USD = 100_000_000 }

[[user]]
tenant = "bench"
username = "ben"
password = "bench-password-not-secret"
roles = ["approver", "admin"]
approval_limit_minor = { USD = 100_000_000 }

[[user]]
tenant = "bench"
username = "maya"
password = "bench-password-not-secret"
roles = ["approver"]
approval_limit_minor = { USD = 100_000_000 }

[[agent]]
tenant = "bench"
id = "bench-bot"
key = "cs_test_bench0agent0key00000000000000000"
acts_for = "maya"
source_accounts = ["acct_bench0source0001", "acct_bench0empty00001"]
purposes = ["vendor", "refund", "payroll"]

[[payee]]
tenant = "bench"
id = "acct_trusted0000000001"
legal_name = "Trusted Supplies Ltd"
trusted = true

[[payee]]
tenant = "bench"
id = "ba_vendor0000001"
legal_name = "Vendor Services GmbH"

[[payee]]
tenant = "bench"
id = "card_closed0001"
legal_name = "Closed Account Corp"
"#;

/// A transfer request body for the bench agent: an invoice of its own per
/// run (copies of one invoice are never approved by policy alone, and only
/// one of them is paid).
pub fn transfer(run_id: &str, amount_minor: u64, destination: &str, source: &str) -> Value {
    let invoice: String = format!("INV-{run_id}").chars().take(64).collect();
    json!({
        "run_id": run_id,
        "amount_minor": amount_minor,
        "currency": "USD",
        "source_account": source,
        "destination": destination,
        "reference": "Invoice 1842, March services",
        "purpose_code": "vendor",
        "invoice_id": invoice,
    })
}

/// Where the binaries, assets and scratch files are.
#[derive(Clone, Debug)]
pub struct Env {
    pub bin: PathBuf,
    pub work: PathBuf,
    pub site_root: PathBuf,
}

/// A child process that printed its "listening on" line; killed when dropped.
pub struct Proc {
    child: Child,
    pub pid: u32,
    pub url: String,
    pub addr: SocketAddr,
}

impl Proc {
    /// Starts `cmd` and waits (at most 60 s) for the stdout line starting
    /// with `prefix`, followed by the URL it listens on.
    async fn spawn(cmd: Command, prefix: &str) -> anyhow::Result<Proc> {
        let (child, url) = countersign_testkit::spawn_listening(cmd, prefix, Duration::from_secs(60))
            .await
            .context("starting a child process")?;
        let pid = child.id().context("child pid")?;
        let addr = addr_of(&url)?;
        Ok(Proc { child, pid, url, addr })
    }

    /// SIGTERM, then up to 15 s for a graceful exit, then SIGKILL.
    pub async fn stop(mut self) {
        // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
        unsafe {
            libc::kill(self.pid as libc::pid_t, libc::SIGTERM);
        }
        if tokio::time::timeout(Duration::from_secs(15), self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
    }

    /// The process's memory and open files, from /proc.
    pub fn usage(&self) -> anyhow::Result<Usage> {
        Usage::of(self.pid)
    }
}

/// Resident memory, its peak, threads and open file descriptors of a process.
#[derive(Clone, Copy, Debug)]
pub struct Usage {
    pub rss_kb: u64,
    pub hwm_kb: u64,
    pub threads: u64,
    pub fds: u64,
}

impl Usage {
    pub fn of(pid: u32) -> anyhow::Result<Usage> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let field = |name: &str| -> u64 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))?.count() as u64;
        Ok(Usage { rss_kb: field("VmRSS:"), hwm_kb: field("VmHWM:"), threads: field("Threads:"), fds })
    }
}

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "VmRSS {:.1} MB, VmHWM {:.1} MB, {} threads, {} open fds",
            self.rss_kb as f64 / 1024.0,
            self.hwm_kb as f64 / 1024.0,
            self.threads,
            self.fds
        )
    }
}

/// A provisioned server directory: config, data, log.
#[derive(Clone, Debug)]
pub struct ServerDir {
    pub dir: PathBuf,
    pub config: PathBuf,
}

impl ServerDir {
    pub fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    pub fn db_path(&self) -> PathBuf {
        self.data().join("countersign.db")
    }
}

impl Env {
    /// A fresh, empty directory `work/name`.
    pub fn scratch(&self, name: &str) -> anyhow::Result<PathBuf> {
        let dir = self.work.join(name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("emptying {}", dir.display()))?;
        }
        std::fs::create_dir_all(&dir)?;
        Ok(dir)
    }

    /// A fresh server directory with `extra` appended to the config file and
    /// the fixture registry applied.
    pub async fn provision(&self, name: &str, extra: &str) -> anyhow::Result<ServerDir> {
        let dir = self.scratch(name)?;
        let config = dir.join("countersign.toml");
        let site_root = self.site_root.canonicalize().unwrap_or_else(|_| self.site_root.clone());
        // The benchmarks drive one agent far past any sensible per-agent
        // limit: the limit is off here (the table goes last, after `extra`).
        let toml = format!(
            "site_root = {:?}\n{extra}\n[agent_api]\nrequests_per_second = 0\n",
            site_root.display().to_string()
        );
        std::fs::write(&config, toml)?;
        let server = ServerDir { dir, config };
        let fixture = server.dir.join("fixture.toml");
        std::fs::write(&fixture, FIXTURE)?;
        let out = self.cli(&server, &["apply", fixture.to_str().context("utf-8 path")?]).await?;
        if !out.status.success() {
            bail!("countersign apply failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(server)
    }

    /// Runs `countersign --config … --data-dir … ARGS` to completion.
    pub async fn cli(&self, server: &ServerDir, args: &[&str]) -> anyhow::Result<std::process::Output> {
        Command::new(&self.bin)
            .arg("--config")
            .arg(&server.config)
            .arg("--data-dir")
            .arg(server.data())
            .args(args)
            .env("COUNTERSIGN_LOG", "warn")
            .stdin(Stdio::null())
            .output()
            .await
            .with_context(|| format!("running {} {args:?}", self.bin.display()))
    }

    /// `countersign serve` on a free loopback port; its log goes to `server.log`,
    /// warnings only unless `COUNTERSIGN_BENCH_SERVER_LOG` names another filter
    /// (`warn,sqlx::query=debug` times every statement: docs/BENCHMARKS.md).
    pub async fn serve(&self, server: &ServerDir, env: &[(&str, &str)]) -> anyhow::Result<Proc> {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(server.dir.join("server.log"))?;
        let filter = std::env::var("COUNTERSIGN_BENCH_SERVER_LOG").unwrap_or_else(|_| "warn".into());
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--config")
            .arg(&server.config)
            .arg("--data-dir")
            .arg(server.data())
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("COUNTERSIGN_LOG", filter)
            .envs(env.iter().copied())
            .stderr(log);
        Proc::spawn(cmd, "countersign listening on ").await
    }

    /// `countersign rail-sim` with its own SQLite file under `dir`.
    pub async fn rail_sim(&self, dir: &Path) -> anyhow::Result<Proc> {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(dir.join("rail-sim.log"))?;
        let mut cmd = Command::new(&self.bin);
        cmd.args(["rail-sim", "--listen", "127.0.0.1:0", "--db"])
            .arg(dir.join("rail-sim.db"))
            .env("COUNTERSIGN_LOG", "warn")
            .stderr(log);
        Proc::spawn(cmd, "rail-sim listening on ").await
    }

    /// `countersign-bench baseline` (this binary): a minimal axum server.
    pub async fn baseline(&self) -> anyhow::Result<Proc> {
        let mut cmd = Command::new(std::env::current_exe()?);
        cmd.args(["baseline", "--listen", "127.0.0.1:0"]).stderr(Stdio::null());
        Proc::spawn(cmd, crate::baseline::LISTENING).await
    }

    /// `countersign-bench commit-floor` (this binary) calling the rail at
    /// `rail`, its SQLite file under `dir`.
    pub async fn commit_floor(&self, rail: &str, dir: &Path) -> anyhow::Result<Proc> {
        let mut cmd = Command::new(std::env::current_exe()?);
        cmd.args(["commit-floor", "--listen", "127.0.0.1:0", "--rail", rail, "--db"])
            .arg(dir.join("floor.db"))
            .stderr(Stdio::null());
        Proc::spawn(cmd, crate::baseline::FLOOR_LISTENING).await
    }
}

/// Raises this process's open-file limit to its hard limit (children inherit
/// it); returns the new soft limit.
pub fn raise_nofile() -> u64 {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 0;
        }
        // Root may raise the hard limit too (100,000 long-polls need as many
        // descriptors in this process and in the server); otherwise stay
        // within it.
        let wanted = libc::rlimit { rlim_cur: 262_144.max(lim.rlim_max), rlim_max: 262_144.max(lim.rlim_max) };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) == 0 {
            return wanted.rlim_cur;
        }
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        lim.rlim_cur
    }
}

/// This process's open-file limit (soft).
pub fn nofile_limit() -> u64 {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit only writes the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 0;
    }
    lim.rlim_cur
}

/// The machine's load average, as /proc/loadavg says it.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// An agent-side HTTP client for setup steps (not for measuring).
pub fn http() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(120)).build().expect("an HTTP client")
}

/// Proposes `body` as the bench agent; insists on `expect`; returns the proposal.
pub async fn propose(http: &reqwest::Client, base: &str, body: &Value, expect: u16) -> anyhow::Result<Value> {
    let r = http.post(format!("{base}/api/v1/proposals")).bearer_auth(AGENT_KEY).json(body).send().await?;
    let status = r.status().as_u16();
    let json: Value = r.json().await.unwrap_or(Value::Null);
    if status != expect {
        bail!("propose answered {status} (expected {expect}): {json}");
    }
    Ok(json)
}

/// A signed-in console user: the session cookie and the CSRF token.
#[derive(Clone, Debug)]
pub struct Session {
    pub cookie: String,
    pub csrf: String,
    pub user_id: String,
}

/// Signs `username` in through `POST /api/v1/session`.
pub async fn sign_in(http: &reqwest::Client, base: &str, username: &str) -> anyhow::Result<Session> {
    let r = http
        .post(format!("{base}/api/v1/session"))
        .header("origin", base)
        .json(&json!({"username": username, "password": PASSWORD}))
        .send()
        .await?;
    let status = r.status().as_u16();
    let cookie = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| v.split(';').next().filter(|c| c.starts_with(countersign::http::SESSION_COOKIE)))
        .map(str::to_owned);
    let body: Value = r.json().await.unwrap_or(Value::Null);
    match (status, cookie, body["csrf_token"].as_str(), body["user"]["id"].as_str()) {
        (200, Some(cookie), Some(csrf), Some(id)) => {
            Ok(Session { cookie, csrf: csrf.to_owned(), user_id: id.to_owned() })
        }
        _ => bail!("sign-in of {username} answered {status}: {body}"),
    }
}
