//! The `countersign` command line. Thin: parse arguments, load settings,
//! call one function, print the result.

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use std::collections::BTreeMap;
use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::config::{Overrides, Settings};
use crate::notify::webhooks;
use crate::platform::provision;
use crate::store::Db;

#[derive(Parser, Debug)]
#[command(name = "countersign", version, about = "Human approval console for AI agents that move money")]
pub struct Cli {
    /// TOML configuration file (also COUNTERSIGN_CONFIG).
    #[arg(long, global = true, env = "COUNTERSIGN_CONFIG")]
    pub config: Option<PathBuf>,
    /// Data directory: database, signing keys (overrides `data_dir`).
    #[arg(long, global = true)]
    pub data_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the console and the agent API.
    Serve {
        /// Address to listen on, e.g. 127.0.0.1:8080 (port 0 picks a free one).
        #[arg(long)]
        listen: Option<SocketAddr>,
        /// Load the demo tenant when the database is empty.
        #[arg(long)]
        demo: bool,
    },
    /// Create the database if needed and apply migrations.
    Migrate,
    /// Create or update tenants, users, agents, payees and budgets from a TOML file.
    Apply { file: PathBuf },
    /// Tenants.
    Tenant {
        #[command(subcommand)]
        command: TenantCommand,
    },
    /// Console users (reviewers, approvers, admins).
    User {
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Agents and their bearer keys.
    Agent {
        #[command(subcommand)]
        command: AgentCommand,
    },
    /// The payee registry.
    Payee {
        #[command(subcommand)]
        command: PayeeCommand,
    },
    /// Load the demo tenant, users, agents, payees and sample proposals.
    Demo,
    /// Exit 0 when URL answers 2xx within 3 s, else 1: a container's health
    /// check (`countersign probe http://127.0.0.1:8080/healthz`; the image
    /// has no shell and no curl).
    Probe { url: String },
    /// Run the bundled Stripe-compatible rail simulator (for local use and tests).
    RailSim {
        /// Address to listen on (port 0 picks a free one).
        #[arg(long, default_value = "127.0.0.1:12111")]
        listen: SocketAddr,
        /// The simulator's own SQLite file (created if missing; survives restarts).
        #[arg(long, default_value = "data/rail-sim.db")]
        db: PathBuf,
        /// How long a transfer stays `pending` before it is paid, in milliseconds.
        #[arg(long, default_value_t = 2000)]
        settle_after_ms: u64,
    },
    /// Settle `unknown` and `accepted` operations now by reading the rail's
    /// records (the server's worker does this continuously).
    Reconcile {
        /// Only this operation (op_…); otherwise every open operation.
        #[arg(long)]
        operation: Option<String>,
    },
    /// The kill switch: refuse commits before any rail call, on every
    /// instance, from the next commit (docs/SECURITY.md "Kill switch").
    Freeze {
        #[command(flatten)]
        scope: crate::operator::FreezeScope,
        /// Why (shown to the refused agents and in the audit trail).
        #[arg(long)]
        reason: String,
    },
    /// Lift a freeze. On the console lifting needs a second admin; this is
    /// the operator's, who holds the server's files (and so everything).
    Unfreeze {
        #[command(flatten)]
        scope: crate::operator::FreezeScope,
    },
    /// Approval-token signing keys.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// The audit trail.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// The transparency log (docs/EVIDENCE.md).
    Log {
        #[command(subcommand)]
        command: LogCommand,
    },
    /// An encrypted backup of the database (SQLite: a consistent copy taken
    /// while the server runs) and the keys (docs/DEPLOY.md "Backup and restore").
    Backup(crate::operator::BackupArgs),
    /// Restore a backup into an empty data directory, after checking its
    /// files, its audit chain and its transparency log.
    Restore(crate::operator::RestoreArgs),
    /// Exports for finance (docs/DEPLOY.md "Exports for finance").
    Export {
        #[command(subcommand)]
        command: crate::operator::ExportCommand,
    },
    /// The invoice registry (docs/PAYABLES.md).
    Invoices {
        #[command(subcommand)]
        command: crate::operator::InvoiceCommand,
    },
    /// Reports for operations and finance.
    Report {
        #[command(subcommand)]
        command: crate::operator::ReportCommand,
    },
    /// Proof bundles (docs/EVIDENCE.md).
    Evidence {
        #[command(subcommand)]
        command: EvidenceCommand,
    },
    /// The payment policy.
    Policy {
        #[command(subcommand)]
        command: crate::operator::PolicyCommand,
    },
    /// Serve the Model Context Protocol on stdin/stdout for one agent: its
    /// tools call this deployment's agent API with the agent's key. (`serve`
    /// offers the same tools over streamable HTTP at `/mcp`.)
    Mcp {
        /// The API's base URL (default: the configured `public_url`).
        #[arg(long)]
        url: Option<String>,
        /// The agent's bearer key. Prefer the environment variable: a
        /// command-line argument is visible to other users of the machine.
        #[arg(long, env = "COUNTERSIGN_AGENT_KEY", hide_env_values = true, value_parser = secret)]
        key: secrecy::SecretString,
    },
}

#[derive(Subcommand, Debug)]
pub enum TenantCommand {
    /// Add (or rename) a tenant.
    Add(TenantAdd),
}

#[derive(Args, Debug)]
pub struct TenantAdd {
    #[arg(long)]
    pub id: String,
    #[arg(long)]
    pub name: String,
    /// Daily budget per currency in minor units, e.g. --budget USD=5000000 (repeatable).
    #[arg(long = "budget", value_parser = provision::parse_currency_amount)]
    pub budgets: Vec<(String, u64)>,
}

#[derive(Subcommand, Debug)]
pub enum UserCommand {
    /// Add or update a user. The password is read from COUNTERSIGN_USER_PASSWORD or, if unset, stdin.
    Add(UserAdd),
    /// Link a user to their Slack user id (button presses act as them), or unlink them.
    LinkSlack(UserLinkSlack),
    /// Link a user to their Microsoft Teams account (its Entra ID object id), or unlink them.
    LinkTeams(UserLinkTeams),
    /// Issue a one-time code with which the user can register a passkey
    /// without holding one (their first, or after losing all); prints it once.
    EnrolmentCode(UserRef),
    /// Offboard a user at once: sessions, devices, passkeys, delegations and
    /// uncounted approvals end; agents acting for them freeze (docs/PEOPLE.md).
    Deactivate(UserRef),
    /// Let a deactivated user sign in again (nothing deactivation ended comes back).
    Activate(UserRef),
}

#[derive(Args, Debug)]
pub struct UserRef {
    #[arg(long)]
    pub tenant: String,
    #[arg(long)]
    pub username: String,
}

#[derive(Args, Debug)]
pub struct UserLinkSlack {
    #[arg(long)]
    pub tenant: String,
    #[arg(long)]
    pub username: String,
    /// The Slack member id, e.g. U0123ABCD.
    #[arg(long, required_unless_present = "unlink", conflicts_with = "unlink")]
    pub slack_user_id: Option<String>,
    /// Remove the link instead.
    #[arg(long)]
    pub unlink: bool,
}

#[derive(Args, Debug)]
pub struct UserLinkTeams {
    #[arg(long)]
    pub tenant: String,
    #[arg(long)]
    pub username: String,
    /// Their Entra ID object id (a GUID; Teams sends it as `aadObjectId`).
    #[arg(long, required_unless_present = "unlink", conflicts_with = "unlink")]
    pub aad_object_id: Option<String>,
    /// Remove the link instead.
    #[arg(long)]
    pub unlink: bool,
}

#[derive(Args, Debug)]
pub struct UserAdd {
    #[arg(long)]
    pub tenant: String,
    #[arg(long)]
    pub username: String,
    /// viewer, approver or admin (repeatable).
    #[arg(long = "role", required = true)]
    pub roles: Vec<String>,
    /// Approval limit per currency in minor units, e.g. --limit USD=500000 (repeatable).
    #[arg(long = "limit", value_parser = provision::parse_currency_amount)]
    pub limits: Vec<(String, u64)>,
    #[arg(long)]
    pub slack_user_id: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum AgentCommand {
    /// Add an agent; prints its bearer key once (only its SHA-256 is stored).
    /// For an existing agent, replaces its key (and scope).
    Add(AgentAdd),
    /// Refuse the agent's key from now on (a stolen key, a retired agent).
    /// Its proposals stay; it can no longer commit them.
    Deactivate(AgentRef),
    /// Accept the agent's key again.
    Activate(AgentRef),
    /// The agent's signed webhook (docs/CONFIG.md, `[webhooks]`).
    Webhook {
        #[command(subcommand)]
        command: WebhookCommand,
    },
}

#[derive(Subcommand, Debug)]
pub enum WebhookCommand {
    /// Set the URL each change to the agent's proposals is POSTed to; prints
    /// the new signing secret once.
    Set {
        #[command(flatten)]
        agent: AgentRef,
        #[arg(long)]
        url: String,
    },
    /// A new signing secret (printed once); the previous one keeps signing
    /// until the next rotation.
    Rotate(AgentRef),
    /// Stop sending webhooks to the agent.
    Remove(AgentRef),
    /// The last 50 delivery attempts, newest first.
    Log(AgentRef),
}

#[derive(Args, Debug)]
pub struct AgentRef {
    #[arg(long)]
    pub tenant: String,
    #[arg(long)]
    pub id: String,
}

#[derive(Args, Debug)]
pub struct AgentAdd {
    #[arg(long)]
    pub tenant: String,
    #[arg(long)]
    pub id: String,
    /// Username of the human this agent acts for (they can never approve its proposals).
    #[arg(long)]
    pub acts_for: String,
    /// Source account the agent may pay from (repeatable).
    #[arg(long = "source-account", required = true)]
    pub source_accounts: Vec<String>,
    /// Purpose code the agent may use (repeatable).
    #[arg(long = "purpose", required = true)]
    pub purposes: Vec<String>,
}

#[derive(Subcommand, Debug)]
pub enum PayeeCommand {
    /// Add or update a payee.
    Add(PayeeAdd),
}

#[derive(Args, Debug)]
pub struct PayeeAdd {
    #[arg(long)]
    pub tenant: String,
    #[arg(long)]
    pub id: String,
    #[arg(long)]
    pub legal_name: String,
    /// Small payments to trusted payees may be approved by policy alone.
    #[arg(long)]
    pub trusted: bool,
}

#[derive(Subcommand, Debug)]
pub enum KeysCommand {
    /// Mark a token signing key compromised: it stops verifying at once
    /// (a running server follows within a second), leaves the JWKS, and
    /// tokens it signed are refused at commit (`key_compromised`). If it is
    /// the active key, a new one is made active first.
    Compromised {
        /// The key's kid (as in the JWKS and the tokens' header). A kid is
        /// base64url and may begin with `-`: it is still the kid, not a flag.
        #[arg(allow_hyphen_values = true)]
        kid: String,
    },
    /// Generate a new signing key and make it active. Tokens signed with older
    /// keys stay verifiable until they expire (the keys stay published in
    /// the JWKS that long; receipt keys stay published).
    Rotate {
        /// Rotate the receipt key instead (docs/EVIDENCE.md): receipts
        /// signed with older keys stay verifiable the same way.
        #[arg(long)]
        receipts: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Check the whole hash chain; exits 1 and names the first broken entry.
    Verify,
    /// Re-verify offline every passkey assertion kept with an approval: the
    /// stored public key over the challenge recomputed from the stored
    /// request hash, proposal, approver and nonce. Exits 1 on any failure.
    VerifyApprovals,
}

#[derive(Subcommand, Debug)]
pub enum LogCommand {
    /// Check a deployment's log from outside: fetch its newest checkpoint,
    /// prove it extends the one kept in --checkpoint, then keep it. Exits 2
    /// on a fork, a shrink or a changed key (the kept file is left alone),
    /// 1 when the log cannot be read. Run it from cron.
    Monitor {
        /// The deployment's base URL (default: the configured `public_url`).
        #[arg(long)]
        url: Option<String>,
        /// Where the last accepted checkpoint is kept (created on first run).
        #[arg(long)]
        checkpoint: PathBuf,
        /// Pin the log's note key (`GET /api/v1/log`'s `verifier_key`);
        /// without it, the first run trusts the key it is shown.
        #[arg(long)]
        key: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum EvidenceCommand {
    /// Check a proof bundle offline (`GET /api/v1/proposals/{id}/evidence`
    /// or the console's "Download evidence"): every signature, link and
    /// inclusion proof, with nothing but the file. Prints one line per
    /// check; exits 1 naming the first that fails.
    Verify {
        /// The bundle (JSON).
        file: PathBuf,
        /// A signed checkpoint you trust (e.g. the file `log monitor`
        /// keeps): the bundle must be proven against exactly it.
        #[arg(long)]
        checkpoint: Option<PathBuf>,
        /// Pin the log's note key (`GET /api/v1/log`'s `verifier_key`).
        #[arg(long)]
        key: Option<String>,
    },
}

/// `countersign evidence verify`: reads no database and no key file.
fn verify_evidence(
    file: &std::path::Path,
    checkpoint: Option<&std::path::Path>,
    key: Option<String>,
) -> anyhow::Result<i32> {
    let read =
        |path: &std::path::Path| std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()));
    let bundle: crate::evidence::Bundle =
        serde_json::from_str(&read(file)?).with_context(|| format!("{} is not a proof bundle", file.display()))?;
    let pinned = crate::evidence::verify::Pinned { key, checkpoint: checkpoint.map(read).transpose()? };
    match crate::evidence::verify::verify(&bundle, &pinned) {
        Ok(passed) => {
            for line in passed {
                println!("{line}");
            }
            println!("evidence verified: proposal {} of tenant {}", bundle.proposal_id, bundle.tenant_id);
            Ok(0)
        }
        Err(failure) => {
            eprintln!("FAIL: {failure}");
            Ok(1)
        }
    }
}

fn to_map(pairs: &[(String, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().cloned().collect()
}

/// Runs the command line; the returned code is the process exit code.
/// `countersign agent webhook …`.
async fn webhook(settings: &Settings, command: WebhookCommand) -> anyhow::Result<i32> {
    let db = Db::connect(&settings.backend()?).await?;
    let outcome = match &command {
        WebhookCommand::Set { agent, url } => {
            let now = crate::platform::clock::system_now();
            webhooks::set(&db, &settings.webhooks, &agent.tenant, &agent.id, url, "cli", now).await.map(Some)
        }
        WebhookCommand::Rotate(agent) => {
            let now = crate::platform::clock::system_now();
            webhooks::rotate(&db, &agent.tenant, &agent.id, "cli", now).await.map(Some)
        }
        WebhookCommand::Remove(agent) => webhooks::remove(&db, &agent.tenant, &agent.id, "cli").await.map(|()| None),
        WebhookCommand::Log(agent) => {
            for delivery in webhooks::log(&db, &agent.tenant, &agent.id).await? {
                println!("{}", webhooks::describe(&delivery));
            }
            Ok(None)
        }
    };
    db.close().await;
    match outcome {
        Ok(Some(secret)) => {
            println!("signing secret (shown once; keep it with the receiver): {secret}");
            Ok(0)
        }
        Ok(None) => Ok(0),
        Err(e) => {
            eprintln!("countersign: {e}");
            Ok(1)
        }
    }
}

/// A secret argument: kept out of `Debug` output from the moment it is parsed.
fn secret(text: &str) -> Result<secrecy::SecretString, std::convert::Infallible> {
    Ok(secrecy::SecretString::from(text))
}

pub async fn run(cli: Cli) -> anyhow::Result<i32> {
    if let Command::Probe { url } = &cli.command {
        return crate::operator::probe(url).await; // before the settings: it reads none
    }
    let listen = match &cli.command {
        Command::Serve { listen, .. } => *listen,
        _ => None,
    };
    let overrides = Overrides { listen, data_dir: cli.data_dir.clone() };
    let settings = Settings::load(cli.config.as_deref(), &overrides)?;
    let _telemetry = crate::telemetry::init(settings.log_format, &settings.tracing);

    match cli.command {
        Command::Serve { demo, .. } => {
            crate::startup::serve(settings, demo).await?;
        }
        Command::Mcp { url, key } => {
            let url = url.unwrap_or_else(|| settings.public_url.clone());
            let openapi = serde_json::to_value(crate::http::openapi::document(&url))?;
            crate::mcp::serve_stdio(&url, key, &openapi).await?;
        }
        Command::Migrate => {
            let backend = settings.backend()?;
            let db = Db::connect(&backend).await?;
            db.close().await;
            match backend {
                crate::store::Backend::Sqlite { .. } => {
                    println!("database {} is up to date", settings.database_path().display())
                }
                // Never the URL: it may hold a password.
                crate::store::Backend::Postgres { .. } => println!("PostgreSQL database (database.url) is up to date"),
            }
        }
        Command::Apply { file } => {
            let db = Db::connect(&settings.backend()?).await?;
            let summary = provision::apply_file(&db, &settings, &file).await?;
            println!("{summary}");
        }
        Command::Tenant { command: TenantCommand::Add(a) } => {
            let db = Db::connect(&settings.backend()?).await?;
            provision::add_tenant(&db, &settings, &a.id, &a.name, &to_map(&a.budgets)).await?;
            println!("tenant {} saved", a.id);
        }
        Command::User { command: UserCommand::Add(a) } => {
            let password = match std::env::var("COUNTERSIGN_USER_PASSWORD") {
                Ok(p) => p,
                Err(_) => {
                    let mut p = String::new();
                    std::io::stdin().read_to_string(&mut p).context("reading the password from stdin")?;
                    p.trim_end_matches(['\r', '\n']).to_owned()
                }
            };
            let db = Db::connect(&settings.backend()?).await?;
            let id = provision::add_user(
                &db,
                &settings,
                provision::NewUser {
                    tenant: a.tenant,
                    username: a.username.clone(),
                    credential: provision::NewCredential::Password(password),
                    roles: a.roles,
                    limits: to_map(&a.limits),
                    slack_user_id: a.slack_user_id,
                },
                "cli",
            )
            .await?;
            println!("user {} saved as {id}", a.username);
        }
        Command::User { command: UserCommand::LinkSlack(a) } => {
            let slack = a.slack_user_id.as_deref();
            return crate::operator::link_slack(&settings, &a.tenant, &a.username, slack).await;
        }
        Command::User { command: UserCommand::Deactivate(a) } => {
            return crate::operator::user_lifecycle(settings, &a.tenant, &a.username, true).await
        }
        Command::User { command: UserCommand::Activate(a) } => {
            return crate::operator::user_lifecycle(settings, &a.tenant, &a.username, false).await
        }
        Command::User { command: UserCommand::LinkTeams(a) } => {
            let aad = a.aad_object_id.as_deref();
            return crate::operator::link_teams(&settings, &a.tenant, &a.username, aad).await;
        }
        Command::User { command: UserCommand::EnrolmentCode(a) } => {
            let db = Db::connect(&settings.backend()?).await?;
            let user = {
                let mut conn = db.reader().await?;
                crate::store::directory::user_by_username(&mut conn, &a.username).await?
            };
            let Some(user) = user.filter(|u| u.tenant_id == a.tenant && u.active) else {
                eprintln!("error: tenant {} has no active user {}", a.tenant, a.username);
                return Ok(2);
            };
            let now = crate::platform::clock::system_now();
            let mut tx = db.begin().await?;
            let code = crate::people::passkeys::admin::issue_code(
                &mut tx,
                &settings,
                (&a.tenant, &user.id),
                crate::people::passkeys::admin::Issuer::Operator,
                now,
            )
            .await?;
            tx.commit().await?;
            println!("{code}");
            eprintln!(
                "one-time passkey enrolment code for {} (valid {} h): give it to them yourself; it is not shown again",
                a.username,
                settings.passkeys.enrolment_code_ttl_secs / 3600
            );
        }
        Command::Agent { command: AgentCommand::Add(a) } => {
            let db = Db::connect(&settings.backend()?).await?;
            let key = provision::add_agent(
                &db,
                &settings,
                provision::NewAgent {
                    tenant: a.tenant,
                    id: a.id.clone(),
                    acts_for: a.acts_for,
                    source_accounts: a.source_accounts,
                    purposes: a.purposes,
                },
                "cli",
            )
            .await?;
            println!("agent {} saved. Its bearer key, shown only this once:\n{key}", a.id);
        }
        Command::Agent { command: AgentCommand::Deactivate(a) } => set_agent_active(&settings, &a, false).await?,
        Command::Agent { command: AgentCommand::Activate(a) } => set_agent_active(&settings, &a, true).await?,
        Command::Agent { command: AgentCommand::Webhook { command } } => return webhook(&settings, command).await,
        Command::Payee { command: PayeeCommand::Add(a) } => {
            let db = Db::connect(&settings.backend()?).await?;
            provision::add_payee(&db, &a.tenant, &a.id, &a.legal_name, a.trusted, "cli").await?;
            println!("payee {} saved", crate::domain::mask_account(&a.id));
        }
        Command::Demo => {
            let (state, _trigger) = crate::startup::offline_state(settings).await?;
            let summary = crate::platform::demo::load(&state).await?;
            println!("{summary}");
        }
        Command::Reconcile { operation } => return reconcile(settings, operation.as_deref()).await,
        Command::Export { command } => return crate::operator::export(&settings, command).await,
        Command::Backup(args) => return crate::operator::backup(&settings, args).await,
        Command::Restore(args) => return crate::operator::restore(&settings, args).await,
        Command::Report { command } => return crate::operator::report(&settings, command).await,
        Command::Invoices { command } => return crate::operator::invoices(settings, command).await,
        Command::Policy { command: crate::operator::PolicyCommand::Explain { tenant, agent, file } } => {
            return crate::operator::explain_policy(settings, &tenant, &agent, &file).await;
        }
        Command::Policy { command } => return crate::policy_cli::run(settings, command).await,
        Command::Freeze { scope, reason } => return crate::operator::set_freeze(settings, &scope, true, &reason).await,
        Command::Unfreeze { scope } => return crate::operator::set_freeze(settings, &scope, false, "").await,
        // Answered before the settings were read.
        Command::Probe { .. } => {}
        Command::RailSim { listen, db, settle_after_ms } => {
            let options = crate::rail::sim::SimOptions {
                settle_after: std::time::Duration::from_millis(settle_after_ms),
                ..Default::default()
            };
            crate::rail::sim::run(listen, &db, options).await?;
        }
        Command::Keys { command: KeysCommand::Compromised { kid } } => {
            match crate::decision::approval::keys::KeyStore::mark_compromised(&settings.data_dir, &kid)? {
                Some(new) => println!("key {kid} marked compromised; it was active: new signing key {new} is active"),
                None => println!("key {kid} marked compromised; tokens it signed are refused from now on"),
            }
        }
        Command::Keys { command: KeysCommand::Rotate { receipts } } => {
            crate::store::ensure_private_dir(&settings.data_dir)?;
            if receipts {
                let kid = crate::decision::approval::keys::KeyStore::rotate_receipts(&settings.data_dir)?;
                println!("new receipt key {kid} is active; earlier keys remain published for verification");
            } else {
                let kid = crate::decision::approval::keys::KeyStore::rotate(&settings.data_dir)?;
                println!("new signing key {kid} is active; earlier keys remain published for verification");
            }
        }
        Command::Audit { command: AuditCommand::Verify } => {
            let db = Db::connect(&settings.backend()?).await?;
            match crate::store::audit::verify(&db.read).await? {
                crate::store::audit::Verification::Intact { entries } => {
                    println!("audit trail intact: {entries} entries verified");
                }
                crate::store::audit::Verification::Broken { seq, problem } => {
                    eprintln!("audit trail BROKEN at entry {seq}: {problem}");
                    return Ok(1);
                }
            }
        }
        Command::Evidence { command: EvidenceCommand::Verify { file, checkpoint, key } } => {
            return verify_evidence(&file, checkpoint.as_deref(), key);
        }
        Command::Log { command: LogCommand::Monitor { url, checkpoint, key } } => {
            let url = url.unwrap_or_else(|| settings.public_url.clone());
            match crate::monitor::check(&url, &checkpoint, key.as_deref()).await {
                Ok(crate::monitor::Seen::First { size }) => println!("log checkpoint kept: {size} leaves (first look)"),
                Ok(crate::monitor::Seen::Same { size }) => println!("log unchanged: {size} leaves"),
                Ok(crate::monitor::Seen::Grew { from, to }) => {
                    println!("log consistent: grew from {from} to {to} leaves")
                }
                Err(e) => {
                    eprintln!("countersign: {e}");
                    return Ok(if e.is_alarm() { 2 } else { 1 });
                }
            }
        }
        Command::Audit { command: AuditCommand::VerifyApprovals } => {
            let db = Db::connect(&settings.backend()?).await?;
            let rp = crate::people::passkeys::webauthn::RelyingParty::from_public_url(&settings.public_url);
            let report = crate::people::passkeys::step_up::verify_kept(&db.read, rp.as_ref()).await?;
            for failure in &report.failures {
                eprintln!("FAILED {failure}");
            }
            println!(
                "approval assertions: {} verified, {} failed, of {}",
                report.verified,
                report.failures.len(),
                report.verified + report.failures.len()
            );
            if !report.failures.is_empty() {
                return Ok(1);
            }
        }
    }
    Ok(0)
}

/// `countersign reconcile [--operation ID]`: one pass, one line per operation.
/// Operations the rail could not settle yet stay open and are counted.
async fn reconcile(settings: Settings, operation: Option<&str>) -> anyhow::Result<i32> {
    use crate::commit::operations::{reconcile_one, Reconciled};
    if crate::startup::configured_rail_url(&settings).is_none() {
        anyhow::bail!(
            "no rail to reconcile against: set rail.url, or start `countersign serve` (it runs the bundled simulator)"
        );
    }
    let (state, _trigger) = crate::startup::offline_state(settings).await?;
    let now = state.now();
    let ops = match operation {
        Some(id) => vec![crate::store::operations::get(&state.db.read, id)
            .await?
            .ok_or_else(|| anyhow::anyhow!("no operation {id}"))?],
        // Every open operation, whatever its backoff, but not one a process
        // is calling the rail for (a young commit's, another pass's).
        None => crate::store::operations::due(&state.db.read, now + chrono::Duration::days(3650), now, 1000).await?,
    };
    let mut stuck = 0;
    for op in &ops {
        let result = reconcile_one(&state, op, now).await?;
        let shown = match &result {
            Reconciled::Moved(to) => format!("{} -> {}", op.status.as_str(), to.as_str()),
            Reconciled::StillOpen => {
                stuck += 1;
                format!("{} (still open)", op.status.as_str())
            }
            Reconciled::Raced => format!("{} (settled elsewhere)", op.status.as_str()),
            Reconciled::InFlight => {
                format!("{} (a rail call is in flight elsewhere: try again later)", op.status.as_str())
            }
        };
        println!("{} {}: {shown}", op.id, op.proposal_id);
    }
    println!("reconciled {} operation(s), {stuck} still open", ops.len());
    Ok(0)
}

/// `countersign agent deactivate|activate --tenant T --id ID`.
async fn set_agent_active(settings: &Settings, a: &AgentRef, active: bool) -> anyhow::Result<()> {
    let db = Db::connect(&settings.backend()?).await?;
    provision::set_agent_active(&db, &a.tenant, &a.id, active, "cli").await.map_err(anyhow::Error::msg)?;
    println!(
        "agent {} {}",
        a.id,
        if active { "activated: its key is accepted again" } else { "deactivated: its key is refused" }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kid_that_begins_with_a_hyphen_is_a_kid() {
        let cli = Cli::try_parse_from(["countersign", "keys", "compromised", "-jK3x_9"]).expect("parses");
        assert!(
            matches!(cli.command, Command::Keys { command: KeysCommand::Compromised { ref kid } } if kid == "-jK3x_9"),
            "{cli:?}"
        );
    }
}
