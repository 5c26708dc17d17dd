//! Group commit for new proposals: concurrent `POST /api/v1/proposals`
//! requests are stored together, in one write transaction and one `fsync`.
//!
//! SQLite has one writer, and every statement is a round trip to its
//! connection's thread (docs/BENCHMARKS.md, "Intake"). Alone, a proposal
//! holds the writer for `BEGIN`, its rows and `COMMIT`; in a batch it holds
//! it for its rows only. No request waits for a batch to fill: the worker
//! takes whatever is queued the moment the writer is free, so a lone
//! request is written at once, and under load the batches grow by
//! themselves.
//!
//! Nothing is answered before its batch has committed. When one proposal
//! of a batch fails, the batch is rolled back and each of its proposals is
//! stored again alone, so one bad row cannot fail its neighbours. When the
//! worker is not running (the CLI's `demo`, or after shutdown began),
//! proposals are stored alone, directly.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use tokio::sync::{mpsc, oneshot};

use crate::config::Config;
use crate::decision::approval::keys::Keys;
use crate::intake::proposals::{NewProposalJob, ProposeError};
use crate::platform::shutdown::Shutdown;
use crate::store::proposals::ProposalRow;
use crate::store::Store;

/// The most proposals written in one transaction.
const MAX_BATCH: usize = 64;
/// Requests that may wait for the writer before senders wait for room.
const QUEUE: usize = 1_024;

type Reply = oneshot::Sender<Result<Option<ProposalRow>, ProposeError>>;

pub struct Intake {
    tx: mpsc::Sender<(NewProposalJob, Reply)>,
    rx: Mutex<Option<mpsc::Receiver<(NewProposalJob, Reply)>>>,
    running: AtomicBool,
    /// The most proposals one transaction has held so far (the tests read it).
    largest_batch: AtomicUsize,
}

impl Default for Intake {
    fn default() -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        Intake { tx, rx: Mutex::new(Some(rx)), running: AtomicBool::new(false), largest_batch: AtomicUsize::new(0) }
    }
}

impl Intake {
    /// Stores `job` (with the worker's next batch when it runs) and returns
    /// the stored row; `None`: the identical request already exists in this
    /// run, nothing was written.
    pub async fn store(
        &self,
        state: &(impl Store + Config + Keys + crate::decision::approval::receipts::Receipts + crate::notify::Reaching),
        job: NewProposalJob,
    ) -> Result<Option<ProposalRow>, ProposeError> {
        if !self.running.load(Ordering::Acquire) {
            return job.store_alone(state).await;
        }
        let (reply, answer) = oneshot::channel();
        let job = match self.tx.send((job, reply)).await {
            Ok(()) => match answer.await {
                Ok(result) => return result,
                // The worker stopped before taking it: nothing was written.
                Err(_) => return Err(ProposeError::Internal("the intake writer stopped")),
            },
            Err(mpsc::error::SendError((job, _))) => job,
        };
        job.store_alone(state).await
    }

    pub fn largest_batch(&self) -> usize {
        self.largest_batch.load(Ordering::Relaxed)
    }
}

/// Starts [`run`] on a thread of its own. On the shared runtime, every
/// statement's round trip to the SQLite thread would also wait for the
/// worker to be scheduled again behind the HTTP tasks, and the writer would
/// sit idle in between (docs/BENCHMARKS.md, "Intake").
pub fn spawn(
    state: std::sync::Arc<
        impl Store
            + Config
            + Keys
            + Batching
            + crate::decision::approval::receipts::Receipts
            + crate::notify::Reaching
            + Send
            + Sync
            + 'static,
    >,
    shutdown: Shutdown,
) -> tokio::task::JoinHandle<()> {
    tokio::task::spawn_blocking(move || {
        match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(runtime) => runtime.block_on(run(state, shutdown)),
            // Without the worker, proposals are stored one by one.
            Err(e) => tracing::error!(error = %e, "cannot start the intake worker's runtime"),
        }
    })
}

/// The batch writer; runs until `shutdown` fires, then writes what is queued.
pub async fn run(
    state: std::sync::Arc<
        impl Store
            + Config
            + Keys
            + Batching
            + crate::decision::approval::receipts::Receipts
            + crate::notify::Reaching
            + Send
            + Sync
            + 'static,
    >,
    shutdown: Shutdown,
) {
    let Some(mut rx) = state.intake().rx.lock().expect("intake lock").take() else {
        tracing::error!("intake worker started twice");
        return;
    };
    state.intake().running.store(true, Ordering::Release);
    let mut batch = Vec::with_capacity(MAX_BATCH);
    loop {
        tokio::select! {
            n = rx.recv_many(&mut batch, MAX_BATCH) => if n == 0 { break },
            _ = shutdown.wait() => break,
        }
        write(&*state, std::mem::take(&mut batch)).await;
    }
    // New proposals are stored alone from now on; finish what was queued.
    state.intake().running.store(false, Ordering::Release);
    rx.close();
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        write(&*state, std::mem::take(&mut batch)).await;
    }
}

async fn write(
    state: &(impl Store
          + Config
          + Keys
          + Batching
          + crate::decision::approval::receipts::Receipts
          + crate::notify::Reaching),
    batch: Vec<(NewProposalJob, Reply)>,
) {
    state.intake().largest_batch.fetch_max(batch.len(), Ordering::Relaxed);
    match write_together(state, &batch).await {
        Ok(stored) => {
            for ((_, reply), stored) in batch.into_iter().zip(stored) {
                let _ = reply.send(Ok(stored));
            }
        }
        Err(e) if batch.len() == 1 => {
            if let Some((_, reply)) = batch.into_iter().next() {
                let _ = reply.send(Err(e));
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, proposals = batch.len(), "batch rolled back; storing its proposals one by one");
            for (job, reply) in batch {
                let _ = reply.send(job.store_alone(state).await);
            }
        }
    }
}

async fn write_together(
    state: &(impl Store + Config + Keys + crate::decision::approval::receipts::Receipts + crate::notify::Reaching),
    batch: &[(NewProposalJob, Reply)],
) -> Result<Vec<Option<ProposalRow>>, ProposeError> {
    let mut tx = state.db().begin().await?;
    let jobs: Vec<&NewProposalJob> = batch.iter().map(|(job, _)| job).collect();
    let stored = NewProposalJob::insert_all(&jobs, state, &mut tx).await?;
    tx.commit().await?;
    Ok(stored)
}

/// Group commit of new proposals (`intake`).
pub trait Batching {
    fn intake(&self) -> &crate::intake::proposals::group_commit::Intake;
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::platform::deps::*;
    use crate::store::audit::{self, Verification};
    use serde_json::json;

    async fn demo_state(
    ) -> (std::sync::Arc<crate::platform::services::Services>, crate::platform::shutdown::Trigger, tempfile::TempDir)
    {
        let dir = tempfile::tempdir().expect("temp dir");
        let settings = crate::config::Settings { data_dir: dir.path().to_owned(), ..Default::default() };
        let (state, trigger) = crate::platform::testing::services_with(settings).await;
        crate::platform::demo::load(&state).await.expect("demo");
        (state, trigger, dir)
    }

    async fn demo_agent(state: &impl Store) -> crate::intake::proposals::AgentPrincipal {
        let mut conn = state.db().reader().await.unwrap();
        crate::store::directory::agent(&mut conn, "demo", "payout-bot").await.unwrap().unwrap().into()
    }

    fn body(run: &str) -> serde_json::Value {
        json!({"run_id": run, "amount_minor": 25000, "currency": "USD",
               "source_account": "acct_demo000000001234", "destination": "ba_northwind0007",
               "reference": "Invoice", "purpose_code": "vendor"})
    }

    async fn count(state: &impl Store) -> i64 {
        crate::store::probe::count(state.db(), "proposals").await
    }

    async fn chain_intact(state: &impl Store) {
        let verdict = audit::verify(&state.db().read).await.unwrap();
        assert!(matches!(verdict, Verification::Intact { .. }), "{verdict:?}");
    }

    /// Whether `wake` holds a permit (a waiting worker would run a pass).
    async fn woken(wake: &tokio::sync::Notify) -> bool {
        tokio::time::timeout(std::time::Duration::from_millis(50), wake.notified()).await.is_ok()
    }

    /// A new proposal wakes the Slack and notification workers only when
    /// its tenant posts to Slack or can reach someone: otherwise each pass
    /// would claim nothing, one write per intake batch on SQLite.
    #[tokio::test]
    async fn a_new_proposal_wakes_only_the_workers_that_can_have_work() {
        let (state, _trigger, _dir) = demo_state().await;
        let agent = demo_agent(&state).await;
        crate::intake::proposals::propose(&state, &agent, &body("quiet"), state.now()).await.unwrap();
        assert!(!woken(&state.slack().wake).await, "no Slack channel: the Slack worker sleeps on");
        assert!(!woken(&state.reach().wake).await, "nobody reachable: the notification worker sleeps on");

        let dir = tempfile::tempdir().expect("temp dir");
        let mut settings = crate::config::Settings { data_dir: dir.path().to_owned(), ..Default::default() };
        settings.slack.webhook_url = Some("http://127.0.0.1:9/slack".to_owned().into());
        let (state, _trigger) = crate::platform::testing::services_with(settings).await;
        crate::platform::demo::load(&state).await.expect("demo");
        let agent = demo_agent(&state).await;
        crate::intake::proposals::propose(&state, &agent, &body("posted"), state.now()).await.unwrap();
        assert!(woken(&state.slack().wake).await, "a card was queued: the Slack worker is woken");
    }

    #[tokio::test]
    async fn concurrent_proposals_are_all_stored_once_with_an_intact_chain() {
        let (state, trigger, _dir) = demo_state().await;
        let agent = demo_agent(&state).await;
        let before = count(&state).await;
        let worker = tokio::spawn(run(state.clone(), state.shutdown().clone()));
        while !state.intake().running.load(Ordering::Acquire) {
            tokio::task::yield_now().await;
        }
        let mut tasks = Vec::new();
        for i in 0..60 {
            let (state, agent) = (state.clone(), agent.clone());
            // requests come in identical pairs (same run, same body): each pair collapses
            let run = format!("run-{}", i / 2);
            tasks.push(tokio::spawn(async move {
                crate::intake::proposals::propose(&state, &agent, &body(&run), state.now()).await.map(|p| match p {
                    crate::intake::proposals::Proposed::Created(v) => (true, v.id),
                    crate::intake::proposals::Proposed::Existing(v) => (false, v.id),
                })
            }));
        }
        let mut ids = std::collections::BTreeMap::<String, Vec<bool>>::new();
        for t in tasks {
            let (created, id) = t.await.unwrap().expect("stored");
            ids.entry(id).or_default().push(created);
        }
        let distinct = ids.len() as i64;
        assert_eq!(distinct, 30);
        assert!(ids.values().all(|c| c.iter().filter(|c| **c).count() == 1), "each id created exactly once: {ids:?}");
        assert_eq!(count(&state).await, before + distinct);
        assert!(state.intake().largest_batch() > 1, "requests were batched: {}", state.intake().largest_batch());
        chain_intact(&state).await;

        // After shutdown the worker is gone and proposals are stored alone.
        trigger.fire();
        worker.await.unwrap();
        assert!(!state.intake().running.load(Ordering::Acquire));
        let late = crate::intake::proposals::propose(&state, &agent, &body("late"), state.now()).await;
        assert!(matches!(late, Ok(crate::intake::proposals::Proposed::Created(_))));
        chain_intact(&state).await;
    }

    #[tokio::test]
    async fn one_failing_proposal_does_not_fail_its_batch() {
        let (state, _trigger, _dir) = demo_state().await;
        let agent = demo_agent(&state).await;
        let taken = crate::store::probe::texts(state.db(), "SELECT id FROM proposals LIMIT 1").await.remove(0);
        let mut jobs = Vec::new();
        for run in ["a", "b", "c", "c"] {
            jobs.push(crate::intake::proposals::prepare(&state, &agent, &body(run), state.now()).await.unwrap());
        }
        // b reuses an existing proposal's id: its insert fails (primary key)
        jobs[1].reuse_id_for_test(&taken);
        let mut answers = Vec::new();
        let batch = jobs
            .into_iter()
            .map(|job| {
                let (reply, answer) = oneshot::channel();
                answers.push(answer);
                (job, reply)
            })
            .collect();
        let before = count(&state).await;
        write(&state, batch).await;
        let mut results = Vec::new();
        for a in answers {
            results.push(a.await.expect("answered"));
        }
        assert!(matches!(results[0], Ok(Some(_))), "{:?}", results[0]);
        assert!(matches!(results[1], Err(ProposeError::Store(_))), "{:?}", results[1]);
        assert!(matches!(results[2], Ok(Some(_))), "{:?}", results[2]);
        assert!(matches!(results[3], Ok(None)), "the identical request of the same run: {:?}", results[3]);
        assert_eq!(count(&state).await, before + 2);
        chain_intact(&state).await;
    }
}
