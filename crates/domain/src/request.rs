//! The agent's proposal request, parsed strictly from JSON.
//!
//! Every problem is collected, so one 422 names every offending field. Numbers
//! must be JSON integers (`2500.0` and `"2500"` are refused), unknown fields
//! are refused (identity comes from the credential, never from the body).

use serde::Serialize;
use serde_json::{Map, Value};

use super::fields::{
    FieldRule, InvoiceId, PayeeId, ProposalKind, PurposeCode, ReasonCode, Reference, RunId, SourceAccount, TransferRef,
};
use super::money::{AmountMinor, Currency, CurrencyRules};

/// One offending field of a request, as reported in `error.details`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FieldError {
    /// The offending field (empty for the body as a whole).
    pub field: String,
    #[cfg_attr(
        feature = "openapi",
        schema(examples("required", "invalid_type", "invalid_value", "unknown_field", "forbidden"))
    )]
    pub code: &'static str,
    pub message: String,
}

impl FieldError {
    pub fn new(field: &str, code: &'static str, message: impl Into<String>) -> Self {
        FieldError { field: field.to_owned(), code, message: message.into() }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferRequest {
    pub run_id: RunId,
    pub amount: AmountMinor,
    pub currency: Currency,
    pub source_account: SourceAccount,
    pub destination: PayeeId,
    pub reference: Option<Reference>,
    pub purpose: PurposeCode,
    pub invoice_id: Option<InvoiceId>,
}

/// A request to reverse a succeeded transfer. Currency, accounts and purpose
/// come from the transfer it names; `amount_minor` (optional) asks for a
/// partial reversal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReversalRequest {
    pub run_id: RunId,
    pub transfer: TransferRef,
    pub reason: ReasonCode,
    pub amount_minor: Option<u64>,
    pub reference: Option<Reference>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProposalRequest {
    Transfer(TransferRequest),
    Reversal(ReversalRequest),
}

impl ProposalRequest {
    pub fn run_id(&self) -> &RunId {
        match self {
            ProposalRequest::Transfer(t) => &t.run_id,
            ProposalRequest::Reversal(r) => &r.run_id,
        }
    }
}

/// Every field a transfer may carry (`crate::openapi` documents exactly these).
pub(crate) const TRANSFER_FIELDS: &[&str] = &[
    "run_id",
    "kind",
    "amount_minor",
    "currency",
    "source_account",
    "destination",
    "reference",
    "purpose_code",
    "invoice_id",
];
/// The fields only a reversal carries.
pub(crate) const REVERSAL_ONLY: &[&str] = &["transfer_id", "reason_code"];
/// The transfer fields a reversal may not carry.
pub(crate) const REVERSAL_FORBIDDEN: &[&str] =
    &["currency", "source_account", "destination", "purpose_code", "invoice_id"];

/// Collects field errors while reading one JSON object.
struct Reader<'a> {
    obj: &'a Map<String, Value>,
    errors: Vec<FieldError>,
}

impl<'a> Reader<'a> {
    fn get(&self, field: &str) -> Option<&'a Value> {
        self.obj.get(field).filter(|v| !v.is_null())
    }

    fn string(&mut self, field: &str, required: bool) -> Option<&'a str> {
        match self.get(field) {
            None if required => {
                self.errors.push(FieldError::new(field, "required", "is required"));
                None
            }
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(_) => {
                self.errors.push(FieldError::new(field, "invalid_type", "must be a string"));
                None
            }
        }
    }

    fn parsed<T>(&mut self, field: &str, required: bool, parse: impl Fn(&str) -> Result<T, FieldRule>) -> Option<T> {
        let s = self.string(field, required)?;
        match parse(s) {
            Ok(v) => Some(v),
            Err(rule) => {
                self.errors.push(FieldError::new(field, "invalid_value", rule.0));
                None
            }
        }
    }

    fn integer(&mut self, field: &str, required: bool) -> Option<i128> {
        match self.get(field) {
            None if required => {
                self.errors.push(FieldError::new(field, "required", "is required"));
                None
            }
            None => None,
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => {
                n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from))
            }
            Some(_) => {
                self.errors.push(FieldError::new(
                    field,
                    "invalid_type",
                    "must be a JSON integer in minor units (no decimals, no strings)",
                ));
                None
            }
        }
    }

    fn forbid(&mut self, fields: &[&str], why: &str) {
        for field in fields {
            if self.obj.contains_key(*field) {
                self.errors.push(FieldError::new(field, "forbidden", why.to_owned()));
            }
        }
    }
}

impl ProposalRequest {
    /// Parses a request body already decoded as JSON.
    pub fn parse(body: &Value, currencies: &CurrencyRules) -> Result<ProposalRequest, Vec<FieldError>> {
        let Value::Object(obj) = body else {
            return Err(vec![FieldError::new("", "invalid_type", "the body must be a JSON object")]);
        };
        let mut r = Reader { obj, errors: Vec::new() };

        let mut unknown: Vec<&String> = obj
            .keys()
            .filter(|k| !TRANSFER_FIELDS.contains(&k.as_str()) && !REVERSAL_ONLY.contains(&k.as_str()))
            .collect();
        unknown.sort();
        for field in unknown {
            r.errors.push(FieldError::new(field, "unknown_field", "is not a field of a proposal request"));
        }

        let run_id = r.parsed("run_id", true, RunId::parse);
        let kind = r.parsed("kind", false, ProposalKind::parse).unwrap_or(ProposalKind::Transfer);
        let reference = r.parsed("reference", false, Reference::parse);

        let request = match kind {
            ProposalKind::Transfer => {
                r.forbid(REVERSAL_ONLY, "is only allowed for kind reversal");
                let currency = r.parsed("currency", true, |s| {
                    let c = Currency::parse(s).map_err(|_| FieldRule("must be an ISO 4217 currency code"))?;
                    currencies.cap(c).map(|_| c).ok_or(FieldRule("is not a currency this deployment accepts"))
                });
                let raw_amount = r.integer("amount_minor", true);
                let amount = match (raw_amount, currency) {
                    (Some(v), Some(c)) => {
                        let cap = currencies.cap(c).expect("currency was checked against the allowlist");
                        match AmountMinor::parse(v, c, cap) {
                            Ok(a) => Some(a),
                            Err(e) => {
                                r.errors.push(FieldError::new("amount_minor", "invalid_value", format!("{e}")));
                                None
                            }
                        }
                    }
                    (Some(v), None) if v <= 0 => {
                        r.errors.push(FieldError::new("amount_minor", "invalid_value", "must be greater than zero"));
                        None
                    }
                    _ => None,
                };
                let source_account = r.parsed("source_account", true, SourceAccount::parse);
                let destination = r.parsed("destination", true, PayeeId::parse);
                let purpose = r.parsed("purpose_code", true, PurposeCode::parse);
                let invoice_id = r.parsed("invoice_id", false, InvoiceId::parse);
                match (run_id, amount, currency, source_account, destination, purpose) {
                    (
                        Some(run_id),
                        Some(amount),
                        Some(currency),
                        Some(source_account),
                        Some(destination),
                        Some(purpose),
                    ) if r.errors.is_empty() => Some(ProposalRequest::Transfer(TransferRequest {
                        run_id,
                        amount,
                        currency,
                        source_account,
                        destination,
                        reference,
                        purpose,
                        invoice_id,
                    })),
                    _ => None,
                }
            }
            ProposalKind::Reversal => {
                r.forbid(REVERSAL_FORBIDDEN, "is taken from the transfer being reversed");
                let transfer = r.parsed("transfer_id", true, TransferRef::parse);
                let reason = r.parsed("reason_code", true, ReasonCode::parse);
                let amount_minor = match r.integer("amount_minor", false) {
                    Some(v) if v <= 0 || v > i128::from(u64::MAX) => {
                        r.errors.push(FieldError::new("amount_minor", "invalid_value", "must be greater than zero"));
                        None
                    }
                    other => other.map(|v| v as u64),
                };
                match (run_id, transfer, reason) {
                    (Some(run_id), Some(transfer), Some(reason)) if r.errors.is_empty() => {
                        Some(ProposalRequest::Reversal(ReversalRequest {
                            run_id,
                            transfer,
                            reason,
                            amount_minor,
                            reference,
                        }))
                    }
                    _ => None,
                }
            }
        };
        match request {
            Some(req) if r.errors.is_empty() => Ok(req),
            _ => Err(r.errors),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn rules() -> CurrencyRules {
        CurrencyRules::defaults()
    }

    fn valid() -> Value {
        json!({
            "run_id": "run-42",
            "amount_minor": 25000,
            "currency": "usd",
            "source_account": "acct_0123456789abcdef",
            "destination": "acct_acme0000000001",
            "reference": "Invoice 1842",
            "purpose_code": "vendor",
            "invoice_id": "1842"
        })
    }

    fn fields(errors: &[FieldError]) -> Vec<&str> {
        errors.iter().map(|e| e.field.as_str()).collect()
    }

    #[test]
    fn parses_a_valid_transfer_with_canonical_currency() {
        let ProposalRequest::Transfer(t) = ProposalRequest::parse(&valid(), &rules()).unwrap() else {
            panic!("expected a transfer")
        };
        assert_eq!(t.currency.code(), "USD");
        assert_eq!(t.amount.get(), 25000);
        assert_eq!(t.invoice_id.unwrap().as_str(), "1842");
    }

    #[test]
    fn refuses_floats_and_strings_for_amounts() {
        for bad in [json!(2500.0), json!("2500"), json!(2.5e3), json!(true)] {
            let mut body = valid();
            body["amount_minor"] = bad.clone();
            let errors = ProposalRequest::parse(&body, &rules()).unwrap_err();
            assert_eq!(fields(&errors), ["amount_minor"], "{bad}");
            assert_eq!(errors[0].code, "invalid_type");
        }
    }

    #[test]
    fn names_every_offending_field() {
        let body = json!({
            "run_id": "",
            "amount_minor": -5,
            "currency": "XXX",
            "source_account": "acct_short",
            "destination": "iban_1",
            "purpose_code": "bribe",
            "tenant": "other",
            "user_id": "usr_1"
        });
        let errors = ProposalRequest::parse(&body, &rules()).unwrap_err();
        let mut got = fields(&errors);
        got.sort();
        assert_eq!(
            got,
            [
                "amount_minor",
                "currency",
                "destination",
                "purpose_code",
                "run_id",
                "source_account",
                "tenant",
                "user_id"
            ]
        );
    }

    #[test]
    fn missing_fields_are_required() {
        let errors = ProposalRequest::parse(&json!({}), &rules()).unwrap_err();
        let mut got = fields(&errors);
        got.sort();
        assert_eq!(got, ["amount_minor", "currency", "destination", "purpose_code", "run_id", "source_account"]);
        assert!(errors.iter().all(|e| e.code == "required"));
    }

    #[test]
    fn cap_and_allowlist() {
        let mut body = valid();
        body["amount_minor"] = json!(100_000_001u64);
        assert_eq!(fields(&ProposalRequest::parse(&body, &rules()).unwrap_err()), ["amount_minor"]);
        body["amount_minor"] = json!(1);
        body["currency"] = json!("CHF");
        assert_eq!(fields(&ProposalRequest::parse(&body, &rules()).unwrap_err()), ["currency"]);
    }

    #[test]
    fn reversal_fields_are_forbidden_on_transfers_and_vice_versa() {
        let mut body = valid();
        body["transfer_id"] = json!("prop_abc");
        assert_eq!(fields(&ProposalRequest::parse(&body, &rules()).unwrap_err()), ["transfer_id"]);

        let reversal = json!({"run_id": "r", "kind": "reversal", "transfer_id": "prop_abc", "reason_code": "duplicate", "currency": "USD"});
        assert_eq!(fields(&ProposalRequest::parse(&reversal, &rules()).unwrap_err()), ["currency"]);
        let reversal =
            json!({"run_id": "r", "kind": "reversal", "transfer_id": "prop_abc", "reason_code": "duplicate"});
        assert!(matches!(ProposalRequest::parse(&reversal, &rules()), Ok(ProposalRequest::Reversal(_))));
    }

    #[test]
    fn body_must_be_an_object() {
        assert!(ProposalRequest::parse(&json!([1]), &rules()).is_err());
    }

    proptest! {
        #[test]
        fn any_amount_accepted_is_within_range(v in any::<i64>()) {
            let mut body = valid();
            body["amount_minor"] = json!(v);
            if let Ok(ProposalRequest::Transfer(t)) = ProposalRequest::parse(&body, &rules()) {
                prop_assert!(t.amount.get() >= 1 && t.amount.get() <= 100_000_000);
            } else {
                prop_assert!(v <= 0 || v > 100_000_000);
            }
        }

        #[test]
        fn any_extra_field_is_refused(name in "[a-z_]{1,12}") {
            prop_assume!(!TRANSFER_FIELDS.contains(&name.as_str()) && !REVERSAL_ONLY.contains(&name.as_str()));
            let mut body = valid();
            body[name.as_str()] = json!("x");
            let errors = ProposalRequest::parse(&body, &rules()).unwrap_err();
            prop_assert!(errors.iter().any(|e| e.field == name && e.code == "unknown_field"));
        }
    }
}
