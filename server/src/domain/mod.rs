//! Pure domain types and rules. No I/O: everything here is unit- and
//! property-tested, and the rest of the server depends on it, never the
//! other way round.

pub mod canonical;
pub mod fields;
pub mod jcs;
pub mod money;
pub mod request;
pub mod status;

pub use canonical::{CanonicalPayee, CanonicalRequest, RequestHash, CANONICAL_VERSION};
pub use fields::{
    mask_account, InvoiceId, PayeeId, ProposalKind, PurposeCode, ReasonCode, Reference, RunId, SourceAccount,
    TransferRef,
};
pub use money::{AmountMinor, Currency, CurrencyRules, MajorAmountError};
pub use request::{FieldError, ProposalRequest, ReversalRequest, TransferRequest};
pub use status::ProposalStatus;
