//! Microsoft Teams approvals, through a Bot Framework bot (docs/NOTIFICATIONS.md,
//! "Approving from Microsoft Teams").
//!
//! - [`card`] renders the Adaptive Card of a proposal (Approve / Reject as
//!   `Action.Execute`, Open in console), and the answers to a press.
//! - [`token`] checks the Bot Framework's bearer token on every inbound
//!   activity (RS256 from the OpenID metadata's JWKS, issuer, audience,
//!   lifetime, `serviceUrl`, the key's endorsement); [`activity`] parses
//!   the activity once its token verified.
//! - [`outbox`] sends queued cards through the [`Connector`] port: a new
//!   card to the tenant's conversation when a proposal starts waiting, and
//!   the replacement of a pressed card for everyone once it is decided.
//! - `crate::notify::teams::press` (a sibling, so this module stays below the use
//!   cases) turns a verified press into the same `approvals::decide` the
//!   console calls, with `amr: teams`.
//!
//! The server implements the [`Connector`] (the Bot Connector REST API,
//! with the bot's own token from Entra ID) and fetches the keys.

pub mod activity;
pub mod card;
pub mod outbox;
pub mod press;
pub mod token;

use std::time::Duration;

use crate::config::Config;
use crate::domain::CanonicalRequest;
use crate::notify::outbound::{Allowlist, PostError};
use crate::notify::slack::message::Card;
pub use crate::store::teams::Method;

/// One call to the Bot Connector.
pub struct Outgoing<'a> {
    pub method: Method,
    /// Already checked against `teams.allowed_hosts`.
    pub url: &'a url::Url,
    pub body: &'a [u8],
    pub timeout: Duration,
}

/// Why a send failed: the Bot Connector's HTTP status, the bot's own token
/// refused by Entra ID, or no answer. Carries no URL, token or body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    #[error("HTTP {0}")]
    Status(u16),
    #[error("the bot's token could not be had ({0})")]
    Token(&'static str),
    #[error("{}", .0.describe())]
    Transport(PostError),
}

/// The Bot Connector port: the server sends with the bot's token.
#[async_trait::async_trait]
pub trait Connector: Send + Sync {
    async fn send(&self, out: Outgoing<'_>) -> Result<(), SendError>;
}

/// The capability of reaching the Bot Connector (the server's).
pub trait BotConnector {
    fn connector(&self) -> &dyn Connector;
}

/// Teams' outbound side in the core: the allowlist of connector hosts, the
/// timeout, and the signal that wakes the delivery worker.
pub struct Teams {
    allow: Allowlist,
    pub timeout: Duration,
    pub wake: tokio::sync::Notify,
}

impl Teams {
    pub fn new(settings: &crate::config::TeamsSettings) -> Teams {
        Teams {
            allow: Allowlist::named(&settings.allowed_hosts, "names a host that is not in teams.allowed_hosts"),
            timeout: Duration::from_millis(settings.timeout_ms),
            wake: tokio::sync::Notify::new(),
        }
    }

    /// A conversation's service URL, if its host is allowed.
    pub fn allowlist(&self) -> &Allowlist {
        &self.allow
    }
}

/// The capability of queueing cards for Teams.
pub trait TeamsOutbound {
    fn teams(&self) -> &Teams;
}

/// The card data for a proposal, with Teams' own direct-approval cap and
/// the step-up threshold (a passkey cannot be given in Teams: such
/// payments are approved in the console).
pub fn card<'a>(
    state: &impl Config,
    proposal_id: &'a str,
    request: &'a CanonicalRequest,
    request_hash: &'a str,
    required_approvals: u8,
) -> Card<'a> {
    let settings = state.settings();
    let cap = settings.teams.max_direct_approve_minor.get(request.currency.code());
    let step_up = settings.policy.step_up_at(request.currency);
    Card {
        proposal_id,
        request,
        request_hash,
        required_approvals,
        groups: String::new(),
        console_url: settings.proposal_url(proposal_id),
        direct_approve: cap.is_none_or(|cap| request.amount_minor <= *cap)
            && step_up.is_none_or(|at| request.amount_minor < at),
        signals: Vec::new(),
    }
}

/// Whether `tenant`'s proposals are posted to a Teams conversation.
pub fn posts_for(state: &impl Config, tenant: &str) -> bool {
    state.settings().teams.channel_for(tenant).is_some()
}

/// Queues the card of a proposal that just started waiting (`note`: why it
/// is shown again, after a lapsed approval), when its tenant has a Teams
/// conversation. Call it inside the transaction that makes the change,
/// then [`wake`] after the commit.
pub async fn announce(
    state: &impl Config,
    conn: &mut crate::store::Conn,
    card: &Card<'_>,
    note: Option<&str>,
    now: chrono::DateTime<chrono::Utc>,
) -> crate::store::Result<bool> {
    let tenant = card.request.tenant_id.as_str();
    let Some(channel) = state.settings().teams.channel_for(tenant) else {
        return Ok(false);
    };
    let content = card::pending(card, note);
    let body = card::activity(content, &title_of(card, note));
    let row = crate::store::teams::NewCard {
        tenant_id: tenant,
        proposal_id: card.proposal_id,
        method: Method::Post,
        service_url: &channel.service_url,
        conversation_id: &channel.conversation_id,
        activity_id: None,
        body: &body,
    };
    crate::store::teams::enqueue(conn, &row, now).await?;
    Ok(true)
}

fn title_of(card: &Card<'_>, note: Option<&str>) -> String {
    let amount = card.request.currency.format_minor(card.request.amount_minor);
    match note {
        Some(_) => format!("Approval lapsed, approve again: {amount} to {}", card.request.destination.legal_name),
        None => format!("Payment awaiting approval: {amount} to {}", card.request.destination.legal_name),
    }
}

/// `countersign user link-teams`: links a user of `tenant` to a Teams user
/// by their Entra ID object id (a GUID; `None` unlinks them), with an audit
/// entry naming `actor`. The error is one line for a person to read.
pub async fn link(
    db: &crate::store::Db,
    tenant: &str,
    username: &str,
    aad_object_id: Option<&str>,
    actor: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), String> {
    let aad = aad_object_id.map(str::to_ascii_lowercase);
    if let Some(id) = &aad {
        let guid = id.len() == 36
            && id
                .char_indices()
                .all(|(i, c)| if [8, 13, 18, 23].contains(&i) { c == '-' } else { c.is_ascii_hexdigit() });
        if !guid {
            return Err("the Entra ID object id is a GUID such as 6f1c…-…".to_owned());
        }
    }
    let fail = |e: crate::store::StoreError| {
        if e.is_conflict() {
            "that Teams user is already linked to another user".to_owned()
        } else {
            tracing::error!(error = %e, "cannot link a Teams user");
            "database error".to_owned()
        }
    };
    let mut tx = db.begin().await.map_err(fail)?;
    if !crate::store::teams::link(&mut tx, tenant, username, aad.as_deref(), now).await.map_err(fail)? {
        return Err(format!("there is no user {username} in tenant {tenant}"));
    }
    let entry = crate::store::audit::AuditEntry {
        tenant_id: Some(tenant.to_owned()),
        actor: actor.to_owned(),
        action: if aad.is_some() { "registry.user.teams_linked" } else { "registry.user.teams_unlinked" }.into(),
        proposal_id: None,
        request_hash: None,
        data: serde_json::json!({"username": username, "aad_object_id": aad}),
    };
    crate::store::audit::append(&mut tx, &entry).await.map_err(fail)?;
    tx.commit().await.map_err(fail)
}

/// Lets the worker send what was just queued without waiting for its tick.
pub fn wake(state: &impl TeamsOutbound) {
    state.teams().wake.notify_one();
}

/// [`wake`], when `tenant` posts to Teams.
pub fn wake_for(state: &(impl Config + TeamsOutbound), tenant: &str) {
    if posts_for(state, tenant) {
        wake(state);
    }
}
