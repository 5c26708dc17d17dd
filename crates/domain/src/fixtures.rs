//! Sample values for tests, here and in the crates that depend on this one
//! (feature `fixtures`, enabled only by their dev-dependencies).

use crate::canonical::{CanonicalPayee, CanonicalRequest, CANONICAL_VERSION};
use crate::fields::{InvoiceId, PayeeId, ProposalKind, PurposeCode, Reference, SourceAccount};
use crate::money::Currency;

/// 250.00 USD from acme's payout bot to Acme Supplies Ltd, invoice 1842.
pub fn sample_transfer() -> CanonicalRequest {
    CanonicalRequest {
        v: CANONICAL_VERSION,
        tenant_id: "acme".into(),
        agent_id: "payout-bot".into(),
        kind: ProposalKind::Transfer,
        amount_minor: 25_000,
        currency: Currency::parse("USD").expect("a known currency"),
        source_account: SourceAccount::parse("acct_0123456789abcdef").expect("a valid account"),
        destination: CanonicalPayee {
            id: PayeeId::parse("acct_acme0000000001").expect("a valid payee"),
            legal_name: "Acme Supplies Ltd".into(),
            masked_account: "acct_…0001".into(),
        },
        reference: Some(Reference::parse("Invoice 1842").expect("a valid reference")),
        purpose_code: PurposeCode::Vendor,
        invoice_id: Some(InvoiceId::parse("1842").expect("a valid invoice id")),
        transfer_id: None,
        reason_code: None,
    }
}
