//! The rail connector: the one HTTP client that speaks the Stripe-compatible
//! transfers API of SPEC section 12 (the bundled simulator or a real rail).
//!
//! # Outcome mapping (security-critical)
//!
//! - A 2xx answer carrying a well-formed transfer that matches the order
//!   (amount, currency, destination, `transfer_group` = the key) →
//!   [`CreateOutcome::Accepted`].
//! - A 4xx answer with a well-formed Stripe error body → a [`Decline`]:
//!   `insufficient_funds`, `account_closed` (→ `destination_closed`) and
//!   `limit_exceeded` are typed, every other code is [`Decline::RailRejected`].
//!   Exceptions that stay open: `idempotency_error` (the key already has an
//!   outcome we were not told) and the statuses 408, 409, 425 and 429 are
//!   [`UnknownCause::ServerError`] with that status.
//! - Everything else is [`CreateOutcome::Unknown`]: timeouts, connection
//!   refused / reset / closed without an answer, any 5xx, any 1xx/3xx
//!   (redirects are never followed), and any body that cannot be parsed or
//!   does not match the order. An ambiguous outcome is never a decline.
//!
//! Upstream bodies are never kept or exposed: the outcome types carry no
//! string from the rail except ids and fields parsed from a valid transfer or
//! reversal, and the logs carry at most status codes.

pub use countersign_core::rail::*;
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use reqwest::{redirect, StatusCode, Url};
use secrecy::ExposeSecret;
use serde::Deserialize;

/// Largest response body the connector reads; anything longer is a bad answer.
const MAX_BODY: usize = 1024 * 1024;

/// Why a [`RailClient`] could not be built.
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

/// The HTTP client for the rail. Cheap to clone.
#[derive(Clone)]
pub struct RailClient {
    http: reqwest::Client,
    base: Url,
}

impl std::fmt::Debug for RailClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RailClient").field("base", &self.base.as_str()).finish_non_exhaustive()
    }
}

/// What one HTTP exchange gave: a status and a bounded body, or why not.
struct Answer {
    status: StatusCode,
    body: Vec<u8>,
}

impl RailClient {
    pub fn new(cfg: RailConfig) -> Result<Self, RailConfigError> {
        let base = Url::parse(&cfg.base_url).map_err(|_| RailConfigError::BadUrl)?;
        if !matches!(base.scheme(), "http" | "https") || base.host().is_none() || base.cannot_be_a_base() {
            return Err(RailConfigError::BadUrl);
        }
        if cfg.connect_timeout.is_zero() || cfg.total_timeout.is_zero() {
            return Err(RailConfigError::BadTimeout);
        }
        let mut headers = HeaderMap::new();
        if let Some(key) = &cfg.api_key {
            if base.scheme() == "http" && !is_loopback(&base) {
                return Err(RailConfigError::KeyOverPlainHttp);
            }
            let mut value = HeaderValue::from_str(&format!("Bearer {}", key.expose_secret()))
                .map_err(|_| RailConfigError::BadKey)?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let http = reqwest::Client::builder()
            .connect_timeout(cfg.connect_timeout)
            .timeout(cfg.total_timeout)
            .redirect(redirect::Policy::none())
            .no_proxy()
            .default_headers(headers)
            .build()
            .map_err(RailConfigError::Client)?;
        Ok(RailClient { http, base })
    }

    /// `base` + the given path segments (each percent-encoded as one segment).
    fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }

    /// Sends the request and reads at most [`MAX_BODY`] bytes of the answer.
    async fn exchange(&self, req: reqwest::RequestBuilder, what: &'static str) -> Result<Answer, UnknownCause> {
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

    /// `POST /v1/transfers`. Safe to repeat with the same order: the rail
    /// replays the first outcome for the same `Idempotency-Key`.
    pub async fn create_transfer(&self, order: &TransferOrder<'_>) -> CreateOutcome {
        if !key_ok(order.idempotency_key) || order.metadata.iter().any(|(k, _)| *k == "source_account") {
            // Refused locally: nothing was sent, so nothing can have moved.
            tracing::warn!("rail transfer refused before sending: invalid key or metadata");
            return CreateOutcome::Declined(Decline::RailRejected);
        }
        let mut form: Vec<(String, String)> = vec![
            ("amount".into(), order.amount_minor.to_string()),
            ("currency".into(), order.currency.to_ascii_lowercase()),
            ("destination".into(), order.destination.into()),
            ("transfer_group".into(), order.idempotency_key.into()),
            ("metadata[source_account]".into(), order.source_account.into()),
        ];
        form.extend(order.metadata.iter().map(|(k, v)| (format!("metadata[{k}]"), (*v).to_string())));
        let req =
            self.http.post(self.url(&["v1", "transfers"])).header("Idempotency-Key", order.idempotency_key).form(&form);
        let answer = match self.exchange(req, "create_transfer").await {
            Ok(a) => a,
            Err(cause) => return CreateOutcome::Unknown(cause),
        };
        if answer.status.is_success() {
            let Some(t) = parse_transfer(&answer.body) else {
                tracing::warn!(status = answer.status.as_u16(), "rail transfer answer unparseable");
                return CreateOutcome::Unknown(UnknownCause::BadResponse);
            };
            let matches = t.amount_minor == order.amount_minor
                && t.currency.eq_ignore_ascii_case(order.currency)
                && t.destination == order.destination
                && t.transfer_group.as_deref() == Some(order.idempotency_key);
            if !matches {
                tracing::warn!(status = answer.status.as_u16(), "rail transfer does not match the order");
                return CreateOutcome::Unknown(UnknownCause::BadResponse);
            }
            return CreateOutcome::Accepted(t);
        }
        match classify_error(&answer) {
            ErrorClass::Code(code) => CreateOutcome::Declined(decline_for(&code)),
            ErrorClass::Open(cause) => CreateOutcome::Unknown(cause),
        }
    }

    /// `GET /v1/transfers?transfer_group=KEY` — the transfers made under a
    /// key (empty when none). Any transfer of another group is a bad answer.
    pub async fn find_by_group(&self, key: &str) -> Result<Vec<RailTransfer>, UnknownCause> {
        let mut url = self.url(&["v1", "transfers"]);
        url.query_pairs_mut().append_pair("transfer_group", key).append_pair("limit", "100");
        let answer = self.exchange(self.http.get(url), "find_by_group").await?;
        if !answer.status.is_success() {
            tracing::warn!(status = answer.status.as_u16(), "rail listing refused");
            return Err(UnknownCause::ServerError(answer.status.as_u16()));
        }
        #[derive(Deserialize)]
        struct List {
            object: String,
            data: Vec<serde_json::Value>,
        }
        let list: List = serde_json::from_slice(&answer.body).map_err(|_| UnknownCause::BadResponse)?;
        if list.object != "list" {
            return Err(UnknownCause::BadResponse);
        }
        let mut out = Vec::with_capacity(list.data.len());
        for value in list.data {
            let t = transfer_from_value(value).ok_or(UnknownCause::BadResponse)?;
            if t.transfer_group.as_deref() != Some(key) {
                tracing::warn!("rail listing returned a transfer of another group");
                return Err(UnknownCause::BadResponse);
            }
            out.push(t);
        }
        Ok(out)
    }

    /// `GET /v1/transfers/{id}` — one transfer (`None` when the rail has no
    /// such transfer). Any other id in the answer is a bad answer.
    pub async fn get_transfer(&self, id: &str) -> Result<Option<RailTransfer>, UnknownCause> {
        if !id_ok(id) {
            return Ok(None);
        }
        let answer = self.exchange(self.http.get(self.url(&["v1", "transfers", id])), "get_transfer").await?;
        if answer.status.as_u16() == 404 {
            return Ok(None);
        }
        if !answer.status.is_success() {
            tracing::warn!(status = answer.status.as_u16(), "rail transfer read refused");
            return Err(UnknownCause::ServerError(answer.status.as_u16()));
        }
        let value = serde_json::from_slice(&answer.body).map_err(|_| UnknownCause::BadResponse)?;
        match transfer_from_value(value) {
            Some(t) if t.id == id => Ok(Some(t)),
            _ => Err(UnknownCause::BadResponse),
        }
    }

    /// `GET /v1/transfers/{id}/reversals`: the transfer's reversals (none for
    /// an unknown transfer).
    pub async fn reversals_of(&self, transfer_id: &str) -> Result<Vec<RailReversal>, UnknownCause> {
        if !id_ok(transfer_id) {
            return Ok(Vec::new());
        }
        let url = self.url(&["v1", "transfers", transfer_id, "reversals"]);
        let answer = self.exchange(self.http.get(url), "list_reversals").await?;
        if answer.status.as_u16() == 404 {
            return Ok(Vec::new());
        }
        if !answer.status.is_success() {
            tracing::warn!(status = answer.status.as_u16(), "rail reversal listing refused");
            return Err(UnknownCause::ServerError(answer.status.as_u16()));
        }
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
        let list: List = serde_json::from_slice(&answer.body).map_err(|_| UnknownCause::BadResponse)?;
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

    /// `POST /v1/transfers/{id}/reversals` (`amount` = the rest when `None`).
    pub async fn reverse(
        &self,
        transfer_id: &str,
        idempotency_key: &str,
        amount_minor: Option<u64>,
    ) -> ReversalOutcome {
        if !key_ok(idempotency_key) || transfer_id.is_empty() {
            tracing::warn!("rail reversal refused before sending: invalid key or transfer id");
            return ReversalOutcome::Declined(Decline::RailRejected);
        }
        let mut form: Vec<(String, String)> =
            amount_minor.map(|a| ("amount".into(), a.to_string())).into_iter().collect();
        form.push((format!("metadata[{REVERSAL_KEY_METADATA}]"), idempotency_key.to_owned()));
        let req = self
            .http
            .post(self.url(&["v1", "transfers", transfer_id, "reversals"]))
            .header("Idempotency-Key", idempotency_key)
            .form(&form);
        let answer = match self.exchange(req, "reverse").await {
            Ok(a) => a,
            Err(cause) => return ReversalOutcome::Unknown(cause),
        };
        if answer.status.is_success() {
            #[derive(Deserialize)]
            struct Reversal {
                id: String,
                object: String,
                amount: u64,
                transfer: String,
            }
            let ok = serde_json::from_slice::<Reversal>(&answer.body).ok().filter(|r| {
                id_ok(&r.id)
                    && r.object == "transfer_reversal"
                    && r.transfer == transfer_id
                    && amount_minor.is_none_or(|a| a == r.amount)
            });
            return match ok {
                Some(r) => ReversalOutcome::Reversed { reversal_id: r.id },
                None => {
                    tracing::warn!(status = answer.status.as_u16(), "rail reversal answer unparseable");
                    ReversalOutcome::Unknown(UnknownCause::BadResponse)
                }
            };
        }
        match classify_error(&answer) {
            ErrorClass::Code(code) if code == "transfer_reversal_window_closed" => ReversalOutcome::TooLate,
            ErrorClass::Code(code) => ReversalOutcome::Declined(decline_for(&code)),
            ErrorClass::Open(cause) => ReversalOutcome::Unknown(cause),
        }
    }
}

/// A non-2xx answer: either a definite refusal with its Stripe `code` (kept
/// only to pick the enum, never exposed), or an open outcome.
enum ErrorClass {
    Code(String),
    Open(UnknownCause),
}

fn classify_error(answer: &Answer) -> ErrorClass {
    let status = answer.status.as_u16();
    tracing::warn!(status, "rail refused or failed");
    if !answer.status.is_client_error() {
        // 5xx, or a 1xx/3xx we never follow.
        return ErrorClass::Open(if answer.status.is_server_error() {
            UnknownCause::ServerError(status)
        } else {
            UnknownCause::BadResponse
        });
    }
    if matches!(status, 408 | 409 | 425 | 429) {
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
    }
    let Ok(Envelope { error }) = serde_json::from_slice::<Envelope>(&answer.body) else {
        return ErrorClass::Open(UnknownCause::BadResponse);
    };
    if error.kind == "idempotency_error" {
        return ErrorClass::Open(UnknownCause::ServerError(status));
    }
    if error.kind == "api_error" {
        return ErrorClass::Open(UnknownCause::ServerError(status));
    }
    ErrorClass::Code(error.code.unwrap_or_default())
}

fn decline_for(code: &str) -> Decline {
    match code {
        "insufficient_funds" => Decline::InsufficientFunds,
        "account_closed" => Decline::DestinationClosed,
        "limit_exceeded" => Decline::LimitExceeded,
        _ => Decline::RailRejected,
    }
}

fn transport(e: &reqwest::Error, what: &'static str) -> UnknownCause {
    let cause = if e.is_timeout() { UnknownCause::Timeout } else { UnknownCause::Connection };
    tracing::warn!(what, ?cause, status = e.status().map(|s| s.as_u16()), "rail call failed");
    cause
}

fn parse_transfer(body: &[u8]) -> Option<RailTransfer> {
    transfer_from_value(serde_json::from_slice(body).ok()?)
}

fn transfer_from_value(value: serde_json::Value) -> Option<RailTransfer> {
    #[derive(Deserialize)]
    struct Wire {
        id: String,
        object: String,
        amount: u64,
        currency: String,
        destination: String,
        transfer_group: Option<String>,
        status: String,
        #[serde(default)]
        amount_reversed: u64,
    }
    let w: Wire = serde_json::from_value(value).ok()?;
    let status = match w.status.as_str() {
        "pending" => RailStatus::Pending,
        "paid" => RailStatus::Paid,
        "failed" => RailStatus::Failed,
        "reversed" => RailStatus::Reversed,
        _ => return None,
    };
    let currency_ok = w.currency.len() == 3 && w.currency.bytes().all(|b| b.is_ascii_alphabetic());
    if w.object != "transfer" || !id_ok(&w.id) || !currency_ok || w.amount == 0 || !text_ok(&w.destination) {
        return None;
    }
    if w.transfer_group.as_deref().is_some_and(|g| !text_ok(g)) {
        return None;
    }
    Some(RailTransfer {
        id: w.id,
        amount_minor: w.amount,
        currency: w.currency.to_ascii_uppercase(),
        destination: w.destination,
        transfer_group: w.transfer_group,
        status,
        amount_reversed: w.amount_reversed.min(w.amount),
    })
}

/// A rail object id: 1..=255 of `[A-Za-z0-9_-]`.
fn id_ok(id: &str) -> bool {
    !id.is_empty() && id.len() <= 255 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn text_ok(s: &str) -> bool {
    !s.is_empty() && s.len() <= 255 && !s.chars().any(char::is_control)
}

/// An idempotency key the header can carry: 1..=255 visible ASCII.
fn key_ok(key: &str) -> bool {
    !key.is_empty() && key.len() <= 255 && key.bytes().all(|b| b.is_ascii_graphic())
}

#[async_trait::async_trait]
impl Rail for RailClient {
    async fn create_transfer(&self, order: &TransferOrder<'_>) -> CreateOutcome {
        RailClient::create_transfer(self, order).await
    }
    async fn find_by_group(&self, key: &str) -> Result<Vec<RailTransfer>, UnknownCause> {
        RailClient::find_by_group(self, key).await
    }
    async fn get_transfer(&self, id: &str) -> Result<Option<RailTransfer>, UnknownCause> {
        RailClient::get_transfer(self, id).await
    }
    async fn reversals_of(&self, transfer_id: &str) -> Result<Vec<RailReversal>, UnknownCause> {
        RailClient::reversals_of(self, transfer_id).await
    }
    async fn reverse(&self, transfer_id: &str, idempotency_key: &str, amount_minor: Option<u64>) -> ReversalOutcome {
        RailClient::reverse(self, transfer_id, idempotency_key, amount_minor).await
    }
}

/// Whether `url` names this machine (`localhost` or a loopback address):
/// the one place a secret may travel over plain http.
pub fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str) -> Answer {
        Answer { status: StatusCode::from_u16(status).unwrap(), body: body.as_bytes().to_vec() }
    }

    fn class(status: u16, body: &str) -> Result<Decline, UnknownCause> {
        match classify_error(&answer(status, body)) {
            ErrorClass::Code(c) => Ok(decline_for(&c)),
            ErrorClass::Open(c) => Err(c),
        }
    }

    #[test]
    fn error_classification() {
        let e = |kind: &str, code: &str| format!(r#"{{"error":{{"type":"{kind}","code":"{code}","message":"m"}}}}"#);
        assert_eq!(class(402, &e("card_error", "insufficient_funds")), Ok(Decline::InsufficientFunds));
        assert_eq!(class(402, &e("card_error", "limit_exceeded")), Ok(Decline::LimitExceeded));
        assert_eq!(class(400, &e("invalid_request_error", "account_closed")), Ok(Decline::DestinationClosed));
        assert_eq!(class(400, &e("invalid_request_error", "parameter_unknown")), Ok(Decline::RailRejected));
        assert_eq!(class(400, &e("idempotency_error", "x")), Err(UnknownCause::ServerError(400)));
        assert_eq!(class(429, &e("rate_limit_error", "rate_limit")), Err(UnknownCause::ServerError(429)));
        assert_eq!(class(409, &e("invalid_request_error", "lock_timeout")), Err(UnknownCause::ServerError(409)));
        assert_eq!(class(402, "<html>nope</html>"), Err(UnknownCause::BadResponse));
        assert_eq!(class(400, ""), Err(UnknownCause::BadResponse));
        assert_eq!(class(502, &e("card_error", "insufficient_funds")), Err(UnknownCause::ServerError(502)));
        assert_eq!(class(302, ""), Err(UnknownCause::BadResponse));
    }

    #[test]
    fn transfer_parsing_is_strict() {
        let ok = r#"{"id":"tr_1","object":"transfer","amount":5,"currency":"usd","destination":"d","transfer_group":"k","status":"paid"}"#;
        let t = parse_transfer(ok.as_bytes()).unwrap();
        assert_eq!((t.currency.as_str(), t.status), ("USD", RailStatus::Paid));
        for bad in [
            r#"{"id":"tr_1","object":"transfer","amount":5,"currency":"usd","destination":"d","status":"weird"}"#,
            r#"{"id":"tr_1","object":"transfer","amount":-5,"currency":"usd","destination":"d","status":"paid"}"#,
            r#"{"id":"","object":"transfer","amount":5,"currency":"usd","destination":"d","status":"paid"}"#,
            r#"{"id":"tr_1","object":"payout","amount":5,"currency":"usd","destination":"d","status":"paid"}"#,
            r#"{"id":"tr_1","object":"transfer","amount":5,"currency":"usdx","destination":"d","status":"paid"}"#,
            "<html></html>",
        ] {
            assert!(parse_transfer(bad.as_bytes()).is_none(), "{bad}");
        }
    }

    #[test]
    fn decline_codes() {
        assert_eq!(Decline::DestinationClosed.code(), "destination_closed");
        assert_eq!(Decline::RailRejected.code(), "rail_rejected");
    }
}
