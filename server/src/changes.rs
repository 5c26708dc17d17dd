//! Change notifications for long-polling: a waiter subscribes to one
//! proposal, a writer publishes after its transaction commits, and every
//! waiter on that proposal wakes at once — no sleep loops.
//!
//! In-process only: with several server instances (PostgreSQL), this is fed
//! by `LISTEN/NOTIFY` instead.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::Notify;

#[derive(Clone, Default)]
pub struct Changes {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    by_proposal: Mutex<HashMap<String, Weak<Notify>>>,
    /// Wakes whoever watches every proposal of every tenant (the queue page).
    any: Notify,
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

    /// Wakes every waiter on `proposal_id` and every queue watcher.
    pub fn publish(&self, proposal_id: &str) {
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
        self.inner.any.notify_waiters();
    }

    /// Waits for the next change to any proposal.
    pub async fn any(&self) {
        self.inner.any.notified().await
    }

    /// Number of proposals with live waiters (for metrics and tests).
    pub fn watched(&self) -> usize {
        self.inner.by_proposal.lock().expect("changes lock").values().filter(|w| w.strong_count() > 0).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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

    #[tokio::test]
    async fn entries_are_dropped_with_their_waiters() {
        let changes = Changes::default();
        drop(changes.subscribe("prop_x"));
        assert_eq!(changes.watched(), 0);
        changes.publish("prop_x");
        assert!(changes.inner.by_proposal.lock().unwrap().is_empty());
    }
}
