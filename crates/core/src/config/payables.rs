//! `[payables]`: the accounts-payable controls computed at intake, beside
//! policy (`crate::payables`; docs/POLICY.md "Invoices", "Split payments",
//! "Bank-account changes").

use serde::{Deserialize, Serialize};

/// What becomes of a proposal naming an invoice the tenant's registry does
/// not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnregisteredInvoices {
    /// It goes on as if it named none, and the page says it is not registered.
    Allow,
    /// It is refused (403 `policy_denied`, rule `invoice_unregistered`).
    Refuse,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PayablesSettings {
    /// Proposals to one payee in one currency within this many seconds are
    /// added up: one whose total crosses an approval threshold that it alone
    /// does not needs the approval the total would need (rule
    /// `split_payment`). 0: not checked.
    pub split_window_secs: u64,
    /// The approvals the first payment to a payee after a verified change of
    /// its bank account needs at least (rule `account_changed`; never
    /// approved by policy alone).
    pub account_change_approvals: u8,
    /// A proposal naming an invoice the registry does not hold: `allow` or
    /// `refuse`.
    pub unregistered_invoices: UnregisteredInvoices,
}

impl Default for PayablesSettings {
    fn default() -> Self {
        PayablesSettings {
            split_window_secs: 0,
            account_change_approvals: 2,
            unregistered_invoices: UnregisteredInvoices::Allow,
        }
    }
}

impl PayablesSettings {
    /// The settings' own checks: the key and why, for the first that fails.
    pub fn check(&self) -> Result<(), (String, &'static str)> {
        if self.split_window_secs > 31 * 24 * 3600 {
            return Err(("payables.split_window_secs".into(), "must be at most 31 days (2678400)"));
        }
        if !(1..=4).contains(&self.account_change_approvals) {
            return Err(("payables.account_change_approvals".into(), "must be between 1 and 4"));
        }
        Ok(())
    }
}
