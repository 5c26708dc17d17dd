//! Declarative provisioning (SPEC §14): `countersign apply FILE.toml` and the
//! `tenant | user | agent | payee add` commands.
//!
//! Both paths run the same three steps, so they share every rule:
//!
//! 1. **Validate.** Every value is parsed into its domain type; every problem
//!    is collected with the file, line and key it came from
//!    (`acme.toml:12: key `agent[0].acts_for`: …`). The `add` commands build
//!    the very entry structs the file deserializes into (with empty spans).
//! 2. **Check references**, inside the write transaction and before any
//!    write: the tenant of every user, agent and payee, and the user every
//!    agent acts for, must be defined in the file or the database.
//! 3. **Apply** with the idempotent upserts of [`store::directory`], appending
//!    an audit entry for everything created or updated, in that same
//!    transaction.
//!
//! Nothing is applied unless every step succeeds, and nothing the input does
//! not name is deleted. Applying the same file twice changes nothing the
//! second time. Passwords, password hashes, agent keys and key hashes never
//! appear in an error, a log line or the audit trail.
//!
//! [`store::directory`]: crate::store::directory

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;

use crate::config::Settings;
use crate::domain::Role;
use crate::domain::{
    AgentKey, Currency, CurrencyRules, DisplayText, FieldRule, KeySha256, PayeeId, PurposeCode, RegistryId,
    SlackUserId, SourceAccount, Username,
};
use crate::people::password;
use crate::store::audit::{self, AuditEntry};
use crate::store::directory::{self, AgentSpec, OidcIdentity, Payee, Upsert, UserSpec};
use crate::store::{Conn, Db, StoreError};

// ---------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------

/// A user for `countersign user add`. The password is hashed (argon2id)
/// before it is stored; it never prints, not even in `Debug`.
pub struct NewUser {
    pub tenant: String,
    pub username: String,
    pub credential: NewCredential,
    pub roles: Vec<String>,
    /// Approval limit per currency, in minor units.
    pub limits: BTreeMap<String, u64>,
    pub slack_user_id: Option<String>,
}

impl fmt::Debug for NewUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewUser")
            .field("tenant", &self.tenant)
            .field("username", &self.username)
            .field("credential", &self.credential)
            .field("roles", &self.roles)
            .field("limits", &self.limits)
            .field("slack_user_id", &self.slack_user_id)
            .finish()
    }
}

/// How a [`NewUser`]'s password is given.
pub enum NewCredential {
    /// A plain password (the CLI): hashed before the write transaction starts.
    Password(String),
    /// An argon2id PHC string, hashed earlier (the console hashes through the
    /// server's password gate when the change is proposed).
    Hash(String),
    /// Keep the stored password of an existing user of the same tenant.
    Keep,
}

impl fmt::Debug for NewCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NewCredential::Password(_) => "Password([redacted])",
            NewCredential::Hash(_) => "Hash([redacted])",
            NewCredential::Keep => "Keep",
        })
    }
}

/// An agent for `countersign agent add`; its bearer key is generated.
#[derive(Debug, Clone)]
pub struct NewAgent {
    pub tenant: String,
    pub id: String,
    /// The username of the human this agent acts for (they can never approve its proposals).
    pub acts_for: String,
    pub source_accounts: Vec<String>,
    pub purposes: Vec<String>,
}

/// One invalid value, named by where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file the value came from; `None` for a command-line value.
    pub file: Option<String>,
    /// 1-based line of the value in `file`.
    pub line: Option<usize>,
    /// The key path, e.g. `agent[0].acts_for`; `None` for a TOML syntax error.
    pub key: Option<String>,
    /// Why the value was refused. Never contains a secret.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{file}:{line}: ")?,
            (Some(file), None) => write!(f, "{file}: ")?,
            _ => {}
        }
        if let Some(key) = &self.key {
            write!(f, "key `{key}`: ")?;
        }
        f.write_str(&self.message)
    }
}

/// Why provisioning failed. In every case nothing was applied. No variant
/// ever holds a password, a key or a hash of either.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The input was refused: one line per problem.
    #[error("{}", lines(.0))]
    Invalid(Vec<Problem>),
    #[error("database error")]
    Database(#[from] crate::store::StoreError),
    #[error("password hashing was interrupted")]
    Hashing,
}

fn lines(problems: &[Problem]) -> String {
    problems.iter().map(Problem::to_string).collect::<Vec<_>>().join("\n")
}

/// How many objects of one kind were created, updated or left unchanged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub created: usize,
    pub updated: usize,
    pub unchanged: usize,
}

impl Counts {
    fn by_outcome(self) -> [(usize, &'static str); 3] {
        [(self.created, "created"), (self.updated, "updated"), (self.unchanged, "unchanged")]
    }

    fn add(&mut self, outcome: Upsert) {
        match outcome {
            Upsert::Created => self.created += 1,
            Upsert::Updated => self.updated += 1,
            Upsert::Unchanged => self.unchanged += 1,
        }
    }
}

/// What an apply did, e.g. `applied acme.toml: 1 tenant created, 2 users
/// created, 1 agent unchanged`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplySummary {
    /// The file (or name) that was applied.
    pub source: String,
    pub tenants: Counts,
    pub budgets: Counts,
    pub users: Counts,
    pub agents: Counts,
    pub payees: Counts,
}

impl ApplySummary {
    fn kinds(&self) -> [(&'static str, Counts); 5] {
        [
            ("tenant", self.tenants),
            ("budget", self.budgets),
            ("user", self.users),
            ("agent", self.agents),
            ("payee", self.payees),
        ]
    }

    /// How many objects were created or updated (0 on a repeated apply).
    pub fn changed(&self) -> usize {
        self.kinds().iter().map(|(_, c)| c.created + c.updated).sum()
    }
}

impl fmt::Display for ApplySummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        for (noun, counts) in self.kinds() {
            for (n, verb) in counts.by_outcome() {
                if n > 0 {
                    let plural = if n == 1 { "" } else { "s" };
                    parts.push(format!("{n} {noun}{plural} {verb}"));
                }
            }
        }
        if parts.is_empty() {
            write!(f, "applied {}: nothing to apply", self.source)
        } else {
            write!(f, "applied {}: {}", self.source, parts.join(", "))
        }
    }
}

/// `countersign apply FILE.toml`: creates or updates everything the file
/// names, or nothing at all if anything in it is invalid.
pub async fn apply_file(db: &Db, settings: &Settings, path: &Path) -> Result<ApplySummary, ApplyError> {
    let name = path.display().to_string();
    let text =
        tokio::fs::read_to_string(path).await.map_err(|source| ApplyError::Read { path: name.clone(), source })?;
    apply_toml(db, settings, &name, &text).await
}

/// Applies provisioning TOML held in memory; `name` is the file name used in
/// error messages and the summary.
pub async fn apply_toml(db: &Db, settings: &Settings, name: &str, text: &str) -> Result<ApplySummary, ApplyError> {
    let source = Source::file(name, text);
    let file = parse_file(&source)?;
    let plan = validate_file(&source, &file, &settings.currency_rules(), settings)?;
    warn_development_secrets(&plan);
    let applied = execute(db, &source, &plan).await?;
    Ok(ApplySummary { source: name.to_owned(), ..applied.summary })
}

/// `countersign tenant add`: creates the tenant or renames it, and sets the
/// daily budgets given (other currencies' budgets are left as they are).
pub async fn add_tenant(
    db: &Db,
    settings: &Settings,
    id: &str,
    name: &str,
    budgets: &BTreeMap<String, u64>,
) -> Result<(), ApplyError> {
    let entry = TenantEntry {
        id: cli(id.to_owned()),
        name: cli(name.to_owned()),
        daily_budget_minor: Some(cli_amounts(budgets)),
    };
    let rules = settings.currency_rules();
    add_one(db, "cli", |c| Plan {
        tenants: validate_tenant(c, "tenant", &cli(entry), &rules).into_iter().collect(),
        ..Plan::default()
    })
    .await
    .map(drop)
}

/// `countersign user add`: creates the user or updates the one with that
/// username (in the same tenant). Returns the user id. `actor` is who the
/// audit entry names (`cli`, or `user:…` for an admin on the console).
pub async fn add_user(db: &Db, settings: &Settings, u: NewUser, actor: &str) -> Result<String, ApplyError> {
    let applied = add_one(db, actor, user_plan(settings, u)).await?;
    Ok(applied.user_ids.into_values().next().expect("the plan held exactly one user"))
}

/// [`add_user`] inside the caller's write transaction (a confirmed console
/// change). The credential must already be a hash (or kept).
pub async fn add_user_in(conn: &mut Conn, settings: &Settings, u: NewUser, actor: &str) -> Result<String, ApplyError> {
    let applied = add_one_in(conn, actor, user_plan(settings, u)).await?;
    Ok(applied.user_ids.into_values().next().expect("the plan held exactly one user"))
}

/// Checks a user as [`add_user`] would (every value, no references), without applying it.
pub fn check_user(settings: &Settings, u: NewUser) -> Result<(), ApplyError> {
    let source = Source::cli("check");
    let mut checker = Checker::new(&source);
    let plan = user_plan(settings, u)(&mut checker);
    checker.finish(plan).map(drop)
}

fn user_plan(settings: &Settings, u: NewUser) -> impl FnOnce(&mut Checker<'_>) -> Plan {
    let (password, password_hash, keep_password) = match u.credential {
        NewCredential::Password(p) => (Some(cli(SecretString::from(p))), None, false),
        NewCredential::Hash(h) => (None, Some(cli(h)), false),
        NewCredential::Keep => (None, None, true),
    };
    let entry = UserEntry {
        tenant: cli(u.tenant),
        username: cli(u.username),
        password,
        password_hash,
        keep_password,
        roles: cli(u.roles.into_iter().map(cli).collect()),
        approval_limit_minor: Some(cli_amounts(&u.limits)),
        slack_user_id: u.slack_user_id.map(cli),
        oidc_issuer: None,
        oidc_subject: None,
        keep_oidc: true,
    };
    let rules = settings.currency_rules();
    let settings = settings.clone();
    move |c| Plan {
        users: validate_user(c, "user", &cli(entry), &rules, &settings).into_iter().collect(),
        ..Plan::default()
    }
}

/// `countersign agent add`: creates the agent (or updates it, rotating its
/// key) with a freshly generated live key, of which only the SHA-256 is
/// stored. Returns the key, to be shown once.
pub async fn add_agent(db: &Db, _settings: &Settings, a: NewAgent, actor: &str) -> Result<String, ApplyError> {
    let key = generate_agent_key(true);
    add_one(db, actor, agent_plan(a, key_sha256(&key))).await?;
    Ok(key)
}

/// Checks an agent (and its key hash) as [`add_agent`] would, without applying it.
pub fn check_agent(a: NewAgent, key_sha256: String) -> Result<(), ApplyError> {
    let source = Source::cli("check");
    let mut checker = Checker::new(&source);
    let plan = agent_plan(a, key_sha256)(&mut checker);
    checker.finish(plan).map(drop)
}

/// [`add_agent`] with a key generated earlier (only its SHA-256 is given),
/// inside the caller's write transaction (a confirmed console change).
pub async fn add_agent_in(conn: &mut Conn, a: NewAgent, key_sha256: String, actor: &str) -> Result<(), ApplyError> {
    add_one_in(conn, actor, agent_plan(a, key_sha256)).await.map(drop)
}

fn agent_plan(a: NewAgent, key_sha256: String) -> impl FnOnce(&mut Checker<'_>) -> Plan {
    let entry = AgentEntry {
        tenant: cli(a.tenant),
        id: cli(a.id),
        key_sha256: Some(cli(key_sha256)),
        key: None,
        acts_for: cli(a.acts_for),
        source_accounts: cli(a.source_accounts.into_iter().map(cli).collect()),
        purposes: cli(a.purposes.into_iter().map(cli).collect()),
    };
    move |c| Plan { agents: validate_agent(c, "agent", &cli(entry)).into_iter().collect(), ..Plan::default() }
}

/// `countersign payee add`: creates the payee or updates its legal name and
/// trust.
pub async fn add_payee(
    db: &Db,
    tenant: &str,
    id: &str,
    legal_name: &str,
    trusted: bool,
    actor: &str,
) -> Result<(), ApplyError> {
    add_one(db, actor, payee_plan(tenant, id, legal_name, trusted)).await.map(drop)
}

/// [`add_payee`] inside the caller's write transaction (a confirmed console change).
pub async fn add_payee_in(
    conn: &mut Conn,
    tenant: &str,
    id: &str,
    legal_name: &str,
    trusted: bool,
    actor: &str,
) -> Result<(), ApplyError> {
    add_one_in(conn, actor, payee_plan(tenant, id, legal_name, trusted)).await.map(drop)
}

/// Checks a payee as [`add_payee`] would, without applying it.
pub fn check_payee(tenant: &str, id: &str, legal_name: &str) -> Result<(), ApplyError> {
    let source = Source::cli("check");
    let mut checker = Checker::new(&source);
    let plan = payee_plan(tenant, id, legal_name, false)(&mut checker);
    checker.finish(plan).map(drop)
}

fn payee_plan(tenant: &str, id: &str, legal_name: &str, trusted: bool) -> impl FnOnce(&mut Checker<'_>) -> Plan {
    let entry = PayeeEntry {
        tenant: cli(tenant.to_owned()),
        id: cli(id.to_owned()),
        legal_name: cli(legal_name.to_owned()),
        trusted: Some(cli(trusted)),
    };
    move |c| Plan { payees: validate_payee(c, "payee", &cli(entry)).into_iter().collect(), ..Plan::default() }
}

/// The `add` commands: validates one command-line entry into a plan (with
/// the same rules as a file) and applies it.
async fn add_one(db: &Db, actor: &str, plan: impl FnOnce(&mut Checker<'_>) -> Plan) -> Result<Applied, ApplyError> {
    let source = Source::cli(actor);
    let mut checker = Checker::new(&source);
    let plan = plan(&mut checker);
    let plan = checker.finish(plan)?;
    execute(db, &source, &plan).await
}

/// [`add_one`] inside the caller's transaction: no plain password may be in
/// the plan (nothing slow runs while the writer is held).
async fn add_one_in(
    conn: &mut Conn,
    actor: &str,
    plan: impl FnOnce(&mut Checker<'_>) -> Plan,
) -> Result<Applied, ApplyError> {
    let source = Source::cli(actor);
    let mut checker = Checker::new(&source);
    let plan = plan(&mut checker);
    let plan = checker.finish(plan)?;
    execute_in(conn, &source, &plan, &BTreeMap::new()).await
}

/// `countersign user link-slack` and the admin page: links a user of
/// `tenant` to a Slack user id (or unlinks them with `None`), with an audit
/// entry naming `actor`. The error is one line for a person to read.
pub async fn link_slack(db: &Db, tenant: &str, username: &str, slack: Option<&str>, actor: &str) -> Result<(), String> {
    let mut tx = db.begin().await.map_err(slack_link_failure)?;
    link_slack_in(&mut tx, tenant, username, slack, actor).await?;
    tx.commit().await.map_err(slack_link_failure)
}

fn slack_link_failure(e: StoreError) -> String {
    if e.is_conflict() {
        "that Slack user id is already linked to another user".to_owned()
    } else {
        tracing::error!(error = %e, "cannot link a Slack user id");
        "database error".to_owned()
    }
}

/// Checks a Slack user id as [`link_slack`] would.
pub fn check_slack_user_id(slack: &str) -> Result<String, String> {
    slack_user_id(slack).map_err(|why| format!("slack_user_id {why}"))
}

/// [`link_slack`] inside the caller's write transaction.
pub async fn link_slack_in(
    conn: &mut Conn,
    tenant: &str,
    username: &str,
    slack: Option<&str>,
    actor: &str,
) -> Result<(), String> {
    let slack = slack.map(check_slack_user_id).transpose()?;
    let fail = slack_link_failure;
    if !directory::set_slack_user_id(&mut *conn, tenant, username, slack.as_deref()).await.map_err(fail)? {
        return Err(format!("there is no user {username} in tenant {tenant}"));
    }
    let entry = AuditEntry {
        tenant_id: Some(tenant.to_owned()),
        actor: actor.to_owned(),
        action: if slack.is_some() { "registry.user.slack_linked" } else { "registry.user.slack_unlinked" }.into(),
        proposal_id: None,
        request_hash: None,
        data: json!({"username": username, "slack_user_id": slack}),
    };
    audit::append(conn, &entry).await.map_err(fail)
}

/// `countersign agent deactivate` / `activate`: an inactive agent's key is
/// refused everywhere (propose, cancel and commit at once; status polls as
/// soon as the server reads the change log, docs/ARCHITECTURE.md "Read
/// caches"). Its proposals stay as they are. Audited with `actor`.
pub async fn set_agent_active(db: &Db, tenant: &str, id: &str, active: bool, actor: &str) -> Result<(), String> {
    let fail = |e: StoreError| {
        tracing::error!(error = %e, "cannot change an agent's active flag");
        "database error".to_owned()
    };
    let mut tx = db.begin().await.map_err(fail)?;
    if !directory::set_agent_active(&mut tx, tenant, id, active).await.map_err(fail)? {
        return Err(format!("there is no agent {id} in tenant {tenant}"));
    }
    let entry = AuditEntry {
        tenant_id: Some(tenant.to_owned()),
        actor: actor.to_owned(),
        action: if active { "registry.agent.activated" } else { "registry.agent.deactivated" }.into(),
        proposal_id: None,
        request_hash: None,
        data: json!({"agent_id": id}),
    };
    audit::append(&mut tx, &entry).await.map_err(fail)?;
    tx.commit().await.map_err(fail)
}

/// `CUR=AMOUNT_MINOR` (e.g. `USD=500_000`), as the CLI flags take budgets
/// and approval limits; the currency is upper-cased and checked later with
/// every other value.
pub fn parse_currency_amount(s: &str) -> Result<(String, u64), String> {
    let (code, amount) = s.split_once('=').ok_or("expected CURRENCY=AMOUNT_MINOR, e.g. USD=500000")?;
    let amount = amount.replace('_', "").parse::<u64>().map_err(|_| format!("`{amount}` is not a whole number"))?;
    Ok((code.trim().to_ascii_uppercase(), amount))
}

/// A new agent bearer key: `cs_live_` (or `cs_test_`) and 32 random base62
/// characters from the operating system's generator (about 190 bits).
pub fn generate_agent_key(live: bool) -> String {
    use rand::{distributions::Alphanumeric, rngs::OsRng, Rng};
    let body: String = OsRng.sample_iter(&Alphanumeric).take(32).map(char::from).collect();
    AgentKey::from_random(live, &body).expect("32 base62 characters make a key").expose().to_owned()
}

/// Lowercase hex SHA-256 of a key: the only form in which keys are stored.
pub fn key_sha256(key: &str) -> String {
    crate::domain::key_sha256(key).into_string()
}

mod execute;
mod file;
mod plan;

pub use execute::unavailable_username;
use execute::*;
use file::*;
use plan::*;

#[cfg(test)]
mod tests;
