//! One invoice is paid once. An invoice is the tenant, the payee and the
//! invoice id a transfer names; proposals that share one are twins.
//!
//! - Twins are never approved together: a bulk approval that lists both is
//!   refused whole, before anything is decided ([`pairs`]).
//! - Approving a proposal whose twin is already approved or paid needs the
//!   approver's written "not a duplicate" statement, and one more approver
//!   than policy otherwise asks ([`one_more`]). Each approver of it states
//!   their own.
//!
//! - A copy is never approved by policy alone: a proposal whose invoice
//!   another live or paid proposal names waits for a human ([`for_humans`]),
//!   checked at intake inside the transaction that stores it.
//! - At commit the operation holds its invoice: the database lets one
//!   operation of a tenant hold a payee's invoice until it fails (a unique
//!   index, migration 0027), so two copies approved at the same moment by
//!   two approvers are paid once ([`held`]). A copy confirmed as not a
//!   duplicate holds nothing.
//!
//! Checked by the one approval path (`approvals::decide`), so the console's
//! forms, its JSON API and Slack all obey it; the pages only explain it.

use crate::decision::policy::{Decision, Outcome, Reason};
use crate::domain::{ProposalKind, ProposalStatus};
use crate::store::operations::HeldInvoice;
use crate::store::proposals::{ApprovalRow, ProposalRow};
use crate::store::risk::{self as store_risk, Earlier};
use crate::store::{Conn, Result, Store};

/// The rule named in a refusal and in the raised decision's reasons.
pub const RULE: &str = "duplicate_invoice";

/// At most this many approvals are ever required (policy's two, one more
/// for risk signals, one more for a confirmed duplicate).
const MOST_REQUIRED: u8 = 4;

/// How many twins are read when deciding (far more than any real invoice has).
const TWINS_READ: u32 = 50;

/// Whether a proposal in `status` has its invoice approved, or paid (money
/// moved, may have, or moved and came back).
pub fn approved_or_paid(status: ProposalStatus) -> bool {
    use ProposalStatus::*;
    matches!(status, Approved | Executing | Succeeded | Unknown | NeedsReview | Reversed)
}

/// Whether a proposal in `status` stands in the way of a copy: it may
/// still be approved, is approved, or is paid. Rejected, cancelled, expired
/// and failed ones do not.
pub fn holds_invoice(status: ProposalStatus) -> bool {
    use ProposalStatus::*;
    !matches!(status, Rejected | Cancelled | Expired | Failed)
}

/// `decision` when another proposal for the same invoice stands
/// (`standing`, non-empty): a policy approval becomes a human's to give,
/// and why. Any other decision is kept.
pub fn for_humans(decision: Decision, standing: &[Earlier]) -> Decision {
    if decision.outcome != Outcome::AutoApproved || standing.is_empty() {
        return decision;
    }
    let mut decision = decision;
    decision.outcome = Outcome::NeedsApproval;
    decision.required_approvals = decision.required_approvals.max(1);
    decision.reasons.push(Reason {
        rule: RULE.into(),
        message: format!(
            "Another proposal for the same invoice and payee stands ({}): a copy is never approved by policy alone.",
            ids(standing).join(", ")
        ),
    });
    decision
}

/// What a commit holds of `row`: its payee and invoice, unless it is no
/// transfer with an invoice or its approvers confirmed it is not a
/// duplicate (an approval of its round carries the statement).
pub fn held<'a>(row: &'a ProposalRow, approvals: &[ApprovalRow]) -> Option<HeldInvoice<'a>> {
    let (_, payee_id, invoice_id) = invoice_of(row)?;
    let confirmed =
        approvals.iter().any(|a| a.round == row.approval_round && a.decision == "approve" && a.reason.is_some());
    (!confirmed).then_some(HeldInvoice { payee_id, invoice_id })
}

/// Why a commit was refused when another operation holds its invoice.
pub fn held_elsewhere(row: &ProposalRow, holder: Option<&str>) -> String {
    format!(
        "Invoice {} to this payee is already paid or being paid{}: this copy is not paid. If it is not a \
         duplicate, propose it again and have its approvers confirm that.",
        row.request.invoice_id.as_ref().map_or("", |i| i.as_str()),
        holder.map(|h| format!(" ({h})")).unwrap_or_default()
    )
}

/// The invoice a stored proposal names, if it is a transfer with one.
fn invoice_of(row: &ProposalRow) -> Option<(&str, &str, &str)> {
    let invoice = row.request.invoice_id.as_ref()?;
    (row.kind == ProposalKind::Transfer.as_str()).then_some((
        row.tenant_id.as_str(),
        row.payee_id.as_str(),
        invoice.as_str(),
    ))
}

/// The twins among listed proposals: every pair (in listed order) that
/// names the same invoice.
pub fn pairs(rows: &[ProposalRow]) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (i, a) in rows.iter().enumerate() {
        let Some(invoice) = invoice_of(a) else { continue };
        for b in &rows[i + 1..] {
            if invoice_of(b) == Some(invoice) {
                found.push((a.id.clone(), b.id.clone()));
            }
        }
    }
    found
}

/// The other proposals for `row`'s invoice that are approved or paid,
/// oldest first.
pub async fn approved_twins(state: &impl Store, row: &ProposalRow) -> Result<Vec<Earlier>> {
    let Some((tenant, payee, invoice_id)) = invoice_of(row) else { return Ok(Vec::new()) };
    let ask = store_risk::InvoiceAsk { tenant, payee, invoice_id, except: &row.id };
    let twins = store_risk::same_invoice(&state.db().read, &[ask], TWINS_READ).await?.pop().unwrap_or_default();
    Ok(twins.into_iter().filter(|t| approved_or_paid(t.status)).collect())
}

/// The other proposals for `row`'s invoice that stand in the way of a
/// copy ([`holds_invoice`]), read inside the transaction storing `row`
/// (on PostgreSQL under the invoice's lock, `store::risk::same_invoice_in`).
pub async fn standing_in(conn: &mut Conn, row: &ProposalRow) -> Result<Vec<Earlier>> {
    let Some((tenant, payee, invoice_id)) = invoice_of(row) else { return Ok(Vec::new()) };
    let ask = store_risk::InvoiceAsk { tenant, payee, invoice_id, except: &row.id };
    let twins = store_risk::same_invoice_in(conn, &ask, TWINS_READ).await?;
    Ok(twins.into_iter().filter(|t| holds_invoice(t.status)).collect())
}

/// Why an approval without the statement is refused, in a sentence.
pub fn unconfirmed(row: &ProposalRow, twins: &[Earlier]) -> String {
    format!(
        "Invoice {} to this payee is already {} ({}): approving it again needs your statement that it is not a \
         duplicate, and one more approver.",
        row.request.invoice_id.as_ref().map_or("", |i| i.as_str()),
        if twins.iter().any(|t| t.status != ProposalStatus::Approved) { "paid" } else { "approved" },
        ids(twins).join(", ")
    )
}

/// The twins' ids, for the audit entry and the messages.
pub fn ids(twins: &[Earlier]) -> Vec<&str> {
    twins.iter().map(|t| t.id.as_str()).collect()
}

/// `decision` with one more approval required, and why.
pub fn one_more(decision: Decision, twins: &[Earlier]) -> Decision {
    if decision.reasons.iter().any(|r| r.rule == RULE) {
        return decision;
    }
    let mut decision = decision;
    decision.required_approvals = (decision.required_approvals.max(1) + 1).min(MOST_REQUIRED);
    decision.outcome = Outcome::NeedsApproval;
    decision.reasons.push(Reason {
        rule: RULE.into(),
        message: format!(
            "Approved as not a duplicate of {}: one more approver than policy asks.",
            ids(twins).join(", ")
        ),
    });
    decision
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};

    fn decision(n: u8) -> Decision {
        Decision { outcome: Outcome::NeedsApproval, required_approvals: n, reasons: Vec::new(), groups: Vec::new() }
    }

    fn twin(id: &str, status: ProposalStatus) -> Earlier {
        Earlier {
            id: id.into(),
            agent_id: "bot".into(),
            status,
            amount_minor: 32_000,
            currency: "USD".into(),
            created_at: DateTime::<Utc>::UNIX_EPOCH,
        }
    }

    #[test]
    fn approved_or_paid_is_every_status_after_the_last_approval_and_no_other() {
        use ProposalStatus::*;
        let counted: Vec<_> = ProposalStatus::ALL.iter().copied().filter(|s| approved_or_paid(*s)).collect();
        assert_eq!(counted, [Approved, Executing, Succeeded, Unknown, NeedsReview, Reversed]);
    }

    #[test]
    fn a_confirmed_duplicate_needs_one_more_approver_once_and_at_most_four() {
        let twins = [twin("p_1", ProposalStatus::Succeeded)];
        let raised = one_more(decision(1), &twins);
        assert_eq!(raised.required_approvals, 2);
        assert_eq!(raised.reasons[0].rule, RULE);
        assert!(raised.reasons[0].message.contains("p_1"), "{}", raised.reasons[0].message);
        assert_eq!(one_more(raised.clone(), &twins), raised, "counted once");
        assert_eq!(one_more(decision(3), &twins).required_approvals, 4);
        assert_eq!(one_more(decision(4), &twins).required_approvals, 4);
    }
}
