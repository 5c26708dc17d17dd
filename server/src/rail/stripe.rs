//! Stripe, exactly as its API takes it (docs/DEPLOY.md, "Paying through
//! Stripe"): form-encoded bodies, `Idempotency-Key` on every creation,
//! `Stripe-Version` pinned on every request, `Stripe-Account` where a
//! connected account's own balance pays, Stripe's error envelope.
//!
//! Which Stripe objects, and why:
//! - **Transfers** (`POST /v1/transfers`) pay a payee that is a connected
//!   account (`acct_…`): money moves from the platform's balance to the
//!   payee's Stripe account at once, and the payee's own payout schedule
//!   takes it to their bank. A transfer carries `transfer_group` = the
//!   idempotency key, so its record is found by listing
//!   `GET /v1/transfers?transfer_group=KEY`; it is settled when created
//!   (Stripe's transfer has no pending state), reversible through
//!   `POST /v1/transfers/{id}/reversals` while the connected account's
//!   balance covers it.
//! - **Payouts** (`POST /v1/payouts`) pay a bank account or debit card
//!   (`ba_…`, `card_…`) attached to the Stripe account whose balance pays
//!   (the platform's, or with `account` set the tenant's connected account,
//!   sent as `Stripe-Account`). A payout is `pending`/`in_transit` until the
//!   bank has it (`paid`), and may fail later (`failed`, with a
//!   `failure_code`). Payouts cannot be filtered by a key, so the key and
//!   the operation ride in `metadata[countersign_key]` and
//!   `metadata[countersign_operation]`, and the record is found by listing
//!   the payouts created since the operation (`created[gte]`) and matching
//!   the key. A paid payout is not pulled back by the API: a reversal is
//!   `too_late`, and operations act with the bank.
//! - **PaymentIntents** are not used: they collect money from a customer,
//!   and Countersign pays out.
//!
//! Within Stripe's 24 h key window a resubmission under the same
//! `Idempotency-Key` replays Stripe's first answer; reconciliation always
//! reads first and resubmits only an order Stripe has no record of.

use chrono::{DateTime, Utc};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use std::collections::BTreeMap;

use super::http::{
    classify_error, currency_of, id_ok, key_ok, reversals_from_value, text_ok, unix_time, ErrorClass, Http,
    RailConfigError,
};
use countersign_core::rail::*;

/// Stripe's settings for one rail.
#[derive(Clone, Debug)]
pub struct StripeConfig {
    pub http: RailConfig,
    /// `Stripe-Version`.
    pub api_version: String,
    /// `Stripe-Account` for payouts (a connected account's own balance).
    pub account: Option<String>,
    pub resubmit_window: chrono::Duration,
}

/// The Stripe connector. Cheap to clone.
#[derive(Clone, Debug)]
pub struct StripeRail {
    http: Http,
    /// Sent with payout requests (`Stripe-Account`), when set.
    payout_headers: HeaderMap,
    resubmit_window: chrono::Duration,
}

/// What a destination id is paid with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Object {
    Transfer,
    Payout,
}

fn object_for(destination: &str) -> Option<Object> {
    if destination.starts_with("acct_") {
        Some(Object::Transfer)
    } else if destination.starts_with("ba_") || destination.starts_with("card_") {
        Some(Object::Payout)
    } else {
        None
    }
}

/// The metadata key a payout's idempotency key rides in.
const KEY_METADATA: &str = REVERSAL_KEY_METADATA;

impl StripeRail {
    pub fn new(cfg: StripeConfig) -> Result<Self, RailConfigError> {
        let mut headers = HeaderMap::new();
        let version = HeaderValue::from_str(&cfg.api_version).map_err(|_| RailConfigError::BadKey)?;
        headers.insert(HeaderName::from_static("stripe-version"), version);
        let mut payout_headers = HeaderMap::new();
        if let Some(account) = &cfg.account {
            let value = HeaderValue::from_str(account).map_err(|_| RailConfigError::BadKey)?;
            payout_headers.insert(HeaderName::from_static("stripe-account"), value);
        }
        Ok(StripeRail { http: Http::new(&cfg.http, headers)?, payout_headers, resubmit_window: cfg.resubmit_window })
    }

    fn headers(&self, object: Object) -> HeaderMap {
        match object {
            Object::Transfer => HeaderMap::new(),
            Object::Payout => self.payout_headers.clone(),
        }
    }

    async fn create(&self, order: &TransferOrder<'_>) -> CreateOutcome {
        let Some(object) = object_for(order.destination) else {
            return CreateOutcome::Declined(Refusal::new(
                Decline::RailRejected,
                "Stripe pays connected accounts (acct_…), bank accounts (ba_…) and cards (card_…) only.",
            ));
        };
        if !key_ok(order.idempotency_key)
            || order.metadata.iter().any(|(k, _)| *k == "source_account" || k.starts_with("countersign_"))
        {
            tracing::warn!("stripe request refused before sending: invalid key or metadata");
            return CreateOutcome::Declined(Decline::RailRejected.into());
        }
        let mut form: Vec<(String, String)> = vec![
            ("amount".into(), order.amount_minor.to_string()),
            ("currency".into(), order.currency.to_ascii_lowercase()),
            ("destination".into(), order.destination.into()),
            (format!("metadata[{OPERATION_METADATA}]"), order.operation_id.into()),
            ("metadata[source_account]".into(), order.source_account.into()),
        ];
        let description = order.reference.trim();
        if !description.is_empty() {
            form.push(("description".into(), description.chars().take(500).collect()));
        }
        form.extend(order.metadata.iter().map(|(k, v)| (format!("metadata[{k}]"), (*v).to_string())));
        let path = match object {
            Object::Transfer => {
                form.push(("transfer_group".into(), order.idempotency_key.into()));
                "transfers"
            }
            Object::Payout => {
                form.push((format!("metadata[{KEY_METADATA}]"), order.idempotency_key.into()));
                "payouts"
            }
        };
        let req = self
            .http
            .client()
            .post(self.http.url(&["v1", path]))
            .headers(self.headers(object))
            .header("Idempotency-Key", order.idempotency_key)
            .form(&form);
        let answer = match self.http.exchange(req, "stripe_create").await {
            Ok(a) => a,
            Err(cause) => return CreateOutcome::Unknown(cause),
        };
        if answer.status.is_success() {
            let parsed = serde_json::from_slice(&answer.body).ok().and_then(|v| match object {
                Object::Transfer => transfer_from_value(v),
                Object::Payout => payout_from_value(v),
            });
            let Some(t) = parsed else {
                tracing::warn!(status = answer.status.as_u16(), "stripe answer unparseable");
                return CreateOutcome::Unknown(UnknownCause::BadResponse);
            };
            let matches = t.amount_minor == order.amount_minor
                && t.currency.eq_ignore_ascii_case(order.currency)
                && t.destination == order.destination
                && t.transfer_group.as_deref() == Some(order.idempotency_key);
            if !matches {
                tracing::warn!(status = answer.status.as_u16(), "stripe object does not match the order");
                return CreateOutcome::Unknown(UnknownCause::BadResponse);
            }
            return CreateOutcome::Accepted(t);
        }
        if matches!(answer.status.as_u16(), 401 | 403) {
            // A key Stripe refuses: nothing was created, and nothing will be
            // until an operator fixes the key; reconciliation reads and
            // resubmits then.
            tracing::error!(status = answer.status.as_u16(), "stripe refused the API key");
            return CreateOutcome::Unknown(UnknownCause::ServerError(answer.status.as_u16()));
        }
        match classify_error(&answer) {
            ErrorClass::Code(code) => CreateOutcome::Declined(refusal_for(&code)),
            ErrorClass::Open(cause) => CreateOutcome::Unknown(cause),
        }
    }

    /// One page of a listing, with whether there is more.
    async fn page(&self, object: Object, query: &[(&str, String)]) -> Result<(Vec<RailTransfer>, bool), UnknownCause> {
        let path = if object == Object::Transfer { "transfers" } else { "payouts" };
        let mut url = self.http.url(&["v1", path]);
        url.query_pairs_mut().extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        let value =
            self.http.get_json(url, "stripe_list", &self.headers(object)).await?.ok_or(UnknownCause::BadResponse)?;
        #[derive(Deserialize)]
        struct List {
            object: String,
            data: Vec<serde_json::Value>,
            has_more: bool,
        }
        let list: List = serde_json::from_value(value).map_err(|_| UnknownCause::BadResponse)?;
        if list.object != "list" {
            return Err(UnknownCause::BadResponse);
        }
        let items = list
            .data
            .into_iter()
            .map(|v| match object {
                Object::Transfer => transfer_from_value(v),
                Object::Payout => payout_from_value(v),
            })
            .collect::<Option<Vec<_>>>()
            .ok_or(UnknownCause::BadResponse)?;
        Ok((items, list.has_more))
    }

    /// Every object created since `since` (newest first), following pages
    /// up to `max` objects.
    async fn since(&self, object: Object, since: DateTime<Utc>, max: usize) -> Result<Vec<RailTransfer>, UnknownCause> {
        let mut out: Vec<RailTransfer> = Vec::new();
        loop {
            let mut query = vec![("created[gte]", since.timestamp().max(0).to_string()), ("limit", "100".to_owned())];
            if let Some(last) = out.last() {
                query.push(("starting_after", last.id.clone()));
            }
            let (items, more) = self.page(object, &query).await?;
            if items.iter().any(|t| t.created.is_some_and(|c| c.timestamp() < since.timestamp())) {
                tracing::warn!("stripe listing returned an object older than asked");
                return Err(UnknownCause::BadResponse);
            }
            let empty = items.is_empty();
            out.extend(items);
            if !more || empty || out.len() >= max {
                out.truncate(max);
                return Ok(out);
            }
        }
    }
}

/// Stripe's error code, as the refusal the commit path records.
fn refusal_for(code: &str) -> Refusal {
    let (decline, reason) = match code {
        "balance_insufficient" | "insufficient_funds" => {
            (Decline::InsufficientFunds, "The Stripe balance cannot cover this payment (balance_insufficient).")
        }
        "insufficient_capabilities_for_transfer" => (
            Decline::DestinationClosed,
            "Stripe cannot pay this destination: the connected account cannot receive transfers.",
        ),
        "account_closed" | "no_account" | "account_frozen" => {
            (Decline::DestinationClosed, "Stripe cannot pay this destination: the account is closed or disabled.")
        }
        "account_invalid" => {
            (Decline::RailRejected, "Stripe refused the connected account this rail acts for (account_invalid).")
        }
        "resource_missing" => {
            (Decline::RailRejected, "Stripe has no such destination for this account (resource_missing).")
        }
        "amount_too_large" | "payouts_limit_exceeded" => {
            (Decline::LimitExceeded, "The amount is above what Stripe allows for this payment.")
        }
        "amount_too_small" => (Decline::RailRejected, "The amount is below Stripe's minimum for this payment."),
        "payouts_not_allowed" | "transfers_not_allowed" => {
            (Decline::RailRejected, "Stripe does not allow this account to make this payment.")
        }
        c if c.starts_with("parameter_") => {
            (Decline::RailRejected, "Stripe refused the request's parameters: a defect to report (see the logs).")
        }
        _ => (Decline::RailRejected, "Stripe refused the payment."),
    };
    Refusal::new(decline, reason)
}

/// A payout's `failure_code`, in the refusal's words.
fn payout_failure(code: Option<&str>) -> Refusal {
    let (decline, reason) = match code.unwrap_or("") {
        "account_closed" => (Decline::DestinationClosed, "The bank account is closed (account_closed)."),
        "account_frozen" => (Decline::DestinationClosed, "The bank account is frozen (account_frozen)."),
        "no_account" => (Decline::DestinationClosed, "The bank has no such account (no_account)."),
        "insufficient_funds" => (Decline::InsufficientFunds, "The Stripe balance could not cover the payout."),
        "invalid_account_number" => {
            (Decline::RailRejected, "The bank account number is invalid (invalid_account_number).")
        }
        "bank_account_restricted" => {
            (Decline::RailRejected, "The bank account restricts this payout (bank_account_restricted).")
        }
        "could_not_process" => (Decline::RailRejected, "The bank could not process the payout (could_not_process)."),
        "canceled" => (Decline::RailRejected, "The payout was canceled."),
        _ => (Decline::RailRejected, "The payout failed at the bank."),
    };
    Refusal::new(decline, reason)
}

/// A Stripe id or an expanded object's id.
fn id_of(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Object(o) => o.get("id").and_then(|v| v.as_str()).map(str::to_owned),
        _ => None,
    }
}

/// A Stripe `transfer` (no status: complete when created; `reversed` once
/// reversed in full).
fn transfer_from_value(value: serde_json::Value) -> Option<RailTransfer> {
    #[derive(Deserialize)]
    struct Wire {
        id: String,
        object: String,
        amount: u64,
        #[serde(default)]
        amount_reversed: u64,
        currency: String,
        destination: Option<serde_json::Value>,
        transfer_group: Option<String>,
        #[serde(default)]
        reversed: bool,
        created: i64,
    }
    let w: Wire = serde_json::from_value(value).ok()?;
    let destination = w.destination.as_ref().and_then(id_of)?;
    if w.object != "transfer" || !id_ok(&w.id) || w.amount == 0 || !text_ok(&destination) {
        return None;
    }
    if w.transfer_group.as_deref().is_some_and(|g| !text_ok(g)) {
        return None;
    }
    Some(RailTransfer {
        id: w.id,
        amount_minor: w.amount,
        currency: currency_of(&w.currency)?,
        destination,
        transfer_group: w.transfer_group,
        status: if w.reversed { RailStatus::Reversed } else { RailStatus::Paid },
        amount_reversed: w.amount_reversed.min(w.amount),
        created: unix_time(w.created),
        evidence: None,
        failure: None,
    })
}

/// A Stripe `payout`, its key from `metadata[countersign_key]`.
fn payout_from_value(value: serde_json::Value) -> Option<RailTransfer> {
    #[derive(Deserialize)]
    struct Wire {
        id: String,
        object: String,
        amount: u64,
        currency: String,
        destination: Option<serde_json::Value>,
        status: String,
        failure_code: Option<String>,
        #[serde(default)]
        metadata: BTreeMap<String, String>,
        created: i64,
    }
    let w: Wire = serde_json::from_value(value).ok()?;
    let destination = w.destination.as_ref().and_then(id_of)?;
    if w.object != "payout" || !id_ok(&w.id) || w.amount == 0 || !text_ok(&destination) {
        return None;
    }
    let (status, failure) = match w.status.as_str() {
        "pending" | "in_transit" => (RailStatus::Pending, None),
        "paid" => (RailStatus::Paid, None),
        "failed" => (RailStatus::Failed, Some(payout_failure(w.failure_code.as_deref()))),
        "canceled" => (RailStatus::Failed, Some(payout_failure(Some("canceled")))),
        _ => return None,
    };
    let key = w.metadata.get(KEY_METADATA).filter(|k| key_ok(k)).cloned();
    Some(RailTransfer {
        id: w.id,
        amount_minor: w.amount,
        currency: currency_of(&w.currency)?,
        destination,
        transfer_group: key,
        status,
        amount_reversed: 0,
        created: unix_time(w.created),
        evidence: None,
        failure,
    })
}

#[async_trait::async_trait]
impl Rail for StripeRail {
    fn profile(&self) -> RailProfile {
        RailProfile { kind: RailKind::Stripe, resubmit_window: self.resubmit_window, reverses: true }
    }

    async fn create_transfer(&self, order: &TransferOrder<'_>) -> CreateOutcome {
        self.create(order).await
    }

    async fn find(&self, lookup: &Lookup<'_>) -> Result<Vec<RailTransfer>, UnknownCause> {
        let keep = |t: &RailTransfer| t.transfer_group.as_deref() == Some(lookup.key);
        match object_for(lookup.destination) {
            Some(Object::Transfer) => {
                let query = [("transfer_group", lookup.key.to_owned()), ("limit", "100".to_owned())];
                let (items, _) = self.page(Object::Transfer, &query).await?;
                if !items.iter().all(keep) {
                    tracing::warn!("stripe listing returned a transfer of another group");
                    return Err(UnknownCause::BadResponse);
                }
                Ok(items)
            }
            Some(Object::Payout) => {
                Ok(self.since(Object::Payout, lookup.since, 10_000).await?.into_iter().filter(keep).collect())
            }
            None => Ok(Vec::new()),
        }
    }

    async fn get_transfer(&self, id: &str) -> Result<Option<RailTransfer>, UnknownCause> {
        let object = match id {
            _ if !id_ok(id) => return Ok(None),
            _ if id.starts_with("po_") => Object::Payout,
            _ => Object::Transfer,
        };
        let path = if object == Object::Transfer { "transfers" } else { "payouts" };
        let url = self.http.url(&["v1", path, id]);
        match self.http.get_json(url, "stripe_get", &self.headers(object)).await? {
            None => Ok(None),
            Some(value) => {
                let t = match object {
                    Object::Transfer => transfer_from_value(value),
                    Object::Payout => payout_from_value(value),
                };
                match t {
                    Some(t) if t.id == id => Ok(Some(t)),
                    _ => Err(UnknownCause::BadResponse),
                }
            }
        }
    }

    async fn list_since(&self, since: DateTime<Utc>, limit: usize) -> Result<Vec<RailTransfer>, UnknownCause> {
        let mut all = self.since(Object::Transfer, since, limit).await?;
        all.extend(self.since(Object::Payout, since, limit).await?);
        all.sort_by(|a, b| b.created.cmp(&a.created).then_with(|| b.id.cmp(&a.id)));
        all.truncate(limit);
        Ok(all)
    }

    async fn reversals_of(&self, transfer_id: &str) -> Result<Vec<RailReversal>, UnknownCause> {
        if !id_ok(transfer_id) || transfer_id.starts_with("po_") {
            return Ok(Vec::new());
        }
        let url = self.http.url(&["v1", "transfers", transfer_id, "reversals"]);
        match self.http.get_json(url, "stripe_reversals", &HeaderMap::new()).await? {
            None => Ok(Vec::new()),
            Some(value) => reversals_from_value(value, transfer_id),
        }
    }

    async fn reverse(&self, transfer_id: &str, idempotency_key: &str, amount_minor: Option<u64>) -> ReversalOutcome {
        if transfer_id.starts_with("po_") {
            return ReversalOutcome::TooLate;
        }
        if !key_ok(idempotency_key) || !id_ok(transfer_id) {
            tracing::warn!("stripe reversal refused before sending: invalid key or transfer id");
            return ReversalOutcome::Declined(Decline::RailRejected.into());
        }
        let answer =
            match self.http.reverse_transfer(transfer_id, idempotency_key, amount_minor, "stripe_reverse").await {
                Ok(Ok(reversal_id)) => return ReversalOutcome::Reversed { reversal_id },
                Ok(Err(refused)) => refused,
                Err(cause) => return ReversalOutcome::Unknown(cause),
            };
        if matches!(answer.status.as_u16(), 401 | 403) {
            return ReversalOutcome::Unknown(UnknownCause::ServerError(answer.status.as_u16()));
        }
        match classify_error(&answer) {
            ErrorClass::Code(code) => ReversalOutcome::Declined(refusal_for(&code)),
            ErrorClass::Open(cause) => ReversalOutcome::Unknown(cause),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_by_destination() {
        assert_eq!(object_for("acct_1"), Some(Object::Transfer));
        assert_eq!(object_for("ba_1"), Some(Object::Payout));
        assert_eq!(object_for("card_1"), Some(Object::Payout));
        assert_eq!(object_for("btok_1"), None);
    }

    #[test]
    fn a_stripe_transfer_is_settled_when_made_and_reversed_when_said() {
        let t = serde_json::json!({"id": "tr_1", "object": "transfer", "amount": 500, "amount_reversed": 0,
            "currency": "usd", "destination": "acct_1", "transfer_group": "k", "reversed": false, "created": 1});
        assert_eq!(transfer_from_value(t.clone()).unwrap().status, RailStatus::Paid);
        let mut r = t;
        r["reversed"] = true.into();
        r["destination"] = serde_json::json!({"id": "acct_1", "object": "account"});
        let r = transfer_from_value(r).unwrap();
        assert_eq!((r.status, r.destination.as_str()), (RailStatus::Reversed, "acct_1"));
    }

    #[test]
    fn a_payout_carries_its_key_and_its_failure() {
        let p = serde_json::json!({"id": "po_1", "object": "payout", "amount": 500, "currency": "eur",
            "destination": "ba_1", "status": "failed", "failure_code": "account_closed",
            "metadata": {"countersign_key": "k"}, "created": 1});
        let t = payout_from_value(p).unwrap();
        assert_eq!(t.transfer_group.as_deref(), Some("k"));
        assert_eq!(t.failure.map(|f| f.decline), Some(Decline::DestinationClosed));
        assert_eq!(refusal_for("balance_insufficient").decline, Decline::InsufficientFunds);
        assert_eq!(refusal_for("parameter_unknown").decline, Decline::RailRejected);
    }
}
