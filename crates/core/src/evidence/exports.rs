//! Exports for finance (docs/DEPLOY.md "Exports for finance"): a tenant's
//! payments in a date range as CSV (RFC 4180, one header row, the columns
//! of [`COLUMNS`]) or a JSON array, read a page at a time so a year of data
//! never sits in memory; and the nightly reconciliation report of the
//! operations still `unknown` or `needs_review`.
//!
//! Account numbers never appear: the destination is masked as on the
//! console, with its tag (`ba_…0007 #k3f9`); the evidence id is the request hash a proof bundle
//! of the payment carries. Text cells a spreadsheet would read as a formula
//! (`=`, `+`, `-`, `@`, tab, carriage return first) are written with a
//! leading `'` in CSV.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate, Timelike, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::config::Config;
use crate::decision::policy::{Decision, Outcome};
use crate::domain::{mask_account_tagged, Currency};
use crate::evidence::mandate::decimal;
use crate::platform::clock::Clock;
use crate::platform::shutdown::Shutdown;
use crate::store::exports::{DecisionRow, PaymentRow};
use crate::store::Store;
use crate::store::{self, parse_ts, Pool, StoreError};

/// Proposals read per page.
pub const PAGE: u32 = 500;

/// The CSV columns, in order: the fields of [`PaymentRecord`].
pub const COLUMNS: [&str; 21] = [
    "proposal_id",
    "created_at",
    "tenant_id",
    "agent_id",
    "payee",
    "destination",
    "invoice_id",
    "amount",
    "currency",
    "amount_minor",
    "status",
    "policy_outcome",
    "approvers",
    "approval_channels",
    "rejected_by",
    "decided_at",
    "decision_seconds",
    "operation_id",
    "operation_status",
    "rail_reference",
    "evidence_id",
];

/// One payment of an export.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PaymentRecord {
    pub proposal_id: String,
    pub created_at: String,
    pub tenant_id: String,
    pub agent_id: String,
    /// The payee's registered legal name.
    pub payee: Option<String>,
    /// The destination account, masked.
    pub destination: String,
    pub invoice_id: Option<String>,
    /// Decimal, with the currency's digits: `320.00`.
    pub amount: String,
    pub currency: String,
    pub amount_minor: u64,
    /// The proposal's status (SPEC §4).
    pub status: String,
    /// `auto_approved`, `needs_approval` or `denied`.
    pub policy_outcome: String,
    /// Who approved in the decisive round, `; `-separated
    /// (`policy:<rule>` when a policy approved it).
    pub approvers: String,
    /// Each approver's channel (console, slack, …), in the same order.
    pub approval_channels: String,
    pub rejected_by: Option<String>,
    /// When the last decision was made.
    pub decided_at: Option<String>,
    /// Seconds from proposal to the last decision.
    pub decision_seconds: Option<i64>,
    pub operation_id: Option<String>,
    pub operation_status: Option<String>,
    pub rail_reference: Option<String>,
    /// The request hash: the proof bundle of this payment
    /// (`/api/v1/console/proposals/{proposal_id}/evidence`) carries it.
    pub evidence_id: String,
}

/// The output format of an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Json,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "csv" => Some(Format::Csv),
            "json" => Some(Format::Json),
            _ => None,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Csv => "text/csv; charset=utf-8; header=present",
            Format::Json => "application/json",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Json => "json",
        }
    }
}

/// The UTC days of an export, both included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub from: NaiveDate,
    pub to: NaiveDate,
}

/// A refused range: the parameter and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeError {
    pub field: &'static str,
    pub reason: String,
}

impl Range {
    /// `from` and `to` as `YYYY-MM-DD`; `to` defaults to `from`.
    pub fn parse(from: Option<&str>, to: Option<&str>) -> Result<Range, RangeError> {
        let day = |field: &'static str, s: &str| {
            NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .map_err(|_| RangeError { field, reason: format!("`{s}` is not a date (YYYY-MM-DD)") })
        };
        let from = match from {
            Some(s) => day("from", s)?,
            None => return Err(RangeError { field: "from", reason: "is required (YYYY-MM-DD)".into() }),
        };
        let to = match to {
            Some(s) => day("to", s)?,
            None => from,
        };
        if to < from {
            return Err(RangeError { field: "to", reason: "is before `from`".into() });
        }
        Ok(Range { from, to })
    }

    /// `[from 00:00, the day after to 00:00)`, UTC.
    pub fn bounds(&self) -> (DateTime<Utc>, DateTime<Utc>) {
        let start = |d: NaiveDate| d.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc();
        (start(self.from), start(self.to.succ_opt().unwrap_or(self.to)))
    }

    /// `2026-01-01-to-2026-12-31`: for file names.
    pub fn label(&self) -> String {
        format!("{}-to-{}", self.from, self.to)
    }
}

/// A tenant's payments in a range, read a page at a time.
pub struct Payments {
    tenant: String,
    bounds: (DateTime<Utc>, DateTime<Utc>),
    /// `(created_at, id)` of the last row read.
    after: Option<(String, String)>,
    done: bool,
    page: u32,
}

impl Payments {
    pub fn new(tenant: &str, range: Range) -> Payments {
        Payments { tenant: tenant.to_owned(), bounds: range.bounds(), after: None, done: false, page: PAGE }
    }

    /// The next page, or `None` once every payment was read.
    pub async fn next_page(&mut self, pool: &Pool) -> Result<Option<Vec<PaymentRecord>>, StoreError> {
        if self.done {
            return Ok(None);
        }
        let after = self.after.as_ref().map(|(at, id)| (at.as_str(), id.as_str()));
        let rows = store::exports::payments_page(pool, &self.tenant, self.bounds, after, self.page).await?;
        let Some(last) = rows.last() else {
            self.done = true;
            return Ok(None);
        };
        let decisions =
            store::exports::decisions_of_page(pool, &self.tenant, after, (&last.created_at, &last.id)).await?;
        self.done = rows.len() < self.page as usize;
        self.after = Some((last.created_at.clone(), last.id.clone()));
        Ok(Some(rows.into_iter().map(|row| record(row, &decisions)).collect()))
    }
}

/// Records in the audit trail that `actor` exported `tenant`'s payments
/// of `range` (`export.payments`).
pub async fn audit(pool: &Pool, tenant: &str, actor: &str, range: Range, format: Format) -> Result<(), StoreError> {
    let entry = store::audit::AuditEntry {
        tenant_id: Some(tenant.to_owned()),
        actor: actor.to_owned(),
        action: "export.payments".into(),
        proposal_id: None,
        request_hash: None,
        data: serde_json::json!({ "from": range.from, "to": range.to, "format": format.extension() }),
    };
    store::audit::append_alone(pool, &entry).await
}

fn record(row: PaymentRow, decisions: &[DecisionRow]) -> PaymentRecord {
    let outcome = serde_json::from_str::<Decision>(&row.policy).ok().map(|d| d.outcome);
    let mine: Vec<&DecisionRow> = decisions.iter().filter(|d| d.proposal_id == row.id).collect();
    let approvals: Vec<&&DecisionRow> = mine.iter().filter(|d| d.decision == "approve").collect();
    let created = parse_ts(&row.created_at);
    // A policy's approval is an approval row too (`policy:<rule>`, via `policy`).
    let approvers = approvals.iter().map(|d| d.approver.as_str()).collect::<Vec<_>>().join("; ");
    let channels = approvals.iter().map(|d| d.via.as_str()).collect::<Vec<_>>().join("; ");
    let decided = mine.last().map(|d| d.at);
    let exponent = Currency::parse(&row.currency).map(|c| c.exponent()).unwrap_or(2);
    PaymentRecord {
        created_at: row.created_at,
        tenant_id: row.tenant_id,
        agent_id: row.agent_id,
        payee: row.payee_name,
        destination: mask_account_tagged(&row.payee_id),
        invoice_id: row.invoice_id,
        amount: decimal(row.amount_minor, exponent),
        currency: row.currency,
        amount_minor: row.amount_minor,
        status: row.status,
        policy_outcome: outcome.map(|o| outcome_name(o).to_owned()).unwrap_or_default(),
        approvers,
        approval_channels: channels,
        rejected_by: mine.iter().find(|d| d.decision == "reject").map(|d| d.approver.clone()),
        decided_at: decided.map(store::ts),
        decision_seconds: decided.zip(created).map(|(d, c)| (d - c).num_seconds()),
        operation_id: row.operation_id,
        operation_status: row.operation_status,
        rail_reference: row.rail_reference,
        evidence_id: row.request_hash,
        proposal_id: row.id,
    }
}

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::AutoApproved => "auto_approved",
        Outcome::NeedsApproval => "needs_approval",
        Outcome::Denied => "denied",
    }
}

/// Writes an export's bytes: [`Writer::start`], then each page's
/// [`Writer::page`], then [`Writer::finish`].
pub struct Writer {
    format: Format,
    written: usize,
}

impl Writer {
    pub fn new(format: Format) -> Writer {
        Writer { format, written: 0 }
    }

    /// The CSV header row, or the JSON array's opening.
    pub fn start(&mut self) -> Vec<u8> {
        match self.format {
            Format::Csv => csv_line(COLUMNS.into_iter().map(Cow::Borrowed)),
            Format::Json => b"[".to_vec(),
        }
    }

    pub fn page(&mut self, records: &[PaymentRecord]) -> Vec<u8> {
        let mut out = Vec::new();
        for r in records {
            let value = serde_json::to_value(r).expect("a record serializes");
            match self.format {
                Format::Csv => out.extend(csv_line(COLUMNS.into_iter().map(|c| cell(&value[c])))),
                Format::Json => {
                    out.extend_from_slice(if self.written == 0 { b"\n" } else { b",\n" });
                    out.extend(serde_json::to_vec(&value).expect("a value serializes"));
                }
            }
            self.written += 1;
        }
        out
    }

    /// The JSON array's close (nothing for CSV).
    pub fn finish(&mut self) -> Vec<u8> {
        match self.format {
            Format::Csv => Vec::new(),
            Format::Json => b"\n]\n".to_vec(),
        }
    }

    /// Records written so far.
    pub fn written(&self) -> usize {
        self.written
    }
}

/// One RFC 4180 line (CRLF), quoted where needed.
fn csv_line<'a>(cells: impl Iterator<Item = Cow<'a, str>>) -> Vec<u8> {
    let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::CRLF).from_writer(Vec::new());
    let cells: Vec<Cow<'a, str>> = cells.collect();
    w.write_record(cells.iter().map(|c| c.as_bytes())).expect("writing to memory");
    w.into_inner().expect("writing to memory")
}

/// A JSON value as a CSV cell; text a spreadsheet would run as a formula
/// gets a leading `'`.
fn cell(v: &Value) -> Cow<'static, str> {
    match v {
        Value::Null => Cow::Borrowed(""),
        Value::String(s) if s.starts_with(['=', '+', '-', '@', '\t', '\r']) => Cow::Owned(format!("'{s}")),
        Value::String(s) => Cow::Owned(s.clone()),
        other => Cow::Owned(other.to_string()),
    }
}

/// The nightly reconciliation report: every operation still `unknown` or
/// `needs_review`, oldest first.
#[derive(Debug, Clone, Serialize)]
pub struct ReconciliationReport {
    pub generated_at: String,
    pub open: usize,
    pub operations: Vec<OpenOperation>,
}

#[derive(Debug, Clone, Serialize)]
pub struct OpenOperation {
    pub operation_id: String,
    pub proposal_id: String,
    pub tenant_id: String,
    pub kind: String,
    pub status: String,
    pub amount: String,
    pub currency: String,
    pub rail_reference: Option<String>,
    pub attempts: i64,
    pub error_code: Option<String>,
    pub created_at: String,
    /// Hours since the operation was recorded.
    pub age_hours: i64,
}

pub async fn reconciliation_report(pool: &Pool, now: DateTime<Utc>) -> Result<ReconciliationReport, StoreError> {
    let ops = store::exports::awaiting_review(pool).await?;
    let operations: Vec<OpenOperation> = ops
        .into_iter()
        .map(|op| OpenOperation {
            amount: decimal(op.amount_minor, Currency::parse(&op.currency).map(|c| c.exponent()).unwrap_or(2)),
            operation_id: op.id,
            proposal_id: op.proposal_id,
            tenant_id: op.tenant_id,
            kind: op.kind,
            status: op.status.as_str().to_owned(),
            currency: op.currency,
            rail_reference: op.rail_reference,
            attempts: op.attempts,
            error_code: op.error_code,
            created_at: store::ts(op.created_at),
            age_hours: (now - op.created_at).num_hours(),
        })
        .collect();
    Ok(ReconciliationReport { generated_at: store::ts(now), open: operations.len(), operations })
}

/// The file of `day`'s report in `dir`.
pub fn report_path(dir: &Path, day: NaiveDate) -> PathBuf {
    dir.join(format!("reconciliation-{day}.json"))
}

/// The report file due at `now`: today's, once the hour has come, if it is
/// not written yet.
pub fn report_due(dir: &Path, hour_utc: u8, now: DateTime<Utc>) -> Option<PathBuf> {
    let path = report_path(dir, now.date_naive());
    (now.hour() >= u32::from(hour_utc) && !path.exists()).then_some(path)
}

/// Writes `report` to `path` (a temporary file renamed into place: a
/// reader never sees half a report), creating its directory.
pub fn write_report(path: &Path, report: &ReconciliationReport) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    std::fs::write(&tmp, serde_json::to_vec_pretty(report).expect("a report serializes"))?;
    std::fs::rename(&tmp, path)
}

/// Writes the report due now, if one is: `Some(path)` when written.
pub async fn write_due_report(state: &(impl Store + Clock + Config)) -> anyhow::Result<Option<PathBuf>> {
    let settings = state.settings();
    let now = state.now();
    let Some(path) = report_due(&settings.reports_dir(), settings.reports.reconciliation_hour_utc, now) else {
        return Ok(None);
    };
    let report = reconciliation_report(&state.db().read, now).await?;
    write_report(&path, &report)?;
    tracing::info!(path = %path.display(), open = report.open, "reconciliation report written");
    Ok(Some(path))
}

/// The nightly reconciliation report, checked every minute.
pub async fn run(state: std::sync::Arc<impl Store + Clock + Config + Send + Sync + 'static>, shutdown: Shutdown) {
    crate::platform::shutdown::every(std::time::Duration::from_secs(60), &shutdown, || async {
        if let Err(e) = write_due_report(&*state).await {
            tracing::warn!(error = %e, "reconciliation report failed; retrying in a minute");
        }
    })
    .await;
}

#[cfg(test)]
mod tests;
