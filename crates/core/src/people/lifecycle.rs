//! Offboarding that takes effect at once, and coming back (docs/PEOPLE.md).
//!
//! Deactivating someone — from the console, the CLI or SCIM (`active:
//! false`) — is one write transaction, so every instance sees all of it or
//! none of it from its next request:
//!
//! - their sessions are deleted (each instance checks the session row on
//!   every request: the next click anywhere is signed out);
//! - their Web Push devices are removed and what is queued for them is
//!   dropped; Slack presses are refused (the press path asks for an active
//!   user), and so is any sign-in;
//! - their passkeys are removed (audited as removals: the audit trail keeps
//!   each key, so kept assertions stay verifiable) and their unused
//!   enrolment codes expire: coming back means enrolling again;
//! - their own roles and approval limits are taken away (what they had is
//!   in the audit entry): a reactivated account has none of them until an
//!   admin gives them again, limits by four-eyes as always;
//! - delegations from or to them end;
//! - approvals they gave (or that were given for them) on proposals still
//!   waiting are withdrawn: kept, marked, no longer counted; a proposal
//!   already approved with their approval lapses to `approval_expired` (its
//!   token can commit nothing) and waits for others to approve again;
//! - every agent acting for them is frozen (proposals and commits refused)
//!   until an admin reassigns its `acts_for`;
//! - registry changes they proposed, or about them, are withdrawn.
//!
//! Everything is audited (`user.deactivated` lists it) and shown on the
//! user's page. Reactivation (`user.reactivated`) brings none of it back.

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::config::Config;
use crate::notify::outbound::Outbound;
use crate::platform::changes::Notifier;
use crate::store::audit::AuditEntry;
use crate::store::{self, Conn, Store};

/// How the change arrived, for the audit trail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Console,
    Cli,
    Scim,
}

impl Via {
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Console => "console",
            Via::Cli => "cli",
            Via::Scim => "scim",
        }
    }
}

/// Who deactivates or reactivates: the audit trail's actor (`user:…`,
/// `cli`, `scim:<token id>`) and how.
#[derive(Debug, Clone)]
pub struct By {
    pub actor: String,
    pub via: Via,
}

#[derive(Debug, thiserror::Error)]
pub enum LifecycleError {
    #[error("there is no such user here")]
    NotFound,
    #[error("{0} is already deactivated")]
    AlreadyInactive(String),
    #[error("{0} is already active")]
    AlreadyActive(String),
    #[error("you cannot deactivate yourself: another admin must")]
    OwnAccount,
    #[error(transparent)]
    Store(#[from] store::StoreError),
}

/// What a deactivation did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Offboarded {
    pub user_id: String,
    pub username: String,
    pub sessions_ended: u64,
    pub push_devices_removed: u64,
    pub notifications_dropped: u64,
    pub passkeys_removed: usize,
    pub delegations_ended: Vec<String>,
    /// Proposals still waiting whose approval by them no longer counts.
    pub approvals_withdrawn: Vec<String>,
    /// Approved proposals sent back for approval (`approval_expired`).
    pub approvals_lapsed: Vec<String>,
    pub agents_frozen: Vec<String>,
    pub changes_withdrawn: Vec<String>,
}

/// Deactivates the user `user_id` of `tenant` (see the module doc).
pub async fn deactivate(
    state: &(impl Store + Config + Notifier + Outbound + crate::notify::Reaching),
    tenant: &str,
    user_id: &str,
    by: &By,
    now: DateTime<Utc>,
) -> Result<Offboarded, LifecycleError> {
    let mut tx = state.db().begin().await?;
    let done = deactivate_in(state, &mut tx, tenant, user_id, by, now).await?;
    tx.commit().await?;
    after(state, &done);
    Ok(done)
}

/// What to do once a deactivation committed: wake long-polls on the
/// proposals it touched and the workers that tell approvers.
pub fn after(state: &(impl Notifier + Outbound + crate::notify::Reaching), done: &Offboarded) {
    for id in done.approvals_withdrawn.iter().chain(&done.approvals_lapsed) {
        state.changes().publish(id);
    }
    if !done.approvals_lapsed.is_empty() {
        crate::notify::slack::outbox::wake(state);
        crate::notify::wake(state);
    }
}

/// [`deactivate`] in the caller's write transaction (SCIM replaces a user
/// and deactivates them in one).
pub async fn deactivate_in(
    state: &(impl Config + Outbound + crate::notify::Reaching),
    tx: &mut Conn,
    tenant: &str,
    user_id: &str,
    by: &By,
    now: DateTime<Utc>,
) -> Result<Offboarded, LifecycleError> {
    let user = store::directory::user_by_id(&mut *tx, user_id)
        .await?
        .filter(|u| u.tenant_id == tenant && u.deleted_at.is_none())
        .ok_or(LifecycleError::NotFound)?;
    if by.actor == format!("user:{user_id}") {
        return Err(LifecycleError::OwnAccount);
    }
    let Some(had) = store::people::deactivate(&mut *tx, tenant, user_id, now).await? else {
        return Err(LifecycleError::AlreadyInactive(user.username));
    };
    let mut done = Offboarded { user_id: user_id.to_owned(), username: user.username.clone(), ..Default::default() };
    done.sessions_ended = store::sessions::delete_of_user(&mut *tx, user_id).await?;
    (done.push_devices_removed, done.notifications_dropped) =
        store::people::stop_reaching(&mut *tx, user_id, now).await?;
    let passkeys = store::people::remove_passkeys(&mut *tx, tenant, user_id).await?;
    for passkey in &passkeys {
        crate::people::passkeys::registry::removed_in(
            &mut *tx,
            passkey,
            &by.actor,
            json!({"offboarding": user_id}),
            now,
        )
        .await?;
    }
    done.passkeys_removed = passkeys.len();
    store::people::expire_enrolments(&mut *tx, user_id, now).await?;
    done.delegations_ended = store::people::end_delegations(&mut *tx, user_id, now).await?;

    for touched in store::people::withdraw_approvals(&mut *tx, tenant, user_id, now).await? {
        append(
            &mut *tx,
            tenant,
            &by.actor,
            ("approval.withdrawn", Some((&touched.id, &touched.request_hash))),
            json!({"approver_id": user_id, "why": "the approver was deactivated; the approval no longer counts"}),
        )
        .await?;
        done.approvals_withdrawn.push(touched.id);
    }
    for approved in store::people::approved_with(&mut *tx, tenant, user_id).await? {
        let data = json!({"from": "approved", "to": "approval_expired", "approver_deactivated": user_id});
        let key = (approved.id.as_str(), approved.tenant_id.as_str(), approved.request_hash.as_str());
        if crate::decision::expiry::lapse(state, &mut *tx, key, &by.actor, data, now).await?.is_some() {
            done.approvals_lapsed.push(approved.id);
        }
    }

    let reason = format!(
        "{}, whom this agent acts for, was deactivated: it proposes and commits nothing until an admin reassigns \
         its acts_for",
        user.username
    );
    for agent in store::people::agents_acting_for(&mut *tx, tenant, user_id).await? {
        if store::people::freeze_for_offboarding(&mut *tx, (tenant, &agent), (&by.actor, &reason, user_id), now).await?
        {
            append(
                &mut *tx,
                tenant,
                &by.actor,
                ("kill_switch.frozen", None),
                json!({"scope": format!("agent {agent}'s commits"), "agent_id": agent, "reason": reason,
                       "offboarding_of": user_id}),
            )
            .await?;
        }
        done.agents_frozen.push(agent);
    }

    let family: &[&str] = &["user", "slack_link", "passkey_enrolment", "passkey_removal"];
    let note = format!("withdrawn: {} was deactivated", user.username);
    done.changes_withdrawn =
        store::registry_changes::supersede_subject(&mut *tx, tenant, (family, &user.username), &note, now).await?;
    done.changes_withdrawn
        .extend(store::registry_changes::supersede_proposed_by(&mut *tx, tenant, user_id, &note, now).await?);

    append(
        &mut *tx,
        tenant,
        &by.actor,
        ("user.deactivated", None),
        json!({
            "user_id": user_id, "username": user.username, "via": by.via.as_str(),
            "had": {"roles": had.roles, "approval_limits_minor": had.limits.iter().cloned().collect::<std::collections::BTreeMap<_, _>>()},
            "sessions_ended": done.sessions_ended, "push_devices_removed": done.push_devices_removed,
            "notifications_dropped": done.notifications_dropped, "passkeys_removed": done.passkeys_removed,
            "delegations_ended": done.delegations_ended, "approvals_withdrawn": done.approvals_withdrawn,
            "approvals_lapsed": done.approvals_lapsed, "agents_frozen": done.agents_frozen,
            "changes_withdrawn": done.changes_withdrawn,
        }),
    )
    .await?;
    Ok(done)
}

/// Reactivates a deactivated user: they may sign in again, with nothing of
/// what deactivation ended (no session, passkey, role of their own, limit,
/// delegation; agents stay frozen until reassigned). Audited.
pub async fn reactivate(
    state: &impl Store,
    tenant: &str,
    user_id: &str,
    by: &By,
    now: DateTime<Utc>,
) -> Result<String, LifecycleError> {
    let mut tx = state.db().begin().await?;
    let username = reactivate_in(&mut tx, tenant, user_id, by, now).await?;
    tx.commit().await?;
    Ok(username)
}

/// [`reactivate`] in the caller's transaction; the username.
pub async fn reactivate_in(
    tx: &mut Conn,
    tenant: &str,
    user_id: &str,
    by: &By,
    now: DateTime<Utc>,
) -> Result<String, LifecycleError> {
    let user = store::directory::user_by_id(&mut *tx, user_id)
        .await?
        .filter(|u| u.tenant_id == tenant && u.deleted_at.is_none())
        .ok_or(LifecycleError::NotFound)?;
    if !store::people::reactivate(&mut *tx, tenant, user_id, now).await? {
        return Err(LifecycleError::AlreadyActive(user.username));
    }
    append(
        tx,
        tenant,
        &by.actor,
        ("user.reactivated", None),
        json!({"user_id": user_id, "username": user.username, "via": by.via.as_str(),
               "restored": "nothing: no session, passkey, role of their own, approval limit or delegation"}),
    )
    .await?;
    Ok(user.username)
}

async fn append(
    conn: &mut Conn,
    tenant: &str,
    actor: &str,
    (action, proposal): (&str, Option<(&str, &str)>),
    data: serde_json::Value,
) -> store::Result<()> {
    store::audit::append(
        conn,
        &AuditEntry {
            tenant_id: Some(tenant.to_owned()),
            actor: actor.to_owned(),
            action: action.to_owned(),
            proposal_id: proposal.map(|p| p.0.to_owned()),
            request_hash: proposal.map(|p| p.1.to_owned()),
            data,
        },
    )
    .await
}
