//! Risk signals: facts from the registry and the tenant's history that a
//! reviewer should see before approving a transfer. Computed when asked (the
//! console's detail page and queue, the Slack message), so a signal reflects
//! the history as it is now: a second proposal for the same invoice flags
//! the first one too.
//!
//! | code | when |
//! |---|---|
//! | `duplicate_invoice` | another proposal has the same payee and invoice id (any run, agent or status) |
//! | `first_payment` | no proposal to this payee has been paid (or may have been), as of now |
//! | `unusual_amount` | more than `risk.unusual_amount_factor` × the median of the payee's last 50 paid amounts in the currency (at least 3), as of now |
//! | `new_payee` | the payee was added `risk.recent_payee_days` or fewer days before the proposal (or is no longer in the registry) |
//! | `payee_changed` | the payee's details changed that recently, or after the proposal was made |
//! | `account_changed` | the payee is a new bank account that took over from another (a verified change) that recently, or after the proposal was made |
//!
//! With `risk.extra_approval`, a proposal with any signal needs one more
//! approval than policy asks (an automatic approval becomes one human's),
//! at most 3: applied at intake and again whenever approvals are counted.

use chrono::{DateTime, Duration, Utc};

use crate::config::Config;
use crate::config::RiskSettings;
use crate::decision::policy::{Decision, Outcome, Reason};
use crate::domain::{Currency, ProposalKind, ProposalStatus};
use crate::store::risk::{self as store_risk, Earlier};
use crate::store::Store;
use crate::store::{proposals::ProposalRow, Result};

/// How many earlier proposals the amount and first-payment checks read.
const HISTORY: u32 = 50;
/// How many of them the detail page lists.
pub const RECENT_SHOWN: usize = 5;
/// The fewest paid amounts a median is taken of.
const MIN_FOR_MEDIAN: usize = 3;

/// One signal: a stable code (for tests, filters and the API), a sentence,
/// and the other proposals it is about (a duplicate invoice's twins), for a
/// page to link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    pub code: &'static str,
    pub message: String,
    pub related: Vec<Earlier>,
}

impl Signal {
    /// A signal about this proposal alone (no other proposal named).
    pub fn new(code: &'static str, message: impl Into<String>) -> Signal {
        Signal { code, message: message.into(), related: Vec::new() }
    }

    /// A few words for lists (the queue, the Slack message).
    pub fn label(&self) -> &'static str {
        match self.code {
            "duplicate_invoice" => "Duplicate invoice",
            "first_payment" => "First payment",
            "unusual_amount" => "Unusual amount",
            "new_payee" => "New payee",
            "payee_changed" => "Payee details changed",
            "account_changed" => "Bank account changed",
            _ => "Risk",
        }
    }
}

/// The signals of one proposal, and the payee's proposals before it.
#[derive(Debug, Clone, Default)]
pub struct Assessment {
    pub signals: Vec<Signal>,
    /// Newest first.
    pub history: Vec<Earlier>,
}

/// What is assessed: a stored proposal, or one about to be stored.
pub struct Subject<'a> {
    pub id: &'a str,
    pub tenant_id: &'a str,
    pub kind: ProposalKind,
    pub payee_id: &'a str,
    pub invoice_id: Option<&'a str>,
    pub amount_minor: u64,
    pub currency: Currency,
    pub created_at: DateTime<Utc>,
}

impl<'a> Subject<'a> {
    pub fn of(row: &'a ProposalRow) -> Subject<'a> {
        let r = &row.request;
        Subject {
            id: &row.id,
            tenant_id: &row.tenant_id,
            kind: r.kind,
            payee_id: &row.payee_id,
            invoice_id: r.invoice_id.as_ref().map(|i| i.as_str()),
            amount_minor: r.amount_minor,
            currency: r.currency,
            created_at: row.created_at,
        }
    }
}

/// Money moved, or may have, for a proposal in these statuses.
const PAID: [ProposalStatus; 5] = {
    use ProposalStatus::*;
    [Executing, Succeeded, Unknown, NeedsReview, Reversed]
};

fn days_before(at: DateTime<Utc>, reference: DateTime<Utc>) -> String {
    match (reference - at).num_days() {
        d if d < 1 => "less than a day".to_owned(),
        1 => "1 day".to_owned(),
        d => format!("{d} days"),
    }
}

/// The median of `amounts` (sorted in place); the lower middle of an even count.
fn median(amounts: &mut [u64]) -> Option<u64> {
    amounts.sort_unstable();
    amounts.get(amounts.len().saturating_sub(1) / 2).copied()
}

/// The signals of one proposal (or one about to be stored), and for the
/// detail page the payee's proposals before it.
pub async fn assess(state: &(impl Store + Config), subject: &Subject<'_>) -> Result<Assessment> {
    let signals = signals(state, subject).await?;
    if subject.kind != ProposalKind::Transfer {
        return Ok(Assessment { signals, history: Vec::new() });
    }
    let history = store_risk::payee_history(
        &state.db().read,
        subject.tenant_id,
        subject.payee_id,
        subject.created_at,
        RECENT_SHOWN as u32,
    )
    .await?;
    Ok(Assessment { signals, history })
}

/// The signals of one proposal (or one about to be stored).
pub async fn signals(state: &(impl Store + Config), subject: &Subject<'_>) -> Result<Vec<Signal>> {
    Ok(signals_all(state, std::slice::from_ref(subject)).await?.pop().unwrap_or_default())
}

/// [`signals`] for a page of proposals, in order: three statements for the
/// whole page, however many proposals it holds.
pub async fn signals_all(state: &(impl Store + Config), subjects: &[Subject<'_>]) -> Result<Vec<Vec<Signal>>> {
    // A reversal returns money already paid: nothing to assess.
    let transfers: Vec<&Subject> = subjects.iter().filter(|s| s.kind == ProposalKind::Transfer).collect();
    if transfers.is_empty() {
        return Ok(subjects.iter().map(|_| Vec::new()).collect());
    }
    let pool = &state.db().read;
    let invoice_asks: Vec<store_risk::InvoiceAsk> = transfers
        .iter()
        .filter_map(|s| {
            s.invoice_id.map(|invoice_id| store_risk::InvoiceAsk {
                tenant: s.tenant_id,
                payee: s.payee_id,
                invoice_id,
                except: s.id,
            })
        })
        .collect();
    let history_asks: Vec<_> = transfers
        .iter()
        .map(|s| store_risk::HistoryAsk {
            tenant: s.tenant_id,
            payee: s.payee_id,
            // The history as it is now, not when the proposal was made: a
            // payee paid four times since is no longer a first payment.
            before: as_of_now(),
            currency: s.currency.code(),
        })
        .collect();
    let date_asks: Vec<_> = transfers.iter().map(|s| (s.tenant_id, s.payee_id)).collect();
    // Three statements, read at once on their own connections.
    let (same_invoice, histories, dates) = tokio::try_join!(
        store_risk::same_invoice(pool, &invoice_asks, 5),
        store_risk::history_summaries(pool, &history_asks, HISTORY, &PAID),
        store_risk::payee_dates(pool, &date_asks),
    )?;
    let mut same_invoice = same_invoice.into_iter();

    let mut judged = transfers.iter().zip(histories.into_iter().zip(dates)).map(|(subject, (history, dates))| {
        let same = if subject.invoice_id.is_some() { same_invoice.next().unwrap_or_default() } else { Vec::new() };
        judge(&state.settings().risk, subject, &same, &history, dates)
    });
    Ok(subjects
        .iter()
        .map(|s| if s.kind == ProposalKind::Transfer { judged.next().unwrap_or_default() } else { Vec::new() })
        .collect())
}

/// An instant after every proposal: the history "before" it is all of it,
/// as it stands when the signals are computed (no clock read here: the
/// store's own order of stored instants decides).
fn as_of_now() -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp(253_402_300_799, 0).expect("9999-12-31T23:59:59Z is a valid instant")
}

/// The signals, from what was read: the other proposals with the same
/// invoice, the payee's recent history and its registry dates.
fn judge(
    settings: &RiskSettings,
    subject: &Subject<'_>,
    same_invoice: &[Earlier],
    history: &store_risk::HistorySummary,
    dates: Option<store_risk::PayeeDates>,
) -> Vec<Signal> {
    let mut signals = Vec::new();
    if let (Some(invoice), false) = (subject.invoice_id, same_invoice.is_empty()) {
        let statuses: Vec<&str> = same_invoice.iter().map(|e| e.status.label()).collect();
        let others = match same_invoice.len() {
            1 => "another proposal".to_owned(),
            n => format!("{n} other proposals"),
        };
        signals.push(Signal {
            code: "duplicate_invoice",
            message: format!("Invoice {invoice} to this payee is also in {others} ({}).", statuses.join(", ")),
            related: same_invoice.to_vec(),
        });
    }
    if !history.any_paid {
        signals.push(Signal::new("first_payment", "First payment to this payee."));
    }
    let mut amounts = history.succeeded.clone();
    let count = amounts.len();
    if let Some(usual) = median(&mut amounts).filter(|m| count >= MIN_FOR_MEDIAN && *m > 0) {
        if subject.amount_minor as f64 > settings.unusual_amount_factor * usual as f64 {
            let times = subject.amount_minor as f64 / usual as f64;
            let message = format!(
                "{:.1}× this payee's usual amount (median {} of its last {count} payments).",
                times,
                subject.currency.format_minor(usual)
            );
            signals.push(Signal::new("unusual_amount", message));
        }
    }
    signals.extend(payee_signals(settings, dates, subject.created_at));
    signals
}

/// The signals of stored proposals while they wait for a decision (none
/// once decided), in order, in three statements for the whole page (the
/// queue, the bulk page, the console API's queue).
pub async fn signals_while_waiting(state: &(impl Store + Config), rows: &[ProposalRow]) -> Result<Vec<Vec<Signal>>> {
    let waiting: Vec<Subject> = rows.iter().filter(|r| r.status.awaits_decision()).map(Subject::of).collect();
    let mut assessed = signals_all(state, &waiting).await?.into_iter();
    Ok(rows
        .iter()
        .map(|r| if r.status.awaits_decision() { assessed.next().unwrap_or_default() } else { Vec::new() })
        .collect())
}

/// `new_payee` and `payee_changed`, from the payee's registry dates.
fn payee_signals(
    settings: &RiskSettings,
    dates: Option<store_risk::PayeeDates>,
    proposed_at: DateTime<Utc>,
) -> Vec<Signal> {
    let Some(dates) = dates else {
        return vec![Signal::new("new_payee", "This payee is no longer in the registry.")];
    };
    let recent = |at: DateTime<Utc>| at > proposed_at - Duration::days(i64::from(settings.recent_payee_days));
    let mut signals = Vec::new();
    if recent(dates.created_at) {
        let ago = days_before(dates.created_at, proposed_at);
        signals.push(Signal::new("new_payee", format!("Payee added {ago} before this proposal.")));
    }
    match dates.details_changed_at {
        Some(at) if at > proposed_at => {
            signals.push(Signal::new("payee_changed", "The payee's details changed after this proposal was made."))
        }
        Some(at) if recent(at) => {
            let ago = days_before(at, proposed_at);
            signals
                .push(Signal::new("payee_changed", format!("The payee's details changed {ago} before this proposal.")))
        }
        _ => {}
    }
    match dates.account_changed_at {
        Some(at) if at > proposed_at => signals.push(Signal::new(
            "account_changed",
            "The payee's bank account changed after this proposal was made (a verified change).",
        )),
        Some(at) if recent(at) => signals.push(Signal::new(
            "account_changed",
            format!(
                "The payee's bank account changed {} before this proposal (verified by a call-back); the first \
                 payment to it needs more approvals.",
                days_before(at, proposed_at)
            ),
        )),
        _ => {}
    }
    signals
}

/// The policy reason an extra approval is given under.
pub const RULE: &str = "risk_signals";

/// With `risk.extra_approval`: one more approval than `decision` asks when
/// there is any signal (an automatic approval becomes one human's), at most
/// 3; once only (a decision that already counted its signals is kept).
pub fn with_extra_approval(settings: &RiskSettings, decision: Decision, signals: &[Signal]) -> Decision {
    let counted = decision.reasons.iter().any(|r| r.rule == RULE);
    if !settings.extra_approval || signals.is_empty() || decision.outcome == Outcome::Denied || counted {
        return decision;
    }
    let named: Vec<&str> = signals.iter().map(Signal::label).collect();
    let mut decision = decision;
    decision.required_approvals = match decision.outcome {
        Outcome::AutoApproved => 1,
        _ => (decision.required_approvals.max(1) + 1).min(3),
    };
    decision.outcome = Outcome::NeedsApproval;
    decision.reasons.push(Reason {
        rule: RULE.into(),
        message: format!("Risk signals ({}) need one more approval.", named.join(", ")),
    });
    decision
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn the_median_is_the_middle_amount() {
        assert_eq!(median(&mut [5, 1, 3]), Some(3));
        assert_eq!(median(&mut [4, 1, 3, 2]), Some(2));
        assert_eq!(median(&mut []), None);
    }

    #[test]
    fn a_payee_added_or_changed_recently_is_flagged() {
        let s = RiskSettings::default();
        let proposed = at("2026-11-20T12:00:00Z");
        let dates = |created: &str, changed: Option<&str>| {
            Some(store_risk::PayeeDates {
                created_at: at(created),
                details_changed_at: changed.map(at),
                account_changed_at: None,
            })
        };
        let codes = |d| payee_signals(&s, d, proposed).into_iter().map(|s| s.code).collect::<Vec<_>>();
        assert!(codes(dates("2026-01-01T00:00:00Z", None)).is_empty());
        assert_eq!(codes(dates("2026-11-18T12:00:00Z", None)), ["new_payee"]);
        assert_eq!(codes(dates("2026-11-13T11:00:00Z", None)), Vec::<&str>::new(), "7 days and an hour before");
        assert_eq!(codes(dates("2026-01-01T00:00:00Z", Some("2026-11-19T00:00:00Z"))), ["payee_changed"]);
        assert_eq!(codes(dates("2026-01-01T00:00:00Z", Some("2026-11-21T00:00:00Z"))), ["payee_changed"], "after");
        assert_eq!(codes(None), ["new_payee"], "gone from the registry");
        let message = &payee_signals(&s, dates("2026-11-18T12:00:00Z", None), proposed)[0].message;
        assert_eq!(message, "Payee added 2 days before this proposal.");
    }

    #[test]
    fn an_extra_approval_is_asked_only_when_configured_and_signalled() {
        let base = |outcome, n| Decision { outcome, required_approvals: n, reasons: Vec::new(), groups: Vec::new() };
        let signal = [Signal::new("first_payment", String::new())];
        let on = RiskSettings { extra_approval: true, ..RiskSettings::default() };
        let off = RiskSettings::default();
        assert_eq!(with_extra_approval(&off, base(Outcome::NeedsApproval, 1), &signal).required_approvals, 1);
        assert_eq!(with_extra_approval(&on, base(Outcome::NeedsApproval, 1), &[]).required_approvals, 1);
        let bumped = with_extra_approval(&on, base(Outcome::NeedsApproval, 1), &signal);
        assert_eq!((bumped.outcome, bumped.required_approvals), (Outcome::NeedsApproval, 2));
        assert_eq!(bumped.reasons[0].rule, "risk_signals");
        assert_eq!(with_extra_approval(&on, bumped.clone(), &signal), bumped, "counted once");
        assert_eq!(with_extra_approval(&on, base(Outcome::NeedsApproval, 2), &signal).required_approvals, 3);
        assert_eq!(with_extra_approval(&on, base(Outcome::NeedsApproval, 3), &signal).required_approvals, 3);
        let auto = with_extra_approval(&on, base(Outcome::AutoApproved, 0), &signal);
        assert_eq!((auto.outcome, auto.required_approvals), (Outcome::NeedsApproval, 1));
        assert_eq!(with_extra_approval(&on, base(Outcome::Denied, 0), &signal).outcome, Outcome::Denied);
    }
}
