//! Countersign's domain: pure types and rules, no I/O. Everything here is
//! unit- and property-tested. The server and the console (compiled to
//! WebAssembly too) depend on it, never the other way round, so the UI's
//! statuses and roles are the same enums the server enforces.

pub mod bank;
pub mod canonical;
pub mod fields;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod ids;
pub mod jcs;
pub mod merkle;
pub mod money;
pub mod navigation;
#[cfg(feature = "openapi")]
pub mod openapi;
pub mod registry;
pub mod request;
pub mod role;
pub mod status;
pub mod when;
pub mod words;

pub use canonical::{CanonicalPayee, CanonicalRequest, RequestHash, CANONICAL_VERSION, REQUEST_HASH_PATTERN};
pub use fields::{
    is_unsafe_in_text, mask_account, mask_account_tagged, FieldRule, InvoiceId, PayeeId, ProposalKind, PurposeCode,
    ReasonCode, Reference, RunId, SourceAccount, TransferRef,
};
pub use money::{AmountMinor, Currency, CurrencyRules, MajorAmountError};
pub use navigation::{is_proposal_id, login_href, ReturnPath, RETURN_PATH_MAX};
pub use registry::{key_sha256, AgentKey, DisplayText, KeySha256, RegistryId, SlackUserId, Username};
pub use request::{FieldError, ProposalRequest, ReversalRequest, TransferRequest};
pub use role::Role;
pub use status::{OpStatus, ProposalStatus};
