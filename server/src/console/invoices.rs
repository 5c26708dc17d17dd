//! The invoice a proposal names, as the detail page sets it beside the
//! request: each check of `payables::invoices` in plain words, and a
//! verdict a reviewer reads at a glance (on a phone, at the top).

use app::views::{ConsoleError, InvoiceCheckLine, InvoiceMatchLine};

use super::ConsoleService;
use crate::domain::Currency;
use crate::flow::unavailable;
use crate::payables::invoices::{for_proposal, InvoiceMatch};
use crate::store::{self, proposals::ProposalRow};

fn money(currency: &str, minor: u64) -> String {
    Currency::parse(currency).map(|c| c.format_minor(minor)).unwrap_or_else(|_| format!("{minor} {currency}"))
}

/// The line the page shows for `found`.
pub(super) fn line(found: InvoiceMatch) -> InvoiceMatchLine {
    let failing = found.checks.iter().filter(|c| !c.ok).count();
    let owed_here = found.checks.iter().any(|c| c.code == "registered" && c.ok);
    let (verdict, summary) = if found.matches() {
        ("matches", format!("Matches invoice {}", found.number))
    } else if !found.registered() {
        ("unregistered", format!("Invoice {} is not in the registry: nothing to check it against", found.number))
    } else if !owed_here {
        ("mismatch", format!("Does not match: invoice {} is owed to another payee", found.number))
    } else {
        (
            "mismatch",
            format!(
                "Does not match invoice {}: {failing} check{} fail{}",
                found.number,
                if failing == 1 { "" } else { "s" },
                if failing == 1 { "s" } else { "" }
            ),
        )
    };
    let invoice = found.invoice.as_ref().filter(|_| owed_here);
    InvoiceMatchLine {
        number: found.number.clone(),
        verdict: verdict.into(),
        summary,
        vendor: invoice.map(|i| i.vendor_name.clone()),
        amount: invoice.map(|i| money(&i.currency, i.amount_minor)),
        open: invoice.map(|i| money(&i.currency, i.open_minor())),
        due_date: invoice.map(|i| i.due_date.clone()),
        status: invoice.map(|i| i.status.clone()),
        checks: found
            .checks
            .iter()
            .map(|c| InvoiceCheckLine { code: c.code.into(), ok: c.ok, message: c.message.clone() })
            .collect(),
        note: invoice.and_then(|i| i.note.clone()),
    }
}

impl ConsoleService {
    /// The invoice `row` names, checked as it stands now; what its own
    /// operation holds or paid of it counts as its own.
    pub(super) async fn invoice_match(
        &self,
        row: &ProposalRow,
        committed: bool,
    ) -> Result<Option<InvoiceMatchLine>, ConsoleError> {
        let state = &self.state;
        let operation = match committed {
            true => store::operations::for_proposal(&state.db.read, &row.id).await.map_err(unavailable)?,
            false => None,
        };
        let found = for_proposal(state, row, operation.as_ref()).await.map_err(unavailable)?;
        Ok(found.map(line))
    }
}
