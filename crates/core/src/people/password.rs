//! Console passwords: argon2id PHC strings, never plain text.
//!
//! Hashing and verifying are deliberately slow and memory-hungry (about
//! 19 MiB each with the default parameters): that is their point, and also
//! a way to exhaust a server. So every password check of the running server
//! goes through one [`PasswordGate`]: a fixed number of checks at a time
//! (the rest wait, up to a bounded queue), each in `spawn_blocking`, each
//! reusing one of the gate's own memory buffers instead of allocating.
//! A burst of sign-ins neither grows the process nor starves the executor.
//!
//! A sign-in for an unknown user is checked against a dummy hash, so that it
//! costs the same time as one for a known user: the response time never
//! tells whether a username exists.

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use subtle::ConstantTimeEq;

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

/// A fixed dummy argon2id hash: what an unknown username is checked against.
fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| hash_password("countersign: not a real password"))
}

/// Verifies `password` against a fixed dummy argon2id hash and discards the
/// result: the work an unknown username costs, so it matches a known one.
pub fn verify_against_dummy(password: &str) {
    std::hint::black_box(verify_password(password, dummy_hash()));
}

/// [`verify_password`] computing into `memory` (grown if the hash asks for
/// more than it holds) instead of allocating its own.
fn verify_with_memory(password: &str, phc: &str, memory: &mut Vec<Block>) -> bool {
    let Ok(parsed) = PasswordHash::new(phc) else { return false };
    let (Ok(algorithm), Ok(params)) = (Algorithm::try_from(parsed.algorithm), Params::try_from(&parsed)) else {
        return false;
    };
    let version = match parsed.version.map(Version::try_from) {
        None => Version::default(),
        Some(Ok(v)) => v,
        Some(Err(_)) => return false,
    };
    let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else { return false };
    let mut salt_bytes = [0u8; 64];
    let Ok(salt) = salt.decode_b64(&mut salt_bytes) else { return false };
    if memory.len() < params.block_count() {
        memory.resize(params.block_count(), Block::default());
    }
    let mut out = vec![0u8; expected.len()];
    Argon2::new(algorithm, version, params)
        .hash_password_into_with_memory(password.as_bytes(), salt, &mut out, memory.as_mut_slice())
        .is_ok()
        && bool::from(out.ct_eq(expected.as_bytes()))
}

/// Too many password checks are already waiting: try again shortly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the server is busy checking passwords")]
pub struct Busy;

/// Bounds the server's password work: `concurrency` checks at a time, at
/// most `max_waiting` more queued, each on a reused memory buffer.
pub struct PasswordGate {
    permits: tokio::sync::Semaphore,
    buffers: Mutex<Vec<Vec<Block>>>,
    waiting: AtomicUsize,
    max_waiting: usize,
}

impl Default for PasswordGate {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        PasswordGate::new(cores.clamp(1, 4), 64)
    }
}

impl PasswordGate {
    pub fn new(concurrency: usize, max_waiting: usize) -> Self {
        PasswordGate {
            permits: tokio::sync::Semaphore::new(concurrency),
            buffers: Mutex::new(Vec::new()),
            waiting: AtomicUsize::new(0),
            max_waiting,
        }
    }

    /// Runs `work` with a memory buffer, when a permit is free.
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Vec<Block>) -> T + Send + 'static,
    ) -> Result<T, Busy> {
        // A place in the queue, given back however this ends: also when the
        // caller stops waiting (a client that hung up drops this future).
        struct Place<'a>(&'a AtomicUsize);
        impl Drop for Place<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        let place = Place(&self.waiting);
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.max_waiting {
            return Err(Busy);
        }
        let permit = self.permits.acquire().await;
        drop(place);
        let _permit = permit.map_err(|_| Busy)?;
        let mut buffer = self.buffers.lock().expect("buffer pool").pop().unwrap_or_default();
        let (buffer, result) = tokio::task::spawn_blocking(move || {
            let result = work(&mut buffer);
            (buffer, result)
        })
        .await
        .map_err(|_| Busy)?;
        self.buffers.lock().expect("buffer pool").push(buffer);
        Ok(result)
    }

    /// Whether `password` matches `phc`; with `None` (no such user, or an
    /// inactive one) the dummy hash is checked instead and the answer is no.
    pub async fn verify(&self, password: String, phc: Option<String>) -> Result<bool, Busy> {
        self.run(move |memory| match phc {
            Some(phc) => verify_with_memory(&password, &phc, memory),
            None => {
                std::hint::black_box(verify_with_memory(&password, dummy_hash(), memory));
                false
            }
        })
        .await
    }

    /// [`hash_password`] through the gate.
    pub async fn hash(&self, password: String) -> Result<String, Busy> {
        self.run(move |_| hash_password(&password)).await
    }

    /// A stored hash kept if `password` still matches it, else a fresh hash
    /// (provisioning stays idempotent: a fresh salt would change it every time).
    pub async fn keep_or_hash(&self, password: String, stored: Option<String>) -> Result<String, Busy> {
        self.run(move |memory| match stored {
            Some(hash) if verify_with_memory(&password, &hash, memory) => hash,
            _ => hash_password(&password),
        })
        .await
    }
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

/// Password hashing and checking, bounded (`password::PasswordGate`).
pub trait Passwords {
    fn passwords(&self) -> &crate::people::password::PasswordGate;
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
    fn verifying_into_reused_memory_agrees_with_the_library() {
        let phc = hash_password("correct horse");
        let mut memory = Vec::new();
        assert!(verify_with_memory("correct horse", &phc, &mut memory));
        let size = memory.len();
        assert!(size > 0);
        assert!(!verify_with_memory("correct horse!", &phc, &mut memory));
        assert!(!verify_with_memory("", &phc, &mut memory));
        assert_eq!(memory.len(), size, "the buffer is reused, not grown");
        for bad in ["", "correct horse", "$argon2id$", "$2b$12$abc"] {
            assert!(!verify_with_memory("correct horse", bad, &mut memory), "{bad}");
        }
        // A hash with other parameters (argon2i, more memory) verifies too.
        let salt = SaltString::generate(&mut OsRng);
        let other = Argon2::new(Algorithm::Argon2i, Version::V0x13, Params::new(32 * 1024, 1, 1, None).unwrap())
            .hash_password(b"pw", &salt)
            .unwrap()
            .to_string();
        assert!(verify_with_memory("pw", &other, &mut memory));
        assert!(!verify_with_memory("pw2", &other, &mut memory));
    }

    #[tokio::test]
    async fn the_gate_bounds_its_queue_and_answers_like_the_library() {
        let gate = PasswordGate::new(1, 2);
        let phc = hash_password("pw");
        assert_eq!(gate.verify("pw".into(), Some(phc.clone())).await, Ok(true));
        assert_eq!(gate.verify("no".into(), Some(phc.clone())).await, Ok(false));
        assert_eq!(gate.verify("pw".into(), None).await, Ok(false), "no user: the dummy, and no");
        let checks: Vec<_> = (0..8).map(|_| gate.verify("no".into(), Some(phc.clone()))).collect();
        let results = futures::future::join_all(checks).await;
        assert!(results.contains(&Err(Busy)), "a queue longer than 2 is refused");
        assert!(results.iter().filter(|r| r.is_ok()).count() >= 2);
        assert_eq!(gate.buffers.lock().unwrap().len(), 1, "one permit, one buffer, reused");
        // A caller that stops waiting gives its place back.
        let gate = PasswordGate::new(1, 1);
        let mut held = Box::pin(gate.verify("no".into(), Some(phc.clone())));
        let mut queued = Box::pin(gate.verify("no".into(), Some(phc.clone())));
        let _ = futures::poll!(held.as_mut());
        assert!(futures::poll!(queued.as_mut()).is_pending(), "queued behind the first");
        drop(queued);
        assert_eq!(gate.waiting.load(Ordering::Acquire), 0, "the abandoned place was given back");
        assert_eq!(held.await, Ok(false));
        let kept = gate.keep_or_hash("pw".into(), Some(phc.clone())).await.unwrap();
        assert_eq!(kept, phc);
        assert_ne!(gate.keep_or_hash("other".into(), Some(phc.clone())).await.unwrap(), phc);
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
