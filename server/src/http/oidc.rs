//! Single sign-on's two browser routes (`crate::sso` does the work):
//!
//! - `GET /auth/oidc/start?provider=<id>&next=<path>`: sets the
//!   pre-sign-in cookie and sends the browser to the provider.
//! - `GET /auth/oidc/callback?code&state&iss`: the provider sends the
//!   browser back here; on success the console session starts exactly as
//!   after a password (id cycled, fresh CSRF token), with `amr` `sso`.
//!
//! The pre-sign-in cookie is `SameSite=Lax` (the provider's redirect back is
//! a cross-site navigation: a `Strict` cookie would not come with it), scoped
//! to `/auth/oidc`, HttpOnly, ten minutes, `Secure` over https. For the same
//! reason the session cookie (`Strict`) is not sent on a redirect that is
//! part of that cross-site navigation, so success answers with a small page
//! that moves on by itself (a same-site navigation) instead of a redirect.
//!
//! Every refusal goes back to the sign-in page with a fixed code (the page
//! says a sentence), is logged at warn with a fixed reason, and, once the
//! provider vouched for someone, audited (`session.sso_refused`).

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::json;
use tower_sessions::Session;

use super::session;
use crate::domain::ReturnPath;
use crate::sso::{self, Callback, LOGIN_COOKIE, LOGIN_TTL_SECS};
use crate::state::Shared;

/// The path the pre-sign-in cookie is scoped to.
const COOKIE_PATH: &str = "/auth/oidc";

#[derive(Debug, Deserialize)]
pub struct StartParams {
    provider: Option<String>,
    next: Option<String>,
}

/// `GET /auth/oidc/start`
pub async fn start(State(state): State<Shared>, Query(params): Query<StartParams>) -> Response {
    let next = params.next.as_deref().and_then(ReturnPath::parse);
    let provider = params.provider.unwrap_or_default();
    match sso::start(&*state, &provider, next.as_ref()).await {
        Ok(started) => {
            let mut response = Redirect::to(&started.authorize_url).into_response();
            set_cookie(&mut response, &cookie(&state, &started.cookie, LOGIN_TTL_SECS));
            response
        }
        Err(refusal) => {
            tracing::warn!(reason = refusal.reason(), "single sign-on could not start");
            back_to_login(refusal.code(), next.as_ref())
        }
    }
}

/// `GET /auth/oidc/callback`
pub async fn callback(
    State(state): State<Shared>,
    session: Session,
    headers: HeaderMap,
    Query(answer): Query<Callback>,
) -> Response {
    let presented = login_cookie(&headers);
    let outcome = sso::finish(&*state, presented.as_deref(), answer).await;
    let mut response = match outcome {
        Ok(signed_in) => {
            let audit = json!({
                "amr": "sso",
                "provider": signed_in.provider,
                "issuer": signed_in.issuer,
                "subject_sha256": signed_in.subject_sha256,
                "roles": signed_in.roles,
            });
            let next = signed_in.return_to.clone().unwrap_or_else(|| "/".to_owned());
            match session::start_session(&state, &session, signed_in.user, "sso", Some(signed_in.roles), audit).await {
                Ok(_) => super::pages::onwards(&next),
                Err(e) => e.into_response(),
            }
        }
        Err(refused) => {
            tracing::warn!(reason = refused.refusal.reason(), "single sign-on refused");
            if let Err(e) = sso::audit_refusal(&*state, &refused).await {
                tracing::error!(error = %e, "cannot audit a refused single sign-on");
            }
            back_to_login(refused.refusal.code(), None)
        }
    };
    // Whatever happened, the sign-in it named is over.
    set_cookie(&mut response, &cookie(&state, "", 0));
    response
}

fn back_to_login(code: &str, next: Option<&ReturnPath>) -> Response {
    let mut query = vec![("error", code)];
    if let Some(next) = next {
        query.push(("next", next.as_str()));
    }
    Redirect::to(&format!("/login?{}", serde_urlencoded::to_string(query).unwrap_or_default())).into_response()
}

/// The pre-sign-in cookie's value, if the browser sent one.
fn login_cookie(headers: &HeaderMap) -> Option<String> {
    super::session::cookie_value(headers, LOGIN_COOKIE)
}

fn cookie(state: &Shared, value: &str, max_age: i64) -> String {
    let secure = if state.settings.secure_cookies() { "; Secure" } else { "" };
    format!("{LOGIN_COOKIE}={value}; Path={COOKIE_PATH}; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}")
}

fn set_cookie(response: &mut Response, cookie: &str) {
    if let Ok(v) = HeaderValue::from_str(cookie) {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_login_cookie_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_static("a=1; countersign_oidc=abc; b=2"));
        assert_eq!(login_cookie(&headers).as_deref(), Some("abc"));
        headers.insert(header::COOKIE, HeaderValue::from_static("countersign_oidcx=abc"));
        assert_eq!(login_cookie(&headers), None);
    }
}
