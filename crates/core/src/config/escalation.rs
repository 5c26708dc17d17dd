//! `[tenants.<id>]`'s approval groups and the rules that use them
//! (docs/NOTIFICATIONS.md, docs/POLICY.md): named
//! groups; per amount band, the approvals required from groups
//! (`group_approval`); and when to remind the eligible approvers and when
//! to escalate to a group (`escalation`). Escalation never approves: a
//! proposal nobody decides ends `expired` at its expiry.
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

/// One amount band's group approvals: "one from treasury and one from
/// controllers from 50,000.00 USD", "any 2 of the 3 directors".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupRule {
    /// Only proposals in this currency (ISO 4217); none: any currency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// Only proposals of at least this amount (needs `currency` when above 0).
    #[serde(default)]
    pub from_minor: u64,
    /// The approvals each group must give; one person counts for one group.
    pub require: Vec<crate::decision::policy::GroupNeed>,
}

/// A rule that applies from an amount, in a currency or any.
pub trait Band {
    fn currency(&self) -> Option<&str>;
    fn lower_bound(&self) -> u64;
}

impl Band for EscalationRule {
    fn currency(&self) -> Option<&str> {
        self.currency.as_deref()
    }
    fn lower_bound(&self) -> u64 {
        self.from_minor
    }
}

impl Band for GroupRule {
    fn currency(&self) -> Option<&str> {
        self.currency.as_deref()
    }
    fn lower_bound(&self) -> u64 {
        self.from_minor
    }
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
pub fn rule_for<'a, R: Band>(rules: &'a [R], currency: &str, amount_minor: u64) -> Option<&'a R> {
    rules
        .iter()
        .filter(|r| r.currency().is_none_or(|c| c == currency) && amount_minor >= r.lower_bound())
        .max_by_key(|r| (r.currency().is_some(), r.lower_bound()))
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

    /// The approvals `tenant`'s group rule requires of a payment of
    /// `amount_minor` `currency` (empty: no rule covers it).
    pub fn group_needs(
        &self,
        tenant: &str,
        currency: &str,
        amount_minor: u64,
    ) -> &[crate::decision::policy::GroupNeed] {
        self.tenants
            .get(tenant)
            .and_then(|t| rule_for(&t.group_approval, currency, amount_minor))
            .map_or(&[], |r| r.require.as_slice())
    }

    /// `decision` with `tenant`'s group rule for the payment applied
    /// (`policy::with_groups`).
    pub fn with_group_rule(
        &self,
        tenant: &str,
        currency: crate::domain::Currency,
        amount_minor: u64,
        decision: crate::decision::policy::Decision,
    ) -> crate::decision::policy::Decision {
        let needs = self.group_needs(tenant, currency.code(), amount_minor);
        crate::decision::policy::with_groups(decision, needs, &currency.format_minor(amount_minor))
    }
}

/// Checks one band of a rule list: its currency, its amount, and that no
/// earlier rule starts at the same place.
fn check_band<R: Band>(rules: &[R], i: usize, key: &dyn Fn(&str) -> String) -> Result<(), (String, String)> {
    let rule = &rules[i];
    if let Some(code) = rule.currency() {
        if Currency::parse(code).map(|c| c.code() != code).unwrap_or(true) {
            return Err((key("currency"), "is not an upper-case ISO 4217 code".into()));
        }
    } else if rule.lower_bound() > 0 {
        return Err((key("from_minor"), "an amount needs its `currency`".into()));
    }
    if rules[..i].iter().any(|r| r.currency() == rule.currency() && r.lower_bound() == rule.lower_bound()) {
        return Err((key("from_minor"), "another rule already starts at this amount in this currency".into()));
    }
    Ok(())
}

/// Checks a tenant's group approval rules against its groups.
pub(super) fn check_group_rules(
    tenant: &str,
    groups: &BTreeMap<String, Vec<String>>,
    rules: &[GroupRule],
) -> Result<(), (String, String)> {
    for (i, rule) in rules.iter().enumerate() {
        let key = |field: &str| format!("tenants.{tenant}.group_approval[{i}].{field}");
        check_band(rules, i, &key)?;
        if rule.require.is_empty() {
            return Err((key("require"), "must name at least one group".into()));
        }
        for (j, need) in rule.require.iter().enumerate() {
            let Some(members) = groups.get(&need.group) else {
                return Err((
                    key(&format!("require[{j}].group")),
                    format!("`{}` is not one of this tenant's approval_groups", need.group),
                ));
            };
            if need.count == 0 || usize::from(need.count) > members.len() {
                return Err((
                    key(&format!("require[{j}].count")),
                    format!("must be between 1 and the {} members of `{}`", members.len(), need.group),
                ));
            }
            if rule.require[..j].iter().any(|n| n.group == need.group) {
                return Err((key(&format!("require[{j}].group")), format!("`{}` is named twice", need.group)));
            }
        }
    }
    Ok(())
}

/// Checks a tenant's groups and rules; the error names the key.
pub(super) fn check(
    tenant: &str,
    groups: &BTreeMap<String, Vec<String>>,
    idp_granted: &[&str],
    rules: &[EscalationRule],
) -> Result<(), (String, String)> {
    let key = |rest: &str| format!("tenants.{tenant}.{rest}");
    for (name, members) in groups {
        if name.trim().is_empty() || name.len() > 64 || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err((key("approval_groups"), format!("`{name}` is not a group name (1–64 characters, no spaces)")));
        }
        // A group the identity provider's groups fill may list nobody here.
        if (members.is_empty() && !idp_granted.contains(&name.as_str())) || members.iter().any(|m| m.trim().is_empty())
        {
            return Err((
                key(&format!("approval_groups.{name}")),
                "must list at least one username (or be granted by an idp_groups entry)".into(),
            ));
        }
    }
    for (i, rule) in rules.iter().enumerate() {
        let key = |field: &str| key(&format!("escalation[{i}].{field}"));
        check_band(rules, i, &key)?;
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
    fn group_rules_are_checked_against_the_groups() {
        let groups: BTreeMap<String, Vec<String>> =
            [("treasury".to_owned(), vec!["ana".to_owned(), "ben".to_owned()])].into();
        let rule = |group: &str, count: u8| GroupRule {
            currency: Some("USD".into()),
            from_minor: 5_000_000,
            require: vec![crate::decision::policy::GroupNeed { group: group.into(), count }],
        };
        let bad = |rules: &[GroupRule]| check_group_rules("acme", &groups, rules).unwrap_err().0;
        assert_eq!(bad(&[rule("board", 1)]), "tenants.acme.group_approval[0].require[0].group");
        assert_eq!(bad(&[rule("treasury", 3)]), "tenants.acme.group_approval[0].require[0].count");
        assert_eq!(bad(&[rule("treasury", 0)]), "tenants.acme.group_approval[0].require[0].count");
        assert_eq!(bad(&[rule("treasury", 1), rule("treasury", 2)]), "tenants.acme.group_approval[1].from_minor");
        let mut twice = rule("treasury", 1);
        twice.require.push(twice.require[0].clone());
        assert_eq!(bad(&[twice]), "tenants.acme.group_approval[0].require[1].group");
        assert!(check_group_rules("acme", &groups, &[rule("treasury", 2)]).is_ok());
    }

    #[test]
    fn bad_rules_name_their_key() {
        let groups: BTreeMap<String, Vec<String>> = [("treasury".to_owned(), vec!["ben".to_owned()])].into();
        let bad = |rules: &[EscalationRule], groups: &BTreeMap<String, Vec<String>>| {
            check("acme", groups, &[], rules).unwrap_err().0
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
        assert!(check("acme", &groups, &[], &[rule(Some("USD"), 100, Some(1), Some(2))]).is_ok());
    }
}
