//! The operator's commands for finance and for keeping the data: payment
//! exports and the reconciliation report (docs/DEPLOY.md "Exports for
//! finance").

use std::io::Write;
use std::path::PathBuf;

use clap::Subcommand;

use crate::config::Settings;
use crate::exports::{Format, Payments, Range, Writer};
use crate::store::Db;

#[derive(Subcommand, Debug)]
pub enum ExportCommand {
    /// A tenant's payments created in a range of UTC days, oldest first, as
    /// CSV or JSON (the console's "Export payments"), streamed to FILE or
    /// stdout. Recorded in the audit trail.
    Payments {
        #[arg(long)]
        tenant: String,
        /// The first day, YYYY-MM-DD.
        #[arg(long)]
        from: String,
        /// The last day, included (default: --from).
        #[arg(long)]
        to: Option<String>,
        /// csv or json.
        #[arg(long, default_value = "csv")]
        format: String,
        /// Write here instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
pub enum ReportCommand {
    /// The operations still `unknown` or `needs_review`, as JSON: to FILE,
    /// or today's report in the reports directory (what the server writes
    /// nightly at `reports.reconciliation_hour_utc`).
    Reconciliation {
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

pub async fn export(settings: &Settings, command: ExportCommand) -> anyhow::Result<i32> {
    let ExportCommand::Payments { tenant, from, to, format, out } = command;
    let range = Range::parse(Some(&from), to.as_deref()).map_err(|e| anyhow::anyhow!("--{} {}", e.field, e.reason))?;
    let format = Format::parse(&format).ok_or_else(|| anyhow::anyhow!("--format is csv or json"))?;
    let db = Db::connect(&settings.backend()?).await?;
    crate::exports::audit(&db.write, &tenant, "cli", range, format).await?;
    let mut sink: Box<dyn Write> = match &out {
        Some(path) => Box::new(std::io::BufWriter::new(std::fs::File::create(path)?)),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let (mut payments, mut writer) = (Payments::new(&tenant, range), Writer::new(format));
    sink.write_all(&writer.start())?;
    while let Some(page) = payments.next_page(&db.read).await? {
        sink.write_all(&writer.page(&page))?;
        eprint!("\r{} payments exported", writer.written());
    }
    sink.write_all(&writer.finish())?;
    sink.flush()?;
    eprintln!("\r{} payments exported ({} to {})", writer.written(), range.from, range.to);
    Ok(0)
}

pub async fn report(settings: &Settings, command: ReportCommand) -> anyhow::Result<i32> {
    let ReportCommand::Reconciliation { out } = command;
    let db = Db::connect(&settings.backend()?).await?;
    let now = crate::clock::system_now();
    let report = crate::exports::reconciliation_report(&db.read, now).await?;
    let path = out.unwrap_or_else(|| crate::exports::report_path(&settings.reports_dir(), now.date_naive()));
    crate::exports::write_report(&path, &report)?;
    println!("{} operation(s) unknown or needing review: report written to {}", report.open, path.display());
    Ok(0)
}
