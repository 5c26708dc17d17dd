//! Backtest: a candidate policy replayed over a tenant's recorded
//! proposals, against the policy enforced now (docs/POLICY.md, "Backtest").
//!
//! Both policies decide on the same facts — each proposal's canonical
//! request as recorded, its payee's trust and its agent's scope as they
//! stand now, the tenant's group rule — so every difference is the
//! policy's. Risk signals are not replayed (they are computed from the
//! history as it is at the moment of asking, which a replay cannot
//! restore): a candidate that reads them is told so. Proposals the
//! enforced policy refused were never stored and are not replayed.
//!
//! The replay is CPU-bound and runs on every core (`std::thread::scope`).

pub mod recorded;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

use super::{AgentScope, Decision, Engine, Outcome, PolicyConfig, PolicyInput};
use crate::domain::{CanonicalRequest, Currency, PurposeCode};

/// One recorded proposal, as a backtest replays it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub id: String,
    pub agent_id: String,
    pub request: CanonicalRequest,
    /// The payee's trust as it stands now.
    pub payee_trusted: bool,
}

/// What both policies' decisions go through after them: the tenant's group
/// rule (`Settings::with_group_rule`).
pub type After<'a> = &'a (dyn Fn(Currency, u64, Decision) -> Decision + Sync);

/// How a decision reads in a change: `auto_approved`, `needs_approval`
/// (with its count when 2 or more) or `refused`.
pub fn state_of(d: &Decision) -> String {
    match d.outcome {
        Outcome::AutoApproved => "auto_approved".into(),
        Outcome::Denied => "refused".into(),
        Outcome::NeedsApproval if d.required_approvals >= 2 => format!("needs_{}_approvals", d.required_approvals),
        Outcome::NeedsApproval => "needs_approval".into(),
    }
}

/// `enforced -> candidate`, or None when they decide alike (same outcome
/// and number of approvals; the rules may differ).
pub fn change_of(enforced: &Decision, candidate: &Decision) -> Option<String> {
    let (from, to) = (state_of(enforced), state_of(candidate));
    (from != to).then(|| format!("{from} -> {to}"))
}

/// Count and total of one change in one currency.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = BacktestTally)]
pub struct Tally {
    pub count: u64,
    /// In minor units of the currency.
    pub amount_minor: u64,
    /// The total formatted in the currency ("1,234.00 USD").
    pub amount: String,
}

/// One proposal decided differently (the first few are kept as examples).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = BacktestExample)]
pub struct Example {
    pub proposal_id: String,
    pub amount: String,
    pub change: String,
    /// The candidate's rules that decided it.
    pub rules: Vec<String>,
}

/// What a candidate would have changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = BacktestReport)]
pub struct Report {
    pub tenant_id: String,
    pub since: String,
    /// The enforced policy it was compared with, and the candidate.
    pub enforced: String,
    pub candidate: String,
    pub replayed: u64,
    pub changed: u64,
    /// Per change (`auto_approved -> needs_approval`), per currency.
    pub changes: BTreeMap<String, BTreeMap<String, Tally>>,
    pub examples: Vec<Example>,
    /// Whether the candidate may read risk signals (not replayed).
    pub reads_risk_signals: bool,
    pub elapsed_ms: u64,
}

impl Report {
    /// The report as lines of plain text (the CLI, the change's summary).
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!(
            "Backtest of {} against {} (tenant {}, proposals since {}): {} replayed, {} decided differently.",
            self.candidate, self.enforced, self.tenant_id, self.since, self.replayed, self.changed
        )];
        for (change, per_currency) in &self.changes {
            let count: u64 = per_currency.values().map(|t| t.count).sum();
            out.push(format!("  {}: {count}", change.replace("->", "→")));
            for (currency, tally) in per_currency {
                out.push(format!("    {currency}: {} proposals, {}", tally.count, tally.amount));
            }
        }
        for e in &self.examples {
            out.push(format!(
                "  e.g. {} ({}): {} by {}",
                e.proposal_id,
                e.amount,
                e.change.replace("->", "→"),
                e.rules.join(", ")
            ));
        }
        if self.reads_risk_signals {
            out.push(
                "  Note: the candidate reads risk signals, which a backtest does not replay; observe it to see them."
                    .into(),
            );
        }
        out
    }
}

/// Examples kept in a report.
pub const EXAMPLES: usize = 10;

/// Replays `rows` under `enforced` and `candidate` (pure; on every core).
pub fn replay(
    (rules, after): (&PolicyConfig, After<'_>),
    rows: &[Recorded],
    agents: &HashMap<String, AgentScope>,
    enforced: &Engine,
    candidate: &Engine,
) -> (u64, Vec<(usize, String, Decision)>) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    let chunk = rows.len().div_ceil(threads).max(1);
    // An agent no longer in the registry may do nothing.
    let nobody =
        AgentScope { agent_id: String::new(), source_accounts: Vec::new(), purposes: Vec::<PurposeCode>::new() };
    let decide = |engine: &Engine, row: &Recorded, scope: &AgentScope| {
        let input = PolicyInput::of(&row.id, &row.request, row.payee_trusted, scope, &[]);
        after(row.request.currency, row.request.amount_minor, engine.evaluate(rules, &input))
    };
    let mut changed: Vec<(usize, String, Decision)> = std::thread::scope(|s| {
        let handles: Vec<_> = rows
            .chunks(chunk)
            .enumerate()
            .map(|(n, part)| {
                let (decide, nobody) = (&decide, &nobody);
                s.spawn(move || {
                    let mut out = Vec::new();
                    for (i, row) in part.iter().enumerate() {
                        let scope = agents.get(&row.agent_id).unwrap_or(nobody);
                        let (before, after) = (decide(enforced, row, scope), decide(candidate, row, scope));
                        if let Some(change) = change_of(&before, &after) {
                            out.push((n * chunk + i, change, after));
                        }
                    }
                    out
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("a replay thread panicked")).collect()
    });
    changed.sort_by_key(|(i, _, _)| *i);
    (rows.len() as u64, changed)
}

/// The report of a replay.
pub fn report(
    tenant: &str,
    since: DateTime<Utc>,
    (enforced, candidate): (&Engine, &Engine),
    rows: &[Recorded],
    (replayed, changed): (u64, Vec<(usize, String, Decision)>),
    elapsed_ms: u64,
) -> Report {
    let mut changes: BTreeMap<String, BTreeMap<String, Tally>> = BTreeMap::new();
    let mut examples = Vec::new();
    for (i, change, decision) in &changed {
        let request = &rows[*i].request;
        let tally = changes.entry(change.clone()).or_default().entry(request.currency.code().to_owned()).or_default();
        tally.count += 1;
        tally.amount_minor = tally.amount_minor.saturating_add(request.amount_minor);
        if examples.len() < EXAMPLES {
            examples.push(Example {
                proposal_id: rows[*i].id.clone(),
                amount: request.currency.format_minor(request.amount_minor),
                change: change.clone(),
                rules: decision.reasons.iter().map(|r| r.rule.clone()).collect(),
            });
        }
    }
    for per_currency in changes.values_mut() {
        for (code, tally) in per_currency.iter_mut() {
            tally.amount = Currency::parse(code)
                .map(|c| c.format_minor(tally.amount_minor))
                .unwrap_or_else(|_| format!("{} {code}", tally.amount_minor));
        }
    }
    Report {
        tenant_id: tenant.to_owned(),
        since: since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        enforced: enforced.label(),
        candidate: candidate.label(),
        replayed,
        changed: changed.len() as u64,
        changes,
        examples,
        reads_risk_signals: matches!(candidate, Engine::Cedar(p) if p.text().contains("risk_signals")),
        elapsed_ms,
    }
}

/// `90d`, `12h`, `2w`: a duration back from now.
pub fn parse_since(text: &str) -> Result<chrono::Duration, String> {
    let text = text.trim();
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let n: i64 = number.parse().map_err(|_| format!("`{text}`: give a number and a unit, like 90d"))?;
    let d = match unit {
        "d" => chrono::Duration::days(n),
        "h" => chrono::Duration::hours(n),
        "w" => chrono::Duration::weeks(n),
        _ => return Err(format!("`{text}`: the unit is d (days), h (hours) or w (weeks)")),
    };
    if n <= 0 || n > 3660 {
        return Err(format!("`{text}`: between 1 and 3660"));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_is_a_number_and_a_unit() {
        assert_eq!(parse_since("90d").unwrap(), chrono::Duration::days(90));
        assert_eq!(parse_since("12h").unwrap(), chrono::Duration::hours(12));
        assert_eq!(parse_since("2w").unwrap(), chrono::Duration::weeks(2));
        for bad in ["", "d", "90", "90m", "-3d", "0d"] {
            assert!(parse_since(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn changes_read_as_states() {
        let d = |outcome, n| Decision { outcome, required_approvals: n, reasons: vec![], groups: vec![] };
        assert_eq!(
            change_of(&d(Outcome::AutoApproved, 0), &d(Outcome::NeedsApproval, 1)).unwrap(),
            "auto_approved -> needs_approval"
        );
        assert_eq!(
            change_of(&d(Outcome::NeedsApproval, 1), &d(Outcome::Denied, 0)).unwrap(),
            "needs_approval -> refused"
        );
        assert_eq!(
            change_of(&d(Outcome::NeedsApproval, 1), &d(Outcome::NeedsApproval, 2)).unwrap(),
            "needs_approval -> needs_2_approvals"
        );
        assert_eq!(change_of(&d(Outcome::NeedsApproval, 1), &d(Outcome::NeedsApproval, 1)), None);
    }
}
