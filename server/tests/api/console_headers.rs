//! Security headers on every response (SPEC §10): API JSON,
//! console pages, errors and 404s all carry X-Frame-Options, Referrer-Policy,
//! X-Content-Type-Options and a Content-Security-Policy whose scripts allow
//! neither `unsafe-inline` nor `unsafe-eval`; pages allow their hydration
//! script by a per-response nonce.

use reqwest::header::ORIGIN;
use reqwest::Method;
use serde_json::json;

use crate::console_client::*;
use crate::helpers::*;

/// The sources of `directive` in a CSP, falling back to `default-src`.
fn script_sources(csp: &str) -> Vec<String> {
    let directives: Vec<(String, Vec<String>)> = csp
        .split(';')
        .filter_map(|d| {
            let mut words = d.split_whitespace();
            let name = words.next()?.to_ascii_lowercase();
            Some((name, words.map(str::to_owned).collect()))
        })
        .collect();
    let find = |name: &str| directives.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    find("script-src").or_else(|| find("default-src")).unwrap_or_default()
}

#[track_caller]
fn assert_security_headers(what: &str, r: &Reply) {
    assert_eq!(
        r.header("x-frame-options").map(str::to_ascii_uppercase).as_deref(),
        Some("DENY"),
        "{what}: {:?}",
        r.headers
    );
    assert_eq!(r.header("referrer-policy"), Some("no-referrer"), "{what}: {:?}", r.headers);
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"), "{what}: {:?}", r.headers);
    let csp = r.header("content-security-policy").unwrap_or_else(|| panic!("{what}: no CSP: {:?}", r.headers));
    let scripts = script_sources(csp);
    for forbidden in ["'unsafe-inline'", "'unsafe-eval'"] {
        assert!(
            !scripts.iter().any(|s| s.eq_ignore_ascii_case(forbidden)),
            "{what}: script sources allow {forbidden}: {csp}"
        );
    }
    assert!(!scripts.iter().any(|s| s == "*" || s == "http:" || s == "https:" || s == "data:"), "{what}: {csp}");
    assert_eq!(r.headers.get_all("content-security-policy").iter().count(), 1, "{what}: one CSP header");
}

/// The CSP nonce of a page, after checking every script carries it.
#[track_caller]
fn page_nonce(what: &str, r: &Reply) -> String {
    let csp = r.header("content-security-policy").expect("CSP");
    let scripts = script_sources(csp);
    let nonces: Vec<&str> =
        scripts.iter().filter_map(|s| s.strip_prefix("'nonce-").and_then(|s| s.strip_suffix('\''))).collect();
    assert_eq!(nonces.len(), 1, "{what}: one script nonce in {csp}");
    let nonce = nonces[0].to_owned();
    assert!(nonce.len() >= 16, "{what}: a nonce with real entropy: {nonce}");
    assert!(r.text.contains(&format!("nonce=\"{nonce}\"")), "{what}: the page's scripts carry nonce=\"{nonce}\"");
    // Every <script> element carries it (anything else would not run, or be injected).
    for (i, tag) in r.text.match_indices("<script").map(|(i, _)| &r.text[i..]).enumerate() {
        let open = &tag[..tag.find('>').expect("tag end") + 1];
        assert!(open.contains(&format!("nonce=\"{nonce}\"")), "{what}: script #{i} lacks the nonce: {open}");
    }
    nonce
}

#[tokio::test]
async fn every_response_carries_the_security_headers() {
    let server = TestServer::start().await;
    let c = http_client();
    let id = pending(&server).await;
    let ana = Console::sign_in(&server, "ana").await;

    let cases: Vec<(&str, reqwest::RequestBuilder, u16)> = vec![
        ("healthz", c.get(server.url("/healthz")), 200),
        ("readyz", c.get(server.url("/readyz")), 200),
        ("jwks", c.get(server.url("/.well-known/jwks.json")), 200),
        ("openapi", c.get(server.url("/openapi.json")), 200),
        ("agent GET", server.get(&format!("/api/v1/proposals/{id}"), ACME_BOT_KEY), 200),
        (
            "agent POST",
            server.post_json("/api/v1/proposals", ACME_BOT_KEY, &with(transfer(), json!({"run_id": "hdr"}))),
            201,
        ),
        ("agent 401", c.get(server.url(&format!("/api/v1/proposals/{id}"))), 401),
        ("queue", ana.bare(Method::GET, "/api/v1/queue"), 200),
        ("queue 401", c.get(server.url("/api/v1/queue")), 401),
        (
            "sign-in 401",
            c.post(server.url("/api/v1/session"))
                .header(ORIGIN, &server.base)
                .json(&json!({"username": "ana", "password": "x"})),
            401,
        ),
        (
            "sign-in 200",
            c.post(server.url("/api/v1/session"))
                .header(ORIGIN, &server.base)
                .json(&json!({"username": "ben", "password": PASSWORD})),
            200,
        ),
        (
            "CSRF 403",
            ana.with_origin(Method::POST, &format!("/api/v1/proposals/{id}/approvals"))
                .json(&json!({"decision": "approve"})),
            403,
        ),
        ("API 404", c.get(server.url("/api/v1/no-such-endpoint")), 404),
        ("login page", c.get(server.url("/login")), 200),
        ("page 404", c.get(server.url("/no-such-page")), 404),
        ("queue page", ana.bare(Method::GET, "/"), 200),
        ("proposal page", ana.bare(Method::GET, &format!("/proposals/{id}")), 200),
    ];
    for (what, rb, status) in cases {
        let r = send(rb).await;
        assert_eq!(r.status, status, "{what}: {}", r.text);
        assert_security_headers(what, &r);
    }
    // A decision answer too.
    let r = ana.approve(&id).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_security_headers("approve", &r);
}

#[tokio::test]
async fn html_pages_allow_their_scripts_by_a_fresh_nonce() {
    let server = TestServer::start().await;
    let c = http_client();
    let first = send(c.get(server.url("/login"))).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert!(first.header("content-type").is_some_and(|t| t.starts_with("text/html")), "{:?}", first.headers);
    assert!(first.text.contains("<script"), "the login page hydrates: {}", first.text);
    let a = page_nonce("/login", &first);
    let second = send(c.get(server.url("/login"))).await;
    let b = page_nonce("/login again", &second);
    assert_ne!(a, b, "a fresh nonce per response");

    let ana = Console::sign_in(&server, "ana").await;
    let id = pending(&server).await;
    for path in ["/".to_owned(), format!("/proposals/{id}")] {
        let r = send(ana.bare(Method::GET, &path)).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        page_nonce(&path, &r);
    }
}

/// Whether a page loads the console's wasm (the hydration script and its preloads).
fn loads_the_wasm(r: &Reply) -> bool {
    r.text.contains("countersign.js") || r.text.contains("countersign.wasm")
}

#[tokio::test]
async fn server_only_pages_load_no_wasm_and_the_others_do() {
    let server = TestServer::start().await;
    let login = send(http_client().get(server.url("/login"))).await;
    assert_eq!(login.status, 200, "{}", login.text);
    assert!(!loads_the_wasm(&login), "the sign-in page is server-only: {}", login.text);
    assert!(login.text.contains("/passkeys.js"), "its plain scripts stay: {}", login.text);
    page_nonce("/login", &login);

    // An admin's pages (gus: globex's admin), and an approver's pages of
    // a payment of her tenant within her limit (ana: acme's).
    let (gus, ana) = (Console::sign_in(&server, "gus").await, Console::sign_in(&server, "ana").await);
    let id = pending(&server).await;
    for (who, path) in [
        (&gus, "/account".to_owned()),
        (&gus, "/batches".to_owned()),
        (&gus, "/bulk?status=pending".to_owned()),
        (&gus, "/admin/loop".to_owned()),
        (&gus, "/admin/policy".to_owned()),
        (&ana, format!("/proposals/{id}/approve")),
    ] {
        let r = send(who.bare(Method::GET, &path)).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        assert!(!loads_the_wasm(&r), "{path} is server-only: {}", r.text);
        assert!(r.text.contains("<main>"), "{path} is the console's page, rendered whole: {}", r.text);
    }
    for (who, path) in [
        (&ana, "/".to_owned()),
        (&ana, format!("/proposals/{id}")),
        (&gus, "/operations".to_owned()),
        (&gus, "/admin".to_owned()),
    ] {
        let r = send(who.bare(Method::GET, &path)).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        assert!(loads_the_wasm(&r), "{path} hydrates: {}", r.text);
    }
}

#[tokio::test]
async fn asset_requests_never_touch_the_session() {
    // A signed-in browser sends its cookie with every script and wasm request;
    // those are served outside the session layers (no read, no refresh).
    let scratch = Scratch::with_fixture("");
    scratch.apply_fixture().await;
    let site = scratch.dir.path().join("site");
    std::fs::create_dir_all(site.join("pkg")).unwrap();
    std::fs::write(site.join("pkg/countersign.js"), "export default 1;\n").unwrap();
    let server = scratch.serve(&[("COUNTERSIGN_SITE_ROOT", site.to_str().unwrap())]).await;
    let ana = Console::sign_in(&server, "ana").await;
    let asset = send(ana.bare(reqwest::Method::GET, "/pkg/countersign.js")).await;
    assert_eq!(asset.status, 200, "{}", asset.text);
    assert_eq!(asset.text, "export default 1;\n");
    assert!(asset.header("set-cookie").is_none(), "an asset request refreshed the session: {:?}", asset.headers);
    assert_eq!(asset.header("x-content-type-options"), Some("nosniff"));
    let missing = send(ana.bare(reqwest::Method::GET, "/pkg/nope.js")).await;
    assert_eq!(missing.status, 404);
    assert!(missing.header("set-cookie").is_none());
    // A page request does refresh it (the idle timeout counts from the last request).
    let page = send(ana.bare(reqwest::Method::GET, "/")).await;
    assert!(page.header("set-cookie").is_some(), "pages keep refreshing the session");
}

#[tokio::test]
async fn assets_are_served_compressed_when_the_browser_accepts_it() {
    // The wasm, js and css go out gzip-
    // or brotli-encoded, compressed once at build time (scripts/site.sh
    // writes `.gz` and `.br` beside each): the server sends those files as
    // they are, never compressing per request. Without Accept-Encoding, or
    // without a compressed file, the asset as is.
    use std::io::{Read, Write};
    let scratch = Scratch::with_fixture("");
    scratch.apply_fixture().await;
    let site = scratch.dir.path().join("site");
    std::fs::create_dir_all(site.join("pkg")).unwrap();
    let script: String = (0..200).map(|i| format!("export const v{i} = {i};\n")).collect();
    std::fs::write(site.join("pkg/countersign.js"), &script).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(script.as_bytes()).unwrap();
    let built = gz.finish().unwrap();
    std::fs::write(site.join("pkg/countersign.js.gz"), &built).unwrap();
    // A stand-in for the brotli file: the server sends whatever bytes it holds.
    std::fs::write(site.join("pkg/countersign.js.br"), b"brotli bytes").unwrap();
    std::fs::write(site.join("pkg/countersign.css"), "body { margin: 0 }\n").unwrap();
    let server = scratch.serve(&[("COUNTERSIGN_SITE_ROOT", site.to_str().unwrap())]).await;
    let client = reqwest::Client::new();
    let get = |path: &'static str, encoding: &'static str| {
        client.get(server.url(path)).header(reqwest::header::ACCEPT_ENCODING, encoding).send()
    };

    let gzip = get("/pkg/countersign.js", "gzip").await.unwrap();
    assert_eq!(gzip.status(), 200);
    assert_eq!(gzip.headers()["content-encoding"], "gzip");
    assert!(gzip.headers()["vary"].to_str().unwrap().to_ascii_lowercase().contains("accept-encoding"));
    assert_eq!(gzip.headers()["x-content-type-options"], "nosniff", "compression keeps the security headers");
    assert!(gzip.headers()["content-type"].to_str().unwrap().contains("javascript"), "the asset's own type");
    assert_eq!(gzip.headers()["content-length"], built.len().to_string().as_str(), "the built file, its length known");
    let bytes = gzip.bytes().await.unwrap();
    assert_eq!(&bytes[..], &built[..], "the file site.sh wrote, not compressed again");
    let mut decoded = String::new();
    flate2::read::GzDecoder::new(&bytes[..]).read_to_string(&mut decoded).unwrap();
    assert_eq!(decoded, script);

    let br = get("/pkg/countersign.js", "br;q=1.0, gzip;q=0.5").await.unwrap();
    assert_eq!(br.headers()["content-encoding"], "br");
    assert_eq!(&br.bytes().await.unwrap()[..], b"brotli bytes");

    let plain = get("/pkg/countersign.js", "identity").await.unwrap();
    assert!(plain.headers().get("content-encoding").is_none());
    assert_eq!(plain.text().await.unwrap(), script);
    // No compressed file beside it: as is, whatever the browser accepts.
    let css = get("/pkg/countersign.css", "br, gzip").await.unwrap();
    assert!(css.headers().get("content-encoding").is_none());
    assert_eq!(css.text().await.unwrap(), "body { margin: 0 }\n");
}

#[tokio::test]
async fn pages_link_assets_by_a_content_version_cached_for_a_year() {
    // A new build is a new URL, so the old one can be
    // cached immutably; the plain names still answer, cached briefly.
    let scratch = Scratch::with_fixture("");
    scratch.apply_fixture().await;
    let site = scratch.dir.path().join("site");
    std::fs::create_dir_all(site.join("pkg")).unwrap();
    std::fs::write(site.join("pkg/countersign.js"), "export default 1;\n").unwrap();
    std::fs::write(site.join("pkg/countersign.css"), "body{}\n").unwrap();
    let server = scratch.serve(&[("COUNTERSIGN_SITE_ROOT", site.to_str().unwrap())]).await;
    // The signed-out welcome: a page that hydrates, so it links the script too.
    let page = send(server.client.get(server.url("/"))).await;
    let start = page.text.find("/pkg/").expect("an asset link");
    let version: String = page.text[start + 5..].chars().take_while(|c| c.is_ascii_hexdigit()).collect();
    assert_eq!(version.len(), 12, "{}", &page.text[start..start + 40]);
    assert!(page.text.contains(&format!("href=\"/pkg/{version}/countersign.css\"")), "{}", page.text);
    assert!(page.text.contains(&format!("/pkg/{version}/countersign.js")), "{}", page.text);

    let versioned = send(server.client.get(server.url(&format!("/pkg/{version}/countersign.js")))).await;
    assert_eq!(versioned.status, 200);
    assert_eq!(versioned.text, "export default 1;\n");
    assert_eq!(versioned.header("cache-control"), Some("public, max-age=31536000, immutable"));
    let plain = send(server.client.get(server.url("/pkg/countersign.js"))).await;
    assert_eq!(plain.header("cache-control"), Some("public, max-age=300"));
    let stale = send(server.client.get(server.url("/pkg/000000000000/countersign.js"))).await;
    assert_eq!(stale.status, 404, "another build's version is not served");

    // Another build (different content) is another version.
    let (dir, config) = server.stop().await;
    std::fs::write(site.join("pkg/countersign.js"), "export default 2;\n").unwrap();
    let server = TestServer::spawn_env(dir, config, &[("COUNTERSIGN_SITE_ROOT", site.to_str().unwrap())]).await;
    let page = send(server.client.get(server.url("/login"))).await;
    assert!(!page.text.contains(&format!("/pkg/{version}/")), "a new version after a new build");
}
