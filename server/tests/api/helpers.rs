//! Test harness: a real server per test, on a random port, with a fresh
//! data directory, driven over HTTP.
//!
//! Two ways to run it, behind one `TestServer` API (url(), client, db(),
//! cli(), propose helpers...):
//!
//! - **In-process** (the default: `start`, `start_with`): the server library
//!   applies the fixture (`provision::apply_toml`) and runs the real app
//!   (`startup::bind` + `Bound::serve_until`: router, background workers,
//!   bundled rail simulator) from the same config file, on a runtime and
//!   thread of its own, so a test body that blocks cannot stall it.
//!   Dropping the server stops it at once, like the SIGKILL a process gets.
//!   The CLI still runs as a process on the same data dir.
//! - **As a process** (`start_process*`, `Scratch::serve`, `spawn*`): the
//!   `countersign` binary, started as `serve`, with the fixture applied by
//!   `countersign apply`. Only where a process matters: crash and kill
//!   (`stop`, `crashed`, failpoints), restarts, log files, `COUNTERSIGN_*`
//!   variables (failpoints, clock skew, overrides: tests share the
//!   environment, so none sets its own), the config loading of `serve`
//!   itself, resident memory (`resident_kib`), and `/metrics` (the metrics
//!   recorder is global to a process). `API_TESTS_IN_PROCESS=0` runs every
//!   test on processes.
//!
//! In-process servers once hung now and then on a server-rendered page: a
//! server starting walks the console's routes with Leptos's resource
//! loading switched off by a flag global to the process, and a page loading
//! in another server meanwhile waited forever. The routes are walked once
//! per process now (`http::console_routes`); `in_process.rs` keeps it so.
//!
//! Process-global state, checked for in-process servers sharing this test
//! binary:
//! - the audit chain's head hint (`store/audit.rs`, a static): every server
//!   in this process overwrites it, but it is only a guess: an append links
//!   to it only if the insert finds it is still the head of *its* database,
//!   otherwise it reads the head first. Sharing costs an extra statement
//!   now and then, never a fork (the same holds for a CLI process writing
//!   beside a server);
//! - the console's route list: walked once per process (see above);
//! - metrics: one recorder per process (the `metrics` facade), so a test
//!   reading `/metrics` runs a process;
//! - throttles, caches, the password gate, change notifications, HTTP
//!   clients: per `AppState`, nothing global;
//! - tracing: one subscriber for the whole test binary (`warn`, stderr, as
//!   the processes get with `COUNTERSIGN_LOG=warn`); tests that read a log
//!   run a process with its own log file;
//! - settings and test hooks read `COUNTERSIGN_*` from the environment, which
//!   is the test binary's and the same for every test (no test sets it);
//! - no signal handlers: `serve_until` stops on a channel, not SIGTERM.

#![allow(dead_code)]

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
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
/// Source account configured for the globex agent (not for acme's).
pub const GLOBEX_SOURCE: &str = "acct_fedcba9876543210";
/// A payee that only tenant globex has.
pub const GLOBEX_PAYEE: &str = "acct_globex000000001";

/// Two tenants, so every test can check isolation. Every user's password is
/// [`PASSWORD`], given as its argon2id hash so that applying the fixture
/// hashes nothing. The hash is cheap (1 MiB, one pass; the server checks a
/// hash with the parameters it carries): the suite signs in hundreds of
/// times, and at the default parameters those checks were a fifth of its
/// CPU time. Hashes the server makes itself use the defaults
/// (`password::hash_password`, tested in the core).
/// The fixture's password hash ([`PASSWORD`] with cheap argon2id
/// parameters: the tests sign in thousands of times; the server's own hashes
/// keep the production parameters).
pub const PASSWORD_HASH: &str =
    "$argon2id$v=19$m=1024,t=1,p=1$Y291bnRlcnNpZ24tdGVzdA$WHUX6isDbqdp+FKe69b0ScVM4EWzjOFatTP2ynO/dWI";

/// Adds (or updates) a user the way `countersign apply` does, in this
/// process and with [`PASSWORD_HASH`]: `roles` and USD `usd_limit_minor`
/// (none when 0).
pub async fn apply_user(server: &TestServer, tenant: &str, username: &str, roles: &[&str], usd_limit_minor: u64) {
    use countersign::config::{Overrides, Settings};
    let roles: Vec<String> = roles.iter().map(|r| format!("{r:?}")).collect();
    let limit = if usd_limit_minor > 0 {
        format!("approval_limit_minor = {{ USD = {usd_limit_minor} }}\n")
    } else {
        String::new()
    };
    let toml = format!(
        "[[user]]\ntenant = {tenant:?}\nusername = {username:?}\npassword_hash = {PASSWORD_HASH:?}\nroles = [{}]\n{limit}",
        roles.join(", ")
    );
    let overrides = Overrides { listen: None, data_dir: Some(server.data_dir()) };
    let settings = Settings::load(Some(&server.config), &overrides).expect("settings");
    let db = countersign::store::Db::connect(&settings.backend().expect("backend")).await.expect("the database");
    countersign::platform::provision::apply_toml(&db, &settings, "user.toml", &toml)
        .await
        .expect("the user is applied");
    db.close().await;
}

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
password_hash = "$argon2id$v=19$m=1024,t=1,p=1$Y291bnRlcnNpZ24tdGVzdA$WHUX6isDbqdp+FKe69b0ScVM4EWzjOFatTP2ynO/dWI"
roles = ["approver"]
approval_limit_minor = { USD = 500_000 }

[[user]]
tenant = "acme"
username = "ben"
password_hash = "$argon2id$v=19$m=1024,t=1,p=1$Y291bnRlcnNpZ24tdGVzdA$WHUX6isDbqdp+FKe69b0ScVM4EWzjOFatTP2ynO/dWI"
roles = ["approver"]
approval_limit_minor = { USD = 50_000_000 }

[[user]]
tenant = "acme"
username = "maya"
password_hash = "$argon2id$v=19$m=1024,t=1,p=1$Y291bnRlcnNpZ24tdGVzdA$WHUX6isDbqdp+FKe69b0ScVM4EWzjOFatTP2ynO/dWI"
roles = ["approver"]
approval_limit_minor = { USD = 50_000_000 }

[[user]]
tenant = "acme"
username = "vic"
password_hash = "$argon2id$v=19$m=1024,t=1,p=1$Y291bnRlcnNpZ24tdGVzdA$WHUX6isDbqdp+FKe69b0ScVM4EWzjOFatTP2ynO/dWI"
roles = ["viewer"]

[[user]]
tenant = "globex"
username = "gus"
password_hash = "$argon2id$v=19$m=1024,t=1,p=1$Y291bnRlcnNpZ24tdGVzdA$WHUX6isDbqdp+FKe69b0ScVM4EWzjOFatTP2ynO/dWI"
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

/// Runs the CLI against `data_dir` with `config`; returns (exit code, stdout, stderr).
pub async fn cli(config: &Path, data_dir: &Path, args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
    cli_env(config, data_dir, args, stdin, &[]).await
}

/// Like [`cli`], with extra environment variables for the child only (tests
/// run in parallel in one process, so they never touch their own environment).
/// Gives up after 60 s, so a command that unexpectedly keeps running (e.g.
/// `serve` with a config that should have been refused) fails the test.
pub async fn cli_env(
    config: &Path,
    data_dir: &Path,
    args: &[&str],
    stdin: Option<&str>,
    env: &[(&str, &str)],
) -> (i32, String, String) {
    use tokio::io::AsyncWriteExt;
    let mut cmd = Command::new(BIN);
    cmd.arg("--config").arg(config).arg("--data-dir").arg(data_dir).args(args);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    cmd.env_remove("COUNTERSIGN_USER_PASSWORD");
    cmd.envs(env.iter().copied());
    let mut child = cmd.spawn().expect("spawn countersign");
    let mut pipe = child.stdin.take().expect("stdin");
    if let Some(input) = stdin {
        pipe.write_all(input.as_bytes()).await.expect("write stdin");
    }
    drop(pipe);
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("countersign {args:?} did not exit within 60 s"))
        .expect("countersign runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A test's directory (config file, data directory) and, on PostgreSQL
/// runs, its database: both removed when dropped, i.e. when the last server
/// that used them is gone (a restarted server takes them over).
pub struct TestDir {
    dir: tempfile::TempDir,
    database: Option<String>,
    /// The database came with the fixture applied (see `Scratch::with_fixture`).
    fixture: bool,
}

impl TestDir {
    /// A new empty directory (no database of its own).
    pub fn new() -> TestDir {
        TestDir { dir: tempfile::tempdir().expect("temp dir"), database: None, fixture: false }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if let Some(name) = self.database.take() {
            // Not waited for: the database is emptied and handed to a later test.
            recycler().send((name, self.fixture)).expect("the recycler runs");
        }
    }
}

/// A directory with a config file and a (not yet created) data directory,
/// for CLI tests that need no running server.
pub struct Scratch {
    pub dir: TestDir,
    pub config: PathBuf,
}

impl Scratch {
    pub fn new(config: &str) -> Scratch {
        Self::make(config, false)
    }

    /// [`Scratch::new`] for a server with the [`FIXTURE`]: on PostgreSQL
    /// runs its database is a copy of a template that has it (so
    /// [`Scratch::apply_fixture`] has nothing left to do).
    pub fn with_fixture(config: &str) -> Scratch {
        Self::make(config, true)
    }

    fn make(config: &str, with_fixture: bool) -> Scratch {
        let dir = tempfile::tempdir().expect("temp dir");
        let config_path = dir.path().join("countersign.toml");
        let database = postgres_database(config, with_fixture);
        let config = match &database {
            // A small pool: every connection is a PostgreSQL backend to start
            // (about 10 ms of CPU), and a test's server needs few at once.
            Some((_, url)) => format!("{config}\n[database]\nurl = \"{url}\"\nmax_connections = 3\n"),
            None => config.to_owned(),
        };
        std::fs::write(&config_path, config).expect("write config");
        let fixture = with_fixture && database.is_some();
        Scratch { dir: TestDir { dir, database: database.map(|(name, _)| name), fixture }, config: config_path }
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Whether the database holds the fixture already: a PostgreSQL copy
    /// of the run's fixture template.
    fn has_fixture(&self) -> bool {
        self.dir.fixture
    }

    /// Writes `text` to `name` inside the scratch directory; returns its path.
    pub fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).expect("write file");
        path
    }

    pub async fn cli(&self, args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
        cli(&self.config, &self.data_dir(), args, stdin).await
    }

    pub async fn db(&self) -> Db {
        open_db(&self.config, &self.data_dir()).await
    }

    /// Applies the two-tenant [`FIXTURE`] registry.
    pub async fn apply_fixture(&self) {
        if self.has_fixture() {
            return;
        }
        let fixture = self.file("fixture.toml", FIXTURE);
        let (code, _, stderr) = self.cli(&["apply", fixture.to_str().unwrap()], None).await;
        assert_eq!(code, 0, "apply failed: {stderr}");
    }

    /// Starts the server on this directory, with extra environment variables.
    pub async fn serve(self, env: &[(&str, &str)]) -> TestServer {
        TestServer::spawn_env(self.dir, self.config, env).await
    }
}

/// The independent checkers' Python, with their PyPI packages
/// (`e2e/requirements.txt`; `scripts/setup.sh --tests` makes it), in
/// `COUNTERSIGN_VENV` (scripts/env.sh; default `~/.cache/countersign/venv`).
pub fn checkers_python() -> Option<PathBuf> {
    let venv = match std::env::var_os("COUNTERSIGN_VENV") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::var_os("HOME").map(PathBuf::from)?.join(".cache/countersign/venv"),
    };
    let path = venv.join("bin/python");
    path.exists().then_some(path)
}

/// Whether the servers of this run keep their data in PostgreSQL:
/// `API_TESTS_DATABASE=postgres`, with `COUNTERSIGN_TEST_DATABASE_URL`
/// naming the test server (`make test` runs the whole suite so, after SQLite).
pub fn on_postgres() -> bool {
    std::env::var("API_TESTS_DATABASE").is_ok_and(|v| v == "postgres")
}

/// On PostgreSQL runs, the name and URL of a database for one test's servers,
/// unless `config` sets the database itself: one a finished test left,
/// emptied and renamed (see [`recycler`]), else a new copy of this run's
/// template (see [`postgres_template`]). Either way its schema is migrated
/// and it holds the [`FIXTURE`] exactly when `with_fixture`.
fn postgres_database(config: &str, with_fixture: bool) -> Option<(String, String)> {
    if !on_postgres() || config.contains("[database]") {
        return None;
    }
    let server = test_server_url();
    let name = match recycled()[usize::from(with_fixture)].lock().unwrap().pop() {
        Some(name) => name,
        None => {
            let template = postgres_template(&server, with_fixture);
            let name = database_name();
            // FILE_COPY: half the cost of the default WAL_LOG for a small database.
            psql(&server, &format!("CREATE DATABASE {name} TEMPLATE {template} STRATEGY FILE_COPY"));
            name
        }
    };
    let url = database_url(&server, &name);
    Some((name, url))
}

fn test_server_url() -> String {
    std::env::var("COUNTERSIGN_TEST_DATABASE_URL")
        .expect("API_TESTS_DATABASE=postgres needs COUNTERSIGN_TEST_DATABASE_URL (scripts/pg.sh start)")
}

/// A database name no test of this run has used.
fn database_name() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static SERIAL: AtomicU32 = AtomicU32::new(0);
    format!("cs_api_{}_{}", std::process::id(), SERIAL.fetch_add(1, Ordering::Relaxed))
}

/// Emptied databases ready for another test: without, and with the fixture.
fn recycled() -> &'static [std::sync::Mutex<Vec<String>>; 2] {
    static FREE: [std::sync::Mutex<Vec<String>>; 2] =
        [std::sync::Mutex::new(Vec::new()), std::sync::Mutex::new(Vec::new())];
    &FREE
}

/// Where finished tests send their databases (name, holds the fixture). A
/// thread with a connection of its own takes each in turn:
///
/// 1. ends every session still on it (a killed server's, a test's pool) and
///    renames it, which PostgreSQL refuses while anyone is connected — so
///    nothing of the finished test can reach it afterwards, under either name;
/// 2. puts back its template's rows (`countersign_test_snapshot.reset()`,
///    made with the template: every table emptied and refilled, sequences
///    set back, triggers off meanwhile), in one transaction;
/// 3. offers it to the next test ([`recycled`]).
///
/// A copy of the template costs a checkpoint and a few hundred files, about
/// 75 ms of CPU; this about 5 ms. A database that cannot be recycled is
/// dropped.
fn recycler() -> std::sync::MutexGuard<'static, std::sync::mpsc::Sender<(String, bool)>> {
    static RECYCLER: std::sync::OnceLock<std::sync::Mutex<std::sync::mpsc::Sender<(String, bool)>>> =
        std::sync::OnceLock::new();
    RECYCLER
        .get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel::<(String, bool)>();
            let server = test_server_url();
            std::thread::Builder::new()
                .name("test-pg-recycler".into())
                .spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
                    let mut admin: Option<sqlx::PgConnection> = None;
                    for (name, fixture) in rx {
                        match runtime.block_on(recycle(&server, &mut admin, &name)) {
                            Ok(fresh) => recycled()[usize::from(fixture)].lock().unwrap().push(fresh),
                            Err(e) => {
                                eprintln!("test database {name} not recycled ({e}): dropped");
                                admin = None;
                                psql_send(&server, &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"), false);
                            }
                        }
                    }
                })
                .expect("the recycler thread");
            std::sync::Mutex::new(tx)
        })
        .lock()
        .unwrap()
}

/// Steps 1 and 2 of [`recycler`]: the database's new name.
async fn recycle(server: &str, admin: &mut Option<sqlx::PgConnection>, name: &str) -> Result<String, sqlx::Error> {
    use sqlx::Connection;
    if admin.is_none() {
        *admin = Some(sqlx::PgConnection::connect(server).await?);
    }
    let conn = admin.as_mut().unwrap();
    let fresh = database_name();
    sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1")
        .bind(name)
        .execute(&mut *conn)
        .await?;
    // Refused while a session remains (PostgreSQL waits 5 s for them to end).
    sqlx::raw_sql(&format!("ALTER DATABASE {name} RENAME TO {fresh}")).execute(&mut *conn).await?;
    let mut db = sqlx::PgConnection::connect(&database_url(server, &fresh)).await?;
    sqlx::raw_sql("SELECT countersign_test_snapshot.reset()").execute(&mut db).await?;
    db.close().await?;
    Ok(fresh)
}

/// What a template's snapshot is: a copy of every table of `public` (but
/// the migrations' own) in `countersign_test_snapshot`, the sequences'
/// positions, and `reset()`, which puts a database back as the snapshot
/// has it (see [`recycler`]). Nothing of the server reads that schema.
const SNAPSHOT: &str = r#"
CREATE SCHEMA countersign_test_snapshot;
DO $$
DECLARE t text;
BEGIN
  FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> '_sqlx_migrations' LOOP
    EXECUTE format('CREATE TABLE countersign_test_snapshot.%I AS TABLE public.%I', t, t);
  END LOOP;
END $$;
CREATE TABLE countersign_test_snapshot."(sequences)" AS
  SELECT format('public.%I', sequencename) AS name, last_value FROM pg_sequences WHERE schemaname = 'public';
CREATE FUNCTION countersign_test_snapshot.reset() RETURNS void LANGUAGE plpgsql AS $$
DECLARE t text; s record;
BEGIN
  PERFORM set_config('session_replication_role', 'replica', true);
  FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> '_sqlx_migrations' LOOP
    EXECUTE format('DELETE FROM public.%I', t);
    EXECUTE format('INSERT INTO public.%I OVERRIDING SYSTEM VALUE TABLE countersign_test_snapshot.%I', t, t);
  END LOOP;
  FOR s IN SELECT * FROM countersign_test_snapshot."(sequences)" LOOP
    PERFORM setval(s.name, coalesce(s.last_value, 1), s.last_value IS NOT NULL);
  END LOOP;
  PERFORM set_config('session_replication_role', 'origin', true);
END $$;
"#;

/// This test binary's template databases, each made once and then copied
/// by `CREATE DATABASE … TEMPLATE` when no recycled database is free (a copy costs a fraction
/// of migrating and applying again): migrated, and migrated with the
/// [`FIXTURE`] applied.
fn postgres_template(server: &str, with_fixture: bool) -> &'static str {
    static TEMPLATES: [std::sync::OnceLock<String>; 2] = [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
    TEMPLATES[usize::from(with_fixture)].get_or_init(|| {
        let name = format!("cs_api_template_{}_{}", std::process::id(), if with_fixture { "fixture" } else { "empty" });
        psql(server, &format!("CREATE DATABASE {name} TEMPLATE template0 LOCALE 'C'"));
        let template_url = database_url(server, &name);
        let backend = countersign::store::Backend::Postgres {
            url: template_url.clone().into(),
            max_connections: countersign::store::PG_CONNECTIONS,
        };
        // On a runtime of its own: this may be called inside a test's.
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            runtime.block_on(async {
                use sqlx::Connection;
                let db = countersign::store::Db::connect(&backend).await.expect("migrate the template database");
                if with_fixture {
                    let settings = countersign::config::Settings::default();
                    countersign::platform::provision::apply_toml(&db, &settings, "fixture.toml", FIXTURE)
                        .await
                        .expect("apply the fixture to the template");
                }
                db.close().await;
                let mut conn = sqlx::PgConnection::connect(&template_url).await.expect("the template");
                sqlx::raw_sql(SNAPSHOT).execute(&mut conn).await.expect("snapshot the template");
            })
        })
        .join()
        .expect("the template is made");
        name
    })
}

/// Runs one statement on the test server (`CREATE DATABASE`, `DROP
/// DATABASE`) over a connection kept open for the whole test binary, on a
/// thread of its own (the callers are not async: `Scratch::new`, `Drop`).
/// Starting `psql` for each cost a sixth of the PostgreSQL run's CPU.
fn psql(server: &str, sql: &str) {
    psql_send(server, sql, true);
}

/// [`psql`], waiting for the answer only when `wait` (a drop need not).
fn psql_send(server: &str, sql: &str, wait: bool) {
    type Job = (String, std::sync::mpsc::Sender<Result<(), String>>);
    static ADMIN: std::sync::OnceLock<std::sync::Mutex<std::sync::mpsc::Sender<Job>>> = std::sync::OnceLock::new();
    let admin = ADMIN.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let url = server.to_owned();
        std::thread::Builder::new()
            .name("test-pg-admin".into())
            .spawn(move || {
                use sqlx::Connection;
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
                let mut conn = None;
                for (sql, reply) in rx {
                    let done = runtime.block_on(async {
                        if conn.is_none() {
                            conn = Some(sqlx::PgConnection::connect(&url).await.map_err(|e| e.to_string())?);
                        }
                        let result = sqlx::raw_sql(&sql).execute(conn.as_mut().unwrap()).await;
                        if result.is_err() {
                            conn = None; // reconnect for the next one
                        }
                        result.map(|_| ()).map_err(|e| e.to_string())
                    });
                    let _ = reply.send(done);
                }
            })
            .expect("the admin thread");
        std::sync::Mutex::new(tx)
    });
    let (reply, answer) = std::sync::mpsc::channel();
    admin.lock().unwrap().send((sql.to_owned(), reply)).expect("the admin thread runs");
    if !wait {
        return;
    }
    if let Err(e) = answer.recv().expect("the admin thread answers") {
        panic!("{sql}: {e}");
    }
}

/// The URL of database `name` on the server `server` names.
fn database_url(server: &str, name: &str) -> String {
    let (base, _) = server.rsplit_once('/').expect("a URL with a database");
    format!("{base}/{name}")
}

/// The PostgreSQL URL the harness wrote into `config` (on PostgreSQL runs).
fn postgres_url(config: &Path) -> Option<String> {
    let text = std::fs::read_to_string(config).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("url = \"postgres").map(|rest| format!("postgres{}", rest.trim_end_matches('"'))))
}

/// A direct read-write handle on a test server's database, on either
/// backend: the store's own `Pool`, which runs one SQL text (with `?`
/// placeholders, renumbered for PostgreSQL) on SQLite or PostgreSQL.
pub type Db = countersign::store::Pool;
pub use countersign::store::{query, Row};

/// Opens the database of the server configured by `config` on `data_dir`:
/// the PostgreSQL database the harness wrote into `config` (on PostgreSQL
/// runs), else the SQLite file in `data_dir`.
pub async fn open_db(config: &Path, data_dir: &Path) -> Db {
    match postgres_url(config) {
        Some(url) => {
            Db::Pg(sqlx::postgres::PgPoolOptions::new().max_connections(2).connect(&url).await.expect("open database"))
        }
        None => Db::Sqlite(
            sqlx::SqlitePool::connect(&format!("sqlite://{}", data_dir.join("countersign.db").display()))
                .await
                .expect("open database"),
        ),
    }
}

/// `SELECT COUNT(*) …` (or any single integer) on `db`.
pub async fn scalar(db: &Db, sql: &str) -> i64 {
    countersign::store::scalar(sql).fetch_one(db).await.unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// A one-column statement read as `T` (text, an integer, bytes, or their
/// `Option`), with `?` placeholders: `one::<String>("…").bind(x).fetch_one(&db)`.
pub fn one<'q, T: countersign::store::Scalar>(sql: &'q str) -> countersign::store::ScalarQuery<'q, T> {
    countersign::store::scalar(sql)
}

/// Reads a column of a [`Row`] of either backend, panicking with its name.
pub trait Get {
    fn get<'r, T: countersign::store::Value<'r>>(&'r self, column: &str) -> T;
    /// An integer column (PostgreSQL's `INT4` and `BOOL` read as `i64` too).
    fn int(&self, column: &str) -> i64;
    /// Every text value of the row (columns of other types left out).
    fn texts(&self) -> Vec<String>;
}

impl Get for Row {
    #[track_caller]
    fn get<'r, T: countersign::store::Value<'r>>(&'r self, column: &str) -> T {
        self.try_get(column).unwrap_or_else(|e| panic!("column {column}: {e}"))
    }

    #[track_caller]
    fn int(&self, column: &str) -> i64 {
        self.try_int(column)
            .unwrap_or_else(|e| panic!("column {column}: {e}"))
            .unwrap_or_else(|| panic!("{column} is NULL"))
    }

    fn texts(&self) -> Vec<String> {
        use sqlx::Row as _;
        match self {
            Row::Sqlite(r) => (0..r.len()).filter_map(|i| r.try_get::<Option<String>, _>(i).ok().flatten()).collect(),
            Row::Pg(r) => (0..r.len()).filter_map(|i| r.try_get::<Option<String>, _>(i).ok().flatten()).collect(),
        }
    }
}

/// A running server, stopped when dropped (a process is killed, an
/// in-process server's runtime shut down).
pub struct TestServer {
    // Declared (so dropped) first: the server stops before its directory goes.
    running: Running,
    pub base: String,
    pub dir: TestDir,
    pub config: PathBuf,
    pub client: reqwest::Client,
    /// The pool `scalar` and `audit_actions` read through, opened once.
    inspector: tokio::sync::OnceCell<Db>,
}

enum Running {
    Process(Child),
    InProcess(InProcess),
}

/// The server library running on a thread and runtime of its own.
struct InProcess {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for InProcess {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            // Bounded: the runtime gives its blocking tasks 2 s at most.
            let _ = thread.join();
        }
    }
}

type Ready = tokio::sync::oneshot::Sender<Result<std::net::SocketAddr, String>>;

/// What `countersign apply` (the fixture) and `countersign serve` do, until
/// `stop` resolves or is dropped (no drain: like the SIGKILL a process gets).
async fn serve_in_process(
    settings: countersign::config::Settings,
    apply_fixture: bool,
    ready: Ready,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    let bound = async {
        if apply_fixture {
            let db = countersign::store::Db::connect(&settings.backend()?).await?;
            countersign::platform::provision::apply_toml(&db, &settings, "fixture.toml", FIXTURE).await?;
            db.close().await;
        }
        countersign::startup::bind(settings, false).await
    }
    .await;
    let bound = match bound {
        Ok(bound) => bound,
        Err(e) => {
            let _ = ready.send(Err(format!("{e:#}")));
            return;
        }
    };
    let _ = ready.send(Ok(bound.addr()));
    tokio::select! {
        served = bound.serve_until(std::future::pending()) => served.expect("the server serves"),
        _ = stop => {}
    }
}

/// Server logs of in-process servers: `warn` and up, to stderr, like the
/// processes (installed once for the whole test binary).
fn log_warnings() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                "warn,countersign_core::platform::provision=error,countersign::startup=error",
            ))
            .with_writer(std::io::stderr)
            .try_init();
    });
}

impl TestServer {
    /// The fixture registry and default settings, in-process (a process with
    /// `API_TESTS_IN_PROCESS=0`; see the top of this file).
    pub async fn start() -> TestServer {
        Self::start_with("").await
    }

    /// The fixture registry and `config` as the TOML config file,
    /// in-process (a process with `API_TESTS_IN_PROCESS=0`).
    pub async fn start_with(config: &str) -> TestServer {
        if std::env::var_os("API_TESTS_IN_PROCESS").is_some_and(|v| v == "0") {
            return Self::start_process_with(config).await;
        }
        Self::start_in_process_with(config).await
    }

    /// The fixture registry and `config`, served in this process.
    pub async fn start_in_process_with(config: &str) -> TestServer {
        Self::in_process(Scratch::with_fixture(config)).await
    }

    /// The fixture registry and default settings, as a `countersign serve` process.
    pub async fn start_process() -> TestServer {
        Self::start_process_with("").await
    }

    /// The fixture registry and `config`, as a `countersign serve` process.
    pub async fn start_process_with(config: &str) -> TestServer {
        let scratch = Scratch::with_fixture(config);
        scratch.apply_fixture().await;
        scratch.serve(&[]).await
    }

    /// Applies the fixture with the library and serves `scratch` in this
    /// process: what `countersign apply` and `countersign serve --listen
    /// 127.0.0.1:0` do, from the same config file.
    async fn in_process(scratch: Scratch) -> TestServer {
        use countersign::config::{Overrides, Settings};
        log_warnings();
        let overrides = Overrides { listen: Some("127.0.0.1:0".parse().unwrap()), data_dir: Some(scratch.data_dir()) };
        let settings = Settings::load(Some(&scratch.config), &overrides).expect("settings");
        let apply_fixture = !scratch.has_fixture();
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<Result<std::net::SocketAddr, String>>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let running = {
            let thread = std::thread::Builder::new()
                .name("countersign-in-process".into())
                .spawn(move || {
                    let runtime = tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(2)
                        .enable_all()
                        .build()
                        .expect("server runtime");
                    runtime.block_on(serve_in_process(settings, apply_fixture, ready_tx, stop_rx));
                    runtime.shutdown_timeout(Duration::from_secs(2));
                })
                .expect("server thread");
            InProcess { stop: Some(stop_tx), thread: Some(thread) }
        };
        let addr = tokio::time::timeout(Duration::from_secs(30), ready_rx)
            .await
            .expect("the server listens within 30 s")
            .expect("the server thread reports")
            .unwrap_or_else(|e| panic!("the in-process server did not start: {e}"));
        TestServer {
            running: Running::InProcess(running),
            base: format!("http://{addr}"),
            dir: scratch.dir,
            config: scratch.config,
            client: Self::client(),
            inspector: Default::default(),
        }
    }

    fn client() -> reqwest::Client {
        reqwest::Client::builder().timeout(Duration::from_secs(90)).build().expect("client")
    }

    fn child(&self) -> &Child {
        match &self.running {
            Running::Process(child) => child,
            Running::InProcess(_) => panic!("an in-process server has no process: start it with start_process"),
        }
    }

    /// Starts `countersign serve` on a random port and waits for its
    /// "listening on" line (no sleeping until ready).
    pub async fn spawn(dir: TestDir, config: PathBuf) -> TestServer {
        Self::spawn_env(dir, config, &[]).await
    }

    /// [`TestServer::spawn`] with extra environment variables for the server.
    pub async fn spawn_env(dir: TestDir, config: PathBuf, env: &[(&str, &str)]) -> TestServer {
        Self::spawn_inner(dir, config, env, Stdio::inherit()).await
    }

    /// [`TestServer::spawn_env`], with the server's stderr (its logs) written to `log`.
    pub async fn spawn_logging(dir: TestDir, config: PathBuf, env: &[(&str, &str)], log: std::fs::File) -> TestServer {
        Self::spawn_inner(dir, config, env, Stdio::from(log)).await
    }

    async fn spawn_inner(dir: TestDir, config: PathBuf, env: &[(&str, &str)], stderr: Stdio) -> TestServer {
        let mut cmd = Command::new(BIN);
        cmd.arg("--config")
            .arg(&config)
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("COUNTERSIGN_LOG", "warn")
            .envs(env.iter().copied())
            .stderr(stderr);
        let (child, base) =
            countersign_testkit::spawn_listening(cmd, "countersign listening on ", Duration::from_secs(30))
                .await
                .expect("server listens within 30 s");
        TestServer {
            running: Running::Process(child),
            base,
            config,
            client: Self::client(),
            dir,
            inspector: Default::default(),
        }
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The server's resident memory (VmRSS), in KiB.
    pub fn resident_kib(&self) -> u64 {
        let pid = self.child().id().expect("the server runs");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn cli(&self, args: &[&str]) -> (i32, String, String) {
        cli(&self.config, &self.data_dir(), args, None).await
    }

    /// Stops the server (SIGKILL) and returns its directory for a restart.
    pub async fn stop(self) -> (TestDir, PathBuf) {
        let TestServer { running, dir, config, .. } = self;
        match running {
            Running::Process(mut child) => child.kill().await.expect("kill server"),
            Running::InProcess(_) => panic!("only a process is killed: start it with start_process"),
        }
        (dir, config)
    }

    /// Waits for the server to exit on its own (e.g. killed by a failpoint);
    /// returns its directory for a restart.
    pub async fn crashed(self) -> (TestDir, PathBuf) {
        let TestServer { running, dir, config, .. } = self;
        let Running::Process(mut child) = running else {
            panic!("only a process crashes: start it with start_process")
        };
        tokio::time::timeout(Duration::from_secs(30), child.wait())
            .await
            .expect("the server exits within 30 s")
            .expect("wait for the server");
        (dir, config)
    }

    /// Stops the server as an operator does (SIGTERM): it drains and exits
    /// on its own; returns how it exited (within 30 s).
    pub async fn terminate(self) -> std::process::ExitStatus {
        let TestServer { running, .. } = self;
        let Running::Process(mut child) = running else {
            panic!("only a process is signalled: start it with start_process")
        };
        let pid = child.id().expect("the server runs") as libc::pid_t;
        // SAFETY: a plain kill(2) of our own child process.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0, "SIGTERM");
        tokio::time::timeout(Duration::from_secs(30), child.wait())
            .await
            .expect("the server exits within 30 s of SIGTERM")
            .expect("wait for the server")
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

    /// A direct read-write handle on the server's database, for tests that
    /// read or tamper with rows: one pool per server, opened at the first
    /// call (a new connection per read costs a PostgreSQL backend each time).
    pub async fn db(&self) -> Db {
        self.inspector().await.clone()
    }

    /// The CLI with `stdin` (e.g. a password).
    pub async fn cli_stdin(&self, args: &[&str], stdin: &str) -> (i32, String, String) {
        cli(&self.config, &self.data_dir(), args, Some(stdin)).await
    }

    /// `POST /api/v1/proposals` with `body` as agent `key`.
    pub async fn propose_as(&self, key: &str, body: &Value) -> Reply {
        send(self.post_json("/api/v1/proposals", key, body)).await
    }

    /// `POST /api/v1/proposals` with a raw body and content type, as the acme bot.
    pub async fn propose_raw(&self, content_type: Option<&str>, body: impl Into<reqwest::Body>) -> Reply {
        let mut rb = self.client.post(self.url("/api/v1/proposals")).bearer_auth(ACME_BOT_KEY).body(body);
        if let Some(ct) = content_type {
            rb = rb.header(reqwest::header::CONTENT_TYPE, ct);
        }
        send(rb).await
    }

    /// Proposes `body` as the acme bot and insists on 201; returns the proposal.
    pub async fn create(&self, body: &Value) -> Value {
        let r = self.propose_as(ACME_BOT_KEY, body).await;
        assert_eq!(r.status, 201, "propose {body}: {}", r.text);
        r.body
    }

    /// `GET /api/v1/proposals/{id}` as `key`.
    pub async fn get_proposal(&self, key: &str, id: &str) -> Reply {
        send(self.get(&format!("/api/v1/proposals/{id}"), key)).await
    }

    /// `GET /api/v1/proposals?{query}` as `key`.
    pub async fn list(&self, key: &str, query: &str) -> Reply {
        send(self.get(&format!("/api/v1/proposals?{query}"), key)).await
    }

    /// `POST /api/v1/proposals/{id}/cancel` as `key` (no body).
    pub async fn cancel(&self, key: &str, id: &str) -> Reply {
        send(self.client.post(self.url(&format!("/api/v1/proposals/{id}/cancel"))).bearer_auth(key)).await
    }

    /// Every proposal id the agent `key` can list, following every page.
    pub async fn all_ids(&self, key: &str) -> Vec<String> {
        let mut ids = Vec::new();
        let mut query = "limit=100".to_owned();
        loop {
            let page = self.list(key, &query).await;
            assert_eq!(page.status, 200, "{}", page.text);
            ids.extend(
                page.body["data"].as_array().expect("data").iter().map(|p| p["id"].as_str().unwrap().to_owned()),
            );
            match page.body["next_cursor"].as_str() {
                Some(c) => query = format!("limit=100&cursor={c}"),
                None => return ids,
            }
        }
    }

    /// One integer from the server's database.
    pub async fn scalar(&self, sql: &str) -> i64 {
        scalar(self.inspector().await, sql).await
    }

    /// The pool behind [`TestServer::db`], kept for this server's lifetime.
    async fn inspector(&self) -> &Db {
        self.inspector.get_or_init(|| async { open_db(&self.config, &self.data_dir()).await }).await
    }

    /// The audit actions recorded for `proposal_id`, oldest first.
    pub async fn audit_actions(&self, proposal_id: &str) -> Vec<String> {
        one("SELECT action FROM audit_log WHERE proposal_id = ? ORDER BY seq")
            .bind(proposal_id)
            .fetch_all(self.inspector().await)
            .await
            .expect("audit rows")
    }

    /// The audit entries with `action`, oldest first: `{actor, data}` each.
    pub async fn audit_actions_where(&self, action: &str) -> Vec<Value> {
        let rows = query("SELECT actor, data FROM audit_log WHERE action = ? ORDER BY seq")
            .bind(action)
            .fetch_all(self.inspector().await)
            .await
            .expect("audit rows");
        rows.iter()
            .map(|r| {
                let data: Value = serde_json::from_str(&r.get::<String>("data")).expect("audit data is JSON");
                serde_json::json!({"actor": r.get::<String>("actor"), "data": data})
            })
            .collect()
    }
}

/// A response, fully read: status, headers, raw text and parsed JSON
/// (`Null` when the body is empty or not JSON).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
    pub body: Value,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The `field` of every entry of `error.details`.
    pub fn detail_fields(&self) -> BTreeSet<String> {
        self.body["error"]["details"]
            .as_array()
            .map(|d| d.iter().filter_map(|e| e["field"].as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    }

    /// The `rule` of every entry of `error.details` (policy reasons).
    pub fn detail_rules(&self) -> Vec<String> {
        self.body["error"]["details"]
            .as_array()
            .map(|d| d.iter().filter_map(|e| e["rule"].as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    }

    /// Asserts an error response: `status`, the envelope
    /// `{"error": {code, message, details, request_id}}` with `code`, and the
    /// `X-Request-Id` header naming the same request.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "expected {status} {code}, got: {}", self.text);
        assert_envelope(&self.body, code);
        assert_eq!(
            self.header("x-request-id"),
            self.body["error"]["request_id"].as_str(),
            "X-Request-Id header and error.request_id differ"
        );
    }
}

/// Asserts `body` is exactly `{"error": {...}}` with the contract's members.
#[track_caller]
pub fn assert_envelope(body: &Value, code: &str) {
    let outer = body.as_object().unwrap_or_else(|| panic!("error body is not an object: {body}"));
    assert_eq!(outer.keys().collect::<Vec<_>>(), ["error"], "error body has exactly one member, `error`: {body}");
    let e = &body["error"];
    assert_eq!(e["code"], code, "{body}");
    assert!(e["message"].as_str().is_some_and(|m| !m.trim().is_empty()), "error.message is a non-empty string: {body}");
    assert!(e["details"].is_array(), "error.details is an array: {body}");
    assert!(e["request_id"].as_str().is_some_and(|r| !r.is_empty()), "error.request_id is a non-empty string: {body}");
}

pub async fn send(rb: reqwest::RequestBuilder) -> Reply {
    let r = rb.send().await.expect("request");
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let text = r.text().await.expect("body");
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    Reply { status, headers, text, body }
}

/// `base` with the members of `changes` set (a `null` change removes the member).
pub fn with(base: Value, changes: Value) -> Value {
    let mut out = base;
    for (k, v) in changes.as_object().expect("changes is an object") {
        if v.is_null() {
            out.as_object_mut().unwrap().remove(k);
        } else {
            out[k] = v.clone();
        }
    }
    out
}

/// A valid transfer for globex's payout bot.
pub fn globex_transfer() -> Value {
    serde_json::json!({
        "run_id": "run-42",
        "amount_minor": 25000,
        "currency": "USD",
        "source_account": GLOBEX_SOURCE,
        "destination": GLOBEX_PAYEE,
        "reference": "Globex invoice 7",
        "purpose_code": "vendor"
    })
}

/// RFC 8785 (JCS) serialization of JSON holding only strings, integers,
/// booleans, nulls, arrays and objects: members sorted by UTF-16 code units.
pub fn jcs(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            let members: Vec<String> =
                entries.iter().map(|(k, v)| format!("{}:{}", serde_json::to_string(k).unwrap(), jcs(v))).collect();
            format!("{{{}}}", members.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(jcs).collect::<Vec<_>>().join(",")),
        Value::Number(n) => {
            assert!(n.is_i64() || n.is_u64(), "only integers in canonical JSON: {n}");
            n.to_string()
        }
        other => serde_json::to_string(other).unwrap(),
    }
}

/// `sha256:` + lowercase hex of the SHA-256 of `bytes`.
pub fn sha256_prefixed(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// Whether `s` is `sha256:` followed by 64 lowercase hex digits.
pub fn is_request_hash(s: &str) -> bool {
    s.strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)))
}

/// Parses an RFC 3339 timestamp, panicking with the value if it is not one.
#[track_caller]
pub fn rfc3339(v: &Value) -> chrono::DateTime<chrono::FixedOffset> {
    let s = v.as_str().unwrap_or_else(|| panic!("timestamp is a string: {v}"));
    chrono::DateTime::parse_from_rfc3339(s).unwrap_or_else(|e| panic!("{s} is not RFC 3339: {e}"))
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

/// Creates a transfer and starts, in the background, a long-poll on it with
/// its current ETag and `?wait=wait`. Returns the id, the ETag and the poll.
pub async fn parked_long_poll(
    server: &std::sync::Arc<TestServer>,
    wait: u64,
) -> (String, String, tokio::task::JoinHandle<Reply>) {
    let id = server.create(&transfer()).await["id"].as_str().unwrap().to_owned();
    let etag = server.get_proposal(ACME_BOT_KEY, &id).await.header("etag").unwrap().to_owned();
    let request =
        server.get(&format!("/api/v1/proposals/{id}?wait={wait}"), ACME_BOT_KEY).header("If-None-Match", &etag);
    (id, etag, tokio::spawn(send(request)))
}
