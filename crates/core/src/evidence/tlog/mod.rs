//! The transparency log (docs/EVIDENCE.md): every audit entry is
//! a leaf of an append-only Merkle tree (RFC 9162 section 2.1), leaf `i`
//! being audit entry `seq = i + 1` (its hashed body, the bytes its chain
//! hash covers). A sequencer in every instance appends the entries written
//! since its last pass and signs a checkpoint of the new size (C2SP
//! `tlog-checkpoint` as a `signed-note`, Ed25519): at most one instance
//! appends at a time, so several instances on PostgreSQL grow one tree.
//!
//! Writes stay out of the hot paths: an audit entry is written as before,
//! and becomes a leaf within [`PASS_EVERY`] (a batch per transaction).

pub use crate::domain::merkle;
pub mod note;

use std::time::Duration;

use crate::platform::clock::Clock;
use crate::platform::shutdown::Shutdown;
use crate::store::tlog::Appended;
use crate::store::Store;
use note::NoteSigner;

/// How often the sequencer looks for new audit entries: a checkpoint at
/// most this long after an entry is written, while entries keep coming.
pub const PASS_EVERY: Duration = Duration::from_secs(1);
/// Leaves appended per transaction: a backlog is logged in several.
pub const BATCH: u64 = 4096;

/// The log's signing side: its note key, named by its origin.
pub trait Log {
    fn log_signer(&self) -> &NoteSigner;
}

/// Appends every audit entry not yet logged, a batch per transaction, and
/// signs each new size. Returns the log's size after the pass.
///
/// A batch that was not full ends the pass, though entries may have come
/// in meanwhile: they wait for the next pass. Under steady load there is
/// always a new entry, and going on until there was none made one
/// transaction and one signed checkpoint per intake batch — about a hundred
/// a second, each holding SQLite's one writer (measured, docs/BENCHMARKS.md
/// "Intake throughput"), where the design is one a second.
pub async fn catch_up(state: &(impl Store + Clock + Log)) -> crate::store::Result<u64> {
    // PostgreSQL: entries whose linking after their commit failed (or whose
    // process ended first) are linked here before they are logged.
    crate::store::audit::link(state.db()).await?;
    if !crate::store::tlog::behind(&state.db().read).await? {
        return crate::store::tlog::size(&state.db().read).await;
    }
    loop {
        state.db().priority.yield_to_foreground().await;
        let signer = state.log_signer();
        let sign = |size: u64, root: merkle::Hash| {
            signer.sign(&note::Checkpoint { origin: signer.name().to_owned(), size, root })
        };
        match crate::store::tlog::append(state.db(), &sign, BATCH, state.now()).await? {
            Appended::Grew { appended, .. } if appended == BATCH => continue,
            Appended::Grew { size, .. } => return Ok(size),
            // Another pass (this process's sequencer, or another instance)
            // appended first, from entries it read before some of ours
            // were written: go on from its tree, or an exporter that needs
            // our entries logged would find them missing.
            Appended::Raced => continue,
            Appended::Nothing => return crate::store::tlog::size(&state.db().read).await,
            Appended::Refused { seq, size, problem } => {
                // Never logged: the chain is broken there (`audit verify`
                // names it too). Loud, once per pass, until an operator acts.
                tracing::error!(seq, problem, "audit entry not logged: the audit chain is broken there");
                return Ok(size);
            }
        }
    }
}

/// The sequencer: a pass every [`PASS_EVERY`] until shutdown.
pub async fn run(state: std::sync::Arc<impl Store + Clock + Log + Send + Sync + 'static>, shutdown: Shutdown) {
    crate::platform::shutdown::every(PASS_EVERY, &shutdown, || async {
        if let Err(e) = catch_up(&*state).await {
            tracing::warn!(error = %e, "transparency log pass failed; retrying");
        }
        if let Err(e) = crate::store::audit::tidy(state.db()).await {
            tracing::warn!(error = %e, "cannot vacuum the audit entries waiting to be linked; retrying");
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::audit::{self, AuditEntry};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// Entries keep coming while a pass runs (an intake under load): the
    /// pass logs what it found, signs once and ends; it does not chase them.
    #[tokio::test]
    async fn a_pass_signs_once_and_ends_while_entries_keep_coming() {
        let dir = tempfile::tempdir().unwrap();
        let (state, _trigger) = crate::platform::testing::services(dir.path()).await;
        let entry = |n: usize| AuditEntry {
            tenant_id: None,
            actor: "cli".into(),
            action: format!("e{n}"),
            proposal_id: None,
            request_hash: None,
            data: serde_json::json!({}),
        };
        for n in 0..5 {
            audit::append_alone(&state.db().write, &entry(n)).await.unwrap();
        }
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (state, stop) = (state.clone(), stop.clone());
            tokio::spawn(async move {
                let mut n = 5;
                while !stop.load(Ordering::Relaxed) {
                    audit::append_alone(&state.db().write, &entry(n)).await.unwrap();
                    n += 1;
                    tokio::task::yield_now().await;
                }
            })
        };
        let checkpoints = || async {
            crate::store::scalar::<i64>("SELECT COUNT(*) FROM tlog_checkpoints")
                .fetch_one(&state.db().read)
                .await
                .unwrap()
        };
        let size = tokio::time::timeout(std::time::Duration::from_secs(10), catch_up(&*state))
            .await
            .expect("a pass ends while entries keep coming")
            .unwrap();
        assert!(size >= 5, "the entries there when it began are logged: {size}");
        assert_eq!(checkpoints().await, 1, "one checkpoint for the pass");
        stop.store(true, Ordering::Relaxed);
        writer.await.unwrap();
        let total =
            crate::store::scalar::<i64>("SELECT COUNT(*) FROM audit_log").fetch_one(&state.db().read).await.unwrap();
        assert_eq!(catch_up(&*state).await.unwrap(), total as u64, "the next pass logs the rest");
    }
}
