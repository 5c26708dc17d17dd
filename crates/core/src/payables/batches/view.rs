//! What agents and people read of a batch: its lines with their payments,
//! its totals by currency and by payee, its decisions.

use super::*;

fn money(currency: &str, minor: u64) -> String {
    Currency::parse(currency).map(|c| c.format_minor(minor)).unwrap_or_else(|_| format!("{minor} {currency}"))
}

/// The totals of the included (and committed) lines.
fn totals(lines: &[LineRow]) -> Totals {
    let mut by_currency: BTreeMap<String, (u64, u32)> = BTreeMap::new();
    let mut by_payee: BTreeMap<(String, String), (String, u64, u32)> = BTreeMap::new();
    for l in lines.iter().filter(|l| l.status != "held") {
        let (Some(payee), Some(currency), Some(amount)) = (&l.payee_id, &l.currency, l.amount_minor) else { continue };
        let c = by_currency.entry(currency.clone()).or_default();
        c.0 += amount;
        c.1 += 1;
        let p = by_payee
            .entry((payee.clone(), currency.clone()))
            .or_insert_with(|| (l.legal_name.clone().unwrap_or_default(), 0, 0));
        p.1 += amount;
        p.2 += 1;
    }
    Totals {
        by_currency: by_currency
            .into_iter()
            .map(|(currency, (amount_minor, lines))| CurrencyTotal {
                amount: money(&currency, amount_minor),
                currency,
                amount_minor,
                lines,
            })
            .collect(),
        by_payee: by_payee
            .into_iter()
            .map(|((payee_id, currency), (legal_name, amount_minor, lines))| PayeeTotal {
                masked_account: mask_account_tagged(&payee_id),
                amount: money(&currency, amount_minor),
                payee_id,
                legal_name,
                currency,
                amount_minor,
                lines,
            })
            .collect(),
    }
}

/// The batch as its agent (`for_agent`: then with its token while
/// approved) or the console sees it.
pub async fn view(
    state: &(impl Store + Config),
    tenant: &str,
    id: &str,
    for_agent: Option<&str>,
) -> Result<BatchView, BatchError> {
    let read = &state.db().read;
    let batch = store::batches::get(read, tenant, id).await?.ok_or(BatchError::NotFound)?;
    if for_agent.is_some_and(|a| a != batch.agent_id) {
        return Err(BatchError::NotFound);
    }
    let (lines, approvals) =
        tokio::try_join!(store::batches::lines(read, &batch.id), store::batches::approvals(read, &batch.id))?;
    let paid: Vec<&str> = lines.iter().filter_map(|l| l.proposal_id.as_deref()).collect();
    let (rows, ops) = tokio::try_join!(
        store::proposals::get_many(read, tenant, &paid),
        store::operations::for_proposals(read, &paid),
    )?;
    let line_views = lines
        .iter()
        .map(|l| {
            let payment = l.proposal_id.as_deref().and_then(|pid| {
                let row = rows.iter().find(|r| r.id == pid)?;
                let op = ops.iter().find(|o| o.proposal_id == pid);
                Some(LinePayment {
                    proposal_id: pid.to_owned(),
                    status: row.status,
                    operation_id: op.map(|o| o.id.clone()),
                    operation_status: op.map(|o| o.status.as_str().to_owned()),
                    rail_reference: op.and_then(|o| o.rail_reference.clone()),
                    error_code: op.and_then(|o| o.error_code.clone()),
                })
            });
            LineView {
                line: l.line,
                status: l.status.clone(),
                masked_account: l.payee_id.as_deref().map(mask_account_tagged),
                payee_id: l.payee_id.clone(),
                legal_name: l.legal_name.clone(),
                amount_minor: l.amount_minor,
                amount: l.currency.as_deref().zip(l.amount_minor).map(|(c, a)| money(c, a)),
                currency: l.currency.clone(),
                invoice_id: l.invoice_id.clone(),
                request_hash: l.request_hash.clone(),
                held_by: l
                    .held_by
                    .as_deref()
                    .map(|by| if by.starts_with("user:") { "reviewer" } else { by }.to_owned()),
                held_reasons: LineReason::stored(l.held_reasons.as_deref()),
                payment,
            }
        })
        .collect();
    let mine = for_agent.is_some() && batch.status == "approved";
    Ok(BatchView {
        approval_url: format!("{}/batches/{}", state.settings().public_url.trim_end_matches('/'), batch.id),
        totals: totals(&lines),
        lines: line_views,
        approvals: approvals
            .into_iter()
            .map(|a| BatchApprovalView {
                approver_id: a.approver_id,
                decision: a.decision,
                reason: a.reason,
                round: a.round,
                batch_hash: a.batch_hash,
                via: a.via,
                at: store::ts(a.at),
            })
            .collect(),
        approval_token: batch.token.clone().filter(|_| mine),
        approval_expires_at: batch.token_expires_at.filter(|_| mine).map(store::ts),
        id: batch.id,
        status: batch.status,
        run_id: batch.run_id,
        label: batch.label,
        batch_hash: batch.batch_hash,
        policy: batch.policy,
        round: batch.round,
        created_at: store::ts(batch.created_at),
        updated_at: store::ts(batch.updated_at),
        expires_at: store::ts(batch.expires_at),
    })
}

/// A tenant's batches in `status` for the console, oldest first (at most 50).
pub async fn list(state: &(impl Store + Config), tenant: &str, status: &str) -> Result<Vec<BatchView>, BatchError> {
    let rows = store::batches::of_tenant(&state.db().read, tenant, status, 50).await?;
    let mut views = Vec::with_capacity(rows.len());
    for row in rows {
        views.push(view(state, tenant, &row.id, None).await?);
    }
    Ok(views)
}
