//! The console's batch pages (`app::pages::batch`): the list of batches and
//! a batch's review page, built from `crate::payables::batches::view` — the object the
//! API returns — with each line's invoice checked against the registry as it
//! stands now, and approvers named by username.

use std::collections::HashMap;

use app::views::{BatchLineItem, BatchList, BatchReview, BatchSummary, BatchTotalLine, ConsoleError, Viewer};

use super::ConsoleService;
use crate::flow::unavailable;
use crate::payables::batches::{self, BatchError, BatchView};
use crate::store;

/// How many recent (decided) batches the list shows.
const RECENT: usize = 20;

fn console_error(e: BatchError) -> ConsoleError {
    match e {
        BatchError::NotFound => ConsoleError::NotFound,
        other => unavailable(other),
    }
}

fn held_by(by: &str) -> String {
    match by {
        "checks" => "the checks at intake".into(),
        "commit" => "the checks at commit".into(),
        _ => "a reviewer".into(),
    }
}

fn summary(b: &BatchView) -> BatchSummary {
    let held = b.lines.iter().filter(|l| l.status == "held").count();
    let included = b.lines.len() - held;
    let totals: Vec<String> = b.totals.by_currency.iter().map(|t| t.amount.clone()).collect();
    BatchSummary {
        id: b.id.clone(),
        status: b.status.clone(),
        label: b.label.clone(),
        summary: format!(
            "{included} payment{}{}: {}",
            if included == 1 { "" } else { "s" },
            if held > 0 { format!(", {held} held back") } else { String::new() },
            if totals.is_empty() { "nothing to pay".into() } else { totals.join(" and ") }
        ),
        created_at: b.created_at.clone(),
    }
}

impl ConsoleService {
    pub(super) async fn batch_list(&self, viewer: &Viewer) -> Result<BatchList, ConsoleError> {
        let state = &self.state;
        let tenant = &viewer.tenant_id;
        let mut waiting = Vec::new();
        for status in ["pending_approval", "approval_expired"] {
            waiting.extend(batches::list(state, tenant, status).await.map_err(console_error)?.iter().map(summary));
        }
        let mut recent = Vec::new();
        for status in ["approved", "committed", "rejected", "cancelled", "expired"] {
            recent.extend(batches::list(state, tenant, status).await.map_err(console_error)?.iter().map(summary));
        }
        recent.sort_by(|a, b| b.created_at.cmp(&a.created_at));
        recent.truncate(RECENT);
        Ok(BatchList { waiting, recent })
    }

    pub(super) async fn batch_review(&self, viewer: &Viewer, id: String) -> Result<BatchReview, ConsoleError> {
        let state = &self.state;
        let b = batches::view(state, &viewer.tenant_id, &id, None).await.map_err(console_error)?;
        let row = store::batches::get(&state.db.read, &viewer.tenant_id, &id)
            .await
            .map_err(unavailable)?
            .ok_or(ConsoleError::NotFound)?;
        let stored = store::batches::lines(&state.db.read, &id).await.map_err(unavailable)?;
        let mut conn = state.db.reader().await.map_err(unavailable)?;
        let users = store::directory::users_of(&mut conn, &viewer.tenant_id).await.map_err(unavailable)?;
        drop(conn);
        let names: HashMap<&str, &str> = users.iter().map(|u| (u.id.as_str(), u.username.as_str())).collect();
        let mut lines = Vec::with_capacity(b.lines.len());
        for (l, s) in b.lines.iter().zip(&stored) {
            // The invoice as it stands now: a committed line's through its
            // own payment (what it holds or paid counts as its own).
            let found = match &l.payment {
                Some(p) => {
                    let proposal = store::proposals::get(&state.db.read, &viewer.tenant_id, &p.proposal_id)
                        .await
                        .map_err(unavailable)?;
                    match proposal {
                        Some(row) => self.invoice_match(&row, true).await?,
                        None => None,
                    }
                }
                None => match s.canonical_request.as_deref().and_then(|c| serde_json::from_str(c).ok()) {
                    Some(canonical) => crate::payables::invoices::for_request(state, &canonical)
                        .await
                        .map_err(unavailable)?
                        .map(super::invoices::line),
                    None => None,
                },
            };
            lines.push(BatchLineItem {
                line: l.line,
                status: l.status.clone(),
                payee: l.legal_name.clone().unwrap_or_else(|| "Not read as a payment".into()),
                masked_account: l.masked_account.clone().unwrap_or_default(),
                amount: l.amount.clone().unwrap_or_default(),
                invoice_id: l.invoice_id.clone(),
                invoice: found,
                held_reasons: l.held_reasons.iter().map(|r| r.message.clone()).collect(),
                held_by: l.held_by.as_deref().map(held_by),
                proposal_id: l.payment.as_ref().map(|p| p.proposal_id.clone()),
                payment_status: l.payment.as_ref().map(|p| p.status.as_str().to_owned()),
            });
        }
        let approved_by: Vec<String> = b
            .approvals
            .iter()
            .filter(|a| a.round == b.round && a.decision == "approve" && a.batch_hash == b.batch_hash)
            .map(|a| names.get(a.approver_id.as_str()).map_or(a.approver_id.clone(), |n| (*n).to_owned()))
            .collect();
        let waiting = matches!(b.status.as_str(), "pending_approval" | "approval_expired");
        let total = |label: String, amount: String, lines: u32| BatchTotalLine { label, amount, lines };
        Ok(BatchReview {
            can_decide: waiting && viewer.can_approve(),
            by_currency: b
                .totals
                .by_currency
                .iter()
                .map(|t| total(t.currency.clone(), t.amount.clone(), t.lines))
                .collect(),
            by_payee: b
                .totals
                .by_payee
                .iter()
                .map(|t| total(format!("{} ({})", t.legal_name, t.masked_account), t.amount.clone(), t.lines))
                .collect(),
            reasons: b.policy.reasons.iter().map(|r| r.message.clone()).collect(),
            required_approvals: u32::from(row.required_approvals),
            approved_by,
            lines,
            agent_id: row.agent_id,
            id: b.id,
            status: b.status,
            label: b.label,
            batch_hash: b.batch_hash,
            round: b.round,
            created_at: b.created_at,
        })
    }
}
