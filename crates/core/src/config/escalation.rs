//! `[tenants.<id>]`'s escalation policy (issue 29 item 3,
//! docs/NOTIFICATIONS.md): named approval groups, and per amount band when
//! to remind the eligible approvers and when to escalate to a group. It
//! never approves: a proposal nobody decides ends `expired` at its expiry.
//!
//! ```toml
//! [tenants.acme.approval_groups]
//! treasury = ["ben", "ada"]
//!
//! [[tenants.acme.escalation]]
//! currency = "USD"
//! from_minor = 1_000_000        # 10,000.00 USD and up
//! remind_after_secs = 900
//! escalate_after_secs = 1800
//! escalate_to = "treasury"
//! ```

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::domain::Currency;

/// One amount band's timings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EscalationRule {
    /// Only proposals in this currency (ISO 4217); none: any currency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// Only proposals of at least this amount, in `currency`'s minor units
    /// (needs `currency` when above 0).
    #[serde(default)]
    pub from_minor: u64,
    /// Remind the approvers who may approve this long after it started
    /// waiting (push and email; their quiet hours hold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remind_after_secs: Option<u64>,
    /// Escalate to `escalate_to` this long after it started waiting: its
    /// members who may approve are told, through their quiet hours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_after_secs: Option<u64>,
    /// An approval group of the tenant (`approval_groups`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_to: Option<String>,
}

/// When a proposal is reminded about and escalated, from its tenant's rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub remind_at: Option<chrono::DateTime<chrono::Utc>>,
    pub escalate_at: Option<chrono::DateTime<chrono::Utc>>,
    pub escalate_to: Option<String>,
}

/// The rule for a proposal of `amount_minor` in `currency`: among the rules
/// that cover it, those naming its currency before those for any currency,
/// then the highest `from_minor`.
pub fn rule_for<'a>(rules: &'a [EscalationRule], currency: &str, amount_minor: u64) -> Option<&'a EscalationRule> {
    rules
        .iter()
        .filter(|r| r.currency.as_deref().is_none_or(|c| c == currency) && amount_minor >= r.from_minor)
        .max_by_key(|r| (r.currency.is_some(), r.from_minor))
}

impl EscalationRule {
    /// The plan of a proposal that starts waiting at `from` and expires at
    /// `expires_at`; a step that would come at or after the expiry is left out.
    pub fn plan(&self, from: chrono::DateTime<chrono::Utc>, expires_at: chrono::DateTime<chrono::Utc>) -> Plan {
        let at = |secs: Option<u64>| {
            secs.map(|s| from + chrono::Duration::seconds(s.min(i64::MAX as u64 / 1000) as i64))
                .filter(|t| *t < expires_at)
        };
        let escalate_at = at(self.escalate_after_secs);
        Plan {
            remind_at: at(self.remind_after_secs),
            escalate_to: escalate_at.and(self.escalate_to.clone()),
            escalate_at,
        }
    }
}

impl super::Settings {
    /// The reminder and escalation of `tenant`'s proposal of `amount_minor`
    /// `currency` that starts waiting at `from`; none when no rule covers it.
    pub fn escalation_plan(
        &self,
        tenant: &str,
        currency: &str,
        amount_minor: u64,
        from: chrono::DateTime<chrono::Utc>,
        expires_at: chrono::DateTime<chrono::Utc>,
    ) -> Option<Plan> {
        let rules = &self.tenants.get(tenant)?.escalation;
        let plan = rule_for(rules, currency, amount_minor)?.plan(from, expires_at);
        (plan.remind_at.is_some() || plan.escalate_at.is_some()).then_some(plan)
    }

    /// The usernames in `tenant`'s approval group `name` (none: no such group).
    pub fn approval_group(&self, tenant: &str, name: &str) -> Option<&[String]> {
        self.tenants.get(tenant)?.approval_groups.get(name).map(Vec::as_slice)
    }
}

/// Checks a tenant's groups and rules; the error names the key.
pub(super) fn check(
    tenant: &str,
    groups: &BTreeMap<String, Vec<String>>,
    rules: &[EscalationRule],
) -> Result<(), (String, String)> {
    let key = |rest: &str| format!("tenants.{tenant}.{rest}");
    for (name, members) in groups {
        if name.trim().is_empty() || name.len() > 64 || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err((key("approval_groups"), format!("`{name}` is not a group name (1–64 characters, no spaces)")));
        }
        if members.is_empty() || members.iter().any(|m| m.trim().is_empty()) {
            return Err((key(&format!("approval_groups.{name}")), "must list at least one username".into()));
        }
    }
    for (i, rule) in rules.iter().enumerate() {
        let key = |field: &str| key(&format!("escalation[{i}].{field}"));
        if let Some(code) = &rule.currency {
            if Currency::parse(code).map(|c| c.code() != code).unwrap_or(true) {
                return Err((key("currency"), "is not an upper-case ISO 4217 code".into()));
            }
        } else if rule.from_minor > 0 {
            return Err((key("from_minor"), "an amount needs its `currency`".into()));
        }
        if rule.remind_after_secs.is_none() && rule.escalate_after_secs.is_none() {
            return Err((key("remind_after_secs"), "a rule reminds, escalates or both".into()));
        }
        if rule.remind_after_secs == Some(0) || rule.escalate_after_secs == Some(0) {
            return Err((key("escalate_after_secs"), "times are at least 1 second".into()));
        }
        match (&rule.escalate_to, rule.escalate_after_secs) {
            (Some(group), Some(_)) if !groups.contains_key(group) => {
                return Err((key("escalate_to"), format!("`{group}` is not one of this tenant's approval_groups")));
            }
            (Some(_), None) => return Err((key("escalate_after_secs"), "is needed with `escalate_to`".into())),
            (None, Some(_)) => return Err((key("escalate_to"), "is needed with `escalate_after_secs`".into())),
            _ => {}
        }
        if let (Some(remind), Some(escalate)) = (rule.remind_after_secs, rule.escalate_after_secs) {
            if remind >= escalate {
                return Err((key("remind_after_secs"), "must come before `escalate_after_secs`".into()));
            }
        }
        let same_band = rules[..i].iter().any(|r| r.currency == rule.currency && r.from_minor == rule.from_minor);
        if same_band {
            return Err((key("from_minor"), "another rule already starts at this amount in this currency".into()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn rule(currency: Option<&str>, from: u64, remind: Option<u64>, escalate: Option<u64>) -> EscalationRule {
        EscalationRule {
            currency: currency.map(str::to_owned),
            from_minor: from,
            remind_after_secs: remind,
            escalate_after_secs: escalate,
            escalate_to: escalate.map(|_| "treasury".to_owned()),
        }
    }

    #[test]
    fn the_most_specific_band_applies() {
        let rules = [
            rule(None, 0, Some(60), None),
            rule(Some("USD"), 0, Some(30), None),
            rule(Some("USD"), 1_000_000, Some(10), Some(20)),
        ];
        assert_eq!(rule_for(&rules, "USD", 999_999), Some(&rules[1]));
        assert_eq!(rule_for(&rules, "USD", 1_000_000), Some(&rules[2]));
        assert_eq!(rule_for(&rules, "EUR", 5_000_000), Some(&rules[0]));
        assert_eq!(rule_for(&rules[1..], "EUR", 5), None);
    }

    #[test]
    fn a_step_at_or_after_the_expiry_is_left_out() {
        let from = Utc.with_ymd_and_hms(2026, 12, 3, 9, 0, 0).unwrap();
        let expires = from + chrono::Duration::seconds(100);
        let plan = rule(None, 0, Some(50), Some(100)).plan(from, expires);
        assert_eq!(plan.remind_at, Some(from + chrono::Duration::seconds(50)));
        assert_eq!((plan.escalate_at, plan.escalate_to), (None, None));
    }

    #[test]
    fn a_file_loads_its_rules_and_refuses_a_bad_one_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        let good = "[tenants.acme.approval_groups]\ntreasury = [\"ben\"]\n[[tenants.acme.escalation]]\n\
                    currency = \"USD\"\nremind_after_secs = 60\nescalate_after_secs = 120\nescalate_to = \"treasury\"\n";
        std::fs::write(&path, good).unwrap();
        let settings = super::super::Settings::load(Some(&path), &Default::default()).unwrap();
        let from = Utc.with_ymd_and_hms(2026, 12, 3, 9, 0, 0).unwrap();
        let plan = settings.escalation_plan("acme", "USD", 5, from, from + chrono::Duration::hours(1)).unwrap();
        assert_eq!(plan.escalate_to.as_deref(), Some("treasury"));
        assert_eq!(settings.escalation_plan("acme", "EUR", 5, from, from + chrono::Duration::hours(1)), None);
        assert_eq!(settings.approval_group("acme", "treasury"), Some(&["ben".to_owned()][..]));

        std::fs::write(&path, good.replace("escalate_to = \"treasury\"", "escalate_to = \"board\"")).unwrap();
        let err = super::super::Settings::load(Some(&path), &Default::default()).unwrap_err().to_string();
        assert!(err.contains("tenants.acme.escalation[0].escalate_to"), "{err}");
    }

    #[test]
    fn bad_rules_name_their_key() {
        let groups: BTreeMap<String, Vec<String>> = [("treasury".to_owned(), vec!["ben".to_owned()])].into();
        let bad = |rules: &[EscalationRule], groups: &BTreeMap<String, Vec<String>>| {
            check("acme", groups, rules).unwrap_err().0
        };
        assert_eq!(bad(&[rule(Some("usd"), 0, Some(1), None)], &groups), "tenants.acme.escalation[0].currency");
        assert_eq!(bad(&[rule(None, 5, Some(1), None)], &groups), "tenants.acme.escalation[0].from_minor");
        assert_eq!(bad(&[rule(None, 0, None, None)], &groups), "tenants.acme.escalation[0].remind_after_secs");
        assert_eq!(bad(&[rule(None, 0, Some(9), Some(9))], &groups), "tenants.acme.escalation[0].remind_after_secs");
        let mut unknown = rule(None, 0, None, Some(9));
        unknown.escalate_to = Some("board".into());
        assert_eq!(bad(&[unknown], &groups), "tenants.acme.escalation[0].escalate_to");
        let twice = [rule(None, 0, Some(1), None), rule(None, 0, Some(2), None)];
        assert_eq!(bad(&twice, &groups), "tenants.acme.escalation[1].from_minor");
        let empty: BTreeMap<String, Vec<String>> = [("treasury".to_owned(), vec![])].into();
        assert_eq!(bad(&[], &empty), "tenants.acme.approval_groups.treasury");
        assert!(check("acme", &groups, &[rule(Some("USD"), 100, Some(1), Some(2))]).is_ok());
    }
}
