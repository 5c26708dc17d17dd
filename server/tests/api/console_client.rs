//! A console client for the black-box tests: signs in through
//! `POST /api/v1/session` the way a script would (with `Origin: <server>`),
//! keeps the session cookie and the CSRF token by hand (so tests can replay
//! an old cookie or leave a piece out), and sends them on state changes.
//! Also: decoding approval tokens, and small helpers the console tests share.

#![allow(dead_code)]

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use reqwest::header::{HeaderMap, COOKIE, ORIGIN, SET_COOKIE};
use reqwest::{Method, RequestBuilder};
use serde_json::{json, Value};
use std::time::Duration;

use crate::helpers::*;

/// The console's session cookie.
pub const SESSION_COOKIE: &str = "countersign_session";

/// A `Set-Cookie` of the session cookie, parsed.
#[derive(Debug, Clone)]
pub struct SetCookie {
    pub raw: String,
    pub value: String,
    /// Attribute names (lower case) and values.
    pub attributes: Vec<(String, Option<String>)>,
}

impl SetCookie {
    pub fn parse(raw: &str) -> Option<(String, SetCookie)> {
        let mut parts = raw.split(';');
        let (name, value) = parts.next()?.trim().split_once('=')?;
        let attributes = parts
            .map(|p| {
                let p = p.trim();
                match p.split_once('=') {
                    Some((k, v)) => (k.trim().to_ascii_lowercase(), Some(v.trim().to_owned())),
                    None => (p.to_ascii_lowercase(), None),
                }
            })
            .collect();
        Some((name.to_owned(), SetCookie { raw: raw.to_owned(), value: value.to_owned(), attributes }))
    }

    pub fn has(&self, attribute: &str) -> bool {
        self.attributes.iter().any(|(k, _)| k == &attribute.to_ascii_lowercase())
    }

    pub fn get(&self, attribute: &str) -> Option<&str> {
        self.attributes.iter().find(|(k, _)| k == &attribute.to_ascii_lowercase()).and_then(|(_, v)| v.as_deref())
    }

    /// Whether this `Set-Cookie` deletes the cookie rather than setting it.
    pub fn is_removal(&self) -> bool {
        self.value.is_empty() || self.get("max-age") == Some("0")
    }
}

/// The session cookie set by a response, if any.
pub fn session_set_cookie(headers: &HeaderMap) -> Option<SetCookie> {
    headers
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(SetCookie::parse)
        .find(|(name, _)| name == SESSION_COOKIE)
        .map(|(_, c)| c)
}

/// A client that never follows redirects (form posts answer 303).
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(90))
        .build()
        .expect("client")
}

/// `POST /api/v1/session` with `body`, an optional `Origin` and an optional
/// session cookie already held.
pub async fn sign_in_request(server: &TestServer, body: &Value, origin: Option<&str>, cookie: Option<&str>) -> Reply {
    let mut rb = http_client().post(server.url("/api/v1/session")).json(body);
    if let Some(origin) = origin {
        rb = rb.header(ORIGIN, origin);
    }
    if let Some(cookie) = cookie {
        rb = rb.header(COOKIE, format!("{SESSION_COOKIE}={cookie}"));
    }
    send(rb).await
}

/// Signs `username` in with `password` from the server's own origin.
pub async fn sign_in_as(server: &TestServer, username: &str, password: &str) -> Reply {
    sign_in_request(server, &json!({"username": username, "password": password}), Some(&server.base), None).await
}

/// A signed-in console user.
#[derive(Debug, Clone)]
pub struct Console {
    pub base: String,
    /// The `Origin` sent on state changes (the server's own by default).
    pub origin: String,
    pub http: reqwest::Client,
    /// The session cookie's value.
    pub cookie: String,
    pub csrf: String,
    /// `user` of the sign-in answer.
    pub user: Value,
    /// The sign-in answer's session `Set-Cookie`.
    pub set_cookie: SetCookie,
}

impl Console {
    /// Signs `username` in with the fixture password; panics unless 200.
    pub async fn sign_in(server: &TestServer, username: &str) -> Console {
        let reply = sign_in_as(server, username, PASSWORD).await;
        Console::from_reply(server, &server.base, &reply)
    }

    /// Signs in with `Origin: origin` (e.g. the https public URL).
    pub async fn sign_in_from(server: &TestServer, username: &str, origin: &str) -> Console {
        let body = json!({"username": username, "password": PASSWORD});
        let reply = sign_in_request(server, &body, Some(origin), None).await;
        Console::from_reply(server, origin, &reply)
    }

    /// The console of a successful sign-in answer.
    #[track_caller]
    pub fn from_reply(server: &TestServer, origin: &str, reply: &Reply) -> Console {
        assert_eq!(reply.status, 200, "sign-in: {}", reply.text);
        let set_cookie = session_set_cookie(&reply.headers)
            .unwrap_or_else(|| panic!("sign-in sets the {SESSION_COOKIE} cookie: {:?}", reply.headers));
        let csrf = reply.body["csrf_token"].as_str().expect("csrf_token").to_owned();
        Console {
            base: server.base.clone(),
            origin: origin.to_owned(),
            http: http_client(),
            cookie: set_cookie.value.clone(),
            csrf,
            user: reply.body["user"].clone(),
            set_cookie,
        }
    }

    pub fn user_id(&self) -> String {
        self.user["id"].as_str().expect("user.id").to_owned()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// A request carrying the session cookie only.
    pub fn bare(&self, method: Method, path: &str) -> RequestBuilder {
        self.http.request(method, self.url(path)).header(COOKIE, format!("{SESSION_COOKIE}={}", self.cookie))
    }

    /// Cookie and `Origin`, but no CSRF token.
    pub fn with_origin(&self, method: Method, path: &str) -> RequestBuilder {
        self.bare(method, path).header(ORIGIN, &self.origin)
    }

    /// Cookie, `Origin` and `X-CSRF-Token`: what a well-behaved script sends.
    pub fn authed(&self, method: Method, path: &str) -> RequestBuilder {
        self.with_origin(method, path).header("x-csrf-token", &self.csrf)
    }

    /// `POST /api/v1/proposals/{id}/approvals` with `body`, fully authenticated.
    pub async fn decide(&self, id: &str, body: &Value) -> Reply {
        send(self.authed(Method::POST, &format!("/api/v1/proposals/{id}/approvals")).json(body)).await
    }

    pub async fn approve(&self, id: &str) -> Reply {
        self.decide(id, &json!({"decision": "approve"})).await
    }

    pub async fn reject(&self, id: &str, reason: &str) -> Reply {
        self.decide(id, &json!({"decision": "reject", "reason": reason})).await
    }

    /// `GET /api/v1/queue?{query}`.
    pub async fn queue(&self, query: &str) -> Reply {
        send(self.bare(Method::GET, &format!("/api/v1/queue?{query}"))).await
    }

    /// Every proposal id in the queue for `query` (e.g. `status=all`), all pages.
    pub async fn queue_ids(&self, query: &str) -> Vec<String> {
        let mut ids = Vec::new();
        let mut q = format!("{query}&limit=100");
        loop {
            let page = self.queue(&q).await;
            assert_eq!(page.status, 200, "queue: {}", page.text);
            ids.extend(
                page.body["data"].as_array().expect("data").iter().map(|p| p["id"].as_str().unwrap().to_owned()),
            );
            match page.body["next_cursor"].as_str() {
                Some(c) => q = format!("{query}&limit=100&cursor={c}"),
                None => return ids,
            }
        }
    }

    /// A form post (`csrf_token` added) to `path`, as a page would send it.
    pub async fn form(&self, path: &str, fields: &[(&str, &str)]) -> Reply {
        let mut fields = fields.to_vec();
        fields.push(("csrf_token", self.csrf.as_str()));
        send(self.authed(Method::POST, path).form(&fields)).await
    }

    /// The admin page's one-time message, as the page shows it after a form post.
    pub async fn admin_flash(&self) -> String {
        let page = send(self.bare(Method::GET, "/admin")).await;
        assert_eq!(page.status, 200, "{}", page.text);
        let Some(start) = page.text.find("id=\"admin-flash\"") else { return String::new() };
        let text = &page.text[start..];
        let text = &text[text.find('>').map_or(0, |i| i + 1)..];
        let text = &text[..text.find("</p>").unwrap_or(text.len())];
        text.replace("&#x27;", "'")
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
    }

    /// `DELETE /api/v1/session`, fully authenticated.
    pub async fn sign_out(&self) -> Reply {
        send(self.authed(Method::DELETE, "/api/v1/session")).await
    }
}

/// The status of `id` as the acme payout bot sees it.
pub async fn status_of(server: &TestServer, id: &str) -> String {
    let r = server.get_proposal(ACME_BOT_KEY, id).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["status"].as_str().expect("status").to_owned()
}

/// Asserts a refused decision changed nothing: still pending, no approvals.
#[track_caller]
pub fn assert_untouched(proposal: &Reply) {
    assert_eq!(proposal.body["status"], "pending_approval", "{}", proposal.text);
    assert_eq!(proposal.body["approvals"], json!([]), "{}", proposal.text);
}

/// The proposal `id` as its agent sees it, asserted still pending with no approvals.
pub async fn assert_still_pending(server: &TestServer, id: &str) {
    let r = server.get_proposal(ACME_BOT_KEY, id).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_untouched(&r);
}

/// Creates a pending proposal for 250.00 USD to the untrusted payee; returns its id.
pub async fn pending(server: &TestServer) -> String {
    pending_for(server, 25_000).await
}

/// Creates a pending proposal for `amount_minor` USD to the untrusted payee.
pub async fn pending_for(server: &TestServer, amount_minor: u64) -> String {
    // A fresh run id each time, so equal amounts are distinct proposals.
    let run = format!("run-{amount_minor}-{}", rand_suffix());
    let p =
        server.create(&with(transfer(), json!({"amount_minor": amount_minor, "run_id": run, "invoice_id": run}))).await;
    assert_eq!(p["status"], "pending_approval", "{p}");
    p["id"].as_str().unwrap().to_owned()
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!("{}", N.fetch_add(1, Ordering::Relaxed))
}

/// Adds an acme approver with a USD limit, as `countersign apply` would
/// (`apply_user`: in this process, the fixture's password).
pub async fn add_acme_approver(server: &TestServer, username: &str, usd_limit_minor: u64) {
    apply_user(server, "acme", username, &["approver"], usd_limit_minor).await;
}

/// Adds an admin `username` to `tenant` (the fixture's only admin is
/// globex's gus), as `countersign apply` would, and signs them in.
pub async fn add_admin(server: &TestServer, tenant: &str, username: &str) -> Console {
    apply_user(server, tenant, username, &["admin"], 0).await;
    Console::sign_in(server, username).await
}

/// The ids of the registry changes waiting for a second admin, oldest first.
pub async fn pending_change_ids(server: &TestServer) -> Vec<String> {
    one("SELECT id FROM registry_changes WHERE status = 'pending' ORDER BY id")
        .fetch_all(&server.db().await)
        .await
        .expect("registry changes")
}

/// A compact JWS, decoded (signature not checked).
#[derive(Debug, Clone)]
pub struct Jws {
    pub header: Value,
    pub claims: Value,
    pub signing_input: String,
    pub signature: Vec<u8>,
}

#[track_caller]
pub fn decode_jws(token: &str) -> Jws {
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3, "a compact JWS has three parts: {token}");
    let json = |s: &str| -> Value {
        let bytes = URL_SAFE_NO_PAD.decode(s).unwrap_or_else(|e| panic!("{s} is not base64url without padding: {e}"));
        serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("not JSON: {e}"))
    };
    Jws {
        header: json(parts[0]),
        claims: json(parts[1]),
        signing_input: format!("{}.{}", parts[0], parts[1]),
        signature: URL_SAFE_NO_PAD.decode(parts[2]).expect("signature is base64url"),
    }
}

/// The approval token of an approved proposal, as its agent (acme payout bot) sees it.
pub async fn token_of(server: &TestServer, id: &str) -> (String, Reply) {
    let r = server.get_proposal(ACME_BOT_KEY, id).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "approved", "{}", r.text);
    let token = r.body["approval_token"].as_str().unwrap_or_else(|| panic!("approval_token: {}", r.text)).to_owned();
    (token, r)
}

/// `GET /.well-known/jwks.json`.
pub async fn jwks(server: &TestServer) -> Value {
    let r = send(server.client.get(server.url("/.well-known/jwks.json"))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

/// The JWK of `kid` in the server's JWKS.
pub async fn jwk(server: &TestServer, kid: &str) -> Option<Value> {
    jwks(server).await["keys"].as_array().expect("keys").iter().find(|k| k["kid"] == kid).cloned()
}

/// Verifies the ES256 signature of `jws` with the P-256 public `jwk`.
pub fn es256_verifies(jws: &Jws, jwk: &Value) -> bool {
    use p256::ecdsa::signature::Verifier;
    use p256::ecdsa::{Signature, VerifyingKey};
    let coordinate = |name: &str| URL_SAFE_NO_PAD.decode(jwk[name].as_str().expect("coordinate")).expect("base64url");
    let (x, y) = (coordinate("x"), coordinate("y"));
    assert_eq!((x.len(), y.len()), (32, 32), "P-256 coordinates are 32 bytes: {jwk}");
    let mut sec1 = vec![4u8];
    sec1.extend(x);
    sec1.extend(y);
    let key = VerifyingKey::from_sec1_bytes(&sec1).expect("a P-256 point");
    let Ok(signature) = Signature::from_slice(&jws.signature) else { return false };
    key.verify(jws.signing_input.as_bytes(), &signature).is_ok()
}

/// `username`'s USD approval limit, as stored.
pub async fn usd_limit(server: &TestServer, username: &str) -> Option<i64> {
    one("SELECT l.limit_minor FROM approval_limits l JOIN users u ON u.id = l.user_id
         WHERE u.username = ? AND l.currency = 'USD'")
    .bind(username)
    .fetch_optional(&server.db().await)
    .await
    .unwrap()
}
