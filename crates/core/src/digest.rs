//! Lowercase hex SHA-256, as stored for secrets and identifiers that must
//! not be kept in clear (agent keys, single sign-on subjects, device tokens).

use sha2::{Digest, Sha256};

pub fn sha256_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}
