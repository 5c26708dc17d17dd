use proptest::prelude::*;

use super::*;
use crate::decision::policy::{convert, evaluate, AgentScope, PolicyConfig};
use crate::domain::{Currency, ProposalKind, PurposeCode, SourceAccount};

const MINE: &str = "acct_0123456789abcdef";
const OTHER: &str = "acct_ffffffffffffffff";

#[allow(clippy::too_many_arguments)] // each fact a test varies, named at the call
fn input<'a>(
    amount: u64,
    currency: &str,
    kind: ProposalKind,
    purpose: PurposeCode,
    trusted: bool,
    source: &'a SourceAccount,
    agent: &'a AgentScope,
    signals: &'a [&'static str],
) -> PolicyInput<'a> {
    PolicyInput {
        tenant_id: "acme",
        proposal_id: "prop_1",
        kind,
        amount_minor: amount,
        currency: Currency::parse(currency).unwrap(),
        purpose,
        source_account: source,
        payee_id: "acct_acme0000000001",
        payee_trusted: trusted && kind == ProposalKind::Transfer,
        invoice_id: Some("INV-1"),
        agent,
        risk_signals: signals,
    }
}

fn agent(purposes: Vec<PurposeCode>) -> AgentScope {
    AgentScope { agent_id: "payout-bot".into(), source_accounts: vec![MINE.into()], purposes }
}

fn converted(config: &PolicyConfig) -> CedarPolicy {
    let text = convert::to_cedar(config);
    CedarPolicy::parse("converted.cedar", &text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn rules(d: &Decision) -> Vec<&str> {
    d.reasons.iter().map(|r| r.rule.as_str()).collect()
}

#[test]
fn the_converted_default_rules_validate_and_decide_like_them() {
    let config = PolicyConfig::default();
    let cedar = converted(&config);
    let source = SourceAccount::parse(MINE).unwrap();
    let scope = agent(vec![PurposeCode::Vendor, PurposeCode::Refund]);
    let cases = [
        (9_999, true, PurposeCode::Vendor, vec!["auto_approve_trusted_payee"]),
        (10_000, true, PurposeCode::Vendor, vec!["single_approval"]),
        (1_000_000, true, PurposeCode::Vendor, vec!["dual_approval"]),
        (9_900_000, true, PurposeCode::Refund, vec!["refund_manual_review", "dual_approval"]),
    ];
    for (amount, trusted, purpose, expected) in cases {
        let i = input(amount, "USD", ProposalKind::Transfer, purpose, trusted, &source, &scope, &[]);
        let (toml, cedar) = (evaluate(&config, &i), cedar.evaluate(&i));
        assert_eq!(rules(&cedar), expected, "{amount}");
        assert_eq!(toml, cedar, "{amount}");
    }
    let d =
        cedar.evaluate(&input(9_999, "USD", ProposalKind::Transfer, PurposeCode::Vendor, true, &source, &scope, &[]));
    assert_eq!(d.auto_approver().as_deref(), Some("policy:auto_approve_trusted_payee"));
    assert_eq!(d.reasons[0].message, "99.99 USD to a trusted payee is below 100.00 USD: approved by policy.");
}

#[test]
fn a_refusal_names_every_forbid_that_matched_with_the_account_masked() {
    let cedar = converted(&PolicyConfig::default());
    let other = SourceAccount::parse(OTHER).unwrap();
    let scope = agent(vec![PurposeCode::Vendor]);
    let d = cedar.evaluate(&input(100, "USD", ProposalKind::Transfer, PurposeCode::Payroll, true, &other, &scope, &[]));
    assert_eq!(d.outcome, Outcome::Denied);
    assert_eq!(rules(&d), ["source_account_not_allowed", "purpose_not_allowed"]);
    assert!(!d.reasons[0].message.contains("ffffffffffff"), "masked: {}", d.reasons[0].message);
}

#[test]
fn hand_written_policies_read_risk_signals_and_explain_in_plain_words() {
    let text = r#"
        @id("scope") permit (principal, action == Countersign::Action::"propose", resource);
        @id("no_duplicate_invoices")
        @reason("A payment of {amount} for an invoice already paid is refused.")
        forbid (principal, action == Countersign::Action::"propose", resource)
        when { resource.risk_signals.contains("duplicate_invoice") };
        @id("first_payment_review")
        @reason("First payment to this payee: two people look.")
        permit (principal, action == Countersign::Action::"dual_approval", resource)
        when { resource.risk_signals.contains("first_payment") };
    "#;
    let cedar = CedarPolicy::parse("acme.cedar", text).unwrap();
    let source = SourceAccount::parse(MINE).unwrap();
    let scope = agent(vec![PurposeCode::Vendor]);
    let dup = cedar.evaluate(&input(
        25_000,
        "EUR",
        ProposalKind::Transfer,
        PurposeCode::Vendor,
        false,
        &source,
        &scope,
        &["duplicate_invoice"],
    ));
    assert_eq!((dup.outcome, rules(&dup)), (Outcome::Denied, vec!["no_duplicate_invoices"]));
    assert_eq!(dup.reasons[0].message, "A payment of 250.00 EUR for an invoice already paid is refused.");
    let first = cedar.evaluate(&input(
        25_000,
        "EUR",
        ProposalKind::Transfer,
        PurposeCode::Vendor,
        false,
        &source,
        &scope,
        &["first_payment"],
    ));
    assert_eq!((first.outcome, first.required_approvals), (Outcome::NeedsApproval, 2));
    assert_eq!(rules(&first), ["first_payment_review"]);
    let plain =
        cedar.evaluate(&input(25_000, "EUR", ProposalKind::Transfer, PurposeCode::Vendor, false, &source, &scope, &[]));
    assert_eq!((plain.required_approvals, rules(&plain)), (1, vec!["single_approval"]));
}

#[test]
fn nothing_permitted_is_refused() {
    let cedar = CedarPolicy::parse("empty.cedar", "").unwrap();
    let source = SourceAccount::parse(MINE).unwrap();
    let scope = agent(vec![PurposeCode::Vendor]);
    let d = cedar.evaluate(&input(100, "USD", ProposalKind::Transfer, PurposeCode::Vendor, true, &source, &scope, &[]));
    assert_eq!((d.outcome, rules(&d)), (Outcome::Denied, vec![RULE_NOT_PERMITTED]));
}

#[test]
fn a_policy_that_does_not_validate_is_refused_whole_with_its_place() {
    // A typo in an attribute: Cedar parses it, the schema refuses it.
    let typo = "@id(\"scope\")\npermit (principal, action == Countersign::Action::\"propose\", resource);\n\
                @id(\"dual_approval\")\n@reason(\"x\")\npermit (principal, action == Countersign::Action::\"dual_approval\", resource)\n\
                when { resource.amount >= 100 };\n";
    let e = CedarPolicy::parse("policies/acme.cedar", typo).unwrap_err().0;
    assert!(e.starts_with("policies/acme.cedar:6:"), "{e}");
    assert!(e.contains("amount"), "{e}");
    // Not Cedar at all.
    let e = CedarPolicy::parse("policies/acme.cedar", "@id(\"scope\")\npermit (principal, action, resource)\n")
        .unwrap_err()
        .0;
    assert!(e.starts_with("policies/acme.cedar:"), "{e}");
    // A string compared with a number.
    let e = CedarPolicy::parse(
        "p.cedar",
        "@id(\"x\") permit (principal, action == Countersign::Action::\"propose\", resource) when { resource.currency > 3 };",
    )
    .unwrap_err()
    .0;
    assert!(e.starts_with("p.cedar:1:"), "{e}");
    // A policy without its rule name.
    let e =
        CedarPolicy::parse("p.cedar", "\n\npermit (principal, action == Countersign::Action::\"propose\", resource);")
            .unwrap_err()
            .0;
    assert!(e.starts_with("p.cedar:3:1:") && e.contains("@id"), "{e}");
    // An unknown action.
    let e = CedarPolicy::parse(
        "p.cedar",
        "@id(\"x\") permit (principal, action == Countersign::Action::\"pay\", resource);",
    )
    .unwrap_err()
    .0;
    assert!(e.contains("pay"), "{e}");
}

fn currency() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["USD", "EUR", "GBP", "JPY", "VND", "CHF"])
}

/// A threshold map over some of the currencies.
fn thresholds() -> impl Strategy<Value = BTreeMap<String, u64>> {
    prop::collection::btree_map(currency().prop_map(str::to_owned), 0u64..20_000_000, 0..5)
}

fn config() -> impl Strategy<Value = PolicyConfig> {
    prop_oneof![
        Just(PolicyConfig::default()),
        (thresholds(), thresholds(), thresholds()).prop_map(|(auto, dual, refund)| PolicyConfig {
            auto_approve_below_minor: auto,
            dual_approval_at_minor: dual,
            refund_review_at_minor: refund,
            ..PolicyConfig::default()
        }),
    ]
}

const SIGNALS: [&str; 5] = ["duplicate_invoice", "first_payment", "unusual_amount", "new_payee", "payee_changed"];

use std::collections::BTreeMap;

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// The TOML rules and their Cedar conversion give the same decision —
    /// outcome, required approvals, rules and messages — for proposals
    /// across currencies, amounts at and around every threshold,
    /// trusted and untrusted payees, purposes, kinds, scopes and signals.
    #[test]
    fn toml_and_converted_cedar_decide_alike(
        config in config(),
        cur in currency(),
        pick in 0usize..64,
        offset in -2i64..=2,
        random in 1u64..30_000_000,
        trusted: bool,
        reversal: bool,
        p in 0usize..4,
        allowed in prop::collection::vec(0usize..4, 0..4),
        own_source: bool,
        signals in prop::sample::subsequence(SIGNALS.to_vec(), 0..3),
    ) {
        let cedar = converted(&config);
        // Every threshold of this currency, each ±2, or any amount.
        let mut marks: Vec<u64> = [&config.auto_approve_below_minor, &config.dual_approval_at_minor, &config.refund_review_at_minor]
            .iter()
            .filter_map(|m| m.get(cur).copied())
            .collect();
        marks.push(random);
        let amount = marks[pick % marks.len()].saturating_add_signed(offset).max(1);
        let source = SourceAccount::parse(if own_source { MINE } else { OTHER }).unwrap();
        let purposes: Vec<PurposeCode> = allowed.iter().map(|i| PurposeCode::ALL[*i]).collect();
        let scope = agent(purposes);
        let kind = if reversal { ProposalKind::Reversal } else { ProposalKind::Transfer };
        let i = input(amount, cur, kind, PurposeCode::ALL[p], trusted, &source, &scope, &signals);
        let (toml, by_cedar) = (evaluate(&config, &i), cedar.evaluate(&i));
        prop_assert_eq!(&toml, &by_cedar, "amount {} {}", amount, cur);
        prop_assert_eq!(toml.auto_approver(), by_cedar.auto_approver());
    }
}
