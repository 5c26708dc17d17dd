//! Single sign-on with OpenID Connect, against a real provider
//! (`oidc_harness.rs`: the `oidc-provider` package run by node): a full
//! sign-in gives the linked user a console session; every way the answer can
//! be wrong is refused (another issuer, another nonce, a replayed or foreign
//! answer, a missing or wrong state, an unknown subject, the wrong tenant);
//! the provider's roles only narrow; a tenant without local passwords
//! refuses them; sign-ins and refusals are audited without tokens.

use reqwest::header::{COOKIE, LOCATION, ORIGIN, SET_COOKIE};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::console_client::*;
use crate::helpers::*;
use crate::oidc_harness::*;

const LOGIN_COOKIE: &str = "countersign_oidc";

/// A provider, and a server configured for it with users linked to it.
async fn setup(extra: &str) -> Option<(Idp, TestServer)> {
    let idp = Idp::start().await?;
    let server = TestServer::start_with(&idp.config(extra)).await;
    link_users(&server, &idp.issuer).await;
    Some((idp, server))
}

/// A browser that started a single sign-on: the authorization URL it was
/// sent to and its pre-sign-in cookie.
struct Started {
    authorize_url: String,
    cookie: String,
    set_cookie: SetCookie,
}

async fn start(server: &TestServer, query: &str) -> Started {
    let response = http_client()
        .get(server.url(&format!("/auth/oidc/start?provider=testidp{query}")))
        .send()
        .await
        .expect("start");
    assert_eq!(response.status(), 303, "start: {:?}", response.headers());
    let authorize_url = response.headers()[LOCATION].to_str().unwrap().to_owned();
    let set_cookie = response
        .headers()
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| SetCookie::parse(v.to_str().ok()?))
        .find(|(name, _)| name == LOGIN_COOKIE)
        .map(|(_, c)| c)
        .expect("the pre-sign-in cookie");
    Started { authorize_url, cookie: set_cookie.value.clone(), set_cookie }
}

/// What the server answered the provider's redirect back with.
struct Answer {
    status: u16,
    location: Option<String>,
    session: Option<SetCookie>,
    login_cookie_cleared: bool,
    body: String,
}

/// The browser, back from the provider at `callback` (the provider's
/// redirect URL with its query), presenting pre-sign-in `cookie`.
async fn callback(server: &TestServer, callback: &str, cookie: Option<&str>) -> Answer {
    let query = callback.split_once('?').map_or("", |(_, q)| q);
    let mut rb = http_client().get(server.url(&format!("/auth/oidc/callback?{query}")));
    if let Some(cookie) = cookie {
        rb = rb.header(COOKIE, format!("{LOGIN_COOKIE}={cookie}"));
    }
    let response = rb.send().await.expect("callback");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let login_cookie_cleared = headers
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| SetCookie::parse(v.to_str().ok()?))
        .any(|(name, c)| name == LOGIN_COOKIE && c.is_removal());
    Answer {
        status,
        location: headers.get(LOCATION).map(|v| v.to_str().unwrap().to_owned()),
        session: session_set_cookie(&headers).filter(|c| !c.is_removal()),
        login_cookie_cleared,
        body: response.text().await.unwrap_or_default(),
    }
}

impl Answer {
    /// Refused: back to the sign-in page with `code`, and no session.
    fn assert_refused(&self, code: &str) {
        assert_eq!(self.status, 303, "{}", self.body);
        assert_eq!(self.location.as_deref(), Some(format!("/login?error={code}").as_str()), "{}", self.body);
        assert!(self.session.is_none(), "no session for a refused sign-in: {:?}", self.session);
        assert!(self.login_cookie_cleared, "the pre-sign-in cookie is cleared");
    }
}

/// A full sign-in as `subject`; the server's answer.
async fn sign_in(idp: &Idp, server: &TestServer, subject: &str) -> Answer {
    let started = start(server, "").await;
    let back = idp.sign_in(&started.authorize_url, subject).await;
    callback(server, &back, Some(&started.cookie)).await
}

/// The console session behind a successful answer, with its CSRF token
/// (read from the page, where the forms carry it).
async fn console_of(server: &TestServer, answer: &Answer) -> Console {
    let set_cookie = answer.session.clone().expect("a session cookie");
    let page = http_client()
        .get(server.url("/"))
        .header(COOKIE, format!("{SESSION_COOKIE}={}", set_cookie.value))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let csrf = page
        .split(r#"name="csrf_token" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the signed-in page carries the CSRF token")
        .to_owned();
    Console {
        base: server.base.clone(),
        origin: server.base.clone(),
        http: http_client(),
        cookie: set_cookie.value.clone(),
        csrf,
        user: json!({}),
        set_cookie,
    }
}

async fn audit(server: &TestServer, action: &str) -> Vec<Value> {
    let db = server.db().await;
    let rows: Vec<String> =
        one("SELECT data FROM audit_log WHERE action = ? ORDER BY seq").bind(action).fetch_all(&db).await.unwrap();
    rows.into_iter().map(|d| serde_json::from_str(&d).unwrap()).collect()
}

async fn all_audit_text(server: &TestServer) -> String {
    let db = server.db().await;
    let rows: Vec<String> = one("SELECT data FROM audit_log").fetch_all(&db).await.unwrap();
    rows.join("\n")
}

fn sha256_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

#[tokio::test]
async fn a_full_sign_in_through_the_provider_starts_a_console_session_for_the_linked_user() {
    let Some((idp, server)) = setup("").await else { return };
    let started = start(&server, "&next=%2Fproposals%2Fprop_0abc").await;

    // The browser goes to the provider's authorization endpoint: code flow,
    // PKCE S256, a state and a nonce, the registered redirect URL.
    let url = &started.authorize_url;
    assert!(url.starts_with(&format!("{}/auth?", idp.issuer)), "{url}");
    assert_eq!(param(url, "response_type").as_deref(), Some("code"));
    assert_eq!(param(url, "client_id").as_deref(), Some(CLIENT_ID));
    assert_eq!(param(url, "redirect_uri").as_deref(), Some(REDIRECT_URL));
    assert_eq!(param(url, "code_challenge_method").as_deref(), Some("S256"));
    assert!(param(url, "code_challenge").is_some_and(|c| c.len() >= 43), "{url}");
    assert!(param(url, "state").is_some_and(|s| s.len() >= 16), "{url}");
    assert!(param(url, "nonce").is_some_and(|n| n.len() >= 16), "{url}");
    let scopes = param(url, "scope").unwrap();
    assert!(scopes.split(' ').any(|s| s == "openid") && scopes.split(' ').any(|s| s == "countersign"), "{scopes}");
    // The pre-sign-in cookie: HttpOnly, Lax (it must come back with the
    // provider's cross-site redirect), only for /auth/oidc, short-lived.
    let c = &started.set_cookie;
    assert!(c.has("HttpOnly"), "{}", c.raw);
    assert_eq!(c.get("SameSite").map(str::to_ascii_lowercase).as_deref(), Some("lax"), "{}", c.raw);
    assert_eq!(c.get("Path"), Some("/auth/oidc"), "{}", c.raw);
    assert_eq!(c.get("Max-Age"), Some("600"), "{}", c.raw);
    assert!(!c.has("Secure"), "not Secure for an http public URL: {}", c.raw);
    // The state, nonce and verifier are kept server-side, under a hash of the cookie.
    assert_eq!(server.scalar("SELECT COUNT(*) FROM oidc_logins").await, 1);
    let db = server.db().await;
    let id: String = one("SELECT id_sha256 FROM oidc_logins").fetch_one(&db).await.unwrap();
    assert_eq!(id, sha256_hex(&started.cookie), "the cookie's value itself is not stored");

    let back = idp.sign_in(url, "idp-ana").await;
    assert_eq!(param(&back, "iss").as_deref(), Some(idp.issuer.as_str()), "the provider names itself (RFC 9207)");
    let answer = callback(&server, &back, Some(&started.cookie)).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let session = answer.session.clone().expect("a console session");
    assert!(session.has("HttpOnly"), "{}", session.raw);
    assert_eq!(session.get("SameSite").map(str::to_ascii_lowercase).as_deref(), Some("lax"), "{}", session.raw);
    assert!(answer.login_cookie_cleared);
    // The page moves on by itself to `next` (a same-site navigation, so the
    // session cookie goes along whatever its SameSite), with a link as well.
    assert!(
        answer.body.contains(r#"<meta http-equiv="refresh" content="0;url=/proposals/prop_0abc">"#),
        "{}",
        answer.body
    );
    assert!(answer.body.contains(r#"href="/proposals/prop_0abc""#), "{}", answer.body);
    assert_eq!(server.scalar("SELECT COUNT(*) FROM oidc_logins").await, 0, "the sign-in is used up");

    // The session is ana's, with a CSRF token, and works.
    let console = console_of(&server, &answer).await;
    let page = console.bare(reqwest::Method::GET, "/").send().await.unwrap().text().await.unwrap();
    assert!(page.contains(r#"id="signed-in-as""#) && page.contains("ana"), "{page}");
    assert_eq!(console.queue("").await.status, 200);
    let stored = server
        .scalar("SELECT COUNT(*) FROM console_sessions WHERE user_id = (SELECT id FROM users WHERE username = 'ana')")
        .await;
    assert_eq!(stored, 1);

    // Audited: the method, the provider, the issuer and the subject's hash;
    // no token, code or subject in clear anywhere in the trail.
    let signed_in = audit(&server, "session.signed_in").await;
    assert_eq!(signed_in.len(), 1, "{signed_in:?}");
    let entry = &signed_in[0];
    assert_eq!(entry["amr"], "sso");
    assert_eq!(entry["provider"], "testidp");
    assert_eq!(entry["issuer"], idp.issuer);
    assert_eq!(entry["subject_sha256"], sha256_hex("idp-ana"));
    assert_eq!(entry["roles"], json!(["approver"]));
    let trail = all_audit_text(&server).await;
    let code = param(&back, "code").unwrap();
    assert!(!trail.contains(&code) && !trail.contains("\"idp-ana\"") && !trail.contains("eyJ"), "{trail}");

    // An approval given in this session says how its approver signed in.
    let proposal = server.create(&transfer()).await;
    let id = proposal["id"].as_str().unwrap();
    let decided = console.decide(id, &json!({"decision": "approve"})).await;
    assert_eq!(decided.status, 200, "{}", decided.text);
    let amr: String = one("SELECT amr FROM approvals WHERE proposal_id = ?").bind(id).fetch_one(&db).await.unwrap();
    assert_eq!(amr, "sso");
}

#[tokio::test]
async fn next_is_followed_only_when_it_is_a_path_on_this_origin() {
    let Some((idp, server)) = setup("").await else { return };
    let started = start(&server, "&next=%2F%2Fevil.example%2Fphish").await;
    let back = idp.sign_in(&started.authorize_url, "idp-ana").await;
    let answer = callback(&server, &back, Some(&started.cookie)).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(answer.body.contains(r#"content="0;url=/""#), "to the queue instead: {}", answer.body);
    assert!(!answer.body.contains("evil.example"), "{}", answer.body);
}

#[tokio::test]
async fn an_answer_naming_another_issuer_is_refused() {
    let Some((idp, server)) = setup("").await else { return };
    let started = start(&server, "").await;
    let back = idp.sign_in(&started.authorize_url, "idp-ana").await;
    // A mix-up: the answer says it comes from another provider (RFC 9207).
    // The code itself is good: without the check this would sign ana in.
    let forged = with_param(&back, "iss", Some("https://other-idp.example"));
    callback(&server, &forged, Some(&started.cookie)).await.assert_refused("sso_failed");
}

#[tokio::test]
async fn a_provider_whose_discovery_names_another_issuer_is_refused() {
    // The provider at the configured URL says it is someone else.
    let Some(idp) = Idp::start_env(&[("OIDC_ISSUER", "https://impostor.example")]).await else { return };
    let listening_at = idp.url.replace("127.0.0.1", "localhost");
    let config =
        idp.config("").replace("issuer = \"https://impostor.example\"", &format!("issuer = \"{listening_at}\""));
    let server = TestServer::start_with(&config).await;
    let response = http_client().get(server.url("/auth/oidc/start?provider=testidp")).send().await.unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()[LOCATION], "/login?error=sso_unavailable", "never sent to that provider");
    assert!(response.headers().get(SET_COOKIE).is_none_or(|c| !c.to_str().unwrap().contains(LOGIN_COOKIE)));
    assert_eq!(server.scalar("SELECT COUNT(*) FROM oidc_logins").await, 0);
}

#[tokio::test]
async fn an_id_token_minted_for_another_nonce_is_refused() {
    let Some((idp, server)) = setup("").await else { return };
    let started = start(&server, "").await;
    // The provider is asked (by someone in the middle) for a token with
    // another nonce: it is genuine, signed, for this client, but not the
    // answer to this browser's request. Without the nonce check, ana is in.
    let tampered = with_param(&started.authorize_url, "nonce", Some("a-nonce-this-browser-never-had"));
    let back = idp.sign_in(&tampered, "idp-ana").await;
    callback(&server, &back, Some(&started.cookie)).await.assert_refused("sso_failed");
    assert!(audit(&server, "session.signed_in").await.is_empty());
}

#[tokio::test]
async fn a_replayed_answer_is_refused() {
    let Some((idp, server)) = setup("").await else { return };
    let started = start(&server, "").await;
    let back = idp.sign_in(&started.authorize_url, "idp-ana").await;
    let first = callback(&server, &back, Some(&started.cookie)).await;
    assert_eq!(first.status, 200, "{}", first.body);

    // The same answer again, with the same cookie: that sign-in is used up.
    callback(&server, &back, Some(&started.cookie)).await.assert_refused("sso_expired");

    // The same code in another sign-in (its own cookie, its own state): the
    // provider refuses the used code (and its PKCE verifier is not this one).
    let other = start(&server, "").await;
    let replayed = with_param(&back, "state", param(&other.authorize_url, "state").as_deref());
    callback(&server, &replayed, Some(&other.cookie)).await.assert_refused("sso_failed");
    assert_eq!(audit(&server, "session.signed_in").await.len(), 1, "one sign-in, once");
}

#[tokio::test]
async fn a_missing_or_wrong_state_is_refused_and_ends_that_sign_in() {
    let Some((idp, server)) = setup("").await else { return };

    // No pre-sign-in cookie at all (a callback this browser never started).
    let started = start(&server, "").await;
    let back = idp.sign_in(&started.authorize_url, "idp-ana").await;
    callback(&server, &back, None).await.assert_refused("sso_expired");
    callback(&server, &back, Some("not-a-sign-in-of-ours")).await.assert_refused("sso_expired");

    // No state.
    callback(&server, &with_param(&back, "state", None), Some(&started.cookie)).await.assert_refused("sso_failed");
    // ... and the sign-in is gone: the right state does not work afterwards.
    callback(&server, &back, Some(&started.cookie)).await.assert_refused("sso_expired");

    // Login CSRF: the attacker's own answer (their code and state) planted
    // in the victim's browser, which has its own sign-in in progress.
    let victim = start(&server, "").await;
    let attacker = start(&server, "").await;
    let attackers_answer = idp.sign_in(&attacker.authorize_url, "idp-ana").await;
    callback(&server, &attackers_answer, Some(&victim.cookie)).await.assert_refused("sso_failed");
    assert!(audit(&server, "session.signed_in").await.is_empty());
}

#[tokio::test]
async fn an_unknown_subject_is_refused_even_with_the_email_of_a_linked_user() {
    let Some((idp, server)) = setup("").await else { return };
    // idp-stranger's e-mail is ana's; users are found by issuer + subject only.
    let answer = sign_in(&idp, &server, "idp-stranger").await;
    answer.assert_refused("sso_not_linked");
    let refused = audit(&server, "session.sso_refused").await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["reason"], "not_linked");
    assert_eq!(refused[0]["issuer"], idp.issuer);
    assert_eq!(refused[0]["subject_sha256"], sha256_hex("idp-stranger"));
    assert!(!all_audit_text(&server).await.contains("idp-stranger"));
    assert!(audit(&server, "session.signed_in").await.is_empty());
}

#[tokio::test]
async fn the_tenant_claim_must_name_the_linked_users_tenant() {
    let Some((idp, server)) = setup("").await else { return };
    // maya is an acme user; the provider says her tenant is globex.
    sign_in(&idp, &server, "idp-maya").await.assert_refused("sso_denied");
    let refused = audit(&server, "session.sso_refused").await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["reason"], "wrong_tenant");
    let db = server.db().await;
    let tenant: Option<String> =
        one("SELECT tenant_id FROM audit_log WHERE action = 'session.sso_refused'").fetch_one(&db).await.unwrap();
    assert_eq!(tenant.as_deref(), Some("acme"), "the refusal is in the user's tenant's trail");
}

#[tokio::test]
async fn a_provider_not_listed_for_the_users_tenant_cannot_sign_them_in() {
    let Some(idp) = Idp::start().await else { return };
    let server =
        TestServer::start_with(&idp.config("").replace(r#"tenants = ["acme", "globex"]"#, r#"tenants = ["acme"]"#))
            .await;
    link_users(&server, &idp.issuer).await;
    // gus (globex) is linked, and the provider vouches for him, but this
    // provider signs in acme's users only.
    sign_in(&idp, &server, "idp-gus").await.assert_refused("sso_denied");
    assert_eq!(sign_in(&idp, &server, "idp-ana").await.status, 200);
}

#[tokio::test]
async fn the_providers_roles_narrow_the_registrys_and_never_grant() {
    let Some((idp, server)) = setup("").await else { return };
    // gus is approver and admin in the registry; the provider says approver.
    let answer = sign_in(&idp, &server, "idp-gus").await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(audit(&server, "session.signed_in").await[0]["roles"], json!(["approver"]));
    let console = console_of(&server, &answer).await;
    let payee = [("id", "acct_ssotest0000001"), ("legal_name", "SSO Test")];
    let admin_form = console.form("/admin/payees", &payee).await;
    assert_eq!(admin_form.status, 403, "admin is not among this session's roles: {}", admin_form.text);
    assert_eq!(server.scalar("SELECT COUNT(*) FROM payees WHERE id = 'acct_ssotest0000001'").await, 0);

    // With a password, gus is still the registry's admin: the registry
    // grants, the provider only narrows.
    let by_password = Console::sign_in(&server, "gus").await;
    let admin_form = by_password.form("/admin/payees", &payee).await;
    assert_eq!(admin_form.status, 303, "{}", admin_form.text);
    assert_eq!(server.scalar("SELECT COUNT(*) FROM payees WHERE id = 'acct_ssotest0000001'").await, 1);
}

/// The provider's groups (`groups_claim`) grant what the tenant's
/// `idp_groups` maps them to, recorded at each sign-in; a group the
/// provider stops naming stops granting at the next one.
const GROUPS: &str = "groups_claim = \"groups\"\n\
    [tenants.acme.approval_groups]\ntreasury = [\"maya\"]\n\
    [tenants.acme.idp_groups.\"Finance Approvers\"]\nroles = [\"approver\"]\napproval_groups = [\"treasury\"]\n";

#[tokio::test]
async fn the_providers_groups_grant_what_the_tenant_maps_them_to_at_each_sign_in() {
    let Some((idp, server)) = setup(GROUPS).await else { return };
    let olga = format!(
        "[[user]]\ntenant = \"acme\"\nusername = \"olga\"\npassword_hash = \"{FIXTURE_HASH}\"\nroles = [\"viewer\"]\n\
         approval_limit_minor = {{ USD = 500_000 }}\noidc_issuer = \"{}\"\noidc_subject = \"idp-olga\"\n",
        idp.issuer
    );
    let path = server.dir.path().join("olga.toml");
    std::fs::write(&path, olga).unwrap();
    let (code, _, stderr) = server.cli(&["apply", path.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{stderr}");
    let db = server.db().await;
    let grants = |user: &'static str| {
        let db = db.clone();
        async move {
            let sql = format!("SELECT oidc_groups || ' ' || idp_roles || ' ' || idp_approval_groups FROM users WHERE username = '{user}'");
            one::<String>(&sql).fetch_one(&db).await.unwrap()
        }
    };
    assert_eq!(grants("olga").await, "[] [] []", "nothing before the provider names a group");

    // olga is a viewer in the registry; the provider puts her in Finance
    // Approvers (mapped) and Everyone (not mapped: ignored).
    let answer = sign_in(&idp, &server, "idp-olga").await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(grants("olga").await, r#"["Everyone","Finance Approvers"] ["approver"] ["treasury"]"#);
    let mut roles: Vec<String> =
        serde_json::from_value(audit(&server, "session.signed_in").await[0]["roles"].clone()).unwrap();
    roles.sort();
    assert_eq!(roles, ["approver", "viewer"], "the group's role is in the session");
    let granted = audit(&server, "user.idp_grants").await;
    assert_eq!(granted.len(), 1, "{granted:?}");
    assert_eq!(granted[0]["idp_groups"], json!(["Everyone", "Finance Approvers"]));
    assert_eq!(granted[0]["approval_groups"], json!(["treasury"]));
    let actor: String =
        one("SELECT actor FROM audit_log WHERE action = 'user.idp_grants'").fetch_one(&db).await.unwrap();
    assert_eq!(actor, "sso:testidp");
    // Limits stay the registry's: the group granted no limit.
    let limits = "SELECT COUNT(*) FROM approval_limits l JOIN users u ON u.id = l.user_id WHERE u.username = 'olga'";
    assert_eq!(server.scalar(limits).await, 1);

    // ana was in Finance Approvers at her last sign-in; the provider no
    // longer names it: the grant ends when she signs in.
    query("UPDATE users SET oidc_groups = '[\"Finance Approvers\"]', idp_roles = '[\"approver\"]', idp_approval_groups = '[\"treasury\"]' WHERE username = 'ana'")
        .execute(&db)
        .await
        .unwrap();
    let answer = sign_in(&idp, &server, "idp-ana").await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(grants("ana").await, "[] [] []");
    let granted = audit(&server, "user.idp_grants").await;
    assert_eq!(granted.len(), 2, "{granted:?}");
    assert_eq!(granted[1]["approval_groups"], json!([]));
}

#[tokio::test]
async fn a_tenant_without_local_passwords_refuses_them_and_tells_nothing_to_a_guesser() {
    let Some((idp, server)) = setup("[tenants.globex]\nlocal_passwords = false\n").await else { return };
    // gus's right password: refused, with a typed answer.
    let right = sign_in_as(&server, "gus", PASSWORD).await;
    right.assert_error(403, "forbidden");
    assert!(session_set_cookie(&right.headers).is_none_or(|c| c.is_removal()));
    // A wrong password and an unknown user: the usual 401, nothing more.
    sign_in_as(&server, "gus", "wrong password").await.assert_error(401, "unauthenticated");
    sign_in_as(&server, "nobody-here", PASSWORD).await.assert_error(401, "unauthenticated");
    // The form says so on the sign-in page.
    let form = http_client()
        .post(server.url("/login"))
        .header(ORIGIN, &server.base)
        .form(&[("username", "gus"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 303);
    assert_eq!(form.headers()[LOCATION], "/login?error=sso_only&username=gus");
    // Another tenant's passwords still work, and gus signs in through the provider.
    assert_eq!(sign_in_as(&server, "ana", PASSWORD).await.status, 200);
    assert_eq!(sign_in(&idp, &server, "idp-gus").await.status, 200);
    // The sign-in page offers the provider.
    let page = http_client().get(server.url("/login")).send().await.unwrap().text().await.unwrap();
    assert!(
        page.contains(r#"href="/auth/oidc/start?provider=testidp" rel="external""#)
            && page.contains("Sign in with Test IdP"),
        "{page}"
    );
}

#[tokio::test]
async fn linking_is_checked_when_applied() {
    let Some(idp) = Idp::start().await else { return };
    let server = TestServer::start_with(&idp.config("")).await;
    let apply = |name: &str, text: String| {
        let path = server.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let user = |extra: &str| {
        format!(
            "[[user]]\ntenant = \"acme\"\nusername = \"ana\"\npassword_hash = \"{FIXTURE_HASH}\"\nroles = [\"approver\"]\n{extra}\n"
        )
    };
    // An issuer no provider has (a trailing slash is another issuer).
    let path = apply("a.toml", user(&format!("oidc_issuer = \"{}/\"\noidc_subject = \"x\"", idp.issuer)));
    let (code, _, stderr) = server.cli(&["apply", path.to_str().unwrap()]).await;
    assert_ne!(code, 0);
    assert!(stderr.contains("user[0].oidc_issuer"), "{stderr}");
    // One without the other.
    let path = apply("b.toml", user("oidc_subject = \"x\""));
    let (code, _, stderr) = server.cli(&["apply", path.to_str().unwrap()]).await;
    assert_ne!(code, 0);
    assert!(stderr.contains("user[0].oidc_issuer") && stderr.contains("together"), "{stderr}");
    // Two users with one identity.
    let two = format!(
        "{}\n[[user]]\ntenant = \"acme\"\nusername = \"ben\"\npassword_hash = \"{FIXTURE_HASH}\"\nroles = [\"approver\"]\noidc_issuer = \"{iss}\"\noidc_subject = \"same\"\n",
        user(&format!("oidc_issuer = \"{iss}\"\noidc_subject = \"same\"", iss = idp.issuer)),
        iss = idp.issuer
    );
    let path = apply("c.toml", two);
    let (code, _, stderr) = server.cli(&["apply", path.to_str().unwrap()]).await;
    assert_ne!(code, 0);
    assert!(stderr.contains("already defined"), "{stderr}");
    assert_eq!(server.scalar("SELECT COUNT(*) FROM users WHERE oidc_subject IS NOT NULL").await, 0);
}
