//! A batch's intake: the envelope read, each line checked as a proposal
//! would be, the batch's own invoice checks, and the batch stored.

use super::*;

fn field(name: String, code: &'static str, message: impl Into<String>) -> FieldError {
    FieldError::new(&name, code, message)
}

/// The batch body's own fields: the run id, the label, the lines.
fn parse_envelope(body: &Value) -> Result<(RunId, Option<Reference>, &Vec<Value>), BatchError> {
    let Some(obj) = body.as_object() else {
        return Err(BatchError::Validation(vec![field("body".into(), "invalid_type", "must be a JSON object")]));
    };
    let mut errors = Vec::new();
    for key in obj.keys() {
        if !["run_id", "label", "lines"].contains(&key.as_str()) {
            errors.push(field(key.clone(), "unknown_field", "is not a field of a batch"));
        }
    }
    let run = match obj.get("run_id").and_then(Value::as_str) {
        Some(r) if r.len() <= MAX_RUN_ID => match RunId::parse(r) {
            Ok(r) => Some(r),
            Err(e) => {
                errors.push(field("run_id".into(), "invalid_value", e.to_string()));
                None
            }
        },
        Some(_) => {
            errors.push(field("run_id".into(), "invalid_value", "must be at most 120 characters for a batch"));
            None
        }
        None => {
            errors.push(field("run_id".into(), "required", "is required, as a string"));
            None
        }
    };
    let label = match obj.get("label") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match Reference::parse(s) {
            Ok(r) => Some(r),
            Err(e) => {
                errors.push(field("label".into(), "invalid_value", e.to_string()));
                None
            }
        },
        Some(_) => {
            errors.push(field("label".into(), "invalid_type", "must be a string"));
            None
        }
    };
    let lines = match obj.get("lines") {
        Some(Value::Array(lines)) if (1..=MAX_LINES).contains(&lines.len()) => Some(lines),
        Some(Value::Array(_)) => {
            errors.push(field("lines".into(), "invalid_value", format!("must hold 1 to {MAX_LINES} lines")));
            None
        }
        Some(_) => {
            errors.push(field("lines".into(), "invalid_type", "must be an array of payments"));
            None
        }
        None => {
            errors.push(field("lines".into(), "required", "is required, as an array of payments"));
            None
        }
    };
    match (run, lines) {
        (Some(run), Some(lines)) if errors.is_empty() => Ok((run, label, lines)),
        _ => Err(BatchError::Validation(errors)),
    }
}

/// A line read as a proposal: included with its canonical request and
/// decision, or held with its reasons.
enum Read {
    Included(Box<Included>),
    Held(Box<store::batches::NewLine>),
}

fn held(line: i64, reasons: Vec<LineReason>, what: Option<&CanonicalRequest>) -> Box<store::batches::NewLine> {
    Box::new(store::batches::NewLine {
        line,
        status: "held",
        payee_id: what.map(|c| c.destination.id.expose().to_owned()),
        legal_name: what.map(|c| c.destination.legal_name.clone()),
        amount_minor: what.map(|c| c.amount_minor),
        currency: what.map(|c| c.currency.code().to_owned()),
        invoice_id: what.and_then(|c| c.invoice_id.as_ref().map(|i| i.as_str().to_owned())),
        canonical_request: what.map(|c| c.to_value().to_string()),
        request_hash: what.map(|c| c.hash().to_string()),
        policy: None,
        held_by: Some("checks".into()),
        held_reasons: Some(serde_json::to_string(&reasons).expect("reasons serialize")),
    })
}

/// Checks one line as a proposal would be checked.
async fn read_line(
    state: &(impl Store + Config),
    agent: &AgentPrincipal,
    run: &RunId,
    line: i64,
    value: &Value,
    now: DateTime<Utc>,
) -> Result<Read, BatchError> {
    let Some(obj) = value.as_object() else {
        return Ok(Read::Held(held(line, vec![reason("validation_failed", "A line must be a JSON object.")], None)));
    };
    if obj.contains_key("run_id") || obj.contains_key("kind") {
        let why = "A line names no run_id or kind of its own: the batch's run, transfers only.";
        return Ok(Read::Held(held(line, vec![reason("validation_failed", why)], None)));
    }
    let mut body = value.clone();
    body["run_id"] = json!(run.as_str());
    match proposals::assess(state, agent, &body, now).await {
        Ok(a) if a.decision.outcome == Outcome::Denied => {
            let reasons = a.decision.reasons.iter().map(|r| reason(&r.rule, r.message.clone())).collect();
            Ok(Read::Held(held(line, reasons, Some(&a.canonical))))
        }
        Ok(a) if a.canonical.kind != ProposalKind::Transfer => {
            Ok(Read::Held(held(line, vec![reason("validation_failed", "A batch pays transfers only.")], None)))
        }
        Ok(a) => Ok(Read::Included(Box::new(Included { line, canonical: a.canonical, decision: a.decision }))),
        Err(ProposeError::Validation(errors)) => {
            let words: Vec<String> = errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect();
            Ok(Read::Held(held(line, vec![reason("validation_failed", words.join("; "))], None)))
        }
        Err(ProposeError::UnknownDestination(masked)) => Ok(Read::Held(held(
            line,
            vec![reason("unknown_destination", format!("{masked} is not in the tenant's payee registry."))],
            None,
        ))),
        Err(other) => Err(other.into()),
    }
}

/// Lines for one invoice: the later ones are held back; and an invoice
/// another proposal stands for (live or paid) holds its line back.
async fn invoice_twins(state: &impl Store, agent: &AgentPrincipal, read: &mut [Read]) -> Result<(), BatchError> {
    let mut first: BTreeMap<(String, String), i64> = BTreeMap::new();
    for r in read.iter_mut() {
        let Read::Included(l) = r else { continue };
        let Some(invoice) = l.canonical.invoice_id.as_ref() else { continue };
        let key = (l.canonical.destination.id.expose().to_owned(), invoice.as_str().to_owned());
        if let Some(earlier) = first.get(&key) {
            let why = format!("Line {earlier} pays the same invoice {} to this payee.", invoice.as_str());
            let canonical = l.canonical.clone();
            *r = Read::Held(held(l.line, vec![reason(crate::intake::duplicates::RULE, why)], Some(&canonical)));
        } else {
            first.insert(key, l.line);
        }
    }
    let asks: Vec<(usize, String, String)> = read
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Read::Included(l) => Some((
                i,
                l.canonical.destination.id.expose().to_owned(),
                l.canonical.invoice_id.as_ref()?.as_str().to_owned(),
            )),
            Read::Held(_) => None,
        })
        .collect();
    if asks.is_empty() {
        return Ok(());
    }
    let invoice_asks: Vec<store::risk::InvoiceAsk<'_>> = asks
        .iter()
        .map(|(_, payee, invoice)| store::risk::InvoiceAsk {
            tenant: &agent.tenant_id,
            payee,
            invoice_id: invoice,
            except: "",
        })
        .collect();
    let found = store::risk::same_invoice(&state.db().read, &invoice_asks, 5).await?;
    for ((i, _, invoice), twins) in asks.iter().zip(found) {
        let standing: Vec<String> = twins
            .iter()
            .filter(|t| crate::intake::duplicates::holds_invoice(t.status))
            .map(|t| format!("{} ({})", t.id, t.status.label().to_lowercase()))
            .collect();
        if standing.is_empty() {
            continue;
        }
        if let Read::Included(l) = &read[*i] {
            let why = format!("Invoice {invoice} to this payee already stands in {}.", standing.join(", "));
            let canonical = l.canonical.clone();
            read[*i] = Read::Held(held(l.line, vec![reason(crate::intake::duplicates::RULE, why)], Some(&canonical)));
        }
    }
    Ok(())
}

/// When every line was held back for its shape alone (none refused by a
/// check): each line's field error, `lines[i]` for the line at index `i`.
fn all_malformed(read: &[Read]) -> Option<Vec<FieldError>> {
    read.iter()
        .map(|r| {
            let Read::Held(h) = r else { return None };
            let why = LineReason::stored(h.held_reasons.as_deref());
            if why.is_empty() || why.iter().any(|w| w.rule != "validation_failed") {
                return None;
            }
            let message = why.iter().map(|w| w.message.as_str()).collect::<Vec<_>>().join("; ");
            Some(field(format!("lines[{}]", h.line - 1), "invalid_value", format!("Line {}: {message}", h.line)))
        })
        .collect()
}

/// Proposes a batch: every line checked, the failing ones held back, the
/// batch stored pending approval (or the same batch of this run returned).
/// Refused when no line passes: 422 when every line is malformed (nothing
/// stored), else 403 (nothing stored but the audit entry).
pub async fn propose(
    state: &(impl Store + Config + Notifier),
    agent: &AgentPrincipal,
    body: &Value,
    now: DateTime<Utc>,
) -> Result<Proposed, BatchError> {
    let (run, label, lines) = parse_envelope(body)?;
    if let Some(left) = &agent.offboarding_of {
        // As for a single proposal: nothing is proposed until an admin
        // reassigns the agent's acts_for.
        let message = format!(
            "Agent {} acts for a person who was deactivated ({left}); it can propose and commit nothing until an \
             admin reassigns its acts_for.",
            agent.agent_id
        );
        return Err(BatchError::Denied(Decision::denied_by("acts_for_deactivated", message)));
    }
    let mut read = Vec::with_capacity(lines.len());
    for (i, value) in lines.iter().enumerate() {
        read.push(read_line(state, agent, &run, i as i64 + 1, value, now).await?);
    }
    invoice_twins(state, agent, &mut read).await?;
    let included: Vec<&Included> = read
        .iter()
        .filter_map(|r| match r {
            Read::Included(l) => Some(l.as_ref()),
            Read::Held(_) => None,
        })
        .collect();
    let body_hash = digest(body);
    if included.is_empty() {
        if let Some(errors) = all_malformed(&read) {
            // Bad input, not an outcome: 422, kept nowhere (as for one proposal).
            return Err(BatchError::Validation(errors));
        }
        let reasons: Vec<Reason> = read
            .iter()
            .filter_map(|r| match r {
                Read::Held(h) => Some(h),
                Read::Included(_) => None,
            })
            .flat_map(|h| {
                LineReason::stored(h.held_reasons.as_deref())
                    .into_iter()
                    .map(move |w| Reason { rule: w.rule, message: format!("Line {}: {}", h.line, w.message) })
            })
            .collect();
        let refused = Decision { outcome: Outcome::Denied, required_approvals: 0, reasons, groups: Vec::new() };
        let mut tx = state.db().begin().await?;
        store::audit::append(
            &mut tx,
            &AuditEntry {
                tenant_id: Some(agent.tenant_id.clone()),
                actor: agent.actor(),
                action: "batch.denied".into(),
                proposal_id: None,
                request_hash: Some(body_hash),
                data: json!({"run_id": run.as_str(), "lines": lines.len(), "policy": refused}),
            },
        )
        .await?;
        tx.commit().await?;
        return Err(BatchError::Denied(refused));
    }
    let owned: Vec<Included> = included.iter().map(|l| (*l).clone()).collect();
    if let Some(refused) = needs_passkey(state, &owned) {
        return Err(BatchError::Denied(refused));
    }
    let policy = decision(state, agent, &owned);
    let hashes: Vec<(i64, String)> = owned.iter().map(|l| (l.line, l.canonical.hash().to_string())).collect();
    let refs: Vec<(i64, &str)> = hashes.iter().map(|(l, h)| (*l, h.as_str())).collect();
    let hash = batch_hash(&agent.tenant_id, &agent.agent_id, run.as_str(), &refs);
    let id = store::new_id("bat", now);
    let rows: Vec<store::batches::NewLine> = read
        .into_iter()
        .map(|r| match r {
            Read::Held(h) => *h,
            Read::Included(l) => {
                let c = &l.canonical;
                store::batches::NewLine {
                    line: l.line,
                    status: "included",
                    payee_id: Some(c.destination.id.expose().to_owned()),
                    legal_name: Some(c.destination.legal_name.clone()),
                    amount_minor: Some(c.amount_minor),
                    currency: Some(c.currency.code().to_owned()),
                    invoice_id: c.invoice_id.as_ref().map(|i| i.as_str().to_owned()),
                    canonical_request: Some(c.to_value().to_string()),
                    request_hash: Some(c.hash().to_string()),
                    policy: Some(serde_json::to_string(&l.decision).expect("a decision serializes")),
                    held_by: None,
                    held_reasons: None,
                }
            }
        })
        .collect();
    // The trail names each held-back line and the rules that held it.
    let held_lines: Vec<Value> = rows
        .iter()
        .filter(|l| l.status == "held")
        .map(|l| {
            let why = LineReason::stored(l.held_reasons.as_deref());
            json!({"line": l.line, "rules": why.iter().map(|w| w.rule.as_str()).collect::<Vec<_>>()})
        })
        .collect();
    let held_count = held_lines.len();
    let totals: Vec<String> = per_currency(&owned).iter().map(|(c, t)| c.format_minor(*t)).collect();
    let ttl = Duration::seconds(state.settings().proposals.ttl_secs as i64);
    let mut tx = state.db().begin().await?;
    let new = store::batches::NewBatch {
        id: &id,
        tenant_id: &agent.tenant_id,
        agent_id: &agent.agent_id,
        run_id: run.as_str(),
        label: label.as_ref().map(|l| l.as_str()),
        body_hash: &body_hash,
        batch_hash: &hash,
        policy: &policy,
        now,
        expires_at: now + ttl,
    };
    if let Err(existing) = store::batches::insert(&mut tx, &new, &rows).await? {
        drop(tx);
        return Ok(Proposed::Existing(view(state, &agent.tenant_id, &existing, Some(&agent.agent_id)).await?));
    }
    store::audit::append(
        &mut tx,
        &AuditEntry {
            tenant_id: Some(agent.tenant_id.clone()),
            actor: agent.actor(),
            action: "batch.created".into(),
            proposal_id: None,
            request_hash: Some(hash.clone()),
            data: json!({"batch_id": id, "run_id": run.as_str(), "lines": rows.len(), "included": owned.len(),
                         "held": held_count, "held_lines": held_lines, "totals": totals, "policy": policy}),
        },
    )
    .await?;
    tx.commit().await?;
    state.changes().publish(&id);
    Ok(Proposed::Created(view(state, &agent.tenant_id, &id, Some(&agent.agent_id)).await?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_envelope_names_every_bad_field() {
        let bad = |v: Value| match parse_envelope(&v) {
            Err(BatchError::Validation(e)) => e.into_iter().map(|e| e.field).collect::<Vec<_>>(),
            _ => panic!("accepted: {v}"),
        };
        assert_eq!(bad(json!({"lines": []})), ["run_id", "lines"]);
        assert_eq!(bad(json!({"run_id": "r", "lines": [{}], "tenant": "x"})), ["tenant"]);
        assert_eq!(bad(json!({"run_id": "r".repeat(121), "lines": [{}]})), ["run_id"]);
        assert_eq!(bad(json!({"run_id": "r", "lines": vec![json!({}); 501]})), ["lines"]);
        assert_eq!(bad(json!({"run_id": "r", "label": 5, "lines": [{}]})), ["label"]);
        assert!(parse_envelope(&json!({"run_id": "r", "label": "March payroll", "lines": [{}]})).is_ok());
    }
}
