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
use crate::password;
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

// ---------------------------------------------------------------------------
// The file format (SPEC §14)
// ---------------------------------------------------------------------------

/// Amounts per currency: `{ USD = 5_000_000 }`.
type Amounts = BTreeMap<Spanned<String>, Spanned<u64>>;
type TextList = Spanned<Vec<Spanned<String>>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProvisionFile {
    #[serde(default)]
    tenant: Vec<Spanned<TenantEntry>>,
    #[serde(default)]
    user: Vec<Spanned<UserEntry>>,
    #[serde(default)]
    agent: Vec<Spanned<AgentEntry>>,
    #[serde(default)]
    payee: Vec<Spanned<PayeeEntry>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TenantEntry {
    id: Spanned<String>,
    name: Spanned<String>,
    daily_budget_minor: Option<Spanned<Amounts>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserEntry {
    tenant: Spanned<String>,
    username: Spanned<String>,
    /// Development only: hashed before it is stored.
    password: Option<Spanned<SecretString>>,
    password_hash: Option<Spanned<String>>,
    /// Never in a file: the console's "keep the current password".
    #[serde(skip)]
    keep_password: bool,
    roles: TextList,
    approval_limit_minor: Option<Spanned<Amounts>>,
    slack_user_id: Option<Spanned<String>>,
    /// Single sign-on: the issuer of one of `[oidc.providers]`, exactly.
    oidc_issuer: Option<Spanned<String>>,
    /// ... and the user's subject (`sub`) there.
    oidc_subject: Option<Spanned<String>>,
    /// Never in a file: the console's and the CLI's "keep the link".
    #[serde(skip)]
    keep_oidc: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentEntry {
    tenant: Spanned<String>,
    id: Spanned<String>,
    key_sha256: Option<Spanned<String>>,
    /// Development only: only its SHA-256 is stored.
    key: Option<Spanned<SecretString>>,
    acts_for: Spanned<String>,
    source_accounts: TextList,
    purposes: TextList,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PayeeEntry {
    tenant: Spanned<String>,
    id: Spanned<String>,
    legal_name: Spanned<String>,
    trusted: Option<Spanned<bool>>,
}

/// A command-line value: it has no place in a file.
fn cli<T>(value: T) -> Spanned<T> {
    Spanned::new(0..0, value)
}

fn cli_amounts(amounts: &BTreeMap<String, u64>) -> Spanned<Amounts> {
    cli(amounts.iter().map(|(code, n)| (cli(code.clone()), cli(*n))).collect())
}

// ---------------------------------------------------------------------------
// Where values come from
// ---------------------------------------------------------------------------

/// The origin of the values being applied: a named file (whose text gives
/// line numbers) or the command line.
struct Source<'a> {
    name: Option<&'a str>,
    text: &'a str,
    /// Who the audit entries name: `cli`, or the admin (`user:…`) on the console.
    actor: &'a str,
}

impl<'a> Source<'a> {
    fn file(name: &'a str, text: &'a str) -> Self {
        Source { name: Some(name), text, actor: "cli" }
    }

    fn cli(actor: &'a str) -> Source<'a> {
        Source { name: None, text: "", actor }
    }

    fn loc(&self, key: String, span: &Range<usize>) -> Loc {
        Loc { file: self.name.map(str::to_owned), line: self.name.map(|_| line_of(self.text, span.start)), key }
    }

    /// Where a referenced tenant or user was looked for.
    fn defined_where(&self) -> &'static str {
        if self.name.is_some() {
            "in this file or the database"
        } else {
            "in the database"
        }
    }
}

/// The 1-based line holding byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|b| **b == b'\n').count() + 1
}

/// `prefix.name`, or just `name` at the top level.
fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

/// Where one value was written: what a [`Problem`] about it names.
#[derive(Debug, Clone)]
struct Loc {
    file: Option<String>,
    line: Option<usize>,
    key: String,
}

impl Loc {
    fn problem(&self, message: impl Into<String>) -> Problem {
        Problem { file: self.file.clone(), line: self.line, key: Some(self.key.clone()), message: message.into() }
    }
}

/// A validated value with where it was written, for problems found later.
#[derive(Debug, Clone)]
struct Located<T> {
    value: T,
    at: Loc,
}

// ---------------------------------------------------------------------------
// Parsing: TOML into the entry structs, errors named by line and key
// ---------------------------------------------------------------------------

fn parse_file(source: &Source<'_>) -> Result<ProvisionFile, ApplyError> {
    toml::from_str(source.text).map_err(|e| ApplyError::Invalid(vec![toml_problem(source, &e)]))
}

/// A TOML or schema error (syntax, unknown key, wrong type, missing key)
/// as a [`Problem`]: the span gives the line, [`locate`] the key.
fn toml_problem(source: &Source<'_>, e: &toml::de::Error) -> Problem {
    let span = e.span();
    let mut key = span.as_ref().and_then(|s| locate::key_at(source.text, s.start));
    if let Some(field) = e.message().strip_prefix("missing field `").and_then(|m| m.strip_suffix('`')) {
        key = Some(join(key.as_deref().unwrap_or(""), field));
    }
    Problem {
        file: source.name.map(str::to_owned),
        line: span.map(|s| line_of(source.text, s.start)),
        key,
        message: e.message().trim().replace('\n', "; "),
    }
}

/// Finds the key path (`agent[0].acts_for`) at a byte offset of a TOML
/// document. Serde reports where an error is, not which key it is about.
mod locate {
    use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
    use std::fmt;
    use std::ops::Range;
    use toml::Spanned;

    /// The path of the smallest key or value containing `offset`, if the
    /// document is valid TOML.
    pub(super) fn key_at(text: &str, offset: usize) -> Option<String> {
        let root: Node = toml::from_str(text).ok()?;
        let mut best = None;
        root.visit("", offset, &mut best);
        best.map(|(path, _)| path).filter(|path: &String| !path.is_empty())
    }

    /// A TOML value with its span, and the spans of its keys and items.
    /// A value the deserializer will not span (a date-time's internals) is an
    /// opaque leaf: the locator never fails on valid TOML.
    struct Node {
        span: Option<Range<usize>>,
        kind: Kind,
    }

    enum Kind {
        Leaf,
        Table(Vec<(Option<Spanned<String>>, Node)>),
        Array(Vec<Node>),
    }

    type Best = Option<(String, usize)>;

    impl Node {
        fn visit(&self, path: &str, offset: usize, best: &mut Best) {
            consider(path, self.span.as_ref(), offset, best);
            match &self.kind {
                Kind::Leaf => {}
                Kind::Table(entries) => {
                    for (key, node) in entries {
                        let Some(key) = key else { continue };
                        let path = super::join(path, key.get_ref());
                        consider(&path, Some(&key.span()), offset, best);
                        node.visit(&path, offset, best);
                    }
                }
                Kind::Array(items) => {
                    for (i, node) in items.iter().enumerate() {
                        node.visit(&format!("{path}[{i}]"), offset, best);
                    }
                }
            }
        }
    }

    /// Keeps `path` if its span holds `offset` and is no wider than the best
    /// so far (ties go to the deeper path, visited later).
    fn consider(path: &str, span: Option<&Range<usize>>, offset: usize, best: &mut Best) {
        let Some(span) = span.filter(|s| s.contains(&offset)) else { return };
        if best.as_ref().is_none_or(|(_, width)| span.len() <= *width) {
            *best = Some((path.to_owned(), span.len()));
        }
    }

    impl<'de> Deserialize<'de> for Node {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            Ok(match Spanned::<Kind>::deserialize(d) {
                Ok(s) => Node { span: Some(s.span()), kind: s.into_inner() },
                Err(_) => Node { span: None, kind: Kind::Leaf },
            })
        }
    }

    /// A key with its span, when the deserializer gives one.
    struct Key(Option<Spanned<String>>);

    impl<'de> Deserialize<'de> for Key {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            Ok(Key(Spanned::<String>::deserialize(d).ok()))
        }
    }

    impl<'de> Deserialize<'de> for Kind {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(KindVisitor)
        }
    }

    struct KindVisitor;

    impl<'de> Visitor<'de> for KindVisitor {
        type Value = Kind;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any TOML value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<Kind, E> {
            Ok(Kind::Leaf)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Kind, E> {
            Ok(Kind::Leaf)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Kind, E> {
            Ok(Kind::Leaf)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Kind, E> {
            Ok(Kind::Leaf)
        }
        fn visit_str<E>(self, _: &str) -> Result<Kind, E> {
            Ok(Kind::Leaf)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Kind, A::Error> {
            let mut items = Vec::new();
            while let Some(node) = seq.next_element::<Node>()? {
                items.push(node);
            }
            Ok(Kind::Array(items))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Kind, A::Error> {
            let mut entries = Vec::new();
            while let Some(Key(key)) = map.next_key::<Key>()? {
                entries.push((key, map.next_value::<Node>()?));
            }
            Ok(Kind::Table(entries))
        }
    }
}

// ---------------------------------------------------------------------------
// Validation: entries into a plan of typed values, every problem collected
// ---------------------------------------------------------------------------

/// Everything to apply, validated; references not yet checked.
#[derive(Default)]
struct Plan {
    tenants: Vec<TenantPlan>,
    users: Vec<UserPlan>,
    agents: Vec<AgentPlan>,
    payees: Vec<PayeePlan>,
}

struct TenantPlan {
    id: Located<String>,
    name: String,
    /// Daily budget per currency code, in minor units.
    budgets: BTreeMap<String, u64>,
}

struct UserPlan {
    entry: Loc,
    tenant: Located<String>,
    username: Located<String>,
    credential: Credential,
    roles: Vec<Role>,
    limits: BTreeMap<String, u64>,
    slack_user_id: Option<Located<String>>,
    /// `None`: keep the stored link; `Some(None)`: no link.
    oidc: Option<Option<Located<OidcIdentity>>>,
}

/// How a user's password is given.
enum Credential {
    /// An argon2id PHC string, stored as is.
    Hash(String),
    /// A plain password (the `add` command, or a development file), hashed
    /// before the write transaction starts.
    Plain { password: SecretString, at: Loc },
    /// The stored password of the existing user stays.
    Keep { at: Loc },
}

struct AgentPlan {
    entry: Loc,
    tenant: Located<String>,
    id: Located<String>,
    key_sha256: Located<String>,
    /// Where a plain development key was given instead of its hash.
    plain_key_at: Option<Loc>,
    acts_for: Located<String>,
    source_accounts: Vec<SourceAccount>,
    purposes: Vec<PurposeCode>,
}

struct PayeePlan {
    entry: Loc,
    tenant: Located<String>,
    id: Located<PayeeId>,
    legal_name: String,
    trusted: bool,
}

/// Parses values, recording a [`Problem`] for each one refused.
struct Checker<'s> {
    source: &'s Source<'s>,
    problems: Vec<Problem>,
}

impl<'s> Checker<'s> {
    fn new(source: &'s Source<'s>) -> Self {
        Checker { source, problems: Vec::new() }
    }

    fn loc<T>(&self, key: &str, value: &Spanned<T>) -> Loc {
        self.source.loc(key.to_owned(), &value.span())
    }

    fn fail<T>(&mut self, key: &str, value: &Spanned<T>, why: impl fmt::Display) {
        let problem = self.loc(key, value).problem(why.to_string());
        self.problems.push(problem);
    }

    /// `rule(value)`, or `None` with a problem recorded under `key`.
    fn parse<T, U, E: fmt::Display>(
        &mut self,
        key: &str,
        value: &Spanned<T>,
        rule: impl FnOnce(&T) -> Result<U, E>,
    ) -> Option<U> {
        rule(value.get_ref()).map_err(|why| self.fail(key, value, why)).ok()
    }

    /// Like [`Checker::parse`], remembering where the value was written.
    fn parse_located<T, U, E: fmt::Display>(
        &mut self,
        key: &str,
        value: &Spanned<T>,
        rule: impl FnOnce(&T) -> Result<U, E>,
    ) -> Option<Located<U>> {
        let at = self.loc(key, value);
        self.parse(key, value, rule).map(|value| Located { value, at })
    }

    /// An optional value: `Some(None)` when absent, `None` when refused.
    fn parse_optional<T, U, E: fmt::Display>(
        &mut self,
        key: &str,
        value: Option<&Spanned<T>>,
        rule: impl FnOnce(&T) -> Result<U, E>,
    ) -> Option<Option<Located<U>>> {
        match value {
            None => Some(None),
            Some(value) => self.parse_located(key, value, rule).map(Some),
        }
    }

    /// Exactly one of a credential's stored form (`stored`: its key name and
    /// value) and its development-only plain form: the one given, or `None`
    /// with a problem when both or neither are.
    fn exactly_one<'v, H, P, E>(
        &mut self,
        at: &str,
        entry: &Spanned<E>,
        stored: (&str, &'v Option<Spanned<H>>),
        plain: (&str, &'v Option<Spanned<P>>),
        what_stored_is: &str,
    ) -> Option<Given<'v, H, P>> {
        match (stored.1, plain.1) {
            (Some(value), None) => Some(Given::Stored(value)),
            (None, Some(value)) => Some(Given::Plain(value)),
            (Some(value), Some(_)) => {
                let why = format!("give either `{}` or `{}`, not both", stored.0, plain.0);
                self.fail(&join(at, stored.0), value, why);
                None
            }
            (None, None) => {
                let why = format!(
                    "is missing: give `{}` ({what_stored_is}) or, for development only, `{}`",
                    stored.0, plain.0
                );
                self.fail(&join(at, stored.0), entry, why);
                None
            }
        }
    }

    /// A non-empty list, each item parsed by `rule`; sorted and deduplicated
    /// so that the stored form does not depend on the order written.
    fn list<U: Ord, E: fmt::Display>(
        &mut self,
        key: &str,
        values: &TextList,
        rule: impl Fn(&str) -> Result<U, E>,
    ) -> Option<Vec<U>> {
        if values.get_ref().is_empty() {
            self.fail(key, values, "must list at least one value");
            return None;
        }
        let parsed: Vec<Option<U>> = values
            .get_ref()
            .iter()
            .enumerate()
            .map(|(i, item)| self.parse(&format!("{key}[{i}]"), item, |s| rule(s)))
            .collect();
        let mut items: Vec<U> = parsed.into_iter().collect::<Option<_>>()?;
        items.sort();
        items.dedup();
        Some(items)
    }

    /// Amounts per currency: upper-case codes the deployment accepts,
    /// amounts that fit the database.
    fn amounts(
        &mut self,
        key: &str,
        amounts: Option<&Spanned<Amounts>>,
        rules: &CurrencyRules,
    ) -> Option<BTreeMap<String, u64>> {
        let Some(amounts) = amounts else { return Some(BTreeMap::new()) };
        let parsed: Vec<Option<(String, u64)>> = amounts
            .get_ref()
            .iter()
            .map(|(code, amount)| {
                let key = join(key, code.get_ref());
                let code = self.parse(&key, code, |c| accepted_currency(c, rules));
                let amount = self.parse(&key, amount, |n| storable_amount(*n));
                code.zip(amount)
            })
            .collect();
        parsed.into_iter().collect()
    }

    /// The plan, or every problem found.
    fn finish(mut self, plan: Plan) -> Result<Plan, ApplyError> {
        self.problems.extend(duplicates(&plan));
        if self.problems.is_empty() {
            Ok(plan)
        } else {
            Err(ApplyError::Invalid(self.problems))
        }
    }
}

fn validate_file(
    source: &Source<'_>,
    file: &ProvisionFile,
    rules: &CurrencyRules,
    settings: &Settings,
) -> Result<Plan, ApplyError> {
    let mut c = Checker::new(source);
    let plan = Plan {
        tenants: each(&mut c, "tenant", &file.tenant, |c, at, e| validate_tenant(c, at, e, rules)),
        users: each(&mut c, "user", &file.user, |c, at, e| validate_user(c, at, e, rules, settings)),
        agents: each(&mut c, "agent", &file.agent, validate_agent),
        payees: each(&mut c, "payee", &file.payee, validate_payee),
    };
    c.finish(plan)
}

/// Validates every entry of one array of tables, keyed `kind[i]`.
fn each<E, P>(
    c: &mut Checker<'_>,
    kind: &str,
    entries: &[Spanned<E>],
    validate: impl Fn(&mut Checker<'_>, &str, &Spanned<E>) -> Option<P>,
) -> Vec<P> {
    entries.iter().enumerate().filter_map(|(i, entry)| validate(c, &format!("{kind}[{i}]"), entry)).collect()
}

fn validate_tenant(
    c: &mut Checker<'_>,
    at: &str,
    entry: &Spanned<TenantEntry>,
    rules: &CurrencyRules,
) -> Option<TenantPlan> {
    let e = entry.get_ref();
    let id = c.parse_located(&join(at, "id"), &e.id, |s| registry_id(s));
    let name = c.parse(&join(at, "name"), &e.name, |s| display_text(s));
    let budgets = c.amounts(&join(at, "daily_budget_minor"), e.daily_budget_minor.as_ref(), rules);
    Some(TenantPlan { id: id?, name: name?, budgets: budgets? })
}

fn validate_user(
    c: &mut Checker<'_>,
    at: &str,
    entry: &Spanned<UserEntry>,
    rules: &CurrencyRules,
    settings: &Settings,
) -> Option<UserPlan> {
    let e = entry.get_ref();
    let tenant = c.parse_located(&join(at, "tenant"), &e.tenant, |s| registry_id(s));
    let username = c.parse_located(&join(at, "username"), &e.username, |s| username(s));
    let credential = credential(c, at, entry);
    let roles = c.list(&join(at, "roles"), &e.roles, |s| {
        Role::parse(s).ok_or_else(|| format!("`{s}` is not a role: must be viewer, approver or admin"))
    });
    let limits = c.amounts(&join(at, "approval_limit_minor"), e.approval_limit_minor.as_ref(), rules);
    let slack_user_id = c.parse_optional(&join(at, "slack_user_id"), e.slack_user_id.as_ref(), |s| slack_user_id(s));
    let oidc = oidc_link(c, at, entry, settings);
    Some(UserPlan {
        entry: c.loc(at, entry),
        tenant: tenant?,
        username: username?,
        credential: credential?,
        roles: roles?,
        limits: limits?,
        slack_user_id: slack_user_id?,
        oidc: oidc?,
    })
}

/// `oidc_issuer` and `oidc_subject`, both or neither: the issuer must be
/// one of the configured providers' (exactly: a trailing slash matters),
/// the subject 1-255 visible ASCII characters (OpenID Connect Core 2).
fn oidc_link(
    c: &mut Checker<'_>,
    at: &str,
    entry: &Spanned<UserEntry>,
    settings: &Settings,
) -> Option<Option<Option<Located<OidcIdentity>>>> {
    let e = entry.get_ref();
    match (&e.oidc_issuer, &e.oidc_subject) {
        (None, None) if e.keep_oidc => Some(None),
        (None, None) => Some(Some(None)),
        (Some(issuer), Some(subject)) => {
            let issuer = c.parse(&join(at, "oidc_issuer"), issuer, |i| {
                if settings.oidc.providers.values().any(|p| &p.issuer == i) {
                    Ok(i.clone())
                } else {
                    Err("is not the issuer of any provider in the server's [oidc.providers] (compared exactly)")
                }
            });
            let subject_at = c.loc(&join(at, "oidc_subject"), subject);
            let subject = c.parse(&join(at, "oidc_subject"), subject, |s| {
                if (1..=255).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_graphic()) {
                    Ok(s.clone())
                } else {
                    Err("must be 1-255 visible ASCII characters")
                }
            });
            Some(Some(Some(Located { value: OidcIdentity { issuer: issuer?, subject: subject? }, at: subject_at })))
        }
        (Some(issuer), None) => {
            c.fail(&join(at, "oidc_subject"), issuer, "is missing: give oidc_issuer and oidc_subject together");
            None
        }
        (None, Some(subject)) => {
            c.fail(&join(at, "oidc_issuer"), subject, "is missing: give oidc_issuer and oidc_subject together");
            None
        }
    }
}

/// Which of a credential's two forms an entry gave.
enum Given<'v, H, P> {
    Stored(&'v Spanned<H>),
    Plain(&'v Spanned<P>),
}

/// Exactly one of `password_hash` (an argon2id PHC string) and `password`.
fn credential(c: &mut Checker<'_>, at: &str, entry: &Spanned<UserEntry>) -> Option<Credential> {
    let e = entry.get_ref();
    if e.keep_password && e.password.is_none() && e.password_hash.is_none() {
        return Some(Credential::Keep { at: c.loc(at, entry) });
    }
    let (hash_key, plain_key) = (join(at, "password_hash"), join(at, "password"));
    let stored = ("password_hash", &e.password_hash);
    match c.exactly_one(at, entry, stored, ("password", &e.password), "an argon2id PHC string")? {
        Given::Stored(hash) => c.parse(&hash_key, hash, |h| {
            if password::is_argon2id_phc(h) {
                Ok(Credential::Hash(h.clone()))
            } else {
                Err("must be an argon2id PHC string ($argon2id$v=19$m=…,t=…,p=…$salt$hash)")
            }
        }),
        Given::Plain(plain) => {
            let plain_at = c.loc(&plain_key, plain);
            c.parse(&plain_key, plain, |p| match p.expose_secret().chars().count() {
                0..=7 => Err("must be at least 8 characters"),
                _ => Ok(Credential::Plain { password: p.clone(), at: plain_at }),
            })
        }
    }
}

fn validate_agent(c: &mut Checker<'_>, at: &str, entry: &Spanned<AgentEntry>) -> Option<AgentPlan> {
    let e = entry.get_ref();
    let tenant = c.parse_located(&join(at, "tenant"), &e.tenant, |s| registry_id(s));
    let id = c.parse_located(&join(at, "id"), &e.id, |s| registry_id(s));
    let key = agent_key(c, at, entry);
    let acts_for = c.parse_located(&join(at, "acts_for"), &e.acts_for, |s| username(s));
    let source_accounts = c.list(&join(at, "source_accounts"), &e.source_accounts, SourceAccount::parse);
    let purposes = c.list(&join(at, "purposes"), &e.purposes, PurposeCode::parse);
    let (key_sha256, plain_key_at) = key?;
    Some(AgentPlan {
        entry: c.loc(at, entry),
        tenant: tenant?,
        id: id?,
        key_sha256,
        plain_key_at,
        acts_for: acts_for?,
        source_accounts: source_accounts?,
        purposes: purposes?,
    })
}

/// Exactly one of `key_sha256` and (development only) `key = "cs_test_…"`.
/// Returns the hash to store and, for a plain key, where it was written.
fn agent_key(c: &mut Checker<'_>, at: &str, entry: &Spanned<AgentEntry>) -> Option<(Located<String>, Option<Loc>)> {
    let e = entry.get_ref();
    let (hash_key, plain_key) = (join(at, "key_sha256"), join(at, "key"));
    let stored = ("key_sha256", &e.key_sha256);
    match c.exactly_one(at, entry, stored, ("key", &e.key), "64 lowercase hex digits")? {
        Given::Stored(hash) => c.parse_located(&hash_key, hash, |h| sha256_hex(h)).map(|h| (h, None)),
        Given::Plain(key) => {
            let hash = c.parse_located(&plain_key, key, |k| {
                AgentKey::parse_test_key(k.expose_secret()).map(|key| key.sha256().into_string())
            })?;
            let plain_at = hash.at.clone();
            Some((hash, Some(plain_at)))
        }
    }
}

fn validate_payee(c: &mut Checker<'_>, at: &str, entry: &Spanned<PayeeEntry>) -> Option<PayeePlan> {
    let e = entry.get_ref();
    let tenant = c.parse_located(&join(at, "tenant"), &e.tenant, |s| registry_id(s));
    let id = c.parse_located(&join(at, "id"), &e.id, |s| PayeeId::parse(s));
    let legal_name = c.parse(&join(at, "legal_name"), &e.legal_name, |s| display_text(s));
    Some(PayeePlan {
        entry: c.loc(at, entry),
        tenant: tenant?,
        id: id?,
        legal_name: legal_name?,
        trusted: e.trusted.as_ref().is_some_and(|t| *t.get_ref()),
    })
}

/// Values that must be unique within one input: a second definition is
/// refused, naming the first. Key hashes and accounts are never echoed.
fn duplicates(plan: &Plan) -> Vec<Problem> {
    let tenants =
        plan.tenants.iter().map(|t| (format!("tenant {}", t.id.value), &t.id.at, format!("tenant `{}`", t.id.value)));
    let users = plan.users.iter().map(|u| {
        (format!("username {}", u.username.value), &u.username.at, format!("username `{}`", u.username.value))
    });
    let slack_ids = plan
        .users
        .iter()
        .filter_map(|u| u.slack_user_id.as_ref())
        .map(|s| (format!("slack {}", s.value), &s.at, format!("slack_user_id `{}`", s.value)));
    let oidc = plan.users.iter().filter_map(|u| u.oidc.as_ref().and_then(Option::as_ref)).map(|l| {
        (format!("oidc {} {}", l.value.issuer, l.value.subject), &l.at, "this oidc_issuer and oidc_subject".to_owned())
    });
    let agents = plan.agents.iter().map(|a| {
        let id = format!("{}/{}", a.tenant.value, a.id.value);
        (format!("agent {id}"), &a.id.at, format!("agent `{id}`"))
    });
    let keys =
        plan.agents.iter().map(|a| (format!("key {}", a.key_sha256.value), &a.key_sha256.at, "the same key".into()));
    let payees = plan.payees.iter().map(|p| {
        (format!("payee {}/{}", p.tenant.value, p.id.value.expose()), &p.id.at, format!("payee `{}`", p.id.value))
    });

    let mut first: BTreeMap<String, &Loc> = BTreeMap::new();
    let mut problems = Vec::new();
    for (identity, at, what) in
        tenants.chain(users).chain(slack_ids).chain(oidc).chain(agents).chain(keys).chain(payees)
    {
        match first.get(&identity) {
            Some(earlier) => problems.push(at.problem(format!("{what} is already defined by `{}`", earlier.key))),
            None => {
                first.insert(identity, at);
            }
        }
    }
    problems
}

/// Says where a plain password or key was accepted: fine for a demo, never
/// for production.
fn warn_development_secrets(plan: &Plan) {
    for user in &plan.users {
        if let Credential::Plain { at, .. } = &user.credential {
            tracing::warn!("{}", at.problem("a plain password is accepted for development only; use `password_hash`"));
        }
    }
    for at in plan.agents.iter().filter_map(|a| a.plain_key_at.as_ref()) {
        tracing::warn!("{}", at.problem("a plain key is accepted for development only; use `key_sha256`"));
    }
}

// ---------------------------------------------------------------------------
// Value rules
// ---------------------------------------------------------------------------

// The rules themselves live in the domain (`countersign_domain::registry`);
// these adapt them to the checker (a value out, the rule's words as the error).

fn registry_id(s: &str) -> Result<String, FieldRule> {
    RegistryId::parse(s).map(RegistryId::into_string)
}

fn username(s: &str) -> Result<String, FieldRule> {
    Username::parse(s).map(Username::into_string)
}

fn display_text(s: &str) -> Result<String, FieldRule> {
    DisplayText::parse(s).map(DisplayText::into_string)
}

fn slack_user_id(s: &str) -> Result<String, FieldRule> {
    SlackUserId::parse(s).map(SlackUserId::into_string)
}

/// A currency code exactly as the deployment lists it (upper case).
fn accepted_currency(code: &str, rules: &CurrencyRules) -> Result<String, String> {
    match Currency::parse(code) {
        Ok(c) if c.code() == code && rules.cap(c).is_some() => Ok(code.to_owned()),
        _ => {
            let accepted: Vec<String> = rules.allowed().map(|c| c.code().to_owned()).collect();
            Err(format!(
                "`{code}` is not an upper-case currency code this deployment accepts ({})",
                accepted.join(", ")
            ))
        }
    }
}

/// Minor-unit amounts are stored as signed 64-bit integers.
fn storable_amount(n: u64) -> Result<u64, &'static str> {
    if i64::try_from(n).is_ok() {
        Ok(n)
    } else {
        Err("must be at most 9223372036854775807")
    }
}

/// A key hash: exactly 64 lowercase hex digits. The value is never echoed.
fn sha256_hex(s: &str) -> Result<String, FieldRule> {
    KeySha256::parse(s).map(KeySha256::into_string)
}

// ---------------------------------------------------------------------------
// Execution: reference checks and upserts in one write transaction
// ---------------------------------------------------------------------------

/// What [`execute`] did: the counts, and the id of every user applied.
struct Applied {
    summary: ApplySummary,
    user_ids: BTreeMap<String, String>,
}

/// Checks references, then applies the whole plan, in one write
/// transaction: on any error it is rolled back and nothing is applied.
async fn execute(db: &Db, source: &Source<'_>, plan: &Plan) -> Result<Applied, ApplyError> {
    let hashes = hash_plain_passwords(db, plan).await?;
    let mut tx = db.begin().await?;
    let applied = execute_in(&mut tx, source, plan, &hashes).await?;
    tx.commit().await?;
    Ok(applied)
}

/// Checks references and applies the plan in the caller's transaction.
/// `hashes` holds the hash of every plain password (by username).
async fn execute_in(
    conn: &mut Conn,
    source: &Source<'_>,
    plan: &Plan,
    hashes: &BTreeMap<String, String>,
) -> Result<Applied, ApplyError> {
    let problems = check_references(conn, source, plan).await?;
    if !problems.is_empty() {
        return Err(ApplyError::Invalid(problems));
    }
    apply_plan(conn, plan, source.actor, hashes).await
}

/// The hash to store for every plain password of the plan, computed before
/// any write transaction starts (argon2 is slow: the writer must not wait
/// on it). A plain password keeps the stored hash when it still matches (a
/// fresh salt would otherwise change it on every apply). Only a user of the
/// same tenant is ever looked at: a username taken in another tenant is
/// refused without touching that user's hash, with one generic message.
async fn hash_plain_passwords(db: &Db, plan: &Plan) -> Result<BTreeMap<String, String>, ApplyError> {
    let mut hashes = BTreeMap::new();
    let mut problems = Vec::new();
    for u in &plan.users {
        let Credential::Plain { password, .. } = &u.credential else { continue };
        let existing = {
            let mut conn = db.reader().await?;
            directory::user_by_username(&mut conn, &u.username.value).await?
        };
        let stored = match existing {
            Some(other) if other.tenant_id != u.tenant.value => {
                problems.push(u.username.at.problem(unavailable_username(&u.username.value)));
                continue;
            }
            Some(same) => directory::password_hash(&db.read, &same.id).await?,
            None => None,
        };
        let password = password.clone();
        let hash = tokio::task::spawn_blocking(move || match stored {
            Some(hash) if password::verify_password(password.expose_secret(), &hash) => hash,
            _ => password::hash_password(password.expose_secret()),
        })
        .await
        .map_err(|_| ApplyError::Hashing)?;
        hashes.insert(u.username.value.clone(), hash);
    }
    if problems.is_empty() {
        Ok(hashes)
    } else {
        Err(ApplyError::Invalid(problems))
    }
}

/// The one answer for a username another tenant holds (usernames are global:
/// they are what people sign in with). It says no more than that.
pub fn unavailable_username(username: &str) -> String {
    format!("username `{username}` is not available")
}

/// Every tenant named must be in the plan or the database; every user an
/// agent acts for must be in the plan or the database, in the agent's tenant.
async fn check_references(conn: &mut Conn, source: &Source<'_>, plan: &Plan) -> crate::store::Result<Vec<Problem>> {
    let planned: BTreeSet<&str> = plan.tenants.iter().map(|t| t.id.value.as_str()).collect();
    let tenant_refs = plan
        .users
        .iter()
        .map(|u| &u.tenant)
        .chain(plan.agents.iter().map(|a| &a.tenant))
        .chain(plan.payees.iter().map(|p| &p.tenant));
    let mut problems = Vec::new();
    for tenant in tenant_refs {
        if !planned.contains(tenant.value.as_str()) && !directory::tenant_exists(conn, &tenant.value).await? {
            problems.push(tenant.at.problem(format!(
                "tenant `{}` is not defined {}",
                tenant.value,
                source.defined_where()
            )));
        }
    }
    for agent in &plan.agents {
        let name = &agent.acts_for.value;
        let problem = match tenant_of_user(conn, plan, name).await? {
            None => format!("user `{name}` is not defined {}", source.defined_where()),
            Some(tenant) if tenant != agent.tenant.value => format!("user `{name}` belongs to another tenant"),
            Some(_) => continue,
        };
        problems.push(agent.acts_for.at.problem(problem));
    }
    Ok(problems)
}

/// The tenant of the user `username`, as the plan will leave it.
async fn tenant_of_user(conn: &mut Conn, plan: &Plan, username: &str) -> crate::store::Result<Option<String>> {
    if let Some(user) = plan.users.iter().find(|u| u.username.value == username) {
        return Ok(Some(user.tenant.value.clone()));
    }
    Ok(directory::user_by_username(conn, username).await?.map(|u| u.tenant_id))
}

async fn apply_plan(
    conn: &mut Conn,
    plan: &Plan,
    actor: &str,
    hashes: &BTreeMap<String, String>,
) -> Result<Applied, ApplyError> {
    let mut applied = Applied { summary: ApplySummary::default(), user_ids: BTreeMap::new() };
    for tenant in &plan.tenants {
        apply_tenant(conn, tenant, &mut applied.summary, actor).await?;
    }
    for user in &plan.users {
        let id = apply_user(conn, user, hashes, &mut applied.summary.users, actor).await?;
        applied.user_ids.insert(user.username.value.clone(), id);
    }
    for agent in &plan.agents {
        apply_agent(conn, agent, &applied.user_ids, &mut applied.summary.agents, actor).await?;
    }
    for payee in &plan.payees {
        apply_payee(conn, payee, &mut applied.summary.payees, actor).await?;
    }
    Ok(applied)
}

async fn apply_tenant(
    conn: &mut Conn,
    t: &TenantPlan,
    summary: &mut ApplySummary,
    actor: &str,
) -> Result<(), ApplyError> {
    let id = &t.id.value;
    let outcome = directory::upsert_tenant(conn, id, &t.name).await?;
    record(conn, &mut summary.tenants, outcome, "tenant", id, json!({ "tenant_id": id, "name": t.name }), actor)
        .await?;
    let stored = directory::budgets_of(conn, id).await?;
    for (currency, limit) in &t.budgets {
        let outcome = match stored.get(currency) {
            None => Upsert::Created,
            Some(old) if old == limit => Upsert::Unchanged,
            Some(_) => Upsert::Updated,
        };
        if outcome != Upsert::Unchanged {
            directory::set_budget(conn, id, currency, *limit).await?;
        }
        let data = json!({ "currency": currency, "daily_limit_minor": limit });
        record(conn, &mut summary.budgets, outcome, "budget", id, data, actor).await?;
    }
    Ok(())
}

/// Upserts the user; returns its id.
async fn apply_user(
    conn: &mut Conn,
    u: &UserPlan,
    hashes: &BTreeMap<String, String>,
    counts: &mut Counts,
    actor: &str,
) -> Result<String, ApplyError> {
    let spec = UserSpec {
        tenant_id: u.tenant.value.clone(),
        username: u.username.value.clone(),
        password_hash: password_hash(conn, u, hashes).await?,
        roles: u.roles.clone(),
        approval_limits_minor: u.limits.clone(),
        slack_user_id: u.slack_user_id.as_ref().map(|s| s.value.clone()),
        oidc: u.oidc.as_ref().map(|link| link.as_ref().map(|l| l.value.clone())),
    };
    let Some((id, outcome)) = directory::upsert_user(conn, &spec).await.map_err(|e| conflict(e, &u.entry))? else {
        return Err(ApplyError::Invalid(vec![u.username.at.problem(unavailable_username(&spec.username))]));
    };
    let data = json!({
        "user_id": id,
        "username": spec.username,
        "roles": spec.roles,
        "approval_limit_minor": spec.approval_limits_minor,
        "slack_user_id": spec.slack_user_id,
    });
    let mut data = data;
    if let Some(link) = &spec.oidc {
        // The subject as a hash, as the sign-in audit names it.
        data["oidc_issuer"] = json!(link.as_ref().map(|l| &l.issuer));
        data["oidc_subject_sha256"] = json!(link.as_ref().map(|l| crate::digest::sha256_hex(&l.subject)));
    }
    record(conn, counts, outcome, "user", &spec.tenant_id, data, actor).await?;
    Ok(id)
}

/// The hash to store for `u`: given, computed before the transaction, or
/// (kept) the stored one of the same tenant's user.
async fn password_hash(conn: &mut Conn, u: &UserPlan, hashes: &BTreeMap<String, String>) -> Result<String, ApplyError> {
    match &u.credential {
        Credential::Hash(hash) => Ok(hash.clone()),
        Credential::Plain { at, .. } => hashes
            .get(&u.username.value)
            .cloned()
            .ok_or_else(|| ApplyError::Invalid(vec![at.problem("a password must be hashed before it is applied")])),
        Credential::Keep { at } => {
            directory::password_hash_in_tenant(conn, &u.tenant.value, &u.username.value).await?.ok_or_else(|| {
                ApplyError::Invalid(vec![at.problem(format!("user `{}` is new: give a password", u.username.value))])
            })
        }
    }
}

async fn apply_agent(
    conn: &mut Conn,
    a: &AgentPlan,
    planned_users: &BTreeMap<String, String>,
    counts: &mut Counts,
    actor: &str,
) -> Result<(), ApplyError> {
    let acts_for = match planned_users.get(&a.acts_for.value) {
        Some(id) => id.clone(),
        None => directory::user_by_username(conn, &a.acts_for.value)
            .await?
            .map(|u| u.id)
            .ok_or_else(|| ApplyError::Invalid(vec![a.acts_for.at.problem("this user no longer exists")]))?,
    };
    let spec = AgentSpec {
        tenant_id: a.tenant.value.clone(),
        id: a.id.value.clone(),
        key_sha256: a.key_sha256.value.clone(),
        acts_for,
        source_accounts: a.source_accounts.iter().map(|s| s.expose().to_owned()).collect(),
        purposes: a.purposes.iter().map(|p| p.as_str().to_owned()).collect(),
    };
    let outcome = directory::upsert_agent(conn, &spec).await.map_err(|e| conflict(e, &a.entry))?;
    let data = json!({
        "agent_id": spec.id,
        "acts_for": spec.acts_for,
        "acts_for_username": a.acts_for.value,
        "source_accounts": a.source_accounts.iter().map(SourceAccount::masked).collect::<Vec<_>>(),
        "purposes": spec.purposes,
    });
    record(conn, counts, outcome, "agent", &spec.tenant_id, data, actor).await
}

async fn apply_payee(conn: &mut Conn, p: &PayeePlan, counts: &mut Counts, actor: &str) -> Result<(), ApplyError> {
    let payee = Payee {
        tenant_id: p.tenant.value.clone(),
        id: p.id.value.expose().to_owned(),
        legal_name: p.legal_name.clone(),
        trusted: p.trusted,
    };
    let outcome = directory::upsert_payee(conn, &payee).await.map_err(|e| conflict(e, &p.entry))?;
    let data = json!({ "payee_id": p.id.value.masked(), "legal_name": payee.legal_name, "trusted": payee.trusted });
    record(conn, counts, outcome, "payee", &payee.tenant_id, data, actor).await
}

/// A unique-constraint violation is a conflict with another row, reported
/// against the entry; anything else is a database failure.
fn conflict(e: StoreError, entry: &Loc) -> ApplyError {
    match e {
        StoreError::Conflict(detail) => {
            ApplyError::Invalid(vec![entry.problem(format!("conflicts with an existing record ({detail})"))])
        }
        e => ApplyError::Database(e),
    }
}

/// Counts the outcome and, for a change, appends `registry.<kind>.<created|updated>`
/// to the audit trail. `data` never holds a secret; accounts are masked.
async fn record(
    conn: &mut Conn,
    counts: &mut Counts,
    outcome: Upsert,
    kind: &str,
    tenant: &str,
    data: serde_json::Value,
    actor: &str,
) -> Result<(), ApplyError> {
    counts.add(outcome);
    let verb = match outcome {
        Upsert::Created => "created",
        Upsert::Updated => "updated",
        Upsert::Unchanged => return Ok(()),
    };
    let entry = AuditEntry {
        tenant_id: Some(tenant.to_owned()),
        actor: actor.to_owned(),
        action: format!("registry.{kind}.{verb}"),
        proposal_id: None,
        request_hash: None,
        data,
    };
    Ok(audit::append(conn, &entry).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::audit::Verification;
    use std::sync::OnceLock;

    const KEY: &str = "cs_test_0123456789abcdefghijKLMNOP";

    /// One argon2id hash for the whole test run (hashing is slow on purpose).
    fn ana_hash() -> &'static str {
        static HASH: OnceLock<String> = OnceLock::new();
        HASH.get_or_init(|| password::hash_password("ana-password"))
    }

    /// The SPEC §14 example, with a real hash and key hash, plus the user
    /// `maya` its agent acts for (the example leaves her out).
    fn spec_example() -> String {
        format!(
            r#"[[tenant]]
id = "acme"
name = "Acme Corp"
daily_budget_minor = {{ USD = 5_000_000 }}

[[user]]
tenant = "acme"
username = "ana"
password_hash = "{hash}"   # or `password = "..."`
roles = ["approver"]
approval_limit_minor = {{ USD = 500_000 }}
slack_user_id = "U0ANA"

[[user]]
tenant = "acme"
username = "maya"
password = "maya-dev-password"
roles = ["viewer"]

[[agent]]
tenant = "acme"
id = "payout-bot"
key_sha256 = "{key_hash}"
acts_for = "maya"
source_accounts = ["acct_0123456789abcdef"]
purposes = ["vendor", "refund"]

[[payee]]
tenant = "acme"
id = "acct_acme0000000001"
legal_name = "Acme Supplies Ltd"
trusted = true
"#,
            hash = ana_hash(),
            key_hash = key_sha256(KEY),
        )
    }

    async fn open() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).await.unwrap();
        (dir, db)
    }

    async fn apply(db: &Db, text: &str) -> Result<ApplySummary, ApplyError> {
        apply_toml(db, &Settings::default(), "acme.toml", text).await
    }

    fn problems(result: Result<impl fmt::Debug, ApplyError>) -> Vec<Problem> {
        match result {
            Err(ApplyError::Invalid(problems)) => problems,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    /// The one problem of a refused input.
    fn problem(result: Result<impl fmt::Debug, ApplyError>) -> Problem {
        let mut all = problems(result);
        assert_eq!(all.len(), 1, "{all:?}");
        all.remove(0)
    }

    fn line_of_text(text: &str, needle: &str) -> usize {
        text.lines().position(|l| l.contains(needle)).expect("needle in text") + 1
    }

    async fn maya_hash(db: &Db) -> String {
        directory::password_hash_in_tenant(&mut db.reader().await.unwrap(), "acme", "maya")
            .await
            .unwrap()
            .expect("maya exists")
    }

    async fn count(db: &Db, table: &str) -> i64 {
        crate::store::probe::count(db, table).await
    }

    async fn counts(db: &Db) -> Vec<i64> {
        let mut all = Vec::new();
        for table in ["tenants", "budgets", "users", "approval_limits", "agents", "payees", "audit_log"] {
            all.push(count(db, table).await);
        }
        all
    }

    async fn audit_text(db: &Db) -> String {
        let rows = crate::store::probe::pairs(db, "SELECT action, data FROM audit_log ORDER BY seq").await;
        rows.iter().map(|(a, d)| format!("{a} {d}\n")).collect()
    }

    #[tokio::test]
    async fn the_spec_example_applies() {
        let (_dir, db) = open().await;
        let summary = apply(&db, &spec_example()).await.unwrap();
        assert_eq!(
            summary.to_string(),
            "applied acme.toml: 1 tenant created, 1 budget created, 2 users created, 1 agent created, 1 payee created"
        );

        let conn = &mut *db.reader().await.unwrap();
        let ana = directory::user_by_username(conn, "ana").await.unwrap().unwrap();
        assert_eq!(ana.tenant_id, "acme");
        assert_eq!(ana.roles, vec![Role::Approver]);
        assert_eq!(ana.approval_limits_minor, BTreeMap::from([("USD".to_owned(), 500_000)]));
        assert_eq!(ana.slack_user_id.as_deref(), Some("U0ANA"));
        let maya = directory::user_by_username(conn, "maya").await.unwrap().unwrap();
        let agent = directory::agent(conn, "acme", "payout-bot").await.unwrap().unwrap();
        assert_eq!(agent.acts_for, maya.id);
        assert_eq!(agent.source_accounts, vec!["acct_0123456789abcdef"]);
        assert_eq!(agent.purposes, vec!["refund", "vendor"]);
        let payee = directory::payee(&db.read, "acme", "acct_acme0000000001").await.unwrap().unwrap();
        assert_eq!(payee.legal_name, "Acme Supplies Ltd");
        assert!(payee.trusted);
        let budget = "SELECT daily_limit_minor FROM budgets WHERE tenant_id = 'acme' AND currency = 'USD'";
        assert_eq!(crate::store::probe::int(&db, budget).await, Some(5_000_000));

        assert_eq!(audit::verify(&db.read).await.unwrap(), Verification::Intact { entries: 6 });
        let audit = audit_text(&db).await;
        for action in [
            "registry.tenant.created",
            "registry.budget.created",
            "registry.user.created",
            "registry.agent.created",
            "registry.payee.created",
        ] {
            assert!(audit.contains(action), "{audit}");
        }
        assert!(audit.contains("acct_…cdef") && audit.contains("acct_…0001"), "accounts are masked: {audit}");
        for secret in ["0123456789abcdef", "acme0000000001", "$argon2", &key_sha256(KEY), "maya-dev-password"] {
            assert!(!audit.contains(secret), "audit leaks {secret}: {audit}");
        }
    }

    #[tokio::test]
    async fn applying_twice_changes_nothing() {
        let (_dir, db) = open().await;
        let text = spec_example();
        apply(&db, &text).await.unwrap();
        let before = counts(&db).await;
        let before_hash = maya_hash(&db).await;

        let again = apply(&db, &text).await.unwrap();
        assert_eq!(again.changed(), 0, "{again}");
        assert_eq!(
            again.to_string(),
            "applied acme.toml: 1 tenant unchanged, 1 budget unchanged, 2 users unchanged, 1 agent unchanged, 1 payee unchanged"
        );
        assert_eq!(counts(&db).await, before, "same rows, no new audit entries");
        let after_hash = maya_hash(&db).await;
        assert_eq!(before_hash, after_hash, "a plain password that still matches keeps its hash");
    }

    #[tokio::test]
    async fn changes_are_updates_and_nothing_unnamed_is_deleted() {
        let (_dir, db) = open().await;
        apply(&db, &spec_example()).await.unwrap();
        let text = r#"
[[tenant]]
id = "acme"
name = "Acme Corporation"
daily_budget_minor = { USD = 6_000_000, EUR = 1_000 }

[[payee]]
tenant = "acme"
id = "acct_acme0000000001"
legal_name = "Acme Supplies Limited"
"#;
        let summary = apply(&db, text).await.unwrap();
        assert_eq!(summary.tenants, Counts { created: 0, updated: 1, unchanged: 0 });
        assert_eq!(summary.budgets, Counts { created: 1, updated: 1, unchanged: 0 });
        assert_eq!(summary.payees, Counts { created: 0, updated: 1, unchanged: 0 });
        assert_eq!(count(&db, "users").await, 2);
        assert_eq!(count(&db, "agents").await, 1);
        let payee = directory::payee(&db.read, "acme", "acct_acme0000000001").await.unwrap().unwrap();
        assert!(!payee.trusted, "`trusted` defaults to false");
        let audit = audit_text(&db).await;
        assert!(audit.contains("registry.tenant.updated") && audit.contains("registry.payee.updated"), "{audit}");
    }

    #[tokio::test]
    async fn an_unknown_key_names_file_line_and_key() {
        let (_dir, db) = open().await;
        let text = spec_example().replace("acts_for = \"maya\"", "acts_for = \"maya\"\nact_for = \"ana\"");
        let p = problem(apply(&db, &text).await);
        let line = line_of_text(&text, "act_for = ");
        assert_eq!(p.file.as_deref(), Some("acme.toml"));
        assert_eq!(p.line, Some(line));
        assert_eq!(p.key.as_deref(), Some("agent[0].act_for"));
        assert!(
            p.to_string().starts_with(&format!("acme.toml:{line}: key `agent[0].act_for`: unknown field `act_for`")),
            "{p}"
        );

        let p = problem(apply(&db, "[[tenant]]\nid = \"a\"\nname = \"A\"\n\n[[tennant]]\nid = \"b\"\n").await);
        assert_eq!((p.line, p.key.as_deref()), (Some(5), Some("tennant")), "{p}");
        assert_eq!(count(&db, "tenants").await, 0);
    }

    #[tokio::test]
    async fn wrong_types_missing_keys_and_syntax_errors_name_their_line() {
        let (_dir, db) = open().await;
        let text = spec_example().replace("purposes = [\"vendor\", \"refund\"]", "purposes = \"vendor\"");
        let p = problem(apply(&db, &text).await);
        assert_eq!(p.key.as_deref(), Some("agent[0].purposes"), "{p}");
        assert_eq!(p.line, Some(line_of_text(&text, "purposes = ")));
        assert!(p.message.contains("invalid type"), "{p}");

        let text = "[[tenant]]\nid = \"acme\"\ndaily_budget_minor = { USD = -5 }\nname = \"Acme\"\n";
        let p = problem(apply(&db, text).await);
        assert_eq!((p.line, p.key.as_deref()), (Some(3), Some("tenant[0].daily_budget_minor.USD")), "{p}");

        let text = "[[tenant]]\nid = \"acme\"\nname = \"Acme\"\n\n[[tenant]]\nid = \"beta\"\n";
        let p = problem(apply(&db, text).await);
        assert_eq!((p.line, p.key.as_deref()), (Some(5), Some("tenant[1].name")), "{p}");
        assert!(p.message.contains("missing field"), "{p}");

        let text = "[[tenant]]\nid = \"acme\"\nname = \n";
        let p = problem(apply(&db, text).await);
        assert_eq!(p.line, Some(3), "{p}");
        assert!(!p.to_string().contains('\n'), "{p}");

        let text = "[[tenant]]\nid = \"acme\"\nname = 1979-05-27T07:32:00Z\n";
        let p = problem(apply(&db, text).await);
        assert_eq!((p.line, p.key.as_deref()), (Some(3), Some("tenant[0].name")), "{p}");
        assert_eq!(count(&db, "tenants").await, 0);
    }

    #[tokio::test]
    async fn a_dangling_acts_for_is_refused_and_nothing_is_applied() {
        let (_dir, db) = open().await;
        let text = spec_example().replace("acts_for = \"maya\"", "acts_for = \"mia\"");
        let p = problem(apply(&db, &text).await);
        assert_eq!(
            p.to_string(),
            format!(
                "acme.toml:{}: key `agent[0].acts_for`: user `mia` is not defined in this file or the database",
                line_of_text(&text, "acts_for = ")
            )
        );
        assert_eq!(counts(&db).await, vec![0; 7], "nothing applied, not even an audit entry");
    }

    #[tokio::test]
    async fn dangling_tenants_and_foreign_users_are_refused() {
        let (_dir, db) = open().await;
        apply(&db, &spec_example()).await.unwrap();
        let text = r#"
[[tenant]]
id = "beta"
name = "Beta"

[[payee]]
tenant = "gamma"
id = "ba_1"
legal_name = "Gamma Ltd"

[[agent]]
tenant = "beta"
id = "bot"
key = "cs_test_aaaaaaaaaaaaaaaaaaaaaaaa"
acts_for = "ana"
source_accounts = ["acct_0123456789abcdef"]
purposes = ["vendor"]
"#;
        let all = problems(apply(&db, text).await);
        let keys: Vec<_> = all.iter().map(|p| p.key.clone().unwrap()).collect();
        assert_eq!(keys, vec!["payee[0].tenant", "agent[0].acts_for"], "{all:?}");
        assert!(all[0].message.contains("tenant `gamma` is not defined"), "{all:?}");
        assert!(all[1].message.contains("user `ana` belongs to another tenant"), "{all:?}");
        assert_eq!(count(&db, "tenants").await, 1, "beta was not created");
    }

    #[tokio::test]
    async fn a_username_of_another_tenant_is_refused_by_key() {
        let (_dir, db) = open().await;
        apply(&db, &spec_example()).await.unwrap();
        let text = format!(
            "[[tenant]]\nid = \"beta\"\nname = \"Beta\"\n\n[[user]]\ntenant = \"beta\"\nusername = \"ana\"\npassword_hash = \"{}\"\nroles = [\"viewer\"]\n",
            ana_hash()
        );
        let p = problem(apply(&db, &text).await);
        assert_eq!(p.key.as_deref(), Some("user[0].username"));
        assert_eq!(p.line, Some(7));
        assert_eq!(p.message, "username `ana` is not available", "one generic message");
        assert_eq!(count(&db, "tenants").await, 1, "rolled back: beta was not created");
    }

    #[tokio::test]
    async fn a_plain_password_for_another_tenants_username_never_touches_that_users_hash() {
        let (_dir, db) = open().await;
        apply(&db, &spec_example()).await.unwrap();
        let before = maya_hash(&db).await;
        let text = "[[tenant]]\nid = \"beta\"\nname = \"Beta\"\n\n[[user]]\ntenant = \"beta\"\nusername = \"maya\"\npassword = \"anything-at-all\"\nroles = [\"viewer\"]\n";
        let p = problem(apply(&db, text).await);
        assert_eq!(
            (p.key.as_deref(), p.message.as_str()),
            (Some("user[0].username"), "username `maya` is not available")
        );
        assert_eq!(maya_hash(&db).await, before);
        assert_eq!(count(&db, "tenants").await, 1);
    }

    #[tokio::test]
    async fn currencies_must_be_upper_case_and_accepted() {
        let (_dir, db) = open().await;
        for (code, why) in [("usd", "upper-case"), ("XXX", "accepts"), ("CHF", "accepts")] {
            let text = spec_example().replace("daily_budget_minor = { USD", &format!("daily_budget_minor = {{ {code}"));
            let p = problem(apply(&db, &text).await);
            assert_eq!(p.key, Some(format!("tenant[0].daily_budget_minor.{code}")));
            assert_eq!(p.line, Some(line_of_text(&text, "daily_budget_minor")));
            assert!(p.message.contains(why) && p.message.contains("EUR, GBP, JPY, USD, VND"), "{p}");
        }
        assert_eq!(count(&db, "tenants").await, 0);
    }

    #[tokio::test]
    async fn source_accounts_purposes_and_ids_use_the_domain_rules() {
        let (_dir, db) = open().await;
        let text = spec_example().replace("acct_0123456789abcdef", "acct_0123456789");
        let p = problem(apply(&db, &text).await);
        assert_eq!(p.key.as_deref(), Some("agent[0].source_accounts[0]"));
        assert!(p.message.contains("^acct_[A-Za-z0-9]{16}$"), "{p}");
        assert!(!p.message.contains("acct_0123456789"), "the account is not echoed: {p}");

        let text = spec_example()
            .replace("purposes = [\"vendor\", \"refund\"]", "purposes = [\"vendor\", \"bribes\"]")
            .replace("id = \"payout-bot\"", "id = \"Payout Bot\"")
            .replace("roles = [\"approver\"]", "roles = [\"boss\"]")
            .replace("id = \"acct_acme0000000001\"", "id = \"iban_1\"")
            .replace("legal_name = \"Acme Supplies Ltd\"", "legal_name = \"Acme\\u202Eevil\"");
        let all = problems(apply(&db, &text).await);
        let keys: Vec<_> = all.iter().map(|p| p.key.clone().unwrap()).collect();
        assert_eq!(
            keys,
            vec!["user[0].roles[0]", "agent[0].id", "agent[0].purposes[1]", "payee[0].id", "payee[0].legal_name"],
            "every problem is reported at once: {all:?}"
        );
        assert_eq!(count(&db, "tenants").await, 0);
    }

    #[tokio::test]
    async fn a_plain_password_is_accepted_and_stored_hashed() {
        let (_dir, db) = open().await;
        apply(&db, &spec_example()).await.unwrap();
        let stored = maya_hash(&db).await;
        assert!(password::is_argon2id_phc(&stored), "{stored}");
        assert!(!stored.contains("maya-dev-password"));
        assert!(password::verify_password("maya-dev-password", &stored));

        let changed = spec_example().replace("maya-dev-password", "maya-new-password");
        let summary = apply(&db, &changed).await.unwrap();
        assert_eq!(summary.users, Counts { created: 0, updated: 1, unchanged: 1 });
        let stored = maya_hash(&db).await;
        assert!(password::verify_password("maya-new-password", &stored));
    }

    #[tokio::test]
    async fn password_rules() {
        let (_dir, db) = open().await;
        let both = spec_example().replace("roles = [\"viewer\"]", "roles = [\"viewer\"]\npassword_hash = \"x\"");
        let p = problem(apply(&db, &both).await);
        assert_eq!(p.key.as_deref(), Some("user[1].password_hash"));
        assert!(p.message.contains("not both"), "{p}");

        let neither = spec_example().replace("password = \"maya-dev-password\"\n", "");
        let p = problem(apply(&db, &neither).await);
        assert_eq!(
            (p.key.as_deref(), p.line),
            (Some("user[1].password_hash"), Some(line_of_text(&neither, "username = \"maya\"") - 2))
        );

        let not_phc = spec_example().replace(ana_hash(), "$2b$12$notargon");
        let p = problem(apply(&db, &not_phc).await);
        assert_eq!(p.key.as_deref(), Some("user[0].password_hash"));
        assert!(!p.message.contains("notargon"), "{p}");

        let short = spec_example().replace("maya-dev-password", "hunter2");
        let p = problem(apply(&db, &short).await);
        assert_eq!(p.key.as_deref(), Some("user[1].password"));
        assert!(!p.to_string().contains("hunter2"), "{p}");
    }

    #[tokio::test]
    async fn a_plain_key_is_stored_only_as_its_sha256() {
        let (_dir, db) = open().await;
        let text =
            spec_example().replace(&format!("key_sha256 = \"{}\"", key_sha256(KEY)), &format!("key = \"{KEY}\""));
        assert!(text.contains(KEY));
        apply(&db, &text).await.unwrap();
        let stored = crate::store::probe::texts(&db, "SELECT key_sha256 FROM agents").await;
        assert_eq!(stored, [key_sha256(KEY)]);
        let agent = directory::agent_by_key_hash(&db.read, &key_sha256(KEY)).await.unwrap().unwrap();
        assert_eq!(agent.id, "payout-bot");
        let dump =
            crate::store::probe::texts(&db, "SELECT key_sha256 || source_accounts || purposes FROM agents").await;
        assert!(!dump.concat().contains(KEY));
        assert!(!audit_text(&db).await.contains(KEY));
        assert_eq!(apply(&db, &text).await.unwrap().changed(), 0, "a plain key is idempotent too");
    }

    #[tokio::test]
    async fn key_rules_never_echo_the_key() {
        let (_dir, db) = open().await;
        let live = generate_agent_key(true);
        let text =
            spec_example().replace(&format!("key_sha256 = \"{}\"", key_sha256(KEY)), &format!("key = \"{live}\""));
        let p = problem(apply(&db, &text).await);
        assert_eq!(p.key.as_deref(), Some("agent[0].key"));
        assert!(!p.to_string().contains(&live[8..]), "{p}");

        let text = spec_example().replace(&key_sha256(KEY), &live);
        let p = problem(apply(&db, &text).await);
        assert_eq!(p.key.as_deref(), Some("agent[0].key_sha256"));
        assert!(!p.to_string().contains(&live[8..]), "{p}");

        let text = spec_example().replace(&key_sha256(KEY), &key_sha256(KEY).to_uppercase());
        assert_eq!(problem(apply(&db, &text).await).key.as_deref(), Some("agent[0].key_sha256"));
    }

    #[tokio::test]
    async fn duplicates_within_a_file_are_refused() {
        let (_dir, db) = open().await;
        let text = format!("{}\n[[user]]\ntenant = \"acme\"\nusername = \"ana\"\npassword = \"another-password\"\nroles = [\"viewer\"]\nslack_user_id = \"U0ANA\"\n", spec_example());
        let all = problems(apply(&db, &text).await);
        let messages: Vec<_> = all.iter().map(Problem::to_string).collect();
        assert_eq!(all.len(), 2, "{messages:?}");
        assert!(
            messages[0].contains("key `user[2].username`: username `ana` is already defined by `user[0].username`"),
            "{messages:?}"
        );
        assert!(messages[1].contains("key `user[2].slack_user_id`"), "{messages:?}");
    }

    #[tokio::test]
    async fn add_commands_share_the_rules_and_the_audit() {
        let (_dir, db) = open().await;
        let settings = Settings::default();
        add_tenant(&db, &settings, "acme", "Acme Corp", &BTreeMap::from([("USD".to_owned(), 5_000_000)]))
            .await
            .unwrap();
        let new_user = |username: &str, tenant: &str| NewUser {
            tenant: tenant.into(),
            username: username.into(),
            credential: NewCredential::Password("correct horse battery".into()),
            roles: vec!["approver".into(), "viewer".into(), "approver".into()],
            limits: BTreeMap::from([("USD".to_owned(), 500_000)]),
            slack_user_id: None,
        };
        let id = add_user(&db, &settings, new_user("ana", "acme"), "cli").await.unwrap();
        assert!(id.starts_with("usr_"), "{id}");
        assert_eq!(add_user(&db, &settings, new_user("ana", "acme"), "cli").await.unwrap(), id, "the same user again");
        let ana = directory::user_by_id(&mut db.reader().await.unwrap(), &id).await.unwrap().unwrap();
        assert_eq!(ana.roles, vec![Role::Viewer, Role::Approver], "sorted, deduplicated");

        let agent = NewAgent {
            tenant: "acme".into(),
            id: "payout-bot".into(),
            acts_for: "ana".into(),
            source_accounts: vec!["acct_0123456789abcdef".into()],
            purposes: vec!["vendor".into()],
        };
        let key = add_agent(&db, &settings, agent.clone(), "cli").await.unwrap();
        assert!(key.starts_with("cs_live_") && key.len() == 40, "{key}");
        let found = directory::agent_by_key_hash(&db.read, &key_sha256(&key)).await.unwrap().unwrap();
        assert_eq!(found.acts_for, id);
        let rotated = add_agent(&db, &settings, agent.clone(), "cli").await.unwrap();
        assert_ne!(rotated, key, "adding again rotates the key");
        assert!(directory::agent_by_key_hash(&db.read, &key_sha256(&key)).await.unwrap().is_none());

        add_payee(&db, "acme", "acct_acme0000000001", "Acme Supplies Ltd", true, "cli").await.unwrap();
        assert!(directory::payee(&db.read, "acme", "acct_acme0000000001").await.unwrap().unwrap().trusted);

        let audit = audit_text(&db).await;
        for action in [
            "registry.tenant.created",
            "registry.budget.created",
            "registry.user.created",
            "registry.agent.created",
            "registry.agent.updated",
            "registry.payee.created",
        ] {
            assert!(audit.contains(action), "{action}: {audit}");
        }
        assert!(
            !audit.contains(&key) && !audit.contains(&key_sha256(&key)) && !audit.contains("correct horse"),
            "{audit}"
        );

        // Refusals name the key, and say where the reference was looked for.
        let p = problem(add_agent(&db, &settings, NewAgent { acts_for: "maya".into(), ..agent.clone() }, "cli").await);
        assert_eq!(p.to_string(), "key `agent.acts_for`: user `maya` is not defined in the database");
        add_tenant(&db, &settings, "beta", "Beta", &BTreeMap::new()).await.unwrap();
        let p = problem(add_agent(&db, &settings, NewAgent { tenant: "beta".into(), ..agent.clone() }, "cli").await);
        assert_eq!(p.to_string(), "key `agent.acts_for`: user `ana` belongs to another tenant");
        let p = problem(add_user(&db, &settings, new_user("ana", "beta"), "cli").await);
        assert_eq!(p.to_string(), "key `user.username`: username `ana` is not available");
        let p = problem(
            add_user(&db, &settings, NewUser { roles: vec!["boss".into()], ..new_user("bo", "acme") }, "cli").await,
        );
        assert_eq!(p.key.as_deref(), Some("user.roles[0]"));
        let p = problem(add_tenant(&db, &settings, "gamma", "Gamma", &BTreeMap::from([("XXX".to_owned(), 1)])).await);
        assert_eq!(p.key.as_deref(), Some("tenant.daily_budget_minor.XXX"));
        let p = problem(add_payee(&db, "nope", "ba_1", "Nope Ltd", false, "cli").await);
        assert_eq!(p.to_string(), "key `payee.tenant`: tenant `nope` is not defined in the database");
        assert_eq!(audit::verify(&db.read).await.unwrap(), Verification::Intact { entries: 7 });
    }

    #[test]
    fn new_user_debug_redacts_the_password() {
        let u = NewUser {
            tenant: "acme".into(),
            username: "ana".into(),
            credential: NewCredential::Password("hunter2-hunter2".into()),
            roles: vec![],
            limits: BTreeMap::new(),
            slack_user_id: None,
        };
        assert!(!format!("{u:?}").contains("hunter2"));
    }

    #[test]
    fn agent_keys_and_their_hashes() {
        for live in [true, false] {
            let key = generate_agent_key(live);
            let (prefix, body) = key.split_at(8);
            assert_eq!(prefix, if live { "cs_live_" } else { "cs_test_" });
            assert_eq!(body.len(), 32);
            assert!(body.chars().all(|c| c.is_ascii_alphanumeric()), "{key}");
        }
        assert_ne!(generate_agent_key(true), generate_agent_key(true));
        assert_eq!(key_sha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn value_rules() {
        assert!(registry_id("acme").is_ok() && registry_id("0-a_b").is_ok() && registry_id(&"a".repeat(64)).is_ok());
        for bad in ["", "-acme", "_a", "Acme", "ac me", "acmé", &"a".repeat(65)] {
            assert!(registry_id(bad).is_err(), "{bad}");
        }
        assert!(username("Ana.B-1_x").is_ok() && username(&"a".repeat(64)).is_ok());
        for bad in ["", "ana b", "ana@x", &"a".repeat(65)] {
            assert!(username(bad).is_err(), "{bad}");
        }
        assert!(display_text("Acme Supplies Ltd").is_ok() && display_text(&"é".repeat(200)).is_ok());
        for bad in ["", "   ", "a\nb", "a\u{202E}b", "a\u{200B}b", &"é".repeat(201)] {
            assert!(display_text(bad).is_err(), "{bad:?}");
        }
        assert!(sha256_hex(&key_sha256("k")).is_ok() && sha256_hex(&"g".repeat(64)).is_err());
        assert!(AgentKey::parse_test_key("cs_test_0123456789abcdef").is_ok());
        for bad in ["cs_live_0123456789abcdef", "cs_test_short", "cs_test_0123456789abcde-", "0123456789abcdef0123"] {
            assert!(AgentKey::parse_test_key(bad).is_err(), "{bad}");
        }
        assert!(storable_amount(i64::MAX as u64).is_ok() && storable_amount(i64::MAX as u64 + 1).is_err());
    }

    #[test]
    fn the_locator_finds_keys_values_and_items() {
        let text = "[[tenant]]\nid = \"a\"\nwhen = 1979-05-27T07:32:00Z\n\n[[user]]\nroles = [\"a\", 3]\n\n[[tenant]]\nid = \"b\"\n";
        let at = |needle: &str| locate::key_at(text, text.find(needle).unwrap());
        assert_eq!(at("id = \"a\"").as_deref(), Some("tenant[0].id"));
        assert_eq!(at("1979").as_deref(), Some("tenant[0].when"));
        assert_eq!(at("3]").as_deref(), Some("user[0].roles[1]"));
        assert_eq!(at("\"b\"").as_deref(), Some("tenant[1].id"));
        assert_eq!(at("user]]").as_deref(), Some("user"));
        assert_eq!(locate::key_at("not = = toml", 0), None);
    }

    #[test]
    fn summaries_read_plainly() {
        let mut s = ApplySummary { source: "x.toml".into(), ..ApplySummary::default() };
        assert_eq!(s.to_string(), "applied x.toml: nothing to apply");
        s.users = Counts { created: 2, updated: 1, unchanged: 0 };
        s.payees = Counts { created: 0, updated: 0, unchanged: 1 };
        assert_eq!(s.to_string(), "applied x.toml: 2 users created, 1 user updated, 1 payee unchanged");
        assert_eq!(s.changed(), 3);
    }
}
