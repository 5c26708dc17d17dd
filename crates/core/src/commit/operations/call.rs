//! The rail call of a recorded operation, on the rail it was submitted
//! to, and what the rail said in the operation's terms.

use crate::domain::ProposalKind;
use crate::rail::{
    CreateOutcome, Payments, RailStatus, RailTransfer, Refusal, ReversalOutcome, TransferOrder, UnknownCause,
};
use crate::store::{self, operations::OperationRow};

/// What the rail said, in the operation's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RailOutcome {
    /// Settled: the money moved (transfer `paid`, or the reversal done).
    /// `evidence`: the rail's document that says so, where it has one.
    Succeeded { reference: String, evidence: Option<String> },
    /// Accepted, not settled yet.
    Accepted { reference: String },
    /// A definite refusal, with the SPEC §6 code and why in words.
    Failed { code: &'static str, message: &'static str },
    /// A reversal past the rail's cutoff.
    TooLate,
    /// The money may or may not have moved.
    Unknown(UnknownCause),
}

/// The rail's status of a transfer that matches the operation.
pub(super) fn from_transfer(t: &RailTransfer) -> RailOutcome {
    match t.status {
        RailStatus::Paid | RailStatus::Reversed => {
            RailOutcome::Succeeded { reference: t.id.clone(), evidence: t.evidence.clone() }
        }
        RailStatus::Pending => RailOutcome::Accepted { reference: t.id.clone() },
        RailStatus::Failed => match t.failure {
            Some(r) => RailOutcome::Failed { code: r.decline.code(), message: r.reason },
            None => RailOutcome::Failed { code: "rail_rejected", message: "The rail reports the transfer failed." },
        },
    }
}

fn failed(r: Refusal) -> RailOutcome {
    RailOutcome::Failed { code: r.decline.code(), message: r.reason }
}

/// The rail an operation was submitted to; `None` (logged) when the
/// configuration no longer names it: the operation waits for it.
pub fn rail_of<'a>(state: &'a impl Payments, op: &OperationRow) -> Option<&'a dyn crate::rail::Rail> {
    let rail = state.rails().by_name(op.rail.as_deref());
    if rail.is_none() {
        tracing::error!(operation_id = %op.id, rail = ?op.rail, "the operation's rail is not configured any more");
    }
    rail
}

/// Calls the rail for a recorded operation (first call or resubmission: the
/// same order under the same idempotency key).
pub async fn call_rail(state: &impl Payments, op: &OperationRow, row: &store::proposals::ProposalRow) -> RailOutcome {
    let Some(rail) = rail_of(state, op) else {
        return RailOutcome::Unknown(UnknownCause::Connection);
    };
    let canonical = &row.request;
    match canonical.kind {
        ProposalKind::Transfer => {
            let metadata = [("proposal_id", row.id.as_str())];
            let order = TransferOrder {
                idempotency_key: &op.idempotency_key,
                operation_id: &op.id,
                amount_minor: op.amount_minor,
                currency: &op.currency,
                destination: canonical.destination.id.expose(),
                payee_name: &canonical.destination.legal_name,
                reference: canonical.reference.as_ref().map_or("", |r| r.as_str()),
                source_account: canonical.source_account.expose(),
                metadata: &metadata,
            };
            match rail.create_transfer(&order).await {
                CreateOutcome::Accepted(t) => from_transfer(&t),
                CreateOutcome::Declined(r) => failed(r),
                CreateOutcome::Unknown(cause) => RailOutcome::Unknown(cause),
            }
        }
        ProposalKind::Reversal => {
            let Some(transfer) = op.reverses.as_deref() else {
                return RailOutcome::Failed { code: "rail_rejected", message: "No transfer to reverse." };
            };
            match rail.reverse(transfer, &op.idempotency_key, Some(op.amount_minor)).await {
                ReversalOutcome::Reversed { reversal_id } => {
                    RailOutcome::Succeeded { reference: reversal_id, evidence: None }
                }
                ReversalOutcome::TooLate => RailOutcome::TooLate,
                ReversalOutcome::Declined(r) => failed(r),
                ReversalOutcome::Unknown(cause) => RailOutcome::Unknown(cause),
            }
        }
    }
}

/// Lets every rail exchange what it moves on its own schedule (a bank
/// rail writes its due files and reads the bank's documents) before a pass
/// reads it. A rail that fails is left to the next pass.
pub async fn sync_rails(state: &impl Payments) {
    for (name, rail) in state.rails().all() {
        if let Err(cause) = rail.sync().await {
            tracing::warn!(rail = name, ?cause, "rail sync failed; the next pass tries again");
        }
    }
}
