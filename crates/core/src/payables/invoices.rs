//! A payment checked against the invoice it names.
//!
//! The invoice must be the tenant's, open, owed to the payment's payee (the
//! account it goes to, and the payee's legal name is the vendor's on the
//! invoice), in the payment's currency, and the amount must fit its open
//! balance (its amount less what was paid and what payments in flight
//! hold). Checked:
//!
//! - at intake ([`at_intake`]): a registered invoice that does not match
//!   refuses the proposal (403 `policy_denied`, rule `invoice_mismatch`,
//!   every check that failed in the message); an invoice the registry does
//!   not hold is refused only with `payables.unregistered_invoices = "refuse"`
//!   (rule `invoice_unregistered`);
//! - at commit ([`at_commit`]) as it stands then, and the amount is reserved
//!   against the open balance in the commit's transaction (a conditional
//!   UPDATE reading the balance in the same statement), so two payments can
//!   never both take its last part;
//! - for the console ([`for_proposal`]): each check in plain words, beside
//!   the request.

use crate::config::payables::UnregisteredInvoices;
use crate::config::Config;
use crate::decision::policy::Decision;
use crate::domain::{mask_account_tagged, CanonicalRequest, Currency, ProposalKind};
use crate::store::invoices::{InvoiceKey, InvoiceRow};
use crate::store::operations::{HeldInvoice, OpStatus, OperationRow};
use crate::store::{self, proposals::ProposalRow, Store};

/// The rule a registered invoice that does not match is refused under.
pub const RULE_MISMATCH: &str = "invoice_mismatch";
/// The rule an invoice the registry does not hold is refused under.
pub const RULE_UNREGISTERED: &str = "invoice_unregistered";

/// One check of a payment against its invoice: a stable code, whether it
/// holds, and what a person reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// `registered`, `open`, `payee_account`, `vendor_name`, `currency`, `amount`.
    pub code: &'static str,
    pub ok: bool,
    pub message: String,
}

/// A payment and the invoice it names, check by check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvoiceMatch {
    pub number: String,
    /// The invoice it was checked against (owed to this payee, or else the
    /// one of that number owed to someone else), if any.
    pub invoice: Option<InvoiceRow>,
    pub checks: Vec<Check>,
}

impl InvoiceMatch {
    /// Whether every check holds.
    pub fn matches(&self) -> bool {
        self.checks.iter().all(|c| c.ok)
    }

    /// Whether the registry holds an invoice of that number at all.
    pub fn registered(&self) -> bool {
        self.invoice.is_some()
    }

    /// The sentences of the checks that fail.
    pub fn failures(&self) -> Vec<&str> {
        self.checks.iter().filter(|c| !c.ok).map(|c| c.message.as_str()).collect()
    }
}

/// What a payment says, for the checks.
#[derive(Debug, Clone, Copy)]
pub struct Payment<'a> {
    pub payee_id: &'a str,
    /// The payee's legal name in the registry.
    pub legal_name: &'a str,
    pub amount_minor: u64,
    pub currency: Currency,
}

/// What this payment itself already holds of the invoice (its operation's
/// reservation, or what it paid), so a payment in flight or paid still
/// reads as matching the invoice it took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Own {
    Nothing,
    /// Reserved by its operation, in flight.
    Holding,
    /// Paid by its operation.
    Paid,
}

fn money(currency: &str, minor: u64) -> String {
    Currency::parse(currency).map(|c| c.format_minor(minor)).unwrap_or_else(|_| format!("{minor} {currency}"))
}

/// Checks `payment` against invoice `number`: `owed` is the tenant's
/// invoice of that number owed to the payment's payee, `elsewhere` those of
/// that number owed to other payees.
pub fn check(
    number: &str,
    owed: Option<&InvoiceRow>,
    elsewhere: &[InvoiceRow],
    payment: Payment<'_>,
    own: Own,
) -> InvoiceMatch {
    let Some(inv) = owed else {
        let message = match elsewhere.first() {
            Some(other) => format!(
                "Invoice {number} is registered as owed to {} ({}), not to this payee.",
                other.vendor_name,
                mask_account_tagged(&other.payee_id)
            ),
            None => format!("Invoice {number} is not in the tenant's invoice registry."),
        };
        let checks = vec![Check { code: "registered", ok: false, message }];
        return InvoiceMatch { number: number.to_owned(), invoice: elsewhere.first().cloned(), checks };
    };
    let mut checks = Vec::with_capacity(6);
    checks.push(Check {
        code: "registered",
        ok: true,
        message: format!(
            "Invoice {number} is in the tenant's registry (imported {}).",
            inv.created_at.format("%Y-%m-%d")
        ),
    });
    let amount = money(&inv.currency, inv.amount_minor);
    let open_check = match (inv.status.as_str(), own) {
        ("open", _) => Check { code: "open", ok: true, message: format!("Open, due {}.", inv.due_date) },
        ("paid", Own::Paid) => Check { code: "open", ok: true, message: "Paid in full, this payment included.".into() },
        ("paid", _) => Check { code: "open", ok: false, message: format!("Already paid in full ({amount}).") },
        ("void", _) => {
            Check { code: "open", ok: false, message: "Void: the accounting system cancelled this invoice.".into() }
        }
        (other, _) => Check { code: "open", ok: false, message: format!("Not open ({other}).") },
    };
    checks.push(open_check);
    checks.push(Check {
        code: "payee_account",
        ok: inv.payee_id == payment.payee_id,
        message: format!("Owed to {}, the account this payment goes to.", mask_account_tagged(&inv.payee_id)),
    });
    let named = crate::payables::same_name(&inv.vendor_name, payment.legal_name);
    checks.push(Check {
        code: "vendor_name",
        ok: named,
        message: if named {
            format!("Vendor on the invoice: {}, the payee's legal name.", inv.vendor_name)
        } else {
            format!(
                "Vendor on the invoice: \u{201c}{}\u{201d}; the payee's legal name is \u{201c}{}\u{201d}.",
                inv.vendor_name, payment.legal_name
            )
        },
    });
    let same_currency = inv.currency == payment.currency.code();
    checks.push(Check {
        code: "currency",
        ok: same_currency,
        message: if same_currency {
            format!("In {}, as the payment.", inv.currency)
        } else {
            format!("The invoice is in {}; the payment is in {}.", inv.currency, payment.currency.code())
        },
    });
    let this = payment.currency.format_minor(payment.amount_minor);
    let taken = inv.paid_minor + inv.reserved_minor;
    let amount_check = match own {
        Own::Holding => Check {
            code: "amount",
            ok: true,
            message: format!("This payment holds {this} of the invoice's {amount} while it is paid."),
        },
        Own::Paid => Check { code: "amount", ok: true, message: format!("This payment paid {this} of {amount}.") },
        Own::Nothing if !same_currency => Check {
            code: "amount",
            ok: false,
            message: format!("{this} cannot be set against an invoice in {}.", inv.currency),
        },
        Own::Nothing => {
            let open = money(&inv.currency, inv.open_minor());
            let before = if taken == 0 {
                "nothing paid yet".to_owned()
            } else {
                format!("{} paid or being paid", money(&inv.currency, taken))
            };
            if payment.amount_minor <= inv.open_minor() {
                Check {
                    code: "amount",
                    ok: true,
                    message: format!("{this} fits the open balance of {open} (of {amount}; {before})."),
                }
            } else {
                Check {
                    code: "amount",
                    ok: false,
                    message: format!("{this} is more than the open balance of {open} (of {amount}; {before})."),
                }
            }
        }
    };
    checks.push(amount_check);
    InvoiceMatch { number: number.to_owned(), invoice: Some(inv.clone()), checks }
}

/// The tenant's invoice `number` owed to `payee`, and those of that number
/// owed to others (read only when it is not owed to `payee`).
async fn lookup(
    exec: &store::Pool,
    tenant: &str,
    payee: &str,
    number: &str,
) -> store::Result<(Option<InvoiceRow>, Vec<InvoiceRow>)> {
    let owed = store::invoices::get(exec, InvoiceKey { tenant_id: tenant, payee_id: payee, number }).await?;
    if owed.is_some() {
        return Ok((owed, Vec::new()));
    }
    Ok((None, store::invoices::by_number(exec, tenant, number).await?))
}

/// The refusal, when a request naming an invoice may not be proposed: a
/// registered invoice that does not match, or one not registered where the
/// tenant's registry is required. `None`: it may go on.
pub async fn at_intake(state: &(impl Store + Config), canonical: &CanonicalRequest) -> store::Result<Option<Decision>> {
    let Some(number) = canonical.invoice_id.as_ref().filter(|_| canonical.kind == ProposalKind::Transfer) else {
        return Ok(None);
    };
    let payment = Payment {
        payee_id: canonical.destination.id.expose(),
        legal_name: &canonical.destination.legal_name,
        amount_minor: canonical.amount_minor,
        currency: canonical.currency,
    };
    let (owed, elsewhere) = lookup(&state.db().read, &canonical.tenant_id, payment.payee_id, number.as_str()).await?;
    Ok(refusal(state, &check(number.as_str(), owed.as_ref(), &elsewhere, payment, Own::Nothing)))
}

/// Why `found` refuses the payment, if it does.
fn refusal(state: &impl Config, found: &InvoiceMatch) -> Option<Decision> {
    if found.matches() {
        return None;
    }
    let owed_here = found.checks.iter().any(|c| c.code == "registered" && c.ok);
    let elsewhere = found.registered() && !owed_here;
    if !owed_here && !elsewhere {
        return match state.settings().payables.unregistered_invoices {
            UnregisteredInvoices::Allow => None,
            UnregisteredInvoices::Refuse => Some(Decision::denied_by(
                RULE_UNREGISTERED,
                format!(
                    "Invoice {} is not in the tenant's invoice registry, and this tenant pays registered invoices only.",
                    found.number
                ),
            )),
        };
    }
    Some(Decision::denied_by(RULE_MISMATCH, found.failures().join(" ")))
}

/// At commit: the refusal if the invoice no longer matches, else the
/// registered invoice whose open balance the commit's transaction reserves
/// (`None`: the payment names no registered invoice).
pub async fn at_commit<'a>(
    state: &(impl Store + Config),
    row: &'a ProposalRow,
) -> store::Result<Result<Option<HeldInvoice<'a>>, Decision>> {
    at_commit_of(state, &row.tenant_id, &row.payee_id, &row.request).await
}

/// [`at_commit`] for a payment's canonical request to `payee_id`, before
/// its proposal is stored (a batch's line, read before its transaction).
pub async fn at_commit_of<'a>(
    state: &(impl Store + Config),
    tenant_id: &str,
    payee_id: &'a str,
    c: &'a CanonicalRequest,
) -> store::Result<Result<Option<HeldInvoice<'a>>, Decision>> {
    let Some(number) = c.invoice_id.as_ref().filter(|_| c.kind == ProposalKind::Transfer) else {
        return Ok(Ok(None));
    };
    let read = &state.db().read;
    // The payee as it stands now: its legal name may have changed since.
    let legal_name = match store::directory::payee(read, tenant_id, payee_id).await? {
        Some(payee) => payee.legal_name,
        None => c.destination.legal_name.clone(),
    };
    let payment = Payment { payee_id, legal_name: &legal_name, amount_minor: c.amount_minor, currency: c.currency };
    let (owed, elsewhere) = lookup(read, tenant_id, payee_id, number.as_str()).await?;
    let found = check(number.as_str(), owed.as_ref(), &elsewhere, payment, Own::Nothing);
    if let Some(refused) = refusal(state, &found) {
        return Ok(Err(refused));
    }
    Ok(Ok(owed.is_some().then(|| HeldInvoice { payee_id, invoice_id: number.as_str() })))
}

/// Why the commit's reservation was refused, in a sentence, read after it
/// was (the invoice as it stands once the transaction gave up).
pub async fn reservation_refused(
    conn: &mut store::Conn,
    row: &ProposalRow,
    invoice: HeldInvoice<'_>,
) -> store::Result<Decision> {
    let key = InvoiceKey { tenant_id: &row.tenant_id, payee_id: invoice.payee_id, number: invoice.invoice_id };
    let now = store::invoices::get(&mut *conn, key).await?;
    let c = &row.request;
    let payment = Payment {
        payee_id: &row.payee_id,
        legal_name: &c.destination.legal_name,
        amount_minor: c.amount_minor,
        currency: c.currency,
    };
    let found = check(invoice.invoice_id, now.as_ref(), &[], payment, Own::Nothing);
    let message = match found.failures() {
        failures if failures.is_empty() => format!(
            "Invoice {} changed while this payment was being recorded: try the commit again.",
            invoice.invoice_id
        ),
        failures => failures.join(" "),
    };
    Ok(Decision::denied_by(RULE_MISMATCH, message))
}

/// What this proposal's operation holds of its invoice.
fn own(operation: Option<&OperationRow>) -> Own {
    match operation {
        Some(op) if op.invoice_number.is_some() => match op.status {
            OpStatus::Succeeded => Own::Paid,
            OpStatus::Failed | OpStatus::TooLate => Own::Nothing,
            _ => Own::Holding,
        },
        _ => Own::Nothing,
    }
}

/// The match the console shows beside a payment not recorded as a proposal
/// yet (a batch's line): its invoice as it stands now. `None` when it names
/// none.
pub async fn for_request(state: &impl Store, canonical: &CanonicalRequest) -> store::Result<Option<InvoiceMatch>> {
    let Some(number) = canonical.invoice_id.as_ref().filter(|_| canonical.kind == ProposalKind::Transfer) else {
        return Ok(None);
    };
    let payment = Payment {
        payee_id: canonical.destination.id.expose(),
        legal_name: &canonical.destination.legal_name,
        amount_minor: canonical.amount_minor,
        currency: canonical.currency,
    };
    let (owed, elsewhere) = lookup(&state.db().read, &canonical.tenant_id, payment.payee_id, number.as_str()).await?;
    Ok(Some(check(number.as_str(), owed.as_ref(), &elsewhere, payment, Own::Nothing)))
}

/// The match the console shows beside a stored proposal: its invoice as it
/// stands now, checked against the payee as it stands now. `None` when it
/// names no invoice.
pub async fn for_proposal(
    state: &impl Store,
    row: &ProposalRow,
    operation: Option<&OperationRow>,
) -> store::Result<Option<InvoiceMatch>> {
    let c = &row.request;
    let Some(number) = c.invoice_id.as_ref().filter(|_| c.kind == ProposalKind::Transfer) else {
        return Ok(None);
    };
    let read = &state.db().read;
    let legal_name = match store::directory::payee(read, &row.tenant_id, &row.payee_id).await? {
        Some(payee) => payee.legal_name,
        None => c.destination.legal_name.clone(),
    };
    let payment = Payment {
        payee_id: &row.payee_id,
        legal_name: &legal_name,
        amount_minor: c.amount_minor,
        currency: c.currency,
    };
    let (owed, elsewhere) = lookup(read, &row.tenant_id, &row.payee_id, number.as_str()).await?;
    Ok(Some(check(number.as_str(), owed.as_ref(), &elsewhere, payment, own(operation))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};

    fn invoice(status: &str, paid: u64, reserved: u64) -> InvoiceRow {
        InvoiceRow {
            tenant_id: "acme".into(),
            payee_id: "ba_northwind0007".into(),
            number: "INV-1842".into(),
            vendor_name: "Northwind Traders GmbH".into(),
            amount_minor: 100_000,
            currency: "USD".into(),
            due_date: "2026-12-01".into(),
            status: status.into(),
            purpose: "vendor".into(),
            paid_minor: paid,
            reserved_minor: reserved,
            note: None,
            vendor_memo: None,
            import_id: "imp_1".into(),
            created_at: DateTime::<Utc>::UNIX_EPOCH,
            updated_at: DateTime::<Utc>::UNIX_EPOCH,
        }
    }

    fn pay(amount: u64) -> Payment<'static> {
        Payment {
            payee_id: "ba_northwind0007",
            legal_name: "Northwind Traders GmbH",
            amount_minor: amount,
            currency: Currency::parse("USD").unwrap(),
        }
    }

    fn failing(m: &InvoiceMatch) -> Vec<&'static str> {
        m.checks.iter().filter(|c| !c.ok).map(|c| c.code).collect()
    }

    #[test]
    fn a_payment_that_fits_an_open_invoice_of_its_payee_matches_every_check() {
        let inv = invoice("open", 25_000, 0);
        let m = check("INV-1842", Some(&inv), &[], pay(75_000), Own::Nothing);
        assert!(m.matches(), "{m:?}");
        let codes: Vec<_> = m.checks.iter().map(|c| c.code).collect();
        assert_eq!(codes, ["registered", "open", "payee_account", "vendor_name", "currency", "amount"]);
        assert_eq!(
            m.checks[5].message,
            "750.00 USD fits the open balance of 750.00 USD (of 1,000.00 USD; 250.00 USD paid or being paid)."
        );
    }

    #[test]
    fn each_way_a_payment_can_miss_its_invoice_is_named() {
        let over = check("INV-1842", Some(&invoice("open", 25_000, 10_000)), &[], pay(65_001), Own::Nothing);
        assert_eq!(failing(&over), ["amount"]);
        assert!(over.failures()[0].contains("more than the open balance of 650.00 USD"), "{over:?}");
        assert_eq!(
            failing(&check("INV-1842", Some(&invoice("paid", 100_000, 0)), &[], pay(1), Own::Nothing)),
            ["open", "amount"]
        );
        assert_eq!(failing(&check("INV-1842", Some(&invoice("void", 0, 0)), &[], pay(1), Own::Nothing)), ["open"]);
        let renamed = Payment { legal_name: "Northwind Trading GmbH", ..pay(1) };
        assert_eq!(
            failing(&check("INV-1842", Some(&invoice("open", 0, 0)), &[], renamed, Own::Nothing)),
            ["vendor_name"]
        );
        let euros = Payment { currency: Currency::parse("EUR").unwrap(), ..pay(1) };
        assert_eq!(
            failing(&check("INV-1842", Some(&invoice("open", 0, 0)), &[], euros, Own::Nothing)),
            ["currency", "amount"]
        );
        let missing = check("INV-9", None, &[], pay(1), Own::Nothing);
        assert_eq!((failing(&missing), missing.registered()), (vec!["registered"], false));
        let other = InvoiceRow {
            payee_id: "acct_acme0000000001".into(),
            vendor_name: "Acme Supplies Ltd".into(),
            ..invoice("open", 0, 0)
        };
        let elsewhere = check("INV-1842", None, &[other], pay(1), Own::Nothing);
        assert!(elsewhere.registered());
        assert!(elsewhere.failures()[0].contains("owed to Acme Supplies Ltd (acct_…0001 #"), "{elsewhere:?}");
        assert!(!elsewhere.failures()[0].contains("acme0000000001"), "the account is masked");
    }

    #[test]
    fn a_payment_that_holds_or_paid_its_invoice_still_reads_as_its_match() {
        let holding = check("INV-1842", Some(&invoice("open", 0, 100_000)), &[], pay(100_000), Own::Holding);
        assert!(holding.matches(), "{holding:?}");
        let paid = check("INV-1842", Some(&invoice("paid", 100_000, 0)), &[], pay(100_000), Own::Paid);
        assert!(paid.matches(), "{paid:?}");
        let copy = check("INV-1842", Some(&invoice("paid", 100_000, 0)), &[], pay(100_000), Own::Nothing);
        assert!(!copy.matches(), "another payment of a paid invoice does not");
    }
}
