//! Checkpoints as C2SP `tlog-checkpoint` text, signed as a C2SP
//! `signed-note` with an Ed25519 note key.
//!
//! A checkpoint's text is three lines, each ending in a newline: the log's
//! origin, the tree size in decimal, the root hash in standard base64. The
//! signed note is that text, an empty line, and one signature line
//! `— <key name> <base64(key id ‖ signature)>`, where the key id is the
//! first four bytes of SHA-256(key name ‖ 0x0A ‖ 0x01 ‖ public key) and the
//! signature is Ed25519 over the text. The verifier key is published as
//! `<name>+<hex key id>+<base64(0x01 ‖ public key)>`. The key name is the
//! origin.
//!
//! The note key is a 32-byte Ed25519 seed in hex, `keys/log-note.ed25519`
//! under the data directory (mode 0600), beside the token keys and shared
//! by every instance as they are.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};
use std::path::Path;

use crate::decision::approval::keys::KeyError;
use crate::domain::merkle::Hash;

/// The note key's file, inside the keys directory.
pub const NOTE_KEY_FILE: &str = "log-note.ed25519";
/// The signature type of Ed25519 in C2SP signed-note.
const ED25519: u8 = 0x01;
/// The em dash that starts a signature line.
const DASH: &str = "\u{2014}";

/// A checkpoint: which log, how many leaves, their root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
}

impl Checkpoint {
    /// The checkpoint's body, the text the signature covers.
    pub fn text(&self) -> String {
        format!("{}\n{}\n{}\n", self.origin, self.size, STANDARD.encode(self.root))
    }

    fn parse(text: &str) -> Result<Checkpoint, NoteError> {
        let bad = |why: &str| NoteError::Malformed(why.to_owned());
        let mut lines = text.strip_suffix('\n').ok_or_else(|| bad("the text does not end in a newline"))?.split('\n');
        let origin = lines.next().filter(|o| !o.is_empty()).ok_or_else(|| bad("no origin line"))?;
        let size = lines.next().ok_or_else(|| bad("no size line"))?;
        if size.is_empty() || !size.bytes().all(|b| b.is_ascii_digit()) || (size.len() > 1 && size.starts_with('0')) {
            return Err(bad("the size is not a decimal number"));
        }
        let size = size.parse().map_err(|_| bad("the size is too large"))?;
        let root = lines.next().ok_or_else(|| bad("no root hash line"))?;
        let root: Hash = STANDARD
            .decode(root)
            .ok()
            .and_then(|r| r.try_into().ok())
            .ok_or_else(|| bad("the root hash is not 32 bytes of base64"))?;
        // Extension lines may follow; this log writes none and reads past them.
        Ok(Checkpoint { origin: origin.to_owned(), size, root })
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NoteError {
    #[error("not a checkpoint: {0}")]
    Malformed(String),
    #[error("the checkpoint carries no signature by the key {0}")]
    NotSigned(String),
    #[error("the checkpoint's signature by {0} does not verify")]
    BadSignature(String),
    #[error("not a verifier key: {0}")]
    BadKey(String),
}

/// The public half of a note key, as a verifier holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteVerifier {
    pub name: String,
    key: VerifyingKey,
}

fn key_id(name: &str, public: &[u8; 32]) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', ED25519]);
    h.update(public);
    let digest = h.finalize();
    [digest[0], digest[1], digest[2], digest[3]]
}

impl NoteVerifier {
    pub fn id(&self) -> [u8; 4] {
        key_id(&self.name, self.key.as_bytes())
    }

    /// The published form: `<name>+<hex key id>+<base64(0x01 ‖ key)>`.
    pub fn encoded(&self) -> String {
        let mut typed = vec![ED25519];
        typed.extend_from_slice(self.key.as_bytes());
        format!("{}+{}+{}", self.name, hex::encode(self.id()), STANDARD.encode(typed))
    }

    pub fn public_key(&self) -> &[u8; 32] {
        self.key.as_bytes()
    }

    /// Reads the published form, checking its key id.
    pub fn parse(encoded: &str) -> Result<NoteVerifier, NoteError> {
        let bad = |why: &str| NoteError::BadKey(why.to_owned());
        // The name has no `+` (C2SP); the base64 key may.
        let mut parts = encoded.trim().splitn(3, '+');
        let (Some(name), Some(id), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad("expected <name>+<key id>+<key>"));
        };
        let typed = STANDARD.decode(key).map_err(|_| bad("the key is not base64"))?;
        let Some((&ED25519, public)) = typed.split_first() else { return Err(bad("not an Ed25519 key")) };
        let public: [u8; 32] = public.try_into().map_err(|_| bad("an Ed25519 key is 32 bytes"))?;
        let key = VerifyingKey::from_bytes(&public).map_err(|_| bad("not a point on Ed25519"))?;
        let verifier = NoteVerifier { name: name.to_owned(), key };
        if hex::encode(verifier.id()) != id {
            return Err(bad("the key id does not match the name and key"));
        }
        Ok(verifier)
    }

    /// Checks `note`'s signature by this key and returns its checkpoint.
    /// Signatures by other keys are ignored; one by this key must verify.
    pub fn open(&self, note: &str) -> Result<Checkpoint, NoteError> {
        let (text, signatures) =
            note.split_once("\n\n").ok_or_else(|| NoteError::Malformed("no signature block".into()))?;
        let text = format!("{text}\n");
        let id = self.id();
        for line in signatures.lines() {
            let Some(rest) = line.strip_prefix(DASH).and_then(|r| r.strip_prefix(' ')) else {
                return Err(NoteError::Malformed("a signature line does not start with an em dash".into()));
            };
            let Some((name, sig)) = rest.split_once(' ') else {
                return Err(NoteError::Malformed("a signature line has no signature".into()));
            };
            let Ok(sig) = STANDARD.decode(sig) else {
                return Err(NoteError::Malformed("a signature is not base64".into()));
            };
            if name != self.name || sig.len() < 4 || sig[..4] != id {
                continue;
            }
            let signature = <[u8; 64]>::try_from(&sig[4..])
                .map(|s| Signature::from_bytes(&s))
                .map_err(|_| NoteError::BadSignature(self.name.clone()))?;
            self.key
                .verify_strict(text.as_bytes(), &signature)
                .map_err(|_| NoteError::BadSignature(self.name.clone()))?;
            let checkpoint = Checkpoint::parse(&text)?;
            if checkpoint.origin != self.name {
                return Err(NoteError::Malformed("the origin is not the key's name".into()));
            }
            return Ok(checkpoint);
        }
        Err(NoteError::NotSigned(self.name.clone()))
    }
}

/// The private note key, named by the log's origin.
pub struct NoteSigner {
    name: String,
    key: SigningKey,
}

impl std::fmt::Debug for NoteSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NoteSigner").field("name", &self.name).finish_non_exhaustive()
    }
}

impl NoteSigner {
    pub fn from_seed(name: &str, seed: &[u8; 32]) -> NoteSigner {
        NoteSigner { name: name.to_owned(), key: SigningKey::from_bytes(seed) }
    }

    /// Reads the note key of the keys directory `dir`, making one the
    /// first time (the instance that writes first wins; the others read
    /// its key).
    pub fn open_or_create(dir: &Path, origin: &str) -> Result<NoteSigner, KeyError> {
        crate::decision::approval::keys::prepare_dir(dir)?;
        let path = dir.join(NOTE_KEY_FILE);
        if !path.exists() {
            let seed: [u8; 32] = rand::random();
            crate::decision::approval::keys::write_private_file_once(
                dir,
                NOTE_KEY_FILE,
                format!("{}\n", hex::encode(seed)).as_bytes(),
            )?;
        }
        let (text, _) = crate::decision::approval::keys::read_private_file(&path)?;
        let seed: [u8; 32] = hex::decode(text.trim())
            .ok()
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| KeyError::InvalidKey { path: path.display().to_string() })?;
        Ok(NoteSigner::from_seed(origin, &seed))
    }

    /// The key's name: the log's origin.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn verifier(&self) -> NoteVerifier {
        NoteVerifier { name: self.name.clone(), key: self.key.verifying_key() }
    }

    /// The signed note of `checkpoint`.
    pub fn sign(&self, checkpoint: &Checkpoint) -> String {
        let text = checkpoint.text();
        let signature = self.key.sign(text.as_bytes());
        let mut sig = self.verifier().id().to_vec();
        sig.extend_from_slice(&signature.to_bytes());
        format!("{text}\n{DASH} {} {}\n", self.name, STANDARD.encode(sig))
    }
}

/// The log's origin for a console at `public_url`: its host, port and path,
/// then `/log` (`https://pay.example.com/` → `pay.example.com/log`).
pub fn origin_of(public_url: &url::Url) -> String {
    let host = public_url.host_str().unwrap_or("countersign");
    let port = public_url.port().map(|p| format!(":{p}")).unwrap_or_default();
    let path = public_url.path().trim_end_matches('/');
    format!("{host}{port}{path}/log")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint() -> Checkpoint {
        Checkpoint { origin: "pay.example.com/log".into(), size: 42, root: [7; 32] }
    }

    #[test]
    fn a_signed_checkpoint_opens_with_its_published_key_and_nothing_else() {
        let signer = NoteSigner::from_seed("pay.example.com/log", &[1; 32]);
        let note = signer.sign(&checkpoint());
        assert!(note.starts_with(
            "pay.example.com/log\n42\nBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n\n\u{2014} pay.example.com/log "
        ));
        let verifier = NoteVerifier::parse(&signer.verifier().encoded()).unwrap();
        assert_eq!(verifier.open(&note).unwrap(), checkpoint());

        let other = NoteSigner::from_seed("pay.example.com/log", &[2; 32]).verifier();
        assert_eq!(other.open(&note), Err(NoteError::NotSigned("pay.example.com/log".into())));
        let tampered = note.replace("\n42\n", "\n43\n");
        assert_eq!(verifier.open(&tampered), Err(NoteError::BadSignature("pay.example.com/log".into())));
        let forged = NoteSigner::from_seed("pay.example.com/log", &[2; 32]).sign(&checkpoint());
        assert_eq!(verifier.open(&forged), Err(NoteError::NotSigned("pay.example.com/log".into())));
        assert!(verifier.open("pay.example.com/log\n42\n").is_err(), "no signature block");
    }

    #[test]
    fn verifier_keys_are_checked_when_read() {
        let encoded = NoteSigner::from_seed("a.example/log", &[3; 32]).verifier().encoded();
        assert!(NoteVerifier::parse(&encoded).is_ok());
        // Keys whose base64 holds a `+` read too (the name never does).
        let plus = (0u8..=255)
            .map(|b| NoteSigner::from_seed("a.example/log", &[b; 32]).verifier())
            .find(|v| v.encoded().splitn(3, '+').nth(2).is_some_and(|key| key.contains('+')))
            .expect("some key's base64 has a +");
        assert_eq!(NoteVerifier::parse(&plus.encoded()).unwrap(), plus);
        let (name, rest) = encoded.split_once('+').unwrap();
        let (id, key) = rest.split_once('+').unwrap();
        let head = format!("{name}+{id}");
        let renamed = encoded.replacen("a.example/log", "b.example/log", 1);
        assert!(matches!(NoteVerifier::parse(&renamed), Err(NoteError::BadKey(_))), "the key id binds the name");
        assert!(NoteVerifier::parse(&format!("{head}+AQ==")).is_err(), "short key");
        assert!(NoteVerifier::parse(key).is_err(), "no name or id");
    }

    #[test]
    fn checkpoints_are_read_strictly() {
        for text in ["o\n01\nAAAA\n", "o\n-1\n", "\n1\n", "o\n1\nAAAA\n", "o\n1\n"] {
            assert!(Checkpoint::parse(text).is_err(), "{text:?}");
        }
        assert_eq!(Checkpoint::parse(&checkpoint().text()).unwrap(), checkpoint());
    }

    #[test]
    fn the_origin_is_the_console_address_and_log() {
        let url = |u: &str| url::Url::parse(u).unwrap();
        assert_eq!(origin_of(&url("https://pay.example.com/")), "pay.example.com/log");
        assert_eq!(origin_of(&url("http://localhost:3917")), "localhost:3917/log");
        assert_eq!(origin_of(&url("https://example.com/countersign/")), "example.com/countersign/log");
    }
}
