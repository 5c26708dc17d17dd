//! A payee's bank account changes: the riskiest registry change there is
//! (the classic fraud is a "new bank details" letter). A payee's id is the
//! account it is paid to, so a change of account is a new payee taking over
//! from the old one:
//!
//! - an admin proposes it (a registry change of kind `payee_account`,
//!   `registry_changes`); nothing changes yet;
//! - a second person — another admin, never the proposer — calls the payee
//!   back at a number they already had (never one that came with the
//!   request) and records the call: who they spoke to, the number, where it
//!   came from ([`CallBack`]). Only then does the change apply: the new
//!   account takes the payee's legal name, its open invoices move to it,
//!   and the old account is no longer paid ([`replaced`]);
//! - the first payment to the new account needs at least
//!   `payables.account_change_approvals` approvals and is never approved by
//!   policy alone ([`first_payment`], rule `account_changed`); the risk
//!   signal `account_changed` shows for a while on every page.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::config::Config;
use crate::decision::policy::{Decision, Outcome, Reason};
use crate::domain::mask_account_tagged;
use crate::store::{self, directory::PayeeEntry, Conn, Store};

/// A payment to an account that was replaced is refused under this rule.
pub const RULE_REPLACED: &str = "payee_account_replaced";
/// The first payment after a change needs more approvals under this rule.
pub const RULE_FIRST: &str = "account_changed";

/// The call that verified a change of bank account, as the second person
/// recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallBack {
    /// Whom they spoke to at the payee (name and role).
    pub spoke_to: String,
    /// The number they called.
    pub phone: String,
    /// Where that number came from (the vendor file, the contract…): never
    /// the request for the change itself.
    pub number_source: String,
    /// Anything else worth keeping.
    #[serde(default)]
    pub note: Option<String>,
}

impl CallBack {
    /// Checks what a person typed; the field and why, for the first problem.
    pub fn parse(
        spoke_to: &str,
        phone: &str,
        number_source: &str,
        note: Option<&str>,
        confirmed: bool,
    ) -> Result<CallBack, (&'static str, &'static str)> {
        let text = |s: &str, max: usize| {
            let s = s.trim();
            (!s.is_empty() && s.chars().count() <= max && !s.chars().any(crate::domain::is_unsafe_in_text))
                .then(|| s.to_owned())
        };
        let spoke_to = text(spoke_to, 100).ok_or(("spoke_to", "say whom you spoke to (1 to 100 characters)"))?;
        let phone = phone.trim();
        let digits = phone.chars().filter(char::is_ascii_digit).count();
        if !(6..=20).contains(&digits) || !phone.chars().all(|c| c.is_ascii_digit() || " +-().".contains(c)) {
            return Err(("phone", "the number you called: 6 to 20 digits, with + ( ) - . or spaces"));
        }
        let number_source = text(number_source, 200)
            .ok_or(("number_source", "say where the number came from (1 to 200 characters)"))?;
        let note = match note.map(str::trim).filter(|n| !n.is_empty()) {
            Some(n) => Some(text(n, 500).ok_or(("note", "at most 500 characters, no control characters"))?),
            None => None,
        };
        if !confirmed {
            return Err(("confirmed", "confirm that the payee confirmed the new account on that call"));
        }
        Ok(CallBack { spoke_to, phone: phone.to_owned(), number_source, note })
    }
}

/// The refusal of a payment to an account that a verified change replaced.
pub fn replaced(payee: &PayeeEntry) -> Option<Decision> {
    let successor = payee.replaced_by.as_deref()?;
    Some(Decision::denied_by(
        RULE_REPLACED,
        format!(
            "{}'s account {} was replaced by {} (a verified change of bank account): propose the payment to the new \
             account.",
            payee.legal_name,
            mask_account_tagged(&payee.id),
            mask_account_tagged(successor)
        ),
    ))
}

/// At commit: the refusal of a transfer whose payee's account was replaced
/// by a verified change since it was proposed or approved.
pub async fn replaced_now(
    state: &impl Store,
    row: &crate::store::proposals::ProposalRow,
) -> store::Result<Option<Decision>> {
    if row.kind != crate::domain::ProposalKind::Transfer.as_str() {
        return Ok(None);
    }
    let entry = store::directory::payee_entry(&state.db().read, &row.tenant_id, &row.payee_id).await?;
    Ok(entry.as_ref().and_then(replaced))
}

/// `decision` for a payment to `payee`, raised when it is the first since
/// the payee's account changed (`paid_since`: whether one was approved or
/// paid since): at least `payables.account_change_approvals` approvals,
/// never policy alone.
pub fn first_payment(state: &impl Config, payee: &PayeeEntry, paid_since: bool, decision: Decision) -> Decision {
    let Some(changed_at) = payee.account_changed_at else { return decision };
    if paid_since || decision.outcome == Outcome::Denied || decision.reasons.iter().any(|r| r.rule == RULE_FIRST) {
        return decision;
    }
    let required = state.settings().payables.account_change_approvals.max(1);
    let mut raised = decision;
    raised.outcome = Outcome::NeedsApproval;
    raised.reasons.retain(|r| r.rule != crate::decision::policy::RULE_AUTO_APPROVE);
    raised.required_approvals = raised.required_approvals.max(required);
    let from = payee.replaces.as_deref().map(mask_account_tagged).unwrap_or_else(|| "another account".into());
    raised.reasons.push(Reason {
        rule: RULE_FIRST.into(),
        message: format!(
            "First payment to this account since it replaced {from} on {} (a verified change of bank account): {} \
             approvals.",
            changed_at.format("%Y-%m-%d"),
            raised.required_approvals
        ),
    });
    raised
}

/// Whether a payment to `payee` (an account that took over from another)
/// was approved or paid since it did.
pub async fn paid_since_change(state: &impl Store, payee: &PayeeEntry) -> store::Result<bool> {
    match payee.account_changed_at {
        Some(at) => store::risk::approved_since(&state.db().read, &payee.tenant_id, &payee.id, at).await,
        None => Ok(true),
    }
}

/// What applying a change did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub legal_name: String,
    pub invoices_moved: u64,
}

/// Applies a verified change in the caller's transaction: `to` takes over
/// from `from` with the call-back that verified it (by `verified_by`, the
/// confirming person), and `from`'s open invoices move to `to`. `None` when
/// `from` is gone or was replaced meanwhile, or `to` exists already.
pub async fn apply(
    conn: &mut Conn,
    tenant: &str,
    (from, to): (&str, &str),
    call_back: &CallBack,
    verified_by: (&str, &str),
    now: DateTime<Utc>,
) -> store::Result<Option<Applied>> {
    let Some(old) = store::directory::payee_entry(&mut *conn, tenant, from).await? else { return Ok(None) };
    let record = json!({
        "verified_by": verified_by.0, "verified_by_name": verified_by.1, "spoke_to": call_back.spoke_to,
        "phone": call_back.phone, "number_source": call_back.number_source, "note": call_back.note,
        "at": store::ts(now),
    });
    if !store::directory::replace_account(conn, tenant, from, to, &record.to_string(), now).await? {
        return Ok(None);
    }
    let invoices_moved = store::invoices::move_open(conn, tenant, from, to, now).await?;
    Ok(Some(Applied { legal_name: old.legal_name, invoices_moved }))
}

/// Checks an admin's request that `to` take over from payee `from`: `from`
/// is a current payee of the tenant, `to` a payee id not yet in the
/// registry. The legal name the new account keeps, or why not.
pub async fn check_request(
    state: &impl Store,
    tenant: &str,
    from: &str,
    to: &str,
) -> store::Result<Result<String, String>> {
    let Ok(to) = crate::domain::PayeeId::parse(to.trim()) else {
        return Ok(Err("new account: must be a payee id (acct_…, card_… or ba_…)".into()));
    };
    let Some(old) = store::directory::payee_entry(&state.db().read, tenant, from).await? else {
        return Ok(Err("there is no such payee here".into()));
    };
    if let Some(successor) = &old.replaced_by {
        return Ok(Err(format!(
            "{} was already replaced by {}: change that account instead",
            mask_account_tagged(from),
            mask_account_tagged(successor)
        )));
    }
    if store::directory::payee_entry(&state.db().read, tenant, to.expose()).await?.is_some() {
        return Ok(Err(format!("{} is already a payee here", to.masked())));
    }
    Ok(Ok(old.legal_name))
}

/// What confirming the change does, line by line, against the registry as
/// `conn` reads it now (a change confirmed after the registry moved says
/// something else, and is withdrawn as stale).
pub async fn lines(
    conn: &mut Conn,
    tenant: &str,
    (from, to): (&str, &str),
    legal_name: &str,
) -> store::Result<Vec<String>> {
    let (old_masked, new_masked) = (mask_account_tagged(from), mask_account_tagged(to));
    let old = store::directory::payee_entry(&mut *conn, tenant, from).await?;
    let new_exists = store::directory::payee_entry(&mut *conn, tenant, to).await?.is_some();
    let mut lines = match old {
        None => vec![format!("Payee {old_masked} is no longer in the registry")],
        Some(p) if p.replaced_by.is_some() => vec![format!("Payee {old_masked} was already replaced")],
        Some(p) => vec![format!(
            "Pay {} at the new account {new_masked} instead of {old_masked}: the old account is no longer paid, and \
             its open invoices move to the new one",
            p.legal_name
        )],
    };
    if new_exists {
        lines.push(format!("{new_masked} is already a payee"));
    }
    lines.push(format!(
        "Confirm only after calling {legal_name} back at a number you already had (never one that came with the \
         request) and hearing them confirm the new account"
    ));
    lines.push("The first payment to the new account needs the stricter approval, never policy alone".into());
    Ok(lines)
}

/// Applies a confirmed change with the call-back that verified it, by the
/// confirming admin (`actor`, their user id and name), in the caller's
/// transaction; audited (`payee.account_changed`: accounts masked). Why
/// not, when the registry moved since it was proposed.
pub async fn confirmed(
    conn: &mut Conn,
    (tenant, actor, verified_by): (&str, &str, (&str, &str)),
    (from, to): (&str, &str),
    call_back: &CallBack,
    now: DateTime<Utc>,
) -> store::Result<Result<(), &'static str>> {
    let Some(applied) = apply(&mut *conn, tenant, (from, to), call_back, verified_by, now).await? else {
        return Ok(Err("the payee's account changed meanwhile, or the new account is already a payee"));
    };
    let entry = store::audit::AuditEntry {
        tenant_id: Some(tenant.to_owned()),
        actor: actor.to_owned(),
        action: "payee.account_changed".into(),
        proposal_id: None,
        request_hash: None,
        data: json!({"from": mask_account_tagged(from), "to": mask_account_tagged(to), "legal_name": applied.legal_name,
                     "invoices_moved": applied.invoices_moved, "call_back": {"verified_by": verified_by.0,
                     "spoke_to": call_back.spoke_to, "number_source": call_back.number_source}}),
    };
    store::audit::append(conn, &entry).await?;
    Ok(Ok(()))
}

/// "verified by call-back by ben (spoke to …)", for a page, from a stored record.
pub fn call_back_words(record: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(record).ok()?;
    Some(format!(
        "Verified by {} with a call-back to {} (number from {}) on {}",
        v["verified_by_name"].as_str()?,
        v["spoke_to"].as_str()?,
        v["number_source"].as_str()?,
        v["at"].as_str()?.get(..10)?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_back_names_whom_which_number_and_where_it_came_from() {
        let ok =
            CallBack::parse(" Jo Park, AP manager ", "+49 (30) 1234-5678", "vendor master file", None, true).unwrap();
        assert_eq!((ok.spoke_to.as_str(), ok.phone.as_str()), ("Jo Park, AP manager", "+49 (30) 1234-5678"));
        assert_eq!(CallBack::parse("", "+49 30 1234", "file", None, true).unwrap_err().0, "spoke_to");
        assert_eq!(CallBack::parse("Jo", "call me", "file", None, true).unwrap_err().0, "phone");
        assert_eq!(CallBack::parse("Jo", "12345", "file", None, true).unwrap_err().0, "phone", "too few digits");
        assert_eq!(CallBack::parse("Jo", "+49 30 123456", " ", None, true).unwrap_err().0, "number_source");
        assert_eq!(CallBack::parse("Jo", "+49 30 123456", "file", Some("a\u{202e}b"), true).unwrap_err().0, "note");
        assert_eq!(CallBack::parse("Jo", "+49 30 123456", "file", None, false).unwrap_err().0, "confirmed");
    }

    fn entry(changed: bool) -> PayeeEntry {
        PayeeEntry {
            tenant_id: "acme".into(),
            id: "ba_northwind0099".into(),
            legal_name: "Northwind Traders GmbH".into(),
            trusted: false,
            replaces: changed.then(|| "ba_northwind0007".into()),
            replaced_by: None,
            account_changed_at: changed.then(|| "2026-11-02T10:00:00Z".parse().unwrap()),
            account_call_back: None,
            created_at: "2026-11-02T10:00:00Z".parse().unwrap(),
        }
    }

    #[test]
    fn the_first_payment_after_a_change_needs_the_stricter_approval_once() {
        let settings = crate::config::Settings::default();
        struct S(crate::config::Settings);
        impl Config for S {
            fn settings(&self) -> &crate::config::Settings {
                &self.0
            }
            fn currencies(&self) -> &crate::domain::CurrencyRules {
                unimplemented!()
            }
        }
        let state = S(settings);
        let auto = Decision {
            outcome: Outcome::AutoApproved,
            required_approvals: 0,
            reasons: vec![Reason { rule: crate::decision::policy::RULE_AUTO_APPROVE.into(), message: String::new() }],
            groups: Vec::new(),
        };
        let raised = first_payment(&state, &entry(true), false, auto.clone());
        assert_eq!((raised.outcome, raised.required_approvals), (Outcome::NeedsApproval, 2));
        assert_eq!(raised.reasons.len(), 1);
        assert!(raised.reasons[0].message.contains("replaced ba_…0007 #"), "{raised:?}");
        assert_eq!(first_payment(&state, &entry(true), false, raised.clone()), raised, "counted once");
        assert_eq!(first_payment(&state, &entry(true), true, auto.clone()), auto, "a payment since: as policy says");
        assert_eq!(first_payment(&state, &entry(false), false, auto.clone()), auto, "no change");
        let mut old = entry(false);
        old.replaced_by = Some("ba_northwind0099".into());
        assert_eq!(replaced(&old).unwrap().reasons[0].rule, RULE_REPLACED);
        assert!(replaced(&entry(true)).is_none());
    }
}
