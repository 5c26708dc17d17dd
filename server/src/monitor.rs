//! `countersign log monitor`: watches a deployment's transparency log from
//! outside. It keeps the last checkpoint it accepted in a file; each run
//! fetches the newest, checks its signature, and proves it extends the kept
//! one (a consistency proof, RFC 9162 section 2.1.4.2) before keeping it. A
//! smaller tree, another root at the same size, a proof that fails or a new
//! note key is reported loudly and the kept checkpoint is left as it was.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use std::path::Path;

use crate::evidence::tlog::merkle::{self, Hash};
use crate::evidence::tlog::note::{Checkpoint, NoteError, NoteVerifier};

/// What a run found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// No checkpoint was kept: this one is now (trust on first use, unless
    /// a key was pinned).
    First { size: u64 },
    /// The same tree as last time.
    Same { size: u64 },
    /// The tree grew and extends the kept one.
    Grew { from: u64, to: u64 },
}

#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    #[error("LOG FORK: {0}")]
    Fork(String),
    #[error("LOG SHRANK: the log now has {now} leaves, the kept checkpoint {kept}")]
    Shrank { kept: u64, now: u64 },
    #[error("LOG KEY CHANGED: {0}")]
    KeyChanged(String),
    #[error("cannot read the log: {0}")]
    Fetch(String),
    #[error("{0}")]
    Checkpoint(#[from] NoteError),
    #[error("cannot use {path}: {message}")]
    File { path: String, message: String },
}

impl MonitorError {
    /// A finding about the log itself (exit 2), not a failure to look (1).
    pub fn is_alarm(&self) -> bool {
        matches!(self, MonitorError::Fork(_) | MonitorError::Shrank { .. } | MonitorError::KeyChanged(_))
    }
}

#[derive(serde::Deserialize)]
struct LogInfo {
    verifier_key: String,
}

#[derive(serde::Deserialize)]
struct Proof {
    hashes: Vec<String>,
}

async fn get(http: &reqwest::Client, url: String) -> Result<reqwest::Response, MonitorError> {
    let response = http.get(&url).send().await.map_err(|e| MonitorError::Fetch(format!("{url}: {e}")))?;
    if !response.status().is_success() {
        return Err(MonitorError::Fetch(format!("{url}: HTTP {}", response.status())));
    }
    Ok(response)
}

fn decode_hashes(hashes: &[String]) -> Result<Vec<Hash>, MonitorError> {
    hashes
        .iter()
        .map(|h| STANDARD.decode(h).ok().and_then(|b| b.try_into().ok()))
        .collect::<Option<Vec<Hash>>>()
        .ok_or_else(|| MonitorError::Fetch("a proof hash is not 32 bytes of base64".into()))
}

/// One look at the log at `base_url`, against the checkpoint kept in
/// `file` (written there when the look succeeds). With `pinned`, the log's
/// key must be that verifier key.
pub async fn check(base_url: &str, file: &Path, pinned: Option<&str>) -> Result<Seen, MonitorError> {
    let base = base_url.trim_end_matches('/');
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| MonitorError::Fetch(e.to_string()))?;
    let info: LogInfo = get(&http, format!("{base}/api/v1/log"))
        .await?
        .json()
        .await
        .map_err(|e| MonitorError::Fetch(format!("{base}/api/v1/log: {e}")))?;
    let verifier = NoteVerifier::parse(&info.verifier_key)?;
    if let Some(pinned) = pinned {
        if NoteVerifier::parse(pinned)? != verifier {
            return Err(MonitorError::KeyChanged(format!(
                "the log publishes {}, not the pinned key",
                info.verifier_key
            )));
        }
    }
    let note = get(&http, format!("{base}/api/v1/log/checkpoint"))
        .await?
        .text()
        .await
        .map_err(|e| MonitorError::Fetch(e.to_string()))?;
    let now = verifier.open(&note)?;

    let file_error =
        |e: std::io::Error| MonitorError::File { path: file.display().to_string(), message: e.to_string() };
    let kept = match std::fs::read_to_string(file) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(file_error(e)),
    };
    let seen = match kept {
        None => Seen::First { size: now.size },
        Some(text) => {
            let kept = match verifier.open(&text) {
                Ok(kept) => kept,
                Err(NoteError::NotSigned(_)) => {
                    return Err(MonitorError::KeyChanged(format!(
                        "the kept checkpoint is not signed by the log's key now ({})",
                        info.verifier_key
                    )))
                }
                Err(e) => return Err(e.into()),
            };
            compare(&http, base, &kept, &now).await?
        }
    };
    write_atomically(file, &note).map_err(file_error)?;
    Ok(seen)
}

/// Whether `now` extends `kept`.
async fn compare(
    http: &reqwest::Client,
    base: &str,
    kept: &Checkpoint,
    now: &Checkpoint,
) -> Result<Seen, MonitorError> {
    if now.size < kept.size {
        return Err(MonitorError::Shrank { kept: kept.size, now: now.size });
    }
    if now.size == kept.size {
        if now.root != kept.root {
            return Err(MonitorError::Fork(format!("two roots for size {}", now.size)));
        }
        return Ok(Seen::Same { size: now.size });
    }
    let proof: Proof =
        get(http, format!("{base}/api/v1/log/proofs/consistency?first={}&second={}", kept.size, now.size))
            .await?
            .json()
            .await
            .map_err(|e| MonitorError::Fetch(e.to_string()))?;
    let proof = decode_hashes(&proof.hashes)?;
    if !merkle::verify_consistency(kept.size, now.size, &proof, &kept.root, &now.root) {
        return Err(MonitorError::Fork(format!(
            "the tree of {} leaves does not extend the kept one of {} (the consistency proof fails)",
            now.size, kept.size
        )));
    }
    Ok(Seen::Grew { from: kept.size, to: now.size })
}

fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{:08x}", rand::random::<u32>()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}
