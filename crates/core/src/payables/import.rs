//! Invoices from an accounting export: a CSV file with a header row.
//!
//! | column | rule |
//! |---|---|
//! | `number` | required; 1–64 of `A-Z a-z 0-9 _ -` (what a payment's `invoice_id` names) |
//! | `vendor` | required; the vendor's legal name, which must be the payee's |
//! | `account` | required; the payee id it is owed to (a payee of the tenant's registry) |
//! | `amount` | required; in major units (`1250.00`, `1,250.00`), > 0, within the currency's cap |
//! | `currency` | required; an ISO 4217 code the deployment accepts |
//! | `due_date` | required; `YYYY-MM-DD` |
//! | `status` | required; `open`, `partially_paid`, `paid` or `void` |
//! | `amount_paid` | optional; paid before Countersign, in major units, at most the amount |
//! | `purpose` | optional; `vendor` (default), `payroll`, `refund`, `disbursement` |
//! | `note`, `memo` | optional; free text from outside, kept as untrusted data (at most 1000 characters) |
//!
//! Column names are matched without regard to case; other columns are
//! ignored and listed in the answer. Every bad row is reported with its
//! line and column, and then nothing is imported: the whole file is one
//! transaction. An invoice already registered (same account and number) is
//! updated: what was paid only ever grows (the larger of the file's
//! `amount_paid` and what is known), and an update that would owe less than
//! is paid or held by a payment in flight is refused for that row.

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};

use crate::config::Config;
use crate::domain::{Currency, InvoiceId, PayeeId, PurposeCode};
use crate::store::invoices::{InvoiceRow, NewInvoice};
use crate::store::{self, audit::AuditEntry, Store};

/// The most rows one file may hold.
pub const MAX_ROWS: usize = 10_000;
/// The largest file accepted, in bytes.
pub const MAX_BYTES: usize = 5 * 1024 * 1024;
/// The longest note or memo kept.
const MAX_TEXT: usize = 1_000;

const REQUIRED: [&str; 7] = ["number", "vendor", "account", "amount", "currency", "due_date", "status"];
const OPTIONAL: [&str; 4] = ["amount_paid", "purpose", "note", "memo"];

/// One bad row (or the header, line 1): where, which column, why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct RowError {
    /// The line in the file (1 is the header).
    pub line: u64,
    /// The column, when the problem is one field's.
    #[schema(required = true)]
    pub column: Option<String>,
    pub message: String,
}

/// Why nothing was imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file or some of its rows: every problem found.
    #[error("the file has {} problem(s)", .0.len())]
    Rows(Vec<RowError>),
    /// A payment moved an invoice of the file while it was imported.
    #[error("an invoice changed while the file was imported (a payment moved): nothing was imported; import it again")]
    Raced,
    #[error("no such tenant")]
    UnknownTenant,
    #[error(transparent)]
    Store(#[from] store::StoreError),
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct ImportReport {
    #[schema(pattern = "^imp_")]
    pub id: String,
    pub created: u64,
    pub updated: u64,
    pub unchanged: u64,
    /// Columns of the file that are not invoice fields (not read).
    pub ignored_columns: Vec<String>,
}

/// One row, read and checked.
#[derive(Debug, Clone)]
struct Record {
    line: u64,
    number: InvoiceId,
    vendor: String,
    account: PayeeId,
    amount_minor: u64,
    currency: Currency,
    due_date: String,
    status: &'static str,
    paid_minor: u64,
    purpose: PurposeCode,
    note: Option<String>,
    memo: Option<String>,
}

/// The tenant's payees as the import checks accounts against them:
/// legal name, and the account that replaced it, if one did.
pub type Payees = HashMap<String, (String, Option<String>)>;

fn text_problem(s: &str, max: usize) -> Option<String> {
    if s.chars().count() > max {
        return Some(format!("must be at most {max} characters"));
    }
    if s.chars().any(|c| c != '\n' && c != '\t' && crate::domain::is_unsafe_in_text(c)) {
        return Some("must not contain control or bidirectional formatting characters".into());
    }
    None
}

/// Reads and checks the file: the rows, the ignored columns, or every
/// problem. `payees`: the tenant's registry; `caps`: the deployment's
/// currencies.
fn read(
    bytes: &[u8],
    payees: &Payees,
    caps: &crate::domain::CurrencyRules,
) -> Result<(Vec<Record>, Vec<String>), Vec<RowError>> {
    let whole = |message: String| vec![RowError { line: 1, column: None, message }];
    if bytes.len() > MAX_BYTES {
        return Err(whole(format!("the file is larger than {} MiB", MAX_BYTES / 1024 / 1024)));
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(whole("the file is not UTF-8 text".into()));
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut reader = csv::ReaderBuilder::new().has_headers(true).flexible(false).from_reader(text.as_bytes());
    let headers: Vec<String> = match reader.headers() {
        Ok(h) => h.iter().map(|c| c.trim().to_ascii_lowercase()).collect(),
        Err(_) => return Err(whole("the first line must name the columns (number, vendor, account, …)".into())),
    };
    let mut problems = Vec::new();
    let mut column = HashMap::new();
    for (i, name) in headers.iter().enumerate() {
        if column.insert(name.clone(), i).is_some() {
            problems.push(RowError { line: 1, column: Some(name.clone()), message: "is named twice".into() });
        }
    }
    for name in REQUIRED {
        if !column.contains_key(name) {
            problems.push(RowError { line: 1, column: Some(name.into()), message: "is a required column".into() });
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let ignored: Vec<String> = headers
        .iter()
        .filter(|h| !REQUIRED.contains(&h.as_str()) && !OPTIONAL.contains(&h.as_str()))
        .cloned()
        .collect();
    let mut records = Vec::new();
    let mut seen: HashMap<(String, String), u64> = HashMap::new();
    for (n, result) in reader.records().enumerate() {
        let line = n as u64 + 2;
        if records.len() + problems.len() >= MAX_ROWS {
            problems.push(RowError { line, column: None, message: format!("more than {MAX_ROWS} rows") });
            break;
        }
        let row = match result {
            Ok(row) => row,
            Err(e) => {
                let line = e.position().map_or(line, |p| p.line());
                let message = match e.kind() {
                    csv::ErrorKind::UnequalLengths { expected_len, len, .. } => {
                        format!("has {len} fields where the header names {expected_len}")
                    }
                    _ => "cannot be read as CSV".into(),
                };
                problems.push(RowError { line, column: None, message });
                continue;
            }
        };
        let mut bad = |col: &str, message: String| {
            problems.push(RowError { line, column: Some(col.into()), message });
        };
        let get = |name: &str| column.get(name).and_then(|i| row.get(*i)).map(str::trim).unwrap_or("");
        let number = match InvoiceId::parse(get("number")) {
            Ok(n) => Some(n),
            Err(_) => {
                bad("number", "must be 1 to 64 letters, digits, - or _".into());
                None
            }
        };
        let vendor = get("vendor").to_owned();
        if vendor.is_empty() {
            bad("vendor", "is required".into());
        } else if let Some(why) = text_problem(&vendor, 200) {
            bad("vendor", why);
        }
        let account = match PayeeId::parse(get("account")) {
            Ok(id) => {
                match payees.get(id.expose()) {
                    None => {
                        bad("account", format!("{} is not a payee of this tenant", id.masked()));
                        None
                    }
                    Some((_, Some(successor))) => {
                        bad(
                            "account",
                            format!(
                                "{} was replaced by {}: its invoices are owed to the new account",
                                id.masked(),
                                crate::domain::mask_account(successor)
                            ),
                        );
                        None
                    }
                    Some((legal, None)) => {
                        if !vendor.is_empty() && !crate::payables::same_name(&vendor, legal) {
                            bad(
                            "vendor",
                            format!("\u{201c}{vendor}\u{201d} is not the legal name of payee {} (\u{201c}{legal}\u{201d})", id.masked()),
                        );
                        }
                        Some(id)
                    }
                }
            }
            Err(_) => {
                bad("account", "must be a payee id (acct_…, card_… or ba_…)".into());
                None
            }
        };
        let currency = match Currency::parse(&get("currency").to_ascii_uppercase()) {
            Ok(c) if caps.cap(c).is_some() => Some(c),
            _ => {
                bad("currency", "is not a currency this deployment accepts".into());
                None
            }
        };
        let amount = currency.and_then(|c| match c.parse_major(get("amount")) {
            Ok(0) => {
                bad("amount", "must be greater than zero".into());
                None
            }
            Ok(a) if a > caps.cap(c).unwrap_or(0) => {
                bad("amount", format!("is above the cap of {}", c.format_minor(caps.cap(c).unwrap_or(0))));
                None
            }
            Ok(a) => Some(a),
            Err(e) => {
                bad("amount", e.to_string());
                None
            }
        });
        let due_date = match NaiveDate::parse_from_str(get("due_date"), "%Y-%m-%d") {
            Ok(d) => Some(d.format("%Y-%m-%d").to_string()),
            Err(_) => {
                bad("due_date", "must be a date as YYYY-MM-DD".into());
                None
            }
        };
        let paid_text = get("amount_paid");
        let paid = match (currency, paid_text.is_empty()) {
            (_, true) => Some(0),
            (Some(c), false) => match c.parse_major(paid_text) {
                Ok(p) => Some(p),
                Err(e) => {
                    bad("amount_paid", e.to_string());
                    None
                }
            },
            (None, false) => None,
        };
        let status_text = get("status").to_ascii_lowercase();
        let (status, paid) = match (status_text.as_str(), amount, paid) {
            (_, Some(a), Some(p)) if p > a => {
                bad("amount_paid", "is more than the amount".into());
                ("open", None)
            }
            ("open" | "partially_paid", Some(a), Some(p)) if p == a => {
                bad("status", "says unpaid, but amount_paid is the whole amount: say paid".into());
                ("open", None)
            }
            ("partially_paid", _, Some(0)) => {
                bad("amount_paid", "is required for a partially paid invoice".into());
                ("open", None)
            }
            ("open" | "partially_paid", _, p) => ("open", p),
            ("paid", a, _) => ("paid", a),
            ("void", _, p) => ("void", p),
            _ => {
                bad("status", "must be open, partially_paid, paid or void".into());
                ("open", None)
            }
        };
        let purpose = match get("purpose") {
            "" => Some(PurposeCode::Vendor),
            p => match PurposeCode::parse(&p.to_ascii_lowercase()) {
                Ok(p) => Some(p),
                Err(e) => {
                    bad("purpose", e.to_string());
                    None
                }
            },
        };
        let mut optional_text = |name: &str| {
            let value = get(name);
            if value.is_empty() {
                return None;
            }
            if let Some(why) = text_problem(value, MAX_TEXT) {
                bad(name, why);
                return None;
            }
            Some(value.to_owned())
        };
        let (note, memo) = (optional_text("note"), optional_text("memo"));
        if let (Some(number), Some(account)) = (&number, &account) {
            let key = (account.expose().to_owned(), number.as_str().to_owned());
            if let Some(first) = seen.insert(key, line) {
                problems.push(RowError {
                    line,
                    column: Some("number".into()),
                    message: format!("the same invoice (account and number) as line {first}"),
                });
                continue;
            }
        }
        if let (
            Some(number),
            Some(account),
            Some(amount_minor),
            Some(currency),
            Some(due_date),
            Some(paid),
            Some(purpose),
        ) = (number, account, amount, currency, due_date, paid, purpose)
        {
            records.push(Record {
                line,
                number,
                vendor,
                account,
                amount_minor,
                currency,
                due_date,
                status,
                paid_minor: paid,
                purpose,
                note,
                memo,
            });
        }
    }
    if problems.is_empty() && records.is_empty() {
        return Err(whole("the file holds no invoice".into()));
    }
    if problems.is_empty() {
        Ok((records, ignored))
    } else {
        problems.sort_by_key(|p| p.line);
        Err(problems)
    }
}

/// What an existing invoice becomes: the row to write, or why not.
fn merged<'a>(
    r: &'a Record,
    existing: &InvoiceRow,
    tenant: &'a str,
    id: &'a str,
    now: DateTime<Utc>,
) -> Result<NewInvoice<'a>, String> {
    let paid = r.paid_minor.max(existing.paid_minor);
    if existing.currency != r.currency.code() && (existing.paid_minor > 0 || existing.reserved_minor > 0) {
        return Err(format!("is {} already paid or being paid in it: the currency cannot change", existing.currency));
    }
    if paid + existing.reserved_minor > r.amount_minor {
        let currency = r.currency;
        return Err(format!(
            "{} is paid or held by payments in flight, more than the new amount {}",
            currency.format_minor(paid + existing.reserved_minor),
            currency.format_minor(r.amount_minor)
        ));
    }
    Ok(new_invoice(r, tenant, id, now, paid))
}

fn new_invoice<'a>(r: &'a Record, tenant: &'a str, id: &'a str, now: DateTime<Utc>, paid: u64) -> NewInvoice<'a> {
    NewInvoice {
        tenant_id: tenant,
        payee_id: r.account.expose(),
        number: r.number.as_str(),
        vendor_name: &r.vendor,
        amount_minor: r.amount_minor,
        currency: r.currency.code(),
        due_date: &r.due_date,
        status: r.status,
        purpose: r.purpose.as_str(),
        paid_minor: paid,
        note: r.note.as_deref(),
        vendor_memo: r.memo.as_deref(),
        import_id: id,
        now,
    }
}

/// Whether writing `new` over `existing` changes nothing.
fn unchanged(new: &NewInvoice<'_>, existing: &InvoiceRow) -> bool {
    existing.vendor_name == new.vendor_name
        && existing.amount_minor == new.amount_minor
        && existing.currency == new.currency
        && existing.due_date == new.due_date
        && existing.status == new.status
        && existing.purpose == new.purpose
        && existing.paid_minor == new.paid_minor
        && existing.note.as_deref() == new.note
        && existing.vendor_memo.as_deref() == new.vendor_memo
}

/// Imports `bytes` (an accounting export, CSV) into `tenant`'s registry, as
/// one transaction, by `actor` (`user:<id>` or `cli`), audited
/// (`invoice.imported`: counts and the file's SHA-256, never its rows).
pub async fn import(
    state: &(impl Store + Config),
    tenant: &str,
    actor: &str,
    bytes: &[u8],
    now: DateTime<Utc>,
) -> Result<ImportReport, ImportError> {
    {
        let mut conn = state.db().read.acquire().await.map_err(store::StoreError::from)?;
        if !store::directory::tenant_exists(&mut conn, tenant).await? {
            return Err(ImportError::UnknownTenant);
        }
    }
    let payees: Payees = store::directory::payee_entries(&state.db().read, tenant)
        .await?
        .into_iter()
        .map(|p| (p.id, (p.legal_name, p.replaced_by)))
        .collect();
    let (records, ignored_columns) = read(bytes, &payees, state.currencies()).map_err(ImportError::Rows)?;
    let id = store::new_id("imp", now);
    let sha256 = hex::encode(Sha256::digest(bytes));
    let mut tx = state.db().begin().await?;
    let keys: Vec<(&str, &str)> = records.iter().map(|r| (r.account.expose(), r.number.as_str())).collect();
    let existing: BTreeMap<(String, String), InvoiceRow> = store::invoices::get_many(&mut tx, tenant, &keys)
        .await?
        .into_iter()
        .map(|i| ((i.payee_id.clone(), i.number.clone()), i))
        .collect();
    let (mut created, mut updated, mut same) = (0u64, 0u64, 0u64);
    let mut problems = Vec::new();
    let mut writes = Vec::new();
    for r in &records {
        match existing.get(&(r.account.expose().to_owned(), r.number.as_str().to_owned())) {
            None => writes.push((new_invoice(r, tenant, &id, now, r.paid_minor), None)),
            Some(before) => match merged(r, before, tenant, &id, now) {
                Ok(new) if unchanged(&new, before) => same += 1,
                Ok(new) => writes.push((new, Some(before))),
                Err(message) => problems.push(RowError { line: r.line, column: Some("amount".into()), message }),
            },
        }
    }
    if !problems.is_empty() {
        return Err(ImportError::Rows(problems));
    }
    for (new, before) in &writes {
        match before {
            None => {
                store::invoices::insert(&mut tx, new).await?;
                created += 1;
            }
            Some(before) => {
                if !store::invoices::update_as_read(&mut tx, new, before).await? {
                    return Err(ImportError::Raced);
                }
                updated += 1;
            }
        }
    }
    store::invoices::record_import(
        &mut tx,
        &store::invoices::ImportRecord {
            id: &id,
            tenant_id: tenant,
            imported_by: actor,
            created,
            updated,
            unchanged: same,
            sha256: &sha256,
            at: now,
        },
    )
    .await?;
    store::audit::append(
        &mut tx,
        &AuditEntry {
            tenant_id: Some(tenant.to_owned()),
            actor: actor.to_owned(),
            action: "invoice.imported".into(),
            proposal_id: None,
            request_hash: None,
            data: json!({"import_id": id, "created": created, "updated": updated, "unchanged": same,
                         "rows": records.len(), "sha256": sha256}),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(ImportReport { id, created, updated, unchanged: same, ignored_columns })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payees() -> Payees {
        let mut p = Payees::new();
        p.insert("ba_northwind0007".into(), ("Northwind Traders GmbH".into(), None));
        p.insert("acct_acme0000000001".into(), ("Acme Supplies Ltd".into(), None));
        p.insert("ba_oldbank0001".into(), ("Old Bank Vendor".into(), Some("ba_newbank0001".into())));
        p
    }

    fn caps() -> crate::domain::CurrencyRules {
        crate::domain::CurrencyRules::defaults()
    }

    const HEADER: &str = "Number,Vendor,Account,Amount,Currency,Due_Date,Status,Amount_Paid,Note,Terms\n";

    #[test]
    fn a_good_file_reads_every_row_and_lists_the_columns_it_ignores() {
        let file = format!(
            "{HEADER}INV-1,Northwind Traders GmbH,ba_northwind0007,\"1,250.00\",usd,2026-12-01,open,,\"Pay by wire\",30d\n\
             INV-2,NORTHWIND TRADERS GMBH,ba_northwind0007,500,USD,2026-12-02,partially_paid,100.50,,30d\n\
             A-3,Acme Supplies Ltd,acct_acme0000000001,90000,JPY,2027-01-31,paid,,,\n"
        );
        let (rows, ignored) = read(file.as_bytes(), &payees(), &caps()).unwrap();
        assert_eq!(ignored, ["terms"]);
        assert_eq!(rows.len(), 3);
        assert_eq!((rows[0].amount_minor, rows[0].currency.code(), rows[0].status), (125_000, "USD", "open"));
        assert_eq!(rows[0].note.as_deref(), Some("Pay by wire"));
        assert_eq!((rows[1].status, rows[1].paid_minor), ("open", 10_050));
        assert_eq!(
            (rows[2].amount_minor, rows[2].status, rows[2].paid_minor),
            (90_000, "paid", 90_000),
            "JPY has no decimals"
        );
        assert_eq!(rows[2].line, 4);
    }

    #[test]
    fn every_bad_row_is_named_with_its_line_and_column() {
        let file = format!(
            "{HEADER}INV 1,Northwind Traders GmbH,ba_northwind0007,10.00,USD,2026-12-01,open,,,\n\
             INV-2,Northwind Trading GmbH,ba_northwind0007,10.00,USD,2026-12-01,open,,,\n\
             INV-3,Nobody,acct_unknown00000001,10.00,USD,2026-12-01,open,,,\n\
             INV-4,Old Bank Vendor,ba_oldbank0001,10.00,USD,2026-12-01,open,,,\n\
             INV-5,Northwind Traders GmbH,ba_northwind0007,10.001,USD,2026-12-01,open,,,\n\
             INV-6,Northwind Traders GmbH,ba_northwind0007,0,USD,2026-12-01,open,,,\n\
             INV-7,Northwind Traders GmbH,ba_northwind0007,10.00,XXX,2026-12-01,open,,,\n\
             INV-8,Northwind Traders GmbH,ba_northwind0007,10.00,USD,2026-13-01,open,,,\n\
             INV-9,Northwind Traders GmbH,ba_northwind0007,10.00,USD,2026-12-01,unpaid,,,\n\
             INV-10,Northwind Traders GmbH,ba_northwind0007,10.00,USD,2026-12-01,open,20.00,,\n\
             INV-11,Northwind Traders GmbH,ba_northwind0007,10.00,USD,2026-12-01,open,,\"a\u{202e}b\",\n\
             INV-12,Northwind Traders GmbH,ba_northwind0007,10.00,USD,2026-12-01,open,,,\n\
             INV-12,Northwind Traders GmbH,ba_northwind0007,11.00,USD,2026-12-01,open,,,\n\
             INV-13,Northwind Traders GmbH,ba_northwind0007,10.00,USD\n"
        );
        let problems = read(file.as_bytes(), &payees(), &caps()).unwrap_err();
        let seen: Vec<(u64, Option<&str>)> = problems.iter().map(|p| (p.line, p.column.as_deref())).collect();
        assert_eq!(
            seen,
            [
                (2, Some("number")),
                (3, Some("vendor")),
                (4, Some("account")),
                (5, Some("account")),
                (6, Some("amount")),
                (7, Some("amount")),
                (8, Some("currency")),
                (9, Some("due_date")),
                (10, Some("status")),
                (11, Some("amount_paid")),
                (12, Some("note")),
                (14, Some("number")),
                (15, None),
            ],
            "{problems:#?}"
        );
        let text = format!("{problems:?}");
        assert!(!text.contains("unknown00000001") && !text.contains("oldbank0001\""), "accounts masked: {text}");
        assert!(problems[9].message.contains("more than the amount"), "{:?}", problems[9]);
        assert!(problems[11].message.contains("line 13"), "{:?}", problems[11]);
    }

    #[test]
    fn a_file_without_its_required_columns_or_rows_is_refused_whole() {
        let problems = read(b"number,vendor,amount\nINV-1,x,1\n", &payees(), &caps()).unwrap_err();
        let missing: Vec<_> = problems.iter().filter_map(|p| p.column.as_deref()).collect();
        assert_eq!(missing, ["account", "currency", "due_date", "status"]);
        assert!(problems.iter().all(|p| p.line == 1));
        assert_eq!(read(HEADER.as_bytes(), &payees(), &caps()).unwrap_err()[0].message, "the file holds no invoice");
        assert_eq!(read(&[0xff, 0xfe, 0x00], &payees(), &caps()).unwrap_err()[0].message, "the file is not UTF-8 text");
        let twice = read(b"number,number,vendor,account,amount,currency,due_date,status\n", &payees(), &caps());
        assert_eq!(twice.unwrap_err()[0].message, "is named twice");
    }
}
