//! Payments in flight first: while a commit runs, the background passes
//! (reconciliation, the transparency log, the notifiers, the WAL
//! checkpointer) wait before their next step, for at most [`MAX_YIELD`]
//! (docs/DECISIONS.md, "Background passes yield to commits").
//!
//! On SQLite every write queues on one connection and every `fsync` on one
//! disk, and on this project's two-core machines every thread queues for a
//! CPU: a background write or burst of reads that starts while a commit is
//! between its authorization and its outcome makes the commit wait behind
//! it (docs/BENCHMARKS.md, "Commit latency"). The passes lose nothing by
//! starting a few milliseconds later; an agent waiting on its payment does.
//!
//! A commit holds a [`Foreground`] for its whole use case. A pass calls
//! [`Priority::yield_to_foreground`] before each step: it returns at once
//! when no commit runs, else when the last one ends, or after
//! [`MAX_YIELD`] whatever happens, so that a steady stream of commits
//! slows the passes down and never stops them. It does not preempt a step
//! that has started.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// The longest a background step waits for the commits to end.
pub const MAX_YIELD: Duration = Duration::from_millis(10);

/// How many commits run in this process, and a wake-up for when none does.
#[derive(Debug, Default)]
pub struct Priority {
    running: AtomicUsize,
    idle: Notify,
}

/// A commit running (see the module's doc); dropped when it ends.
#[must_use = "the commit has priority only while this is held"]
pub struct Foreground<'a>(&'a Priority);

impl Priority {
    /// Marks foreground work until the guard is dropped.
    pub fn foreground(&self) -> Foreground<'_> {
        self.running.fetch_add(1, Ordering::AcqRel);
        Foreground(self)
    }

    /// Whether foreground work runs now.
    pub fn busy(&self) -> bool {
        self.running.load(Ordering::Acquire) > 0
    }

    /// Waits until no foreground work runs, at most [`MAX_YIELD`]. Returns
    /// whether it waited.
    pub async fn yield_to_foreground(&self) -> bool {
        self.wait_idle(MAX_YIELD).await
    }

    /// Waits until no foreground work runs, at most `bound`.
    async fn wait_idle(&self, bound: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + bound;
        let mut waited = false;
        loop {
            // Registered before the check: an end between the two still wakes it.
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if !self.busy() {
                return waited;
            }
            waited = true;
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                return waited;
            }
        }
    }
}

impl Drop for Foreground<'_> {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn a_background_step_waits_for_the_last_commit_to_end_and_no_longer() {
        let priority = Arc::new(Priority::default());
        assert!(!priority.yield_to_foreground().await, "nothing runs: no wait");

        // A bound no test run reaches: only the commits' end can wake it.
        let bound = Duration::from_secs(600);
        let first = priority.foreground();
        let second = priority.foreground();
        let waiter = {
            let priority = priority.clone();
            tokio::spawn(async move { priority.wait_idle(bound).await })
        };
        tokio::time::sleep(Duration::from_millis(5)).await;
        drop(first);
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(!waiter.is_finished(), "one commit still runs");
        drop(second);
        let waited = tokio::time::timeout(Duration::from_secs(30), waiter)
            .await
            .expect("woken when the last commit ended, not at the bound")
            .unwrap();
        assert!(waited);
        assert!(!priority.busy());
    }

    #[tokio::test]
    async fn a_commit_that_never_ends_holds_a_step_back_for_the_bound_only() {
        let priority = Priority::default();
        let _forever = priority.foreground();
        let start = tokio::time::Instant::now();
        let waited = tokio::time::timeout(Duration::from_secs(5), priority.yield_to_foreground())
            .await
            .expect("the step goes on after the bound");
        assert!(waited);
        assert!(start.elapsed() >= MAX_YIELD, "it waited the bound out: {:?}", start.elapsed());
    }
}
