//! The canonical request: what a human approves and what the token binds.
//!
//! Built by the server from the parsed request, the credential (tenant, agent)
//! and the payee registry. Its RFC 8785 serialization is hashed into the
//! request hash; the same logical request always gives the same hash.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::fields::{InvoiceId, PayeeId, ProposalKind, PurposeCode, ReasonCode, Reference, SourceAccount, TransferRef};
use super::jcs;
use super::money::Currency;

/// Version of the canonical form; bumped if its shape ever changes, so old
/// hashes stay reproducible.
pub const CANONICAL_VERSION: u32 = 1;

/// The payee as resolved from the tenant's registry at proposal time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CanonicalPayee {
    pub id: PayeeId,
    pub legal_name: String,
    #[cfg_attr(feature = "openapi", schema(examples("acct_…0001")))]
    pub masked_account: String,
}

/// The exact object that was hashed into `request_hash` (RFC 8785 / JCS):
/// normalized values, tenant and agent from the credential, the payee
/// resolved from the registry. Reversals carry the currency, accounts and
/// purpose of the transfer they reverse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CanonicalRequest {
    /// Version of the canonical form.
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub v: u32,
    /// From the credential.
    pub tenant_id: String,
    /// From the credential.
    pub agent_id: String,
    pub kind: ProposalKind,
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub amount_minor: u64,
    pub currency: Currency,
    pub source_account: SourceAccount,
    pub destination: CanonicalPayee,
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub reference: Option<Reference>,
    pub purpose_code: PurposeCode,
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub invoice_id: Option<InvoiceId>,
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub transfer_id: Option<TransferRef>,
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub reason_code: Option<ReasonCode>,
}

/// [`RequestHash`]'s form, as a JSON Schema (ECMA-262) pattern.
pub const REQUEST_HASH_PATTERN: &str = "^sha256:[0-9a-f]{64}$";

/// `sha256:` followed by 64 lowercase hex digits. Only made by hashing.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct RequestHash(String);

impl RequestHash {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first 12 hex digits, for places where a human compares by eye.
    pub fn short(&self) -> &str {
        &self.0["sha256:".len().."sha256:".len() + 12]
    }

    /// Whether a stored or presented hash string names this hash.
    pub fn matches(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl std::fmt::Display for RequestHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl CanonicalRequest {
    /// The payment restated in one sentence, for humans:
    /// "Pay Acme Supplies Ltd, invoice 1842, 250.00 USD, for vendor, from acct_…1234".
    pub fn sentence(&self) -> String {
        let amount = self.currency.format_minor(self.amount_minor);
        match self.kind {
            ProposalKind::Transfer => {
                let invoice = self.invoice_id.as_ref().map(|i| format!(", invoice {i}")).unwrap_or_default();
                format!(
                    "Pay {}{invoice}, {amount}, for {}, from {}",
                    self.destination.legal_name, self.purpose_code, self.source_account
                )
            }
            ProposalKind::Reversal => {
                let transfer = self.transfer_id.as_ref().map(|t| format!(" (transfer {t})")).unwrap_or_default();
                let reason = self.reason_code.map(|r| format!(", reason {r}")).unwrap_or_default();
                format!("Reverse {amount} paid to {}{transfer}{reason}", self.destination.legal_name)
            }
        }
    }

    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a canonical request always serializes")
    }

    /// The RFC 8785 bytes that are hashed.
    pub fn to_jcs(&self) -> Vec<u8> {
        jcs::to_vec(&self.to_value()).expect("a canonical request holds only integers")
    }

    pub fn hash(&self) -> RequestHash {
        RequestHash(format!("sha256:{}", hex::encode(Sha256::digest(self.to_jcs()))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::sample_transfer as sample;
    use proptest::prelude::*;

    #[test]
    fn restates_the_payment_in_one_sentence() {
        assert_eq!(sample().sentence(), "Pay Acme Supplies Ltd, invoice 1842, 250.00 USD, for vendor, from acct_…cdef");
        let mut jpy = sample();
        jpy.currency = Currency::parse("JPY").unwrap();
        jpy.invoice_id = None;
        assert_eq!(jpy.sentence(), "Pay Acme Supplies Ltd, 25,000 JPY, for vendor, from acct_…cdef");
    }

    #[test]
    fn hash_has_the_contract_shape() {
        let h = sample().hash();
        assert!(h.as_str().starts_with("sha256:"));
        assert_eq!(h.as_str().len(), 7 + 64);
        assert!(h.as_str()[7..].chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)));
        assert_eq!(h.short().len(), 12);
    }

    #[test]
    fn hash_is_pinned() {
        // A change here changes every stored hash: bump CANONICAL_VERSION instead.
        let jcs = String::from_utf8(sample().to_jcs()).unwrap();
        assert_eq!(
            jcs,
            r#"{"agent_id":"payout-bot","amount_minor":25000,"currency":"USD","destination":{"id":"acct_acme0000000001","legal_name":"Acme Supplies Ltd","masked_account":"acct_…0001"},"invoice_id":"1842","kind":"transfer","purpose_code":"vendor","reason_code":null,"reference":"Invoice 1842","source_account":"acct_0123456789abcdef","tenant_id":"acme","transfer_id":null,"v":1}"#
        );
    }

    #[test]
    fn survives_a_round_trip_through_storage() {
        let c = sample();
        let stored = serde_json::to_string_pretty(&c).unwrap();
        let back: CanonicalRequest = serde_json::from_str(&stored).unwrap();
        assert_eq!(back.hash(), c.hash());
    }

    proptest! {
        #[test]
        fn hash_is_stable_under_key_order(seed in any::<u64>()) {
            // Re-serialize with members shuffled: the hash is unchanged.
            let c = sample();
            let serde_json::Value::Object(map) = c.to_value() else { unreachable!() };
            let mut entries: Vec<_> = map.into_iter().collect();
            let n = entries.len();
            for i in 0..n {
                let j = (seed.wrapping_mul(6364136223846793005).wrapping_add(i as u64) % n as u64) as usize;
                entries.swap(i, j);
            }
            let text = format!(
                "{{{}}}",
                entries.iter().map(|(k, v)| format!("{:?}: {}", k, v)).collect::<Vec<_>>().join(", ")
            );
            let back: CanonicalRequest = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(back.hash(), c.hash());
        }

        #[test]
        fn any_field_change_changes_the_hash(
            amount in 1u64..1_000_000_000,
            which in 0usize..9,
            text in "[A-Za-z0-9]{1,10}",
        ) {
            let base = sample();
            let mut changed = base.clone();
            match which {
                0 => changed.amount_minor = if amount == base.amount_minor { amount + 1 } else { amount },
                1 => changed.currency = Currency::parse("EUR").unwrap(),
                2 => changed.destination.id = PayeeId::parse(&format!("ba_{text}")).unwrap(),
                3 => changed.reference = Some(Reference::parse(&format!("ref {text}")).unwrap()),
                4 => changed.purpose_code = PurposeCode::Refund,
                5 => changed.invoice_id = Some(InvoiceId::parse(&format!("inv{text}")).unwrap()),
                6 => changed.source_account = SourceAccount::parse("acct_ffffffffffffffff").unwrap(),
                7 => changed.kind = ProposalKind::Reversal,
                _ => changed.tenant_id = format!("t{text}"),
            }
            prop_assert_ne!(changed.hash(), base.hash());
        }
    }
}
