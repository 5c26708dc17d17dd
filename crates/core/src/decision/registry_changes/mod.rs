//! Four-eyes registry changes (docs/SECURITY.md, "One admin alone").
//!
//! Why this file is long: a change's whole life under the four-eyes rule
//! (submit, propose, confirm, reject, list, who may confirm) reads in one
//! place; what a change grants, how it applies and what it strands already
//! live beside it (`grants`, `apply`, `stranded`).
//!
//! A change made on the console that could weaken a control — a new user,
//! more roles, a higher approval limit, a new password, a Slack link, an
//! agent (new, changed or re-keyed), a payee trusted or renamed, a passkey
//! enrolment code, a passkey's removal — is only *proposed* by the admin who
//! makes it. It takes effect when a second admin of the same tenant confirms
//! it; the proposer can never confirm their own, and nobody confirms a
//! change to their own account. A change that only reduces authority (fewer
//! roles, lower limits, a payee untrusted, a Slack link removed) applies at
//! once — making things safer never waits — and cancels every change still
//! pending for the same subject, which was proposed against a state that no
//! longer holds.
//!
//! What a change grants is said in lines ([`grants`]), computed against the
//! registry as it stands. The lines shown when it was proposed are stored;
//! confirming computes them again against the registry *now* and refuses
//! the change (marking it `superseded`) if they differ: a second admin only
//! ever confirms what they were shown, never authority that was revoked
//! since. An agent's new key is shown once, to the proposer, who is named in
//! the change as its holder and may then not approve that agent's payments.
//!
//! What is stored is exactly what will be applied, with the password and
//! the agent key as hashes only; what a person reads is stored beside it
//! with accounts masked. Every step is audited: `registry.change.proposed`,
//! `.confirmed`, `.rejected`, `.superseded`, `.refused` (a refused request,
//! e.g. a username another tenant holds), and the usual `registry.<kind>.<verb>`
//! entry of the change itself, named after the confirming admin.
//!
//! The CLI (`countersign apply`, `user add`, …) is the operator's and is not
//! four-eyes: it needs the server's files, and with them everything.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;

use crate::config::Config;
use crate::domain::Role;
use crate::domain::{mask_account, mask_account_tagged, Currency};
use crate::people::password::Passwords;
use crate::platform::clock::Clock;
use crate::platform::provision::{self, ApplyError, NewAgent, NewCredential, NewUser};
use crate::store::Store;
use crate::store::{self, audit::AuditEntry, registry_changes::ChangeRow, Conn};

/// How long a proposed change may wait for its confirmation.
pub const PENDING_FOR: Duration = Duration::days(7);

pub use crate::people::actors::Admin;

mod apply;
mod grants;
pub mod policy_change;
pub use grants::delegation_lines;
mod stranded;

use apply::*;
use grants::*;

/// A user as the admin's form describes it (the whole desired state).
#[derive(Debug, Clone)]
pub struct UserForm {
    pub username: String,
    /// `None`: keep the current password (an existing user only).
    pub password: Option<String>,
    pub roles: Vec<Role>,
    /// Per currency, in minor units.
    pub limits: BTreeMap<String, u64>,
    pub slack_user_id: Option<String>,
}

#[derive(Debug, Clone)]
pub struct AgentForm {
    pub id: String,
    pub acts_for: String,
    pub source_accounts: Vec<String>,
    pub purposes: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct PayeeForm {
    pub id: String,
    pub legal_name: String,
    pub trusted: bool,
}

/// What an admin asked for.
#[derive(Debug, Clone)]
pub enum Request {
    User(UserForm),
    Agent(AgentForm),
    Payee(PayeeForm),
    SlackLink {
        username: String,
        slack_user_id: Option<String>,
    },
    /// A one-time code with which `username` can register a passkey without
    /// holding one (their first, or after losing all).
    PasskeyEnrolment {
        username: String,
    },
    /// The removal of someone's passkey (a lost device; the last passkey of
    /// a role that requires one).
    PasskeyRemoval {
        passkey_id: String,
    },
    /// The kill switch: stop every commit of the tenant (`agent` `None`) or
    /// of one agent, before any rail call. Applies at once.
    Freeze {
        agent: Option<String>,
        reason: String,
    },
    /// Lift a freeze: waits for a second admin.
    Unfreeze {
        agent: Option<String>,
    },
    /// A payee's bank account changes: `to` (a new account) takes over from
    /// payee `from`. Applies only when a second admin records the call-back
    /// that verified it ([`confirm_account_change`]; `crate::payables::account_change`).
    PayeeAccount {
        from: String,
        to: String,
    },
    /// A SCIM token for the tenant's identity provider (docs/PEOPLE.md):
    /// shown once to the admin who proposes it, working once another
    /// admin confirms.
    ScimToken {
        label: String,
    },
    /// Revoke a SCIM token: applies at once.
    RevokeScimToken {
        id: String,
    },
    /// Point an agent at another person, its key kept (an agent frozen
    /// because the person it acted for left is thawed by this).
    Reassign {
        agent: String,
        acts_for: String,
    },
    /// A tenant's payment policy (`policy::MODE_ENFORCE` or `MODE_OBSERVE`):
    /// a Cedar text, or empty for the config's own. Waits for a second
    /// admin, who is shown its backtest (`policy_change`).
    Policy {
        mode: String,
        text: String,
    },
}

/// Exactly what a change applies (stored as JSON; secrets as hashes).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Stored {
    User {
        username: String,
        /// `None`: the current password stays.
        password_hash: Option<String>,
        roles: Vec<Role>,
        limits: BTreeMap<String, u64>,
        slack_user_id: Option<String>,
    },
    Agent {
        id: String,
        acts_for: String,
        source_accounts: Vec<String>,
        purposes: Vec<String>,
        key_sha256: String,
        /// The user id and name of the admin the new key was shown to.
        #[serde(default)]
        key_holder: Option<(String, String)>,
    },
    Payee {
        id: String,
        legal_name: String,
        trusted: bool,
    },
    SlackLink {
        username: String,
        slack_user_id: Option<String>,
    },
    PasskeyEnrolment {
        username: String,
    },
    PasskeyRemoval {
        username: String,
        passkey_id: String,
    },
    /// The kill switch, on (`frozen`) or off, for the tenant (`agent`
    /// `None`) or one agent.
    Freeze {
        agent: Option<String>,
        frozen: bool,
        reason: String,
    },
    /// A SCIM token: its id, label and the SHA-256 of its secret.
    ScimToken {
        id: String,
        label: String,
        token_sha256: String,
        /// The admin it was shown to.
        proposed_by: String,
    },
    RevokeScimToken {
        id: String,
    },
    /// An agent's new principal (a username), its key kept.
    Reassign {
        agent: String,
        acts_for: String,
    },
    /// A delegation (`crate::decision::delegation`) that lets its delegate count for
    /// approval groups they are not in: by usernames, its instants as stored.
    Delegation {
        id: String,
        delegator: String,
        delegate: String,
        starts_at: String,
        ends_at: String,
    },
    /// A change of a payee's bank account: `to` takes over from `from`
    /// (whose legal name it keeps), once a call-back verified it.
    PayeeAccount {
        from: String,
        to: String,
        legal_name: String,
    },
    /// A tenant's policy, enforced or observed (`policy_change`).
    Policy {
        mode: String,
        /// Empty: the config's own.
        text: String,
        digest: String,
    },
}

impl Stored {
    fn kind(&self) -> &'static str {
        match self {
            Stored::User { .. } => "user",
            Stored::Agent { .. } => "agent",
            Stored::Payee { .. } => "payee",
            Stored::SlackLink { .. } => "slack_link",
            Stored::PasskeyEnrolment { .. } => "passkey_enrolment",
            Stored::PasskeyRemoval { .. } => "passkey_removal",
            Stored::Freeze { .. } => "freeze",
            Stored::Delegation { .. } => "delegation",
            Stored::PayeeAccount { .. } => "payee_account",
            Stored::ScimToken { .. } => "scim_token",
            Stored::RevokeScimToken { .. } => "scim_token_revocation",
            Stored::Reassign { .. } => "agent_reassignment",
            Stored::Policy { .. } => "policy",
        }
    }

    /// Who or what the change is about (the payee id is an account: stored
    /// in full, shown masked).
    fn subject(&self) -> &str {
        match self {
            Stored::User { username, .. }
            | Stored::SlackLink { username, .. }
            | Stored::PasskeyEnrolment { username }
            | Stored::PasskeyRemoval { username, .. } => username,
            Stored::Agent { id, .. } | Stored::Payee { id, .. } => id,
            Stored::PayeeAccount { from, .. } => from,
            Stored::Freeze { agent, .. } => agent.as_deref().unwrap_or(TENANT_SUBJECT),
            Stored::Delegation { id, .. } => id,
            Stored::ScimToken { id, .. } | Stored::RevokeScimToken { id } => id,
            Stored::Reassign { agent, .. } => agent,
            Stored::Policy { mode, .. } => mode,
        }
    }

    /// The kinds of change about the same subject as this one.
    fn family(&self) -> &'static [&'static str] {
        match self {
            Stored::Agent { .. } | Stored::Reassign { .. } => &["agent", "agent_reassignment"],
            Stored::ScimToken { .. } | Stored::RevokeScimToken { .. } => &["scim_token", "scim_token_revocation"],
            Stored::Payee { .. } => &["payee"],
            Stored::PayeeAccount { .. } => &["payee_account"],
            Stored::Freeze { .. } => &["freeze"],
            Stored::Delegation { .. } => &["delegation"],
            Stored::Policy { .. } => &["policy"],
            _ => &["user", "slack_link", "passkey_enrolment", "passkey_removal"],
        }
    }

    /// The username whose own account this change touches, if any.
    fn account_of(&self) -> Option<&str> {
        match self {
            Stored::User { username, .. }
            | Stored::SlackLink { username, .. }
            | Stored::PasskeyEnrolment { username }
            | Stored::PasskeyRemoval { username, .. } => Some(username),
            Stored::Delegation { delegator, .. } => Some(delegator),
            _ => None,
        }
    }

    /// Whether `username`'s own authority is what this change grants: their
    /// account's, or a delegation's either side.
    fn concerns(&self, username: &str) -> bool {
        self.account_of() == Some(username)
            || matches!(self, Stored::Delegation { delegate, .. } if delegate == username)
    }
}

/// A freeze's subject when it covers the whole tenant.
const TENANT_SUBJECT: &str = "*";

/// What a freeze of `tenant` (or of its `agent`) covers.
fn freeze_scope(tenant: &str, agent: Option<&str>) -> store::freezes::Scope {
    match agent {
        None => store::freezes::Scope::Tenant(tenant.to_owned()),
        Some(agent) => store::freezes::Scope::Agent { tenant: tenant.to_owned(), agent: agent.to_owned() },
    }
}

/// What became of a request.
#[derive(Debug)]
pub enum Submitted {
    /// It only reduced authority: applied at once.
    Applied { message: String },
    /// It waits for a second admin. An agent's new key is shown here, once.
    Pending { id: String, message: String, agent_key: Option<String> },
}

/// A confirmed change: what was done, and a secret to show once (an
/// enrolment code, to the confirming admin).
#[derive(Debug)]
pub struct Confirmed {
    pub message: String,
    pub secret: Option<OneTimeSecret>,
    /// A policy change's backtest, run again as it was confirmed.
    pub backtest: Option<crate::decision::policy::backtest::Report>,
}

/// A secret shown once: what it is, for whom, and itself.
#[derive(Debug)]
pub struct OneTimeSecret {
    pub title: String,
    pub explanation: String,
    pub value: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error("only admins can change the registry")]
    NotAnAdmin,
    #[error("{0}")]
    Invalid(String),
    #[error("the server is busy; try again in a moment")]
    Busy,
    #[error("no such change")]
    NotFound,
    #[error("the change is {0}, not pending")]
    NotPending(String),
    #[error("you proposed this change: another admin must confirm it")]
    OwnProposal,
    #[error("this change is to your own account: another admin must confirm it")]
    OwnAccount,
    #[error("the change waited more than 7 days: propose it again")]
    Expired,
    #[error(
        "the registry changed since this was proposed, so it would now do something else ({0}); it was \
         withdrawn: propose it again"
    )]
    Stale(String),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

impl From<ApplyError> for ChangeError {
    fn from(e: ApplyError) -> Self {
        match e {
            ApplyError::Database(e) => ChangeError::Store(e),
            ApplyError::Invalid(problems) => {
                // Keys of a one-entry plan (`user.username`) mean little on a form:
                // the message alone is said, with the field it is about.
                let lines: Vec<String> = problems
                    .iter()
                    .map(|p| match p.key.as_deref().and_then(|k| k.split_once('.')).map(|(_, f)| f) {
                        Some(field) => format!("{field}: {}", p.message),
                        None => p.message.clone(),
                    })
                    .collect();
                ChangeError::Invalid(lines.join("; "))
            }
            other => ChangeError::Invalid(other.to_string()),
        }
    }
}

fn require_admin(admin: &Admin) -> Result<(), ChangeError> {
    if admin.roles.contains(&Role::Admin) {
        Ok(())
    } else {
        Err(ChangeError::NotAnAdmin)
    }
}

fn money(currency: &str, minor: u64) -> String {
    Currency::parse(currency).map(|c| c.format_minor(minor)).unwrap_or_else(|_| format!("{minor} {currency}"))
}

fn role_names(roles: &[Role]) -> String {
    if roles.is_empty() {
        return "none".into();
    }
    roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", ")
}

/// A user of the admin's tenant by username; another tenant's is "no such user".
async fn tenant_user(state: &impl Store, tenant: &str, username: &str) -> Result<store::directory::User, ChangeError> {
    let mut conn = state.db().reader().await?;
    let user = store::directory::user_by_username(&mut conn, username).await?;
    user.filter(|u| u.tenant_id == tenant)
        .ok_or_else(|| ChangeError::Invalid(format!("there is no user {username} here")))
}

/// An admin's request: validated, then applied at once if it only reduces
/// authority, else stored for a second admin.
pub async fn submit(
    state: &(impl Store + Clock + Config + Passwords),
    admin: &Admin,
    request: Request,
) -> Result<Submitted, ChangeError> {
    require_admin(admin)?;
    let tenant = admin.tenant_id.clone();
    let now = state.now();
    let (stored, agent_key) = match request {
        Request::User(form) => return submit_user(state, admin, form, now).await,
        Request::Agent(form) => {
            let agent = NewAgent {
                tenant: tenant.clone(),
                id: form.id.clone(),
                acts_for: form.acts_for.clone(),
                source_accounts: form.source_accounts.clone(),
                purposes: form.purposes.clone(),
            };
            let key = provision::generate_agent_key(true);
            let key_sha256 = provision::key_sha256(&key);
            provision::check_agent(agent, key_sha256.clone())?;
            tenant_user(state, &tenant, &form.acts_for)
                .await
                .map_err(|_| ChangeError::Invalid(format!("acts_for: there is no user {} here", form.acts_for)))?;
            let stored = Stored::Agent {
                id: form.id,
                acts_for: form.acts_for,
                source_accounts: form.source_accounts,
                purposes: form.purposes,
                key_sha256,
                key_holder: Some((admin.user_id.clone(), admin.username.clone())),
            };
            (stored, Some(key))
        }
        Request::Payee(form) => {
            provision::check_payee(&tenant, &form.id, &form.legal_name)?;
            (Stored::Payee { id: form.id, legal_name: form.legal_name, trusted: form.trusted }, None)
        }
        Request::SlackLink { username, slack_user_id } => {
            tenant_user(state, &tenant, &username).await?;
            let slack_user_id = match slack_user_id {
                Some(slack) => Some(provision::check_slack_user_id(&slack).map_err(ChangeError::Invalid)?),
                None => None,
            };
            (Stored::SlackLink { username, slack_user_id }, None)
        }
        Request::PasskeyEnrolment { username } => {
            tenant_user(state, &tenant, &username).await?;
            (Stored::PasskeyEnrolment { username }, None)
        }
        Request::PasskeyRemoval { passkey_id } => {
            let passkey = store::passkeys::get(&state.db().read, &tenant, &passkey_id)
                .await?
                .ok_or_else(|| ChangeError::Invalid("there is no such passkey here".into()))?;
            let mut conn = state.db().reader().await?;
            let holder = store::directory::user_by_id(&mut conn, &passkey.user_id)
                .await?
                .ok_or_else(|| ChangeError::Invalid("there is no such passkey here".into()))?;
            (Stored::PasskeyRemoval { username: holder.username, passkey_id }, None)
        }
        Request::Freeze { agent, reason } => {
            if let Some(agent) = &agent {
                let mut conn = state.db().reader().await?;
                store::directory::agent(&mut conn, &tenant, agent)
                    .await?
                    .ok_or_else(|| ChangeError::Invalid(format!("there is no agent {agent} here")))?;
            }
            let reason = reason.trim().to_owned();
            if reason.is_empty() || reason.chars().count() > 500 {
                return Err(ChangeError::Invalid("reason: say why, in at most 500 characters".into()));
            }
            (Stored::Freeze { agent, frozen: true, reason }, None)
        }
        Request::Unfreeze { agent } => (Stored::Freeze { agent, frozen: false, reason: String::new() }, None),
        Request::PayeeAccount { from, to } => {
            let legal_name = crate::payables::account_change::check_request(state, &tenant, &from, &to)
                .await?
                .map_err(ChangeError::Invalid)?;
            (Stored::PayeeAccount { from, to, legal_name }, None)
        }
        Request::ScimToken { label } => {
            let label = label.trim().to_owned();
            if label.is_empty() || label.chars().count() > 100 || label.chars().any(char::is_control) {
                return Err(ChangeError::Invalid(
                    "label: name the identity provider, in at most 100 characters".into(),
                ));
            }
            let token = crate::people::scim::generate_token();
            let stored = Stored::ScimToken {
                id: store::new_id("scim", now),
                label,
                token_sha256: crate::domain::key_sha256(&token).into_string(),
                proposed_by: admin.user_id.clone(),
            };
            (stored, Some(token))
        }
        Request::RevokeScimToken { id } => {
            let tokens = store::people::tokens_of(&state.db().read, &tenant).await?;
            if !tokens.iter().any(|t| t.id == id && t.revoked_at.is_none()) {
                return Err(ChangeError::Invalid("there is no such SCIM token here".into()));
            }
            (Stored::RevokeScimToken { id }, None)
        }
        Request::Reassign { agent, acts_for } => {
            let mut conn = state.db().reader().await?;
            store::directory::agent(&mut conn, &tenant, &agent)
                .await?
                .ok_or_else(|| ChangeError::Invalid(format!("there is no agent {agent} here")))?;
            drop(conn);
            let user = tenant_user(state, &tenant, &acts_for)
                .await
                .map_err(|_| ChangeError::Invalid(format!("acts_for: there is no user {acts_for} here")))?;
            if !user.active {
                return Err(ChangeError::Invalid(format!("acts_for: {acts_for} is deactivated")));
            }
            (Stored::Reassign { agent, acts_for }, None)
        }
        Request::Policy { mode, text } => return policy_change::submit(state, admin, mode, text, now).await,
    };
    let lines = {
        let mut conn = state.db().reader().await?;
        grants(&mut conn, state.settings(), &tenant, &stored, now).await?
    };
    let Some(lines) = lines else {
        return apply_at_once(state, admin, &stored, &[], now).await;
    };
    let id = propose(state, admin, &stored, lines, now).await?;
    let message = match &stored {
        Stored::Agent { .. } => "The agent's key works once another admin confirms the change; it was shown only to \
                                 you, so you may not approve this agent's payments."
            .to_owned(),
        Stored::Payee { .. } => "Another admin must confirm the payee.".into(),
        Stored::SlackLink { .. } => "Another admin must confirm the link.".into(),
        Stored::PasskeyEnrolment { username } => {
            format!("Another admin must confirm the enrolment code for {username}; it is shown once, to them.")
        }
        Stored::PasskeyRemoval { username, .. } => {
            format!("Another admin must confirm the removal of {username}'s passkey.")
        }
        Stored::User { username, .. } => format!("Another admin must confirm the change to user {username}."),
        Stored::Freeze { agent, .. } => format!(
            "Another admin must confirm lifting the freeze of {}.",
            freeze_scope(&tenant, agent.as_deref()).describe()
        ),
        Stored::Delegation { delegator, delegate, .. } => {
            format!("An admin other than {delegator} and {delegate} must confirm the delegation.")
        }
        Stored::PayeeAccount { .. } => "Another admin must call the payee back at a number you already had, and \
                                        record the call, before the new account is paid."
            .into(),
        Stored::ScimToken { label, .. } => {
            format!("The SCIM token for {label} works once another admin confirms it; it was shown only to you, now.")
        }
        Stored::RevokeScimToken { .. } => "Another admin must confirm the revocation.".into(),
        Stored::Reassign { agent, acts_for } => {
            format!("Another admin must confirm that agent {agent} acts for {acts_for} from now on.")
        }
        Stored::Policy { .. } => unreachable!("policy changes are submitted by policy_change"),
    };
    Ok(Submitted::Pending { id, message, agent_key })
}

async fn submit_user(
    state: &(impl Store + Config + Passwords),
    admin: &Admin,
    form: UserForm,
    now: DateTime<Utc>,
) -> Result<Submitted, ChangeError> {
    let tenant = &admin.tenant_id;
    let check = NewUser {
        tenant: tenant.clone(),
        username: form.username.clone(),
        credential: NewCredential::Keep,
        roles: form.roles.iter().map(|r| r.as_str().to_owned()).collect(),
        limits: form.limits.clone(),
        slack_user_id: form.slack_user_id.clone(),
    };
    provision::check_user(state.settings(), check)?;
    // The tenant first: a username another tenant holds is refused before
    // anything else is done with it (no hash of theirs is ever touched).
    let existing = {
        let mut conn = state.db().reader().await?;
        store::directory::user_by_username(&mut conn, &form.username).await?
    };
    if existing.as_ref().is_some_and(|u| &u.tenant_id != tenant) {
        let why = provision::unavailable_username(&form.username);
        audit(state, admin, "registry.change.refused", json!({"kind": "user", "subject": form.username, "why": why}))
            .await?;
        return Err(ChangeError::Invalid(why));
    }
    let password_hash = match &form.password {
        Some(p) if p.chars().count() < 8 => {
            return Err(ChangeError::Invalid("password: must be at least 8 characters".into()))
        }
        Some(p) => Some(state.passwords().hash(p.clone()).await.map_err(|_| ChangeError::Busy)?),
        None if existing.is_none() => {
            return Err(ChangeError::Invalid("password: a new user needs a password".into()));
        }
        None => None,
    };
    let stored = Stored::User {
        username: form.username.clone(),
        password_hash,
        roles: form.roles.clone(),
        limits: form.limits.clone(),
        slack_user_id: form.slack_user_id.clone(),
    };
    // A reduction applies at once, whatever is pending: the payments it
    // leaves without the approvers they need are said and audited.
    let strands = stranded::stranded(&mut *state.db().reader().await?, state.settings(), tenant, &stored, now).await?;
    match user_lines(existing.as_ref(), &stored) {
        None => apply_at_once(state, admin, &stored, &strands, now).await,
        Some(mut lines) => {
            lines.extend(strands);
            let id = propose(state, admin, &stored, lines, now).await?;
            Ok(Submitted::Pending {
                id,
                message: format!("Another admin must confirm the change to user {}.", form.username),
                agent_key: None,
            })
        }
    }
}

/// Stores a pending change and audits it; returns its id.
async fn propose(
    state: &impl Store,
    admin: &Admin,
    stored: &Stored,
    lines: Vec<String>,
    now: DateTime<Utc>,
) -> Result<String, ChangeError> {
    propose_with(state, admin, stored, lines, None, now).await
}

/// [`propose`], with what else the confirming admin is shown stored beside
/// the lines (a policy change's backtest, under `backtest`).
async fn propose_with(
    state: &impl Store,
    admin: &Admin,
    stored: &Stored,
    lines: Vec<String>,
    backtest: Option<serde_json::Value>,
    now: DateTime<Utc>,
) -> Result<String, ChangeError> {
    let mut tx = state.db().begin().await?;
    let id = propose_in(&mut tx, admin, stored, lines, backtest, now).await?;
    tx.commit().await?;
    Ok(id)
}

/// A delegation that lets its delegate count for groups they are not in
/// (`crate::decision::delegation`): proposed by its delegator, in the transaction
/// that stores it; `lines` say what it grants. Returns the change's id.
pub async fn propose_delegation(
    tx: &mut Conn,
    delegator: &Admin,
    row: &store::delegations::DelegationRow,
    (delegator_name, delegate_name): (&str, &str),
    lines: Vec<String>,
    now: DateTime<Utc>,
) -> crate::store::Result<String> {
    let stored = Stored::Delegation {
        id: row.id.clone(),
        delegator: delegator_name.to_owned(),
        delegate: delegate_name.to_owned(),
        starts_at: store::ts(row.starts_at),
        ends_at: store::ts(row.ends_at),
    };
    propose_in(tx, delegator, &stored, lines, None, now).await.map_err(|e| match e {
        ChangeError::Store(e) => e,
        other => unreachable!("storing a change fails only in the store: {other}"),
    })
}

async fn propose_in(
    tx: &mut Conn,
    admin: &Admin,
    stored: &Stored,
    lines: Vec<String>,
    backtest: Option<serde_json::Value>,
    now: DateTime<Utc>,
) -> Result<String, ChangeError> {
    let id = store::new_id("chg", now);
    let change = serde_json::to_string(stored).expect("changes serialize");
    let summary = match &backtest {
        None => json!({ "lines": lines }),
        Some(backtest) => json!({ "lines": lines, "backtest": backtest }),
    }
    .to_string();
    let shown_subject = shown_subject(stored.kind(), stored.subject());
    store::registry_changes::insert(
        tx,
        &store::registry_changes::NewChange {
            id: &id,
            tenant_id: &admin.tenant_id,
            kind: stored.kind(),
            subject: stored.subject(),
            change: &change,
            summary: &summary,
            proposed_by: &admin.user_id,
            now,
        },
    )
    .await?;
    append(
        tx,
        admin,
        "registry.change.proposed",
        json!({"change_id": id, "kind": stored.kind(), "subject": shown_subject, "lines": lines}),
    )
    .await?;
    Ok(id)
}

fn shown_subject(kind: &str, subject: &str) -> String {
    if kind == "payee" || kind == "payee_account" {
        mask_account_tagged(subject)
    } else {
        subject.to_owned()
    }
}

/// A second admin confirms: the change is applied, in one transaction with
/// its decision and audit entries, if it still grants exactly what it said.
pub async fn confirm(state: &(impl Store + Clock + Config), admin: &Admin, id: &str) -> Result<Confirmed, ChangeError> {
    confirm_recording(state, admin, id, None).await
}

/// A second admin confirms a change of a payee's bank account, recording
/// the call-back that verified it (`crate::payables::account_change`).
pub async fn confirm_account_change(
    state: &(impl Store + Clock + Config),
    admin: &Admin,
    id: &str,
    call_back: &crate::payables::account_change::CallBack,
) -> Result<Confirmed, ChangeError> {
    confirm_recording(state, admin, id, Some(call_back)).await
}

async fn confirm_recording(
    state: &(impl Store + Clock + Config),
    admin: &Admin,
    id: &str,
    call_back: Option<&crate::payables::account_change::CallBack>,
) -> Result<Confirmed, ChangeError> {
    require_admin(admin)?;
    let row =
        store::registry_changes::get(&state.db().read, &admin.tenant_id, id).await?.ok_or(ChangeError::NotFound)?;
    let stored: Stored =
        serde_json::from_str(&row.change).map_err(|e| store::StoreError::corrupt("registry_changes.change", e))?;
    if row.status != "pending" {
        return Err(ChangeError::NotPending(row.status));
    }
    let now = state.now();
    if let Some(refusal) = cannot_confirm(&row, Some(&stored), admin, now) {
        return Err(refusal);
    }
    if matches!(stored, Stored::PayeeAccount { .. }) && call_back.is_none() {
        return Err(ChangeError::Invalid(
            "a change of bank account is confirmed with the call-back that verified it: record the call".into(),
        ));
    }
    let mut tx = state.db().begin().await?;
    // Compared in the transaction that applies it: nothing can change between.
    if let Err(why) = still_as_shown(&mut tx, state.settings(), &row, &stored, now).await? {
        if store::registry_changes::decide(&mut tx, id, "superseded", &admin.user_id, Some(&why), now).await? {
            withdrawn(&mut tx, &stored, now).await?;
            append(
                &mut tx,
                admin,
                "registry.change.superseded",
                json!({"changes": [id], "kind": row.kind, "subject": shown_subject(&row.kind, &row.subject),
                       "why": why}),
            )
            .await?;
            tx.commit().await?;
        }
        return Err(ChangeError::Stale(why));
    }
    if !store::registry_changes::decide(&mut tx, id, "applied", &admin.user_id, None, now).await? {
        let latest = store::registry_changes::get(&state.db().read, &admin.tenant_id, id).await?;
        return Err(ChangeError::NotPending(latest.map(|r| r.status).unwrap_or_default()));
    }
    let secret = match (&stored, call_back) {
        (Stored::PayeeAccount { from, to, .. }, Some(call_back)) => {
            let who = (admin.tenant_id.as_str(), admin.actor(), (admin.user_id.as_str(), admin.username.as_str()));
            crate::payables::account_change::confirmed(&mut tx, (who.0, &who.1, who.2), (from, to), call_back, now)
                .await?
                .map_err(|why| ChangeError::Invalid(why.into()))?;
            None
        }
        _ => apply(&mut tx, state, admin, &stored, now).await?,
    };
    policy_change::apply(&mut tx, admin, id, &row.proposed_by, &stored, now).await?;
    let superseded = store::registry_changes::supersede_others(&mut tx, &row, now).await?;
    append(
        &mut tx,
        admin,
        "registry.change.confirmed",
        json!({"change_id": id, "kind": row.kind, "subject": shown_subject(&row.kind, &row.subject),
               "proposed_by": row.proposed_by, "superseded": superseded}),
    )
    .await?;
    tx.commit().await?;
    let backtest = policy_change::confirmed(state, &admin.tenant_id, &stored).await?;
    Ok(Confirmed { message: format!("Change confirmed: {}.", summary_lines(&row).join("; ")), secret, backtest })
}

/// Any admin of the tenant (the proposer too: a withdrawal) rejects a pending change.
pub async fn reject(
    state: &(impl Store + Clock),
    admin: &Admin,
    id: &str,
    note: Option<&str>,
) -> Result<String, ChangeError> {
    require_admin(admin)?;
    let row =
        store::registry_changes::get(&state.db().read, &admin.tenant_id, id).await?.ok_or(ChangeError::NotFound)?;
    let note = note.map(str::trim).filter(|n| !n.is_empty());
    if note.is_some_and(|n| n.chars().count() > 500 || n.chars().any(char::is_control)) {
        return Err(ChangeError::Invalid("note: at most 500 characters, no control characters".into()));
    }
    let mut tx = state.db().begin().await?;
    if !store::registry_changes::decide(&mut tx, id, "rejected", &admin.user_id, note, state.now()).await? {
        return Err(ChangeError::NotPending(row.status));
    }
    if let Ok(stored) = serde_json::from_str::<Stored>(&row.change) {
        withdrawn(&mut tx, &stored, state.now()).await?;
    }
    append(
        &mut tx,
        admin,
        "registry.change.rejected",
        json!({"change_id": id, "kind": row.kind, "subject": shown_subject(&row.kind, &row.subject),
               "proposed_by": row.proposed_by, "note": note}),
    )
    .await?;
    tx.commit().await?;
    Ok("Change rejected.".into())
}

/// A change that will never apply: a delegation it would have confirmed is
/// refused.
async fn withdrawn(tx: &mut Conn, stored: &Stored, now: DateTime<Utc>) -> crate::store::Result<()> {
    if let Stored::Delegation { id, .. } = stored {
        let (pending, refused) = (store::delegations::PENDING, store::delegations::REFUSED);
        store::delegations::set_status(tx, id, &[pending], refused, now).await?;
    }
    Ok(())
}

fn summary_lines(row: &ChangeRow) -> Vec<String> {
    serde_json::from_str::<serde_json::Value>(&row.summary)
        .ok()
        .and_then(|v| v.get("lines").cloned())
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

/// Why `admin` may not confirm the pending change `row`, if they may not:
/// the proposer never confirms their own, nobody confirms a change to their
/// own account, and a change waits at most [`PENDING_FOR`]. The one rule for
/// [`confirm`] and for the admin page's Confirm buttons (which also show a
/// change that would now do something else as stale).
fn cannot_confirm(row: &ChangeRow, stored: Option<&Stored>, admin: &Admin, now: DateTime<Utc>) -> Option<ChangeError> {
    if row.proposed_by == admin.user_id {
        Some(ChangeError::OwnProposal)
    } else if stored.is_some_and(|s| s.concerns(&admin.username)) {
        Some(ChangeError::OwnAccount)
    } else if row.proposed_at + PENDING_FOR < now {
        Some(ChangeError::Expired)
    } else {
        None
    }
}

/// A pending change as the admin page lists it.
#[derive(Debug, Clone)]
pub struct PendingChange {
    pub id: String,
    pub kind: String,
    pub lines: Vec<String>,
    pub proposed_by: String,
    pub proposed_at: String,
    /// Why this viewer cannot confirm it, if they cannot.
    pub blocker: Option<String>,
    /// A policy change's backtest, as run when it was proposed.
    pub backtest: Option<crate::decision::policy::backtest::Report>,
}

fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect::<String>() + ".").unwrap_or_default()
}

/// The tenant's pending changes, with whether `viewer` may confirm each
/// (and whether each still does what it said).
pub async fn pending(state: &(impl Store + Clock + Config), admin: &Admin) -> Result<Vec<PendingChange>, ChangeError> {
    let rows = store::registry_changes::pending(&state.db().read, &admin.tenant_id).await?;
    let now = state.now();
    let mut conn = state.db().reader().await?;
    let mut listed = Vec::with_capacity(rows.len());
    for row in rows {
        let stored: Option<Stored> = serde_json::from_str(&row.change).ok();
        let mut blocker =
            cannot_confirm(&row, stored.as_ref(), admin, now).map(|refusal| sentence(&refusal.to_string()));
        if let (None, Some(stored)) = (&blocker, &stored) {
            if let Err(why) = still_as_shown(&mut conn, state.settings(), &row, stored, now).await? {
                blocker = Some(sentence(&format!(
                    "stale: the registry changed since this was proposed ({why}); reject it and propose it again"
                )));
            }
        }
        listed.push(PendingChange {
            lines: summary_lines(&row),
            backtest: policy_change::stored_backtest(&row.summary),
            id: row.id,
            kind: row.kind,
            proposed_by: row.proposed_by,
            proposed_at: store::ts(row.proposed_at),
            blocker,
        });
    }
    Ok(listed)
}

/// The audit entry of an admin's registry step.
fn entry(admin: &Admin, action: &str, data: serde_json::Value) -> AuditEntry {
    AuditEntry {
        tenant_id: Some(admin.tenant_id.clone()),
        actor: admin.actor(),
        action: action.into(),
        proposal_id: None,
        request_hash: None,
        data,
    }
}

async fn append(conn: &mut Conn, admin: &Admin, action: &str, data: serde_json::Value) -> crate::store::Result<()> {
    store::audit::append(conn, &entry(admin, action, data)).await
}

async fn audit(state: &impl Store, admin: &Admin, action: &str, data: serde_json::Value) -> crate::store::Result<()> {
    store::audit::append_alone(&state.db().write, &entry(admin, action, data)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(roles: &[Role], limits: &[(&str, u64)], slack: Option<&str>) -> store::directory::User {
        store::directory::User {
            id: "usr_1".into(),
            tenant_id: "acme".into(),
            username: "ben".into(),
            roles: roles.to_vec(),
            slack_user_id: slack.map(str::to_owned),
            email: None,
            time_zone: None,
            quiet_hours: None,
            active: true,
            idp_roles: Vec::new(),
            idp_approval_groups: Vec::new(),
            deactivated_at: None,
            deleted_at: None,
            oidc: None,
            approval_limits_minor: limits.iter().map(|(c, n)| (c.to_string(), *n)).collect(),
        }
    }

    fn form(roles: &[Role], limits: &[(&str, u64)], password: Option<&str>, slack: Option<&str>) -> Stored {
        Stored::User {
            username: "ben".into(),
            password_hash: password.map(str::to_owned),
            roles: roles.to_vec(),
            limits: limits.iter().map(|(c, n)| (c.to_string(), *n)).collect(),
            slack_user_id: slack.map(str::to_owned),
        }
    }

    #[test]
    fn only_reductions_apply_at_once() {
        let old = user(&[Role::Approver, Role::Admin], &[("USD", 500_000), ("EUR", 100)], Some("U0BEN"));
        let same = form(&[Role::Approver, Role::Admin], &[("USD", 500_000), ("EUR", 100)], None, Some("U0BEN"));
        assert_eq!(user_lines(Some(&old), &same), None, "unchanged");
        let less = form(&[Role::Approver], &[("USD", 100_000)], None, None);
        assert_eq!(user_lines(Some(&old), &less), None, "fewer roles, lower and removed limits, unlinked");

        let cases = [
            (form(&[Role::Approver, Role::Admin, Role::Viewer], &[], None, None), "role"),
            (form(&[Role::Approver], &[("USD", 500_001)], None, None), "Raise ben's USD approval limit"),
            (form(&[Role::Approver], &[("GBP", 1)], None, None), "an approval limit of 0.01 GBP"),
            (form(&[Role::Approver], &[], Some("new password"), None), "new password"),
            (form(&[Role::Approver], &[], None, Some("U0XYZ")), "Slack user U0XYZ"),
        ];
        for (form, expected) in cases {
            let lines = user_lines(Some(&old), &form).unwrap_or_else(|| panic!("{form:?} needs a second admin"));
            assert!(lines.iter().any(|l| l.contains(expected)), "{lines:?} should mention {expected}");
        }
        // A role given in exchange for one taken away says both.
        let swap = user_lines(Some(&user(&[Role::Admin], &[], None)), &form(&[Role::Viewer], &[], None, None));
        assert_eq!(swap.unwrap(), vec!["Give ben the role viewer and remove admin (now admin)"]);
        let new = user_lines(None, &form(&[Role::Viewer], &[], Some("pw"), None)).expect("a new user waits");
        assert_eq!(new, vec!["Create user ben with roles viewer"]);
    }

    #[test]
    fn stored_changes_round_trip_and_name_their_subject() {
        let stored = Stored::Payee { id: "acct_acme0000000001".into(), legal_name: "Acme".into(), trusted: true };
        let text = serde_json::to_string(&stored).unwrap();
        assert_eq!(serde_json::from_str::<Stored>(&text).unwrap(), stored);
        assert_eq!((stored.kind(), stored.subject(), stored.account_of()), ("payee", "acct_acme0000000001", None));
        assert_eq!(shown_subject("payee", "acct_acme0000000001"), mask_account_tagged("acct_acme0000000001"));
        assert_ne!(shown_subject("payee", "acct_beta0000000001"), shown_subject("payee", "acct_acme0000000001"));
        let link = Stored::SlackLink { username: "ana".into(), slack_user_id: Some("U1".into()) };
        assert_eq!(link.account_of(), Some("ana"));
    }
}
