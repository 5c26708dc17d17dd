//! Four-eyes registry changes (docs/SECURITY.md, "One admin alone").
//!
//! A change made on the console that could weaken a control — a new user,
//! more roles, a higher approval limit, a new password, a Slack link, an
//! agent (new, changed or re-keyed), a payee trusted or renamed — is only
//! *proposed* by the admin who makes it. It takes effect when a second admin
//! of the same tenant confirms it; the proposer can never confirm their own,
//! and nobody confirms a change to their own account. A change that only
//! reduces authority (fewer roles, lower limits, a payee untrusted, a Slack
//! link removed) applies at once: making things safer never waits.
//!
//! What is stored is exactly what will be applied, with the password and
//! the agent key as hashes only; what a person reads is stored beside it
//! with accounts masked. Every step is audited: `registry.change.proposed`,
//! `.confirmed`, `.rejected`, `.refused` (a refused request, e.g. a username
//! another tenant holds), and the usual `registry.<kind>.<verb>` entry of
//! the change itself, named after the confirming admin.
//!
//! The CLI (`countersign apply`, `user add`, …) is the operator's and is not
//! four-eyes: it needs the server's files, and with them everything.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;

use crate::domain::Role;
use crate::domain::{mask_account, Currency};
use crate::provision::{self, ApplyError, NewAgent, NewCredential, NewUser};
use crate::state::AppState;
use crate::store::{self, audit::AuditEntry, registry_changes::ChangeRow};

/// How long a proposed change may wait for its confirmation.
pub const PENDING_FOR: Duration = Duration::days(7);

/// The admin acting on the console.
#[derive(Debug, Clone)]
pub struct Admin {
    pub user_id: String,
    pub username: String,
    pub tenant_id: String,
    pub roles: Vec<Role>,
}

impl Admin {
    fn actor(&self) -> String {
        format!("user:{}", self.user_id)
    }
}

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
    SlackLink { username: String, slack_user_id: Option<String> },
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
}

impl Stored {
    fn kind(&self) -> &'static str {
        match self {
            Stored::User { .. } => "user",
            Stored::Agent { .. } => "agent",
            Stored::Payee { .. } => "payee",
            Stored::SlackLink { .. } => "slack_link",
        }
    }

    /// Who or what the change is about (the payee id is an account: stored
    /// in full, shown masked).
    fn subject(&self) -> &str {
        match self {
            Stored::User { username, .. } | Stored::SlackLink { username, .. } => username,
            Stored::Agent { id, .. } | Stored::Payee { id, .. } => id,
        }
    }

    /// The username whose own account this change touches, if any.
    fn account_of(&self) -> Option<&str> {
        match self {
            Stored::User { username, .. } | Stored::SlackLink { username, .. } => Some(username),
            _ => None,
        }
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

/// An admin's request: validated, then applied at once if it only reduces
/// authority, else stored for a second admin.
pub async fn submit(state: &AppState, admin: &Admin, request: Request) -> Result<Submitted, ChangeError> {
    require_admin(admin)?;
    let tenant = admin.tenant_id.clone();
    let now = Utc::now();
    match request {
        Request::User(form) => submit_user(state, admin, form, now).await,
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
            let mut conn = state.db.reader().await?;
            let acts_for = store::directory::user_by_username(&mut conn, &form.acts_for).await?;
            if acts_for.is_none_or(|u| u.tenant_id != tenant) {
                return Err(ChangeError::Invalid(format!("acts_for: there is no user {} here", form.acts_for)));
            }
            let existing = store::directory::agent(&mut conn, &tenant, &form.id).await?;
            drop(conn);
            let mut lines = vec![match &existing {
                None => format!("Add agent {}, acting for {}", form.id, form.acts_for),
                Some(_) => format!("Change agent {} (acting for {}) and replace its key", form.id, form.acts_for),
            }];
            lines.push(format!(
                "Source accounts: {}",
                form.source_accounts.iter().map(|a| mask_account(a)).collect::<Vec<_>>().join(", ")
            ));
            lines.push(format!("Purposes: {}", form.purposes.join(", ")));
            let stored = Stored::Agent {
                id: form.id,
                acts_for: form.acts_for,
                source_accounts: form.source_accounts,
                purposes: form.purposes,
                key_sha256,
            };
            let id = propose(state, admin, &stored, lines, now).await?;
            Ok(Submitted::Pending {
                message: "The agent's key works once another admin confirms the change.".into(),
                id,
                agent_key: Some(key),
            })
        }
        Request::Payee(form) => {
            provision::check_payee(&tenant, &form.id, &form.legal_name)?;
            let existing = store::directory::payee(&state.db.read, &tenant, &form.id).await?;
            let masked = mask_account(&form.id);
            let mut lines = Vec::new();
            match &existing {
                None if !form.trusted => {
                    provision::add_payee(&state.db, &tenant, &form.id, &form.legal_name, false, &admin.actor()).await?;
                    return Ok(Submitted::Applied { message: format!("Payee {} saved.", form.legal_name) });
                }
                None => lines.push(format!("Add payee {} ({masked}) as trusted", form.legal_name)),
                Some(p) => {
                    if p.legal_name != form.legal_name {
                        lines.push(format!("Rename payee {masked} from {} to {}", p.legal_name, form.legal_name));
                    }
                    if form.trusted && !p.trusted {
                        lines.push(format!("Trust payee {} ({masked})", form.legal_name));
                    }
                    if lines.is_empty() {
                        // Unchanged, or only trust removed: safer, so at once.
                        provision::add_payee(
                            &state.db,
                            &tenant,
                            &form.id,
                            &form.legal_name,
                            form.trusted,
                            &admin.actor(),
                        )
                        .await?;
                        return Ok(Submitted::Applied { message: format!("Payee {} saved.", form.legal_name) });
                    }
                }
            }
            if form.trusted {
                lines.push("Small payments to a trusted payee can be approved by policy alone.".into());
            }
            let stored = Stored::Payee { id: form.id, legal_name: form.legal_name, trusted: form.trusted };
            let id = propose(state, admin, &stored, lines, now).await?;
            Ok(Submitted::Pending { id, message: "Another admin must confirm the payee.".into(), agent_key: None })
        }
        Request::SlackLink { username, slack_user_id } => {
            let mut conn = state.db.reader().await?;
            let user = store::directory::user_by_username(&mut conn, &username).await?;
            drop(conn);
            let Some(user) = user.filter(|u| u.tenant_id == tenant) else {
                return Err(ChangeError::Invalid(format!("there is no user {username} here")));
            };
            let Some(slack) = slack_user_id else {
                provision::link_slack(&state.db, &tenant, &username, None, &admin.actor())
                    .await
                    .map_err(ChangeError::Invalid)?;
                return Ok(Submitted::Applied { message: format!("User {username} unlinked from Slack.") });
            };
            let slack = provision::check_slack_user_id(&slack).map_err(ChangeError::Invalid)?;
            let lines = vec![format!(
                "Link user {username} to Slack user {slack}{}: presses of that Slack account approve as {username}",
                user.slack_user_id.as_deref().map(|old| format!(" (instead of {old})")).unwrap_or_default()
            )];
            let stored = Stored::SlackLink { username, slack_user_id: Some(slack) };
            let id = propose(state, admin, &stored, lines, now).await?;
            Ok(Submitted::Pending { id, message: "Another admin must confirm the link.".into(), agent_key: None })
        }
    }
}

async fn submit_user(
    state: &AppState,
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
    provision::check_user(&state.settings, check)?;
    // The tenant first: a username another tenant holds is refused before
    // anything else is done with it (no hash of theirs is ever touched).
    let existing = {
        let mut conn = state.db.reader().await?;
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
        Some(p) => Some(state.passwords.hash(p.clone()).await.map_err(|_| ChangeError::Busy)?),
        None if existing.is_none() => {
            return Err(ChangeError::Invalid("password: a new user needs a password".into()));
        }
        None => None,
    };
    let lines = user_lines(existing.as_ref(), &form);
    let stored = Stored::User {
        username: form.username.clone(),
        password_hash,
        roles: form.roles.clone(),
        limits: form.limits.clone(),
        slack_user_id: form.slack_user_id.clone(),
    };
    match lines {
        None => {
            let mut tx = state.db.begin().await?;
            apply(&mut tx, &state.settings, tenant, &stored, &admin.actor()).await?;
            tx.commit().await?;
            Ok(Submitted::Applied { message: format!("User {} saved.", form.username) })
        }
        Some(lines) => {
            let id = propose(state, admin, &stored, lines, now).await?;
            Ok(Submitted::Pending {
                id,
                message: format!("Another admin must confirm the change to user {}.", form.username),
                agent_key: None,
            })
        }
    }
}

/// What a user change grants, line by line; `None` when it only reduces
/// authority (or changes nothing) and so may apply at once.
fn user_lines(existing: Option<&store::directory::User>, form: &UserForm) -> Option<Vec<String>> {
    let Some(old) = existing else {
        let mut lines = vec![format!("Create user {} with roles {}", form.username, role_names(&form.roles))];
        for (currency, limit) in &form.limits {
            lines.push(format!("Approval limit {}", money(currency, *limit)));
        }
        if let Some(slack) = &form.slack_user_id {
            lines.push(format!("Linked to Slack user {slack}"));
        }
        return Some(lines);
    };
    let mut lines = Vec::new();
    let added: Vec<Role> = form.roles.iter().filter(|r| !old.roles.contains(r)).copied().collect();
    if !added.is_empty() {
        lines.push(format!(
            "Give {} the role{} {} (now {})",
            form.username,
            if added.len() == 1 { "" } else { "s" },
            role_names(&added),
            role_names(&old.roles)
        ));
    }
    for (currency, limit) in &form.limits {
        match old.approval_limits_minor.get(currency) {
            Some(before) if before >= limit => {}
            Some(before) => lines.push(format!(
                "Raise {}'s {currency} approval limit from {} to {}",
                form.username,
                money(currency, *before),
                money(currency, *limit)
            )),
            None => lines.push(format!("Give {} an approval limit of {}", form.username, money(currency, *limit))),
        }
    }
    if form.password.is_some() {
        lines.push(format!("Set a new password for {} (their sessions end)", form.username));
    }
    if form.slack_user_id.is_some() && form.slack_user_id != old.slack_user_id {
        lines.push(format!(
            "Link {} to Slack user {}",
            form.username,
            form.slack_user_id.as_deref().unwrap_or_default()
        ));
    }
    (!lines.is_empty()).then_some(lines)
}

/// Stores a pending change and audits it; returns its id.
async fn propose(
    state: &AppState,
    admin: &Admin,
    stored: &Stored,
    lines: Vec<String>,
    now: DateTime<Utc>,
) -> Result<String, ChangeError> {
    let id = store::new_id("chg", now);
    let change = serde_json::to_string(stored).expect("changes serialize");
    let summary = json!({ "lines": lines }).to_string();
    let shown_subject = shown_subject(stored.kind(), stored.subject());
    let mut tx = state.db.begin().await?;
    store::registry_changes::insert(
        &mut tx,
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
        &mut tx,
        admin,
        "registry.change.proposed",
        json!({"change_id": id, "kind": stored.kind(), "subject": shown_subject, "lines": lines}),
    )
    .await?;
    tx.commit().await?;
    Ok(id)
}

fn shown_subject(kind: &str, subject: &str) -> String {
    if kind == "payee" {
        mask_account(subject)
    } else {
        subject.to_owned()
    }
}

/// A second admin confirms: the change is applied, in one transaction with
/// its decision and audit entries.
pub async fn confirm(state: &AppState, admin: &Admin, id: &str) -> Result<String, ChangeError> {
    require_admin(admin)?;
    let row = store::registry_changes::get(&state.db.read, &admin.tenant_id, id).await?.ok_or(ChangeError::NotFound)?;
    let stored: Stored =
        serde_json::from_str(&row.change).map_err(|e| store::StoreError::corrupt("registry_changes.change", e))?;
    if row.status != "pending" {
        return Err(ChangeError::NotPending(row.status));
    }
    let now = Utc::now();
    if let Some(refusal) = cannot_confirm(&row, Some(&stored), admin, now) {
        return Err(refusal);
    }
    let mut tx = state.db.begin().await?;
    if !store::registry_changes::decide(&mut tx, id, "applied", &admin.user_id, None, now).await? {
        let latest = store::registry_changes::get(&state.db.read, &admin.tenant_id, id).await?;
        return Err(ChangeError::NotPending(latest.map(|r| r.status).unwrap_or_default()));
    }
    apply(&mut tx, &state.settings, &admin.tenant_id, &stored, &admin.actor()).await?;
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
    Ok(format!("Change confirmed: {}.", summary_lines(&row).join("; ")))
}

/// Any admin of the tenant (the proposer too: a withdrawal) rejects a pending change.
pub async fn reject(state: &AppState, admin: &Admin, id: &str, note: Option<&str>) -> Result<String, ChangeError> {
    require_admin(admin)?;
    let row = store::registry_changes::get(&state.db.read, &admin.tenant_id, id).await?.ok_or(ChangeError::NotFound)?;
    let note = note.map(str::trim).filter(|n| !n.is_empty());
    if note.is_some_and(|n| n.chars().count() > 500 || n.chars().any(char::is_control)) {
        return Err(ChangeError::Invalid("note: at most 500 characters, no control characters".into()));
    }
    let mut tx = state.db.begin().await?;
    if !store::registry_changes::decide(&mut tx, id, "rejected", &admin.user_id, note, Utc::now()).await? {
        return Err(ChangeError::NotPending(row.status));
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

/// Applies a stored change as `actor`, in the caller's transaction.
async fn apply(
    conn: &mut crate::store::Conn,
    settings: &crate::config::Settings,
    tenant: &str,
    stored: &Stored,
    actor: &str,
) -> Result<(), ChangeError> {
    match stored.clone() {
        Stored::User { username, password_hash, roles, limits, slack_user_id } => {
            let sets_password = password_hash.is_some();
            let user = NewUser {
                tenant: tenant.to_owned(),
                username,
                credential: password_hash.map_or(NewCredential::Keep, NewCredential::Hash),
                roles: roles.iter().map(|r| r.as_str().to_owned()).collect(),
                limits,
                slack_user_id,
            };
            let user_id = provision::add_user_in(&mut *conn, settings, user, actor).await?;
            if sets_password {
                // Whoever is signed in with the old password is signed out.
                store::sessions::delete_of_user(conn, &user_id).await?;
            }
        }
        Stored::Agent { id, acts_for, source_accounts, purposes, key_sha256 } => {
            let agent = NewAgent { tenant: tenant.to_owned(), id, acts_for, source_accounts, purposes };
            provision::add_agent_in(conn, agent, key_sha256, actor).await?;
        }
        Stored::Payee { id, legal_name, trusted } => {
            provision::add_payee_in(conn, tenant, &id, &legal_name, trusted, actor).await?;
        }
        Stored::SlackLink { username, slack_user_id } => {
            provision::link_slack_in(conn, tenant, &username, slack_user_id.as_deref(), actor)
                .await
                .map_err(ChangeError::Invalid)?;
        }
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
/// [`confirm`] and for the admin page's Confirm buttons.
fn cannot_confirm(row: &ChangeRow, stored: Option<&Stored>, admin: &Admin, now: DateTime<Utc>) -> Option<ChangeError> {
    if row.proposed_by == admin.user_id {
        Some(ChangeError::OwnProposal)
    } else if stored.and_then(Stored::account_of) == Some(admin.username.as_str()) {
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
}

/// The tenant's pending changes, with whether `viewer` may confirm each.
pub async fn pending(state: &AppState, admin: &Admin) -> Result<Vec<PendingChange>, ChangeError> {
    let rows = store::registry_changes::pending(&state.db.read, &admin.tenant_id).await?;
    let now = Utc::now();
    Ok(rows
        .into_iter()
        .map(|row| {
            let stored: Option<Stored> = serde_json::from_str(&row.change).ok();
            let blocker = cannot_confirm(&row, stored.as_ref(), admin, now).map(|refusal| {
                let text = refusal.to_string();
                let mut chars = text.chars();
                chars.next().map(|c| c.to_uppercase().chain(chars).collect::<String>() + ".").unwrap_or_default()
            });
            PendingChange {
                lines: summary_lines(&row),
                id: row.id,
                kind: row.kind,
                proposed_by: row.proposed_by,
                proposed_at: store::ts(row.proposed_at),
                blocker,
            }
        })
        .collect())
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

async fn append(
    conn: &mut crate::store::Conn,
    admin: &Admin,
    action: &str,
    data: serde_json::Value,
) -> crate::store::Result<()> {
    store::audit::append(conn, &entry(admin, action, data)).await
}

async fn audit(state: &AppState, admin: &Admin, action: &str, data: serde_json::Value) -> crate::store::Result<()> {
    store::audit::append_alone(&state.db.write, &entry(admin, action, data)).await
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
            active: true,
            oidc: None,
            approval_limits_minor: limits.iter().map(|(c, n)| (c.to_string(), *n)).collect(),
        }
    }

    fn form(roles: &[Role], limits: &[(&str, u64)], password: Option<&str>, slack: Option<&str>) -> UserForm {
        UserForm {
            username: "ben".into(),
            password: password.map(str::to_owned),
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
        let new = user_lines(None, &form(&[Role::Viewer], &[], Some("pw"), None)).expect("a new user waits");
        assert_eq!(new, vec!["Create user ben with roles viewer"]);
    }

    #[test]
    fn stored_changes_round_trip_and_name_their_subject() {
        let stored = Stored::Payee { id: "acct_acme0000000001".into(), legal_name: "Acme".into(), trusted: true };
        let text = serde_json::to_string(&stored).unwrap();
        assert_eq!(serde_json::from_str::<Stored>(&text).unwrap(), stored);
        assert_eq!((stored.kind(), stored.subject(), stored.account_of()), ("payee", "acct_acme0000000001", None));
        assert_eq!(shown_subject("payee", "acct_acme0000000001"), "acct_…0001");
        let link = Stored::SlackLink { username: "ana".into(), slack_user_id: Some("U1".into()) };
        assert_eq!(link.account_of(), Some("ana"));
    }
}
