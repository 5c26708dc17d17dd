//! Lowercase hex SHA-256: as stored for secrets and identifiers that must
//! not be kept in clear (agent keys, single sign-on subjects, device tokens),
//! and prefixed `sha256:` where a hash is written as text (audit entries,
//! receipts, passkey fingerprints, evidence).

use sha2::{Digest, Sha256};

pub fn sha256_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

/// `sha256:` + lowercase hex of the SHA-256 of `bytes`.
pub fn sha256_prefixed(bytes: impl AsRef<[u8]>) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes.as_ref())))
}
