//! Console passwords: argon2id PHC strings, never plain text.
//!
//! Hashing and verifying are deliberately slow (that is their point), so
//! callers on the async runtime run them in `tokio::task::spawn_blocking`.
//! A sign-in for an unknown user calls [`verify_against_dummy`] so that it
//! costs the same time as one for a known user: the response time never
//! tells whether a username exists.

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params};
use std::sync::OnceLock;

/// Hashes `password` with argon2id (the crate's default parameters) and a
/// fresh random salt; returns the PHC string (`$argon2id$v=19$m=…`).
pub fn hash_password(password: &str) -> String {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .expect("argon2id with default parameters and a generated salt cannot fail")
        .to_string()
}

/// Whether `password` matches the PHC string `phc`. The comparison is
/// constant time; a malformed PHC string simply does not match.
pub fn verify_password(password: &str, phc: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(phc) else {
        return false;
    };
    Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok()
}

/// Verifies `password` against a fixed dummy argon2id hash and discards the
/// result: the work an unknown username costs, so it matches a known one.
pub fn verify_against_dummy(password: &str) {
    static DUMMY: OnceLock<String> = OnceLock::new();
    let dummy = DUMMY.get_or_init(|| hash_password("countersign: not a real password"));
    std::hint::black_box(verify_password(password, dummy));
}

/// Whether `s` is a complete argon2id PHC string: algorithm `argon2id`,
/// valid parameters, a salt and a hash output.
pub fn is_argon2id_phc(s: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(s) else {
        return false;
    };
    parsed.algorithm == Algorithm::Argon2id.ident()
        && Params::try_from(&parsed).is_ok()
        && parsed.salt.is_some()
        && parsed.hash.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_salted_argon2id_and_verify() {
        let a = hash_password("correct horse");
        let b = hash_password("correct horse");
        assert!(a.starts_with("$argon2id$"), "{a}");
        assert_ne!(a, b, "a fresh salt every time");
        assert!(!a.contains("correct horse"));
        assert!(verify_password("correct horse", &a));
        assert!(verify_password("correct horse", &b));
        assert!(!verify_password("correct horse!", &a));
        assert!(!verify_password("", &a));
    }

    #[test]
    fn malformed_hashes_never_verify() {
        for bad in ["", "correct horse", "$argon2id$", "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ", "$2b$12$abc"] {
            assert!(!verify_password("correct horse", bad), "{bad}");
        }
    }

    #[test]
    fn dummy_verification_runs_and_matches_nothing() {
        // It must not panic, whatever the input; its only effect is the time it takes.
        verify_against_dummy("anything");
        verify_against_dummy("");
        verify_against_dummy("countersign: not a real password");
    }

    #[test]
    fn recognises_argon2id_phc_strings_only() {
        assert!(is_argon2id_phc(&hash_password("pw")));

        let salt = SaltString::generate(&mut OsRng);
        let argon2i = Argon2::new(Algorithm::Argon2i, argon2::Version::V0x13, Params::default())
            .hash_password(b"pw", &salt)
            .unwrap()
            .to_string();
        assert!(argon2i.starts_with("$argon2i$"));
        assert!(!is_argon2id_phc(&argon2i));

        for bad in [
            "",
            "pw",
            "$argon2id$...",
            "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ", // no hash output
            "$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW",
        ] {
            assert!(!is_argon2id_phc(bad), "{bad}");
        }
    }
}
