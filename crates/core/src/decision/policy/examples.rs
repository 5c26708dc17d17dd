//! Policy tests: a file of example proposals with the decision each must
//! get (`countersign policy test FILE`, run in CI over the shipped
//! examples; docs/POLICY.md, "Policy tests").
//!
//! ```toml
//! policy = "demo.cedar"           # relative to this file; absent: the config's [policy] rules
//!
//! [[case]]
//! name = "a small payment to a trusted payee is approved by policy"
//! amount_minor = 9_999
//! currency = "USD"
//! payee_trusted = true
//! expect = { outcome = "auto_approved", required_approvals = 0, rules = ["auto_approve_trusted_payee"] }
//! ```
//!
//! A case's other facts have defaults: `kind = "transfer"`, `purpose =
//! "vendor"`, the agent's own source account, an agent allowed every
//! purpose, no invoice, no risk signals. `rules`, when given, must be the
//! decision's rules exactly, in order.

use serde::Deserialize;

use super::{AgentScope, Engine, Outcome, PolicyConfig, PolicyInput};
use crate::domain::{Currency, ProposalKind, PurposeCode, SourceAccount};

/// The source account a case uses unless it names one.
pub const DEFAULT_SOURCE: &str = "acct_0000000000000001";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExampleFile {
    /// The Cedar policy the cases are for, relative to the file.
    pub policy: Option<String>,
    #[serde(rename = "case", default)]
    pub cases: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    pub amount_minor: u64,
    pub currency: String,
    #[serde(default = "transfer")]
    pub kind: String,
    #[serde(default = "vendor")]
    pub purpose: String,
    #[serde(default)]
    pub payee_trusted: bool,
    pub source_account: Option<String>,
    /// The agent's source accounts (default: the case's own).
    pub agent_source_accounts: Option<Vec<String>>,
    /// The agent's purposes (default: every purpose).
    pub agent_purposes: Option<Vec<String>>,
    pub invoice_id: Option<String>,
    #[serde(default)]
    pub risk_signals: Vec<String>,
    pub expect: Expect,
}

fn transfer() -> String {
    "transfer".into()
}

fn vendor() -> String {
    "vendor".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub outcome: Outcome,
    pub required_approvals: Option<u8>,
    pub rules: Option<Vec<String>>,
}

/// One case's result: `None` when it passed, else what differed.
#[derive(Debug)]
pub struct CaseResult {
    pub name: String,
    pub failure: Option<String>,
}

const SIGNALS: [&str; 5] = ["duplicate_invoice", "first_payment", "unusual_amount", "new_payee", "payee_changed"];

/// Parses an examples file (TOML).
pub fn parse(text: &str) -> Result<ExampleFile, String> {
    toml::from_str(text).map_err(|e| e.to_string())
}

/// Runs every case against `engine` (with `rules` for the TOML rules).
pub fn run(engine: &Engine, rules: &PolicyConfig, file: &ExampleFile) -> Vec<CaseResult> {
    file.cases
        .iter()
        .map(|case| CaseResult { name: case.name.clone(), failure: check(engine, rules, case).err() })
        .collect()
}

fn check(engine: &Engine, rules: &PolicyConfig, case: &Case) -> Result<(), String> {
    let currency = Currency::parse(&case.currency).map_err(|e| format!("currency: {e}"))?;
    let kind = match case.kind.as_str() {
        "transfer" => ProposalKind::Transfer,
        "reversal" => ProposalKind::Reversal,
        other => return Err(format!("kind: `{other}` is not transfer or reversal")),
    };
    let purpose = PurposeCode::parse(&case.purpose).map_err(|_| format!("purpose: `{}` is unknown", case.purpose))?;
    let source_text = case.source_account.clone().unwrap_or_else(|| DEFAULT_SOURCE.to_owned());
    let source = SourceAccount::parse(&source_text).map_err(|e| format!("source_account: {e}"))?;
    let purposes = match &case.agent_purposes {
        None => PurposeCode::ALL.to_vec(),
        Some(list) => list
            .iter()
            .map(|p| PurposeCode::parse(p).map_err(|_| format!("agent_purposes: `{p}` is unknown")))
            .collect::<Result<_, _>>()?,
    };
    let agent = AgentScope {
        agent_id: "example-agent".into(),
        source_accounts: case.agent_source_accounts.clone().unwrap_or_else(|| vec![source_text.clone()]),
        purposes,
    };
    let signals: Vec<&'static str> = case
        .risk_signals
        .iter()
        .map(|s| SIGNALS.iter().find(|k| **k == s).copied().ok_or_else(|| format!("risk_signals: `{s}` is unknown")))
        .collect::<Result<_, _>>()?;
    let input = PolicyInput {
        tenant_id: "example",
        proposal_id: "prop_example",
        kind,
        amount_minor: case.amount_minor,
        currency,
        purpose,
        source_account: &source,
        payee_id: "acct_example0000001",
        payee_trusted: case.payee_trusted && kind == ProposalKind::Transfer,
        invoice_id: case.invoice_id.as_deref(),
        agent: &agent,
        risk_signals: &signals,
    };
    let decision = engine.evaluate(rules, &input);
    let got_rules: Vec<&str> = decision.reasons.iter().map(|r| r.rule.as_str()).collect();
    let mut wrong = Vec::new();
    if decision.outcome != case.expect.outcome {
        wrong.push(format!("outcome {:?}, expected {:?}", decision.outcome, case.expect.outcome));
    }
    if let Some(n) = case.expect.required_approvals {
        if decision.required_approvals != n {
            wrong.push(format!("{} approvals required, expected {n}", decision.required_approvals));
        }
    }
    if let Some(rules) = &case.expect.rules {
        if got_rules != rules.iter().map(String::as_str).collect::<Vec<_>>() {
            wrong.push(format!("rules {got_rules:?}, expected {rules:?}"));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_examples_pass_against_the_shipped_policy_and_a_wrong_expectation_fails() {
        let file = parse(include_str!("../../../../../policies/examples.toml")).unwrap();
        assert!(file.cases.len() >= 8, "the shipped examples cover every path");
        let policy = Engine::from_text("demo.cedar", include_str!("../../../../../policies/demo.cedar")).unwrap();
        let results = run(&policy, &PolicyConfig::default(), &file);
        let failed: Vec<_> = results.iter().filter(|r| r.failure.is_some()).collect();
        assert!(failed.is_empty(), "{failed:?}");
        // The same cases under the TOML rules pass too: demo.cedar is their conversion.
        assert!(run(&Engine::Rules, &PolicyConfig::default(), &file).iter().all(|r| r.failure.is_none()));

        let wrong = parse(
            "[[case]]\nname = \"x\"\namount_minor = 10000\ncurrency = \"USD\"\npayee_trusted = true\n\
             expect = { outcome = \"auto_approved\" }\n",
        )
        .unwrap();
        let result = run(&policy, &PolicyConfig::default(), &wrong);
        assert!(result[0].failure.as_deref().is_some_and(|f| f.contains("NeedsApproval")), "{result:?}");
        assert!(parse("[[case]]\nname = 1\n").is_err());
    }
}
