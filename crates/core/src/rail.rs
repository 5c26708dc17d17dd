//! The rail port: what the use cases ask of the payment rail (SPEC section
//! 12, a Stripe-compatible transfers API), and the outcomes it can give. The
//! server's HTTP connector implements it (`countersign::rail::connector`).
//!
//! The outcome types carry no string from the rail except ids and fields
//! parsed from a valid transfer or reversal: an ambiguous answer is
//! [`UnknownCause`], never a decline.

use secrecy::SecretString;
use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

/// Where the rail is and how long to wait for it.
#[derive(Clone, Debug)]
pub struct RailConfig {
    /// e.g. `http://127.0.0.1:4242` (a path prefix is kept).
    pub base_url: String,
    /// Sent as `Authorization: Bearer …` when set.
    pub api_key: Option<SecretString>,
    /// TCP + TLS connect timeout (default 2 s).
    pub connect_timeout: Duration,
    /// Whole request, body included (default 10 s).
    pub total_timeout: Duration,
}

impl RailConfig {
    /// A config with the default timeouts and no API key.
    pub fn new(base_url: impl Into<String>) -> Self {
        RailConfig {
            base_url: base_url.into(),
            api_key: None,
            connect_timeout: Duration::from_secs(2),
            total_timeout: Duration::from_secs(10),
        }
    }
}

/// One transfer to create.
#[derive(Clone, Copy, Debug)]
pub struct TransferOrder<'a> {
    /// Sent as the `Idempotency-Key` header and as `transfer_group`.
    pub idempotency_key: &'a str,
    pub amount_minor: u64,
    /// Upper-case ISO 4217 (sent lower-case, as Stripe expects).
    pub currency: &'a str,
    pub destination: &'a str,
    /// Sent as `metadata[source_account]`.
    pub source_account: &'a str,
    /// Extra `metadata[KEY]=VALUE` pairs (e.g. `proposal_id`); the key
    /// `source_account` is reserved.
    pub metadata: &'a [(&'a str, &'a str)],
}

/// A transfer as the rail reports it (only fields parsed from a valid answer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RailTransfer {
    pub id: String,
    pub amount_minor: u64,
    /// Upper case.
    pub currency: String,
    pub destination: String,
    pub transfer_group: Option<String>,
    pub status: RailStatus,
    /// How much of it has been reversed so far (minor units).
    pub amount_reversed: u64,
}

/// A reversal as the rail reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RailReversal {
    /// `trr_…`
    pub id: String,
    pub amount_minor: u64,
    /// The transfer it reverses.
    pub transfer: String,
    /// The idempotency key it was created under, as this connector records it
    /// in its metadata (`countersign_key`); `None` when it carries none.
    pub key: Option<String>,
}

/// The metadata entry naming the idempotency key a reversal was made under,
/// so its own record can be told from another reversal of the same transfer.
pub const REVERSAL_KEY_METADATA: &str = "countersign_key";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RailStatus {
    Pending,
    Paid,
    Failed,
    Reversed,
}

/// A definite refusal: the rail did not (and will not, for this request)
/// move money.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decline {
    InsufficientFunds,
    DestinationClosed,
    LimitExceeded,
    RailRejected,
}

impl Decline {
    /// The `error.code` of SPEC section 6.
    pub fn code(&self) -> &'static str {
        match self {
            Decline::InsufficientFunds => "insufficient_funds",
            Decline::DestinationClosed => "destination_closed",
            Decline::LimitExceeded => "limit_exceeded",
            Decline::RailRejected => "rail_rejected",
        }
    }
}

/// Why an outcome is unknown (the money may or may not have moved).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnknownCause {
    /// Connect or total timeout.
    Timeout,
    /// Refused, reset, or closed without a complete answer.
    Connection,
    /// The rail answered this status without settling the outcome (any 5xx;
    /// 408/409/425/429; a 4xx `idempotency_error`; a non-2xx on a read).
    ServerError(u16),
    /// An answer that could not be parsed, or that does not match the request.
    BadResponse,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CreateOutcome {
    Accepted(RailTransfer),
    Declined(Decline),
    Unknown(UnknownCause),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReversalOutcome {
    Reversed {
        reversal_id: String,
    },
    /// Past the rail's reversal cutoff (`transfer_reversal_window_closed`).
    TooLate,
    Declined(Decline),
    Unknown(UnknownCause),
}

/// The payment rail, as the commit path and reconciliation use it.
#[async_trait::async_trait]
pub trait Rail: Send + Sync {
    /// `POST /v1/transfers` with the order's idempotency key.
    async fn create_transfer(&self, order: &TransferOrder<'_>) -> CreateOutcome;
    /// `GET /v1/transfers?transfer_group=KEY`: the transfers made under a key.
    async fn find_by_group(&self, key: &str) -> Result<Vec<RailTransfer>, UnknownCause>;
    /// `GET /v1/transfers/{id}` (`None`: the rail has no such transfer).
    async fn get_transfer(&self, id: &str) -> Result<Option<RailTransfer>, UnknownCause>;
    /// `GET /v1/transfers/{id}/reversals`: the transfer's reversals.
    async fn reversals_of(&self, transfer_id: &str) -> Result<Vec<RailReversal>, UnknownCause>;
    /// `POST /v1/transfers/{id}/reversals` (`amount` = the rest when `None`).
    async fn reverse(&self, transfer_id: &str, idempotency_key: &str, amount_minor: Option<u64>) -> ReversalOutcome;
}

/// The payment rail, and the operations whose rail call runs in this
/// process right now (reconciliation leaves them alone).
pub trait Payments {
    fn rail(&self) -> &dyn crate::rail::Rail;
    fn in_flight(&self) -> &std::sync::Mutex<std::collections::HashSet<String>>;
}

/// Marks an operation as having a rail call in flight in this process until dropped.
pub struct InFlight<'a> {
    set: &'a Mutex<HashSet<String>>,
    id: String,
}

impl<'a> InFlight<'a> {
    /// Claims the operation for this task; `None` when another task of this
    /// process holds it (check and insert are one step under the lock).
    pub fn claim(state: &'a impl Payments, id: &str) -> Option<InFlight<'a>> {
        let set = state.in_flight();
        let fresh = set.lock().expect("in-flight set").insert(id.to_owned());
        fresh.then(|| InFlight { set, id: id.to_owned() })
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Ok(mut set) = self.set.lock() {
            set.remove(&self.id);
        }
    }
}
