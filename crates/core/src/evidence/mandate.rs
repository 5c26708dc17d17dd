//! The approval as a payment mandate (docs/EVIDENCE.md
//! "The mandate"): the approval token's claims restated as an OAuth Rich
//! Authorization Request `authorization_details` object (RFC 9396), signed
//! by the receipt key, so a rail or a bank that checks mandates can verify
//! the human approval itself.

use serde_json::{json, Value};

use crate::domain::Currency;

/// The mandate's JWS `typ`.
pub const MANDATE_TYP: &str = "countersign-mandate+jwt";

/// The mandate's claims, from the issuer, the approval token's claims and
/// the bundle's request (accounts already replaced by their commitments).
/// `None` when the request's currency or amount is not one Countersign
/// makes (the verifier then reports the request itself).
pub fn claims(issuer: &str, proposal_id: &str, token: &Value, request: &Value) -> Option<Value> {
    let currency = request.get("currency")?.as_str()?;
    let amount = decimal(request.get("amount_minor")?.as_u64()?, Currency::parse(currency).ok()?.exponent());
    Some(json!({
        "iss": issuer,
        "sub": proposal_id,
        "tid": token.get("tid"),
        "rh": token.get("rh"),
        "jti": token.get("jti"),
        "iat": token.get("iat"),
        "exp": token.get("exp"),
        "approvers": token.get("approvers"),
        // Approvals a delegate gave for someone away: who, for whom, under
        // which delegation; none is an empty list.
        "delegations": token.get("delegations").cloned().unwrap_or_else(|| json!([])),
        "amr": token.get("amr"),
        "authorization_details": [{
            "type": "payment_initiation",
            "actions": ["initiate"],
            "locations": [issuer],
            "instructedAmount": {"currency": currency, "amount": amount},
            "creditorName": request.pointer("/destination/legal_name"),
            "creditorAccount": {"commitment": request.pointer("/destination/id")},
            "debtorAccount": {"commitment": request.get("source_account")},
            "remittanceInformationUnstructured": request.get("reference"),
            "purpose": request.get("purpose_code"),
        }],
    }))
}

/// `minor` written with `exponent` decimals: 25000, 2 → `250.00`.
pub(crate) fn decimal(minor: u64, exponent: u8) -> String {
    if exponent == 0 {
        return minor.to_string();
    }
    let unit = 10u64.pow(u32::from(exponent));
    format!("{}.{:0width$}", minor / unit, minor % unit, width = usize::from(exponent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_written_with_the_currencys_decimals() {
        assert_eq!(decimal(25000, 2), "250.00");
        assert_eq!(decimal(5, 2), "0.05");
        assert_eq!(decimal(2500, 0), "2500");
        assert_eq!(decimal(1234, 3), "1.234");
    }

    #[test]
    fn the_mandate_restates_the_token_and_the_request() {
        let token = json!({"tid": "acme", "rh": "sha256:ab", "jti": "j1", "iat": 1, "exp": 301,
                           "approvers": ["ana"], "amr": "passkey", "pid": "prop_1"});
        let request = json!({"currency": "JPY", "amount_minor": 2500, "reference": "INV-1",
                             "purpose_code": "vendor_payment", "source_account": "sha256:11",
                             "destination": {"id": "sha256:22", "legal_name": "Acme"}});
        let c = claims("https://pay.example.com/", "prop_1", &token, &request).unwrap();
        assert_eq!(c["jti"], "j1");
        assert_eq!(c["sub"], "prop_1");
        assert_eq!(c["delegations"], json!([]), "a token without delegations: an empty list");
        let given = json!([{"approver": "usr_ben", "for": "usr_ana", "delegation": "dlg_1"}]);
        let mut delegated = token.clone();
        delegated["delegations"] = given.clone();
        let c2 = claims("https://pay.example.com/", "prop_1", &delegated, &request).unwrap();
        assert_eq!(c2["delegations"], given, "the token's delegations, as they are");
        let d = &c["authorization_details"][0];
        assert_eq!(d["instructedAmount"], json!({"currency": "JPY", "amount": "2500"}));
        assert_eq!(d["creditorAccount"]["commitment"], "sha256:22");
        assert_eq!(d["debtorAccount"]["commitment"], "sha256:11");
        assert_eq!(d["creditorName"], "Acme");
        assert!(claims("i", "p", &token, &json!({"currency": "XXX", "amount_minor": 1})).is_none());
    }
}
