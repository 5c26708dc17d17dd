//! Fuzz target: the agent's proposal request, from raw body bytes to the
//! request hash.
//!
//! The bytes go through the same path as `POST /api/v1/proposals`: the strict
//! JSON reader of the HTTP layer (`http::extract::parse_strict`, which refuses
//! duplicate member names), then `ProposalRequest::parse` under a few currency
//! rule sets. A panic anywhere is a crash, and so is any broken invariant:
//!
//! - the strict reader agrees with plain `serde_json` on every document it
//!   accepts, and refuses only duplicates that `serde_json` would accept;
//! - parsing is deterministic; a refusal names at least one field, and every
//!   unknown member is named;
//! - an accepted transfer has 0 < amount <= the currency's cap, an allowed
//!   upper-case currency, and every field matches its pattern; its `Debug`
//!   never shows a full source account;
//! - re-serializing the parsed request and parsing it again gives the same
//!   request (parsing is idempotent);
//! - the canonical request's RFC 8785 bytes re-parse to the same value, are a
//!   fixed point, survive the storage round trip with the same hash, the hash
//!   has the contract's shape, and changing the amount changes it;
//! - the body's own canonical JSON (the Idempotency-Key fingerprint) is a
//!   fixed point, and is refused only for non-integer numbers.

#![no_main]

use std::collections::BTreeMap;
use std::sync::LazyLock;

use countersign::domain::{
    jcs, AmountMinor, CanonicalPayee, CanonicalRequest, Currency, CurrencyRules, FieldError, ProposalKind,
    ProposalRequest, ReversalRequest, RunId, TransferRequest, CANONICAL_VERSION,
};
use countersign::http::extract::parse_strict;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

const TRANSFER_FIELDS: &[&str] = &[
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
const REVERSAL_FIELDS: &[&str] = &["run_id", "kind", "amount_minor", "reference", "transfer_id", "reason_code"];
const ERROR_CODES: &[&str] = &["required", "invalid_type", "invalid_value", "unknown_field", "forbidden"];

/// A registry name with everything JCS must escape or must leave alone.
const HOSTILE_LEGAL_NAME: &str = "Acme \"Supplies\" \\ Ltd\u{0}\u{8}\u{1f}\u{7f}\u{2028}\u{10000}\u{fb33}é";

/// The deployment defaults, a currency with three decimals and the largest
/// possible cap, and a cap of one minor unit.
static RULES: LazyLock<Vec<CurrencyRules>> = LazyLock::new(|| {
    let currency = |code: &str| Currency::parse(code).expect("known currency");
    vec![
        CurrencyRules::defaults(),
        CurrencyRules::new(BTreeMap::from([(currency("KWD"), u64::MAX), (currency("USD"), u64::MAX)])),
        CurrencyRules::new(BTreeMap::from([(currency("JPY"), 1)])),
    ]
});

fuzz_target!(|data: &[u8]| {
    let strict = parse_strict(data);
    let loose = serde_json::from_slice::<Value>(data);
    let body = match (strict, loose) {
        (Ok(strict), Ok(loose)) => {
            assert_eq!(strict, loose, "the strict reader must read what serde_json reads");
            strict
        }
        (Ok(strict), Err(e)) => panic!("strict reader accepted what serde_json refuses ({e}): {strict}"),
        (Err(e), Ok(_)) => {
            assert!(e.contains("duplicate member"), "strict reader refused a valid document: {e}");
            return;
        }
        (Err(_), Err(_)) => return,
    };

    check_body_fingerprint(&body);
    for rules in RULES.iter() {
        check_parse(&body, rules);
    }
});

/// The Idempotency-Key fingerprint hashes the body's canonical JSON.
fn check_body_fingerprint(body: &Value) {
    match jcs::to_vec(body) {
        Ok(bytes) => {
            let reparsed: Value = serde_json::from_slice(&bytes).expect("canonical JSON parses");
            assert_eq!(&reparsed, body, "canonical JSON changes the value");
            assert_eq!(jcs::to_vec(&reparsed).expect("still canonicalizable"), bytes, "not a fixed point");
        }
        Err(_) => assert!(has_non_integer(body), "canonicalization refused a value with integers only: {body}"),
    }
}

fn has_non_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => !(n.is_i64() || n.is_u64()),
        Value::Array(items) => items.iter().any(has_non_integer),
        Value::Object(map) => map.values().any(has_non_integer),
        _ => false,
    }
}

fn check_parse(body: &Value, rules: &CurrencyRules) {
    let first = ProposalRequest::parse(body, rules);
    assert_eq!(first, ProposalRequest::parse(body, rules), "parsing is not deterministic");
    match &first {
        Ok(ProposalRequest::Transfer(t)) => check_transfer(body, rules, t),
        Ok(ProposalRequest::Reversal(r)) => check_reversal(body, r),
        Err(errors) => check_refusal(body, errors),
    }
    if let Ok(request) = &first {
        let again = ProposalRequest::parse(&restate(request), rules);
        assert_eq!(again.as_ref(), Ok(request), "parsing the restated request gives another request");
    }
}

/// The parsed request written back as an agent would send it.
fn restate(request: &ProposalRequest) -> Value {
    match request {
        ProposalRequest::Transfer(t) => json!({
            "run_id": t.run_id.as_str(),
            "kind": "transfer",
            "amount_minor": t.amount.get(),
            "currency": t.currency.code(),
            "source_account": t.source_account.expose(),
            "destination": t.destination.expose(),
            "reference": t.reference.as_ref().map(|r| r.as_str()),
            "purpose_code": t.purpose.as_str(),
            "invoice_id": t.invoice_id.as_ref().map(|i| i.as_str()),
        }),
        ProposalRequest::Reversal(r) => json!({
            "run_id": r.run_id.as_str(),
            "kind": "reversal",
            "transfer_id": r.transfer.as_str(),
            "reason_code": r.reason.as_str(),
            "amount_minor": r.amount_minor,
            "reference": r.reference.as_ref().map(|r| r.as_str()),
        }),
    }
}

fn is_alnum(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric())
}

fn str_field<'a>(body: &'a Value, field: &str) -> Option<&'a str> {
    body.get(field).and_then(Value::as_str)
}

fn check_common(body: &Value, run_id: &str, reference: Option<&str>) {
    assert!((1..=128).contains(&run_id.len()), "run_id length");
    assert!(run_id.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b)), "run_id pattern");
    assert_eq!(str_field(body, "run_id"), Some(run_id));
    assert_eq!(str_field(body, "reference"), reference, "reference is kept as sent");
    if let Some(text) = reference {
        assert!(text.chars().count() <= 140, "reference longer than 140 characters");
        assert!(
            !text.chars().any(|c| c.is_control()
                || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')),
            "reference with control or formatting characters"
        );
    }
}

fn check_transfer(body: &Value, rules: &CurrencyRules, t: &TransferRequest) {
    let obj = body.as_object().expect("an accepted body is an object");
    for key in obj.keys() {
        assert!(TRANSFER_FIELDS.contains(&key.as_str()), "transfer accepted with member {key:?}");
    }
    assert!(matches!(body.get("kind"), None | Some(Value::Null)) || str_field(body, "kind") == Some("transfer"));

    let cap = rules.cap(t.currency).expect("an accepted currency is allowed");
    let amount = t.amount.get();
    assert!(amount >= 1 && amount <= cap, "amount {amount} outside 1..={cap}");
    assert_eq!(body.get("amount_minor").and_then(Value::as_u64), Some(amount), "amount is the JSON integer sent");

    let code = t.currency.code();
    assert!(code.len() == 3 && code.bytes().all(|b| b.is_ascii_uppercase()), "currency {code:?} not canonical");
    let sent = str_field(body, "currency").expect("currency was sent");
    assert_eq!(sent.to_ascii_uppercase(), code, "currency is the one sent, upper-cased");

    let source = t.source_account.expose();
    assert!(source.len() == 21 && source.starts_with("acct_") && is_alnum(&source[5..]), "source {source:?}");
    assert_eq!(str_field(body, "source_account"), Some(source));
    let destination = t.destination.expose();
    let body_of_destination = ["acct_", "card_", "ba_"].iter().find_map(|p| destination.strip_prefix(p));
    assert!(
        body_of_destination.is_some_and(|rest| (1..=64).contains(&rest.len()) && is_alnum(rest)),
        "destination {destination:?}"
    );
    assert_eq!(str_field(body, "destination"), Some(destination));
    assert_eq!(str_field(body, "purpose_code"), Some(t.purpose.as_str()));
    if let Some(invoice) = &t.invoice_id {
        let invoice = invoice.as_str();
        assert!((1..=64).contains(&invoice.len()), "invoice length");
        assert!(invoice.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'), "invoice pattern");
    }
    assert_eq!(str_field(body, "invoice_id"), t.invoice_id.as_ref().map(|i| i.as_str()));
    check_common(body, t.run_id.as_str(), t.reference.as_ref().map(|r| r.as_str()));

    // Account numbers stay out of logs: Debug and Display show the masked
    // form only. (The agent's own text fields are blanked first: a run id
    // may well repeat the account's characters.)
    let neutral = TransferRequest {
        run_id: RunId::parse("r").expect("a run id"),
        amount: AmountMinor::parse(1, t.currency, cap).expect("1 is within any cap"),
        reference: None,
        invoice_id: None,
        ..t.clone()
    };
    assert!(!format!("{neutral:?}").contains(&source[5..]), "Debug shows the full source account");
    assert!(!t.source_account.to_string().contains(&source[5..17]), "Display shows the source account");
    let destination_body = &destination[destination.find('_').expect("prefix") + 1..];
    // Longer than any run of letters in `PayeeId(acct_…abcd)` itself.
    if destination_body.len() > 7 {
        assert!(!format!("{:?}", t.destination).contains(destination_body), "Debug shows the full destination");
        assert!(!t.destination.to_string().contains(destination_body), "Display shows the full destination");
    }

    check_canonical(t, cap);
}

fn check_canonical(t: &TransferRequest, cap: u64) {
    let legal_name = match &t.reference {
        Some(r) => format!("{HOSTILE_LEGAL_NAME} {}", r.as_str()),
        None => HOSTILE_LEGAL_NAME.to_owned(),
    };
    let canonical = CanonicalRequest {
        v: CANONICAL_VERSION,
        tenant_id: "acme".into(),
        agent_id: "payout-bot".into(),
        kind: ProposalKind::Transfer,
        amount_minor: t.amount.get(),
        currency: t.currency,
        source_account: t.source_account.clone(),
        destination: CanonicalPayee { id: t.destination.clone(), legal_name, masked_account: t.destination.masked() },
        reference: t.reference.clone(),
        purpose_code: t.purpose,
        invoice_id: t.invoice_id.clone(),
        transfer_id: None,
        reason_code: None,
    };
    let bytes = canonical.to_jcs();
    let reparsed: Value = serde_json::from_slice(&bytes).expect("canonical bytes parse");
    assert_eq!(reparsed, canonical.to_value(), "canonical bytes re-parse to another value");
    assert_eq!(jcs::to_vec(&reparsed).expect("canonicalizable"), bytes, "canonical bytes are not a fixed point");

    let hash = canonical.hash();
    assert_eq!(hash, canonical.hash(), "hash is not deterministic");
    let hex = hash.as_str().strip_prefix("sha256:").expect("hash prefix");
    assert!(hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "{hash}");
    assert_eq!(hash.short().len(), 12);

    // As stored (`to_value().to_string()`) and as read back by commit.
    let from_jcs: CanonicalRequest = serde_json::from_slice(&bytes).expect("canonical bytes deserialize");
    assert_eq!(from_jcs, canonical);
    let stored = canonical.to_value().to_string();
    let from_storage: CanonicalRequest = serde_json::from_str(&stored).expect("stored form deserializes");
    assert!(from_storage.hash().matches(hash.as_str()), "the stored canonical request hashes differently");

    let _ = canonical.sentence();
    if t.amount.get() < cap {
        let mut changed = canonical.clone();
        changed.amount_minor += 1;
        assert_ne!(changed.hash(), hash, "another amount, the same hash");
    }
}

fn check_reversal(body: &Value, r: &ReversalRequest) {
    let obj = body.as_object().expect("an accepted body is an object");
    for key in obj.keys() {
        assert!(REVERSAL_FIELDS.contains(&key.as_str()), "reversal accepted with member {key:?}");
    }
    assert_eq!(str_field(body, "kind"), Some("reversal"));
    match r.amount_minor {
        Some(amount) => {
            assert!(amount >= 1, "reversal amount {amount}");
            assert_eq!(body.get("amount_minor").and_then(Value::as_u64), Some(amount));
        }
        None => assert!(matches!(body.get("amount_minor"), None | Some(Value::Null))),
    }
    let transfer = r.transfer.as_str();
    assert!(
        ["prop_", "tr_"]
            .iter()
            .filter_map(|p| transfer.strip_prefix(p))
            .any(|rest| (1..=64).contains(&rest.len()) && is_alnum(rest)),
        "transfer {transfer:?}"
    );
    assert_eq!(str_field(body, "transfer_id"), Some(transfer));
    assert_eq!(str_field(body, "reason_code"), Some(r.reason.as_str()));
    check_common(body, r.run_id.as_str(), r.reference.as_ref().map(|x| x.as_str()));
}

fn check_refusal(body: &Value, errors: &[FieldError]) {
    assert!(!errors.is_empty(), "a refusal must name at least one field");
    for e in errors {
        assert!(ERROR_CODES.contains(&e.code), "unknown error code {:?}", e.code);
        assert!(!e.message.is_empty());
        // A member may be named "" (then it is named so); otherwise only a
        // body that is not an object has no field to name.
        let unnamed_ok = match e.code {
            "unknown_field" => body.get("").is_some(),
            "invalid_type" => !body.is_object(),
            _ => false,
        };
        assert!(!e.field.is_empty() || unnamed_ok, "unnamed field: {e:?}");
    }
    if let Value::Object(obj) = body {
        for key in obj.keys() {
            if !TRANSFER_FIELDS.contains(&key.as_str()) && !REVERSAL_FIELDS.contains(&key.as_str()) {
                assert!(
                    errors.iter().any(|e| &e.field == key && e.code == "unknown_field"),
                    "unknown member {key:?} not named"
                );
            }
        }
    }
}
