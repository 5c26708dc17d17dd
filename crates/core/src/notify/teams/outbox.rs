//! Delivery of queued cards through the Bot Connector: due cards are
//! claimed for this instance, sent (several at once), marked delivered,
//! and failures retried with backoff (1 s, 2 s, 4 s, … up to
//! `teams.max_backoff_secs`). A new card is abandoned, never sent late,
//! once its proposal no longer waits for a decision; a card whose
//! conversation's host is not allowed is abandoned at once. Logs name the
//! card and the error kind, never a URL, token or body.

use chrono::{DateTime, Duration, Utc};
use futures::StreamExt;

use crate::config::Config;
use crate::domain::ProposalStatus;
use crate::platform::clock::Clock;
use crate::platform::shutdown::Shutdown;
use crate::store;
use crate::store::teams::CardRow;
use crate::store::Store;

use super::{BotConnector, Method, Outgoing, SendError, TeamsOutbound};

/// Cards sent at the same time.
const PARALLEL: usize = 8;
/// How long a claimed card stays out of other instances' way.
const CLAIM_LEASE_SECS: i64 = 300;

/// Sends due cards until shutdown: at once when woken, else every second.
/// Once a minute it also forgets inbound activities whose tokens expired.
pub async fn run(
    state: std::sync::Arc<impl Store + Clock + Config + TeamsOutbound + BotConnector + Send + Sync + 'static>,
    shutdown: Shutdown,
) {
    let mut last_purge = tokio::time::Instant::now();
    loop {
        if let Err(e) = deliver_due(&*state).await {
            tracing::error!(error = %e, "teams outbox: cannot read or update the outbox");
        }
        if last_purge.elapsed() >= std::time::Duration::from_secs(60) {
            last_purge = tokio::time::Instant::now();
            if let Err(e) = store::teams::forget_activities_before(&state.db().write, state.now()).await {
                tracing::error!(error = %e, "teams: cannot purge remembered activities");
            }
        }
        tokio::select! {
            _ = state.teams().wake.notified() => {}
            _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
            _ = shutdown.wait() => return,
        }
    }
}

/// One pass over the due cards. Returns how many were delivered.
pub async fn deliver_due(state: &(impl Store + Clock + Config + TeamsOutbound + BotConnector)) -> store::Result<usize> {
    if state.settings().teams.app_id.is_none() {
        return Ok(0);
    }
    state.db().priority.yield_to_foreground().await;
    let now = state.now();
    let due = store::teams::claim_due(&state.db().write, now, now + Duration::seconds(CLAIM_LEASE_SECS), 100).await?;
    let results: Vec<store::Result<bool>> =
        futures::stream::iter(due).map(|row| deliver_one(state, row)).buffer_unordered(PARALLEL).collect().await;
    results.into_iter().try_fold(0, |n, r| r.map(|delivered| n + usize::from(delivered)))
}

/// Why a card is no longer worth sending, if so: a new card about a
/// proposal that no longer waits. A replacement always goes (it tells the
/// outcome).
async fn moot(state: &impl Store, row: &CardRow) -> store::Result<Option<String>> {
    if row.method() == Method::Put {
        return Ok(None);
    }
    let proposal = store::proposals::get(&state.db().read, &row.tenant_id, &row.proposal_id).await?;
    Ok(match proposal.map(|p| p.status) {
        Some(ProposalStatus::PendingApproval | ProposalStatus::ApprovalExpired) => None,
        Some(status) => Some(format!("the proposal is already {status}")),
        None => Some("the proposal is gone".into()),
    })
}

/// The Bot Connector URL of a card.
fn endpoint(row: &CardRow) -> String {
    let base = row.service_url.trim_end_matches('/');
    let conversation = url_escape(&row.conversation_id);
    match (row.method(), &row.activity_id) {
        (Method::Put, Some(activity)) => {
            format!("{base}/v3/conversations/{conversation}/activities/{}", url_escape(activity))
        }
        _ => format!("{base}/v3/conversations/{conversation}/activities"),
    }
}

/// Percent-encodes everything but unreserved characters (ids hold `:`, `@`,
/// `;` and `|`).
fn url_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

async fn deliver_one(
    state: &(impl Store + Clock + Config + TeamsOutbound + BotConnector),
    row: CardRow,
) -> store::Result<bool> {
    let now = state.now();
    if let Some(why) = moot(state, &row).await? {
        tracing::info!(card_id = %row.id, proposal_id = %row.proposal_id, why, "teams card abandoned");
        store::teams::finish(&state.db().write, &row.id, false, Some(&why), now).await?;
        return Ok(false);
    }
    let url = match state.teams().allowlist().check(&endpoint(&row)) {
        Ok(url) => url,
        Err(why) => {
            tracing::warn!(card_id = %row.id, why, "teams card abandoned");
            store::teams::finish(&state.db().write, &row.id, false, Some(why), now).await?;
            return Ok(false);
        }
    };
    let out = Outgoing { method: row.method(), url: &url, body: row.body.as_bytes(), timeout: state.teams().timeout };
    match state.connector().send(out).await {
        Ok(()) => {
            let done = state.now();
            store::teams::finish(&state.db().write, &row.id, true, None, done).await?;
            if row.method() == Method::Post {
                if let Some(p) = store::proposals::get(&state.db().read, &row.tenant_id, &row.proposal_id).await? {
                    crate::platform::metrics::notified("teams", (done - p.created_at).to_std().unwrap_or_default());
                }
            }
            Ok(true)
        }
        // A conversation the bot is not in, or a card it may not replace,
        // will not change by waiting.
        Err(e @ SendError::Status(400 | 403 | 404)) => {
            tracing::warn!(card_id = %row.id, error = %e, "teams card abandoned");
            store::teams::finish(&state.db().write, &row.id, false, Some(&e.to_string()), state.now()).await?;
            Ok(false)
        }
        Err(e) => {
            let wait = crate::notify::slack::outbox::backoff(row.attempts, state.settings().teams.max_backoff_secs);
            tracing::warn!(card_id = %row.id, attempt = row.attempts + 1, error = %e, retry_in_secs = wait,
                "teams delivery failed; will retry");
            let at: DateTime<Utc> = state.now() + Duration::seconds(wait as i64);
            store::teams::retry_at(&state.db().write, &row.id, at, &e.to_string()).await?;
            Ok(false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_escaped_into_the_connector_url() {
        assert_eq!(url_escape("19:abc@thread.tacv2"), "19%3Aabc%40thread.tacv2");
        assert_eq!(url_escape("a;messageid=1|x y"), "a%3Bmessageid%3D1%7Cx%20y");
    }
}
