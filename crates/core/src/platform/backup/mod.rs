//! Backups and restores (docs/DEPLOY.md "Backup and restore").
//!
//! A backup is one [age](https://age-encryption.org/v1) file, encrypted to
//! a passphrase (scrypt) or to X25519 recipients (`age1…`), holding a tar:
//! `manifest.json` first, then `countersign.db` (SQLite only: a consistent
//! online copy, `VACUUM INTO`) and `keys/…` (the token, receipt and log
//! note keys: without them no token can be checked and no checkpoint
//! signed). The manifest names each file with its SHA-256, the audit
//! entries and the log's size at the copy.
//!
//! A restore trusts nothing it is handed: it decrypts into a staging
//! directory beside the data directory, checks every file against the
//! manifest, opens the database (migrating an older one), verifies the
//! audit chain and the transparency log from scratch, and only then moves
//! the files into an empty data directory. The log is checked against what
//! the operator pinned outside the backup ([`LogPin`]: the log's published
//! verifier key, or a checkpoint kept by a monitor): anyone who knows a
//! recipient can encrypt a backup of an invented history under a note key
//! of their own, which would verify against itself. On PostgreSQL the database is restored with `pg_restore`
//! first (the backup holds the keys only); the restore then checks that
//! database the same way.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::Settings;
use crate::evidence::tlog::note::{NoteSigner, NoteVerifier, NOTE_KEY_FILE};
use crate::store::audit::{self, Verification};
use crate::store::tlog::{self, LogCheck};
use crate::store::{Backend, Db};

/// The manifest's `format`.
pub const FORMAT: &str = "countersign-backup/1";
const MANIFEST: &str = "manifest.json";
const DATABASE: &str = "countersign.db";
const KEYS: &str = "keys";

/// How a backup is encrypted.
pub enum Protection {
    Passphrase(SecretString),
    /// `age1…` X25519 recipients: any of their identities restores it.
    Recipients(Vec<String>),
}

/// How a backup is decrypted.
pub enum Unlock {
    Passphrase(SecretString),
    /// An age identity file (`AGE-SECRET-KEY-1…` lines; `#` comments).
    IdentityFile(PathBuf),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub created_at: String,
    /// `sqlite` (the database is in the backup) or `postgres` (keys only).
    pub backend: String,
    /// Entries of the audit chain in the copied database (0 on PostgreSQL).
    pub audit_entries: i64,
    /// The transparency log's size in the copied database.
    pub log_size: u64,
    /// Each file of the backup and its SHA-256 (hex).
    pub files: BTreeMap<String, String>,
}

/// What a restore checks the backup's transparency log against, known to
/// the operator from outside the backup: the log's published verifier key
/// (`GET /api/v1/log`'s `verifier_key`), a signed checkpoint kept outside
/// (`countersign log monitor`'s file, `GET /api/v1/log/checkpoint`), or
/// both. A restore without either is refused.
#[derive(Debug, Clone, Default)]
pub struct LogPin {
    pub key: Option<NoteVerifier>,
    /// A signed checkpoint note: the restored log must extend it.
    pub checkpoint: Option<String>,
}

/// Why a restore names no pin, and how to give one.
pub const NO_PIN: &str = "name what the restored log must match, from outside the backup: --log-key with the log's \
     published verifier key (GET /api/v1/log, `verifier_key`) or --checkpoint with a signed checkpoint you kept \
     (countersign log monitor's file); the note key inside a backup proves nothing on its own";

/// What a restore checked and put in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    pub manifest: Manifest,
    pub audit_entries: i64,
    pub log_size: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{0}")]
    Refused(String),
    #[error("the backup cannot be decrypted: {0}")]
    Decrypt(String),
    #[error("the backup is damaged or not a Countersign backup: {0}")]
    Damaged(String),
    #[error("the backed-up data does not verify: {0}")]
    Unverified(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Open(#[from] crate::store::OpenError),
}

type Result<T> = std::result::Result<T, BackupError>;

/// Writes an encrypted backup of `settings`' data to `to` (a temporary file
/// renamed into place once complete).
pub async fn backup(settings: &Settings, to: &Path, protection: &Protection, now: &str) -> Result<Manifest> {
    let parent = to.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let staging = tempfile::Builder::new().prefix(".countersign-backup-").tempdir_in(parent)?;
    let backend = settings.backend().map_err(|e| BackupError::Refused(e.to_string()))?;
    let (backend_name, audit_entries, log_size) = match &backend {
        Backend::Sqlite { .. } => {
            let live = settings.database_path();
            if !live.exists() {
                return Err(BackupError::Refused(format!("no database at {}", live.display())));
            }
            let copy_dir = staging.path().join("db");
            crate::store::ensure_private_dir(&copy_dir)?;
            crate::store::snapshot_sqlite(&live, &copy_dir.join(DATABASE))
                .await
                .map_err(crate::store::StoreError::from)?;
            let db = Db::open(&copy_dir).await?;
            let entries = match audit::verify(&db.read).await? {
                Verification::Intact { entries } => entries,
                Verification::Broken { seq, problem } => {
                    tracing::warn!(seq, problem, "backing up a database whose audit trail is broken");
                    -1
                }
            };
            let size = tlog::size(&db.read).await?;
            db.close().await;
            ("sqlite", entries, size)
        }
        Backend::Postgres { .. } => ("postgres", 0, 0),
    };
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    if backend_name == "sqlite" {
        files.push((DATABASE.into(), staging.path().join("db").join(DATABASE)));
    }
    let keys = settings.data_dir.join(KEYS);
    if keys.is_dir() {
        let mut names: Vec<_> = std::fs::read_dir(&keys)?
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        files.extend(names.into_iter().map(|n| (format!("{KEYS}/{n}"), keys.join(&n))));
    }
    let mut digests = BTreeMap::new();
    for (name, path) in &files {
        digests.insert(name.clone(), sha256_file(path)?);
    }
    let manifest = Manifest {
        format: FORMAT.into(),
        created_at: now.to_owned(),
        backend: backend_name.into(),
        audit_entries,
        log_size,
        files: digests,
    };

    let partial = staging.path().join("backup.age");
    {
        let out = std::io::BufWriter::new(create_private(&partial)?);
        let encryptor = match protection {
            Protection::Passphrase(p) => age::Encryptor::with_user_passphrase(p.clone()),
            Protection::Recipients(list) => {
                let parsed = list
                    .iter()
                    .map(|r| {
                        r.parse::<age::x25519::Recipient>()
                            .map_err(|e| BackupError::Refused(format!("recipient `{r}`: {e}")))
                    })
                    .collect::<Result<Vec<_>>>()?;
                age::Encryptor::with_recipients(parsed.iter().map(|r| r as &dyn age::Recipient))
                    .map_err(|e| BackupError::Refused(e.to_string()))?
            }
        };
        let writer = encryptor.wrap_output(out)?;
        let mut tar = tar::Builder::new(writer);
        let manifest_bytes = serde_json::to_vec_pretty(&manifest).expect("a manifest serializes");
        append(&mut tar, MANIFEST, &mut manifest_bytes.as_slice(), manifest_bytes.len() as u64)?;
        for (name, path) in &files {
            let file = std::fs::File::open(path)?;
            let len = file.metadata()?.len();
            append(&mut tar, name, &mut std::io::BufReader::new(file), len)?;
        }
        let writer = tar.into_inner()?;
        writer.finish()?.flush()?;
    }
    std::fs::rename(&partial, to)?;
    Ok(manifest)
}

/// Restores the backup `from` into `settings`' data directory (which must
/// hold no database and no keys), after checking everything in it.
pub async fn restore(settings: &Settings, from: &Path, unlock: &Unlock, pin: &LogPin) -> Result<Restored> {
    if pin.key.is_none() && pin.checkpoint.is_none() {
        return Err(BackupError::Refused(NO_PIN.into()));
    }
    let backend = settings.backend().map_err(|e| BackupError::Refused(e.to_string()))?;
    let target = settings.data_dir.clone();
    let on_sqlite = matches!(backend, Backend::Sqlite { .. });
    if on_sqlite && settings.database_path().exists() {
        return Err(BackupError::Refused(format!(
            "{} already holds a database: restore into an empty data directory (move the old one away first)",
            target.display()
        )));
    }
    let keys = target.join(KEYS);
    if keys.is_dir() && std::fs::read_dir(&keys)?.next().is_some() {
        return Err(BackupError::Refused(format!(
            "{} already holds keys: restore into an empty data directory",
            keys.display()
        )));
    }
    crate::store::ensure_private_dir(&target)?;
    let staging = tempfile::Builder::new().prefix(".countersign-restore-").tempdir_in(&target)?;
    let manifest = unpack(from, unlock, staging.path())?;
    if manifest.backend == "sqlite" && !on_sqlite {
        return Err(BackupError::Refused("this is a SQLite backup; database.url names PostgreSQL".into()));
    }
    if manifest.backend == "postgres" && on_sqlite {
        return Err(BackupError::Refused(
            "this backup holds keys only (PostgreSQL): set database.url to the restored database".into(),
        ));
    }

    // The database: the staged copy (SQLite), or the restored PostgreSQL one.
    let db_dir = staging.path().join("db");
    let db = if on_sqlite {
        crate::store::ensure_private_dir(&db_dir)?;
        std::fs::rename(staging.path().join(DATABASE), db_dir.join(DATABASE))?;
        Db::open(&db_dir).await?
    } else {
        Db::connect(&backend).await?
    };
    let checked = check(&db, &staging.path().join(KEYS), &manifest, pin).await;
    db.close().await;
    let (audit_entries, log_size) = checked?;

    // Everything verified: move it in.
    if on_sqlite {
        std::fs::rename(db_dir.join(DATABASE), settings.database_path())?;
    }
    if keys.exists() {
        std::fs::remove_dir(&keys)?;
    }
    std::fs::rename(staging.path().join(KEYS), &keys)?;
    Ok(Restored { manifest, audit_entries, log_size })
}

/// The audit chain and the transparency log of `db`, against the note key
/// in `keys`, itself checked against `pin`: (entries, log size).
async fn check(db: &Db, keys: &Path, manifest: &Manifest, pin: &LogPin) -> Result<(i64, u64)> {
    let entries = match audit::verify(&db.read).await? {
        Verification::Intact { entries } => entries,
        Verification::Broken { seq, problem } => {
            return Err(BackupError::Unverified(format!("audit trail broken at entry {seq}: {problem}")));
        }
    };
    if manifest.backend == "sqlite" && entries != manifest.audit_entries {
        return Err(BackupError::Unverified(format!(
            "the manifest counts {} audit entries; the database holds {entries}",
            manifest.audit_entries
        )));
    }
    // The log is named by the origin its checkpoints carry (the public URL
    // of the server that signed them, which may differ from this one's):
    // the note key of the backup must have signed them under that name.
    if !keys.join(NOTE_KEY_FILE).exists() {
        return Err(BackupError::Unverified("the backup holds no log note key".into()));
    }
    // The backup's note key, under the name a note gives (the origin of the
    // server that signed it, which may differ from this one's).
    let backup_key = |origin: &str| {
        NoteSigner::open_or_create(keys, origin).map(|s| s.verifier()).map_err(|e| BackupError::Damaged(e.to_string()))
    };
    if let Some(pinned) = &pin.key {
        if backup_key(&pinned.name)?.public_key() != pinned.public_key() {
            return Err(BackupError::Unverified(format!(
                "the backup's log note key is not the pinned key {}: a backup signed by any other key is refused",
                pinned.encoded()
            )));
        }
    }
    let open = |note: &str| {
        let origin = note.lines().next().unwrap_or_default();
        let verifier = backup_key(origin).map_err(|e| e.to_string())?;
        verifier.open(note).map(|c| (c.size, c.root)).map_err(|e| e.to_string())
    };
    let size = match tlog::verify(&db.read, &open).await? {
        LogCheck::Empty => 0,
        LogCheck::Intact { size } => size,
        LogCheck::Broken { problem } => return Err(BackupError::Unverified(format!("transparency log: {problem}"))),
    };
    if let Some(kept) = &pin.checkpoint {
        // Signed by the pinned key (else by the backup's, which a forger
        // cannot make sign it), and the restored log extends it.
        let origin = kept.lines().next().unwrap_or_default();
        let verifier = match &pin.key {
            Some(pinned) => pinned.clone(),
            None => backup_key(origin)?,
        };
        let kept = verifier.open(kept).map_err(|e| {
            BackupError::Unverified(format!("the kept checkpoint does not verify with the backup's log key: {e}"))
        })?;
        if kept.size > size {
            return Err(BackupError::Unverified(format!(
                "the kept checkpoint covers {} entries; the backup's log holds {size}: this backup is older than \
                 the checkpoint, or not of this log",
                kept.size
            )));
        }
        if tlog::root(&db.read, kept.size).await? != Some(kept.root) {
            return Err(BackupError::Unverified(format!(
                "the backup's log has another history than the kept checkpoint at size {}",
                kept.size
            )));
        }
    }
    Ok((entries, size))
}

/// Decrypts and unpacks `from` into `dir`, checking each file against the
/// manifest. Only the manifest, the database and files directly in `keys/`
/// are accepted.
fn unpack(from: &Path, unlock: &Unlock, dir: &Path) -> Result<Manifest> {
    let file = std::io::BufReader::new(std::fs::File::open(from)?);
    let decryptor = age::Decryptor::new_buffered(file).map_err(|e| BackupError::Damaged(e.to_string()))?;
    let reader: Box<dyn Read> = match unlock {
        Unlock::Passphrase(p) => {
            let identity = age::scrypt::Identity::new(p.clone());
            Box::new(decryptor.decrypt(std::iter::once(&identity as &dyn age::Identity)).map_err(decrypt_error)?)
        }
        Unlock::IdentityFile(path) => {
            let text = std::fs::read_to_string(path)?;
            let identities = text
                .lines()
                .map(str::trim)
                .filter(|l| l.starts_with("AGE-SECRET-KEY-"))
                .map(|l| {
                    l.parse::<age::x25519::Identity>().map_err(|e| BackupError::Refused(format!("identity file: {e}")))
                })
                .collect::<Result<Vec<_>>>()?;
            if identities.is_empty() {
                return Err(BackupError::Refused(format!("{} holds no AGE-SECRET-KEY line", path.display())));
            }
            Box::new(decryptor.decrypt(identities.iter().map(|i| i as &dyn age::Identity)).map_err(decrypt_error)?)
        }
    };
    let mut archive = tar::Archive::new(reader);
    let mut manifest: Option<Manifest> = None;
    let mut seen = BTreeMap::new();
    crate::store::ensure_private_dir(&dir.join(KEYS))?;
    for entry in archive.entries().map_err(decrypt_or_damage)? {
        let mut entry = entry.map_err(decrypt_or_damage)?;
        let name = entry.path().map_err(decrypt_or_damage)?.to_string_lossy().into_owned();
        if name == MANIFEST {
            let mut text = Vec::new();
            entry.read_to_end(&mut text)?;
            manifest = Some(serde_json::from_slice(&text).map_err(|e| BackupError::Damaged(format!("manifest: {e}")))?);
            continue;
        }
        let allowed = name == DATABASE
            || name.strip_prefix("keys/").is_some_and(|n| !n.is_empty() && !n.contains('/') && n != ".." && n != ".");
        if !allowed {
            return Err(BackupError::Damaged(format!("unexpected file `{name}`")));
        }
        let path = dir.join(&name);
        let mut out = create_private(&path)?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = entry.read(&mut buf).map_err(decrypt_or_damage)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n])?;
        }
        out.sync_all()?;
        seen.insert(name, hex::encode(hasher.finalize()));
    }
    let manifest = manifest.ok_or_else(|| BackupError::Damaged("no manifest".into()))?;
    if manifest.format != FORMAT {
        return Err(BackupError::Damaged(format!("format `{}`, expected `{FORMAT}`", manifest.format)));
    }
    if seen != manifest.files {
        return Err(BackupError::Damaged("the files do not match the manifest's list and digests".into()));
    }
    Ok(manifest)
}

fn append<W: Write>(tar: &mut tar::Builder<W>, name: &str, data: &mut dyn Read, len: u64) -> std::io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_size(len);
    header.set_mode(0o600);
    header.set_entry_type(tar::EntryType::Regular);
    tar.append_data(&mut header, name, data)
}

fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(hex::encode(hasher.finalize()))
}

/// A new file only its owner can read.
fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)
}

fn decrypt_error(e: age::DecryptError) -> BackupError {
    BackupError::Decrypt(match e {
        age::DecryptError::NoMatchingKeys | age::DecryptError::DecryptionFailed => {
            "wrong passphrase or identity".to_owned()
        }
        other => other.to_string(),
    })
}

/// A read error inside the age stream is a failed authentication: the file
/// was altered after it was written.
fn decrypt_or_damage(e: std::io::Error) -> BackupError {
    BackupError::Damaged(format!("{e} (the file was altered or cut short)"))
}
