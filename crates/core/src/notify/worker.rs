//! The notifications worker (docs/NOTIFICATIONS.md): claims due rows of
//! the `notifications` outbox that `notify::announce` fills, expands each
//! `fanout` row into one row per person who may approve the proposal then
//! and per channel, and sends those (email, Web Push) with backoff. A
//! notice whose proposal no longer waits for a decision is dropped.

use chrono::Duration;
use futures::StreamExt;
use std::collections::HashMap;
use std::sync::Arc;

use crate::config::Config;
use crate::decision::eligibility::Tenancy;
use crate::notify::outbound::Outbound;
use crate::notify::{email, message, push, vapid_subject, Reaching};
use crate::platform::clock::Clock;
use crate::platform::shutdown::Shutdown;
use crate::store::proposals::ProposalRow;
use crate::store::reach::{self as outbox, Channel, Kind, NewNotification, NotificationRow};
use crate::store::{self, Store};

/// Notifications sent at the same time.
const PARALLEL: usize = 32;
/// Passes running at once in this process (each claims its own rows).
const WORKERS: usize = 2;
/// Notifications claimed by one pass.
const BATCH: u32 = 200;
/// How long a claimed notification stays out of other instances' way.
const CLAIM_LEASE_SECS: i64 = 300;

/// Delivers due notifications until shutdown: at once when woken, else
/// every second.
pub async fn run(
    state: Arc<impl Store + Clock + Config + Outbound + Reaching + Send + Sync + 'static>,
    shutdown: Shutdown,
) {
    // Two passes overlap: one sends while the other reads and writes.
    let workers = (0..WORKERS).map(|_| worker(state.clone(), shutdown.clone()));
    tokio::join!(futures::future::join_all(workers), audience(state.clone(), shutdown.clone()));
}

/// Keeps `Reach::audience` current: at once, then every second.
async fn audience(state: Arc<impl Store + Config + Reaching + Send + Sync + 'static>, shutdown: Shutdown) {
    loop {
        state.db().priority.yield_to_foreground().await;
        if let Err(e) = crate::notify::refresh_audience(&*state).await {
            tracing::error!(error = %e, "notifications: cannot read who can be reached");
        }
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
            _ = shutdown.wait() => return,
        }
    }
}

async fn worker(
    state: Arc<impl Store + Clock + Config + Outbound + Reaching + Send + Sync + 'static>,
    shutdown: Shutdown,
) {
    loop {
        match deliver_due(&*state).await {
            // A full batch may have left more due: go again at once.
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

/// One pass: the due notifications claimed for this instance (up to
/// [`BATCH`]), handled with three write transactions whatever their number:
/// the claim, the fan-outs expanded, and every send's outcome recorded. The
/// sends themselves run [`PARALLEL`] at a time and write nothing. (One
/// statement per notification would queue behind intake on SQLite's one
/// writer, each with its own fsync.) Returns how many were handled.
pub async fn deliver_due(state: &(impl Store + Clock + Config + Outbound + Reaching)) -> store::Result<usize> {
    state.db().priority.yield_to_foreground().await;
    let now = state.now();
    let lease = now + Duration::seconds(CLAIM_LEASE_SECS);
    let due = outbox::claim_due(&state.db().write, now, lease, BATCH).await?;
    let count = due.len();
    if count == 0 {
        return Ok(0);
    }
    // The batch's proposals, one statement per tenant; a proposal gone or
    // no longer waiting for a decision maps to None.
    let mut proposals: HashMap<String, Option<ProposalRow>> =
        due.iter().map(|r| (r.proposal_id.clone(), None)).collect();
    let mut by_tenant: HashMap<&str, Vec<&str>> = HashMap::new();
    for row in &due {
        let ids = by_tenant.entry(row.tenant_id.as_str()).or_default();
        if !ids.contains(&row.proposal_id.as_str()) {
            ids.push(&row.proposal_id);
        }
    }
    for (tenant, ids) in by_tenant {
        for p in store::proposals::get_many(&state.db().read, tenant, &ids).await? {
            if p.status.awaits_decision() {
                proposals.insert(p.id.clone(), Some(p));
            }
        }
    }
    let (fanouts, mut sends): (Vec<NotificationRow>, Vec<NotificationRow>) =
        due.into_iter().partition(|r| r.channel == Channel::Fanout);
    if !fanouts.is_empty() {
        // What a fan-out queues is sent in this same pass (stored claimed
        // by it until `lease`, so no other pass takes it meanwhile).
        sends.extend(expand(state, &fanouts, &proposals, lease).await?);
    }
    // Every proposal's risk signals at once (three statements for the batch).
    let waiting: Vec<&ProposalRow> = proposals.values().flatten().collect();
    let subjects: Vec<crate::intake::risk::Subject<'_>> =
        waiting.iter().map(|p| crate::intake::risk::Subject::of(p)).collect();
    let signals: HashMap<&str, Vec<crate::intake::risk::Signal>> =
        waiting.iter().map(|p| p.id.as_str()).zip(crate::intake::risk::signals_all(state, &subjects).await?).collect();
    let outcomes: Vec<store::Result<Outcome>> = futures::stream::iter(sends)
        .map(|row| {
            let p = proposals.get(&row.proposal_id).and_then(Option::as_ref);
            let found = p.and_then(|p| signals.get(p.id.as_str())).map_or(&[][..], Vec::as_slice);
            attempt(state, row, p, found)
        })
        .buffer_unordered(PARALLEL)
        .collect()
        .await;
    let outcomes = outcomes.into_iter().collect::<store::Result<Vec<Outcome>>>()?;
    record(state, outcomes).await?;
    Ok(count)
}

/// What became of one addressed notification.
struct Outcome {
    row: NotificationRow,
    result: Result<(), (bool, String)>,
    /// When its proposal was created (for the delay metric).
    created_at: Option<chrono::DateTime<chrono::Utc>>,
    /// A subscription that was posted to, or that its push service calls gone.
    sent_to: Option<String>,
    gone: Option<String>,
}

impl Outcome {
    fn dropped(row: NotificationRow, why: &str) -> Outcome {
        Outcome { row, result: Err((false, why.to_owned())), created_at: None, sent_to: None, gone: None }
    }
}

/// Records every outcome in one transaction, then the delay of each
/// proposal's first notice per channel.
async fn record(state: &(impl Store + Clock + Config), outcomes: Vec<Outcome>) -> store::Result<()> {
    if outcomes.is_empty() {
        return Ok(());
    }
    let now = state.now();
    let max_backoff = state.settings().notifications.max_backoff_secs;
    // First notices on a channel: none delivered before this batch.
    let mut firsts: Vec<(Channel, chrono::DateTime<chrono::Utc>)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for o in outcomes.iter().filter(|o| o.result.is_ok() && o.row.kind == Kind::Arrived) {
        if !seen.insert((o.row.proposal_id.as_str(), o.row.channel)) {
            continue;
        }
        if let Some(created) = o.created_at {
            if outbox::delivered_count(&state.db().read, &o.row.proposal_id, o.row.channel).await? == 0 {
                firsts.push((o.row.channel, created));
            }
        }
    }
    let mut tx = state.db().begin().await?;
    for o in &outcomes {
        match &o.result {
            Ok(()) => outbox::finish(&mut *tx, &o.row.id, true, None, now).await?,
            Err((false, why)) => {
                tracing::info!(notification_id = %o.row.id, proposal_id = %o.row.proposal_id,
                    channel = o.row.channel.as_str(), why, "notification dropped");
                outbox::finish(&mut *tx, &o.row.id, false, Some(why), now).await?
            }
            Err((true, why)) => {
                let wait = crate::notify::slack::outbox::backoff(o.row.attempts, max_backoff);
                tracing::warn!(notification_id = %o.row.id, channel = o.row.channel.as_str(),
                    attempt = o.row.attempts + 1, error = %why, retry_in_secs = wait,
                    "notification not delivered; will retry");
                outbox::retry_at(&mut *tx, &o.row.id, now + Duration::seconds(wait as i64), why).await?
            }
        }
        if let Some(sub) = &o.sent_to {
            outbox::mark_sent(&mut *tx, sub, now).await?;
        }
        if let Some(sub) = &o.gone {
            outbox::unsubscribe(&mut *tx, sub, None).await?;
            tracing::info!(subscription_id = %sub, "push subscription gone: removed");
        }
    }
    tx.commit().await?;
    for (channel, created) in firsts {
        crate::platform::metrics::notified(channel.as_str(), (now - created).to_std().unwrap_or_default());
    }
    Ok(())
}

/// Replaces each `fanout` row by one row per recipient and channel, all in
/// one transaction; a fan-out whose proposal no longer waits is dropped.
async fn expand(
    state: &(impl Store + Clock + Config + Reaching),
    fanouts: &[NotificationRow],
    proposals: &HashMap<String, Option<ProposalRow>>,
    lease: chrono::DateTime<chrono::Utc>,
) -> store::Result<Vec<NotificationRow>> {
    let settings = &state.settings().notifications;
    let now = state.now();
    let mut tx = state.db().begin().await?;
    let mut queued = Vec::new();
    let mut tenancies: HashMap<String, Tenancy> = HashMap::new();
    let mut devices: HashMap<String, Vec<String>> = HashMap::new();
    // The group each escalation notice goes to.
    let escalated: Vec<&str> =
        fanouts.iter().filter(|r| r.kind == Kind::Escalated).map(|r| r.proposal_id.as_str()).collect();
    let groups: HashMap<String, String> = store::escalations::of(&mut *tx, &escalated)
        .await?
        .into_iter()
        .filter_map(|e| Some((e.proposal_id, e.escalate_to?)))
        .collect();
    for row in fanouts {
        let Some(p) = proposals.get(&row.proposal_id).and_then(Option::as_ref) else {
            outbox::finish(&mut *tx, &row.id, false, Some("the proposal no longer waits for a decision"), now).await?;
            continue;
        };
        if !tenancies.contains_key(&p.tenant_id) {
            tenancies
                .insert(p.tenant_id.clone(), Tenancy::load_in(&mut tx, state.settings(), &p.tenant_id, now).await?);
        }
        let given = store::proposals::approvals_in_round(&mut tx, &p.id, p.approval_round).await?;
        let given = crate::decision::delegation::Given::of(&given);
        let tenancy = &tenancies[&p.tenant_id];
        let mut items: Vec<(String, Channel, Option<String>)> = Vec::new();
        let mut quiet: Vec<String> = Vec::new();
        for user in recipients(state, row, p, tenancy, &given, &groups) {
            // Quiet hours hold for everything but an escalation.
            if row.kind != Kind::Escalated {
                if let (Some(zone), Some(hours)) = (&user.time_zone, &user.quiet_hours) {
                    if crate::notify::quiet::is_quiet(zone, hours, now) {
                        quiet.push(user.id.clone());
                    }
                }
            }
            if state.reach().mailer.is_some() && user.email.is_some() {
                items.push((user.id.clone(), Channel::Email, None));
            }
            if settings.push.enabled {
                if !devices.contains_key(&user.id) {
                    let subs = outbox::subscriptions_of(&mut *tx, &user.id).await?;
                    devices.insert(user.id.clone(), subs.into_iter().map(|s| s.id).collect());
                }
                for sub in &devices[&user.id] {
                    items.push((user.id.clone(), Channel::Push, Some(sub.clone())));
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
                due: lease,
            })
            .collect();
        for addressed in outbox::enqueue(&mut tx, &rows, now).await? {
            // Kept, so the console says who was not told and why.
            if addressed.user_id.as_ref().is_some_and(|u| quiet.contains(u)) {
                outbox::finish(&mut *tx, &addressed.id, false, Some(QUIET), now).await?;
            } else {
                queued.push(addressed);
            }
        }
        outbox::finish(&mut *tx, &row.id, true, None, now).await?;
    }
    tx.commit().await?;
    Ok(queued)
}

/// Why a notice was not sent to someone in their quiet hours.
pub const QUIET: &str = "quiet hours";

/// Who a fan-out reaches: those who may approve the proposal now; for an
/// escalation, those of them in the group it was escalated to.
fn recipients<'t>(
    state: &impl Config,
    row: &NotificationRow,
    p: &ProposalRow,
    tenancy: &'t Tenancy,
    given: &crate::decision::delegation::Given<'_>,
    groups: &HashMap<String, String>,
) -> Vec<&'t store::directory::User> {
    let eligible = tenancy.eligible_users(&crate::decision::approval::approve::Approvable::from(p), given);
    if row.kind != Kind::Escalated {
        return eligible;
    }
    let group = groups.get(&p.id);
    let members = group.and_then(|g| state.settings().approval_group(&p.tenant_id, g)).unwrap_or_default();
    // Configured members, and those the identity provider's groups put in it.
    let in_group = |u: &store::directory::User| {
        members.contains(&u.username) || group.is_some_and(|g| u.idp_approval_groups.contains(g))
    };
    eligible.into_iter().filter(|u| in_group(u)).collect()
}

/// Sends one addressed notification and says what became of it (nothing is
/// written here: [`record`] does, for the whole batch). What may succeed
/// later is retried; what cannot is dropped; a subscription its push
/// service calls gone is removed.
async fn attempt(
    state: &(impl Store + Clock + Config + Outbound + Reaching),
    row: NotificationRow,
    p: Option<&ProposalRow>,
    signals: &[crate::intake::risk::Signal],
) -> store::Result<Outcome> {
    let settings = state.settings();
    let now = state.now();
    let Some(p) = p else {
        return Ok(Outcome::dropped(row, "the proposal no longer waits for a decision"));
    };
    if now - row.created_at > Duration::seconds(settings.notifications.give_up_after_secs as i64) {
        return Ok(Outcome::dropped(row, "not delivered in time"));
    }
    let Some(user_id) = row.user_id.clone() else {
        return Ok(Outcome::dropped(row, "the notification names no one"));
    };
    let notice = message::Notice { kind: row.kind, row: p, signals, url: settings.proposal_url(&p.id), now };
    let mut outcome = Outcome { row, result: Ok(()), created_at: Some(p.created_at), sent_to: None, gone: None };
    outcome.result = match outcome.row.channel {
        Channel::Email => {
            let user = store::directory::user_by_id(&mut *state.db().reader().await?, &user_id).await?;
            match (&state.reach().mailer, user) {
                (Some(mailer), Some(user)) => match user.email.as_deref() {
                    Some(address) => mailer
                        .send(address, &notice.subject(), notice.email_text(&user.username))
                        .await
                        .map_err(|e| match e {
                            email::MailError::Permanent(why) => (false, why),
                            email::MailError::Transient(why) => (true, why),
                        }),
                    None => Err((false, "the person has no email address now".into())),
                },
                _ => Err((false, "email is off or the person is gone".into())),
            }
        }
        Channel::Push => {
            let sub = match outcome.row.subscription_id.as_deref() {
                Some(id) => outbox::subscription(&state.db().read, id).await?,
                None => None,
            };
            match sub.filter(|s| s.user_id == user_id) {
                None => Err((false, "the device is no longer subscribed".into())),
                Some(sub) => {
                    let payload = serde_json::to_vec(&notice.push()).expect("the payload serializes");
                    let subject = vapid_subject(settings);
                    let delivery = push::Delivery {
                        allow: &state.reach().push_hosts,
                        keys: &state.reach().vapid,
                        vapid: &state.reach().vapid_tokens,
                        subject: &subject,
                        timeout: std::time::Duration::from_millis(settings.notifications.timeout_ms),
                        ttl_secs: (p.expires_at - now).num_seconds(),
                        now,
                    };
                    match delivery.send(state.poster(), &sub, &payload).await {
                        Ok(()) => {
                            outcome.sent_to = Some(sub.id);
                            Ok(())
                        }
                        Err(push::PushError::Gone(code)) => {
                            outcome.gone = Some(sub.id);
                            Err((false, format!("subscription gone (HTTP {code}); removed")))
                        }
                        Err(push::PushError::Permanent(why)) => Err((false, why)),
                        Err(push::PushError::Transient(why)) => Err((true, why)),
                    }
                }
            }
        }
        Channel::Fanout => Err((false, "a fan-out is expanded, never sent".into())),
    };
    Ok(outcome)
}
