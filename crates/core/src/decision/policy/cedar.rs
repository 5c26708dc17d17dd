//! A tenant's payment policy written in Cedar (docs/POLICY.md, "Cedar").
//!
//! The policy answers four questions about a proposal, each a Cedar action
//! with the agent as principal and the proposal as resource (the schema is
//! `policies/countersign.cedarschema`, compiled in):
//!
//! 1. `propose`: a `forbid` that matches refuses the proposal (`denied`);
//!    so does the absence of any `permit` (Cedar denies by default).
//! 2. `manual_review`: a `permit` that matches means a human must approve.
//! 3. `dual_approval`: a `permit` that matches means two distinct people.
//! 4. `auto_approve`: a `permit` (and no `forbid`) approves by policy alone,
//!    only when neither 2 nor 3 holds.
//!
//! Otherwise one human approval is needed (rule `single_approval`). This is
//! the order and the shape of the TOML rules (`super::evaluate`), so the two
//! give the same decisions for the same thresholds (`super::convert` writes
//! one from the other; the equivalence is a property test below).
//!
//! Each matching policy is one reason: its `@id` annotation is the rule's
//! name, its `@reason` the message, with `{amount}`, `{currency}`,
//! `{agent}`, `{purpose}`, `{kind}` and `{source_account}` (masked) filled
//! in. A policy without `@reason` counts but is not listed (a plain
//! `permit` for `propose`, say). Evaluation errors fail closed: a `propose`
//! that errs is refused, and any other question that errs asks for a human.

use cedar_policy::{
    Authorizer, Context, Decision as CedarDecision, Entities, Entity, EntityId, EntityTypeName, EntityUid, PolicyId,
    PolicySet, Request, RestrictedExpression, Schema, ValidationMode, Validator,
};
use std::collections::{HashMap, HashSet};
use std::str::FromStr;
use std::sync::OnceLock;

use super::{Decision, Outcome, PolicyInput, Reason, RULE_AUTO_APPROVE};

/// The schema every policy is validated against (shipped in the repository).
pub const SCHEMA_TEXT: &str = include_str!("../../../../../policies/countersign.cedarschema");

/// The rule named when nothing permits a proposal.
pub const RULE_NOT_PERMITTED: &str = "not_permitted";
/// The rule named when a policy could not be evaluated.
pub const RULE_POLICY_ERROR: &str = "policy_error";
/// The rule named when one human approval is needed.
pub const RULE_SINGLE: &str = "single_approval";

fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let (schema, _warnings) = Schema::from_cedarschema_str(SCHEMA_TEXT).expect("the shipped Cedar schema parses");
        schema
    })
}

/// The action and entity uids every evaluation uses, made once.
struct Names {
    propose: EntityUid,
    manual_review: EntityUid,
    dual_approval: EntityUid,
    auto_approve: EntityUid,
    tenant: EntityTypeName,
    agent: EntityTypeName,
    payee: EntityTypeName,
    invoice: EntityTypeName,
    proposal: EntityTypeName,
}

fn names() -> &'static Names {
    static NAMES: OnceLock<Names> = OnceLock::new();
    NAMES.get_or_init(|| {
        let ty = |name: &str| EntityTypeName::from_str(name).expect("a valid type name");
        let action = |id: &str| EntityUid::from_type_name_and_id(ty("Countersign::Action"), EntityId::new(id));
        Names {
            propose: action("propose"),
            manual_review: action("manual_review"),
            dual_approval: action("dual_approval"),
            auto_approve: action("auto_approve"),
            tenant: ty("Countersign::Tenant"),
            agent: ty("Countersign::Agent"),
            payee: ty("Countersign::Payee"),
            invoice: ty("Countersign::Invoice"),
            proposal: ty("Countersign::Proposal"),
        }
    })
}

/// A policy that failed to load: where and why, as Cedar says it.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct CedarError(pub String);

/// One loaded policy's annotations, by Cedar policy id.
#[derive(Debug, Clone)]
struct Annotated {
    /// Position in the file: reasons are listed in this order.
    position: usize,
    rule: String,
    reason: Option<String>,
}

/// A validated Cedar policy set, ready to evaluate.
pub struct CedarPolicy {
    set: PolicySet,
    annotations: HashMap<PolicyId, Annotated>,
    /// The policy text, as loaded.
    text: String,
    /// `sha256:` of the text: which policy decided.
    digest: String,
}

impl std::fmt::Debug for CedarPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CedarPolicy").field("digest", &self.digest).field("policies", &self.annotations.len()).finish()
    }
}

/// `line:column` of a byte offset in `text` (both from 1).
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Each of a diagnostic's errors as `file:line:col: message (label)`.
fn located(origin: &str, text: &str, diagnostic: &dyn miette::Diagnostic) -> String {
    let mut lines = Vec::new();
    let mut push = |d: &dyn miette::Diagnostic| {
        let message = d.to_string();
        let mut at = None;
        if let Some(labels) = d.labels() {
            for label in labels {
                let (line, col) = line_col(text, label.offset());
                let what = label.label().map(|l| format!(" ({l})")).unwrap_or_default();
                at.get_or_insert(format!("{origin}:{line}:{col}: {message}{what}"));
            }
        }
        let help = d.help().map(|h| format!("; {h}")).unwrap_or_default();
        lines.push(format!("{}{help}", at.unwrap_or_else(|| format!("{origin}: {message}"))));
    };
    match diagnostic.related() {
        Some(related) => {
            let mut any = false;
            for d in related {
                any = true;
                push(d);
            }
            if !any {
                push(diagnostic);
            }
        }
        None => push(diagnostic),
    }
    lines.join("\n")
}

impl CedarPolicy {
    /// Parses `text` (from `origin`, a file name for the messages) and
    /// validates it against the schema; every policy needs an `@id`. Any
    /// error refuses the whole text.
    pub fn parse(origin: &str, text: &str) -> Result<CedarPolicy, CedarError> {
        let set = PolicySet::from_str(text).map_err(|e| CedarError(located(origin, text, &e)))?;
        let validation = Validator::new(schema().clone()).validate(&set, ValidationMode::Strict);
        if !validation.validation_passed() {
            let errors: Vec<String> =
                validation.validation_errors().map(|e| located(origin, text, e as &dyn miette::Diagnostic)).collect();
            return Err(CedarError(errors.join("\n")));
        }
        if set.templates().next().is_some() {
            return Err(CedarError(format!("{origin}: templates are not supported; write static policies")));
        }
        let mut annotations = HashMap::new();
        for policy in set.policies() {
            let position = position_of(policy.id());
            let Some(rule) = policy.annotation("id").map(str::to_owned).filter(|r| valid_rule(r)) else {
                let (line, col) = policy_start(text, position);
                return Err(CedarError(format!(
                    "{origin}:{line}:{col}: every policy needs an @id(\"rule_name\") annotation of letters, digits \
                     and underscores (it names the rule in every decision)"
                )));
            };
            let reason = policy.annotation("reason").map(str::to_owned);
            annotations.insert(policy.id().clone(), Annotated { position, rule, reason });
        }
        Ok(CedarPolicy {
            digest: crate::platform::digest::sha256_prefixed(text.as_bytes()),
            set,
            annotations,
            text: text.into(),
        })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The decision for `input`, in the shape of the TOML rules'.
    pub fn evaluate(&self, input: &PolicyInput<'_>) -> Decision {
        let names = names();
        let facts = match Facts::of(input) {
            Ok(f) => f,
            Err(e) => {
                return Decision::denied_by(RULE_POLICY_ERROR, format!("The policy's facts could not be built: {e}."))
            }
        };
        let mut reasons = Vec::new();
        let propose = self.ask(&facts, &names.propose);
        if propose.errored {
            return Decision::denied_by(RULE_POLICY_ERROR, "The policy could not be evaluated: refused.".into());
        }
        if !propose.allowed {
            let mut reasons = self.reasons(input, &propose.matched);
            if reasons.is_empty() {
                reasons.push(Reason {
                    rule: RULE_NOT_PERMITTED.into(),
                    message: "No policy permits this proposal.".into(),
                });
            }
            return Decision { outcome: Outcome::Denied, required_approvals: 0, reasons, groups: Vec::new() };
        }
        reasons.extend(self.reasons(input, &propose.matched));
        let manual = self.ask(&facts, &names.manual_review);
        let manual_only = manual.allowed || manual.errored;
        reasons.extend(self.reasons(input, &manual.matched));
        let dual = self.ask(&facts, &names.dual_approval);
        let required = if dual.allowed { 2 } else { 1 };
        reasons.extend(self.reasons(input, &dual.matched));
        if !manual_only && required == 1 && !dual.errored {
            let auto = self.ask(&facts, &names.auto_approve);
            if auto.allowed && !auto.errored {
                let mut auto_reasons = self.reasons(input, &auto.matched);
                if auto_reasons.is_empty() {
                    auto_reasons.push(Reason { rule: RULE_AUTO_APPROVE.into(), message: "Approved by policy.".into() });
                }
                reasons.extend(auto_reasons);
                return Decision { outcome: Outcome::AutoApproved, required_approvals: 0, reasons, groups: Vec::new() };
            }
        }
        if required == 1 {
            let amount = input.currency.format_minor(input.amount_minor);
            reasons.push(Reason { rule: RULE_SINGLE.into(), message: format!("{amount} needs one human approval.") });
        }
        Decision { outcome: Outcome::NeedsApproval, required_approvals: required, reasons, groups: Vec::new() }
    }

    fn ask(&self, facts: &Facts, action: &EntityUid) -> Answer {
        let request =
            match Request::new(facts.principal.clone(), action.clone(), facts.resource.clone(), Context::empty(), None)
            {
                Ok(r) => r,
                Err(_) => return Answer { allowed: false, errored: true, matched: Vec::new() },
            };
        let response = Authorizer::new().is_authorized(&request, &self.set, &facts.entities);
        let mut matched: Vec<PolicyId> = response.diagnostics().reason().cloned().collect();
        matched.sort_by_key(|id| self.annotations.get(id).map_or(usize::MAX, |a| a.position));
        let errored = response.diagnostics().errors().next().is_some();
        Answer { allowed: response.decision() == CedarDecision::Allow, errored, matched }
    }

    /// The listed reasons of the policies that matched, in file order.
    fn reasons(&self, input: &PolicyInput<'_>, matched: &[PolicyId]) -> Vec<Reason> {
        matched
            .iter()
            .filter_map(|id| self.annotations.get(id))
            .filter_map(|a| a.reason.as_ref().map(|r| Reason { rule: a.rule.clone(), message: render(r, input) }))
            .collect()
    }

    /// The rule names the policies define, once each, in file order (`policy check`).
    pub fn rules(&self) -> Vec<String> {
        let mut all: Vec<&Annotated> = self.annotations.values().collect();
        all.sort_by_key(|a| a.position);
        let mut rules: Vec<String> = Vec::new();
        for a in all {
            if !rules.contains(&a.rule) {
                rules.push(a.rule.clone());
            }
        }
        rules
    }
}

struct Answer {
    allowed: bool,
    errored: bool,
    matched: Vec<PolicyId>,
}

/// `policy3` → 3: Cedar names the policies of a text by their position.
fn position_of(id: &PolicyId) -> usize {
    id.to_string().trim_start_matches("policy").parse().unwrap_or(usize::MAX)
}

/// Where the `n`-th policy of `text` starts, roughly (its first annotation
/// or effect), for a message about the policy as a whole.
fn policy_start(text: &str, n: usize) -> (usize, usize) {
    // Statements end with `;` outside strings and comments.
    let (mut count, mut in_string, mut escaped, mut in_comment) = (0usize, false, false, false);
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if in_comment {
            in_comment = c != b'\n';
        } else if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if c == b'"' {
            in_string = true;
        } else if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            in_comment = true;
        } else if c == b';' {
            count += 1;
            if count == n {
                start = i + 1;
            }
        }
        i += 1;
    }
    let rest = &text[start..];
    let skipped = rest.len() - rest.trim_start().len();
    line_col(text, start + skipped)
}

fn valid_rule(rule: &str) -> bool {
    !rule.is_empty() && rule.len() <= 64 && rule.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `@reason`'s text with the proposal's values filled in.
fn render(template: &str, input: &PolicyInput<'_>) -> String {
    if !template.contains('{') {
        return template.to_owned();
    }
    template
        .replace("{amount}", &input.currency.format_minor(input.amount_minor))
        .replace("{currency}", input.currency.code())
        .replace("{agent}", &input.agent.agent_id)
        .replace("{purpose}", input.purpose.as_str())
        .replace("{kind}", input.kind.as_str())
        .replace("{source_account}", &input.source_account.to_string())
}

/// The entities of one evaluation.
struct Facts {
    principal: EntityUid,
    resource: EntityUid,
    entities: Entities,
}

impl Facts {
    fn of(input: &PolicyInput<'_>) -> Result<Facts, String> {
        let n = names();
        let uid = |ty: &EntityTypeName, id: &str| EntityUid::from_type_name_and_id(ty.clone(), EntityId::new(id));
        let tenant = uid(&n.tenant, input.tenant_id);
        let in_tenant = HashSet::from([tenant.clone()]);
        let strings =
            |items: Vec<String>| RestrictedExpression::new_set(items.into_iter().map(RestrictedExpression::new_string));
        let agent_uid = uid(&n.agent, &input.agent.agent_id);
        let agent = Entity::new(
            agent_uid.clone(),
            HashMap::from([
                ("source_accounts".to_owned(), strings(input.agent.source_accounts.clone())),
                ("purposes".to_owned(), strings(input.agent.purposes.iter().map(|p| p.as_str().to_owned()).collect())),
            ]),
            in_tenant.clone(),
        )
        .map_err(|e| e.to_string())?;
        let payee_uid = uid(&n.payee, input.payee_id);
        let payee = Entity::new(
            payee_uid.clone(),
            HashMap::from([("trusted".to_owned(), RestrictedExpression::new_bool(input.payee_trusted))]),
            in_tenant.clone(),
        )
        .map_err(|e| e.to_string())?;
        let amount = i64::try_from(input.amount_minor).map_err(|_| "the amount is out of range".to_owned())?;
        let resource = uid(&n.proposal, input.proposal_id);
        let mut attrs = HashMap::from([
            ("kind".to_owned(), RestrictedExpression::new_string(input.kind.as_str().to_owned())),
            ("amount_minor".to_owned(), RestrictedExpression::new_long(amount)),
            ("currency".to_owned(), RestrictedExpression::new_string(input.currency.code().to_owned())),
            ("purpose".to_owned(), RestrictedExpression::new_string(input.purpose.as_str().to_owned())),
            ("source_account".to_owned(), RestrictedExpression::new_string(input.source_account.expose().to_owned())),
            ("payee".to_owned(), RestrictedExpression::new_entity_uid(payee_uid)),
            ("risk_signals".to_owned(), strings(input.risk_signals.iter().map(|s| (*s).to_owned()).collect())),
        ]);
        let mut entities = vec![Entity::with_uid(tenant), agent, payee];
        if let Some(invoice) = input.invoice_id {
            let invoice_uid = uid(&n.invoice, invoice);
            attrs.insert("invoice".to_owned(), RestrictedExpression::new_entity_uid(invoice_uid.clone()));
            entities.push(Entity::new_no_attrs(invoice_uid, in_tenant.clone()));
        }
        let proposal = Entity::new(resource.clone(), attrs, in_tenant).map_err(|e| e.to_string())?;
        entities.push(proposal);
        let entities = Entities::from_entities(entities, None).map_err(|e| e.to_string())?;
        Ok(Facts { principal: agent_uid, resource, entities })
    }
}

#[cfg(test)]
mod tests;
