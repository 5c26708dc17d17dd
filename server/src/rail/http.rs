//! What the HTTP rails share: one client per rail (timeouts, no redirects,
//! no proxy, the key as a sensitive header), bounded answers, Stripe's
//! error envelope (the simulator answers in the same one), and the checks
//! on ids and keys.
//!
//! # Outcome mapping (security-critical)
//!
//! - A timeout, a refused/reset/closed connection, any 5xx, any 1xx/3xx
//!   (redirects are never followed), an answer over 1 MiB, any body that
//!   cannot be parsed or does not match the request: **unknown**.
//! - A 4xx with a well-formed error envelope: a **refusal** by its `code`,
//!   except what leaves the outcome open: type `idempotency_error` or
//!   `api_error`, and the statuses 408, 409, 425 and 429.
//!
//! Upstream bodies are never kept or exposed: the outcome types carry no
//! string from the rail except ids and fields parsed from a valid object,
//! and the logs carry status codes, Stripe's error `code` and `param`
//! (names, never values).

pub use countersign_core::rail::*;
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use reqwest::{redirect, StatusCode, Url};
use secrecy::ExposeSecret;
use serde::Deserialize;

/// Largest response body a connector reads; anything longer is a bad answer.
const MAX_BODY: usize = 1024 * 1024;

/// Why a rail's client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum RailConfigError {
    #[error("rail base_url is not an http(s) URL")]
    BadUrl,
    #[error("rail api_key must be sent over https (plain http only to a loopback host)")]
    KeyOverPlainHttp,
    #[error("rail api_key is not a valid header value")]
    BadKey,
    #[error("rail timeouts must be non-zero")]
    BadTimeout,
    #[error("cannot build the rail HTTP client")]
    Client(#[source] reqwest::Error),
}

/// One rail's HTTP client. Cheap to clone.
#[derive(Clone)]
pub struct Http {
    client: reqwest::Client,
    base: Url,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http").field("base", &self.base.as_str()).finish_non_exhaustive()
    }
}

/// What one exchange gave: a status and a bounded body.
pub struct Answer {
    pub status: StatusCode,
    pub body: Vec<u8>,
}

impl Http {
    /// A client for `cfg`, sending `headers` with every request (the key,
    /// when set, as a sensitive `Authorization: Bearer`).
    pub fn new(cfg: &RailConfig, mut headers: HeaderMap) -> Result<Http, RailConfigError> {
        let base = Url::parse(&cfg.base_url).map_err(|_| RailConfigError::BadUrl)?;
        if !matches!(base.scheme(), "http" | "https") || base.host().is_none() || base.cannot_be_a_base() {
            return Err(RailConfigError::BadUrl);
        }
        if cfg.connect_timeout.is_zero() || cfg.total_timeout.is_zero() {
            return Err(RailConfigError::BadTimeout);
        }
        if let Some(key) = &cfg.api_key {
            if base.scheme() == "http" && !is_loopback(&base) {
                return Err(RailConfigError::KeyOverPlainHttp);
            }
            let mut value = HeaderValue::from_str(&format!("Bearer {}", key.expose_secret()))
                .map_err(|_| RailConfigError::BadKey)?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(cfg.connect_timeout)
            .timeout(cfg.total_timeout)
            .redirect(redirect::Policy::none())
            .no_proxy()
            .default_headers(headers)
            .build()
            .map_err(RailConfigError::Client)?;
        Ok(Http { client, base })
    }

    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// `base` + the given path segments (each percent-encoded as one segment).
    pub fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }

    /// Sends the request and reads at most [`MAX_BODY`] bytes of the answer.
    pub async fn exchange(&self, req: reqwest::RequestBuilder, what: &'static str) -> Result<Answer, UnknownCause> {
        let mut response = req.send().await.map_err(|e| transport(&e, what))?;
        let status = response.status();
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > MAX_BODY {
                        tracing::warn!(status = status.as_u16(), what, "rail answer too large");
                        return Err(UnknownCause::BadResponse);
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => return Err(transport(&e, what)),
            }
        }
        tracing::debug!(status = status.as_u16(), what, "rail answered");
        Ok(Answer { status, body })
    }

    /// Stripe's transfer reversal, which the simulator speaks too: `POST
    /// /v1/transfers/{id}/reversals` (`amount` = the rest when `None`), our
    /// key as `Idempotency-Key` and in the reversal's metadata. A 2xx answer
    /// must be that transfer's reversal (of that amount): its id, or
    /// unknown; any other answer is the caller's to map (`Ok(Err(answer))`).
    pub async fn reverse_transfer(
        &self,
        transfer_id: &str,
        idempotency_key: &str,
        amount_minor: Option<u64>,
        what: &'static str,
    ) -> Result<Result<String, Answer>, UnknownCause> {
        let mut form: Vec<(String, String)> =
            amount_minor.map(|a| ("amount".into(), a.to_string())).into_iter().collect();
        form.push((format!("metadata[{REVERSAL_KEY_METADATA}]"), idempotency_key.to_owned()));
        let req = self
            .client
            .post(self.url(&["v1", "transfers", transfer_id, "reversals"]))
            .header("Idempotency-Key", idempotency_key)
            .form(&form);
        let answer = self.exchange(req, what).await?;
        if !answer.status.is_success() {
            return Ok(Err(answer));
        }
        match reversal_from_slice(&answer.body, transfer_id, amount_minor) {
            Some(id) => Ok(Ok(id)),
            None => {
                tracing::warn!(status = answer.status.as_u16(), what, "rail reversal answer unparseable");
                Err(UnknownCause::BadResponse)
            }
        }
    }

    /// A GET whose answer must be a 2xx JSON value (404: `None`).
    pub async fn get_json(
        &self,
        url: Url,
        what: &'static str,
        headers: &HeaderMap,
    ) -> Result<Option<serde_json::Value>, UnknownCause> {
        let answer = self.exchange(self.client.get(url).headers(headers.clone()), what).await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !answer.status.is_success() {
            tracing::warn!(status = answer.status.as_u16(), what, "rail read refused");
            return Err(UnknownCause::ServerError(answer.status.as_u16()));
        }
        serde_json::from_slice(&answer.body).map(Some).map_err(|_| UnknownCause::BadResponse)
    }
}

/// A non-2xx answer: a definite refusal with the envelope's `code` (kept
/// to pick the refusal, logged, never shown), or an open outcome.
pub enum ErrorClass {
    Code(String),
    Open(UnknownCause),
}

/// Reads a non-2xx answer (see the module's outcome mapping).
pub fn classify_error(answer: &Answer) -> ErrorClass {
    let status = answer.status.as_u16();
    if !answer.status.is_client_error() {
        tracing::warn!(status, "rail failed");
        return ErrorClass::Open(if answer.status.is_server_error() {
            UnknownCause::ServerError(status)
        } else {
            UnknownCause::BadResponse
        });
    }
    if matches!(status, 408 | 409 | 425 | 429) {
        tracing::warn!(status, "rail asked to try again");
        return ErrorClass::Open(UnknownCause::ServerError(status));
    }
    #[derive(Deserialize)]
    struct Envelope {
        error: StripeError,
    }
    #[derive(Deserialize)]
    struct StripeError {
        #[serde(rename = "type")]
        kind: String,
        code: Option<String>,
        param: Option<String>,
    }
    let Ok(Envelope { error }) = serde_json::from_slice::<Envelope>(&answer.body) else {
        tracing::warn!(status, "rail refused with a body that is not an error envelope");
        return ErrorClass::Open(UnknownCause::BadResponse);
    };
    let code = error.code.filter(|c| text_ok(c) && c.len() <= 64).unwrap_or_default();
    let param = error.param.filter(|p| text_ok(p) && p.len() <= 64);
    tracing::warn!(status, kind = %error.kind, code = %code, param = ?param, "rail refused");
    if error.kind == "idempotency_error" || error.kind == "api_error" {
        return ErrorClass::Open(UnknownCause::ServerError(status));
    }
    ErrorClass::Code(code)
}

pub fn transport(e: &reqwest::Error, what: &'static str) -> UnknownCause {
    let cause = if e.is_timeout() { UnknownCause::Timeout } else { UnknownCause::Connection };
    tracing::warn!(what, ?cause, status = e.status().map(|s| s.as_u16()), "rail call failed");
    cause
}

/// A rail object id: 1..=255 of `[A-Za-z0-9_-]`.
pub fn id_ok(id: &str) -> bool {
    !id.is_empty() && id.len() <= 255 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

pub fn text_ok(s: &str) -> bool {
    !s.is_empty() && s.len() <= 255 && !s.chars().any(char::is_control)
}

/// An idempotency key the header can carry: 1..=255 visible ASCII.
pub fn key_ok(key: &str) -> bool {
    !key.is_empty() && key.len() <= 255 && key.bytes().all(|b| b.is_ascii_graphic())
}

/// A three-letter currency code, upper-cased.
pub fn currency_of(code: &str) -> Option<String> {
    (code.len() == 3 && code.bytes().all(|b| b.is_ascii_alphabetic())).then(|| code.to_ascii_uppercase())
}

/// A Unix time in seconds, as a time.
pub fn unix_time(secs: i64) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::from_timestamp(secs, 0)
}

/// Whether `url` names this machine (`localhost` or a loopback address):
/// the one place a secret may travel over plain http.
pub fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// A transfer reversal answered for `transfer_id` (and `amount`, when
/// given): its id.
fn reversal_from_slice(body: &[u8], transfer_id: &str, amount: Option<u64>) -> Option<String> {
    #[derive(Deserialize)]
    struct Reversal {
        id: String,
        object: String,
        amount: u64,
        transfer: String,
    }
    serde_json::from_slice::<Reversal>(body)
        .ok()
        .filter(|r| {
            id_ok(&r.id)
                && r.object == "transfer_reversal"
                && r.transfer == transfer_id
                && amount.is_none_or(|a| a == r.amount)
        })
        .map(|r| r.id)
}

/// A listing of `transfer_id`'s reversals.
pub fn reversals_from_value(value: serde_json::Value, transfer_id: &str) -> Result<Vec<RailReversal>, UnknownCause> {
    #[derive(Deserialize)]
    struct Listed {
        id: String,
        object: String,
        amount: u64,
        transfer: String,
        #[serde(default)]
        metadata: std::collections::BTreeMap<String, String>,
    }
    #[derive(Deserialize)]
    struct List {
        data: Vec<Listed>,
    }
    let list: List = serde_json::from_value(value).map_err(|_| UnknownCause::BadResponse)?;
    list.data
        .into_iter()
        .map(|r| {
            if r.object != "transfer_reversal" || !id_ok(&r.id) || r.transfer != transfer_id {
                return Err(UnknownCause::BadResponse);
            }
            Ok(RailReversal {
                id: r.id,
                amount_minor: r.amount,
                transfer: r.transfer,
                key: r.metadata.get(REVERSAL_KEY_METADATA).cloned(),
            })
        })
        .collect()
}

#[cfg(test)]
pub(super) fn answer(status: u16, body: &str) -> Answer {
    Answer { status: StatusCode::from_u16(status).unwrap(), body: body.as_bytes().to_vec() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(status: u16, body: &str) -> Result<String, UnknownCause> {
        match classify_error(&answer(status, body)) {
            ErrorClass::Code(c) => Ok(c),
            ErrorClass::Open(c) => Err(c),
        }
    }

    #[test]
    fn error_classification() {
        let e = |kind: &str, code: &str| format!(r#"{{"error":{{"type":"{kind}","code":"{code}","message":"m"}}}}"#);
        assert_eq!(class(402, &e("card_error", "insufficient_funds")), Ok("insufficient_funds".into()));
        assert_eq!(class(400, &e("invalid_request_error", "parameter_unknown")), Ok("parameter_unknown".into()));
        assert_eq!(class(400, r#"{"error":{"type":"invalid_request_error","message":"m"}}"#), Ok(String::new()));
        assert_eq!(class(400, &e("idempotency_error", "x")), Err(UnknownCause::ServerError(400)));
        assert_eq!(class(400, &e("api_error", "x")), Err(UnknownCause::ServerError(400)));
        assert_eq!(class(429, &e("rate_limit_error", "rate_limit")), Err(UnknownCause::ServerError(429)));
        assert_eq!(class(409, &e("invalid_request_error", "lock_timeout")), Err(UnknownCause::ServerError(409)));
        assert_eq!(class(402, "<html>nope</html>"), Err(UnknownCause::BadResponse));
        assert_eq!(class(400, ""), Err(UnknownCause::BadResponse));
        assert_eq!(class(502, &e("card_error", "insufficient_funds")), Err(UnknownCause::ServerError(502)));
        assert_eq!(class(302, ""), Err(UnknownCause::BadResponse));
    }
}
