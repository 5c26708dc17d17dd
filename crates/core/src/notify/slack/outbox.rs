//! Delivery of queued messages. A message is queued in the transaction that
//! makes the change it announces; this worker posts due messages (several
//! at once), marks them delivered, and retries failures with exponential
//! backoff (1 s, 2 s, 4 s, … up to `slack.max_backoff_secs`). A message is
//! abandoned, never retried forever, when it can no longer matter: its
//! proposal is no longer waiting for a decision (webhook messages), its
//! `response_url` is older than Slack's 30 minutes, or its URL is not
//! allowed or answers with a redirect (never followed). Logs name the message and the error kind, never a URL or body.

use chrono::{DateTime, Duration, Utc};
use futures::StreamExt;

use crate::config::Config;
use crate::domain::{CanonicalRequest, ProposalStatus};
use crate::notify::outbound::Outbound;
use crate::platform::clock::Clock;
use crate::platform::shutdown::Shutdown;
use crate::store;
use crate::store::slack::{self as outbox, NewMessage, OutboxRow, Target};
use crate::store::Store;

use super::message::Card;
use super::DeliveryError;

/// How long Slack accepts posts to an interaction's `response_url`.
const RESPONSE_URL_LIFETIME_MINS: i64 = 30;
/// Messages delivered at the same time.
const PARALLEL: usize = 8;

/// The card for a proposal, with this deployment's console link and cap.
pub fn card<'a>(
    state: &impl Config,
    proposal_id: &'a str,
    request: &'a CanonicalRequest,
    request_hash: &'a str,
    required_approvals: u8,
) -> Card<'a> {
    let cap = state.settings().slack.max_direct_approve_minor.get(request.currency.code());
    // At or above the step-up threshold an approval needs a passkey, which
    // Slack cannot carry: such payments are approved in the console.
    let step_up = state.settings().policy.step_up_at(request.currency);
    Card {
        proposal_id,
        request,
        request_hash,
        required_approvals,
        groups: String::new(),
        console_url: state.settings().proposal_url(proposal_id),
        direct_approve: cap.is_none_or(|cap| request.amount_minor <= *cap)
            && step_up.is_none_or(|at| request.amount_minor < at),
        signals: Vec::new(),
    }
}

/// Queues the "awaiting approval" message of a proposal that just entered
/// `pending_approval`, when its tenant has a webhook. Call it inside the
/// transaction that stores the proposal, then [`wake`] after the commit.
pub async fn announce(
    state: &impl Config,
    conn: &mut crate::store::Conn,
    card: &Card<'_>,
    now: DateTime<Utc>,
) -> crate::store::Result<bool> {
    post_to_channel(state, conn, card, || card.pending(), now).await
}

/// Queues the "approval lapsed, approve again" message of a proposal that
/// just went to `approval_expired`, as [`announce`] does.
pub async fn announce_lapsed(
    state: &impl Config,
    conn: &mut crate::store::Conn,
    card: &Card<'_>,
    now: DateTime<Utc>,
) -> crate::store::Result<bool> {
    post_to_channel(state, conn, card, || card.lapsed(), now).await
}

/// Queues `body` about `card`'s proposal for its tenant's channel, when the
/// tenant has a webhook.
async fn post_to_channel(
    state: &impl Config,
    conn: &mut crate::store::Conn,
    card: &Card<'_>,
    body: impl FnOnce() -> serde_json::Value,
    now: DateTime<Utc>,
) -> crate::store::Result<bool> {
    let tenant = &card.request.tenant_id;
    // Checked before the message is made: on intake's path, a tenant with no
    // webhook costs nothing here.
    if state.settings().slack.webhook_for(tenant).is_none() {
        return Ok(false);
    }
    let body = body();
    let message = NewMessage {
        tenant_id: Some(tenant),
        proposal_id: Some(card.proposal_id),
        target: Target::Webhook,
        url: None,
        body: &body,
    };
    outbox::enqueue(conn, &message, now).await?;
    Ok(true)
}

/// Lets the worker deliver what was just queued without waiting for its tick.
pub fn wake(state: &impl Outbound) {
    state.slack().wake.notify_one();
}

/// [`wake`], when `tenant` posts to a Slack channel (a new proposal queues
/// a card only then): otherwise the worker's pass would only claim nothing.
pub fn wake_for(state: &(impl Config + Outbound), tenant: &str) {
    if state.settings().slack.webhook_for(tenant).is_some() {
        wake(state);
    }
}

/// Delivers due messages until shutdown: at once when woken, else every
/// second. Once a minute it also forgets inbound requests old enough that
/// their timestamps can no longer pass the window (so no replay is missed).
pub async fn run(
    state: std::sync::Arc<impl Store + Clock + Config + Outbound + Send + Sync + 'static>,
    shutdown: Shutdown,
) {
    let mut last_purge = tokio::time::Instant::now();
    loop {
        if let Err(e) = deliver_due(&*state).await {
            tracing::error!(error = %e, "slack outbox: cannot read or update the outbox");
        }
        if last_purge.elapsed() >= std::time::Duration::from_secs(60) {
            last_purge = tokio::time::Instant::now();
            let cutoff = state.now() - Duration::seconds(2 * super::signature::WINDOW_SECS + 60);
            if let Err(e) = outbox::forget_requests_before(&state.db().write, cutoff).await {
                tracing::error!(error = %e, "slack: cannot purge remembered requests");
            }
        }
        tokio::select! {
            _ = state.slack().wake.notified() => {}
            _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
            _ = shutdown.wait() => return,
        }
    }
}

/// How long a claimed message stays out of other instances' way: longer
/// than a pass over a whole batch takes. Only an instance that stops
/// mid-pass leaves a claim to run out; its messages are then posted again
/// (at least once, never lost).
const CLAIM_LEASE_SECS: i64 = 300;

/// One pass: every due message, claimed for this instance, delivered or rescheduled. Returns how many were delivered.
pub async fn deliver_due(state: &(impl Store + Clock + Config + Outbound)) -> crate::store::Result<usize> {
    state.db().priority.yield_to_foreground().await;
    let now = state.now();
    let due = outbox::claim_due(&state.db().write, now, now + Duration::seconds(CLAIM_LEASE_SECS), 100).await?;
    let results: Vec<crate::store::Result<bool>> =
        futures::stream::iter(due).map(|row| deliver_one(state, row)).buffer_unordered(PARALLEL).collect().await;
    results.into_iter().try_fold(0, |n, r| r.map(|delivered| n + usize::from(delivered)))
}

/// Why a message is no longer worth sending, if so.
async fn moot(state: &impl Store, row: &OutboxRow, now: DateTime<Utc>) -> crate::store::Result<Option<String>> {
    match row.target {
        Target::Webhook => {
            let (Some(tenant), Some(id)) = (&row.tenant_id, &row.proposal_id) else {
                return Ok(Some("the message names no proposal".into()));
            };
            let proposal = store::proposals::get(&state.db().read, tenant, id).await?;
            Ok(match proposal.map(|p| p.status) {
                Some(ProposalStatus::PendingApproval | ProposalStatus::ApprovalExpired) => None,
                Some(status) => Some(format!("the proposal is already {status}")),
                None => Some("the proposal is gone".into()),
            })
        }
        Target::ResponseUrl => Ok((now - row.created_at > Duration::minutes(RESPONSE_URL_LIFETIME_MINS))
            .then(|| "the response_url has expired".into())),
    }
}

async fn deliver_one(state: &(impl Store + Clock + Config + Outbound), row: OutboxRow) -> crate::store::Result<bool> {
    let now = state.now();
    if let Some(why) = moot(state, &row, now).await? {
        tracing::info!(message_id = %row.id, proposal_id = ?row.proposal_id, why, "slack message abandoned");
        outbox::finish(&state.db().write, &row.id, false, Some(&why), now).await?;
        return Ok(false);
    }
    use secrecy::ExposeSecret;
    let url = match row.target {
        Target::Webhook => row
            .tenant_id
            .as_deref()
            .and_then(|t| state.settings().slack.webhook_for(t))
            .map(|u| u.expose_secret().to_owned()),
        Target::ResponseUrl => row.url.clone(),
    };
    let Some(url) = url else {
        outbox::finish(&state.db().write, &row.id, false, Some("no webhook is configured for the tenant"), now).await?;
        return Ok(false);
    };
    match state.slack().post(state.poster(), &url, &row.body).await {
        Ok(()) => {
            let done = state.now();
            let first = match (row.target, &row.tenant_id, &row.proposal_id) {
                (Target::Webhook, Some(tenant), Some(id))
                    if outbox::delivered_to_channel(&state.db().write, id).await? == 0 =>
                {
                    store::proposals::get(&state.db().read, tenant, id).await?.map(|p| p.created_at)
                }
                _ => None,
            };
            outbox::finish(&state.db().write, &row.id, true, None, done).await?;
            if let Some(created) = first {
                crate::platform::metrics::notified("slack", (done - created).to_std().unwrap_or_default());
            }
            Ok(true)
        }
        // A URL that is refused or redirects will not get better by waiting.
        Err(e @ (DeliveryError::NotAllowed(_) | DeliveryError::Redirect(_))) => {
            tracing::warn!(message_id = %row.id, error = %e, "slack message abandoned");
            outbox::finish(&state.db().write, &row.id, false, Some(&e.to_string()), state.now()).await?;
            Ok(false)
        }
        Err(e) => {
            let wait = backoff(row.attempts, state.settings().slack.max_backoff_secs);
            tracing::warn!(message_id = %row.id, attempt = row.attempts + 1, error = %e, retry_in_secs = wait,
                "slack delivery failed; will retry");
            outbox::retry_at(&state.db().write, &row.id, state.now() + Duration::seconds(wait as i64), &e.to_string())
                .await?;
            Ok(false)
        }
    }
}

/// Seconds to wait after `failures` failed attempts: 1, 2, 4, … capped.
pub fn backoff(failures: i64, max_secs: u64) -> u64 {
    let exp = failures.clamp(0, 30) as u32;
    (1u64 << exp).min(max_secs)
}

#[cfg(test)]
mod tests {
    use super::backoff;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let waits: Vec<u64> = (0..12).map(|n| backoff(n, 300)).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        assert_eq!(backoff(-1, 300), 1);
        assert_eq!(backoff(1_000, 300), 300);
    }
}
