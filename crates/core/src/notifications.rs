//! The notifications worker (docs/NOTIFICATIONS.md): claims due rows of
//! the `notifications` outbox that `notify::announce` fills, expands each
//! `fanout` row into one row per person who may approve the proposal then
//! and per channel, and sends those (email, Web Push) with backoff. A
//! notice whose proposal no longer waits for a decision is dropped.

use chrono::Duration;
use futures::StreamExt;
use std::sync::Arc;

use crate::clock::Clock;
use crate::config::Config;
use crate::eligibility::Tenancy;
use crate::notify::{email, message, push, vapid_subject, Reaching};
use crate::outbound::Outbound;
use crate::shutdown::Shutdown;
use crate::store::proposals::ProposalRow;
use crate::store::reach::{self as outbox, Channel, NewNotification, NotificationRow};
use crate::store::{self, Store};

/// Notifications sent at the same time.
const PARALLEL: usize = 8;
/// How long a claimed notification stays out of other instances' way.
const CLAIM_LEASE_SECS: i64 = 300;

/// Delivers due notifications until shutdown: at once when woken, else
/// every second.
pub async fn run(
    state: Arc<impl Store + Clock + Config + Outbound + Reaching + Send + Sync + 'static>,
    shutdown: Shutdown,
) {
    loop {
        match deliver_due(&*state).await {
            // More may be due (a fan-out queues its deliveries): go again.
            Ok(n) if n > 0 => continue,
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "notifications: cannot read or update the outbox"),
        }
        tokio::select! {
            _ = state.reach().wake.notified() => {}
            _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
            _ = shutdown.wait() => return,
        }
    }
}

/// One pass: every due notification claimed for this instance and handled.
/// Returns how many were handled (sent, expanded, retried or dropped).
pub async fn deliver_due(state: &(impl Store + Clock + Config + Outbound + Reaching)) -> store::Result<usize> {
    let now = state.now();
    let due = outbox::claim_due(&state.db().write, now, now + Duration::seconds(CLAIM_LEASE_SECS), 100).await?;
    let count = due.len();
    let results: Vec<store::Result<()>> =
        futures::stream::iter(due).map(|row| handle(state, row)).buffer_unordered(PARALLEL).collect().await;
    results.into_iter().collect::<store::Result<()>>()?;
    Ok(count)
}

async fn abandon(state: &(impl Store + Clock), row: &NotificationRow, why: &str) -> store::Result<()> {
    tracing::info!(notification_id = %row.id, proposal_id = %row.proposal_id, channel = row.channel.as_str(), why,
        "notification dropped");
    outbox::finish(&state.db().write, &row.id, false, Some(why), state.now()).await
}

async fn handle(
    state: &(impl Store + Clock + Config + Outbound + Reaching),
    row: NotificationRow,
) -> store::Result<()> {
    let proposal = store::proposals::get(&state.db().read, &row.tenant_id, &row.proposal_id).await?;
    let Some(proposal) = proposal.filter(|p| p.status.awaits_decision()) else {
        return abandon(state, &row, "the proposal no longer waits for a decision").await;
    };
    let now = state.now();
    let give_up = Duration::seconds(state.settings().notifications.give_up_after_secs as i64);
    if row.channel != Channel::Fanout && now - row.created_at > give_up {
        return abandon(state, &row, "not delivered in time").await;
    }
    match row.channel {
        Channel::Fanout => expand(state, &row, &proposal).await,
        Channel::Email | Channel::Push => send(state, &row, &proposal).await,
    }
}

/// Replaces a `fanout` row by one row per recipient and channel, in one
/// transaction.
async fn expand(
    state: &(impl Store + Clock + Config + Reaching),
    row: &NotificationRow,
    p: &ProposalRow,
) -> store::Result<()> {
    let settings = &state.settings().notifications;
    let now = state.now();
    let mut tx = state.db().begin().await?;
    let tenancy = Tenancy::load_in(&mut tx, &p.tenant_id).await?;
    let given = store::proposals::approvals_in_round(&mut tx, &p.id, p.approval_round).await?;
    let approved_by: Vec<&str> = given.iter().map(|a| a.approver_id.as_str()).collect();
    let mut items = Vec::new();
    let mut subscriptions = Vec::new();
    for user in tenancy.eligible_users(&crate::approvals::Approvable::from(p), &approved_by) {
        if state.reach().mailer.is_some() && user.email.is_some() {
            items.push((user.id.clone(), Channel::Email, None));
        }
        if settings.push.enabled {
            for sub in outbox::subscriptions_of(&mut *tx, &user.id).await? {
                subscriptions.push(sub.id.clone());
                items.push((user.id.clone(), Channel::Push, Some(sub.id)));
            }
        }
    }
    let rows: Vec<NewNotification<'_>> = items
        .iter()
        .map(|(user, channel, sub)| NewNotification {
            tenant_id: &p.tenant_id,
            proposal_id: &p.id,
            kind: row.kind,
            channel: *channel,
            user_id: Some(user),
            subscription_id: sub.as_deref(),
            due: now,
        })
        .collect();
    outbox::enqueue(&mut tx, &rows, now).await?;
    outbox::finish(&mut *tx, &row.id, true, None, now).await?;
    tx.commit().await?;
    Ok(())
}

/// Sends one addressed notification; retries with backoff what may
/// succeed later, drops what cannot, and removes a subscription its push
/// service says is gone.
async fn send(
    state: &(impl Store + Clock + Config + Outbound + Reaching),
    row: &NotificationRow,
    p: &ProposalRow,
) -> store::Result<()> {
    let settings = state.settings();
    let now = state.now();
    let Some(user_id) = row.user_id.as_deref() else {
        return abandon(state, row, "the notification names no one").await;
    };
    let signals = crate::risk::signals(state, &crate::risk::Subject::of(p)).await?;
    let notice = message::Notice { kind: row.kind, row: p, signals: &signals, url: settings.proposal_url(&p.id), now };
    let outcome = match row.channel {
        Channel::Email => {
            let mut conn = state.db().reader().await?;
            let user = store::directory::user_by_id(&mut conn, user_id).await?;
            drop(conn);
            let (Some(mailer), Some(user)) = (&state.reach().mailer, user) else {
                return abandon(state, row, "email is off or the person is gone").await;
            };
            let Some(address) = user.email.as_deref() else {
                return abandon(state, row, "the person has no email address now").await;
            };
            mailer.send(address, &notice.subject(), notice.email_text(&user.username)).await.map_err(|e| match e {
                email::MailError::Permanent(why) => (false, why),
                email::MailError::Transient(why) => (true, why),
            })
        }
        Channel::Push => {
            let sub = match row.subscription_id.as_deref() {
                Some(id) => outbox::subscription(&state.db().read, id).await?,
                None => None,
            };
            let Some(sub) = sub.filter(|s| s.user_id == user_id) else {
                return abandon(state, row, "the device is no longer subscribed").await;
            };
            let payload = serde_json::to_vec(&notice.push()).expect("the payload serializes");
            let subject = vapid_subject(settings);
            let delivery = push::Delivery {
                allow: &state.reach().push_hosts,
                keys: &state.reach().vapid,
                subject: &subject,
                timeout: std::time::Duration::from_millis(settings.notifications.timeout_ms),
                ttl_secs: (p.expires_at - now).num_seconds(),
                now,
            };
            match delivery.send(state.poster(), &sub, &payload).await {
                Ok(()) => {
                    outbox::mark_sent(&state.db().write, &sub.id, state.now()).await?;
                    Ok(())
                }
                Err(push::PushError::Gone(code)) => {
                    outbox::unsubscribe(&state.db().write, &sub.id, None).await?;
                    tracing::info!(subscription_id = %sub.id, status = code, "push subscription gone: removed");
                    Err((false, format!("subscription gone (HTTP {code}); removed")))
                }
                Err(push::PushError::Permanent(why)) => Err((false, why)),
                Err(push::PushError::Transient(why)) => Err((true, why)),
            }
        }
        Channel::Fanout => unreachable!("expanded, never sent"),
    };
    match outcome {
        Ok(()) => {
            let done = state.now();
            outbox::finish(&state.db().write, &row.id, true, None, done).await?;
            crate::metrics::notified(
                row.channel.as_str(),
                row.kind.as_str(),
                (done - p.created_at).to_std().unwrap_or_default(),
            );
            Ok(())
        }
        Err((false, why)) => abandon(state, row, &why).await,
        Err((true, why)) => {
            let wait = crate::slack::outbox::backoff(row.attempts, settings.notifications.max_backoff_secs);
            tracing::warn!(notification_id = %row.id, channel = row.channel.as_str(), attempt = row.attempts + 1,
                error = %why, retry_in_secs = wait, "notification not delivered; will retry");
            outbox::retry_at(&state.db().write, &row.id, state.now() + Duration::seconds(wait as i64), &why).await
        }
    }
}
