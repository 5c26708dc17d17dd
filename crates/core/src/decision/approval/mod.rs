//! Approval tokens (SPEC §5) and the signature half of the commit checks
//! (SPEC §6, checks 1–3).
//!
//! - [`keys`]: the P-256 signing keys on disk (`<data_dir>/keys/`, one
//!   PKCS#8 PEM file of mode 0600 per key, in a 0700 directory, plus an
//!   `active` file), rotation and the public JWKS.
//! - [`token`]: minting an ES256 compact JWS and verifying one, with a typed
//!   [`TokenRejection`] whose [`reason`](TokenRejection::reason) is the
//!   stable machine string of the 401 `approval_token_invalid` answer.
//!
//! The request-hash (`rh`) comparison, single use of `jti`, approvers'
//! limits and the proposal state are the commit handler's job, not this
//! module's.

pub mod approve;
pub mod grant;
pub mod keys;
pub mod receipts;
pub mod token;

pub use keys::{KeyError, KeyStore};
pub use token::{
    ApprovalClaims, Expected, MintRequest, TokenError, TokenRejection, AUDIENCE, DEFAULT_TTL_SECS, LEEWAY_SECS,
    MAX_TTL_SECS, TOKEN_TYP,
};
