//! The operator's commands for finance and for keeping the data: payment
//! exports and the reconciliation report (docs/DEPLOY.md "Exports for
//! finance"), backups and restores ("Backup and restore"); a user's
//! deactivation and reactivation (docs/PEOPLE.md), linking a Slack or a
//! Teams user (docs/NOTIFICATIONS.md) and the container's health probe
//! (docs/DEPLOY.md, "Containers"); importing invoices (docs/PAYABLES.md).

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use secrecy::{ExposeSecret, SecretString};

use crate::config::Settings;
use crate::evidence::exports::{Format, Payments, Range, Writer};
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

#[derive(Subcommand, Debug)]
pub enum PolicyCommand {
    /// Which rules apply to a sample request (a proposal body, JSON, as an
    /// agent would post it): the decision and its reasons, the approval
    /// groups it needs, the escalation, who could approve it. Stores and
    /// audits nothing.
    Explain {
        #[arg(long)]
        tenant: String,
        /// The agent that would propose it (its scope and segregation of duties).
        #[arg(long)]
        agent: String,
        /// The request (JSON); `-` reads standard input.
        file: PathBuf,
    },
    /// Prints the TOML rules (`[policy]`) as the Cedar policy that decides
    /// the same (docs/POLICY.md, "Cedar").
    ToCedar,
    /// Checks a Cedar policy against the schema; prints Cedar's errors
    /// located in the file (exit status 1) or the rules it defines.
    Check {
        /// The Cedar policy file.
        file: PathBuf,
    },
    /// Replays the tenant's recorded proposals under a candidate policy and
    /// prints what would have changed, with totals by currency. Changes
    /// nothing.
    Backtest {
        /// The candidate Cedar policy file.
        candidate: PathBuf,
        #[arg(long)]
        tenant: String,
        /// How far back: `90d`, `12h`, `2w`.
        #[arg(long, default_value = "90d")]
        since: String,
        /// The report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Checks a file of example proposals against their expected decisions
    /// (exit status 1 when one fails).
    Test {
        /// The examples (TOML); its `policy` key names the Cedar file.
        file: PathBuf,
    },
}

/// The environment variable a backup passphrase may come from.
pub const PASSPHRASE_ENV: &str = "COUNTERSIGN_BACKUP_PASSPHRASE";

#[derive(Args, Debug)]
pub struct BackupArgs {
    /// The backup file to write (an age file; it must not exist).
    #[arg(long)]
    pub to: PathBuf,
    /// Encrypt to this age X25519 recipient, `age1…` (repeatable; e.g. from
    /// `age-keygen`). Without one, a passphrase: --passphrase-file or
    /// COUNTERSIGN_BACKUP_PASSPHRASE.
    #[arg(long = "recipient")]
    pub recipients: Vec<String>,
    /// A file whose first line is the passphrase (at least 12 characters).
    #[arg(long, conflicts_with = "recipients")]
    pub passphrase_file: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct RestoreArgs {
    /// The backup file.
    #[arg(long)]
    pub from: PathBuf,
    /// An age identity file (`AGE-SECRET-KEY-1…`) of one of the recipients.
    /// Without one, the passphrase: --passphrase-file or COUNTERSIGN_BACKUP_PASSPHRASE.
    #[arg(long)]
    pub identity: Option<PathBuf>,
    #[arg(long, conflicts_with = "identity")]
    pub passphrase_file: Option<PathBuf>,
    /// The transparency log's published verifier key (`GET /api/v1/log`,
    /// `verifier_key`): the backup's note key must be it.
    #[arg(long)]
    pub log_key: Option<String>,
    /// A signed checkpoint kept outside the backup (`countersign log
    /// monitor`'s file, or `GET /api/v1/log/checkpoint` saved): the restored
    /// log must extend it. A restore needs this, --log-key, or both.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
}

/// The passphrase of --passphrase-file, else of the environment.
fn passphrase(file: Option<&PathBuf>) -> anyhow::Result<SecretString> {
    let text = match file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("cannot read the passphrase file {}: {}", path.display(), e.kind()))?;
            text.lines().next().unwrap_or_default().to_owned()
        }
        None => std::env::var(PASSPHRASE_ENV).map_err(|_| {
            anyhow::anyhow!("give --recipient, --passphrase-file or {PASSPHRASE_ENV} (the backup is always encrypted)")
        })?,
    };
    let passphrase = SecretString::from(text);
    if passphrase.expose_secret().chars().count() < 12 {
        anyhow::bail!("the passphrase is shorter than 12 characters");
    }
    Ok(passphrase)
}

pub async fn backup(settings: &Settings, args: BackupArgs) -> anyhow::Result<i32> {
    use crate::platform::backup::Protection;
    if args.to.exists() {
        anyhow::bail!("{} exists: name a new file", args.to.display());
    }
    let protection = if args.recipients.is_empty() {
        Protection::Passphrase(passphrase(args.passphrase_file.as_ref())?)
    } else {
        Protection::Recipients(args.recipients)
    };
    let now = crate::store::ts(crate::platform::clock::system_now());
    eprintln!("backing up {} …", settings.data_dir.display());
    let manifest = crate::platform::backup::backup(settings, &args.to, &protection, &now).await?;
    let size = std::fs::metadata(&args.to).map(|m| m.len()).unwrap_or(0);
    if manifest.backend == "postgres" {
        println!(
            "keys backed up to {} ({size} bytes). The database is PostgreSQL: back it up with pg_dump (docs/DEPLOY.md)",
            args.to.display()
        );
    } else {
        println!(
            "backup written to {} ({size} bytes): {} audit entries, transparency log of {} leaves, {} key file(s)",
            args.to.display(),
            manifest.audit_entries,
            manifest.log_size,
            manifest.files.keys().filter(|f| f.starts_with("keys/")).count()
        );
    }
    Ok(0)
}

pub async fn restore(settings: &Settings, args: RestoreArgs) -> anyhow::Result<i32> {
    use crate::platform::backup::Unlock;
    let unlock = match args.identity {
        Some(path) => Unlock::IdentityFile(path),
        None => Unlock::Passphrase(passphrase(args.passphrase_file.as_ref())?),
    };
    let key = match &args.log_key {
        Some(text) => Some(
            crate::evidence::tlog::note::NoteVerifier::parse(text).map_err(|e| anyhow::anyhow!("--log-key: {e}"))?,
        ),
        None => None,
    };
    let checkpoint = match &args.checkpoint {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("cannot read the checkpoint file {}: {}", path.display(), e.kind()))?,
        ),
        None => None,
    };
    let pin = crate::platform::backup::LogPin { key, checkpoint };
    eprintln!("checking {} …", args.from.display());
    match crate::platform::backup::restore(settings, &args.from, &unlock, &pin).await {
        Ok(r) => {
            println!(
                "restored into {}: audit trail intact ({} entries), transparency log verified ({} leaves), backup of {}",
                settings.data_dir.display(),
                r.audit_entries,
                r.log_size,
                r.manifest.created_at
            );
            Ok(0)
        }
        Err(e) => {
            eprintln!("countersign: restore refused, nothing was changed: {e}");
            Ok(1)
        }
    }
}

pub async fn export(settings: &Settings, command: ExportCommand) -> anyhow::Result<i32> {
    let ExportCommand::Payments { tenant, from, to, format, out } = command;
    let range = Range::parse(Some(&from), to.as_deref()).map_err(|e| anyhow::anyhow!("--{} {}", e.field, e.reason))?;
    let format = Format::parse(&format).ok_or_else(|| anyhow::anyhow!("--format is csv or json"))?;
    let db = Db::connect(&settings.backend()?).await?;
    crate::evidence::exports::audit(&db.write, &tenant, "cli", range, format).await?;
    let mut sink: Box<dyn Write> = match &out {
        Some(path) => Box::new(std::io::BufWriter::new(std::fs::File::create(path)?)),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let (mut payments, mut writer) = (Payments::new(&tenant, range), Writer::new(format));
    // Progress on a terminal only; a log or a pipe gets the last line.
    let live = std::io::IsTerminal::is_terminal(&std::io::stderr());
    sink.write_all(&writer.start())?;
    while let Some(page) = payments.next_page(&db.read).await? {
        sink.write_all(&writer.page(&page))?;
        if live {
            eprint!("\r{} payments exported", writer.written());
        }
    }
    sink.write_all(&writer.finish())?;
    sink.flush()?;
    let start = if live { "\r" } else { "" };
    eprintln!("{start}{} payments exported ({} to {})", writer.written(), range.from, range.to);
    Ok(0)
}

pub async fn report(settings: &Settings, command: ReportCommand) -> anyhow::Result<i32> {
    let ReportCommand::Reconciliation { out } = command;
    let db = Db::connect(&settings.backend()?).await?;
    let now = crate::platform::clock::system_now();
    let report = crate::evidence::exports::reconciliation_report(&db.read, now).await?;
    let path = out.unwrap_or_else(|| crate::evidence::exports::report_path(&settings.reports_dir(), now.date_naive()));
    crate::evidence::exports::write_report(&path, &report)?;
    println!("{} operation(s) unknown or needing review: report written to {}", report.open, path.display());
    Ok(0)
}

/// `countersign policy explain`: prints the explanation; exits 1 naming what is wrong with the request.
pub async fn explain_policy(
    settings: Settings,
    tenant: &str,
    agent: &str,
    file: &std::path::Path,
) -> anyhow::Result<i32> {
    let text = if file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(file).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?
    };
    let body: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{} is not JSON: {e}", file.display()))?;
    let (state, _trigger) = crate::startup::offline_state(settings).await?;
    match crate::decision::policy::explain::explain(&state, tenant, agent, &body, state.now()).await {
        Ok(text) => {
            print!("{text}");
            Ok(0)
        }
        Err(e) => {
            eprintln!("countersign: {e}");
            Ok(1)
        }
    }
}

/// What a freeze covers: `--all`, `--tenant T`, or `--tenant T --agent A`.
#[derive(Args, Debug)]
#[group(required = true, multiple = true)]
pub struct FreezeScope {
    /// Every commit of every tenant.
    #[arg(long, conflicts_with_all = ["tenant", "agent"])]
    all: bool,
    #[arg(long)]
    tenant: Option<String>,
    /// One agent of --tenant.
    #[arg(long, requires = "tenant")]
    agent: Option<String>,
}

impl FreezeScope {
    pub fn scope(&self) -> crate::store::freezes::Scope {
        use crate::store::freezes::Scope;
        match (self.all, &self.tenant, &self.agent) {
            (_, Some(tenant), Some(agent)) => Scope::Agent { tenant: tenant.clone(), agent: agent.clone() },
            (_, Some(tenant), None) => Scope::Tenant(tenant.clone()),
            _ => Scope::All,
        }
    }
}

/// `countersign freeze` / `unfreeze`: audited as the operator (`cli`).
pub async fn set_freeze(settings: Settings, scope: &FreezeScope, frozen: bool, reason: &str) -> anyhow::Result<i32> {
    let db = Db::connect(&settings.backend()?).await?;
    let scope = scope.scope();
    let now = crate::platform::clock::system_now();
    let mut tx = db.begin().await?;
    let changed = crate::intake::freeze::set(&mut tx, &scope, frozen, "cli", reason, None, now).await?;
    tx.commit().await?;
    match (frozen, changed) {
        (true, true) => println!("frozen: {}; commits are refused before the rail is called", scope.describe()),
        (true, false) => println!("already frozen: {}", scope.describe()),
        (false, true) => println!("lifted: {}", scope.describe()),
        (false, false) => println!("was not frozen: {}", scope.describe()),
    }
    Ok(0)
}

#[derive(Subcommand, Debug)]
pub enum InvoiceCommand {
    /// Import invoices from an accounting export (CSV with a header row:
    /// number, vendor, account, amount, currency, due_date, status, and
    /// optionally amount_paid, purpose, note, memo; docs/PAYABLES.md). All or
    /// nothing: any bad row is reported with its line and column and nothing
    /// is imported (exit 1).
    Import {
        #[arg(long)]
        tenant: String,
        /// The CSV file, or `-` for stdin.
        file: PathBuf,
    },
}

/// `countersign invoices …`.
pub async fn invoices(settings: Settings, command: InvoiceCommand) -> anyhow::Result<i32> {
    let InvoiceCommand::Import { tenant, file } = command;
    let bytes = if file.as_os_str() == "-" {
        let mut all = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut all)?;
        all
    } else {
        std::fs::read(&file).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?
    };
    let (state, _trigger) = crate::startup::offline_state(settings).await?;
    match crate::payables::import::import(&state, &tenant, "cli", &bytes, state.now()).await {
        Ok(report) => {
            println!(
                "invoices imported ({}): {} new, {} updated, {} unchanged",
                report.id, report.created, report.updated, report.unchanged
            );
            if !report.ignored_columns.is_empty() {
                println!("columns not read: {}", report.ignored_columns.join(", "));
            }
            Ok(0)
        }
        Err(crate::payables::import::ImportError::Rows(rows)) => {
            for r in &rows {
                match &r.column {
                    Some(c) => eprintln!("line {}, {c}: {}", r.line, r.message),
                    None => eprintln!("line {}: {}", r.line, r.message),
                }
            }
            eprintln!("countersign: {} problem(s) in {}; nothing was imported", rows.len(), file.display());
            Ok(1)
        }
        Err(e) => {
            eprintln!("countersign: {e}");
            Ok(1)
        }
    }
}

/// `countersign user deactivate|activate`: the operator's offboarding (or
/// return) of a user, as the console's does it; audited with actor `cli`.
pub async fn user_lifecycle(
    settings: crate::config::Settings,
    tenant: &str,
    username: &str,
    deactivate: bool,
) -> anyhow::Result<i32> {
    use crate::people::lifecycle::{self, By, Via};
    let (state, _trigger) = crate::startup::offline_state(settings).await?;
    let user = {
        let mut conn = state.db.reader().await?;
        crate::store::directory::user_by_username(&mut conn, username).await?
    };
    let Some(user) = user.filter(|u| u.tenant_id == tenant) else {
        eprintln!("error: tenant {tenant} has no user {username}");
        return Ok(2);
    };
    let by = By { actor: "cli".into(), via: Via::Cli };
    let now = crate::platform::clock::system_now();
    if deactivate {
        match lifecycle::deactivate(&state, tenant, &user.id, &by, now).await {
            Ok(done) => println!(
                "user {} deactivated: {} session(s) ended, {} passkey(s) removed, {} delegation(s) ended, {} approval(s) \
                 withdrawn, {} sent back for approval, agents frozen: {}",
                done.username,
                done.sessions_ended,
                done.passkeys_removed,
                done.delegations_ended.len(),
                done.approvals_withdrawn.len(),
                done.approvals_lapsed.len(),
                if done.agents_frozen.is_empty() { "none".to_owned() } else { done.agents_frozen.join(", ") }
            ),
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(2);
            }
        }
    } else {
        match lifecycle::reactivate(&state, tenant, &user.id, &by, now).await {
            Ok(name) => println!("user {name} reactivated (no session, passkey, role or limit of their own)"),
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(2);
            }
        }
    }
    Ok(0)
}

/// `countersign probe URL`: 0 when `url` answers 2xx within 3 s, else 1
/// (the image's HEALTHCHECK; distroless has no curl).
pub async fn probe(url: &str) -> anyhow::Result<i32> {
    let client = reqwest::Client::builder().timeout(std::time::Duration::from_secs(3)).build()?;
    let healthy = client.get(url).send().await.is_ok_and(|r| r.status().is_success());
    Ok(if healthy { 0 } else { 1 })
}

/// `countersign user link-teams`: links (or with `None` unlinks) a user to
/// a Teams user by Entra ID object id; 2 with the reason when refused.
pub async fn link_teams(settings: &Settings, tenant: &str, username: &str, aad: Option<&str>) -> anyhow::Result<i32> {
    let db = Db::connect(&settings.backend()?).await?;
    if let Err(why) =
        crate::notify::teams::link(&db, tenant, username, aad, "cli", crate::platform::clock::system_now()).await
    {
        eprintln!("error: {why}");
        return Ok(2);
    }
    match aad {
        Some(id) => println!("user {username} linked to the Teams user {id}"),
        None => println!("user {username} unlinked from Teams"),
    }
    Ok(0)
}

/// `countersign user link-slack`: links (or with `None` unlinks) a user to
/// a Slack user id; 2 with the reason when refused.
pub async fn link_slack(settings: &Settings, tenant: &str, username: &str, slack: Option<&str>) -> anyhow::Result<i32> {
    let db = Db::connect(&settings.backend()?).await?;
    if let Err(why) = crate::platform::provision::link_slack(&db, tenant, username, slack, "cli").await {
        eprintln!("error: {why}");
        return Ok(2);
    }
    match slack {
        Some(id) => println!("user {username} linked to Slack user {id}"),
        None => println!("user {username} unlinked from Slack"),
    }
    Ok(0)
}
