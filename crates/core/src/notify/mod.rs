//! Reaching the people who can approve (docs/NOTIFICATIONS.md):
//! email and Web Push, beside the Slack channel message.
//!
//! - [`announce`] queues one `fanout` row in the transaction that makes a
//!   proposal wait for a decision, and one more due shortly before it
//!   expires ([`NotifySettings::expiry_warning_secs`](crate::config::NotifySettings)).
//! - `crate::notify::worker::run` delivers (a sibling module, so this one
//!   stays below the use cases that announce): a `fanout` row is expanded,
//!   when due, into one row per recipient and channel, for the people who
//!   may approve the proposal *then* (eligibility as `decide` enforces it,
//!   so an approver already counted, the agent's own human or someone over
//!   their limit are not asked); each of those is sent with backoff. A
//!   notification whose proposal no longer waits for a decision is
//!   dropped, never sent late.
//! - [`message`] says it: payee, masked account, amount, signals, time
//!   left, a link to the proposal (sign-in first; never approve-by-link).
//! - [`push`] encrypts and posts (RFC 8291, 8292); [`email`] sends (SMTP);
//!   [`account`] is a person's own settings (address, devices).

pub mod account;
pub mod email;
pub mod message;
pub mod outbound;
pub mod push;
pub mod quiet;
pub mod slack;
pub mod teams;
pub mod webhooks;
pub mod worker;

use chrono::{DateTime, Duration, Utc};

use crate::config::{Config, Settings};
use crate::decision::approval::keys::{KeyError, KeyStore};
use crate::notify::outbound::Allowlist;
use crate::store;
use crate::store::reach::{self as outbox, Channel, Kind, NewNotification};

/// What the channels need: the VAPID key, the SMTP relay, the push
/// services allowed, and the worker's wake-up.
pub struct Reach {
    pub vapid: KeyStore,
    pub mailer: Option<email::Mailer>,
    pub push_hosts: Allowlist,
    /// The tenants in which someone can be reached now.
    pub audience: Audience,
    /// VAPID headers kept for reuse, by push service.
    pub vapid_tokens: push::VapidTokens,
    pub wake: tokio::sync::Notify,
}

impl std::fmt::Debug for Reach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reach").field("email", &self.mailer.is_some()).finish_non_exhaustive()
    }
}

impl Reach {
    pub fn open(settings: &Settings, data_dir: &std::path::Path) -> Result<Reach, ReachError> {
        let n = &settings.notifications;
        let timeout = std::time::Duration::from_millis(n.timeout_ms);
        Ok(Reach {
            vapid: KeyStore::open_or_create_vapid(data_dir)?,
            mailer: email::Mailer::from_settings(&n.email, timeout).map_err(|e| ReachError::Email(e.to_string()))?,
            push_hosts: push::allowlist(&n.push.allowed_hosts),
            vapid_tokens: push::VapidTokens::default(),
            audience: Audience::default(),
            wake: tokio::sync::Notify::new(),
        })
    }
}

/// The tenants in which at least one person has a device subscribed (push
/// on) or an email address (email on): intake queues nothing for the
/// others, so a deployment nobody subscribed to pays nothing per proposal.
/// Read from the database every second by the notifications worker (so a
/// subscription made on another instance counts within a second), and
/// added to at once when someone subscribes or sets an address here.
#[derive(Default)]
pub struct Audience(std::sync::RwLock<std::collections::HashSet<String>>);

impl Audience {
    pub fn contains(&self, tenant: &str) -> bool {
        self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner).contains(tenant)
    }

    pub fn add(&self, tenant: &str) {
        self.0.write().unwrap_or_else(std::sync::PoisonError::into_inner).insert(tenant.to_owned());
    }

    pub fn replace(&self, tenants: std::collections::HashSet<String>) {
        *self.0.write().unwrap_or_else(std::sync::PoisonError::into_inner) = tenants;
    }
}

/// Reads [`Audience`] again from the database.
pub async fn refresh_audience(state: &(impl crate::store::Store + Config + Reaching)) -> store::Result<()> {
    let settings = &state.settings().notifications;
    let tenants =
        outbox::reachable_tenants(&state.db().read, settings.push.enabled, state.reach().mailer.is_some()).await?;
    state.reach().audience.replace(tenants);
    Ok(())
}

#[derive(Debug, thiserror::Error)]
pub enum ReachError {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("notifications.email: {0}")]
    Email(String),
}

/// The capability: what reaches people.
pub trait Reaching {
    fn reach(&self) -> &Reach;
}

/// Whether a notice about `tenant`'s proposals would reach anyone: a
/// channel is on and someone there can be reached ([`Audience`]).
fn worth_queueing(state: &(impl Config + Reaching), tenant: &str) -> bool {
    let n = &state.settings().notifications;
    (n.push.enabled || n.email.smtp_url.is_some()) && state.reach().audience.contains(tenant)
}

/// The VAPID `sub` claim.
pub fn vapid_subject(settings: &Settings) -> String {
    match &settings.notifications.push.subject {
        Some(subject) => subject.clone(),
        None if settings.public_url.starts_with("https://") => settings.public_url.trim_end_matches('/').to_owned(),
        None => "mailto:countersign@localhost".into(),
    }
}

/// Queues the notifications of `row`, which just started waiting for a
/// decision: its approvers now, again before it expires, and as its
/// tenant's escalation rule says (a reminder; the escalation itself is
/// stored here and done by `crate::decision::escalation::escalate_due`, notified or
/// not). Call it inside the transaction that stores the change, then
/// [`wake`] after the commit.
pub async fn announce(
    state: &(impl Config + Reaching),
    conn: &mut store::Conn,
    row: &store::proposals::ProposalRow,
    now: DateTime<Utc>,
) -> store::Result<()> {
    let settings = state.settings();
    let plan = settings.escalation_plan(&row.tenant_id, &row.currency, row.amount_minor, now, row.expires_at);
    if let Some(plan) = &plan {
        let planned = store::escalations::Planned {
            tenant_id: &row.tenant_id,
            proposal_id: &row.id,
            remind_at: plan.remind_at,
            escalate_at: plan.escalate_at,
            escalate_to: plan.escalate_to.as_deref(),
        };
        store::escalations::insert(conn, &planned).await?;
    }
    if !worth_queueing(state, &row.tenant_id) {
        return Ok(());
    }
    let fanout = |kind, due| NewNotification {
        tenant_id: &row.tenant_id,
        proposal_id: &row.id,
        kind,
        channel: Channel::Fanout,
        user_id: None,
        subscription_id: None,
        due,
    };
    let mut rows = vec![fanout(Kind::Arrived, now)];
    let warning = Duration::seconds(settings.notifications.expiry_warning_secs as i64);
    if warning > Duration::zero() && row.expires_at - warning > now {
        rows.push(fanout(Kind::Expiring, row.expires_at - warning));
    }
    if let Some(remind_at) = plan.and_then(|p| p.remind_at) {
        rows.push(fanout(Kind::Reminder, remind_at));
    }
    outbox::enqueue(conn, &rows, now).await.map(drop)
}

/// Queues one notice of `kind` about a proposal, due now, when it would
/// reach anyone: `Arrived` for one whose approval lapsed unredeemed (it waits
/// for a decision again; its reminder before expiry was queued when it first
/// arrived), `Escalated` for one just escalated to its backup group
/// (`crate::decision::escalation`). Inside the transaction that stores the change.
pub async fn announce_now(
    state: &(impl Config + Reaching),
    conn: &mut store::Conn,
    tenant_id: &str,
    proposal_id: &str,
    kind: Kind,
    now: DateTime<Utc>,
) -> store::Result<()> {
    if !worth_queueing(state, tenant_id) {
        return Ok(());
    }
    let row = NewNotification {
        tenant_id,
        proposal_id,
        kind,
        channel: Channel::Fanout,
        user_id: None,
        subscription_id: None,
        due: now,
    };
    outbox::enqueue(conn, &[row], now).await.map(drop)
}

/// Lets the worker deliver what was just queued without waiting for its tick.
pub fn wake(state: &impl Reaching) {
    state.reach().wake.notify_one();
}

/// [`wake`], when a new proposal of `tenant` can have queued anything
/// (someone there can be reached): otherwise the worker's pass would only
/// claim nothing, a write on SQLite's one writer per intake batch.
pub fn wake_for(state: &(impl Config + Reaching), tenant: &str) {
    if worth_queueing(state, tenant) {
        wake(state);
    }
}
