//! The rail simulator (`countersign rail-sim --listen ADDR --db PATH`): a
//! Stripe-compatible subset of the transfers API (SPEC section 12), with its
//! state in its own SQLite file so it survives a restart.
//!
//! # Stripe API subset
//!
//! - `POST /v1/transfers` (form-encoded; header `Idempotency-Key` required):
//!   `amount` (positive integer, minor units), `currency` (three letters, any
//!   case, answered lowercase), `destination`, `transfer_group` (optional; the
//!   caller's idempotency key), `metadata[KEY]=VALUE` (at most 50 keys, key
//!   ≤ 40 chars, value ≤ 500 chars), `description` and `source_transaction`
//!   (accepted, ignored). **`metadata[source_account]`** names the account the
//!   money leaves (default `"platform"`); it drives the balance check and is
//!   echoed in `metadata` like any other key. Any other parameter is
//!   `400 parameter_unknown`. Answers the transfer object:
//!   `{id: "tr_…", object: "transfer", amount, amount_reversed, currency,
//!   destination, transfer_group, status, metadata, created, reversed,
//!   livemode: false}`.
//! - `GET /v1/transfers[?transfer_group=KEY][&created[gte]=UNIX_SECS][&limit=N]` → `{"object": "list",
//!   "data": [...], "has_more": bool, "url": "/v1/transfers"}`, newest first,
//!   `limit` 1..=100 (default 100).
//! - `GET /v1/transfers/{id}` → the transfer, or 404 `resource_missing`.
//! - `POST /v1/transfers/{id}/reversals` (form: `amount` optional = the rest,
//!   `metadata[...]`, `description` ignored; header `Idempotency-Key`
//!   required) → `{id: "trr_…", object: "transfer_reversal", amount,
//!   currency, created, metadata, transfer: "tr_…"}`. A reversal credits the
//!   source account back.
//! - `GET /v1/transfers/{id}/reversals` → `{object: "list", data: [reversal,
//!   …]}`, newest first (404 `resource_missing` for an unknown transfer).
//!
//! # Status
//!
//! Computed on read from the simulator clock: `failed` (only via
//! `POST /_sim/transfers/{id}/fail`), else `reversed` when fully reversed,
//! else `paid` once `created + settle_after` has passed, else `pending`.
//!
//! # Idempotency (Stripe semantics)
//!
//! Keys are global (one account) and bind the method, path and the sorted
//! form parameters. A repeat with the same parameters replays the stored
//! status and body with `Idempotent-Replayed: true`; different parameters (or
//! another endpoint) → `400 {"error": {"type": "idempotency_error", ...}}`.
//! A key expires `key_window` after its first use (simulator clock); after
//! that it is a fresh key. As at Stripe, results are stored only once the
//! request started executing: malformed requests (400 `invalid_request_error`
//! from validation) and injected 500s are not stored and can be retried with
//! the same key; declines, reversal refusals and successes are stored.
//!
//! # Errors (status, `type`, `code`) — the connector's mapping
//!
//! | condition | HTTP | type | code | connector maps to |
//! |---|---|---|---|---|
//! | source balance < amount | 402 | `card_error` | `insufficient_funds` | `insufficient_funds` |
//! | destination closed | 400 | `invalid_request_error` | `account_closed` (`param: destination`) | `destination_closed` |
//! | amount > per-transfer limit | 402 | `card_error` | `limit_exceeded` | `limit_exceeded` |
//! | reversal past the cutoff | 400 | `invalid_request_error` | `transfer_reversal_window_closed` | `too_late` |
//! | reversal larger than what remains | 400 | `invalid_request_error` | `amount_too_large` | |
//! | transfer already fully reversed | 400 | `invalid_request_error` | `transfer_already_reversed` | |
//! | reversal of a failed transfer | 400 | `invalid_request_error` | `transfer_failed` | |
//! | anything malformed | 400 | `invalid_request_error` | `parameter_missing` / `parameter_invalid` / `parameter_unknown` / ... | `rail_rejected` |
//! | unknown transfer | 404 | `invalid_request_error` | `resource_missing` | |
//! | body over 64 KiB | 413 | `invalid_request_error` | `request_too_large` | |
//!
//! # Test controls (`/_sim/...`, JSON)
//!
//! - `GET /_sim/health` → `{"ok": true}`.
//! - `GET|POST /_sim/clock` — `POST {"advance_secs": N}` moves the simulator
//!   clock forward (negative moves it back) and persists the offset in the
//!   database; answers `{"offset_secs", "now"}` (`now` in Unix seconds). The
//!   clock is `system time + SimOptions::clock_offset + persisted offset`; it
//!   drives `created`, settlement, key expiry and the reversal cutoff.
//! - `GET|POST /_sim/balances` — `POST {"account", "currency", "amount"}` sets
//!   a balance; unset balances are `SimOptions::default_balance`.
//! - `GET|POST /_sim/destinations/closed` — `POST {"destination", "closed":
//!   true}` (`closed` defaults to true; false reopens).
//! - `GET|POST|DELETE /_sim/faults` — `POST {"mode": "drop_after_accept" |
//!   "delay" | "error_500" | "garbage", "count": N, "delay_ms": N}` replaces the pending
//!   fault; the next N fresh transfer creations (not replays; requests that
//!   pass validation) misbehave: `drop_after_accept` creates the transfer and
//!   stores the idempotent result durably, waits `delay_ms` (default 0), then
//!   closes the connection without a byte of response; `delay` answers
//!   normally after `delay_ms`; `error_500` creates nothing, stores no key and
//!   answers 500 with an HTML body; `garbage` creates the transfer and
//!   answers 200 with an HTML body. `GET` shows what remains (`count: 0` when
//!   none); faults live in memory only. With `"on": "reversals"` (default
//!   `"transfers"`) the next N fresh reversal creations answer `error_500`
//!   instead (the only mode reversals take): nothing is reversed.
//! - `GET /_sim/transfers` → every transfer, oldest first, as a list object.
//! - `GET /_sim/calls` → how many requests each `/v1` route received since
//!   start, e.g. `{"GET /v1/transfers": 2, "POST /v1/transfers": 1}` (in
//!   memory only): how tests see how often a client asked.
//! - `POST /_sim/transfers/{id}/fail` → marks a transfer `failed` (the
//!   amount not yet reversed goes back to the source account).

mod conn;
mod store;

use axum::body::Body;
use axum::extract::{ConnectInfo, Path as UrlPath, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use chrono::Utc;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;

use self::conn::{ConnInfo, SimListener};

/// A rail object id: `tr_…`, `trr_…` (time-ordered, like Countersign's own).
fn new_id(prefix: &str) -> String {
    countersign_domain::ids::time_ordered_id(prefix, Utc::now().timestamp_millis().max(0) as u64, rand::random())
}
use self::store::{SimDb, TransferRow};

/// Largest accepted request body.
pub const BODY_LIMIT: usize = 64 * 1024;
/// The source account when a transfer names none in `metadata[source_account]`.
pub const DEFAULT_SOURCE_ACCOUNT: &str = "platform";

/// How the simulator behaves. `Default` gives the documented defaults.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// How long an `Idempotency-Key` binds its request (default 24 h).
    pub key_window: Duration,
    /// How long a transfer stays `pending` before it is `paid` (default 2 s).
    pub settle_after: Duration,
    /// How long after creation a transfer can be reversed (default 7 days).
    pub reversal_cutoff: Duration,
    /// Balance of every (account, currency) never set or used (default
    /// 1,000,000,000 minor units).
    pub default_balance: i64,
    /// Largest amount of one transfer (default 100,000,000,000).
    pub per_transfer_limit: i64,
    /// Added to the system clock at start (default zero). `POST /_sim/clock`
    /// adds a persisted offset on top.
    pub clock_offset: chrono::TimeDelta,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            key_window: Duration::from_secs(24 * 3600),
            settle_after: Duration::from_secs(2),
            reversal_cutoff: Duration::from_secs(7 * 24 * 3600),
            default_balance: 1_000_000_000,
            per_transfer_limit: 100_000_000_000,
            clock_offset: chrono::TimeDelta::zero(),
        }
    }
}

/// Runs the simulator until SIGINT/SIGTERM. Prints exactly one line,
/// `rail-sim listening on http://ADDR`, once bound (scripts read it).
pub async fn run(listen: SocketAddr, db_path: &Path, options: SimOptions) -> anyhow::Result<()> {
    let (listener, addr, sim) = bind(listen, db_path, options).await?;
    println!("rail-sim listening on http://{addr}");
    std::io::stdout().flush()?;
    tracing::info!(%addr, db = %db_path.display(), "rail-sim serving");
    let app = router(sim.clone()).into_make_service_with_connect_info::<ConnInfo>();
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            wait_for_signal().await;
            tracing::info!("rail-sim shutting down");
        })
        .await?;
    sim.0.db.close().await;
    Ok(())
}

/// Starts the simulator in this process; returns the bound address and the
/// serving task (abort it to stop the simulator).
pub async fn spawn(
    listen: SocketAddr,
    db_path: &Path,
    options: SimOptions,
) -> anyhow::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let (listener, addr, sim) = bind(listen, db_path, options).await?;
    tracing::info!(%addr, db = %db_path.display(), "rail-sim serving in-process");
    let app = router(sim).into_make_service_with_connect_info::<ConnInfo>();
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "rail-sim stopped");
        }
    });
    Ok((addr, task))
}

async fn bind(
    listen: SocketAddr,
    db_path: &Path,
    options: SimOptions,
) -> anyhow::Result<(SimListener, SocketAddr, Sim)> {
    let db = SimDb::open(db_path).await?;
    let persisted = store::clock_offset(&mut *db.write.acquire().await?).await?;
    let listener =
        TcpListener::bind(listen).await.map_err(|e| anyhow::anyhow!("rail-sim cannot listen on {listen}: {e}"))?;
    let addr = listener.local_addr()?;
    let sim = Sim(Arc::new(Inner {
        db,
        options,
        offset_ms: AtomicI64::new(persisted),
        fault: Mutex::new(None),
        calls: Mutex::default(),
    }));
    Ok((SimListener(listener), addr, sim))
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[derive(Clone)]
struct Sim(Arc<Inner>);

struct Inner {
    db: SimDb,
    options: SimOptions,
    /// The persisted clock offset (milliseconds), mirrored here.
    offset_ms: AtomicI64,
    fault: Mutex<Option<Fault>>,
    /// Requests per `/v1` route ("METHOD /path/{param}").
    calls: Mutex<BTreeMap<String, u64>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
enum FaultMode {
    DropAfterAccept,
    Delay,
    #[serde(rename = "error_500")]
    Error500,
    /// Creates the transfer, then answers 200 with a body that is not JSON.
    Garbage,
}

/// Which creations a fault hits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
enum FaultTarget {
    #[default]
    Transfers,
    Reversals,
}

#[derive(Clone, Copy, Debug)]
struct Fault {
    mode: FaultMode,
    remaining: u32,
    delay_ms: u64,
    on: FaultTarget,
}

impl Sim {
    fn now_ms(&self) -> i64 {
        let base = Utc::now() + self.0.options.clock_offset;
        base.timestamp_millis().saturating_add(self.0.offset_ms.load(Ordering::SeqCst))
    }

    /// The pending fault, if it hits `target`, counted down.
    fn take_fault(&self, target: FaultTarget) -> Option<Fault> {
        let mut slot = self.0.fault.lock().unwrap_or_else(|p| p.into_inner());
        let fault = (*slot).filter(|f| f.on == target)?;
        if fault.remaining <= 1 {
            *slot = None;
        } else {
            *slot = Some(Fault { remaining: fault.remaining - 1, ..fault });
        }
        Some(fault)
    }

    fn transfer_json(&self, t: &TransferRow, now_ms: i64) -> Value {
        let settle_ms = duration_ms(self.0.options.settle_after);
        let reversed = t.amount_reversed >= t.amount;
        let status = if t.failed {
            "failed"
        } else if reversed {
            "reversed"
        } else if now_ms >= t.created_ms.saturating_add(settle_ms) {
            "paid"
        } else {
            "pending"
        };
        let metadata: Value = serde_json::from_str(&t.metadata).unwrap_or_else(|_| json!({}));
        json!({
            "id": t.id,
            "object": "transfer",
            "amount": t.amount,
            "amount_reversed": t.amount_reversed,
            "currency": t.currency,
            "destination": t.destination,
            "transfer_group": t.transfer_group,
            "status": status,
            "metadata": metadata,
            "created": t.created_ms.div_euclid(1000),
            "reversed": reversed,
            "livemode": false,
        })
    }

    fn list_json(&self, rows: &[TransferRow], has_more: bool, now_ms: i64, url: &str) -> Value {
        let data: Vec<Value> = rows.iter().map(|t| self.transfer_json(t, now_ms)).collect();
        json!({"object": "list", "data": data, "has_more": has_more, "url": url})
    }
}

fn duration_ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn router(sim: Sim) -> Router {
    Router::new()
        .route("/v1/transfers", post(create_transfer).get(list_transfers))
        .route("/v1/transfers/{id}", get(get_transfer))
        .route("/v1/transfers/{id}/reversals", post(create_reversal).get(list_reversals))
        .route_layer(axum::middleware::from_fn_with_state(sim.clone(), count_call))
        .route("/_sim/calls", get(get_calls))
        .route("/_sim/health", get(|| async { axum::Json(json!({"ok": true})) }))
        .route("/_sim/clock", get(get_clock).post(post_clock))
        .route("/_sim/balances", get(get_balances).post(post_balance))
        .route("/_sim/destinations/closed", get(get_closed).post(post_closed))
        .route("/_sim/faults", get(get_faults).post(post_faults).delete(delete_faults))
        .route("/_sim/transfers", get(all_transfers))
        .route("/_sim/transfers/{id}/fail", post(fail_transfer))
        .fallback(|| async {
            StripeError::new(
                StatusCode::NOT_FOUND,
                "invalid_request_error",
                Some("resource_missing"),
                "Unrecognized request URL.",
            )
        })
        .with_state(sim)
}

// ---------------------------------------------------------------- errors

/// A Stripe-shaped error: `{"error": {"type", "code", "message", "param"}}`.
#[derive(Debug)]
struct StripeError {
    status: StatusCode,
    kind: &'static str,
    code: Option<&'static str>,
    message: String,
    param: Option<String>,
}

impl StripeError {
    fn new(status: StatusCode, kind: &'static str, code: Option<&'static str>, message: impl Into<String>) -> Self {
        StripeError { status, kind, code, message: message.into(), param: None }
    }

    fn invalid(code: &'static str, param: &str, message: impl Into<String>) -> Self {
        StripeError {
            param: Some(param.to_string()),
            ..StripeError::new(StatusCode::BAD_REQUEST, "invalid_request_error", Some(code), message)
        }
    }

    fn bad_json(e: impl std::fmt::Display) -> Self {
        StripeError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            Some("parameter_invalid"),
            format!("Invalid JSON body: {e}"),
        )
    }

    fn missing(what: &str) -> Self {
        StripeError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            Some("resource_missing"),
            format!("No such transfer: '{what}'"),
        )
    }

    fn internal(e: impl std::fmt::Display) -> Self {
        tracing::error!(error = %e, "rail-sim internal error");
        StripeError::new(StatusCode::INTERNAL_SERVER_ERROR, "api_error", None, "An internal error occurred.")
    }

    fn body(&self) -> String {
        let mut error = Map::new();
        error.insert("type".into(), json!(self.kind));
        if let Some(code) = self.code {
            error.insert("code".into(), json!(code));
        }
        error.insert("message".into(), json!(self.message));
        if let Some(param) = &self.param {
            error.insert("param".into(), json!(param));
        }
        json!({ "error": error }).to_string()
    }
}

impl From<store::DbError> for StripeError {
    fn from(e: store::DbError) -> Self {
        StripeError::internal(e)
    }
}

impl IntoResponse for StripeError {
    fn into_response(self) -> Response {
        json_response(self.status, self.body())
    }
}

fn json_response(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn json_ok(value: Value) -> Response {
    json_response(StatusCode::OK, value.to_string())
}

// ---------------------------------------------------------------- request parsing

async fn read_body(body: Body) -> Result<axum::body::Bytes, StripeError> {
    axum::body::to_bytes(body, BODY_LIMIT).await.map_err(|_| {
        StripeError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            Some("request_too_large"),
            "The request body is larger than 64 KiB (or could not be read).",
        )
    })
}

fn parse_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, StripeError> {
    serde_json::from_slice(bytes).map_err(StripeError::bad_json)
}

fn idempotency_key(headers: &HeaderMap) -> Result<String, StripeError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Err(StripeError::invalid(
            "parameter_missing",
            "Idempotency-Key",
            "This endpoint requires an Idempotency-Key header.",
        ));
    };
    match value.to_str() {
        Ok(key) if !key.trim().is_empty() && key.len() <= 255 => Ok(key.to_string()),
        _ => Err(StripeError::invalid(
            "parameter_invalid",
            "Idempotency-Key",
            "The Idempotency-Key header must be 1 to 255 visible ASCII characters.",
        )),
    }
}

fn parse_form(bytes: &[u8]) -> Result<Vec<(String, String)>, StripeError> {
    serde_urlencoded::from_bytes::<Vec<(String, String)>>(bytes).map_err(|_| {
        StripeError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            Some("parameter_invalid"),
            "The body must be application/x-www-form-urlencoded.",
        )
    })
}

/// Binds a key to the method, path and (sorted) parameters.
fn fingerprint(endpoint: &str, params: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    sorted.sort();
    let canonical = json!([endpoint, sorted]).to_string();
    hex::encode(Sha256::digest(canonical.as_bytes()))
}

fn text_ok(s: &str, max: usize) -> bool {
    !s.is_empty() && s.chars().count() <= max && !s.chars().any(char::is_control)
}

fn parse_amount(value: &str) -> Result<i64, StripeError> {
    let ok = !value.is_empty() && value.len() <= 18 && value.bytes().all(|b| b.is_ascii_digit());
    match value.parse::<i64>() {
        Ok(n) if ok && n > 0 => Ok(n),
        _ => Err(StripeError::invalid("parameter_invalid_integer", "amount", "Invalid positive integer: amount.")),
    }
}

/// `metadata[KEY]` parameters, and the other ones in order.
type Split<'a> = (BTreeMap<String, String>, Vec<(&'a str, &'a str)>);

/// Splits `metadata[KEY]` parameters off; returns the other ones.
fn split_metadata(params: &[(String, String)]) -> Result<Split<'_>, StripeError> {
    let mut metadata = BTreeMap::new();
    let mut rest = Vec::new();
    for (k, v) in params {
        if let Some(inner) = k.strip_prefix("metadata[").and_then(|s| s.strip_suffix(']')) {
            if !text_ok(inner, 40) || inner.contains(['[', ']']) {
                return Err(StripeError::invalid("parameter_invalid", k, "Metadata keys are 1 to 40 characters."));
            }
            if v.chars().count() > 500 || v.chars().any(char::is_control) {
                return Err(StripeError::invalid(
                    "parameter_invalid",
                    k,
                    "Metadata values are at most 500 characters.",
                ));
            }
            if metadata.insert(inner.to_string(), v.clone()).is_some() {
                return Err(StripeError::invalid("parameter_duplicate", k, format!("Duplicate parameter: {k}.")));
            }
        } else {
            if rest.iter().any(|(seen, _)| *seen == k.as_str()) {
                return Err(StripeError::invalid("parameter_duplicate", k, format!("Duplicate parameter: {k}.")));
            }
            rest.push((k.as_str(), v.as_str()));
        }
    }
    if metadata.len() > 50 {
        return Err(StripeError::invalid("parameter_invalid", "metadata", "At most 50 metadata keys."));
    }
    Ok((metadata, rest))
}

fn unknown(k: &str) -> StripeError {
    StripeError::invalid("parameter_unknown", k, format!("Received unknown parameter: {k}"))
}

struct TransferRequest {
    amount: i64,
    currency: String,
    destination: String,
    transfer_group: Option<String>,
    metadata: BTreeMap<String, String>,
    source_account: String,
}

impl TransferRequest {
    fn parse(params: &[(String, String)]) -> Result<TransferRequest, StripeError> {
        let (metadata, rest) = split_metadata(params)?;
        let (mut amount, mut currency, mut destination, mut transfer_group) = (None, None, None, None);
        for (k, v) in rest {
            match k {
                "amount" => amount = Some(parse_amount(v)?),
                "currency" => {
                    if v.len() != 3 || !v.bytes().all(|b| b.is_ascii_alphabetic()) {
                        return Err(StripeError::invalid(
                            "parameter_invalid",
                            k,
                            "Invalid currency: must be a three-letter ISO code.",
                        ));
                    }
                    currency = Some(v.to_ascii_lowercase());
                }
                "destination" => {
                    if !text_ok(v, 255) {
                        return Err(StripeError::invalid("parameter_invalid", k, "Invalid destination."));
                    }
                    destination = Some(v.to_string());
                }
                "transfer_group" => {
                    if !text_ok(v, 255) {
                        return Err(StripeError::invalid("parameter_invalid", k, "Invalid transfer_group."));
                    }
                    transfer_group = Some(v.to_string());
                }
                "source_transaction" | "description" => {}
                other => return Err(unknown(other)),
            }
        }
        let missing = |p: &str| StripeError::invalid("parameter_missing", p, format!("Missing required param: {p}."));
        let source_account = match metadata.get("source_account") {
            Some(a) if text_ok(a, 255) => a.clone(),
            Some(_) => {
                return Err(StripeError::invalid(
                    "parameter_invalid",
                    "metadata[source_account]",
                    "Invalid source account.",
                ))
            }
            None => DEFAULT_SOURCE_ACCOUNT.to_string(),
        };
        Ok(TransferRequest {
            amount: amount.ok_or_else(|| missing("amount"))?,
            currency: currency.ok_or_else(|| missing("currency"))?,
            destination: destination.ok_or_else(|| missing("destination"))?,
            transfer_group,
            metadata,
            source_account,
        })
    }
}

struct ReversalRequest {
    amount: Option<i64>,
    metadata: BTreeMap<String, String>,
}

impl ReversalRequest {
    fn parse(params: &[(String, String)]) -> Result<ReversalRequest, StripeError> {
        let (metadata, rest) = split_metadata(params)?;
        let mut amount = None;
        for (k, v) in rest {
            match k {
                "amount" => amount = Some(parse_amount(v)?),
                "description" => {}
                other => return Err(unknown(other)),
            }
        }
        Ok(ReversalRequest { amount, metadata })
    }
}

// ---------------------------------------------------------------- idempotent execution

enum KeyState {
    Fresh,
    Replay(StatusCode, String),
}

async fn check_key(
    sim: &Sim,
    conn: &mut store::Conn,
    key: &str,
    fp: &str,
    now_ms: i64,
) -> Result<KeyState, StripeError> {
    let Some(row) = store::idempotency_get(conn, key).await? else {
        return Ok(KeyState::Fresh);
    };
    if now_ms.saturating_sub(row.created_ms) >= duration_ms(sim.0.options.key_window) {
        return Ok(KeyState::Fresh); // expired: the key is new again (the row is replaced)
    }
    if row.fingerprint != fp {
        return Err(StripeError::new(
            StatusCode::BAD_REQUEST,
            "idempotency_error",
            None,
            format!(
                "Keys for idempotent requests can only be used with the same parameters they were first used with. \
                 Try using a key other than '{key}' if you meant to execute a different request."
            ),
        ));
    }
    let status = u16::try_from(row.status).ok().and_then(|s| StatusCode::from_u16(s).ok());
    Ok(KeyState::Replay(status.unwrap_or(StatusCode::OK), row.body))
}

fn keyed(mut response: Response, key: &str, replayed: bool) -> Response {
    if let Ok(v) = HeaderValue::from_str(key) {
        response.headers_mut().insert("idempotency-key", v);
    }
    if replayed {
        response.headers_mut().insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    response
}

fn decline(
    status: StatusCode,
    kind: &'static str,
    code: &'static str,
    param: Option<&str>,
    message: String,
) -> (StatusCode, String) {
    let e = StripeError { status, kind, code: Some(code), message, param: param.map(str::to_string) };
    (status, e.body())
}

async fn create_transfer(
    State(sim): State<Sim>,
    ConnectInfo(conn): ConnectInfo<ConnInfo>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match create_transfer_inner(&sim, &conn, &headers, body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn create_transfer_inner(
    sim: &Sim,
    conn: &ConnInfo,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, StripeError> {
    let bytes = read_body(body).await?;
    let key = idempotency_key(headers)?;
    let params = parse_form(&bytes)?;
    let fp = fingerprint("POST /v1/transfers", &params);
    let now = sim.now_ms();
    let mut tx = sim.0.db.write.begin().await?;
    if let KeyState::Replay(status, body) = check_key(sim, &mut tx, &key, &fp, now).await? {
        tx.commit().await?;
        return Ok(keyed(json_response(status, body), &key, true));
    }
    let req = TransferRequest::parse(&params)?;
    let fault = sim.take_fault(FaultTarget::Transfers);
    if let Some(Fault { mode: FaultMode::Error500, .. }) = fault {
        drop(tx);
        return Ok(injected_500());
    }

    let opts = &sim.0.options;
    let (status, body) = if req.amount > opts.per_transfer_limit {
        decline(
            StatusCode::PAYMENT_REQUIRED,
            "card_error",
            "limit_exceeded",
            Some("amount"),
            format!("The amount exceeds the per-transfer limit of {}.", opts.per_transfer_limit),
        )
    } else if store::is_closed(&mut tx, &req.destination).await? {
        decline(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "account_closed",
            Some("destination"),
            format!("The destination account {} is closed.", req.destination),
        )
    } else {
        let balance =
            store::balance(&mut tx, &req.source_account, &req.currency).await?.unwrap_or(opts.default_balance);
        if balance < req.amount {
            decline(
                StatusCode::PAYMENT_REQUIRED,
                "card_error",
                "insufficient_funds",
                None,
                format!("The source account {} has insufficient funds in {}.", req.source_account, req.currency),
            )
        } else {
            let row = TransferRow {
                id: new_id("tr"),
                amount: req.amount,
                currency: req.currency.clone(),
                destination: req.destination.clone(),
                transfer_group: req.transfer_group.clone(),
                source_account: req.source_account.clone(),
                metadata: json!(req.metadata).to_string(),
                created_ms: now,
                amount_reversed: 0,
                failed: false,
            };
            store::insert_transfer(&mut tx, &row).await?;
            store::set_balance(&mut tx, &req.source_account, &req.currency, balance - req.amount).await?;
            (StatusCode::OK, sim.transfer_json(&row, now).to_string())
        }
    };
    store::idempotency_put(&mut tx, &key, &fp, status.as_u16(), &body, now).await?;
    tx.commit().await?;

    match fault {
        Some(Fault { mode: FaultMode::Delay, delay_ms, .. }) => {
            tracing::info!(delay_ms, "rail-sim fault: delay");
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        }
        Some(Fault { mode: FaultMode::DropAfterAccept, delay_ms, .. }) => {
            tracing::info!(delay_ms, "rail-sim fault: drop_after_accept");
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            conn.kill();
        }
        Some(Fault { mode: FaultMode::Garbage, .. }) => {
            tracing::info!("rail-sim fault: garbage");
            let mut r = (StatusCode::OK, "<html><body>Service temporarily sideways</body></html>").into_response();
            r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html"));
            return Ok(r);
        }
        _ => {}
    }
    Ok(keyed(json_response(status, body), &key, false))
}

/// The answer of an injected `error_500`: an HTML page, as a failing proxy
/// or application server would give.
fn injected_500() -> Response {
    tracing::info!("rail-sim fault: error_500");
    let html = "<html><head><title>500 Internal Server Error</title></head><body><h1>Internal Server Error</h1>\
                <pre>rail-sim: injected fault (upstream stack trace would be here)</pre></body></html>";
    let mut r = (StatusCode::INTERNAL_SERVER_ERROR, html).into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    r
}

async fn create_reversal(
    State(sim): State<Sim>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match create_reversal_inner(&sim, &id, &headers, body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn create_reversal_inner(sim: &Sim, id: &str, headers: &HeaderMap, body: Body) -> Result<Response, StripeError> {
    let bytes = read_body(body).await?;
    let key = idempotency_key(headers)?;
    let params = parse_form(&bytes)?;
    let fp = fingerprint(&format!("POST /v1/transfers/{id}/reversals"), &params);
    let now = sim.now_ms();
    let mut tx = sim.0.db.write.begin().await?;
    if let KeyState::Replay(status, body) = check_key(sim, &mut tx, &key, &fp, now).await? {
        tx.commit().await?;
        return Ok(keyed(json_response(status, body), &key, true));
    }
    let req = ReversalRequest::parse(&params)?;
    if sim.take_fault(FaultTarget::Reversals).is_some() {
        drop(tx);
        return Ok(injected_500());
    }
    let bad = |code, param, message: &str| {
        decline(StatusCode::BAD_REQUEST, "invalid_request_error", code, param, message.to_string())
    };
    let (status, body) = match store::transfer(&mut tx, id).await? {
        None => {
            let e = StripeError::missing(id);
            (e.status, e.body())
        }
        Some(t) => {
            let remaining = t.amount - t.amount_reversed;
            let amount = req.amount.unwrap_or(remaining);
            if t.failed {
                bad("transfer_failed", None, "This transfer failed and cannot be reversed.")
            } else if now > t.created_ms.saturating_add(duration_ms(sim.0.options.reversal_cutoff)) {
                bad(
                    "transfer_reversal_window_closed",
                    None,
                    "This transfer is past its reversal cutoff and can no longer be reversed.",
                )
            } else if remaining <= 0 {
                bad("transfer_already_reversed", None, "This transfer has already been fully reversed.")
            } else if amount > remaining {
                bad(
                    "amount_too_large",
                    Some("amount"),
                    &format!("The reversal amount {amount} exceeds the {remaining} that remains on the transfer."),
                )
            } else {
                let reversal_id = new_id("trr");
                let metadata = json!(req.metadata);
                store::insert_reversal(&mut tx, &reversal_id, &t.id, amount, &metadata.to_string(), now).await?;
                let balance = store::balance(&mut tx, &t.source_account, &t.currency)
                    .await?
                    .unwrap_or(sim.0.options.default_balance);
                store::set_balance(&mut tx, &t.source_account, &t.currency, balance.saturating_add(amount)).await?;
                let value = json!({
                    "id": reversal_id,
                    "object": "transfer_reversal",
                    "amount": amount,
                    "currency": t.currency,
                    "created": now.div_euclid(1000),
                    "metadata": metadata,
                    "transfer": t.id,
                });
                (StatusCode::OK, value.to_string())
            }
        }
    };
    store::idempotency_put(&mut tx, &key, &fp, status.as_u16(), &body, now).await?;
    tx.commit().await?;
    Ok(keyed(json_response(status, body), &key, false))
}

// ---------------------------------------------------------------- reads

async fn get_transfer(State(sim): State<Sim>, UrlPath(id): UrlPath<String>) -> Result<Response, StripeError> {
    let row = store::transfer(&mut *sim.0.db.read.acquire().await?, &id).await?;
    let row = row.ok_or_else(|| StripeError::missing(&id))?;
    Ok(json_ok(sim.transfer_json(&row, sim.now_ms())))
}

/// `GET /v1/transfers/{id}/reversals`: the transfer's reversals, newest
/// first, as Stripe lists them (`{"object": "list", "data": [...]}`).
async fn list_reversals(State(sim): State<Sim>, UrlPath(id): UrlPath<String>) -> Result<Response, StripeError> {
    let mut conn = sim.0.db.read.acquire().await?;
    let transfer = store::transfer(&mut conn, &id).await?.ok_or_else(|| StripeError::missing(&id))?;
    let reversals = store::reversals_of(&mut conn, &id).await?;
    let data: Vec<Value> = reversals
        .iter()
        .map(|r| {
            json!({
                "id": r.id,
                "object": "transfer_reversal",
                "amount": r.amount,
                "currency": transfer.currency,
                "created": r.created_ms.div_euclid(1000),
                "metadata": serde_json::from_str::<Value>(&r.metadata).unwrap_or_else(|_| json!({})),
                "transfer": r.transfer_id,
            })
        })
        .collect();
    Ok(json_ok(
        json!({"object": "list", "data": data, "has_more": false, "url": format!("/v1/transfers/{id}/reversals")}),
    ))
}

async fn list_transfers(State(sim): State<Sim>, RawQuery(query): RawQuery) -> Result<Response, StripeError> {
    let params = serde_urlencoded::from_str::<Vec<(String, String)>>(query.as_deref().unwrap_or(""))
        .map_err(|_| StripeError::invalid("parameter_invalid", "query", "Malformed query string."))?;
    let (mut group, mut limit, mut since) = (None, 100_i64, None);
    for (k, v) in &params {
        match k.as_str() {
            "transfer_group" => group = Some(v.as_str()),
            "created[gte]" => match v.parse::<i64>() {
                Ok(secs) if secs >= 0 => since = Some(secs.saturating_mul(1000)),
                _ => {
                    return Err(StripeError::invalid(
                        "parameter_invalid_integer",
                        "created[gte]",
                        "created[gte] must be a Unix time in seconds.",
                    ))
                }
            },
            "limit" => match v.parse::<i64>() {
                Ok(n) if (1..=100).contains(&n) => limit = n,
                _ => return Err(StripeError::invalid("parameter_invalid_integer", "limit", "limit must be 1 to 100.")),
            },
            other => return Err(unknown(other)),
        }
    }
    let mut rows = store::list_transfers(&mut *sim.0.db.read.acquire().await?, group, since, limit + 1).await?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    Ok(json_ok(sim.list_json(&rows, has_more, sim.now_ms(), "/v1/transfers")))
}

// ---------------------------------------------------------------- /_sim controls

async fn all_transfers(State(sim): State<Sim>) -> Result<Response, StripeError> {
    let rows = store::all_transfers(&mut *sim.0.db.read.acquire().await?).await?;
    Ok(json_ok(sim.list_json(&rows, false, sim.now_ms(), "/_sim/transfers")))
}

async fn fail_transfer(State(sim): State<Sim>, UrlPath(id): UrlPath<String>) -> Result<Response, StripeError> {
    let mut tx = sim.0.db.write.begin().await?;
    let t = store::transfer(&mut tx, &id).await?.ok_or_else(|| StripeError::missing(&id))?;
    if !t.failed {
        store::set_failed(&mut tx, &id).await?;
        let balance =
            store::balance(&mut tx, &t.source_account, &t.currency).await?.unwrap_or(sim.0.options.default_balance);
        let back = t.amount - t.amount_reversed;
        store::set_balance(&mut tx, &t.source_account, &t.currency, balance.saturating_add(back)).await?;
    }
    let t = store::transfer(&mut tx, &id).await?.ok_or_else(|| StripeError::missing(&id))?;
    tx.commit().await?;
    Ok(json_ok(sim.transfer_json(&t, sim.now_ms())))
}

fn clock_json(sim: &Sim) -> Value {
    let offset_ms = sim.0.offset_ms.load(Ordering::SeqCst);
    json!({"offset_secs": offset_ms.div_euclid(1000), "now": sim.now_ms().div_euclid(1000)})
}

async fn get_clock(State(sim): State<Sim>) -> Response {
    json_ok(clock_json(&sim))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClockBody {
    advance_secs: i64,
}

async fn post_clock(State(sim): State<Sim>, body: Body) -> Result<Response, StripeError> {
    let req: ClockBody = parse_json(&read_body(body).await?)?;
    let delta =
        req.advance_secs.checked_mul(1000).filter(|d| d.abs() <= 100 * 365 * 24 * 3600 * 1000).ok_or_else(|| {
            StripeError::invalid("parameter_invalid", "advance_secs", "advance_secs is out of range.")
        })?;
    let mut tx = sim.0.db.write.begin().await?;
    let offset = store::clock_offset(&mut tx).await?.saturating_add(delta);
    store::set_clock_offset(&mut tx, offset).await?;
    tx.commit().await?;
    sim.0.offset_ms.store(offset, Ordering::SeqCst);
    Ok(json_ok(clock_json(&sim)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BalanceBody {
    account: String,
    currency: String,
    amount: i64,
}

async fn post_balance(State(sim): State<Sim>, body: Body) -> Result<Response, StripeError> {
    let req: BalanceBody = parse_json(&read_body(body).await?)?;
    if !text_ok(&req.account, 255) {
        return Err(StripeError::invalid("parameter_invalid", "account", "Invalid account."));
    }
    if req.currency.len() != 3 || !req.currency.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(StripeError::invalid("parameter_invalid", "currency", "Invalid currency."));
    }
    if req.amount < 0 {
        return Err(StripeError::invalid("parameter_invalid", "amount", "amount must not be negative."));
    }
    let currency = req.currency.to_ascii_lowercase();
    store::set_balance(&mut *sim.0.db.write.acquire().await?, &req.account, &currency, req.amount).await?;
    Ok(json_ok(json!({"account": req.account, "currency": currency, "amount": req.amount})))
}

async fn get_balances(State(sim): State<Sim>) -> Result<Response, StripeError> {
    let rows = store::balances(&mut *sim.0.db.read.acquire().await?).await?;
    let data: Vec<Value> = rows
        .into_iter()
        .map(|(account, currency, amount)| json!({"account": account, "currency": currency, "amount": amount}))
        .collect();
    Ok(json_ok(json!({"default_balance": sim.0.options.default_balance, "data": data})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClosedBody {
    destination: String,
    #[serde(default = "yes")]
    closed: bool,
}

fn yes() -> bool {
    true
}

async fn post_closed(State(sim): State<Sim>, body: Body) -> Result<Response, StripeError> {
    let req: ClosedBody = parse_json(&read_body(body).await?)?;
    if !text_ok(&req.destination, 255) {
        return Err(StripeError::invalid("parameter_invalid", "destination", "Invalid destination."));
    }
    store::set_closed(&mut *sim.0.db.write.acquire().await?, &req.destination, req.closed).await?;
    Ok(json_ok(json!({"destination": req.destination, "closed": req.closed})))
}

async fn get_closed(State(sim): State<Sim>) -> Result<Response, StripeError> {
    let data = store::closed_destinations(&mut *sim.0.db.read.acquire().await?).await?;
    Ok(json_ok(json!({"data": data})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultBody {
    mode: FaultMode,
    #[serde(default = "one")]
    count: u32,
    #[serde(default)]
    delay_ms: u64,
    #[serde(default)]
    on: FaultTarget,
}

fn one() -> u32 {
    1
}

fn faults_json(sim: &Sim) -> Value {
    let slot = *sim.0.fault.lock().unwrap_or_else(|p| p.into_inner());
    match slot {
        Some(f) => json!({"mode": f.mode, "count": f.remaining, "delay_ms": f.delay_ms, "on": f.on}),
        None => json!({"mode": null, "count": 0, "delay_ms": 0, "on": null}),
    }
}

async fn post_faults(State(sim): State<Sim>, body: Body) -> Result<Response, StripeError> {
    let req: FaultBody = parse_json(&read_body(body).await?)?;
    if req.delay_ms > 600_000 {
        return Err(StripeError::invalid("parameter_invalid", "delay_ms", "delay_ms is at most 600000."));
    }
    if req.on == FaultTarget::Reversals && req.mode != FaultMode::Error500 {
        return Err(StripeError::invalid("parameter_invalid", "mode", "Reversals take only the error_500 fault."));
    }
    {
        let mut slot = sim.0.fault.lock().unwrap_or_else(|p| p.into_inner());
        *slot = (req.count > 0).then_some(Fault {
            mode: req.mode,
            remaining: req.count,
            delay_ms: req.delay_ms,
            on: req.on,
        });
    }
    Ok(json_ok(faults_json(&sim)))
}

/// Counts a request to a `/v1` route (see `GET /_sim/calls`).
async fn count_call(
    State(sim): State<Sim>,
    route: axum::extract::MatchedPath,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let name = format!("{} {}", request.method(), route.as_str());
    *sim.0.calls.lock().unwrap_or_else(|p| p.into_inner()).entry(name).or_default() += 1;
    next.run(request).await
}

async fn get_calls(State(sim): State<Sim>) -> Response {
    json_ok(json!(*sim.0.calls.lock().unwrap_or_else(|p| p.into_inner())))
}

async fn get_faults(State(sim): State<Sim>) -> Response {
    json_ok(faults_json(&sim))
}

async fn delete_faults(State(sim): State<Sim>) -> Response {
    *sim.0.fault.lock().unwrap_or_else(|p| p.into_inner()) = None;
    json_ok(faults_json(&sim))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn fingerprint_ignores_parameter_order_but_not_values_or_endpoint() {
        let a = p(&[("amount", "10"), ("currency", "usd")]);
        let b = p(&[("currency", "usd"), ("amount", "10")]);
        let c = p(&[("currency", "usd"), ("amount", "11")]);
        assert_eq!(fingerprint("POST /v1/transfers", &a), fingerprint("POST /v1/transfers", &b));
        assert_ne!(fingerprint("POST /v1/transfers", &a), fingerprint("POST /v1/transfers", &c));
        assert_ne!(fingerprint("POST /v1/transfers", &a), fingerprint("POST /v1/x", &a));
    }

    #[test]
    fn transfer_request_validation() {
        let ok = TransferRequest::parse(&p(&[
            ("amount", "100"),
            ("currency", "EUR"),
            ("destination", "acct_1"),
            ("metadata[source_account]", "treasury"),
        ]))
        .unwrap();
        assert_eq!((ok.amount, ok.currency.as_str(), ok.source_account.as_str()), (100, "eur", "treasury"));
        for bad in [
            p(&[("amount", "0"), ("currency", "usd"), ("destination", "d")]),
            p(&[("amount", "-1"), ("currency", "usd"), ("destination", "d")]),
            p(&[("amount", "1.5"), ("currency", "usd"), ("destination", "d")]),
            p(&[("amount", "99999999999999999999"), ("currency", "usd"), ("destination", "d")]),
            p(&[("amount", "1"), ("currency", "usdx"), ("destination", "d")]),
            p(&[("amount", "1"), ("currency", "usd")]),
            p(&[("amount", "1"), ("currency", "usd"), ("destination", "d"), ("bogus", "x")]),
            p(&[("amount", "1"), ("amount", "2"), ("currency", "usd"), ("destination", "d")]),
            p(&[("amount", "1"), ("currency", "usd"), ("destination", "d"), ("metadata[]", "x")]),
        ] {
            assert!(TransferRequest::parse(&bad).is_err(), "{bad:?}");
        }
    }
}
