//! The approval-token signing keys.
//!
//! Layout, under `<data_dir>/keys/` (mode 0700):
//!
//! - `<kid>.pem`: one P-256 private key, PKCS#8 PEM, mode 0600, one file per
//!   key ever generated and not yet removed by the operator;
//! - `active`: the kid new tokens are signed with;
//! - `compromised`: kids marked compromised (`countersign keys compromised`),
//!   one per line: never loaded, so they sign nothing, verify nothing and
//!   leave the JWKS; a token naming one is refused as `key_compromised`.
//!
//! A token key that is no longer active leaves the JWKS once every token it
//! can have signed has expired ([`TOKEN_KEY_PUBLISHED_FOR`] after the key
//! that replaced it was made). Receipt keys stay published: receipts are
//! evidence for years.
//!
//! `kid` is the RFC 7638 JWK thumbprint of the public key, so anyone holding
//! the JWKS can check it. Files are written atomically (a 0600 temporary file
//! in the same directory, `fsync`, `rename`, `fsync` of the directory), the
//! key file before `active`, so a concurrent reader sees either the old or the
//! new state, never a half-written key.
//!
//! A key file or the directory with any group/other permission bit set is
//! refused with the path: a key that may have leaked is never used silently.
//!
//! `countersign keys rotate` runs in another process than the server, so a
//! [`KeyStore`] can re-read the directory: [`KeyStore::reload`] on demand,
//! verification once (at most once per second) when it meets an unknown
//! `kid`, and minting when the `active` file (read at most once per second)
//! names another key.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::EncodingKey;
use p256::elliptic_curve::sec1::ToSec1Point;
use p256::elliptic_curve::zeroize::Zeroizing;
use p256::elliptic_curve::Generate;
use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};
use p256::{PublicKey, SecretKey};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;
use std::fs::{File, OpenOptions, Permissions};
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime};

/// The keys directory, relative to the data directory.
pub const KEYS_DIR: &str = "keys";
/// The receipt keys' directory, inside the keys directory (the same
/// layout: `<kid>.pem` files and `active`; docs/EVIDENCE.md).
pub const RECEIPT_KEYS_DIR: &str = "receipts";
/// The Web Push (VAPID) key's directory, inside the keys directory.
pub const VAPID_KEYS_DIR: &str = "vapid";
/// The file naming the active kid, inside the keys directory.
pub const ACTIVE_FILE: &str = "active";
/// The file listing the kids marked compromised, inside the keys directory.
pub const COMPROMISED_FILE: &str = "compromised";
/// How long a replaced token key stays published: the longest token
/// lifetime (900 s, SPEC §5) plus the verification leeway (30 s).
pub const TOKEN_KEY_PUBLISHED_FOR: Duration = Duration::from_secs(900 + 30);
/// Re-reading the keys directory because of an unknown `kid` (or to follow
/// a rotation when minting) happens at most this often, so a flood of tokens
/// with made-up kids cannot turn into a flood of directory scans.
pub const RELOAD_INTERVAL: Duration = Duration::from_secs(1);
/// A PKCS#8 P-256 PEM is about 240 bytes; anything far larger is not a key.
const MAX_KEY_FILE_BYTES: u64 = 16 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot access {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "refusing {path}: mode {mode:04o} gives group/other access, so the signing key may have \
         leaked; check it, then `chmod 600` the key files and `chmod 700` the directory \
         (and rotate if in doubt)"
    )]
    InsecurePermissions { path: String, mode: u32 },
    #[error("{path} is not a directory")]
    NotADirectory { path: String },
    #[error("{path} is not a regular file")]
    NotAFile { path: String },
    /// Deliberately carries no detail: parser messages could quote key bytes.
    #[error("{path} is not a PKCS#8 PEM P-256 private key")]
    InvalidKey { path: String },
    #[error("{path} holds the key with kid {kid}; a key file must be named `<kid>.pem`")]
    KidMismatch { path: String, kid: String },
    #[error("{path} names key {kid}, which is not in the keys directory")]
    ActiveKeyMissing { path: String, kid: String },
    #[error("no signing keys in {path}")]
    NoKeys { path: String },
    #[error("cannot generate a signing key: {0}")]
    Generate(String),
    #[error("there is no key {kid} in {path}")]
    NoSuchKey { path: String, kid: String },
}

/// One key pair. Its `Debug` shows the kid only.
pub(super) struct SigningKey {
    pub(super) kid: String,
    /// Public coordinates, base64url without padding (JWK `x`, `y`).
    pub(super) x: String,
    pub(super) y: String,
    /// PKCS#8 DER of the private key (zeroized on drop by jsonwebtoken):
    /// VAPID's JWTs, and the tests' own signing.
    pub(super) encoding: EncodingKey,
    /// The same key for `ring`, which signs and verifies ES256 in a third
    /// and a half of the time `p256` takes (docs/BENCHMARKS.md, "Session
    /// 23"): the approval tokens and the receipts, on the commit path.
    signer: ring::signature::EcdsaKeyPair,
    /// The public point, SEC1 uncompressed (65 bytes).
    public_sec1: Vec<u8>,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey").field("kid", &self.kid).finish_non_exhaustive()
    }
}

impl SigningKey {
    fn from_secret(secret: &SecretKey) -> Option<SigningKey> {
        let (x, y) = coordinates(&secret.public_key())?;
        let kid = jwk_thumbprint(&x, &y);
        let der = secret.to_pkcs8_der().ok()?;
        let encoding = EncodingKey::from_ec_der(der.as_bytes());
        let public_sec1 = secret.public_key().to_sec1_point(false).as_bytes().to_vec();
        let signer = ring::signature::EcdsaKeyPair::from_private_key_and_public_key(
            &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &Zeroizing::new(secret.to_bytes()),
            &public_sec1,
            &ring::rand::SystemRandom::new(),
        )
        .ok()?;
        Some(SigningKey { kid, x, y, encoding, signer, public_sec1 })
    }

    /// A compact JWS of `header` and `claims` (JSON), ES256 with the
    /// signature in its low-S form: ECDSA signatures are malleable ((r, s)
    /// and (r, n − s) both verify), so a JWS has exactly one valid string.
    pub(super) fn sign_compact(
        &self,
        header: &impl serde::Serialize,
        claims: &impl serde::Serialize,
    ) -> Result<String, serde_json::Error> {
        let mut jws = URL_SAFE_NO_PAD.encode(serde_json::to_vec(header)?);
        jws.push('.');
        URL_SAFE_NO_PAD.encode_string(serde_json::to_vec(claims)?, &mut jws);
        let signature = self
            .signer
            .sign(&ring::rand::SystemRandom::new(), jws.as_bytes())
            .expect("ECDSA signing with a valid key and the system's randomness does not fail");
        let signature =
            p256::ecdsa::Signature::from_slice(signature.as_ref()).expect("ring's fixed ES256 signature is 64 bytes");
        jws.push('.');
        URL_SAFE_NO_PAD.encode_string(signature.normalize_s().to_bytes(), &mut jws);
        Ok(jws)
    }

    /// Whether `signature` (64 bytes, r ‖ s) is this key's ES256 signature
    /// of `signing_input`, in its low-S form.
    pub(super) fn verifies(&self, signing_input: &[u8], signature: &[u8]) -> bool {
        let low_s = p256::ecdsa::Signature::from_slice(signature).is_ok_and(|s| s.normalize_s() == s);
        low_s
            && ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, &self.public_sec1)
                .verify(signing_input, signature)
                .is_ok()
    }

    fn jwk(&self) -> serde_json::Value {
        serde_json::json!({
            "kty": "EC",
            "crv": "P-256",
            "x": self.x,
            "y": self.y,
            "kid": self.kid,
            "use": "sig",
            "alg": "ES256",
        })
    }
}

/// The JWK `x` and `y` of a public key: fixed 32-byte big-endian
/// coordinates, base64url without padding.
fn coordinates(public: &PublicKey) -> Option<(String, String)> {
    let point = public.to_sec1_point(false);
    Some((URL_SAFE_NO_PAD.encode(point.x()?), URL_SAFE_NO_PAD.encode(point.y()?)))
}

/// RFC 7638 thumbprint of a P-256 public JWK: base64url (no padding) of
/// SHA-256 over the required members in lexicographic order, no whitespace.
pub fn jwk_thumbprint(x: &str, y: &str) -> String {
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

struct State {
    keys: BTreeMap<String, Arc<SigningKey>>,
    active: String,
    /// The kids marked compromised (not in `keys`).
    compromised: std::collections::BTreeSet<String>,
    /// The compromised file as last read (modified time, length), to
    /// notice another process's mark.
    compromised_stamp: Option<(SystemTime, u64)>,
    /// When each key stopped being the newest: the next key's file time.
    replaced_at: BTreeMap<String, SystemTime>,
}

struct Inner {
    dir: PathBuf,
    state: RwLock<State>,
    reload_interval: Duration,
    last_unknown_kid_reload: Mutex<Option<Instant>>,
    last_active_check: Mutex<Option<Instant>>,
    last_compromise_check: Mutex<Option<Instant>>,
    /// Token keys: how long a replaced key stays in the JWKS (`None`:
    /// forever, the receipt keys).
    published_for: Option<Duration>,
}

/// The signing keys, shared cheaply (`Clone` is an `Arc` clone).
#[derive(Clone)]
pub struct KeyStore {
    inner: Arc<Inner>,
}

impl fmt::Debug for KeyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.read_state();
        f.debug_struct("KeyStore")
            .field("dir", &self.inner.dir)
            .field("active_kid", &state.active)
            .field("kids", &state.keys.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl KeyStore {
    /// Loads every key in `<data_dir>/keys/`, generating the first one (and
    /// the directory, mode 0700) when there is none.
    pub fn open_or_create(data_dir: &Path) -> Result<KeyStore, KeyError> {
        Self::open_with_interval(data_dir, RELOAD_INTERVAL)
    }

    /// Marks token key `kid` compromised (`countersign keys compromised`):
    /// when it is the active key a new one is made active first; then it is
    /// listed in `compromised`. A running server stops trusting it within
    /// [`RELOAD_INTERVAL`]. Returns the new active kid when one was made.
    pub fn mark_compromised(data_dir: &Path, kid: &str) -> Result<Option<String>, KeyError> {
        let dir = data_dir.join(KEYS_DIR);
        check_dir(&dir)?;
        let state = load_dir(&dir)?;
        if !state.keys.contains_key(kid) && !state.compromised.contains(kid) {
            return Err(KeyError::NoSuchKey { path: dir.display().to_string(), kid: kid.to_owned() });
        }
        let rotated = if state.active == kid { Some(generate_into(&dir)?) } else { None };
        let mut listed = state.compromised;
        listed.insert(kid.to_owned());
        let text: String = listed.iter().map(|k| format!("{k}\n")).collect();
        write_private_file(&dir, COMPROMISED_FILE, text.as_bytes())?;
        Ok(rotated)
    }

    /// Loads the receipt keys (`<data_dir>/keys/receipts/`), generating the
    /// first one when there is none. Signed receipts name their `kid`; the
    /// JWKS publishes these beside the token keys.
    pub fn open_or_create_receipts(data_dir: &Path) -> Result<KeyStore, KeyError> {
        prepare_dir(&data_dir.join(KEYS_DIR))?;
        Self::open_dir(data_dir.join(KEYS_DIR).join(RECEIPT_KEYS_DIR), RELOAD_INTERVAL, None)
    }

    /// Generates a new receipt key and makes it active (the old ones stay
    /// published, so receipts they signed still verify).
    pub fn rotate_receipts(data_dir: &Path) -> Result<String, KeyError> {
        prepare_dir(&data_dir.join(KEYS_DIR))?;
        let dir = data_dir.join(KEYS_DIR).join(RECEIPT_KEYS_DIR);
        prepare_dir(&dir)?;
        generate_into(&dir)
    }

    pub(super) fn open_with_interval(data_dir: &Path, reload_interval: Duration) -> Result<KeyStore, KeyError> {
        Self::open_dir(data_dir.join(KEYS_DIR), reload_interval, Some(TOKEN_KEY_PUBLISHED_FOR))
    }

    /// `published_for`: how long a replaced key stays in the JWKS (`None`:
    /// for good).
    fn open_dir(
        dir: PathBuf,
        reload_interval: Duration,
        published_for: Option<Duration>,
    ) -> Result<KeyStore, KeyError> {
        prepare_dir(&dir)?;
        if !has_key_files(&dir)? {
            let kid = generate_into(&dir)?;
            tracing::info!(kid, dir = %dir.display(), "generated the first approval signing key");
        }
        let state = load_dir(&dir)?;
        Ok(KeyStore {
            inner: Arc::new(Inner {
                dir,
                state: RwLock::new(state),
                reload_interval,
                last_unknown_kid_reload: Mutex::new(None),
                last_active_check: Mutex::new(None),
                last_compromise_check: Mutex::new(None),
                published_for,
            }),
        })
    }

    /// Generates a new key in `<data_dir>/keys/` and makes it the active one;
    /// the old keys stay for verification. Returns the new kid. A running
    /// server picks the new key up by itself (see the module docs).
    pub fn rotate(data_dir: &Path) -> Result<String, KeyError> {
        let dir = data_dir.join(KEYS_DIR);
        prepare_dir(&dir)?;
        generate_into(&dir)
    }

    /// Re-reads the keys directory. On error the keys in memory stay as
    /// they were.
    pub fn reload(&self) -> Result<(), KeyError> {
        let state = load_dir(&self.inner.dir)?;
        *self.inner.state.write().unwrap_or_else(PoisonError::into_inner) = state;
        Ok(())
    }

    /// The kid new tokens are signed with.
    pub fn active_kid(&self) -> String {
        self.read_state().active.clone()
    }

    /// Every loaded kid, sorted.
    pub fn kids(&self) -> Vec<String> {
        self.read_state().keys.keys().cloned().collect()
    }

    /// The keys directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Every key held, as a public JWK Set: replaced keys too, compromised
    /// ones never (they are not loaded). What a proof bundle carries, so an
    /// old payment's token still verifies.
    pub fn jwks(&self) -> serde_json::Value {
        self.jwk_set(|_, _| true)
    }

    /// The JWK Set as published at `now` (`GET /.well-known/jwks.json`): a
    /// replaced token key only while a token it signed can still be valid
    /// ([`TOKEN_KEY_PUBLISHED_FOR`] after its successor was made); receipt
    /// keys always.
    pub fn published_jwks(&self, now: chrono::DateTime<chrono::Utc>) -> serde_json::Value {
        let now = SystemTime::from(now);
        self.jwk_set(|state, kid| match (self.inner.published_for, state.replaced_at.get(kid)) {
            (Some(for_), Some(replaced)) if kid != state.active => *replaced + for_ > now,
            _ => true,
        })
    }

    /// The held keys `keep` keeps, public members only.
    fn jwk_set(&self, keep: impl Fn(&State, &str) -> bool) -> serde_json::Value {
        self.follow_compromise();
        let state = self.read_state();
        let keys: Vec<_> = state.keys.iter().filter(|(kid, _)| keep(&state, kid)).map(|(_, k)| k.jwk()).collect();
        serde_json::json!({ "keys": keys })
    }

    /// Whether `kid` is marked compromised (re-reading the mark at most once
    /// per interval, so another process's mark is followed).
    /// Loads the Web Push (VAPID) key (`<data_dir>/keys/vapid/`), generating
    /// it when there is none. Browsers subscribe with its public key, so it
    /// is never rotated by itself: a new one means every device subscribes
    /// again (docs/NOTIFICATIONS.md).
    pub fn open_or_create_vapid(data_dir: &Path) -> Result<KeyStore, KeyError> {
        prepare_dir(&data_dir.join(KEYS_DIR))?;
        Self::open_dir(data_dir.join(KEYS_DIR).join(VAPID_KEYS_DIR), RELOAD_INTERVAL, None)
    }

    /// The active key's public point, SEC1 uncompressed (65 bytes), base64url
    /// without padding: Web Push's `applicationServerKey` and VAPID's `k`.
    pub fn active_public_sec1(&self) -> String {
        let key = self.active_key();
        let mut point = vec![4u8];
        for coordinate in [&key.x, &key.y] {
            point.extend(URL_SAFE_NO_PAD.decode(coordinate).expect("coordinates are base64url"));
        }
        URL_SAFE_NO_PAD.encode(point)
    }

    /// An ES256 JWT of `claims` signed with the active key, with no `kid`
    /// in its header (VAPID names its key beside the token).
    pub fn sign_jwt_without_kid(&self, claims: &impl serde::Serialize) -> Result<String, jsonwebtoken::errors::Error> {
        let header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        jsonwebtoken::encode(&header, claims, &self.active_key().encoding)
    }

    pub fn is_compromised(&self, kid: &str) -> bool {
        self.follow_compromise();
        self.read_state().compromised.contains(kid)
    }

    /// At most once per interval: if the `compromised` file changed since it
    /// was read, reload.
    fn follow_compromise(&self) {
        if !self.take_slot(&self.inner.last_compromise_check) {
            return;
        }
        let stamp = compromised_stamp(&self.inner.dir.join(COMPROMISED_FILE));
        if stamp != self.read_state().compromised_stamp {
            if let Err(error) = self.reload() {
                tracing::warn!(%error, "reloading the signing keys after a compromise mark failed");
            }
        }
    }

    pub(super) fn active_key(&self) -> Arc<SigningKey> {
        let state = self.read_state();
        Arc::clone(&state.keys[&state.active])
    }

    pub(super) fn key(&self, kid: &str) -> Option<Arc<SigningKey>> {
        self.read_state().keys.get(kid).cloned()
    }

    /// Reloads because a token named an unknown kid, at most once per
    /// interval. Returns whether a reload succeeded.
    pub(super) fn reload_for_unknown_kid(&self) -> bool {
        if !self.take_slot(&self.inner.last_unknown_kid_reload) {
            return false;
        }
        match self.reload() {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!(%error, "reloading the approval signing keys failed");
                false
            }
        }
    }

    /// Before minting: if the `active` file (read at most once per interval)
    /// names another key than ours, another process rotated; reload.
    pub(super) fn follow_rotation(&self) {
        if !self.take_slot(&self.inner.last_active_check) {
            return;
        }
        let on_disk = match read_active(&self.inner.dir.join(ACTIVE_FILE)) {
            Ok(Some(kid)) => kid,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(%error, "reading the active signing key failed");
                return;
            }
        };
        if on_disk != self.read_state().active {
            if let Err(error) = self.reload() {
                tracing::warn!(%error, "reloading the approval signing keys failed");
            }
        }
    }

    fn take_slot(&self, slot: &Mutex<Option<Instant>>) -> bool {
        let mut last = slot.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if let Some(then) = *last {
            if now.duration_since(then) < self.inner.reload_interval {
                return false;
            }
        }
        *last = Some(now);
        true
    }

    fn read_state(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.inner.state.read().unwrap_or_else(PoisonError::into_inner)
    }
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> KeyError + '_ {
    move |source| KeyError::Io { path: path.display().to_string(), source }
}

fn check_private(path: &Path, meta: &std::fs::Metadata) -> Result<(), KeyError> {
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(KeyError::InsecurePermissions { path: path.display().to_string(), mode });
    }
    Ok(())
}

fn check_dir(dir: &Path) -> Result<(), KeyError> {
    let meta = std::fs::metadata(dir).map_err(io_error(dir))?;
    if !meta.is_dir() {
        return Err(KeyError::NotADirectory { path: dir.display().to_string() });
    }
    check_private(dir, &meta)
}

/// Creates the keys directory (mode 0700) if missing; an existing one must
/// already be private (it is not silently tightened: it may have leaked).
pub(crate) fn prepare_dir(dir: &Path) -> Result<(), KeyError> {
    match std::fs::metadata(dir) {
        Ok(_) => check_dir(dir),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            crate::store::ensure_private_dir(dir).map_err(io_error(dir))
        }
        Err(e) => Err(io_error(dir)(e)),
    }
}

fn key_file_stem(name: &str) -> Option<&str> {
    if name.starts_with('.') {
        return None; // temporary files of an atomic write
    }
    name.strip_suffix(".pem")
}

fn has_key_files(dir: &Path) -> Result<bool, KeyError> {
    for entry in std::fs::read_dir(dir).map_err(io_error(dir))? {
        let entry = entry.map_err(io_error(dir))?;
        if entry.file_name().to_str().and_then(key_file_stem).is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The compromised file's (modified time, length), `None` when absent.
fn compromised_stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), meta.len()))
}

fn load_dir(dir: &Path) -> Result<State, KeyError> {
    check_dir(dir)?;
    let compromised_path = dir.join(COMPROMISED_FILE);
    let compromised_stamp = compromised_stamp(&compromised_path);
    let compromised: std::collections::BTreeSet<String> = match std::fs::read_to_string(&compromised_path) {
        Ok(text) => text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Default::default(),
        Err(e) => return Err(io_error(&compromised_path)(e)),
    };
    let mut keys = BTreeMap::new();
    let mut times: Vec<(SystemTime, String)> = Vec::new();
    let mut newest: Option<(SystemTime, String)> = None;
    for entry in std::fs::read_dir(dir).map_err(io_error(dir))? {
        let entry = entry.map_err(io_error(dir))?;
        let name = entry.file_name();
        let Some(stem) = name.to_str().and_then(key_file_stem) else { continue };
        let path = entry.path();
        let (key, modified) = read_key_file(&path)?;
        if key.kid != stem {
            return Err(KeyError::KidMismatch { path: path.display().to_string(), kid: key.kid });
        }
        times.push((modified, key.kid.clone()));
        if compromised.contains(&key.kid) {
            continue;
        }
        if newest.as_ref().is_none_or(|(t, kid)| (modified, &key.kid) > (*t, kid)) {
            newest = Some((modified, key.kid.clone()));
        }
        keys.insert(key.kid.clone(), Arc::new(key));
    }
    times.sort();
    let replaced_at = times.windows(2).map(|w| (w[0].1.clone(), w[1].0)).collect();
    let Some((_, newest)) = newest else {
        return Err(KeyError::NoKeys { path: dir.display().to_string() });
    };
    let active_path = dir.join(ACTIVE_FILE);
    let active = match read_active(&active_path)? {
        Some(kid) if keys.contains_key(&kid) => kid,
        Some(kid) => return Err(KeyError::ActiveKeyMissing { path: active_path.display().to_string(), kid }),
        None => {
            // A rotation interrupted between the key file and `active`.
            tracing::warn!(kid = newest, "no active signing key recorded; using the newest key");
            newest
        }
    };
    Ok(State { keys, active, compromised, compromised_stamp, replaced_at })
}

fn read_key_file(path: &Path) -> Result<(SigningKey, SystemTime), KeyError> {
    let invalid = || KeyError::InvalidKey { path: path.display().to_string() };
    let (pem, meta) = read_private_file(path)?;
    let secret = SecretKey::from_pkcs8_pem(&pem).map_err(|_| invalid())?;
    let key = SigningKey::from_secret(&secret).ok_or_else(invalid)?;
    Ok((key, meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)))
}

fn read_active(path: &Path) -> Result<Option<String>, KeyError> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let kid = text.trim();
            Ok((!kid.is_empty()).then(|| kid.to_owned()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(path)(e)),
    }
}

/// Generates a key, writes `<kid>.pem`, then makes it active.
fn generate_into(dir: &Path) -> Result<String, KeyError> {
    let secret = SecretKey::try_generate().map_err(|e| KeyError::Generate(e.to_string()))?;
    let key = SigningKey::from_secret(&secret).ok_or_else(|| KeyError::Generate("cannot encode the new key".into()))?;
    let pem =
        secret.to_pkcs8_pem(LineEnding::LF).map_err(|_| KeyError::Generate("cannot encode the new key".into()))?;
    write_private_file(dir, &format!("{}.pem", key.kid), pem.as_bytes())?;
    write_private_file(dir, ACTIVE_FILE, format!("{}\n", key.kid).as_bytes())?;
    Ok(key.kid)
}

/// Atomically replaces `dir/name` with `contents`, mode 0600 from the start.
fn write_private_file(dir: &Path, name: &str, contents: &[u8]) -> Result<(), KeyError> {
    write_then(dir, name, contents, |tmp, target| std::fs::rename(tmp, target))
}

/// Writes `dir/name` with `contents` (mode 0600) unless it exists: of
/// several processes writing at once, the first wins and the others keep
/// theirs unwritten.
pub(crate) fn write_private_file_once(dir: &Path, name: &str, contents: &[u8]) -> Result<(), KeyError> {
    write_then(dir, name, contents, |tmp, target| {
        match std::fs::hard_link(tmp, target) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
        std::fs::remove_file(tmp)
    })
}

/// Writes `contents` to a 0600 temporary file in `dir`, synced, then hands
/// it to `place` (which puts it at `dir/name`) and syncs the directory; the
/// temporary file is removed on any failure.
fn write_then(
    dir: &Path,
    name: &str,
    contents: &[u8],
    place: impl FnOnce(&Path, &Path) -> std::io::Result<()>,
) -> Result<(), KeyError> {
    let target = dir.join(name);
    let tmp = dir.join(format!(".{name}.{:016x}.tmp", rand::random::<u64>()));
    let result = (|| -> std::io::Result<()> {
        let mut file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
        file.set_permissions(Permissions::from_mode(0o600))?;
        file.write_all(contents)?;
        file.sync_all()?;
        drop(file);
        place(&tmp, &target)?;
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io_error(&target))
}

/// Reads a small private file (a key), refusing one others may read or
/// that is not a regular file; its text is wiped when dropped.
pub(crate) fn read_private_file(path: &Path) -> Result<(Zeroizing<String>, std::fs::Metadata), KeyError> {
    let invalid = || KeyError::InvalidKey { path: path.display().to_string() };
    let mut file = File::open(path).map_err(io_error(path))?;
    // Checked on the open file, so it cannot be swapped in between.
    let meta = file.metadata().map_err(io_error(path))?;
    if !meta.is_file() {
        return Err(KeyError::NotAFile { path: path.display().to_string() });
    }
    check_private(path, &meta)?;
    if meta.len() > MAX_KEY_FILE_BYTES {
        return Err(invalid());
    }
    let mut text = Zeroizing::new(String::with_capacity(meta.len() as usize + 64));
    file.read_to_string(&mut text).map_err(|_| invalid())?;
    Ok((text, meta))
}

/// The approval-token signing keys.
pub trait Keys {
    fn keys(&self) -> &crate::decision::approval::keys::KeyStore;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, Permissions::from_mode(mode)).unwrap();
    }

    fn open() -> (tempfile::TempDir, PathBuf, KeyStore) {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        let store = KeyStore::open_or_create(&data).unwrap();
        (tmp, data, store)
    }

    fn key_path(data: &Path, kid: &str) -> PathBuf {
        data.join(KEYS_DIR).join(format!("{kid}.pem"))
    }

    #[test]
    fn key_files_are_0600_in_a_0700_dir() {
        let (_tmp, data, store) = open();
        let dir = data.join(KEYS_DIR);
        assert_eq!(store.dir(), dir);
        assert_eq!(mode(&dir), 0o700);
        let kid = store.active_kid();
        assert_eq!(mode(&key_path(&data, &kid)), 0o600);
        assert_eq!(mode(&dir.join(ACTIVE_FILE)), 0o600);
        let rotated = KeyStore::rotate(&data).unwrap();
        assert_eq!(mode(&key_path(&data, &rotated)), 0o600);
        assert_eq!(mode(&dir.join(ACTIVE_FILE)), 0o600);
        let mut names: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        let mut want = vec![format!("{kid}.pem"), format!("{rotated}.pem"), ACTIVE_FILE.to_string()];
        want.sort();
        assert_eq!(names, want, "no temporary files are left behind");
        assert_eq!(std::fs::read_to_string(dir.join(ACTIVE_FILE)).unwrap(), format!("{rotated}\n"));
        let pem = std::fs::read_to_string(key_path(&data, &kid)).unwrap();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"), "PKCS#8 PEM");
    }

    #[test]
    fn a_file_written_once_keeps_the_first_contents_and_is_private() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("k");
        prepare_dir(&dir).unwrap();
        write_private_file_once(&dir, "f", b"first").unwrap();
        write_private_file_once(&dir, "f", b"second").unwrap();
        assert_eq!(std::fs::read(dir.join("f")).unwrap(), b"first");
        assert_eq!(mode(&dir.join("f")), 0o600);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary file is left behind");
        assert_eq!(read_private_file(&dir.join("f")).unwrap().0.as_str(), "first");
        chmod(&dir.join("f"), 0o644);
        assert!(matches!(read_private_file(&dir.join("f")), Err(KeyError::InsecurePermissions { .. })));
    }

    /// Sets `kid`'s key file time `ago` in the past.
    fn made_ago(data: &Path, kid: &str, ago: Duration) {
        let file = File::options().write(true).open(key_path(data, kid)).unwrap();
        file.set_modified(SystemTime::now() - ago).unwrap();
    }

    fn published(store: &KeyStore) -> Vec<String> {
        store.published_jwks(chrono::Utc::now())["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn a_replaced_token_key_leaves_the_jwks_once_its_tokens_have_expired_and_receipt_keys_never_do() {
        let (_tmp, data, store) = open();
        let old = store.active_kid();
        made_ago(&data, &old, Duration::from_secs(3_600));
        let new = KeyStore::rotate(&data).unwrap();
        store.reload().unwrap();
        assert_eq!(published(&store).len(), 2, "replaced just now: its tokens may still be valid");
        made_ago(&data, &new, TOKEN_KEY_PUBLISHED_FOR + Duration::from_secs(5));
        store.reload().unwrap();
        assert_eq!(published(&store), vec![new.clone()], "every token of the old key has expired");

        let receipts = KeyStore::open_or_create_receipts(&data).unwrap();
        let first = receipts.active_kid();
        KeyStore::rotate_receipts(&data).unwrap();
        let dir = data.join(KEYS_DIR).join(RECEIPT_KEYS_DIR);
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "pem") {
                File::options()
                    .write(true)
                    .open(&path)
                    .unwrap()
                    .set_modified(SystemTime::now() - Duration::from_secs(86_400))
                    .unwrap();
            }
        }
        receipts.reload().unwrap();
        assert!(published(&receipts).contains(&first), "receipts are evidence: their keys stay published");
    }

    #[test]
    fn a_key_marked_compromised_is_dropped_and_an_active_one_replaced_first() {
        let (_tmp, data, store) = open();
        let first = store.active_kid();
        let second = KeyStore::mark_compromised(&data, &first).unwrap().expect("the active key was replaced");
        assert!(store.is_compromised(&first), "followed at once (first check)");
        assert_eq!(store.active_kid(), second);
        assert_eq!(published(&store), vec![second.clone()]);
        assert!(store.key(&first).is_none(), "it verifies nothing");
        let third = KeyStore::rotate(&data).unwrap();
        store.reload().unwrap();
        assert_eq!(KeyStore::mark_compromised(&data, &second).unwrap(), None, "not active: nothing to replace");
        store.reload().unwrap();
        assert!(store.is_compromised(&second) && store.is_compromised(&first));
        assert_eq!(store.active_kid(), third);
        assert!(matches!(KeyStore::mark_compromised(&data, "nope"), Err(KeyError::NoSuchKey { .. })));
        // A store opened later never loads them.
        let again = KeyStore::open_or_create(&data).unwrap();
        assert_eq!(again.kids(), vec![third]);
    }

    #[test]
    fn reopening_keeps_the_same_key() {
        let (_tmp, data, store) = open();
        let again = KeyStore::open_or_create(&data).unwrap();
        assert_eq!(again.active_kid(), store.active_kid());
        assert_eq!(again.kids(), vec![store.active_kid()]);
    }

    #[test]
    fn group_readable_key_file_is_refused() {
        let (_tmp, data, store) = open();
        let path = key_path(&data, &store.active_kid());
        chmod(&path, 0o644);
        let err = KeyStore::open_or_create(&data).unwrap_err();
        match &err {
            KeyError::InsecurePermissions { path: p, mode } => {
                assert_eq!(p, &path.display().to_string());
                assert_eq!(*mode, 0o644);
            }
            other => panic!("expected InsecurePermissions, got {other:?}"),
        }
        assert!(err.to_string().contains(&path.display().to_string()));
        // A running store refuses to reload it too, and keeps its keys.
        assert!(matches!(store.reload(), Err(KeyError::InsecurePermissions { .. })));
        assert_eq!(store.kids().len(), 1);
        chmod(&path, 0o640);
        assert!(KeyStore::open_or_create(&data).is_err());
        chmod(&path, 0o600);
        assert!(KeyStore::open_or_create(&data).is_ok());
    }

    #[test]
    fn loose_keys_dir_is_refused_not_tightened() {
        let (_tmp, data, _store) = open();
        let dir = data.join(KEYS_DIR);
        chmod(&dir, 0o755);
        let err = KeyStore::open_or_create(&data).unwrap_err();
        assert!(
            matches!(&err, KeyError::InsecurePermissions { path, .. } if path == &dir.display().to_string()),
            "{err:?}"
        );
        assert!(matches!(KeyStore::rotate(&data), Err(KeyError::InsecurePermissions { .. })));
        assert_eq!(mode(&dir), 0o755, "left for the operator to inspect");
    }

    #[test]
    fn kid_is_the_rfc7638_thumbprint_of_the_key_on_disk() {
        let (_tmp, data, store) = open();
        let kid = store.active_kid();
        let jwks = store.jwks();
        let jwk = &jwks["keys"][0];
        let (x, y) = (jwk["x"].as_str().unwrap(), jwk["y"].as_str().unwrap());
        // Computed independently of `jwk_thumbprint`.
        let mut members = BTreeMap::new();
        members.insert("crv", "P-256");
        members.insert("kty", "EC");
        members.insert("x", x);
        members.insert("y", y);
        let canonical = serde_json::to_string(&members).unwrap();
        assert!(canonical.starts_with(r#"{"crv":"P-256","kty":"EC","x":""#));
        let digest = Sha256::digest(canonical.as_bytes());
        assert_eq!(kid, URL_SAFE_NO_PAD.encode(digest));
        assert_eq!(kid.len(), 43);
        // And x/y really are the coordinates of the private key in the file.
        let pem = std::fs::read_to_string(key_path(&data, &kid)).unwrap();
        let secret = SecretKey::from_pkcs8_pem(&pem).unwrap();
        let sec1 = secret.public_key().to_sec1_bytes();
        assert_eq!(sec1.len(), 65);
        assert_eq!(URL_SAFE_NO_PAD.decode(x).unwrap(), sec1[1..33]);
        assert_eq!(URL_SAFE_NO_PAD.decode(y).unwrap(), sec1[33..65]);
    }

    #[test]
    fn jwks_has_public_members_only() {
        let (_tmp, data, store) = open();
        KeyStore::rotate(&data).unwrap();
        store.reload().unwrap();
        let jwks = store.jwks();
        let keys = jwks["keys"].as_array().unwrap();
        assert_eq!(keys.len(), 2);
        for key in keys {
            let mut members: Vec<&str> = key.as_object().unwrap().keys().map(String::as_str).collect();
            members.sort();
            assert_eq!(members, ["alg", "crv", "kid", "kty", "use", "x", "y"]);
            assert_eq!(key["alg"], "ES256");
            assert_eq!(key["use"], "sig");
            assert_eq!(key["crv"], "P-256");
            assert_eq!(key["kty"], "EC");
        }
        assert_eq!(jwks.as_object().unwrap().len(), 1);
    }

    #[test]
    fn debug_shows_no_private_material() {
        let (_tmp, data, store) = open();
        let kid = store.active_kid();
        let pem = std::fs::read_to_string(key_path(&data, &kid)).unwrap();
        let secret = SecretKey::from_pkcs8_pem(&pem).unwrap();
        let d = secret.to_bytes();
        let der = secret.to_pkcs8_der().unwrap();
        let debug = format!("{store:?} {:?} {:#?}", store.active_key(), store.clone());
        assert!(debug.contains(&kid), "{debug}");
        assert!(!debug.contains("PRIVATE"), "{debug}");
        for secret_text in [
            hex::encode(d.as_slice()),
            hex::encode(der.as_bytes()),
            URL_SAFE_NO_PAD.encode(d.as_slice()),
            base64::engine::general_purpose::STANDARD.encode(d.as_slice()),
        ] {
            assert!(!debug.contains(&secret_text));
        }
        for line in pem.lines().filter(|l| !l.starts_with("-----")) {
            assert!(!debug.contains(line), "{debug}");
        }
        // Byte-wise too (`Debug` of a byte slice prints numbers).
        let d_numbers = format!("{:?}", d.as_slice());
        assert!(!debug.contains(&d_numbers[1..d_numbers.len() - 1]));
    }

    #[test]
    fn unreadable_key_error_quotes_no_key_material() {
        let (_tmp, data, store) = open();
        let pem = std::fs::read_to_string(key_path(&data, &store.active_kid())).unwrap();
        let body: Vec<&str> = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let corrupt = pem.replacen(&body[1][..8], "AAAAAAAA", 1);
        let path = data.join(KEYS_DIR).join("broken.pem");
        write_private_file(&data.join(KEYS_DIR), "broken.pem", corrupt.as_bytes()).unwrap();
        let err = KeyStore::open_or_create(&data).unwrap_err();
        let shown = format!("{err} {err:?}");
        assert!(
            matches!(&err, KeyError::InvalidKey { path: p } | KeyError::KidMismatch { path: p, .. }
                if p == &path.display().to_string()),
            "{shown}"
        );
        for line in &body {
            assert!(!shown.contains(line), "{shown}");
        }
    }

    #[test]
    fn misnamed_key_file_is_refused() {
        let (_tmp, data, store) = open();
        let kid = store.active_kid();
        let wrong = key_path(&data, "not-the-thumbprint");
        std::fs::rename(key_path(&data, &kid), &wrong).unwrap();
        std::fs::remove_file(data.join(KEYS_DIR).join(ACTIVE_FILE)).unwrap();
        let err = KeyStore::open_or_create(&data).unwrap_err();
        assert!(matches!(&err, KeyError::KidMismatch { kid: k, .. } if k == &kid), "{err:?}");
    }

    #[test]
    fn missing_active_file_falls_back_to_a_loaded_key() {
        let (_tmp, data, store) = open();
        let first = store.active_kid();
        let second = KeyStore::rotate(&data).unwrap();
        std::fs::remove_file(data.join(KEYS_DIR).join(ACTIVE_FILE)).unwrap();
        let reopened = KeyStore::open_or_create(&data).unwrap();
        assert!([first, second].contains(&reopened.active_kid()));
        // `active` naming a key that is not there is an error, not a guess.
        std::fs::write(data.join(KEYS_DIR).join(ACTIVE_FILE), "nope\n").unwrap();
        assert!(matches!(
            KeyStore::open_or_create(&data),
            Err(KeyError::ActiveKeyMissing { kid, .. }) if kid == "nope"
        ));
    }
}
