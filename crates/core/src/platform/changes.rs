//! Change notifications: a writer publishes after its transaction commits,
//! and then
//! - the proposal's cached status-poll view is dropped;
//! - every long-poll waiting on that proposal wakes at once (no sleep loops).
//!
//! Changes made by other processes (other instances, the CLI's `reconcile`,
//! `apply`, `agent add`…) reach this process through the change log that
//! database triggers fill: [`follow`] reads it every [`FOLLOW_EVERY`] and
//! publishes what it finds. The read caches are only used while the
//! follower is keeping up, so a change is never hidden for longer than that.
//!
//! On PostgreSQL the trigger also sends `NOTIFY countersign_changes` and
//! [`follow`] reads the log as soon as one arrives: a long-poll on one
//! instance wakes within milliseconds of a decision taken on another. The
//! log stays the record (order, gaps, what a lost connection missed); a
//! notification only says "read it now".

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

use crate::people::actors::AgentPrincipal;
use crate::platform::cache::PolledView;
use crate::platform::cache::ReadCache;
use crate::platform::clock::Clock;
use crate::platform::hooks::Hooks;
use crate::platform::shutdown::Shutdown;
use crate::store::change_log::{self, Change};
use crate::store::Store;

/// How often the change log is read: the longest a change made by another
/// process can go unseen by a cached status poll or agent credential.
pub const FOLLOW_EVERY: Duration = Duration::from_millis(100);
/// Reads prompted by notifications are at least this far apart: a burst of
/// writes costs one read, not one per row.
const NOTIFIED_GAP: Duration = Duration::from_millis(5);
/// The caches are bypassed when the log was last read longer ago than this.
const FOLLOW_TRUSTED_FOR: Duration = Duration::from_millis(1_000);
/// Log entries are pruned after this many minutes.
const KEEP_LOG_MINUTES: u32 = 10;
/// More changes than this between two reads: drop every cached entry instead.
const MAX_BATCH: u32 = 2_000;
/// Cached views (per generation, see [`ReadCache`]): about 2 KB each.
const VIEW_CAPACITY: usize = 4_096;
const AGENT_CAPACITY: usize = 1_024;

#[derive(Clone)]
pub struct Changes {
    inner: Arc<Inner>,
}

struct Inner {
    by_proposal: Mutex<HashMap<String, Weak<Notify>>>,
    /// Wakes whoever watches every proposal of every tenant (the queue page).
    any: Notify,
    /// How many changes were published: a watcher that knows the count it
    /// last saw misses none (the queue page's long-poll).
    published: AtomicU64,
    /// Status-poll views by proposal id, as sent.
    views: ReadCache<Arc<PolledView>>,
    /// Active agents by the SHA-256 of their key (read-only endpoints only).
    agents: ReadCache<Arc<AgentPrincipal>>,
    /// When the follower last read the log, in ms since `started` (0: never).
    followed_at_ms: AtomicU64,
    started: Instant,
}

impl Default for Changes {
    fn default() -> Self {
        Changes {
            inner: Arc::new(Inner {
                by_proposal: Mutex::default(),
                any: Notify::new(),
                published: AtomicU64::new(0),
                views: ReadCache::new(VIEW_CAPACITY),
                agents: ReadCache::new(AGENT_CAPACITY),
                followed_at_ms: AtomicU64::new(0),
                started: Instant::now(),
            }),
        }
    }
}

impl Changes {
    /// The notifier for one proposal. Keep the `Arc` while waiting.
    pub fn subscribe(&self, proposal_id: &str) -> Arc<Notify> {
        let mut map = self.inner.by_proposal.lock().expect("changes lock");
        if let Some(existing) = map.get(proposal_id).and_then(Weak::upgrade) {
            return existing;
        }
        if map.len() >= 1024 && map.len().is_power_of_two() {
            map.retain(|_, w| w.strong_count() > 0);
        }
        let notify = Arc::new(Notify::new());
        map.insert(proposal_id.to_owned(), Arc::downgrade(&notify));
        notify
    }

    /// Drops the cached view of `proposal_id`, then wakes every waiter on it
    /// and every queue watcher.
    pub fn publish(&self, proposal_id: &str) {
        self.inner.views.invalidate(proposal_id);
        let waiter = {
            let mut map = self.inner.by_proposal.lock().expect("changes lock");
            match map.get(proposal_id).and_then(Weak::upgrade) {
                Some(n) => Some(n),
                None => {
                    map.remove(proposal_id);
                    None
                }
            }
        };
        if let Some(n) = waiter {
            n.notify_waiters();
        }
        self.inner.published.fetch_add(1, Ordering::AcqRel);
        self.inner.any.notify_waiters();
    }

    /// How many changes have been published so far.
    pub fn published(&self) -> u64 {
        self.inner.published.load(Ordering::Acquire)
    }

    /// Waits until more than `seen` changes have been published (at once if
    /// that happened already); returns the count then.
    pub async fn any_since(&self, seen: u64) -> u64 {
        loop {
            let notified = self.inner.any.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let now = self.published();
            if now > seen {
                return now;
            }
            notified.await;
        }
    }

    /// The read caches, or `None` while the follower is not keeping up (not
    /// started, or the log could not be read): then every read goes to the
    /// database.
    pub fn caches(&self) -> Option<Caches<'_>> {
        let at = self.inner.followed_at_ms.load(Ordering::Acquire);
        let now = self.inner.started.elapsed().as_millis() as u64;
        (at > 0 && now.saturating_sub(at) <= FOLLOW_TRUSTED_FOR.as_millis() as u64)
            .then_some(Caches { views: &self.inner.views, agents: &self.inner.agents })
    }

    fn apply(&self, change: &Change) {
        match change {
            Change::Proposal(id) => self.publish(id),
            Change::Agents => self.inner.agents.clear(),
            Change::Payees => self.inner.views.clear(),
            Change::Unknown => self.clear_caches(),
        }
    }

    fn clear_caches(&self) {
        self.inner.views.clear();
        self.inner.agents.clear();
    }

    fn mark_followed(&self) {
        let now = (self.inner.started.elapsed().as_millis() as u64).max(1);
        self.inner.followed_at_ms.store(now, Ordering::Release);
    }

    /// Number of proposals with live waiters (for metrics and tests).
    pub fn watched(&self) -> usize {
        self.inner.by_proposal.lock().expect("changes lock").values().filter(|w| w.strong_count() > 0).count()
    }
}

/// The read caches, handed out only while they can be trusted.
pub struct Caches<'a> {
    pub views: &'a ReadCache<Arc<PolledView>>,
    pub agents: &'a ReadCache<Arc<AgentPrincipal>>,
}

/// Follows the change log until `shutdown` fires (see the module comment).
pub async fn follow(
    state: std::sync::Arc<impl Store + Clock + Notifier + Hooks + Send + Sync + 'static>,
    shutdown: Shutdown,
) {
    let changes = &state.changes();
    let mut seen = None;
    let mut gaps = Gaps::default();
    let mut ticker = tokio::time::interval(state.follow_every().unwrap_or(FOLLOW_EVERY));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let notified = Arc::new(Notify::new());
    tokio::spawn(listen(state.db().read.clone(), notified.clone(), shutdown.clone()));
    let mut pruned_at = Instant::now();
    let mut read_at = tokio::time::Instant::now();
    let mut failing = false;
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = notified.notified() => tokio::time::sleep_until(read_at + NOTIFIED_GAP).await,
            _ = shutdown.wait() => return,
        }
        state.db().priority.yield_to_foreground().await;
        read_at = tokio::time::Instant::now();
        match follow_once(state.db(), changes, &mut seen, &mut gaps).await {
            Ok(()) => {
                if failing {
                    tracing::info!("change log readable again; read caches resume");
                    failing = false;
                }
                changes.mark_followed();
            }
            Err(e) => {
                if !failing {
                    tracing::error!(error = %e, "cannot read the change log; read caches bypassed until it can");
                    failing = true;
                }
                // What was missed is unknown: start again from an empty cache.
                seen = None;
            }
        }
        if pruned_at.elapsed() >= Duration::from_secs(60) {
            pruned_at = Instant::now();
            if let Err(e) = change_log::prune(&state.db().write, state.now(), KEEP_LOG_MINUTES).await {
                tracing::warn!(error = %e, "change log prune failed");
            }
        }
    }
}

/// On PostgreSQL: listens for the change log's notifications and wakes the
/// follower at each (and after a reconnection, as what came in between is
/// unknown). Retries every second while the database cannot be reached. On
/// SQLite, which has no notifications, it returns at once.
async fn listen(pool: crate::store::Pool, wake: Arc<Notify>, shutdown: Shutdown) {
    let run = || async {
        let Some(mut listener) = change_log::Listener::start(&pool).await? else {
            return Ok(());
        };
        tracing::debug!("listening for changes");
        loop {
            listener.changed().await?;
            wake.notify_one();
        }
    };
    loop {
        let failed: crate::store::Result<()> = tokio::select! {
            failed = run() => failed,
            _ = shutdown.wait() => return,
        };
        // Ending without an error: nothing to listen for.
        let Err(e) = failed else { return };
        if shutdown.fired() {
            return;
        }
        tracing::warn!(error = %e, "cannot listen for changes; the change log is still read every tick");
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = shutdown.wait() => return,
        }
    }
}

/// Entries numbered below the newest one read but not seen yet. On
/// PostgreSQL an entry's number is taken at insert, so a transaction that
/// commits late makes a smaller number visible after a larger one; each is
/// looked for again at every read, for [`GAP_WAIT`]. (A rolled-back
/// transaction leaves a number that never appears; SQLite numbers at
/// commit and leaves none.)
#[derive(Debug, Default)]
struct Gaps(std::collections::BTreeMap<i64, Instant>);

/// How long a missing entry is waited for; then the caches are emptied, as
/// what it would have invalidated is unknown.
const GAP_WAIT: Duration = Duration::from_secs(5);
/// More gaps than this at once: empty the caches instead of tracking them.
const MAX_GAPS: usize = 1_000;

/// One read of the log. `seen` is `None` at start and after a failure.
async fn follow_once(
    db: &crate::store::Db,
    changes: &Changes,
    seen: &mut Option<i64>,
    gaps: &mut Gaps,
) -> crate::store::Result<()> {
    if let Some(from) = *seen {
        let batch = change_log::since(&db.read, from, MAX_BATCH).await?;
        if (batch.len() as u32) < MAX_BATCH {
            let now = Instant::now();
            let mut expected = from + 1;
            let mut too_many = false;
            for (seq, change) in &batch {
                if (*seq - expected) as usize + gaps.0.len() > MAX_GAPS {
                    too_many = true;
                } else {
                    gaps.0.extend((expected..*seq).map(|missing| (missing, now)));
                }
                expected = seq + 1;
                changes.apply(change);
                *seen = Some(*seq);
            }
            if !too_many {
                let waiting: Vec<i64> = gaps.0.keys().copied().collect();
                for (seq, change) in change_log::these(&db.read, &waiting).await? {
                    changes.apply(&change);
                    gaps.0.remove(&seq);
                }
                let before = gaps.0.len();
                gaps.0.retain(|_, noticed| noticed.elapsed() < GAP_WAIT);
                if gaps.0.len() == before {
                    return Ok(());
                }
                tracing::debug!("a change log entry never appeared; read caches emptied");
                changes.clear_caches();
                return Ok(());
            }
            tracing::info!("more than {MAX_GAPS} change log entries missing; read caches emptied");
        } else {
            tracing::info!("more than {MAX_BATCH} changes at once; read caches emptied");
        }
    }
    // At start, after a failure, or after too many changes for one read:
    // empty caches, following from the newest entry.
    let latest = change_log::latest(&db.read).await?;
    changes.clear_caches();
    gaps.0.clear();
    *seen = Some(latest);
    Ok(())
}

/// Change notifications: wakes long-polls and streams, drops cached views.
pub trait Notifier {
    fn changes(&self) -> &crate::platform::changes::Changes;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_watcher_that_knows_what_it_saw_misses_no_change() {
        let changes = Changes::default();
        let seen = changes.published();
        changes.publish("prop_1");
        // The change came before the watcher started waiting: still seen.
        let now = tokio::time::timeout(std::time::Duration::from_secs(1), changes.any_since(seen)).await.unwrap();
        assert_eq!(now, seen + 1);
        let waiting = tokio::spawn({
            let changes = changes.clone();
            async move { changes.any_since(now).await }
        });
        tokio::task::yield_now().await;
        changes.publish("prop_2");
        assert_eq!(waiting.await.unwrap(), now + 1);
    }

    #[tokio::test]
    async fn publish_wakes_subscribers_of_that_proposal_only() {
        let changes = Changes::default();
        let a = changes.subscribe("prop_a");
        let b = changes.subscribe("prop_b");
        let wait_a = a.notified();
        let wait_b = b.notified();
        tokio::pin!(wait_a, wait_b);
        wait_a.as_mut().enable();
        wait_b.as_mut().enable();
        changes.publish("prop_a");
        tokio::time::timeout(Duration::from_secs(1), wait_a).await.expect("a woke");
        assert!(tokio::time::timeout(Duration::from_millis(50), wait_b).await.is_err(), "b stays asleep");
    }

    /// On PostgreSQL an entry numbered below one already read can commit
    /// later: the follower still applies it (its waiters wake).
    #[tokio::test]
    async fn an_entry_that_commits_after_a_larger_one_is_still_applied() {
        for db in crate::store::test_pg::each_backend("an_entry_that_commits_after_a_larger_one_is_still_applied").await
        {
            let changes = Changes::default();
            let (mut seen, mut gaps) = (None, Gaps::default());
            follow_once(&db, &changes, &mut seen, &mut gaps).await.unwrap();
            let late = changes.subscribe("prop_late");
            let woke = late.notified();
            tokio::pin!(woke);
            woke.as_mut().enable();
            let log = |id: &'static str| crate::store::probe::log_change(id);
            if db.is_postgres() {
                // The first entry's transaction stays open while a second commits.
                let mut first = db.begin().await.unwrap();
                log("prop_late").run(&mut first).await;
                let mut second = db.begin().await.unwrap();
                log("prop_early").run(&mut second).await;
                second.commit().await.unwrap();
                follow_once(&db, &changes, &mut seen, &mut gaps).await.unwrap();
                assert!(!gaps.0.is_empty(), "the open transaction's entry is a gap");
                first.commit().await.unwrap();
            } else {
                let mut tx = db.begin().await.unwrap();
                log("prop_late").run(&mut tx).await;
                tx.commit().await.unwrap();
            }
            follow_once(&db, &changes, &mut seen, &mut gaps).await.unwrap();
            tokio::time::timeout(Duration::from_millis(200), woke).await.expect("the late entry was applied");
            assert!(gaps.0.is_empty(), "{}: {gaps:?}", db.backend);
            db.finish().await;
        }
    }

    #[tokio::test]
    async fn entries_are_dropped_with_their_waiters() {
        let changes = Changes::default();
        drop(changes.subscribe("prop_x"));
        assert_eq!(changes.watched(), 0);
        changes.publish("prop_x");
        assert!(changes.inner.by_proposal.lock().unwrap().is_empty());
    }
}
