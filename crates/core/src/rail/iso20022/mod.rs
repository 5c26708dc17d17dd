//! The bank-file rail: ISO 20022 files exchanged with a bank through two
//! folders an operator's file transfer (SFTP, an EBICS client) keeps in
//! sync with it (docs/DEPLOY.md, "Paying with bank files").
//!
//! - **Submit** records the payment in the rail's ledger (`bank_payments`,
//!   keyed by the idempotency key: the same order twice is one payment)
//!   and answers `accepted`: the money has not moved.
//! - **Sync** (before each reconciliation pass) writes the payments not yet
//!   sent as one `pain.001.001.09` file per batch in the outbox (end-to-end
//!   id = the operation id; written to a temporary name, synced, renamed),
//!   then reads every new document in the inbox: `pain.002` status reports
//!   accept or reject payments, `camt.053`/`camt.054` statements book them.
//! - **Read status** is the ledger: a payment is paid only once a statement
//!   has booked it for the amount sent — never on silence, never on a
//!   status report alone. A rejection carries the bank's reason code.
//! - **Reverse**: a booked credit transfer is not pulled back through a
//!   file (a recall needs the payee's bank and consent): `too_late`, and
//!   operations act with the bank.
//!
//! What the bank sends that does not fit — a document this rail cannot
//! read, the same document twice, an end-to-end id it never sent, a booking
//! of another amount than was sent — is recorded with the document
//! (`bank_documents.problems`), in the audit trail (`rail.document.*`) and
//! on the console's operations page; a booking of another amount settles
//! nothing (the operation goes to a human as `rail_record_mismatch`).

pub mod beneficiaries;
mod documents;
pub mod fields;
pub mod pain001;
pub mod reports;

use chrono::{DateTime, Utc};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{
    CreateOutcome, Decline, Lookup, Rail, RailKind, RailProfile, RailReversal, RailStatus, RailTransfer, Refusal,
    ReversalOutcome, TransferOrder, UnknownCause,
};
use crate::config::rails::BankFileRail as Settings;
use crate::domain::Currency;
use crate::store::bank::{self, status, DocumentRow, PaymentRow};
use crate::store::Db;
use beneficiaries::{Directory, DirectoryError};
pub use documents::{Problem, Received};

/// A bank-file rail.
pub struct BankFiles {
    name: String,
    /// The tenant it pays for (a bank-file rail is one debtor account).
    tenant: Option<String>,
    settings: Settings,
    db: Db,
    clock: crate::platform::clock::SystemClock,
    directory: Mutex<Loaded>,
    /// One sync at a time in this process.
    syncing: tokio::sync::Mutex<()>,
}

struct Loaded {
    modified: Option<std::time::SystemTime>,
    directory: Arc<Directory>,
}

/// Why a sync could not finish (logged; the next pass tries again).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("the outbox or inbox folder cannot be used: {0}")]
    Folder(#[source] std::io::Error),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Directory(#[from] DirectoryError),
    #[error("payment {0} of a batch has no bank details in the beneficiaries file any more")]
    MissingBeneficiary(String),
}

impl BankFiles {
    /// The rail `name`, paying for `tenant`. Reads the beneficiaries file
    /// now: a bad one stops the start with its position and key.
    pub fn new(
        name: &str,
        tenant: Option<String>,
        settings: Settings,
        db: Db,
        clock: crate::platform::clock::SystemClock,
    ) -> Result<BankFiles, DirectoryError> {
        let modified = std::fs::metadata(&settings.beneficiaries).and_then(|m| m.modified()).ok();
        let directory = Arc::new(Directory::load(&settings.beneficiaries)?);
        Ok(BankFiles {
            name: name.to_owned(),
            tenant,
            settings,
            db,
            clock,
            directory: Mutex::new(Loaded { modified, directory }),
            syncing: tokio::sync::Mutex::new(()),
        })
    }

    /// The beneficiaries, read again when the file changed (a bad new file
    /// keeps the last good one, and says so in the log).
    fn directory(&self) -> Arc<Directory> {
        let mut loaded = self.directory.lock().expect("directory lock");
        let modified = std::fs::metadata(&self.settings.beneficiaries).and_then(|m| m.modified()).ok();
        if modified.is_some() && modified != loaded.modified {
            match Directory::load(&self.settings.beneficiaries) {
                Ok(d) => *loaded = Loaded { modified, directory: Arc::new(d) },
                Err(e) => {
                    tracing::error!(rail = %self.name, error = %e, "beneficiaries file refused; keeping the last good one");
                    loaded.modified = modified;
                }
            }
        }
        loaded.directory.clone()
    }

    fn tenant(&self) -> &str {
        self.tenant.as_deref().unwrap_or("")
    }

    /// Whether the outbox folder is there and takes a file.
    fn outbox_writable(&self) -> bool {
        let probe = self.settings.outbox.join(".countersign-probe");
        let ok = std::fs::write(&probe, b"").is_ok();
        let _ = std::fs::remove_file(&probe);
        ok
    }

    /// Writes the batches due: first any batch assigned and not written
    /// (an earlier pass stopped between the two), then, when the cut is
    /// due, one new batch of every payment not yet in one. Returns the
    /// files written.
    pub async fn cut(&self, now: DateTime<Utc>) -> Result<Vec<String>, SyncError> {
        let mut written = Vec::new();
        for batch in bank::unwritten_batches(&self.db.read, &self.name).await? {
            self.write_or_hold(&batch.id, &batch.file_name, batch.created_at, now, &mut written).await?;
        }
        let every = chrono::Duration::seconds(self.settings.cut_every_secs as i64);
        let last = bank::last_batch_at(&self.db.read, &self.name).await?;
        if last.is_some_and(|at| now < at + every) {
            return Ok(written);
        }
        let keys = bank::unbatched(&self.db.read, &self.name, 5_000).await?;
        if keys.is_empty() {
            return Ok(written);
        }
        let id = crate::domain::ids::time_ordered_id("csb", now.timestamp_millis().max(0) as u64, rand::random());
        let file_name = format!("pain.001.001.09-{id}.xml");
        let mut tx = self.db.begin().await?;
        let taken = bank::assign_batch(&mut tx, &self.name, &id, &file_name, &keys, now).await?;
        tx.commit().await?;
        if taken > 0 {
            self.write_or_hold(&id, &file_name, now, now, &mut written).await?;
        }
        Ok(written)
    }

    /// [`BankFiles::write_batch`]; a batch that cannot be written because a
    /// payee's details left the beneficiaries file holds only itself back
    /// (logged: the next pass tries again).
    async fn write_or_hold(
        &self,
        id: &str,
        file_name: &str,
        created: DateTime<Utc>,
        now: DateTime<Utc>,
        written: &mut Vec<String>,
    ) -> Result<(), SyncError> {
        match self.write_batch(id, file_name, created, now).await {
            Ok(file) => written.push(file),
            Err(SyncError::MissingBeneficiary(e2e)) => tracing::error!(
                rail = %self.name, batch = id, end_to_end_id = %e2e,
                "bank file not written: a payee of the batch has no bank details any more; restore them"
            ),
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// Writes batch `id`'s file (the same bytes every time) and marks its
    /// payments sent.
    async fn write_batch(
        &self,
        id: &str,
        file_name: &str,
        created: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<String, SyncError> {
        let rows = bank::batch_payments(&self.db.read, &self.name, id).await?;
        let directory = self.directory();
        let debtor = pain001::Debtor {
            name: self.settings.debtor_name.clone(),
            iban: self.settings.debtor_iban.clone(),
            bic: self.settings.debtor_bic.clone(),
        };
        let mut payments = Vec::with_capacity(rows.len());
        for row in &rows {
            let creditor = directory
                .get(&row.destination)
                .ok_or_else(|| SyncError::MissingBeneficiary(row.end_to_end_id.clone()))?;
            let exponent = Currency::parse(&row.currency).map(|c| u32::from(c.exponent())).unwrap_or(2);
            payments.push(pain001::Payment {
                end_to_end_id: &row.end_to_end_id,
                amount_minor: row.amount_minor,
                currency: &row.currency,
                exponent,
                creditor,
                reference: &row.reference,
            });
        }
        let xml = pain001::write(&pain001::Batch {
            message_id: id,
            created,
            execution_date: created.date_naive(),
            debtor: &debtor,
            payments,
        });
        let sha = sha256(xml.as_bytes());
        write_atomically(&self.settings.outbox, file_name, xml.as_bytes()).map_err(SyncError::Folder)?;
        let mut tx = self.db.begin().await?;
        bank::mark_written(&mut tx, &self.name, id, &sha, now).await?;
        tx.commit().await?;
        tracing::info!(rail = %self.name, batch = id, payments = rows.len(), "bank file written");
        Ok(file_name.to_owned())
    }

    /// Reads every document in the inbox not read before, oldest name first.
    pub async fn ingest(&self, now: DateTime<Utc>) -> Result<Vec<Received>, SyncError> {
        let mut names: Vec<String> = std::fs::read_dir(&self.settings.inbox)
            .map_err(SyncError::Folder)?
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| !n.starts_with('.'))
            .collect();
        names.sort();
        let known = bank::document_files(&self.db.read, &self.name).await?;
        let mut done = Vec::new();
        for name in names.into_iter().filter(|n| !known.contains(n)) {
            let path = self.settings.inbox.join(&name);
            let too_large = std::fs::metadata(&path).map(|m| m.len() > 16 * 1024 * 1024).unwrap_or(false);
            let bytes = if too_large { Vec::new() } else { std::fs::read(&path).map_err(SyncError::Folder)? };
            done.push(self.receive(&name, &bytes, too_large, now).await?);
        }
        Ok(done)
    }

    /// The transfer a ledger row shows, with the document that settled it.
    async fn transfer_of(&self, row: PaymentRow) -> Result<RailTransfer, UnknownCause> {
        let evidence = match &row.document_id {
            Some(id) if matches!(row.status.as_str(), status::BOOKED | status::MISMATCH | status::REJECTED) => {
                bank::document(&self.db.read, id).await.map_err(|_| UnknownCause::Connection)?.map(|d| describe(&d))
            }
            _ => None,
        };
        let (status, amount, currency) = match row.status.as_str() {
            status::BOOKED | status::MISMATCH => (
                RailStatus::Paid,
                row.booked_amount_minor.unwrap_or(row.amount_minor),
                row.booked_currency.clone().unwrap_or_else(|| row.currency.clone()),
            ),
            status::REJECTED => (RailStatus::Failed, row.amount_minor, row.currency.clone()),
            _ => (RailStatus::Pending, row.amount_minor, row.currency.clone()),
        };
        let failure = (status == RailStatus::Failed).then(|| rejection(row.reason_code.as_deref().unwrap_or("NARR")));
        Ok(RailTransfer {
            id: row.end_to_end_id,
            amount_minor: amount,
            currency,
            destination: row.destination,
            transfer_group: Some(row.idempotency_key),
            status,
            amount_reversed: 0,
            created: Some(row.created_at),
            evidence,
            failure,
        })
    }
}

/// A document, as the audit trail and the console name it.
pub fn describe(d: &DocumentRow) -> String {
    format!(
        "{} {} (file {}, received {})",
        d.kind,
        d.message_id.as_deref().unwrap_or("?"),
        d.file_name,
        d.received_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    )
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

fn exponent(currency: &str) -> u32 {
    Currency::parse(currency).map(|c| u32::from(c.exponent())).unwrap_or(2)
}

/// The bank's reason code (ISO 20022 external status reason codes), in
/// the refusal's words.
pub fn rejection(code: &str) -> Refusal {
    let (decline, reason) = match code {
        "AC01" => (Decline::RailRejected, "The bank rejected the payment: incorrect account number (AC01)."),
        "AC04" => (Decline::DestinationClosed, "The bank rejected the payment: the account is closed (AC04)."),
        "AC06" => (Decline::DestinationClosed, "The bank rejected the payment: the account is blocked (AC06)."),
        "AG01" => {
            (Decline::RailRejected, "The bank rejected the payment: transaction forbidden on this account (AG01).")
        }
        "AM02" => (Decline::LimitExceeded, "The bank rejected the payment: the amount exceeds what is allowed (AM02)."),
        "AM04" => (Decline::InsufficientFunds, "The bank rejected the payment: insufficient funds (AM04)."),
        "AM05" => (Decline::RailRejected, "The bank rejected the payment as a duplicate (AM05)."),
        "BE04" => (Decline::RailRejected, "The bank rejected the payment: the creditor's address is missing (BE04)."),
        "FF01" => (Decline::RailRejected, "The bank rejected the file: invalid file format (FF01)."),
        "MS02" => (Decline::RailRejected, "The bank rejected the payment: refused by the payee (MS02)."),
        "MS03" => (Decline::RailRejected, "The bank rejected the payment: reason not specified (MS03)."),
        "RC01" => (Decline::RailRejected, "The bank rejected the payment: incorrect bank identifier (RC01)."),
        "RR04" => (Decline::RailRejected, "The bank rejected the payment for regulatory reasons (RR04)."),
        _ => (Decline::RailRejected, "The bank rejected the payment (a reason code this rail does not know)."),
    };
    Refusal::new(decline, reason)
}

/// Writes `bytes` to `dir/name` so that the file appears whole or not at
/// all: a temporary name, synced, renamed, and the folder synced.
fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp: PathBuf = dir.join(format!(".{name}.tmp"));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, dir.join(name))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[async_trait::async_trait]
impl Rail for BankFiles {
    fn profile(&self) -> RailProfile {
        RailProfile {
            kind: RailKind::Iso20022,
            // The ledger recognises a key for ever: resubmitting is always safe.
            resubmit_window: chrono::Duration::days(3650),
            reverses: false,
        }
    }

    async fn create_transfer(&self, order: &TransferOrder<'_>) -> CreateOutcome {
        let refuse = |why| CreateOutcome::Declined(Refusal::new(Decline::RailRejected, why));
        if order.operation_id.is_empty() || order.operation_id.len() > 35 || order.idempotency_key.is_empty() {
            return refuse("The bank-file rail needs an end-to-end id of 1 to 35 characters.");
        }
        if self.directory().get(order.destination).is_none() {
            return refuse("The bank-file rail has no bank details for this payee (its beneficiaries file).");
        }
        if Currency::parse(order.currency).is_err() {
            return refuse("The bank-file rail does not know this currency.");
        }
        if !self.outbox_writable() {
            tracing::warn!(rail = %self.name, "bank outbox not writable: nothing recorded");
            return CreateOutcome::Unknown(UnknownCause::Connection);
        }
        let now = self.clock.now();
        let new = bank::NewPayment {
            rail: &self.name,
            idempotency_key: order.idempotency_key,
            end_to_end_id: order.operation_id,
            tenant_id: self.tenant(),
            amount_minor: order.amount_minor,
            currency: order.currency,
            destination: order.destination,
            reference: order.reference,
            now,
        };
        let recorded = async {
            let mut tx = self.db.begin().await?;
            let row = bank::record_payment(&mut tx, &new).await?;
            tx.commit().await?;
            Ok::<_, crate::store::StoreError>(row)
        }
        .await;
        let row = match recorded {
            Ok(row) => row,
            Err(e) => {
                tracing::error!(rail = %self.name, error = %e, "bank ledger write failed");
                return CreateOutcome::Unknown(UnknownCause::Connection);
            }
        };
        if row.amount_minor != order.amount_minor
            || row.currency != order.currency
            || row.destination != order.destination
            || row.end_to_end_id != order.operation_id
        {
            tracing::error!(rail = %self.name, "an idempotency key names another payment in the bank ledger");
            return CreateOutcome::Unknown(UnknownCause::BadResponse);
        }
        if self.settings.cut_every_secs == 0 {
            if let Err(e) = self.cut(now).await {
                tracing::warn!(rail = %self.name, error = %e, "bank file not written yet; the next pass writes it");
            }
        }
        match self.transfer_of(row).await {
            Ok(t) => CreateOutcome::Accepted(t),
            Err(cause) => CreateOutcome::Unknown(cause),
        }
    }

    async fn find(&self, lookup: &Lookup<'_>) -> Result<Vec<RailTransfer>, UnknownCause> {
        let row =
            bank::payment_by_key(&self.db.read, &self.name, lookup.key).await.map_err(|_| UnknownCause::Connection)?;
        match row {
            Some(row) => Ok(vec![self.transfer_of(row).await?]),
            None => Ok(Vec::new()),
        }
    }

    async fn get_transfer(&self, id: &str) -> Result<Option<RailTransfer>, UnknownCause> {
        let row =
            bank::payment_by_end_to_end(&self.db.read, &self.name, id).await.map_err(|_| UnknownCause::Connection)?;
        match row {
            Some(row) => Ok(Some(self.transfer_of(row).await?)),
            None => Ok(None),
        }
    }

    async fn list_since(&self, since: DateTime<Utc>, limit: usize) -> Result<Vec<RailTransfer>, UnknownCause> {
        let rows = bank::payments_since(&self.db.read, &self.name, since, limit)
            .await
            .map_err(|_| UnknownCause::Connection)?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            out.push(self.transfer_of(row).await?);
        }
        Ok(out)
    }

    async fn reversals_of(&self, _transfer_id: &str) -> Result<Vec<RailReversal>, UnknownCause> {
        Ok(Vec::new())
    }

    async fn reverse(&self, transfer_id: &str, _key: &str, _amount: Option<u64>) -> ReversalOutcome {
        match bank::payment_by_end_to_end(&self.db.read, &self.name, transfer_id).await {
            Err(_) => ReversalOutcome::Unknown(UnknownCause::Connection),
            Ok(Some(row)) if matches!(row.status.as_str(), status::BOOKED | status::MISMATCH) => {
                ReversalOutcome::TooLate
            }
            Ok(_) => ReversalOutcome::Declined(Refusal::new(
                Decline::RailRejected,
                "Only a transfer a bank statement booked can be reversed, and then only by the bank (a recall).",
            )),
        }
    }

    async fn sync(&self) -> Result<(), UnknownCause> {
        let _one = self.syncing.lock().await;
        let now = self.clock.now();
        let cut = self.cut(now).await;
        let read = self.ingest(now).await;
        let mut failed = false;
        for (what, e) in [("write", cut.err()), ("read", read.err())] {
            if let Some(e) = e {
                tracing::error!(rail = %self.name, what, error = %e, "bank sync failed; the next pass tries again");
                failed = true;
            }
        }
        if failed {
            return Err(UnknownCause::Connection);
        }
        Ok(())
    }
}
