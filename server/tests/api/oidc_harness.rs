//! A real OpenID provider for the single sign-on tests: the certified
//! `oidc-provider` npm package, run by node from `e2e/oidc/provider.mjs` on
//! loopback (one client, static accounts, its development sign-in pages).
//! A test signs in there the way a browser would, over HTTP with the
//! provider's cookies, and stops where the provider sends the browser back
//! to countersign, so it can hand that answer to the server as it is, or
//! tampered with.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::helpers::*;

pub const CLIENT_ID: &str = "countersign";
pub const CLIENT_SECRET: &str = "test-client-secret";
/// The redirect URL registered at the provider (the tests never follow it:
/// they take the provider's answer and give it to the server themselves).
pub const REDIRECT_URL: &str = "http://127.0.0.1:1/auth/oidc/callback";

pub struct Idp {
    /// The provider's process, unless it is the one the tests share.
    child: Option<Child>,
    /// Where it listens, `http://127.0.0.1:<port>`.
    pub url: String,
    /// The issuer it names itself (`http://localhost:<port>` unless given).
    pub issuer: String,
}

/// Whether node is installed; the tests that need it skip with a message
/// otherwise (it is on every machine `make test` sets up).
pub fn node_available() -> bool {
    std::process::Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success())
}

impl Idp {
    /// The provider with its defaults, one for the whole test binary
    /// (started by the first test that asks; it ends with the binary, whose
    /// end closes its standard input); `None` (after saying so) when node is
    /// missing. Each sign-in has its own cookies at the provider, so tests
    /// sharing it do not see each other's sessions.
    pub async fn start() -> Option<Idp> {
        static SHARED: tokio::sync::OnceCell<Option<(String, String)>> = tokio::sync::OnceCell::const_new();
        let (url, issuer) = SHARED
            .get_or_init(|| async {
                let mut idp = Self::start_env(&[]).await?;
                // Kept running past this test: its stdin stays open until the
                // binary exits, and nothing kills it on drop.
                let child = idp.child.take().expect("its process");
                std::mem::forget(child);
                Some((idp.url.clone(), idp.issuer.clone()))
            })
            .await
            .clone()?;
        Some(Idp { child: None, url, issuer })
    }

    /// Starts the provider with extra environment (`OIDC_ISSUER`, …).
    pub async fn start_env(env: &[(&str, &str)]) -> Option<Idp> {
        if !node_available() {
            eprintln!(
                "SKIPPED: node is not installed, so the OpenID provider cannot run (scripts/setup.sh installs it)"
            );
            return None;
        }
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../e2e/oidc/provider.mjs");
        let mut child = Command::new("node")
            .arg(&script)
            .env("OIDC_CLIENT_ID", CLIENT_ID)
            .env("OIDC_CLIENT_SECRET", CLIENT_SECRET)
            .env("OIDC_REDIRECT_URIS", REDIRECT_URL)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs e2e/oidc/provider.mjs");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the provider starts within 30 s")
            .expect("read its stdout")
            .expect("the provider printed its address (is e2e/node_modules installed? `cd e2e && npm ci`)");
        // `oidc provider listening on <url> issuer <issuer>`
        let words: Vec<&str> = line.split_whitespace().collect();
        assert!(line.starts_with("oidc provider listening on "), "unexpected first line: {line}");
        Some(Idp { child: Some(child), url: words[4].to_owned(), issuer: words[6].to_owned() })
    }

    /// A server config with this provider as `testidp` for both tenants,
    /// its `tenant` and `roles` claims mapped; `extra` is appended.
    pub fn config(&self, extra: &str) -> String {
        format!(
            r#"
[oidc.providers.testidp]
name = "Test IdP"
issuer = "{issuer}"
client_id = "{CLIENT_ID}"
client_secret = "{CLIENT_SECRET}"
redirect_url = "{REDIRECT_URL}"
scopes = ["countersign"]
tenants = ["acme", "globex"]
tenant_claim = "tenant"
roles_claim = "roles"
{extra}
"#,
            issuer = self.issuer,
        )
    }

    /// Signs `subject` in at the provider, starting from the authorization
    /// URL countersign sent the browser to: its sign-in page (any password),
    /// then its consent page. Returns the URL the provider sends the browser
    /// back to (`<redirect>?code=…&state=…&iss=…`), not followed.
    pub async fn sign_in(&self, authorize_url: &str, subject: &str) -> String {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client");
        let mut jar: BTreeMap<String, String> = BTreeMap::new();
        let mut url = authorize_url.to_owned();
        for _ in 0..12 {
            if url.starts_with(REDIRECT_URL) {
                return url;
            }
            let response =
                http.get(&url).header("cookie", cookie_header(&jar)).send().await.expect("GET at the provider");
            keep_cookies(&mut jar, response.headers());
            let status = response.status().as_u16();
            if (300..400).contains(&status) {
                url = absolute(&url, response.headers()["location"].to_str().unwrap());
                continue;
            }
            let page = response.text().await.unwrap_or_default();
            assert_eq!(status, 200, "the provider's page at {url}: {page}");
            let prompt = if page.contains(r#"name="prompt" value="login""#) {
                "login"
            } else if page.contains(r#"name="prompt" value="consent""#) {
                "consent"
            } else {
                panic!("no sign-in or consent form at {url}: {page}")
            };
            let form = [("prompt", prompt), ("login", subject), ("password", "any password")];
            let posted = http
                .post(&url)
                .header("cookie", cookie_header(&jar))
                .form(&form)
                .send()
                .await
                .expect("POST at the provider");
            keep_cookies(&mut jar, posted.headers());
            let status = posted.status().as_u16();
            assert!((300..400).contains(&status), "the provider's {prompt} form answered {status}");
            url = absolute(&url, posted.headers()["location"].to_str().unwrap());
        }
        panic!("the provider never sent the browser back (last at {url})")
    }
}

/// `location` made absolute against the page `from` that answered with it.
fn absolute(from: &str, location: &str) -> String {
    if location.starts_with('/') {
        let origin = from.split('/').take(3).collect::<Vec<_>>().join("/");
        format!("{origin}{location}")
    } else {
        location.to_owned()
    }
}

fn keep_cookies(jar: &mut BTreeMap<String, String>, headers: &reqwest::header::HeaderMap) {
    for v in headers.get_all("set-cookie").iter().filter_map(|v| v.to_str().ok()) {
        if let Some((name, value)) = v.split(';').next().and_then(|p| p.split_once('=')) {
            if value.is_empty() {
                jar.remove(name.trim());
            } else {
                jar.insert(name.trim().to_owned(), value.to_owned());
            }
        }
    }
}

fn cookie_header(jar: &BTreeMap<String, String>) -> String {
    jar.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
}

impl Drop for Idp {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.start_kill();
        }
    }
}

/// A query parameter of `url`, decoded.
pub fn param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    serde_urlencoded::from_str::<Vec<(String, String)>>(query)
        .ok()?
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

/// `url` with parameter `name` set to `value` (or removed with `None`).
pub fn with_param(url: &str, name: &str, value: Option<&str>) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap_or_default();
    pairs.retain(|(k, _)| k != name);
    if let Some(value) = value {
        pairs.push((name.to_owned(), value.to_owned()));
    }
    format!("{base}?{}", serde_urlencoded::to_string(pairs).unwrap())
}

/// The password hash every fixture user has (helpers::FIXTURE).
pub const FIXTURE_HASH: &str =
    "$argon2id$v=19$m=1024,t=1,p=1$Y291bnRlcnNpZ24tdGVzdA$WHUX6isDbqdp+FKe69b0ScVM4EWzjOFatTP2ynO/dWI";

/// Links fixture users to subjects at `issuer` with `countersign apply`.
pub async fn link_users(server: &TestServer, issuer: &str) {
    let file = format!(
        r#"
[[user]]
tenant = "acme"
username = "ana"
password_hash = "{FIXTURE_HASH}"
roles = ["approver"]
approval_limit_minor = {{ USD = 500_000 }}
oidc_issuer = "{issuer}"
oidc_subject = "idp-ana"

[[user]]
tenant = "acme"
username = "maya"
password_hash = "{FIXTURE_HASH}"
roles = ["approver"]
approval_limit_minor = {{ USD = 50_000_000 }}
oidc_issuer = "{issuer}"
oidc_subject = "idp-maya"

[[user]]
tenant = "globex"
username = "gus"
password_hash = "{FIXTURE_HASH}"
roles = ["approver", "admin"]
approval_limit_minor = {{ USD = 50_000_000 }}
oidc_issuer = "{issuer}"
oidc_subject = "idp-gus"
"#
    );
    let path = server.dir.path().join("links.toml");
    std::fs::write(&path, file).expect("write links.toml");
    let (code, _, stderr) = server.cli(&["apply", path.to_str().unwrap()]).await;
    assert_eq!(code, 0, "linking users failed: {stderr}");
}
