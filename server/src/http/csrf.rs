//! CSRF protection for every cookie-authenticated state change: JSON
//! endpoints, HTML forms and Leptos server functions alike. A request that
//! is not GET/HEAD/OPTIONS must come from our own origin (fetch metadata,
//! `Origin`, or `Referer`; see `same_origin`) and carry the session's CSRF token,
//! in `X-CSRF-Token` or the `csrf_token` form field. Sign-in has no session
//! yet, so it gets the origin check only. The session cookie is
//! SameSite=Lax: a cross-site POST does not carry it, a third layer
//! (cross-site top-level GETs do, so links from Slack or email arrive
//! signed in; no GET changes anything).
//!
//! One exception to the origin check ([`scripted`]): a request with none of
//! `Origin`, `Referer` or `Sec-Fetch-Site` that is either
//! `Content-Type: application/json` or a `DELETE`, `PUT` or `PATCH` is a
//! script's (curl, an SDK), not a browser's: a browser sends such a request
//! cross-site only after a CORS preflight, which this server never grants,
//! and then always with an `Origin` (as it does for every `DELETE`, `PUT`
//! and `PATCH`, same-origin too). So a script that signed in with JSON can
//! sign out with a bare `DELETE /api/v1/session`. It is judged by its
//! credentials, session and CSRF token like any other; a present foreign
//! `Origin` is still refused.
//!
//! A console page's form names its page (`return_to`, `CsrfField`). When
//! such a form arrives from our origin after its session ended, nothing is
//! done and the browser goes to sign-in and back to that page; with a
//! stale token (another session's), straight back to it. There
//! `/session.js` puts back what was typed. A form naming no page, and every
//! JSON call, gets the 401 or 403 as before.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use subtle::ConstantTimeEq;
use tower_sessions::Session;

use super::error::ApiError;
use super::extract::MAX_BODY_BYTES;
use super::session::{ConsoleSession, SESSION_KEY};
use crate::domain::ReturnPath;
use crate::state::Shared;

/// Paths whose POST creates a session, and so cannot present a token yet
/// (`DELETE /api/v1/session` is a state change like any other).
const SIGN_IN_PATHS: &[&str] =
    &["/api/v1/session", "/login", "/api/v1/session/passkey-challenges", "/api/v1/session/passkey"];

fn origin_of(url: &str) -> &str {
    // scheme://host[:port], without path
    let after_scheme = url.find("://").map(|i| i + 3).unwrap_or(0);
    match url[after_scheme..].find('/') {
        Some(i) => &url[..after_scheme + i],
        None => url,
    }
}

/// Our origins: the configured public URL, and the Host the browser used
/// (which an attacker's page cannot choose).
fn allowed_origins(public_url: &str, headers: &HeaderMap) -> Vec<String> {
    let public = origin_of(public_url).to_owned();
    let scheme = if public_url.starts_with("https://") { "https" } else { "http" };
    let mut origins = vec![public];
    if let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) {
        origins.push(format!("{scheme}://{host}"));
    }
    origins
}

/// Whether the request comes from a page of our own origin.
///
/// Browsers send fetch metadata: `Sec-Fetch-Site: same-origin` is the
/// browser's own word and cannot be set by another site's page. Under our
/// `Referrer-Policy: no-referrer`, a same-origin form post carries
/// `Origin: null` and no `Referer`, so with fetch metadata present an
/// `Origin` is checked only when it names one. Without fetch metadata (a
/// script, an older browser) `Origin` or `Referer` must name our origin.
pub fn same_origin(public_url: &str, headers: &HeaderMap) -> bool {
    let allowed = allowed_origins(public_url, headers);
    let origin = headers.get(header::ORIGIN).map(|o| o.to_str().unwrap_or("null"));
    if let Some(site) = headers.get("sec-fetch-site") {
        return site.as_bytes() == b"same-origin"
            && origin.is_none_or(|o| o == "null" || allowed.iter().any(|a| a == o));
    }
    if let Some(origin) = origin {
        return allowed.iter().any(|a| a == origin);
    }
    match headers.get(header::REFERER).and_then(|r| r.to_str().ok()) {
        Some(referer) => allowed.iter().any(|a| referer == a || referer.starts_with(&format!("{a}/"))),
        None => false,
    }
}

/// A script's JSON request: `application/json` with no browser origin
/// signal at all (see the module doc).
pub fn scripted_json(headers: &HeaderMap) -> bool {
    super::extract::is_json(headers) && no_browser_signal(headers)
}

/// A script's request (see the module doc): JSON, or a method no page can
/// send cross-site without a preflight, with no browser origin signal.
pub fn scripted(method: &Method, headers: &HeaderMap) -> bool {
    let preflighted = matches!(*method, Method::DELETE | Method::PUT | Method::PATCH);
    (super::extract::is_json(headers) || preflighted) && no_browser_signal(headers)
}

fn no_browser_signal(headers: &HeaderMap) -> bool {
    [header::ORIGIN, header::REFERER].iter().all(|h| !headers.contains_key(h))
        && !headers.contains_key("sec-fetch-site")
}

fn is_form(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"))
}

/// The middleware.
pub async fn guard(State(state): State<Shared>, session: Session, req: Request, next: Next) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    if !same_origin(&state.settings.public_url, req.headers()) && !scripted(req.method(), req.headers()) {
        return ApiError::ForbiddenBecause("cross-origin request refused").into_response();
    }
    // Inside a nested router the path is stripped; the original tells the truth.
    let path = req.extensions().get::<axum::extract::OriginalUri>().map(|u| u.0.path().to_owned());
    if req.method() == Method::POST && SIGN_IN_PATHS.contains(&path.as_deref().unwrap_or(req.uri().path())) {
        return next.run(req).await;
    }
    let expected = match session.get::<ConsoleSession>(SESSION_KEY).await {
        Ok(found) => found.map(|s| s.csrf_token),
        Err(e) => return ApiError::Internal(Box::new(e)).into_response(),
    };
    let header_token = req.headers().get("x-csrf-token").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let (req, presented, return_to) = match header_token {
        Some(token) => (req, Some(token), None),
        None if is_form(req.headers()) => {
            let (parts, body) = req.into_parts();
            let bytes = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
                Ok(b) => b,
                Err(_) => return ApiError::PayloadTooLarge.into_response(),
            };
            let token = form_urlencoded_field(&bytes, "csrf_token");
            // A console page's form names its page (`return_to`); a bad
            // one is the queue's.
            let return_to = form_urlencoded_field(&bytes, "return_to").map(|p| ReturnPath::parse(&p));
            (Request::from_parts(parts, Body::from(bytes)), token, return_to)
        }
        None => (req, None, None),
    };
    let Some(expected) = expected else {
        // A console form from a page whose session has ended (idle, or
        // signed out in another tab): nothing is done; sign in, then back
        // to that page, where `/session.js` puts the draft back.
        return match return_to {
            Some(page) => Redirect::to(&expired_sign_in(page.as_ref())).into_response(),
            None => ApiError::Unauthenticated.into_response(),
        };
    };
    match presented {
        Some(token) if bool::from(token.as_bytes().ct_eq(expected.as_bytes())) => next.run(req).await,
        // A form of our own origin with another session's token (signed out
        // and in again elsewhere): nothing is done; back to its page, now
        // with this session's token, the draft put back.
        _ => match return_to {
            Some(page) => Redirect::to(page.as_ref().map_or("/", ReturnPath::as_str)).into_response(),
            None => ApiError::ForbiddenBecause("missing or wrong CSRF token").into_response(),
        },
    }
}

/// The sign-in page after a form post from an ended session: back to
/// `page` (the queue without one), saying why.
fn expired_sign_in(page: Option<&ReturnPath>) -> String {
    match page.map(ReturnPath::login_href) {
        Some(href) if href.contains('?') => format!("{href}&expired=1"),
        _ => "/login?expired=1".to_owned(),
    }
}

fn form_urlencoded_field(body: &[u8], name: &str) -> Option<String> {
    serde_urlencoded::from_bytes::<Vec<(String, String)>>(body)
        .ok()?
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn origin_rules() {
        let public = "http://localhost:8080";
        assert!(same_origin(public, &headers(&[("origin", "http://localhost:8080")])));
        assert!(same_origin(public, &headers(&[("host", "127.0.0.1:9000"), ("origin", "http://127.0.0.1:9000")])));
        assert!(!same_origin(public, &headers(&[("origin", "http://evil.example")])));
        assert!(!same_origin(public, &headers(&[("origin", "null")])));
        assert!(same_origin(public, &headers(&[("referer", "http://localhost:8080/proposals/x")])));
        assert!(!same_origin(public, &headers(&[("referer", "http://localhost:8080.evil.example/")])));
        assert!(!same_origin(public, &headers(&[])), "no Origin and no Referer is refused");
        // A script's JSON: no browser signal at all.
        assert!(scripted_json(&headers(&[("content-type", "application/json")])));
        assert!(scripted_json(&headers(&[("content-type", "application/json; charset=utf-8")])));
        assert!(!scripted_json(&headers(&[("content-type", "application/json"), ("origin", "http://evil.example")])));
        assert!(!scripted_json(&headers(&[("content-type", "application/json"), ("origin", "null")])));
        assert!(!scripted_json(&headers(&[("content-type", "application/json"), ("sec-fetch-site", "cross-site")])));
        assert!(!scripted_json(&headers(&[("content-type", "application/json"), ("referer", "http://evil.example/")])));
        assert!(!scripted_json(&headers(&[("content-type", "application/x-www-form-urlencoded")])), "a form");
        assert!(!scripted_json(&headers(&[("content-type", "text/plain")])), "a simple request a page can send");
        // A bare DELETE (a script signing out): no page sends one cross-site without a preflight.
        assert!(scripted(&Method::DELETE, &headers(&[])));
        assert!(scripted(&Method::PATCH, &headers(&[])));
        assert!(!scripted(&Method::DELETE, &headers(&[("origin", "http://evil.example")])));
        assert!(!scripted(&Method::DELETE, &headers(&[("sec-fetch-site", "cross-site")])));
        assert!(!scripted(&Method::POST, &headers(&[])), "a bare POST is what a cross-site form sends");
        assert!(!scripted(&Method::POST, &headers(&[("content-type", "application/x-www-form-urlencoded")])));
        // Fetch metadata from a browser.
        assert!(same_origin(public, &headers(&[("sec-fetch-site", "same-origin"), ("origin", "null")])));
        assert!(!same_origin(public, &headers(&[("sec-fetch-site", "cross-site"), ("origin", "null")])));
        assert!(!same_origin(public, &headers(&[("sec-fetch-site", "same-site")])));
        assert!(!same_origin(
            public,
            &headers(&[("sec-fetch-site", "same-origin"), ("origin", "http://evil.example")])
        ));
    }

    #[test]
    fn reads_the_form_field() {
        assert_eq!(form_urlencoded_field(b"a=1&csrf_token=abc%21&b=2", "csrf_token").as_deref(), Some("abc!"));
        assert_eq!(form_urlencoded_field(b"a=1", "csrf_token"), None);
    }
}
