//! Decision: who may approve what, and how a decision is made. Policy
//! ([`policy`]: Cedar rules, explain, backtest), the one approval path and
//! the approval token it mints ([`approval`]), who is eligible
//! ([`eligibility`], [`approval_groups`]), delegation while away
//! ([`delegation`]), the reviewers' queue ([`queue`]), escalation and
//! expiry of proposals nobody decided ([`escalation`], [`expiry`]), and
//! four-eyes changes to the registry and the policy ([`registry_changes`]).

pub mod approval;
pub mod approval_groups;
pub mod delegation;
pub mod eligibility;
pub mod escalation;
pub mod expiry;
pub mod policy;
pub mod queue;
pub mod registry_changes;
