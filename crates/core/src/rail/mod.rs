//! The rail contract: what the commit path and reconciliation ask of a
//! payment rail, and the outcomes a rail can give. Every connector
//! implements [`Rail`] and passes one conformance suite
//! (`server/tests/rail_conformance.rs`):
//!
//! | connector | where | speaks |
//! |---|---|---|
//! | `simulator` | `server/src/rail/simulator.rs` | the bundled simulator's Stripe-compatible transfers API (SPEC §12) |
//! | `stripe` | `server/src/rail/stripe.rs` | Stripe's own API: Transfers to connected accounts, Payouts to bank accounts and cards |
//! | `iso20022` | [`iso20022`] | bank files: `pain.001` out, `pain.002` and `camt.053`/`camt.054` in |
//!
//! The contract, in the commit path's words: **submit** an order under an
//! idempotency key ([`Rail::create_transfer`]; the same key again never
//! makes a second payment), **read its status** by key
//! ([`Rail::find`]), **list** what the rail made since a time
//! ([`Rail::list_since`]), **reverse** a settled transfer
//! ([`Rail::reverse`]), and **sync** whatever the rail exchanges on its own
//! schedule (a bank's files: [`Rail::sync`]).
//!
//! The outcome types carry no string from the rail except ids and fields
//! parsed from a valid answer, and reasons chosen from this crate's own
//! fixed texts: an ambiguous answer is [`UnknownCause`], never a decline.

use chrono::{DateTime, Utc};
use secrecy::SecretString;
use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

pub mod iso20022;
mod registry;

pub use registry::{Rails, DEFAULT_RAIL};

/// Where an HTTP rail is and how long to wait for it.
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

/// One transfer to make.
#[derive(Clone, Copy, Debug)]
pub struct TransferOrder<'a> {
    /// The rail idempotency key (`Idempotency-Key`, `transfer_group`, the
    /// bank ledger's key): the same key never makes a second payment.
    pub idempotency_key: &'a str,
    /// Countersign's operation id: the bank file's end-to-end id, a
    /// Stripe object's `metadata[countersign_operation]`.
    pub operation_id: &'a str,
    pub amount_minor: u64,
    /// Upper-case ISO 4217 (sent lower-case to Stripe).
    pub currency: &'a str,
    /// The payee's id in the registry (`acct_…`, `ba_…`, `card_…`).
    pub destination: &'a str,
    /// The payee's legal name, as the registry holds it.
    pub payee_name: &'a str,
    /// The agent's reference (≤ 140 characters, no control characters):
    /// the bank file's unstructured remittance information.
    pub reference: &'a str,
    /// Sent as `metadata[source_account]` where the rail takes metadata.
    pub source_account: &'a str,
    /// Extra `metadata[KEY]=VALUE` pairs (e.g. `proposal_id`); the keys
    /// `source_account` and `countersign_*` are reserved.
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
    /// The idempotency key it was made under, as the rail records it.
    pub transfer_group: Option<String>,
    pub status: RailStatus,
    /// How much of it has been reversed so far (minor units).
    pub amount_reversed: u64,
    /// When the rail made it, where it says.
    pub created: Option<DateTime<Utc>>,
    /// What settled it, in words, where the rail's word is a document (a
    /// bank statement: kind, message id, file): kept in the audit trail.
    pub evidence: Option<String>,
    /// Why it failed, where the rail says (status `Failed`).
    pub failure: Option<Refusal>,
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

/// The metadata entry naming the idempotency key a reversal (or a Stripe
/// payout) was made under, so its own record can be told from another.
pub const REVERSAL_KEY_METADATA: &str = "countersign_key";
/// The metadata entry naming the operation a rail object pays.
pub const OPERATION_METADATA: &str = "countersign_operation";

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

    /// The plain-words reason when the rail gave no more precise one.
    pub fn message(&self) -> &'static str {
        match self {
            Decline::InsufficientFunds => "The source account has insufficient funds.",
            Decline::DestinationClosed => "The destination account is closed.",
            Decline::LimitExceeded => "The amount exceeds the rail's limit.",
            Decline::RailRejected => "The rail rejected the request.",
        }
    }
}

/// A refusal and why, in words this crate chose for the rail's own code
/// (never the rail's text): shown on the operation and in the audit trail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub decline: Decline,
    pub reason: &'static str,
}

impl From<Decline> for Refusal {
    fn from(decline: Decline) -> Refusal {
        Refusal { decline, reason: decline.message() }
    }
}

impl Refusal {
    pub fn new(decline: Decline, reason: &'static str) -> Refusal {
        Refusal { decline, reason }
    }
}

/// Why an outcome is unknown (the money may or may not have moved).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnknownCause {
    /// Connect or total timeout.
    Timeout,
    /// Refused, reset, or closed without a complete answer; a bank folder
    /// that cannot be written.
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
    Declined(Refusal),
    Unknown(UnknownCause),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReversalOutcome {
    Reversed {
        reversal_id: String,
    },
    /// Past what the rail can reverse (Stripe's cutoff, a paid payout, a
    /// booked bank transfer): operations must act outside the rail.
    TooLate,
    Declined(Refusal),
    Unknown(UnknownCause),
}

/// Which connector a rail is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RailKind {
    Simulator,
    Stripe,
    Iso20022,
}

impl RailKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            RailKind::Simulator => "simulator",
            RailKind::Stripe => "stripe",
            RailKind::Iso20022 => "iso20022",
        }
    }
}

/// What a rail is and what it can do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RailProfile {
    pub kind: RailKind,
    /// How long after its first submission an order may be submitted again
    /// under its key and be recognised as the same (the rail's key window,
    /// less a margin). Reconciliation resubmits an order the rail has no
    /// record of only within it; past it a human decides.
    pub resubmit_window: chrono::Duration,
    /// Whether the rail reverses a settled transfer itself; when not, a
    /// reversal is `too_late` and operations act outside the rail.
    pub reverses: bool,
}

/// How to find what a rail made under an idempotency key.
#[derive(Clone, Copy, Debug)]
pub struct Lookup<'a> {
    pub key: &'a str,
    /// The order's destination (a rail may keep transfers and payouts apart).
    pub destination: &'a str,
    /// No earlier than this (the operation's creation, less a margin).
    pub since: DateTime<Utc>,
}

/// The payment rail, as the commit path and reconciliation use it.
#[async_trait::async_trait]
pub trait Rail: Send + Sync {
    /// What this rail is and can do.
    fn profile(&self) -> RailProfile;
    /// Submits an order under its idempotency key. Safe to repeat: the same
    /// key gives the first outcome, never a second payment.
    async fn create_transfer(&self, order: &TransferOrder<'_>) -> CreateOutcome;
    /// Reads what the rail made under the lookup's key (empty: nothing).
    async fn find(&self, lookup: &Lookup<'_>) -> Result<Vec<RailTransfer>, UnknownCause>;
    /// One transfer by the rail's id (`None`: the rail has no such transfer).
    async fn get_transfer(&self, id: &str) -> Result<Option<RailTransfer>, UnknownCause>;
    /// What the rail made since `since`, newest first, at most `limit`.
    async fn list_since(&self, since: DateTime<Utc>, limit: usize) -> Result<Vec<RailTransfer>, UnknownCause>;
    /// A transfer's reversals.
    async fn reversals_of(&self, transfer_id: &str) -> Result<Vec<RailReversal>, UnknownCause>;
    /// Reverses a settled transfer (`amount` = the rest when `None`).
    async fn reverse(&self, transfer_id: &str, idempotency_key: &str, amount_minor: Option<u64>) -> ReversalOutcome;
    /// Exchanges what the rail moves on its own schedule (a bank rail
    /// writes its due files and reads the bank's documents). Called before
    /// each reconciliation pass; an error leaves everything to the next.
    async fn sync(&self) -> Result<(), UnknownCause> {
        Ok(())
    }
}

/// The payment rails, and the operations whose rail call runs in this
/// process right now (reconciliation leaves them alone).
pub trait Payments {
    fn rails(&self) -> &Rails;
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
