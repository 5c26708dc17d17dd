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
//!
//! The body is `{"event_id", "type": "proposal", "proposal": …}`, the
//! proposal as the owning agent's `GET /api/v1/proposals/{id}` shows it
//! (with `approval_token` once approved).

use chrono::Utc;
use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::Sha256;
use std::sync::LazyLock;
use std::time::Duration;

use crate::config::WebhookSettings;
use crate::proposals::{self, AgentPrincipal};
use crate::shutdown::Shutdown;
use crate::state::{AppState, Shared};
use crate::store::audit::{self, AuditEntry};
use crate::store::webhooks::{self as store_webhooks, Attempt, Webhook};
use crate::store::{self, Db, StoreError};

/// How many webhooks one pass serves, and how many events per webhook.
const PER_PASS: u32 = 50;
const EVENTS_PER_PASS: u32 = 20;
/// The longest wait between two attempts.
const MAX_BACKOFF_SECS: i64 = 3600;

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
    let Ok(parsed) = reqwest::Url::parse(url) else { return refuse("not a URL") };
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
) -> Result<String, WebhookError> {
    check_url(settings, url)?;
    let mut tx = db.begin().await?;
    if store::directory::agent(&mut tx, tenant, agent).await?.is_none() {
        return Err(WebhookError::NoSuchAgent { tenant: tenant.to_owned(), agent: agent.to_owned() });
    }
    let secret = new_secret();
    store_webhooks::set(&mut tx, tenant, agent, url, std::slice::from_ref(&secret), Utc::now()).await?;
    tx.commit().await?;
    // The URL is not a secret; the signing secret never enters the trail.
    audited(db, tenant, actor, "registry.agent.webhook_set", json!({"agent_id": agent, "url": url})).await?;
    Ok(secret)
}

/// Adds a new secret; the previous one keeps signing too until the next
/// rotation, so receivers can switch without missing a delivery.
pub async fn rotate(db: &Db, tenant: &str, agent: &str, actor: &str) -> Result<String, WebhookError> {
    let mut tx = db.begin().await?;
    let current =
        store_webhooks::get(&mut tx, tenant, agent).await?.ok_or(WebhookError::NoWebhook(agent.to_owned()))?;
    let secret = new_secret();
    let mut secrets = vec![secret.clone()];
    secrets.extend(current.secrets.into_iter().take(1));
    store_webhooks::set(&mut tx, tenant, agent, &current.url, &secrets, Utc::now()).await?;
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

static CLIENT: LazyLock<reqwest::Client> = LazyLock::new(|| {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("an HTTP client with default TLS")
});

/// Delivers due webhooks until shutdown: at once after a change, else every second.
pub async fn run(state: Shared, shutdown: Shutdown) {
    loop {
        let seen = state.changes.published();
        if let Err(e) = deliver_due(&state).await {
            tracing::warn!(error = %e, "webhook deliveries failed; trying again shortly");
        }
        tokio::select! {
            _ = state.changes.any_since(seen) => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = shutdown.wait() => return,
        }
    }
}

/// One pass over the webhooks whose next attempt is due.
pub async fn deliver_due(state: &AppState) -> Result<(), StoreError> {
    for webhook in store_webhooks::due(&state.db.read, Utc::now(), PER_PASS).await? {
        deliver(state, webhook).await?;
    }
    Ok(())
}

/// Delivers the webhook's pending events in order, stopping at a failure.
async fn deliver(state: &AppState, mut webhook: Webhook) -> Result<(), StoreError> {
    let Some(agent) =
        store::directory::agent(&mut *state.db.reader().await?, &webhook.tenant_id, &webhook.agent_id).await?
    else {
        return Ok(());
    };
    if !agent.active {
        return Ok(()); // a deactivated agent is told nothing
    }
    let principal = AgentPrincipal::from(agent);
    let changed = store::proposals::changed_since(
        &state.db.read,
        &webhook.tenant_id,
        &webhook.agent_id,
        (webhook.cursor_at, &webhook.cursor_id),
        EVENTS_PER_PASS,
    )
    .await?;
    for (proposal_id, at) in changed {
        let event_id = format!("{} {proposal_id}", store::ts(at));
        let view = match proposals::poll(state, &principal, &proposal_id).await {
            Ok(view) => view,
            Err(proposals::ActionError::Store(e)) => return Err(e),
            Err(_) => {
                // Gone (or no longer this agent's): nothing to tell.
                store_webhooks::advance(&mut *state.db.writer().await?, &webhook, at, &proposal_id).await?;
                continue;
            }
        };
        // The view is already serialized: wrap it rather than parse it again.
        let head = json!({ "event_id": event_id, "type": "proposal" }).to_string();
        let parts: [&[u8]; 4] = [&head.as_bytes()[..head.len() - 1], b",\"proposal\":", &view.body[..], b"}"];
        let body = parts.concat();
        let (http_status, error) = post(&state.settings.webhooks, &webhook, &event_id, body).await;
        let attempt = webhook.attempts + 1;
        let delivered = http_status.is_some_and(|s| (200..300).contains(&s));
        let gave_up = !delivered && attempt >= i64::from(state.settings.webhooks.max_attempts);
        let outcome = if delivered {
            "delivered"
        } else if gave_up {
            "abandoned"
        } else {
            "failed"
        };
        let now = Utc::now();
        let mut tx = state.db.begin().await?;
        let logged = Attempt {
            proposal_id: &proposal_id,
            event_id: &event_id,
            outcome,
            http_status,
            error: error.as_deref(),
            attempt,
        };
        store_webhooks::log(&mut tx, &webhook, &logged, now).await?;
        if delivered || gave_up {
            store_webhooks::advance(&mut tx, &webhook, at, &proposal_id).await?;
            tx.commit().await?;
            webhook.attempts = 0;
            continue;
        }
        let backoff = (1i64 << (attempt - 1).clamp(0, 12)).min(MAX_BACKOFF_SECS);
        store_webhooks::retry_at(&mut tx, &webhook, attempt, now + chrono::Duration::seconds(backoff)).await?;
        tx.commit().await?;
        return Ok(());
    }
    Ok(())
}

/// POSTs one event: the receiver's status, or why there was none.
async fn post(
    settings: &WebhookSettings,
    webhook: &Webhook,
    event_id: &str,
    body: Vec<u8>,
) -> (Option<u16>, Option<String>) {
    // Checked again at each delivery: the allowlist may have changed since.
    if let Err(e) = check_url(settings, &webhook.url) {
        return (None, Some(e.to_string()));
    }
    let t = Utc::now().timestamp();
    let sent = CLIENT
        .post(&webhook.url)
        .timeout(Duration::from_millis(settings.timeout_ms))
        .header("Content-Type", "application/json")
        .header("Countersign-Event-Id", event_id)
        .header("Countersign-Signature", signature(&webhook.secrets, t, &body))
        .body(body)
        .send()
        .await;
    match sent {
        Ok(response) if response.status().is_success() => (Some(response.status().as_u16()), None),
        Ok(response) => (Some(response.status().as_u16()), Some(format!("answered {}", response.status()))),
        // The error names the URL's host at most; no secret is in it.
        Err(e) => (None, Some(if e.is_timeout() { "timed out".to_owned() } else { "no answer".to_owned() })),
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
        "{}  {}  {:<9}  HTTP {:<3}  attempt {}  {}{}",
        store::ts(d.at),
        d.proposal_id,
        d.outcome,
        status,
        d.attempt,
        d.event_id,
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
