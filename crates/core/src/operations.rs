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

use crate::deps::{Clock, Config, Notifier, Payments, Store};
use crate::domain::{ProposalKind, ProposalStatus, Role};
use crate::rail::{CreateOutcome, RailStatus, RailTransfer, ReversalOutcome, TransferOrder, UnknownCause};
use crate::services::InFlight;
use crate::store::{
    self,
    audit::AuditEntry,
    operations::{OpStatus, OperationRow, Update},
    StoreError,
};

/// What the rail said, in the operation's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RailOutcome {
    /// Settled: the money moved (transfer `paid`, or the reversal done).
    Succeeded { reference: String },
    /// Accepted, not settled yet.
    Accepted { reference: String },
    /// A definite refusal, with the SPEC §6 code.
    Failed { code: &'static str, message: &'static str },
    /// A reversal past the rail's cutoff.
    TooLate,
    /// The money may or may not have moved.
    Unknown(UnknownCause),
}

/// The rail's status of a transfer that matches the operation.
fn from_transfer(t: &RailTransfer) -> RailOutcome {
    match t.status {
        RailStatus::Paid | RailStatus::Reversed => RailOutcome::Succeeded { reference: t.id.clone() },
        RailStatus::Pending => RailOutcome::Accepted { reference: t.id.clone() },
        RailStatus::Failed => {
            RailOutcome::Failed { code: "rail_rejected", message: "The rail reports the transfer failed." }
        }
    }
}

fn decline_message(code: &str) -> &'static str {
    match code {
        "insufficient_funds" => "The source account has insufficient funds.",
        "destination_closed" => "The destination account is closed.",
        "limit_exceeded" => "The amount exceeds the rail's limit.",
        _ => "The rail rejected the request.",
    }
}

/// Calls the rail for a recorded operation (first call or resubmission: the
/// same order under the same idempotency key).
pub async fn call_rail(state: &impl Payments, op: &OperationRow, row: &store::proposals::ProposalRow) -> RailOutcome {
    let canonical = &row.request;
    match canonical.kind {
        ProposalKind::Transfer => {
            let metadata = [("proposal_id", row.id.as_str())];
            let order = TransferOrder {
                idempotency_key: &op.idempotency_key,
                amount_minor: op.amount_minor,
                currency: &op.currency,
                destination: canonical.destination.id.expose(),
                source_account: canonical.source_account.expose(),
                metadata: &metadata,
            };
            match state.rail().create_transfer(&order).await {
                CreateOutcome::Accepted(t) => from_transfer(&t),
                CreateOutcome::Declined(d) => {
                    RailOutcome::Failed { code: d.code(), message: decline_message(d.code()) }
                }
                CreateOutcome::Unknown(cause) => RailOutcome::Unknown(cause),
            }
        }
        ProposalKind::Reversal => {
            let Some(transfer) = op.reverses.as_deref() else {
                return RailOutcome::Failed { code: "rail_rejected", message: "No transfer to reverse." };
            };
            match state.rail().reverse(transfer, &op.idempotency_key, Some(op.amount_minor)).await {
                ReversalOutcome::Reversed { reversal_id } => RailOutcome::Succeeded { reference: reversal_id },
                ReversalOutcome::TooLate => RailOutcome::TooLate,
                ReversalOutcome::Declined(d) => {
                    RailOutcome::Failed { code: d.code(), message: decline_message(d.code()) }
                }
                ReversalOutcome::Unknown(cause) => RailOutcome::Unknown(cause),
            }
        }
    }
}

/// How long one rail call may hold an operation ([`store::operations::claim`]):
/// the whole-request timeout and a margin to record what it answered.
pub fn rail_call_lease(rail: &crate::config::RailSettings) -> Duration {
    Duration::milliseconds(rail.total_timeout_ms as i64 + 5_000)
}

/// How long to wait before looking at an open operation again.
fn next_check(state: &impl Config, op: &OperationRow, now: DateTime<Utc>) -> DateTime<Utc> {
    let base = state.settings().rail.reconcile_interval_secs as i64;
    let backoff = base.saturating_mul(1i64 << op.attempts.clamp(0, 8)).min(300);
    now + Duration::seconds(backoff)
}

/// Writes an outcome: the operation (compare-and-set from the status it was
/// read in), the proposal, the budget and the audit trail, in one transaction.
/// Returns whether anything changed (false: someone else settled it first).
pub async fn record(
    state: &(impl Store + Config + Notifier),
    op: &OperationRow,
    outcome: RailOutcome,
    now: DateTime<Utc>,
) -> crate::store::Result<bool> {
    let (to, update, proposal_to) = match &outcome {
        RailOutcome::Succeeded { reference } => (
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
    settle(state, op, to, &update, proposal_to, "system:rail", json!({"rail_outcome": format!("{outcome:?}")}), now)
        .await
}

/// Moves the operation from the status it was read in to `to` and the
/// proposal to `proposal_to`, in one transaction with the audit entry.
#[allow(clippy::too_many_arguments)]
async fn settle(
    state: &(impl Store + Notifier),
    op: &OperationRow,
    to: OpStatus,
    update: &Update<'_>,
    proposal_to: ProposalStatus,
    actor: &str,
    mut data: serde_json::Value,
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
    let mut reversed_proposal = None;
    if to == OpStatus::Succeeded && op.kind == "reversal" {
        reversed_proposal = mark_reversed(&mut tx, op, now).await?;
    }
    if let Some(obj) = data.as_object_mut() {
        obj.insert("operation_id".into(), json!(op.id));
        obj.insert("idempotency_key".into(), json!(op.idempotency_key));
        obj.insert("operation_from".into(), json!(op.status));
        obj.insert("operation_to".into(), json!(to));
        obj.insert("from".into(), json!(proposal.status));
        obj.insert("to".into(), json!(proposal_to));
        obj.insert("rail_reference".into(), json!(update.rail_reference.or(op.rail_reference.as_deref())));
        obj.insert("error_code".into(), json!(update.error.map(|(c, _)| c)));
        if to == OpStatus::Failed && op.budget_day.is_some() {
            obj.insert("budget_released".into(), json!(op.amount_minor));
        }
    }
    store::audit::append(
        &mut tx,
        &AuditEntry {
            tenant_id: Some(op.tenant_id.clone()),
            actor: actor.to_owned(),
            action: format!("operation.{}", to.as_str()),
            proposal_id: Some(op.proposal_id.clone()),
            request_hash: Some(proposal.request_hash.clone()),
            data,
        },
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
    tx: &mut crate::store::Conn,
    op: &OperationRow,
    now: DateTime<Utc>,
) -> crate::store::Result<Option<String>> {
    let Some(reference) = op.reverses.as_deref() else { return Ok(None) };
    let Some(original) = store::operations::by_rail_reference(&mut *tx, &op.tenant_id, reference).await? else {
        return Ok(None);
    };
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
    store::audit::append(
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
#[tracing::instrument(name = "reconcile", skip_all, fields(tenant = %op.tenant_id, operation_id = %op.id))]
pub async fn reconcile_one(
    state: &(impl Store + Config + Notifier + Payments),
    op: &OperationRow,
    now: DateTime<Utc>,
) -> anyhow::Result<Reconciled> {
    crate::metrics::use_case("reconcile", reconcile_one_inner(state, op, now)).await
}

async fn reconcile_one_inner(
    state: &(impl Store + Config + Notifier + Payments),
    op: &OperationRow,
    now: DateTime<Utc>,
) -> anyhow::Result<Reconciled> {
    if !OpStatus::OPEN.contains(&op.status) {
        return Ok(Reconciled::StillOpen);
    }
    let Some(_guard) = InFlight::claim(state, &op.id) else {
        return Ok(Reconciled::InFlight);
    };
    // Across processes (several instances, the CLI): one rail call at a time.
    let lease = now + rail_call_lease(&state.settings().rail);
    if !store::operations::claim(&mut *state.db().writer().await?, &op.id, now, lease).await? {
        return Ok(Reconciled::InFlight);
    }
    let row = store::proposals::get(&state.db().read, &op.tenant_id, &op.proposal_id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("operation {} has no proposal", op.id))?;
    let canonical = &row.request;
    let in_window = now < op.created_at + Duration::seconds(state.settings().rail.resubmit_window_secs as i64);

    let outcome = if op.kind == "transfer" {
        match state.rail().find_by_group(&op.idempotency_key).await {
            Err(cause) => {
                tracing::warn!(operation_id = %op.id, ?cause, "rail record could not be read; will retry");
                store::operations::reschedule(
                    &mut *state.db().writer().await?,
                    &op.id,
                    next_check(state, op, now),
                    true,
                )
                .await?;
                return Ok(Reconciled::StillOpen);
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
                    return review(state, op, why, now).await;
                }
                match matching.first() {
                    Some(t) => from_transfer(t),
                    None if op.status == OpStatus::Accepted => {
                        tracing::error!(operation_id = %op.id, "accepted transfer missing from the rail's records");
                        return review(state, op, "rail_record_missing", now).await;
                    }
                    None if in_window => {
                        tracing::info!(operation_id = %op.id, "no rail record; resubmitting with the same key");
                        call_rail(state, op, &row).await
                    }
                    None => return review(state, op, "no_rail_record", now).await,
                }
            }
        }
    } else if in_window {
        // A reversal resubmitted under its key replays the rail's first outcome.
        call_rail(state, op, &row).await
    } else {
        return review(state, op, "no_rail_record", now).await;
    };
    if let (RailOutcome::Accepted { .. }, OpStatus::Accepted) = (&outcome, op.status) {
        store::operations::reschedule(&mut *state.db().writer().await?, &op.id, next_check(state, op, now), false)
            .await?;
        return Ok(Reconciled::StillOpen);
    }
    if let (RailOutcome::Unknown(_), OpStatus::Unknown) = (&outcome, op.status) {
        store::operations::reschedule(&mut *state.db().writer().await?, &op.id, next_check(state, op, now), true)
            .await?;
        return Ok(Reconciled::StillOpen);
    }
    let to = match &outcome {
        RailOutcome::Succeeded { .. } => OpStatus::Succeeded,
        RailOutcome::Accepted { .. } => OpStatus::Accepted,
        RailOutcome::Failed { .. } => OpStatus::Failed,
        RailOutcome::TooLate => OpStatus::TooLate,
        RailOutcome::Unknown(_) => OpStatus::Unknown,
    };
    Ok(if record(state, op, outcome, now).await? { Reconciled::Moved(to) } else { Reconciled::Raced })
}

/// Hands an operation to a human: `needs_review` with why.
async fn review(
    state: &(impl Store + Notifier),
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
    let moved = settle(
        state,
        op,
        OpStatus::NeedsReview,
        &update,
        ProposalStatus::NeedsReview,
        "system:reconcile",
        json!({"why": why}),
        now,
    )
    .await?;
    Ok(if moved { Reconciled::Moved(OpStatus::NeedsReview) } else { Reconciled::Raced })
}

/// One pass over the open operations that are due. Returns (operation id, result).
pub async fn reconcile_due(
    state: &(impl Store + Config + Notifier + Payments),
    now: DateTime<Utc>,
) -> anyhow::Result<Vec<(String, Reconciled)>> {
    let due = store::operations::due(&state.db().read, now, now, 100).await?;
    let mut done = Vec::with_capacity(due.len());
    for op in due {
        let result = reconcile_one(state, &op, now).await;
        match result {
            Ok(r) => done.push((op.id, r)),
            Err(e) => tracing::error!(operation_id = %op.id, error = %e, "reconciliation failed"),
        }
    }
    Ok(done)
}

/// The background worker: runs until shutdown, a pass every interval.
pub async fn run(
    state: std::sync::Arc<impl Store + Clock + Config + Notifier + Payments + Send + Sync + 'static>,
    shutdown: crate::shutdown::Shutdown,
) {
    let every = std::time::Duration::from_secs(state.settings().rail.reconcile_interval_secs);
    crate::shutdown::every(every, &shutdown, || async {
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

/// A human's decision on an operation that needs review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// The money moved: this rail record (one the rail holds for the
    /// operation, matching it) proves it.
    Succeeded { rail_reference: String },
    /// The money did not move, for this reason (the admin's words, shown as
    /// the operation's error message).
    Failed { reason: String },
}

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("no such operation")]
    NotFound,
    #[error("only admins can resolve operations")]
    NotAnAdmin,
    #[error("the operation is {0}, not needs_review")]
    InvalidState(&'static str),
    #[error("{1}")]
    BadInput(&'static str, &'static str),
    #[error("the rail could not be read")]
    RailUnavailable,
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// Who resolves: an authenticated console user.
#[derive(Debug, Clone)]
pub struct Resolver {
    pub user_id: String,
    pub tenant_id: String,
    pub roles: Vec<Role>,
}

/// A record of the rail's that might settle an operation, and whether it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The rail's id: a transfer's (`tr_…`), or for a reversal its own (`trr_…`).
    pub reference: String,
    pub amount_minor: u64,
    pub currency: String,
    /// Masked; for a reversal, the transfer it reverses.
    pub destination: String,
    pub status: &'static str,
    /// For a reversal: how much it reversed.
    pub amount_reversed: u64,
    /// `None`: it settles the operation; else why not, for a person.
    pub mismatch: Option<String>,
}

fn status_name(s: RailStatus) -> &'static str {
    match s {
        RailStatus::Pending => "pending",
        RailStatus::Paid => "paid",
        RailStatus::Failed => "failed",
        RailStatus::Reversed => "reversed",
    }
}

/// The `needs_review` operation `op_id` of the resolver's tenant, checked
/// for role and state.
async fn reviewable(state: &impl Store, who: &Resolver, op_id: &str) -> Result<OperationRow, ResolveError> {
    let op = store::operations::get(&state.db().read, op_id)
        .await?
        .filter(|o| o.tenant_id == who.tenant_id)
        .ok_or(ResolveError::NotFound)?;
    if !who.roles.contains(&Role::Admin) {
        return Err(ResolveError::NotAnAdmin);
    }
    if op.status != OpStatus::NeedsReview {
        return Err(ResolveError::InvalidState(op.status.as_str()));
    }
    Ok(op)
}

/// What the rail holds for a `needs_review` operation, read now: for a
/// transfer, every transfer under its idempotency key; for a reversal, the
/// transfer it reverses. Each says whether it settles the operation.
pub async fn rail_candidates(
    state: &(impl Store + Payments),
    who: &Resolver,
    op_id: &str,
) -> Result<(OperationRow, Vec<Candidate>), ResolveError> {
    let op = reviewable(state, who, op_id).await?;
    let candidates = candidates_of(state, &op).await?;
    Ok((op, candidates))
}

async fn candidates_of(state: &(impl Store + Payments), op: &OperationRow) -> Result<Vec<Candidate>, ResolveError> {
    let row =
        store::proposals::get(&state.db().read, &op.tenant_id, &op.proposal_id).await?.ok_or(ResolveError::NotFound)?;
    let canonical = &row.request;
    let candidate = |t: &RailTransfer, mismatch: Option<String>| Candidate {
        reference: t.id.clone(),
        amount_minor: t.amount_minor,
        currency: t.currency.clone(),
        destination: crate::domain::mask_account(&t.destination),
        status: status_name(t.status),
        amount_reversed: t.amount_reversed,
        mismatch,
    };
    let amount = |minor: u64| {
        crate::domain::Currency::parse(&op.currency).map(|c| c.format_minor(minor)).unwrap_or(minor.to_string())
    };
    if op.kind == "reversal" {
        // The evidence is the reversal's own record: a reversal of the
        // transfer made under this operation's idempotency key, for its
        // amount — never the transfer's "amount reversed", which another
        // reversal could have filled.
        let Some(reversed) = op.reverses.as_deref() else { return Ok(Vec::new()) };
        let found = state.rail().reversals_of(reversed).await.map_err(|_| ResolveError::RailUnavailable)?;
        return Ok(found
            .iter()
            .map(|r| {
                let mut why = Vec::new();
                if r.key.as_deref() != Some(op.idempotency_key.as_str()) {
                    why.push(
                        "it is another reversal of that transfer (not made under this operation's key)".to_owned(),
                    );
                }
                if r.amount_minor != op.amount_minor {
                    why.push(format!("it reversed {}, not {}", amount(r.amount_minor), amount(op.amount_minor)));
                }
                Candidate {
                    reference: r.id.clone(),
                    amount_minor: r.amount_minor,
                    currency: op.currency.to_uppercase(),
                    destination: r.transfer.clone(),
                    status: "reversed",
                    amount_reversed: r.amount_minor,
                    mismatch: (!why.is_empty()).then(|| why.join("; ")),
                }
            })
            .collect());
    }
    let found = state.rail().find_by_group(&op.idempotency_key).await.map_err(|_| ResolveError::RailUnavailable)?;
    let destination = canonical.destination.id.expose();
    Ok(found
        .iter()
        .map(|t| {
            let mut why = Vec::new();
            if t.amount_minor != op.amount_minor {
                why.push(format!("its amount is {}, not {}", amount(t.amount_minor), amount(op.amount_minor)));
            }
            if !t.currency.eq_ignore_ascii_case(&op.currency) {
                why.push(format!("its currency is {}, not {}", t.currency, op.currency.to_uppercase()));
            }
            if t.destination != destination {
                why.push(format!(
                    "it went to {}, not {}",
                    crate::domain::mask_account(&t.destination),
                    canonical.destination.id.masked()
                ));
            }
            match t.status {
                RailStatus::Paid | RailStatus::Reversed => {}
                RailStatus::Pending => why.push("the rail has not settled it yet".into()),
                RailStatus::Failed => why.push("the rail reports it failed".into()),
            }
            candidate(t, (!why.is_empty()).then(|| why.join("; ")))
        })
        .collect())
}

/// Settles a `needs_review` operation by a human decision (audited).
///
/// Succeeded needs evidence: the reference must be one of the rail's own
/// records for this operation (read now), matching its amount, currency
/// and destination; a reference already settling another operation is
/// refused by the database. Failed needs the admin's reason, which becomes
/// the operation's error message (code `marked_failed`).
pub async fn resolve(
    state: &(impl Store + Notifier + Payments),
    who: &Resolver,
    op_id: &str,
    resolution: Resolution,
    now: DateTime<Utc>,
) -> Result<OperationRow, ResolveError> {
    let op = reviewable(state, who, op_id).await?;
    let actor = format!("user:{}", who.user_id);
    let moved = match &resolution {
        Resolution::Succeeded { rail_reference } => {
            let candidates = candidates_of(state, &op).await?;
            let Some(chosen) = candidates.iter().find(|c| &c.reference == rail_reference) else {
                return Err(ResolveError::BadInput(
                    "rail_reference",
                    "is not a record the rail holds for this operation",
                ));
            };
            if chosen.mismatch.is_some() {
                return Err(ResolveError::BadInput(
                    "rail_reference",
                    "does not settle this operation (amount, currency, destination or status differ)",
                ));
            }
            // A reversal's record is its own (`trr_…`), as the rail answers
            // a reversal made in one go.
            let update = Update {
                rail_reference: Some(rail_reference.as_str()),
                resolved_by: Some(&who.user_id),
                ..Default::default()
            };
            let evidence = json!({"resolution": "succeeded", "rail_record": chosen.reference,
                                  "rail_status": chosen.status, "amount_reversed": chosen.amount_reversed});
            let settled =
                settle(state, &op, OpStatus::Succeeded, &update, ProposalStatus::Succeeded, &actor, evidence, now)
                    .await;
            match settled {
                Err(e) if e.is_conflict() => {
                    return Err(ResolveError::BadInput("rail_reference", "already settles another operation"));
                }
                other => other?,
            }
        }
        Resolution::Failed { reason } => {
            let reason = reason.trim();
            if reason.is_empty() || reason.chars().count() > 500 || reason.chars().any(char::is_control) {
                return Err(ResolveError::BadInput("reason", "1-500 characters are required to mark it failed"));
            }
            let message = format!("Marked failed after review: {reason}");
            let update = Update {
                error: Some(("marked_failed", &message)),
                resolved_by: Some(&who.user_id),
                ..Default::default()
            };
            settle(
                state,
                &op,
                OpStatus::Failed,
                &update,
                ProposalStatus::Failed,
                &actor,
                json!({"resolution": "failed", "reason": reason}),
                now,
            )
            .await?
        }
    };
    if !moved {
        let latest = store::operations::get(&state.db().read, op_id).await?.ok_or(ResolveError::NotFound)?;
        return Err(ResolveError::InvalidState(latest.status.as_str()));
    }
    store::operations::get(&state.db().read, op_id).await?.ok_or(ResolveError::NotFound)
}
