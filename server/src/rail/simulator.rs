//! The simulator connector: the bundled rail simulator's Stripe-compatible
//! transfers API (SPEC section 12), or any rail that speaks it.
//!
//! - A 2xx answer carrying a well-formed transfer that matches the order
//!   (amount, currency, destination, `transfer_group` = the key) is
//!   accepted, `pending` or `paid` as the rail says.
//! - A refusal by its code: `insufficient_funds`, `account_closed` (→
//!   `destination_closed`) and `limit_exceeded` are typed, every other code
//!   is `rail_rejected`; the open cases and everything ambiguous are
//!   unknown ([`super::http`]'s outcome mapping).

use chrono::{DateTime, Utc};
use reqwest::header::HeaderMap;
use serde::Deserialize;

pub use super::http::RailConfigError;
use super::http::{self, classify_error, currency_of, id_ok, key_ok, reversals_from_value, text_ok, ErrorClass, Http};
pub use countersign_core::rail::*;

/// A rail speaking the simulator's API. Cheap to clone.
#[derive(Clone, Debug)]
pub struct SimulatorRail {
    http: Http,
    resubmit_window: chrono::Duration,
}

impl SimulatorRail {
    /// A client for `cfg`; orders unanswered are resubmitted within
    /// `resubmit_window` of their first submission.
    pub fn new(cfg: RailConfig) -> Result<Self, RailConfigError> {
        Self::with_window(cfg, chrono::Duration::hours(23))
    }

    pub fn with_window(cfg: RailConfig, resubmit_window: chrono::Duration) -> Result<Self, RailConfigError> {
        Ok(SimulatorRail { http: Http::new(&cfg, HeaderMap::new())?, resubmit_window })
    }

    /// `POST /v1/transfers`. Safe to repeat with the same order: the rail
    /// replays the first outcome for the same `Idempotency-Key`.
    pub async fn create_transfer(&self, order: &TransferOrder<'_>) -> CreateOutcome {
        if !key_ok(order.idempotency_key) || order.metadata.iter().any(|(k, _)| reserved(k)) {
            // Refused locally: nothing was sent, so nothing can have moved.
            tracing::warn!("rail transfer refused before sending: invalid key or metadata");
            return CreateOutcome::Declined(Decline::RailRejected.into());
        }
        let mut form: Vec<(String, String)> = vec![
            ("amount".into(), order.amount_minor.to_string()),
            ("currency".into(), order.currency.to_ascii_lowercase()),
            ("destination".into(), order.destination.into()),
            ("transfer_group".into(), order.idempotency_key.into()),
            ("metadata[source_account]".into(), order.source_account.into()),
        ];
        if !order.operation_id.is_empty() {
            form.push((format!("metadata[{OPERATION_METADATA}]"), order.operation_id.into()));
        }
        form.extend(order.metadata.iter().map(|(k, v)| (format!("metadata[{k}]"), (*v).to_string())));
        let req = self
            .http
            .client()
            .post(self.http.url(&["v1", "transfers"]))
            .header("Idempotency-Key", order.idempotency_key)
            .form(&form);
        let answer = match self.http.exchange(req, "create_transfer").await {
            Ok(a) => a,
            Err(cause) => return CreateOutcome::Unknown(cause),
        };
        if answer.status.is_success() {
            let Some(t) = serde_json::from_slice(&answer.body).ok().and_then(transfer_from_value) else {
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
            ErrorClass::Code(code) => CreateOutcome::Declined(decline_for(&code).into()),
            ErrorClass::Open(cause) => CreateOutcome::Unknown(cause),
        }
    }

    /// `GET /v1/transfers?…` — a listing; any transfer failing `keep` is a
    /// bad answer.
    async fn list(
        &self,
        query: &[(&str, String)],
        keep: impl Fn(&RailTransfer) -> bool,
    ) -> Result<Vec<RailTransfer>, UnknownCause> {
        let mut url = self.http.url(&["v1", "transfers"]);
        url.query_pairs_mut().extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        let value =
            self.http.get_json(url, "list_transfers", &HeaderMap::new()).await?.ok_or(UnknownCause::BadResponse)?;
        #[derive(Deserialize)]
        struct List {
            object: String,
            data: Vec<serde_json::Value>,
        }
        let list: List = serde_json::from_value(value).map_err(|_| UnknownCause::BadResponse)?;
        if list.object != "list" {
            return Err(UnknownCause::BadResponse);
        }
        let mut out = Vec::with_capacity(list.data.len());
        for value in list.data {
            let t = transfer_from_value(value).ok_or(UnknownCause::BadResponse)?;
            if !keep(&t) {
                tracing::warn!("rail listing returned a transfer it was not asked for");
                return Err(UnknownCause::BadResponse);
            }
            out.push(t);
        }
        Ok(out)
    }

    /// `GET /v1/transfers?transfer_group=KEY` — the transfers made under a
    /// key (empty when none). Any transfer of another group is a bad answer.
    pub async fn find_by_group(&self, key: &str) -> Result<Vec<RailTransfer>, UnknownCause> {
        self.list(&[("transfer_group", key.to_owned()), ("limit", "100".into())], |t| {
            t.transfer_group.as_deref() == Some(key)
        })
        .await
    }

    /// `GET /v1/transfers/{id}` — one transfer (`None` when the rail has no
    /// such transfer). Any other id in the answer is a bad answer.
    pub async fn get_transfer(&self, id: &str) -> Result<Option<RailTransfer>, UnknownCause> {
        if !id_ok(id) {
            return Ok(None);
        }
        let url = self.http.url(&["v1", "transfers", id]);
        match self.http.get_json(url, "get_transfer", &HeaderMap::new()).await? {
            None => Ok(None),
            Some(value) => match transfer_from_value(value) {
                Some(t) if t.id == id => Ok(Some(t)),
                _ => Err(UnknownCause::BadResponse),
            },
        }
    }

    /// `GET /v1/transfers/{id}/reversals`: the transfer's reversals (none for
    /// an unknown transfer).
    pub async fn reversals_of(&self, transfer_id: &str) -> Result<Vec<RailReversal>, UnknownCause> {
        if !id_ok(transfer_id) {
            return Ok(Vec::new());
        }
        let url = self.http.url(&["v1", "transfers", transfer_id, "reversals"]);
        let Some(value) = self.http.get_json(url, "list_reversals", &HeaderMap::new()).await? else {
            return Ok(Vec::new());
        };
        reversals_from_value(value, transfer_id)
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
            return ReversalOutcome::Declined(Decline::RailRejected.into());
        }
        let answer = match self.http.reverse_transfer(transfer_id, idempotency_key, amount_minor, "reverse").await {
            Ok(Ok(reversal_id)) => return ReversalOutcome::Reversed { reversal_id },
            Ok(Err(refused)) => refused,
            Err(cause) => return ReversalOutcome::Unknown(cause),
        };
        match classify_error(&answer) {
            ErrorClass::Code(code) if code == "transfer_reversal_window_closed" => ReversalOutcome::TooLate,
            ErrorClass::Code(code) => ReversalOutcome::Declined(decline_for(&code).into()),
            ErrorClass::Open(cause) => ReversalOutcome::Unknown(cause),
        }
    }
}

/// Metadata keys an order may not set (the connector's own).
fn reserved(key: &str) -> bool {
    key == "source_account" || key.starts_with("countersign_")
}

fn decline_for(code: &str) -> Decline {
    match code {
        "insufficient_funds" => Decline::InsufficientFunds,
        "account_closed" => Decline::DestinationClosed,
        "limit_exceeded" => Decline::LimitExceeded,
        _ => Decline::RailRejected,
    }
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
        #[serde(default)]
        created: Option<i64>,
    }
    let w: Wire = serde_json::from_value(value).ok()?;
    let status = match w.status.as_str() {
        "pending" => RailStatus::Pending,
        "paid" => RailStatus::Paid,
        "failed" => RailStatus::Failed,
        "reversed" => RailStatus::Reversed,
        _ => return None,
    };
    let currency = currency_of(&w.currency)?;
    if w.object != "transfer" || !id_ok(&w.id) || w.amount == 0 || !text_ok(&w.destination) {
        return None;
    }
    if w.transfer_group.as_deref().is_some_and(|g| !text_ok(g)) {
        return None;
    }
    Some(RailTransfer {
        id: w.id,
        amount_minor: w.amount,
        currency,
        destination: w.destination,
        transfer_group: w.transfer_group,
        status,
        amount_reversed: w.amount_reversed.min(w.amount),
        created: w.created.and_then(http::unix_time),
        evidence: None,
        failure: None,
    })
}

#[async_trait::async_trait]
impl Rail for SimulatorRail {
    fn profile(&self) -> RailProfile {
        RailProfile { kind: RailKind::Simulator, resubmit_window: self.resubmit_window, reverses: true }
    }
    async fn create_transfer(&self, order: &TransferOrder<'_>) -> CreateOutcome {
        SimulatorRail::create_transfer(self, order).await
    }
    async fn find(&self, lookup: &Lookup<'_>) -> Result<Vec<RailTransfer>, UnknownCause> {
        self.find_by_group(lookup.key).await
    }
    async fn get_transfer(&self, id: &str) -> Result<Option<RailTransfer>, UnknownCause> {
        SimulatorRail::get_transfer(self, id).await
    }
    async fn list_since(&self, since: DateTime<Utc>, limit: usize) -> Result<Vec<RailTransfer>, UnknownCause> {
        let since_secs = since.timestamp().max(0);
        let limit = limit.clamp(1, 100);
        self.list(&[("created[gte]", since_secs.to_string()), ("limit", limit.to_string())], |t| {
            t.created.is_none_or(|c| c.timestamp() >= since_secs)
        })
        .await
    }
    async fn reversals_of(&self, transfer_id: &str) -> Result<Vec<RailReversal>, UnknownCause> {
        SimulatorRail::reversals_of(self, transfer_id).await
    }
    async fn reverse(&self, transfer_id: &str, idempotency_key: &str, amount_minor: Option<u64>) -> ReversalOutcome {
        SimulatorRail::reverse(self, transfer_id, idempotency_key, amount_minor).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfer_parsing_is_strict() {
        let ok = r#"{"id":"tr_1","object":"transfer","amount":5,"currency":"usd","destination":"d","transfer_group":"k","status":"paid","created":1767225600}"#;
        let t = transfer_from_value(serde_json::from_str(ok).unwrap()).unwrap();
        assert_eq!((t.currency.as_str(), t.status), ("USD", RailStatus::Paid));
        assert_eq!(t.created.map(|c| c.timestamp()), Some(1_767_225_600));
        for bad in [
            r#"{"id":"tr_1","object":"transfer","amount":5,"currency":"usd","destination":"d","status":"weird"}"#,
            r#"{"id":"tr_1","object":"transfer","amount":-5,"currency":"usd","destination":"d","status":"paid"}"#,
            r#"{"id":"","object":"transfer","amount":5,"currency":"usd","destination":"d","status":"paid"}"#,
            r#"{"id":"tr_1","object":"payout","amount":5,"currency":"usd","destination":"d","status":"paid"}"#,
            r#"{"id":"tr_1","object":"transfer","amount":5,"currency":"usdx","destination":"d","status":"paid"}"#,
        ] {
            assert!(transfer_from_value(serde_json::from_str(bad).unwrap()).is_none(), "{bad}");
        }
    }

    #[test]
    fn decline_codes() {
        assert_eq!(decline_for("account_closed"), Decline::DestinationClosed);
        assert_eq!(decline_for("parameter_unknown"), Decline::RailRejected);
        assert_eq!(Decline::DestinationClosed.code(), "destination_closed");
    }
}
