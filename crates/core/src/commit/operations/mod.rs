//! Operations after they are recorded: the rail call, its outcome, and
//! reconciliation (SPEC §6 outcomes, §7, §8).
//!
//! | rail says | operation | proposal |
//! |---|---|---|
//! | accepted and settled (`paid`) | `succeeded` | `succeeded` |
//! | accepted, not settled (`pending`) | `accepted` | `executing` |
//! | typed decline | `failed` + code | `failed` (budget released) |
//! | timeout, dropped, 5xx, unparseable | `unknown` | `unknown` |
//! | reversal done | `succeeded` | `succeeded`; the reversed transfer's proposal `reversed` (when reversed in full) |
//! | reversal past the cutoff | `too_late` + `action_required: escalate_to_ops` | `failed` |
//!
//! Reconciliation reads the rail's own record by idempotency key
//! (`transfer_group`): a record must match the operation (amount, currency,
//! destination) to settle it; none found inside the resubmit window → the
//! same request again with the same key; none found past it → `needs_review`,
//! decided by a human ([`resolve`]).
//!
//! One rail call at a time per operation, across processes: the commit
//! records its operation claimed for [`rail_call_lease`], and a
//! reconciliation claims it the same way before it asks the rail
//! ([`store::operations::claim`], a compare-and-set); writing the outcome
//! releases it. With several instances, each operation is reconciled by one.

use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use crate::config::Config;
use crate::domain::{ProposalStatus, Role};
use crate::platform::changes::Notifier;
use crate::platform::clock::Clock;
use crate::rail::InFlight;
use crate::rail::Payments;
use crate::rail::{Lookup, RailStatus, RailTransfer};
use crate::store::Store;
use crate::store::{
    self,
    audit::AuditEntry,
    operations::{OpStatus, OperationRow, Update},
    StoreError,
};

mod call;
mod resolve;

use call::from_transfer;
pub use call::{call_rail, rail_of, sync_rails, RailOutcome};

pub use resolve::{rail_candidates, resolve, Candidate, Resolution, ResolveError, Resolver};

/// How long one rail call may hold an operation ([`store::operations::claim`]):
/// the whole-request timeout and a margin to record what it answered.
pub fn rail_call_lease(settings: &crate::config::Settings) -> Duration {
    Duration::milliseconds(settings.rail_timeout_ms() as i64 + 5_000)
}

/// How long to wait before looking at an open operation again.
fn next_check(state: &impl Config, op: &OperationRow, now: DateTime<Utc>) -> DateTime<Utc> {
    let base = state.settings().rail.reconcile_interval_secs as i64;
    let backoff = base.saturating_mul(1i64 << op.attempts.clamp(0, 8)).min(300);
    now + Duration::seconds(backoff)
}

/// When a transfer the rail accepted and has not settled is checked next:
/// the longer it has stayed accepted, the less often — half its age, at
/// least the reconciliation interval, at most 5 min. (Checked every
/// interval, a transfer on a rail that settles in days was read some
/// 40,000 times a day.)
fn next_check_accepted(interval_secs: u64, created_at: DateTime<Utc>, now: DateTime<Utc>) -> DateTime<Utc> {
    let interval = Duration::seconds(interval_secs as i64);
    now + ((now - created_at) / 2).min(Duration::seconds(300)).max(interval)
}

/// Writes an outcome: the operation (compare-and-set from the status it was
/// read in), the proposal, the budget and the audit trail, in one transaction.
/// Returns whether anything changed (false: someone else settled it first).
pub async fn record(
    state: &(impl Store + Config + Notifier + crate::decision::approval::receipts::Receipts),
    op: &OperationRow,
    outcome: RailOutcome,
    now: DateTime<Utc>,
) -> crate::store::Result<bool> {
    Ok(record_knowing(state, op, outcome, now, None).await?.moved)
}

/// What [`record_knowing`] did.
#[derive(Debug)]
pub struct Recorded {
    /// Whether anything changed (false: someone else settled it first).
    pub moved: bool,
    /// The proposal as the outcome's transaction left it, read as its last
    /// statement, when it was one command ([`settle_at_once`]): the commit
    /// answers with it instead of reading it again.
    pub proposal: Option<store::proposals::ProposalBundle>,
}

/// What the commit knows of its payment when the rail answers: the
/// proposal's status and request hash, and the payment's newest receipt
/// (the authorization it just wrote) with its audit entry's number.
#[derive(Debug, Clone)]
pub struct Known {
    pub proposal_status: ProposalStatus,
    pub request_hash: String,
    pub receipt_seq: i64,
    pub receipt: String,
}

/// [`record`], with what the caller knows: on SQLite the outcome's
/// transaction is then one command ([`settle_at_once`]), which also reads
/// the proposal back.
pub async fn record_knowing(
    state: &(impl Store + Config + Notifier + crate::decision::approval::receipts::Receipts),
    op: &OperationRow,
    outcome: RailOutcome,
    now: DateTime<Utc>,
    known: Option<&Known>,
) -> crate::store::Result<Recorded> {
    let (to, update, proposal_to) = match &outcome {
        RailOutcome::Succeeded { reference, .. } => (
            OpStatus::Succeeded,
            Update { rail_reference: Some(reference), attempted: true, ..Default::default() },
            ProposalStatus::Succeeded,
        ),
        RailOutcome::Accepted { reference } => (
            OpStatus::Accepted,
            Update {
                rail_reference: Some(reference),
                attempted: true,
                next_check_at: Some(now + Duration::seconds(state.settings().rail.reconcile_interval_secs as i64)),
                ..Default::default()
            },
            ProposalStatus::Executing,
        ),
        RailOutcome::Failed { code, message } => (
            OpStatus::Failed,
            Update { error: Some((code, message)), attempted: true, ..Default::default() },
            ProposalStatus::Failed,
        ),
        RailOutcome::TooLate => (
            OpStatus::TooLate,
            Update {
                error: Some(("too_late", "The transfer is past the rail's reversal cutoff: escalate to operations.")),
                attempted: true,
                ..Default::default()
            },
            ProposalStatus::Failed,
        ),
        RailOutcome::Unknown(cause) => {
            tracing::warn!(operation_id = %op.id, ?cause, "rail outcome unknown; reconciliation will settle it");
            (
                OpStatus::Unknown,
                Update { attempted: true, next_check_at: Some(next_check(state, op, now)), ..Default::default() },
                ProposalStatus::Unknown,
            )
        }
    };
    let data = json!({"rail_outcome": format!("{outcome:?}")});
    if let Some(known) = known.filter(|_| !state.db().is_postgres()) {
        let settled = Settled { op, to, update: &update, proposal_to, actor: "system:rail" };
        if let Some(proposal) = settle_at_once(state, &settled, data.clone(), now, known).await? {
            return Ok(Recorded { moved: true, proposal });
        }
    }
    let moved = settle(state, op, to, &update, proposal_to, "system:rail", data, now).await?;
    Ok(Recorded { moved, proposal: None })
}

/// An outcome to write ([`settle_at_once`]).
struct Settled<'a> {
    op: &'a OperationRow,
    to: OpStatus,
    update: &'a Update<'a>,
    proposal_to: ProposalStatus,
    actor: &'a str,
}

/// [`settle`] on SQLite as one command (`store::guarded`, docs/DECISIONS.md
/// "The commit's writes in one command on SQLite"), from what the commit
/// knows instead of reads inside the transaction; each of those reads is a
/// guard. `None` when one did not hold, or this process remembers no head
/// of the audit chain, or the outcome is a reversal's success (it moves
/// another proposal too): nothing was changed, [`settle`] runs. Else the
/// proposal as the transaction left it (its last statement reads it).
async fn settle_at_once(
    state: &(impl Store + Notifier + crate::decision::approval::receipts::Receipts),
    s: &Settled<'_>,
    data: serde_json::Value,
    now: DateTime<Utc>,
    known: &Known,
) -> crate::store::Result<Option<Option<store::proposals::ProposalBundle>>> {
    use crate::store::guarded::Guarded;
    let Settled { op, to, update, proposal_to, actor } = *s;
    if to == OpStatus::Succeeded && op.kind == "reversal" {
        return Ok(None);
    }
    let from = known.proposal_status;
    let entry = crate::decision::approval::receipts::sign(
        state,
        &outcome_entry(op, to, actor, &known.request_hash, outcome_data(data, op, to, update, from, proposal_to)),
        Some(&known.receipt),
        now,
    )?;
    let mut g = Guarded::new();
    g.statement(|q| store::operations::push_set_status(q, &op.id, &[op.status], to, update, now))
        .changed_one("the operation as read");
    if from != proposal_to && from.can_become(proposal_to) {
        g.statement(|q| store::proposals::push_transition(q, &op.proposal_id, &[from], proposal_to, now))
            .changed_one("the proposal as known");
    } else {
        g.statement(|q| store::proposals::push_touch(q, &op.proposal_id, now));
        g.guard("the proposal as known", |q| store::proposals::push_status_is(q, &op.proposal_id, from));
    }
    if let (OpStatus::Failed | OpStatus::TooLate, Some(day)) = (to, &op.budget_day) {
        g.statement(|q| store::operations::push_release(q, &op.tenant_id, &op.currency, day, op.amount_minor));
    }
    if op.invoice_number.is_some() && matches!(to, OpStatus::Succeeded | OpStatus::Failed | OpStatus::TooLate) {
        // The registered invoice's reservation: paid, or given back.
        g.statement(|q| {
            store::invoices::push_settle(q, op, to, now);
        })
        .changed_one("the invoice reservation");
    }
    g.guard("no receipt since", |q| store::audit::push_receipt_seen(q, &op.proposal_id, known.receipt_seq));
    // Read after every write it shows (the entry appended last is not in it).
    g.statement(|q| store::proposals::push_bundle(q, &op.tenant_id, &op.proposal_id));
    g.append_last(&entry);
    let Some(committed) = g.commit(&state.db().write).await? else {
        return Ok(None);
    };
    state.changes().publish(&op.proposal_id);
    Ok(Some(store::proposals::ProposalBundle::from_rows(&committed.rows)?))
}

/// The audit entry of an operation's move to `to` (its receipt is added
/// when it is appended or signed).
fn outcome_entry(
    op: &OperationRow,
    to: OpStatus,
    actor: &str,
    request_hash: &str,
    data: serde_json::Value,
) -> AuditEntry {
    AuditEntry {
        tenant_id: Some(op.tenant_id.clone()),
        actor: actor.to_owned(),
        action: format!("operation.{}", to.as_str()),
        proposal_id: Some(op.proposal_id.clone()),
        request_hash: Some(request_hash.to_owned()),
        data,
    }
}

/// The outcome's audit data: what the caller gave and the transition.
fn outcome_data(
    mut data: serde_json::Value,
    op: &OperationRow,
    to: OpStatus,
    update: &Update<'_>,
    from: ProposalStatus,
    proposal_to: ProposalStatus,
) -> serde_json::Value {
    if let Some(obj) = data.as_object_mut() {
        obj.insert("operation_id".into(), json!(op.id));
        obj.insert("idempotency_key".into(), json!(op.idempotency_key));
        obj.insert("operation_from".into(), json!(op.status));
        obj.insert("operation_to".into(), json!(to));
        obj.insert("from".into(), json!(from));
        obj.insert("to".into(), json!(proposal_to));
        obj.insert("rail_reference".into(), json!(update.rail_reference.or(op.rail_reference.as_deref())));
        obj.insert("error_code".into(), json!(update.error.map(|(c, _)| c)));
        if to == OpStatus::Failed && op.budget_day.is_some() {
            obj.insert("budget_released".into(), json!(op.amount_minor));
        }
    }
    data
}

/// Moves the operation from the status it was read in to `to` and the
/// proposal to `proposal_to`, in one transaction with the audit entry.
#[allow(clippy::too_many_arguments)]
async fn settle(
    state: &(impl Store + Notifier + crate::decision::approval::receipts::Receipts),
    op: &OperationRow,
    to: OpStatus,
    update: &Update<'_>,
    proposal_to: ProposalStatus,
    actor: &str,
    data: serde_json::Value,
    now: DateTime<Utc>,
) -> crate::store::Result<bool> {
    let mut tx = state.db().begin().await?;
    if !store::operations::set_status(&mut tx, &op.id, &[op.status], to, update, now).await? {
        return Ok(false);
    }
    let proposal = store::proposals::get_in(&mut tx, &op.tenant_id, &op.proposal_id)
        .await?
        .ok_or_else(|| StoreError::corrupt("operations.proposal_id", "names no proposal"))?;
    if proposal.status != proposal_to && proposal.status.can_become(proposal_to) {
        store::proposals::transition(&mut tx, &proposal.id, &[proposal.status], proposal_to, now).await?;
    } else {
        store::proposals::touch(&mut tx, &proposal.id, now).await?;
    }
    if to == OpStatus::Failed || to == OpStatus::TooLate {
        if let Some(day) = &op.budget_day {
            store::operations::release(&mut tx, &op.tenant_id, &op.currency, day, op.amount_minor).await?;
        }
    }
    // A registered invoice's reservation: paid on success, given back on failure.
    store::invoices::settle(&mut tx, op, to, now).await?;
    let mut reversed_proposal = None;
    if to == OpStatus::Succeeded && op.kind == "reversal" {
        reversed_proposal = mark_reversed(state, &mut tx, op, now).await?;
    }
    let data = outcome_data(data, op, to, update, proposal.status, proposal_to);
    crate::decision::approval::receipts::append(
        state,
        &mut tx,
        &outcome_entry(op, to, actor, &proposal.request_hash, data),
        now,
    )
    .await?;
    tx.commit().await?;
    state.changes().publish(&op.proposal_id);
    if let Some(id) = reversed_proposal {
        state.changes().publish(&id);
    }
    Ok(true)
}

/// A reversal succeeded: the transfer it reversed, when reversed in full,
/// moves to `reversed`. Returns that proposal's id when it moved.
async fn mark_reversed(
    state: &impl crate::decision::approval::receipts::Receipts,
    tx: &mut crate::store::Conn,
    op: &OperationRow,
    now: DateTime<Utc>,
) -> crate::store::Result<Option<String>> {
    let Some(reference) = op.reverses.as_deref() else { return Ok(None) };
    let Some(original) = store::operations::by_rail_reference(&mut *tx, &op.tenant_id, reference).await? else {
        return Ok(None);
    };
    // The money came back: what it paid of a registered invoice is owed again.
    store::invoices::unpay(tx, &original, op.amount_minor, now).await?;
    if op.amount_minor < original.amount_minor {
        return Ok(None);
    }
    let moved = store::proposals::transition(
        tx,
        &original.proposal_id,
        &[ProposalStatus::Succeeded],
        ProposalStatus::Reversed,
        now,
    )
    .await?;
    if !moved {
        return Ok(None);
    }
    let row = store::proposals::get_in(tx, &op.tenant_id, &original.proposal_id)
        .await?
        .ok_or_else(|| StoreError::corrupt("operations.proposal_id", "names no proposal"))?;
    crate::decision::approval::receipts::append(
        state,
        tx,
        &AuditEntry {
            tenant_id: Some(op.tenant_id.clone()),
            actor: "system:rail".into(),
            action: "proposal.reversed".into(),
            proposal_id: Some(original.proposal_id.clone()),
            request_hash: Some(row.request_hash),
            data: json!({"from": ProposalStatus::Succeeded, "to": ProposalStatus::Reversed,
                         "reversal_proposal_id": op.proposal_id, "reversal_operation_id": op.id}),
        },
        now,
    )
    .await?;
    Ok(Some(original.proposal_id))
}

/// What one reconciliation pass did to one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reconciled {
    /// Skipped: a rail call for it is running (in this process, or claimed by
    /// another: [`store::operations::claim`]).
    InFlight,
    /// Nothing settled yet (the rail could not be read, or still pending).
    StillOpen,
    /// Moved to this status.
    Moved(OpStatus),
    /// Another worker settled it first.
    Raced,
}

/// Reconciles one open operation; see the module doc.
pub async fn reconcile_one(
    state: &(impl Store + Config + Notifier + Payments + crate::decision::approval::receipts::Receipts),
    op: &OperationRow,
    now: DateTime<Utc>,
) -> anyhow::Result<Reconciled> {
    if !OpStatus::OPEN.contains(&op.status) {
        return Ok(Reconciled::StillOpen);
    }
    let Some(_guard) = InFlight::claim(state, &op.id) else {
        return Ok(Reconciled::InFlight);
    };
    match reconcile(state, op, None, now, Claim::Take).await? {
        Step::Done(done) => Ok(done),
        Step::Later(check) => {
            store::operations::reschedule(&mut *state.db().writer().await?, &op.id, check.at, check.attempted).await?;
            Ok(Reconciled::StillOpen)
        }
    }
}

/// Whether [`reconcile`] claims the operation itself or its pass did.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Claim {
    Take,
    HeldByPass,
}

#[tracing::instrument(name = "reconcile", skip_all, fields(
    tenant = %op.tenant_id, operation_id = %op.id, proposal_id = %op.proposal_id, reconciliation = true,
    operation_status = tracing::field::Empty,
    outcome = tracing::field::Empty, otel.status_code = tracing::field::Empty,
))]
async fn reconcile(
    state: &(impl Store + Config + Notifier + Payments + crate::decision::approval::receipts::Receipts),
    op: &OperationRow,
    proposal: Option<&store::proposals::ProposalRow>,
    now: DateTime<Utc>,
    claim: Claim,
) -> anyhow::Result<Step> {
    let result = crate::platform::metrics::use_case("reconcile", async {
        if claim == Claim::Take && !take(state, op, now).await? {
            return Ok(Step::Done(Reconciled::InFlight));
        }
        // Its reads and its write wait for a moment between commits
        // (store::priority).
        state.db().priority.yield_to_foreground().await;
        let read;
        let row = match proposal {
            Some(row) => row,
            None => {
                read = store::proposals::get(&state.db().read, &op.tenant_id, &op.proposal_id).await?;
                read.as_ref().ok_or_else(|| anyhow::anyhow!("operation {} has no proposal", op.id))?
            }
        };
        reconcile_claimed(state, op, row, now).await
    })
    .await;
    let status = match &result {
        Ok(Step::Done(Reconciled::Moved(to))) => to.as_str(),
        Ok(_) => op.status.as_str(),
        Err(_) => "",
    };
    if !status.is_empty() {
        tracing::Span::current().record("operation_status", status);
    }
    result
}

/// Claims one operation for a rail call across processes (several
/// instances, the CLI); false when another holds it.
async fn take(state: &(impl Store + Config), op: &OperationRow, now: DateTime<Utc>) -> anyhow::Result<bool> {
    let lease = now + rail_call_lease(state.settings());
    state.db().priority.yield_to_foreground().await;
    Ok(store::operations::claim(&mut *state.db().writer().await?, &op.id, now, lease).await?)
}

/// What reconciling a claimed operation did: settled it (or handed it to a
/// human), or leaves it open to be checked again then.
enum Step {
    Done(Reconciled),
    Later(store::operations::NextCheck),
}

/// Reconciles an operation this process has claimed (in memory and in the
/// database). A still-open operation's next check is returned, not written:
/// a pass writes its operations' next checks together.
async fn reconcile_claimed(
    state: &(impl Store + Config + Notifier + Payments + crate::decision::approval::receipts::Receipts),
    op: &OperationRow,
    row: &store::proposals::ProposalRow,
    now: DateTime<Utc>,
) -> anyhow::Result<Step> {
    let later = |attempted| {
        Ok(Step::Later(store::operations::NextCheck { id: op.id.clone(), at: next_check(state, op, now), attempted }))
    };
    let canonical = &row.request;
    let Some(rail) = rail_of(state, op) else {
        return later(false);
    };
    let in_window = now < op.created_at + rail.profile().resubmit_window;

    let outcome = if op.kind == "transfer" {
        let lookup = Lookup {
            key: &op.idempotency_key,
            destination: canonical.destination.id.expose(),
            since: op.created_at - Duration::hours(1),
        };
        match rail.find(&lookup).await {
            Err(cause) => {
                tracing::warn!(operation_id = %op.id, ?cause, "rail record could not be read; will retry");
                return later(true);
            }
            Ok(found) => {
                let destination = canonical.destination.id.expose();
                let (matching, foreign): (Vec<_>, Vec<_>) = found.into_iter().partition(|t| {
                    t.amount_minor == op.amount_minor
                        && t.currency.eq_ignore_ascii_case(&op.currency)
                        && t.destination == destination
                });
                if !foreign.is_empty() || matching.len() > 1 {
                    let why = if foreign.is_empty() { "duplicate_rail_records" } else { "rail_record_mismatch" };
                    tracing::error!(operation_id = %op.id, why, "rail record does not settle the operation");
                    return Ok(Step::Done(review(state, op, why, now).await?));
                }
                match matching.first() {
                    Some(t) => from_transfer(t),
                    None if op.status == OpStatus::Accepted => {
                        tracing::error!(operation_id = %op.id, "accepted transfer missing from the rail's records");
                        return Ok(Step::Done(review(state, op, "rail_record_missing", now).await?));
                    }
                    None if in_window => {
                        tracing::info!(operation_id = %op.id, "no rail record; resubmitting with the same key");
                        call_rail(state, op, row).await
                    }
                    None => return Ok(Step::Done(review(state, op, "no_rail_record", now).await?)),
                }
            }
        }
    } else if in_window {
        // A reversal resubmitted under its key replays the rail's first outcome.
        call_rail(state, op, row).await
    } else {
        return Ok(Step::Done(review(state, op, "no_rail_record", now).await?));
    };
    state.db().priority.yield_to_foreground().await;
    if let (RailOutcome::Accepted { .. }, OpStatus::Accepted) = (&outcome, op.status) {
        let at = next_check_accepted(state.settings().rail.reconcile_interval_secs, op.created_at, now);
        return Ok(Step::Later(store::operations::NextCheck { id: op.id.clone(), at, attempted: false }));
    }
    if let (RailOutcome::Unknown(_), OpStatus::Unknown) = (&outcome, op.status) {
        return later(true);
    }
    let to = match &outcome {
        RailOutcome::Succeeded { .. } => OpStatus::Succeeded,
        RailOutcome::Accepted { .. } => OpStatus::Accepted,
        RailOutcome::Failed { .. } => OpStatus::Failed,
        RailOutcome::TooLate => OpStatus::TooLate,
        RailOutcome::Unknown(_) => OpStatus::Unknown,
    };
    // On SQLite, with the payment's newest receipt read now, the outcome is
    // one command guarded by what was read (see `Known`; a guard that does
    // not hold leaves it to the transaction step by step).
    let known = match state.db().is_postgres() {
        true => None,
        false => match store::audit::last_receipt_seen(&state.db().read, &op.proposal_id).await? {
            (receipt_seq, Some(receipt)) => Some(Known {
                proposal_status: row.status,
                request_hash: row.request_hash.clone(),
                receipt_seq,
                receipt,
            }),
            (_, None) => None,
        },
    };
    let moved = record_knowing(state, op, outcome, now, known.as_ref()).await?.moved;
    Ok(Step::Done(if moved { Reconciled::Moved(to) } else { Reconciled::Raced }))
}

/// Hands an operation to a human: `needs_review` with why.
async fn review(
    state: &(impl Store + Notifier + crate::decision::approval::receipts::Receipts),
    op: &OperationRow,
    why: &'static str,
    now: DateTime<Utc>,
) -> anyhow::Result<Reconciled> {
    let message = match why {
        "no_rail_record" => {
            "The rail has no record under this key and the resubmit window has passed: a human must decide."
        }
        "rail_record_mismatch" => "The rail's record under this key does not match the operation: a human must decide.",
        "duplicate_rail_records" => "The rail holds more than one transfer under this key: a human must decide.",
        _ => "The rail's record is missing: a human must decide.",
    };
    let update = Update { error: Some((why, message)), ..Default::default() };
    let mut read = json!({"why": why});
    if why == "no_rail_record" {
        // The rail, idempotent by key, holds nothing under this one after
        // the window: the call never reached it and no money moved. The
        // receipt says so (docs/EVIDENCE.md, "withheld").
        read["rail_record"] = json!("withheld");
    }
    let moved =
        settle(state, op, OpStatus::NeedsReview, &update, ProposalStatus::NeedsReview, "system:reconcile", read, now)
            .await?;
    Ok(if moved { Reconciled::Moved(OpStatus::NeedsReview) } else { Reconciled::Raced })
}

/// One pass over the open operations that are due. Returns (operation id, result).
///
/// The pass claims its operations in one write and writes the next checks
/// of those still open in one more, whatever their number (one write each
/// before, with its `fsync`, on SQLite's one writer: docs/BENCHMARKS.md
/// "Commit latency"). Their rail reads and outcomes go one at a time, as in
/// [`reconcile_one`].
pub async fn reconcile_due(
    state: &(impl Store + Clock + Config + Notifier + Payments + crate::decision::approval::receipts::Receipts),
    now: DateTime<Utc>,
) -> anyhow::Result<Vec<(String, Reconciled)>> {
    sync_rails(state).await;
    let due = store::operations::due(&state.db().read, now, now, 100).await?;
    let mut done = Vec::with_capacity(due.len());
    let mut mine = Vec::with_capacity(due.len());
    for op in &due {
        if !OpStatus::OPEN.contains(&op.status) {
            done.push((op.id.clone(), Reconciled::StillOpen));
            continue;
        }
        match InFlight::claim(state, &op.id) {
            Some(guard) => mine.push((op, guard)),
            None => done.push((op.id.clone(), Reconciled::InFlight)),
        }
    }
    if mine.is_empty() {
        return Ok(done);
    }
    state.db().priority.yield_to_foreground().await;
    let lease = rail_call_lease(state.settings());
    let ids: Vec<&str> = mine.iter().map(|(op, _)| op.id.as_str()).collect();
    let claimed = store::operations::claim_all(&mut *state.db().writer().await?, &ids, now, now + lease).await?;
    let mut later = Vec::new();
    // The pass's proposals, a statement per tenant instead of one each.
    let mut proposals = std::collections::HashMap::new();
    let mut tenants: Vec<&str> = mine.iter().map(|(op, _)| op.tenant_id.as_str()).collect();
    tenants.sort_unstable();
    tenants.dedup();
    for tenant in tenants {
        let ids: Vec<&str> =
            mine.iter().filter(|(op, _)| op.tenant_id == tenant).map(|(op, _)| op.proposal_id.as_str()).collect();
        for row in store::proposals::get_many(&state.db().read, tenant, &ids).await? {
            proposals.insert(row.id.clone(), row);
        }
    }
    for (op, _guard) in mine {
        if !claimed.contains(&op.id) {
            done.push((op.id.clone(), Reconciled::InFlight));
            continue;
        }
        // The claim covers one rail call begun within its margin; one whose
        // turn comes later is released for the next pass.
        if state.now() - now >= lease - Duration::milliseconds(state.settings().rail_timeout_ms() as i64) {
            later.push(store::operations::NextCheck { id: op.id.clone(), at: op.next_check_at, attempted: false });
            done.push((op.id.clone(), Reconciled::StillOpen));
            continue;
        }
        match reconcile(state, op, proposals.get(&op.proposal_id), now, Claim::HeldByPass).await {
            Ok(Step::Done(result)) => done.push((op.id.clone(), result)),
            Ok(Step::Later(check)) => {
                later.push(check);
                done.push((op.id.clone(), Reconciled::StillOpen));
            }
            Err(e) => tracing::error!(operation_id = %op.id, error = %e, "reconciliation failed"),
        }
    }
    if !later.is_empty() {
        state.db().priority.yield_to_foreground().await;
        store::operations::reschedule_all(&mut *state.db().writer().await?, &later).await?;
    }
    Ok(done)
}

/// The background worker: runs until shutdown, a pass every interval.
pub async fn run(
    state: std::sync::Arc<
        impl Store
            + Clock
            + Config
            + Notifier
            + Payments
            + crate::decision::approval::receipts::Receipts
            + Send
            + Sync
            + 'static,
    >,
    shutdown: crate::platform::shutdown::Shutdown,
) {
    let every = std::time::Duration::from_secs(state.settings().rail.reconcile_interval_secs);
    crate::platform::shutdown::every(every, &shutdown, || async {
        match reconcile_due(&*state, state.now()).await {
            Ok(done) => {
                for (id, result) in done.iter().filter(|(_, r)| matches!(r, Reconciled::Moved(_))) {
                    tracing::info!(operation_id = %id, ?result, "reconciled");
                }
            }
            Err(e) => tracing::error!(error = %e, "reconciliation pass failed"),
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rail::UnknownCause;
    use crate::store::operations::NewOperation;
    use crate::store::proposals::tests::{operation_1, registry, sample, token_1};
    use crate::store::proposals::{insert, insert_token};

    /// op_1, recorded (and due) at `at`, its proposal and token.
    async fn due_operation(state: &crate::platform::services::Services, at: DateTime<Utc>) {
        let mut c = state.db().write.acquire().await.unwrap();
        registry(&mut c).await;
        insert(&mut c, &sample(at)).await.unwrap();
        insert_token(&mut c, &token_1(at)).await.unwrap();
        let op = NewOperation { budget_day: None, ..operation_1(at, at) };
        store::operations::insert(&mut c, &op).await.unwrap().expect("recorded");
    }

    /// A rail holding one pending transfer under every key, to `destination`.
    struct Pending {
        destination: String,
    }

    #[async_trait::async_trait]
    impl crate::rail::Rail for Pending {
        fn profile(&self) -> crate::rail::RailProfile {
            crate::rail::RailProfile {
                kind: crate::rail::RailKind::Simulator,
                resubmit_window: Duration::hours(23),
                reverses: true,
            }
        }
        async fn create_transfer(&self, _: &crate::rail::TransferOrder<'_>) -> crate::rail::CreateOutcome {
            unreachable!("a check only reads")
        }
        async fn find(&self, lookup: &Lookup<'_>) -> Result<Vec<crate::rail::RailTransfer>, UnknownCause> {
            Ok(vec![crate::rail::RailTransfer {
                id: "tr_1".into(),
                amount_minor: 100,
                currency: "USD".into(),
                destination: self.destination.clone(),
                transfer_group: Some(lookup.key.into()),
                status: crate::rail::RailStatus::Pending,
                amount_reversed: 0,
                created: None,
                evidence: None,
                failure: None,
            }])
        }
        async fn get_transfer(&self, _: &str) -> Result<Option<crate::rail::RailTransfer>, UnknownCause> {
            unreachable!("a check reads by key")
        }
        async fn list_since(&self, _: DateTime<Utc>, _: usize) -> Result<Vec<crate::rail::RailTransfer>, UnknownCause> {
            unreachable!("a check reads by key")
        }
        async fn reversals_of(&self, _: &str) -> Result<Vec<crate::rail::RailReversal>, UnknownCause> {
            unreachable!("not a reversal")
        }
        async fn reverse(&self, _: &str, _: &str, _: Option<u64>) -> crate::rail::ReversalOutcome {
            unreachable!("not a reversal")
        }
    }

    /// A pass finds an accepted transfer still pending at the rail: its
    /// next check is after half its age (here ten minutes old: five
    /// minutes on, not the interval's two seconds), no attempt counted.
    #[tokio::test]
    async fn a_pass_checks_an_old_accepted_transfer_again_after_half_its_age() {
        let dir = tempfile::tempdir().unwrap();
        let settings = crate::config::Settings { data_dir: dir.path().to_owned(), ..Default::default() };
        let destination = countersign_domain::fixtures::sample_transfer().destination.id.expose().to_owned();
        let (state, _trigger) =
            crate::platform::testing::services_on(settings, std::sync::Arc::new(Pending { destination })).await;
        let recorded = state.now() - Duration::minutes(10);
        due_operation(&state, recorded).await;
        let accepted = store::operations::Update { rail_reference: Some("tr_1"), ..Default::default() };
        let mut c = state.db().write.acquire().await.unwrap();
        assert!(store::operations::set_status(
            &mut c,
            "op_1",
            &[OpStatus::Pending],
            OpStatus::Accepted,
            &accepted,
            recorded
        )
        .await
        .unwrap());
        drop(c);

        let now = state.now();
        assert_eq!(reconcile_due(&*state, now).await.unwrap(), [("op_1".to_owned(), Reconciled::StillOpen)]);
        let op = store::operations::get(&state.db().read, "op_1").await.unwrap().unwrap();
        assert_eq!((op.status, op.claimed_until, op.attempts), (OpStatus::Accepted, None, 0));
        let after = (op.next_check_at - now).num_milliseconds();
        assert!((after - 300_000).abs() < 1_000, "after half its age, at most five minutes: {after} ms");
    }

    #[test]
    fn an_accepted_transfer_is_checked_less_often_the_longer_it_stays_accepted() {
        let now = crate::platform::clock::system_now();
        let after = |interval: u64, age_secs: i64| {
            (next_check_accepted(interval, now - Duration::seconds(age_secs), now) - now).num_seconds()
        };
        assert_eq!(after(2, 1), 2, "young: every interval");
        assert_eq!(after(2, 4), 2);
        assert_eq!(after(2, 10), 5, "then half its age");
        assert_eq!(after(2, 120), 60);
        assert_eq!(after(2, 3 * 86_400), 300, "at most five minutes");
        assert_eq!(after(600, 3 * 86_400), 600, "never more often than the interval");
    }

    /// A pass claims its operations for one rail call's lease from its
    /// start: one whose turn comes past the lease's margin is released for
    /// the next pass untouched (no rail call, no attempt counted, its next
    /// check where it was), not called on a claim that could lapse. Within
    /// the margin the same operation is called (here the rail is
    /// unreachable: an attempt is counted and the next check moves).
    #[tokio::test]
    async fn a_pass_releases_what_its_claim_no_longer_covers() {
        let dir = tempfile::tempdir().unwrap();
        let (state, _trigger) = crate::platform::testing::services(dir.path()).await;
        let recorded = state.now() - Duration::minutes(20);
        due_operation(&state, recorded).await;
        let op = || async { store::operations::get(&state.db().read, "op_1").await.unwrap().unwrap() };

        // The pass began ten minutes ago: its lease (the rail's timeout and 5 s) is long gone.
        let late = reconcile_due(&*state, state.now() - Duration::minutes(10)).await.unwrap();
        assert_eq!(late, [("op_1".to_owned(), Reconciled::StillOpen)]);
        let released = op().await;
        assert_eq!((released.claimed_until, released.attempts), (None, 0), "released, no attempt");
        assert_eq!(released.next_check_at.timestamp_millis(), recorded.timestamp_millis(), "still due");

        let now = state.now();
        let called = reconcile_due(&*state, now).await.unwrap();
        assert_eq!(called, [("op_1".to_owned(), Reconciled::StillOpen)]);
        let after = op().await;
        assert_eq!((after.claimed_until, after.attempts), (None, 1), "the rail was asked (and could not answer)");
        assert!(after.next_check_at > now, "checked again later");
    }
}
