//! Signed webhooks: each change to an agent's proposal (its creation
//! included) is POSTed to the URL an
//! admin set for that agent (`countersign agent webhook set`), so the agent
//! need not poll. An event carries the proposal as it is when it is sent:
//! changes that follow each other faster than a delivery (created, then
//! cancelled a moment later) may arrive as one event with the latest state,
//! never as a stale one.
//!
//! - **Who sets it.** Only an admin (the CLI); the URL must be `https` and its
//!   host on `webhooks.allowed_hosts` (`http` to a loopback address only with
//!   `webhooks.allow_http_loopback`, for local development).
//! - **Signature.** `Countersign-Signature: t=<unix seconds>,v1=<hex>` where
//!   `<hex>` is HMAC-SHA256 over `"<t>.<body>"` with the webhook's secret.
//!   During a rotation both the new and the previous secret sign (two `v1`).
//!   Receivers should check the time (reject old `t`) and dedupe on
//!   `Countersign-Event-Id`.
//! - **Nothing lost.** The proposals table is the outbox: the webhook's
//!   cursor (the last change delivered) only moves when the receiver answers
//!   2xx, or after `webhooks.max_attempts` failures (then the event is logged
//!   `abandoned`). Failures back off 1 s, 2 s, 4 s… up to an hour. Every
//!   attempt is in the delivery log. Deliveries of one agent are in order.
//! - **Redelivery.** An admin reads the log on the admin page ([`overview`])
//!   and presses Redeliver on a logged attempt ([`redeliver`]): the
//!   proposal's *current* state goes out again as a new event, with its own
//!   event id (`<redelivery id> <proposal id>`, the id starting `whr_`),
//!   queued durably (`webhook_redeliveries`) and sent by this dispatcher with
//!   the same retries and backoff. It runs beside the stream: the cursor, the
//!   stream's failed attempts and its order are untouched. That is how an
//!   `abandoned` event reaches a receiver that was down for too long.
//!
//! The body is `{"event_id", "type": "proposal", "proposal": …}`, the
//! proposal as the owning agent's `GET /api/v1/proposals/{id}` shows it
//! (with `approval_token` once approved).

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::Sha256;
use std::time::Duration;

use crate::config::Config;
use crate::config::WebhookSettings;
use crate::decision::registry_changes::Admin;
use crate::domain::Role;
use crate::intake::proposals::{self, AgentPrincipal};
use crate::notify::outbound::Outbound;
use crate::notify::outbound::{Post, PostError};
use crate::platform::changes::Notifier;
use crate::platform::clock::Clock;
use crate::platform::shutdown::Shutdown;
use crate::store::audit::{self, AuditEntry};
use crate::store::webhooks::{self as store_webhooks, Attempt, Delivery, NewRedelivery, Redelivery, Webhook};
use crate::store::Store;
use crate::store::{self, Db, StoreError};

/// How many webhooks one pass serves, and how many events per webhook.
const PER_PASS: u32 = 50;
const EVENTS_PER_PASS: u32 = 20;
/// How long a claimed webhook or redelivery stays out of other instances'
/// way: longer than a pass takes (20 events at the post timeout).
const CLAIM_LEASE_SECS: i64 = 300;
/// The longest wait between two attempts.
const MAX_BACKOFF_SECS: i64 = 3600;
/// How many logged attempts the admin page shows per webhook.
const LOG_ON_PAGE: u32 = 10;
/// The longest error the admin page shows.
const SHORT_ERROR_CHARS: usize = 120;

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("{0}")]
    Url(String),
    #[error("there is no agent {agent} in tenant {tenant}")]
    NoSuchAgent { tenant: String, agent: String },
    #[error("agent {0} has no webhook")]
    NoWebhook(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Whether `url` may receive webhooks under `settings`; the reason if not.
pub fn check_url(settings: &WebhookSettings, url: &str) -> Result<(), WebhookError> {
    let refuse = |why: &str| Err(WebhookError::Url(format!("webhook URL refused: {why}")));
    let Ok(parsed) = url::Url::parse(url) else { return refuse("not a URL") };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return refuse("credentials in the URL");
    }
    let Some(host) = parsed.host_str() else { return refuse("no host") };
    let loopback = matches!(host, "localhost" | "127.0.0.1" | "[::1]");
    match parsed.scheme() {
        "https" => {}
        "http" if loopback && settings.allow_http_loopback => return Ok(()),
        _ => return refuse("it must be https"),
    }
    let allowed = settings.allowed_hosts.iter().any(|pattern| match pattern.strip_prefix("*.") {
        Some(suffix) => host.len() > suffix.len() + 1 && host.ends_with(&format!(".{suffix}")),
        None => host.eq_ignore_ascii_case(pattern),
    });
    if allowed {
        Ok(())
    } else {
        refuse("its host is not in webhooks.allowed_hosts")
    }
}

/// A new signing secret: `whsec_` and 32 random bytes in hex.
fn new_secret() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("whsec_{}", hex::encode(bytes))
}

/// `t=…,v1=…[,v1=…]` for `body` sent at `t`, one `v1` per secret.
pub fn signature(secrets: &[String], t: i64, body: &[u8]) -> String {
    let mut header = format!("t={t}");
    for secret in secrets {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
        mac.update(format!("{t}.").as_bytes());
        mac.update(body);
        header.push_str(&format!(",v1={}", hex::encode(mac.finalize().into_bytes())));
    }
    header
}

async fn audited(db: &Db, tenant: &str, actor: &str, action: &str, data: serde_json::Value) -> Result<(), StoreError> {
    let entry = AuditEntry {
        tenant_id: Some(tenant.to_owned()),
        actor: actor.to_owned(),
        action: action.to_owned(),
        proposal_id: None,
        request_hash: None,
        data,
    };
    audit::append_alone(&db.write, &entry).await
}

/// Sets (or replaces) the agent's webhook URL with a fresh secret, returned
/// once. A new webhook delivers the changes made from now on.
pub async fn set(
    db: &Db,
    settings: &WebhookSettings,
    tenant: &str,
    agent: &str,
    url: &str,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<String, WebhookError> {
    check_url(settings, url)?;
    let mut tx = db.begin().await?;
    if store::directory::agent(&mut tx, tenant, agent).await?.is_none() {
        return Err(WebhookError::NoSuchAgent { tenant: tenant.to_owned(), agent: agent.to_owned() });
    }
    let secret = new_secret();
    store_webhooks::set(&mut tx, tenant, agent, url, std::slice::from_ref(&secret), now).await?;
    tx.commit().await?;
    // The URL is not a secret; the signing secret never enters the trail.
    audited(db, tenant, actor, "registry.agent.webhook_set", json!({"agent_id": agent, "url": url})).await?;
    Ok(secret)
}

/// Adds a new secret; the previous one keeps signing too until the next
/// rotation, so receivers can switch without missing a delivery.
pub async fn rotate(
    db: &Db,
    tenant: &str,
    agent: &str,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<String, WebhookError> {
    let mut tx = db.begin().await?;
    let current =
        store_webhooks::get(&mut tx, tenant, agent).await?.ok_or(WebhookError::NoWebhook(agent.to_owned()))?;
    let secret = new_secret();
    let mut secrets = vec![secret.clone()];
    secrets.extend(current.secrets.into_iter().take(1));
    store_webhooks::set(&mut tx, tenant, agent, &current.url, &secrets, now).await?;
    tx.commit().await?;
    audited(db, tenant, actor, "registry.agent.webhook_secret_rotated", json!({"agent_id": agent})).await?;
    Ok(secret)
}

pub async fn remove(db: &Db, tenant: &str, agent: &str, actor: &str) -> Result<(), WebhookError> {
    let mut tx = db.begin().await?;
    if !store_webhooks::remove(&mut tx, tenant, agent).await? {
        return Err(WebhookError::NoWebhook(agent.to_owned()));
    }
    tx.commit().await?;
    audited(db, tenant, actor, "registry.agent.webhook_removed", json!({"agent_id": agent})).await?;
    Ok(())
}

/// How long a pass waits after a change for the changes that come with it:
/// under a stream of proposals, one pass per change would be thousands of
/// reads a second that find the same webhooks due.
const GATHER: Duration = Duration::from_millis(20);

/// Delivers due webhooks until shutdown: shortly after a change ([`GATHER`]),
/// else every second.
pub async fn run(
    state: std::sync::Arc<impl Store + Clock + Config + Notifier + Outbound + Send + Sync + 'static>,
    shutdown: Shutdown,
) {
    loop {
        let seen = state.changes().published();
        if let Err(e) = deliver_due(&*state).await {
            tracing::warn!(error = %e, "webhook deliveries failed; trying again shortly");
        }
        tokio::select! {
            _ = state.changes().any_since(seen) => tokio::time::sleep(GATHER).await,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = shutdown.wait() => return,
        }
    }
}

/// One pass over the webhooks whose next attempt is due, then over the
/// redeliveries whose next attempt is due.
///
/// Each webhook and redelivery is claimed first (`store::webhooks::claim`):
/// with several instances on one database, one of them delivers it. A claim
/// is a lease on the next attempt; an instance that stops mid-pass leaves it
/// to run out, and what it was sending is sent again then (at least once).
pub async fn deliver_due(state: &(impl Store + Clock + Config + Notifier + Outbound)) -> Result<(), StoreError> {
    state.db().priority.yield_to_foreground().await;
    let now = state.now();
    let lease_until = now + chrono::Duration::seconds(CLAIM_LEASE_SECS);
    for webhook in store_webhooks::due(&state.db().read, now, PER_PASS).await? {
        deliver(state, webhook, now, lease_until).await?;
    }
    for redelivery in store_webhooks::due_redeliveries(&state.db().read, now, PER_PASS).await? {
        if store_webhooks::claim_redelivery(&mut *state.db().writer().await?, &redelivery.id, now, lease_until).await? {
            send_redelivery(state, redelivery).await?;
        }
    }
    Ok(())
}

/// Delivers the webhook's pending events in order, stopping at a failure;
/// claimed first, and only when there is something to send (an idle
/// webhook costs no write).
async fn deliver(
    state: &(impl Store + Clock + Config + Notifier + Outbound),
    webhook: Webhook,
    now: chrono::DateTime<Utc>,
    lease_until: chrono::DateTime<Utc>,
) -> Result<(), StoreError> {
    let Some(agent) =
        store::directory::agent(&mut *state.db().reader().await?, &webhook.tenant_id, &webhook.agent_id).await?
    else {
        return Ok(());
    };
    if !agent.active {
        return Ok(()); // a deactivated agent is told nothing
    }
    let principal = AgentPrincipal::from(agent);
    let mut changed = pending_events(state, &webhook).await?;
    if changed.is_empty() {
        return Ok(());
    }
    let Some(claimed) = store_webhooks::claim(&mut *state.db().writer().await?, &webhook, now, lease_until).await?
    else {
        return Ok(()); // another instance is delivering them
    };
    // Another instance may have sent some since the read: then read again
    // from the claimed row's cursor.
    if (claimed.cursor_at, &claimed.cursor_id) != (webhook.cursor_at, &webhook.cursor_id) {
        changed = pending_events(state, &claimed).await?;
    }
    let sent = send_events(state, claimed.clone(), &principal, changed).await;
    let released =
        store_webhooks::release(&mut *state.db().writer().await?, &claimed, lease_until, webhook.next_attempt_at).await;
    sent.and(released)
}

/// The agent's proposals changed after the webhook's cursor, oldest first.
async fn pending_events(
    state: &impl Store,
    webhook: &Webhook,
) -> Result<Vec<(String, chrono::DateTime<Utc>)>, StoreError> {
    store::proposals::changed_since(
        &state.db().read,
        &webhook.tenant_id,
        &webhook.agent_id,
        (webhook.cursor_at, &webhook.cursor_id),
        EVENTS_PER_PASS,
    )
    .await
}

/// Sends `changed` in order, stopping at a failure (which sets the retry).
async fn send_events(
    state: &(impl Store + Clock + Config + Notifier + Outbound),
    mut webhook: Webhook,
    principal: &AgentPrincipal,
    changed: Vec<(String, chrono::DateTime<Utc>)>,
) -> Result<(), StoreError> {
    for (proposal_id, at) in changed {
        let event_id = format!("{} {proposal_id}", store::ts(at));
        let view = match proposals::poll(state, principal, &proposal_id).await {
            Ok(view) => view,
            Err(proposals::ActionError::Store(e)) => return Err(e),
            Err(_) => {
                // Gone (or no longer this agent's): nothing to tell.
                store_webhooks::advance(&mut *state.db().writer().await?, &webhook, at, &proposal_id).await?;
                continue;
            }
        };
        let body = event_body(&event_id, &view.body);
        let (http_status, error) = post(state, &webhook.url, &webhook.secrets, &event_id, body).await;
        let attempt = webhook.attempts + 1;
        let (outcome, finished) = judge(http_status, attempt, state.settings().webhooks.max_attempts);
        let now = state.now();
        let mut tx = state.db().begin().await?;
        let logged = Attempt {
            tenant_id: &webhook.tenant_id,
            agent_id: &webhook.agent_id,
            proposal_id: &proposal_id,
            event_id: &event_id,
            outcome,
            http_status,
            error: error.as_deref(),
            attempt,
            redelivery_id: None,
        };
        store_webhooks::log(&mut tx, &logged, now).await?;
        if finished {
            store_webhooks::advance(&mut tx, &webhook, at, &proposal_id).await?;
            tx.commit().await?;
            webhook.attempts = 0;
            continue;
        }
        store_webhooks::retry_at(&mut tx, &webhook, attempt, now + backoff(attempt)).await?;
        tx.commit().await?;
        return Ok(());
    }
    Ok(())
}

/// The event's body: `{"event_id", "type": "proposal", "proposal": …}`. The
/// view is already serialized: wrap it rather than parse it again.
fn event_body(event_id: &str, view: &[u8]) -> Vec<u8> {
    let head = json!({ "event_id": event_id, "type": "proposal" }).to_string();
    let parts: [&[u8]; 4] = [&head.as_bytes()[..head.len() - 1], b",\"proposal\":", view, b"}"];
    parts.concat()
}

/// The outcome of attempt number `attempt` (from 1) for the log, and whether
/// the event is finished with (delivered, or given up after `max_attempts`).
fn judge(http_status: Option<u16>, attempt: i64, max_attempts: u32) -> (&'static str, bool) {
    if http_status.is_some_and(|s| (200..300).contains(&s)) {
        ("delivered", true)
    } else if attempt >= i64::from(max_attempts) {
        ("abandoned", true)
    } else {
        ("failed", false)
    }
}

/// The wait after failed attempt number `attempt`: 1 s, 2 s, 4 s… at most an hour.
fn backoff(attempt: i64) -> chrono::Duration {
    chrono::Duration::seconds((1i64 << (attempt - 1).clamp(0, 12)).min(MAX_BACKOFF_SECS))
}

/// POSTs one event: the receiver's status, or why there was none.
async fn post(
    state: &(impl Config + Clock + Outbound),
    url: &str,
    secrets: &[String],
    event_id: &str,
    body: Vec<u8>,
) -> (Option<u16>, Option<String>) {
    let settings = &state.settings().webhooks;
    // Checked again at each delivery: the allowlist may have changed since.
    if let Err(e) = check_url(settings, url) {
        return (None, Some(e.to_string()));
    }
    let Ok(parsed) = url::Url::parse(url) else { return (None, Some("not a URL".to_owned())) };
    let t = state.now().timestamp();
    let headers =
        [("Countersign-Event-Id", event_id.to_owned()), ("Countersign-Signature", signature(secrets, t, &body))];
    let post = Post {
        url: &parsed,
        content_type: crate::notify::outbound::JSON,
        headers: &headers,
        body,
        timeout: Duration::from_millis(settings.timeout_ms),
    };
    match state.poster().post(post).await {
        Ok(status) if (200..300).contains(&status) => (Some(status), None),
        Ok(status) => {
            let shown = http::StatusCode::from_u16(status).map_or_else(|_| status.to_string(), |s| s.to_string());
            (Some(status), Some(format!("answered {shown}")))
        }
        // The error names no URL and no secret.
        Err(PostError::Timeout) => (None, Some("timed out".to_owned())),
        Err(_) => (None, Some("no answer".to_owned())),
    }
}

/// One attempt of a redelivery: the proposal as it is now, under the
/// redelivery's own event id. Logged like the stream's attempts (with the
/// redelivery's id); the webhook's cursor and attempts are not touched.
async fn send_redelivery(
    state: &(impl Store + Clock + Config + Notifier + Outbound),
    r: Redelivery,
) -> Result<(), StoreError> {
    let agent = store::directory::agent(&mut *state.db().reader().await?, &r.tenant_id, &r.agent_id).await?;
    let attempt = r.attempts + 1;
    // Nothing to send: given up at once, and logged so.
    let unsendable = |why: &str| (None, Some(why.to_owned()), true);
    let (http_status, error, give_up) = match agent {
        Some(agent) if !agent.active => unsendable("the agent is deactivated"),
        None => unsendable("the agent is gone"),
        Some(agent) => match proposals::poll(state, &AgentPrincipal::from(agent), &r.proposal_id).await {
            Ok(view) => {
                let body = event_body(&r.event_id, &view.body);
                let (status, error) = post(state, &r.url, &r.secrets, &r.event_id, body).await;
                (status, error, false)
            }
            Err(proposals::ActionError::Store(e)) => return Err(e),
            Err(_) => unsendable("the proposal is no longer the agent's"),
        },
    };
    let (outcome, finished) =
        if give_up { ("abandoned", true) } else { judge(http_status, attempt, state.settings().webhooks.max_attempts) };
    let now = state.now();
    let mut tx = state.db().begin().await?;
    let logged = Attempt {
        tenant_id: &r.tenant_id,
        agent_id: &r.agent_id,
        proposal_id: &r.proposal_id,
        event_id: &r.event_id,
        outcome,
        http_status,
        error: error.as_deref(),
        attempt,
        redelivery_id: Some(&r.id),
    };
    store_webhooks::log(&mut tx, &logged, now).await?;
    if finished {
        store_webhooks::redelivery_done(&mut tx, &r.id, attempt, now).await?;
    } else {
        store_webhooks::redelivery_retry_at(&mut tx, &r.id, attempt, now + backoff(attempt)).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Why a redelivery was refused. The messages are the admin page's.
#[derive(Debug, thiserror::Error)]
pub enum RedeliverError {
    #[error("only admins can redeliver webhook events")]
    NotAnAdmin,
    /// Unknown, or another tenant's: the same answer.
    #[error("there is no such delivery in the log")]
    NoSuchDelivery,
    #[error("agent {0} has no webhook")]
    NoWebhook(String),
    #[error("agent {0} is deactivated, so it is sent nothing")]
    AgentInactive(String),
    #[error("a redelivery of proposal {0} to agent {1} is already queued")]
    AlreadyQueued(String, String),
    #[error("the redelivery could not be queued; try again")]
    Store(#[from] StoreError),
}

/// A queued redelivery, as the admin page confirms it.
#[derive(Debug, Clone)]
pub struct Queued {
    pub id: String,
    pub agent_id: String,
    pub proposal_id: String,
}

impl Queued {
    pub fn message(&self) -> String {
        format!(
            "Redelivery queued: proposal {} goes to agent {}'s webhook again, as a new event with its current state.",
            self.proposal_id, self.agent_id
        )
    }
}

/// Queues the proposal of the logged attempt `delivery_id` to be sent again
/// (module doc, "Redelivery"); audited as `webhook.redelivery.requested` with
/// the admin as actor. Only the admin's own tenant's deliveries are found.
pub async fn redeliver(
    db: &Db,
    admin: &Admin,
    delivery_id: &str,
    now: chrono::DateTime<Utc>,
) -> Result<Queued, RedeliverError> {
    if !admin.roles.contains(&Role::Admin) {
        return Err(RedeliverError::NotAnAdmin);
    }
    let tenant = &admin.tenant_id;

    let mut tx = db.begin().await?;
    let delivery =
        store_webhooks::delivery(&mut tx, tenant, delivery_id).await?.ok_or(RedeliverError::NoSuchDelivery)?;
    let agent_id = delivery.agent_id.clone();
    if store_webhooks::get(&mut tx, tenant, &agent_id).await?.is_none() {
        return Err(RedeliverError::NoWebhook(agent_id));
    }
    if !store::directory::agent(&mut tx, tenant, &agent_id).await?.is_some_and(|a| a.active) {
        return Err(RedeliverError::AgentInactive(agent_id));
    }
    let id = store::new_id("whr", now);
    let event_id = format!("{id} {}", delivery.proposal_id);
    let actor = format!("user:{}", admin.user_id);
    let queued = NewRedelivery { id: &id, delivery: &delivery, event_id: &event_id, requested_by: &actor };
    if !store_webhooks::queue_redelivery(&mut tx, &queued, now).await? {
        return Err(RedeliverError::AlreadyQueued(delivery.proposal_id, agent_id));
    }
    // Ids only: no URL (its query string may be a receiver's token), no secret.
    let entry = AuditEntry {
        tenant_id: Some(tenant.clone()),
        actor,
        action: "webhook.redelivery.requested".to_owned(),
        proposal_id: Some(delivery.proposal_id.clone()),
        request_hash: None,
        data: json!({
            "agent_id": agent_id,
            "delivery_id": delivery.id,
            "redelivery_id": id,
            "event_id": event_id,
        }),
    };
    audit::append(&mut tx, &entry).await?;
    tx.commit().await?;
    Ok(Queued { id, agent_id, proposal_id: delivery.proposal_id })
}

/// A tenant's webhook for the admin page: where it goes (never a secret or
/// a query string), how its stream fares, and its latest attempts.
#[derive(Debug, Clone)]
pub struct Overview {
    pub agent_id: String,
    /// Scheme, host, port and path of the URL ([`shown_url`]).
    pub target: String,
    /// Failed attempts at the event the stream is on; 0 when none failed.
    pub failed_attempts: i64,
    /// When the stream tries that event again (only while it is failing).
    pub next_attempt_at: Option<chrono::DateTime<Utc>>,
    pub queued_redeliveries: i64,
    /// The latest [`LOG_ON_PAGE`] attempts, newest first; errors shortened.
    pub log: Vec<Delivery>,
}

/// Every webhook of the tenant, by agent id, with its latest attempts.
pub async fn overview(db: &Db, tenant: &str) -> Result<Vec<Overview>, StoreError> {
    let mut all = Vec::new();
    for w in store_webhooks::overview(&db.read, tenant).await? {
        let mut log = store_webhooks::deliveries(&db.read, tenant, &w.agent_id, LOG_ON_PAGE).await?;
        for d in &mut log {
            d.error = d.error.take().map(|e| short(&e));
        }
        all.push(Overview {
            target: shown_url(&w.url),
            failed_attempts: w.attempts,
            next_attempt_at: (w.attempts > 0).then_some(w.next_attempt_at),
            queued_redeliveries: w.queued_redeliveries,
            agent_id: w.agent_id,
            log,
        });
    }
    Ok(all)
}

/// A webhook URL as a page may show it: scheme, host, port and path; never
/// credentials, a query string or a fragment (a receiver may put a token there).
pub fn shown_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => {
            let host = u.host_str().unwrap_or_default();
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            format!("{}://{host}{port}{}", u.scheme(), u.path())
        }
        Err(_) => "(not a URL)".to_owned(),
    }
}

/// At most [`SHORT_ERROR_CHARS`] characters, with `…` when cut.
fn short(error: &str) -> String {
    match error.char_indices().nth(SHORT_ERROR_CHARS) {
        Some((cut, _)) => format!("{}…", &error[..cut]),
        None => error.to_owned(),
    }
}

/// The delivery log of one agent, newest first (the CLI prints it).
pub async fn log(db: &Db, tenant: &str, agent: &str) -> Result<Vec<store_webhooks::Delivery>, StoreError> {
    store_webhooks::deliveries(&db.read, tenant, agent, 50).await
}

/// One line of the delivery log, as the CLI prints it.
pub fn describe(d: &store_webhooks::Delivery) -> String {
    let status = d.http_status.map_or("-".to_owned(), |s| s.to_string());
    format!(
        "{}  {}  {:<9}  HTTP {:<3}  attempt {}  {}{}{}",
        store::ts(d.at),
        d.proposal_id,
        d.outcome,
        status,
        d.attempt,
        d.event_id,
        if d.redelivery_id.is_some() { "  (redelivery)" } else { "" },
        d.error.as_deref().map(|e| format!("  ({e})")).unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(hosts: &[&str], loopback: bool) -> WebhookSettings {
        WebhookSettings {
            allowed_hosts: hosts.iter().map(|h| (*h).to_owned()).collect(),
            allow_http_loopback: loopback,
            ..WebhookSettings::default()
        }
    }

    #[test]
    fn only_https_urls_to_allowed_hosts_are_accepted() {
        let s = settings(&["hooks.example.com", "*.agents.example.org"], false);
        for ok in
            ["https://hooks.example.com/countersign", "https://a.agents.example.org/x", "https://HOOKS.example.com"]
        {
            assert!(check_url(&s, ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://hooks.example.com/x",
            "https://evil.example.com/x",
            "https://agents.example.org/x",
            "https://hooks.example.com.evil.net/x",
            "https://user:pw@hooks.example.com/x",
            "http://127.0.0.1:9/x",
            "ftp://hooks.example.com/x",
            "not a url",
        ] {
            assert!(check_url(&s, bad).is_err(), "{bad}");
        }
        let dev = settings(&[], true);
        assert!(check_url(&dev, "http://127.0.0.1:9999/hook").is_ok());
        assert!(check_url(&dev, "http://localhost:9999/hook").is_ok());
        assert!(check_url(&dev, "http://10.0.0.1/hook").is_err());
    }

    #[test]
    fn the_page_shows_scheme_host_port_and_path_only() {
        assert_eq!(
            shown_url("https://hooks.example.com/countersign?token=t0k3n#frag"),
            "https://hooks.example.com/countersign"
        );
        assert_eq!(shown_url("http://127.0.0.1:8123/hook?x=1"), "http://127.0.0.1:8123/hook");
        assert_eq!(shown_url("https://user:pw@hooks.example.com/a"), "https://hooks.example.com/a");
        assert_eq!(shown_url("not a url"), "(not a URL)");
    }

    #[test]
    fn errors_on_the_page_are_short() {
        assert_eq!(short("timed out"), "timed out");
        let long = "é".repeat(SHORT_ERROR_CHARS + 5);
        let cut = short(&long);
        assert_eq!(cut.chars().count(), SHORT_ERROR_CHARS + 1, "{cut}");
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn an_attempt_is_delivered_on_2xx_failed_before_the_last_and_abandoned_at_it() {
        assert_eq!(judge(Some(204), 12, 12), ("delivered", true));
        assert_eq!(judge(Some(503), 1, 12), ("failed", false));
        assert_eq!(judge(None, 11, 12), ("failed", false));
        assert_eq!(judge(Some(301), 12, 12), ("abandoned", true), "a redirect is not a delivery");
        assert_eq!(judge(None, 1, 1), ("abandoned", true));
        assert_eq!(backoff(1).num_seconds(), 1);
        assert_eq!(backoff(3).num_seconds(), 4);
        assert_eq!(backoff(40).num_seconds(), MAX_BACKOFF_SECS);
    }

    #[test]
    fn every_secret_signs_the_time_and_the_body() {
        let one = signature(&["whsec_a".into()], 1_700_000_000, b"{}");
        let two = signature(&["whsec_b".into(), "whsec_a".into()], 1_700_000_000, b"{}");
        assert!(one.starts_with("t=1700000000,v1="), "{one}");
        assert_eq!(two.matches(",v1=").count(), 2);
        assert!(two.ends_with(one.split(',').nth(1).unwrap()), "the old secret's signature is kept: {two}");
        assert_ne!(signature(&["whsec_a".into()], 1_700_000_001, b"{}"), one, "the time is signed");
        assert_ne!(signature(&["whsec_a".into()], 1_700_000_000, b"[]"), one, "the body is signed");
    }
}
