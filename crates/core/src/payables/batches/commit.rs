//! Paying an approved batch: one token for the batch, one operation per
//! line.
//!
//! 1. The token is verified as a proposal's is (ES256 under a known `kid`,
//!    `typ`, `iss`, `aud`, `nbf`/`exp`, `tid`, `azp`), with `pid` the batch
//!    id and `rh` the batch hash — the stored one, and the one recomputed
//!    from the stored lines; its `jti` is the batch's current token.
//! 2. Every approver is still an active approver of the tenant, neither
//!    the person the agent acts for nor its key holder, with a limit that
//!    covers the batch's total in each currency.
//! 3. One compare-and-set marks the token used and the batch `committed`.
//! 4. Each included line, in order, in a transaction of its own: the kill
//!    switch, its proposal (`executing`, approved by the batch's
//!    approvers), its operation (idempotency key from the line's proposal
//!    id and request hash), the daily budget, the invoice's hold and a
//!    registered invoice's open balance. A line whose checks fail there is
//!    held back (`held_by: commit`), the others go on.
//! 5. Only then the rail, per line (a few at once), and each outcome is
//!    recorded as any payment's; reconciliation settles the lost ones.
//!
//! A retried commit (the batch `committed` already) records the lines not
//! recorded yet and calls the rail for those only: a line recorded before
//! is never sent again by the commit.

use chrono::{DateTime, Utc};
use futures::StreamExt;
use serde_json::json;

use super::*;
use crate::commit::operations;
use crate::decision::approval::keys::Keys;
use crate::decision::approval::token::{ApprovalClaims, Expected};
use crate::domain::{ProposalStatus, Role};
use crate::platform::hooks::Hooks;
use crate::rail::{InFlight, Payments};
use crate::store::operations::{NewOperation, OperationRow};
use crate::store::proposals::{ApprovalRow, ProposalRow, TokenRow};

/// How many lines' rail calls run at once.
const CALLS_AT_ONCE: usize = 8;

fn denied(rule: &str, message: String) -> BatchError {
    BatchError::Denied(Decision::denied_by(rule, message))
}

/// Commits an approved batch for its agent; see the module doc.
pub async fn commit(
    state: &(impl Store
          + crate::platform::clock::Clock
          + Config
          + Keys
          + Notifier
          + Payments
          + Hooks
          + crate::decision::approval::receipts::Receipts),
    agent: &AgentPrincipal,
    id: &str,
    token: &str,
) -> Result<BatchView, BatchError> {
    let _foreground = state.db().priority.foreground();
    let now = state.now();
    let expected = Expected {
        issuer: &state.settings().public_url,
        proposal_id: id,
        tenant_id: &agent.tenant_id,
        agent_id: &agent.agent_id,
        now,
    };
    let claims = state.keys().verify(token, &expected).map_err(|r| BatchError::Token(r.reason()))?;
    let read = &state.db().read;
    let batch = store::batches::get(read, &agent.tenant_id, id).await?;
    let batch = batch.filter(|b| b.agent_id == agent.agent_id).ok_or(BatchError::NotFound)?;
    let lines = store::batches::lines(read, &batch.id).await?;
    if claims.rh != batch.batch_hash {
        return Err(BatchError::Token("request_hash_mismatch"));
    }
    if hash_of(&batch, &lines) != batch.batch_hash {
        tracing::error!(batch_id = %batch.id, "stored batch lines do not hash to the stored batch hash");
        return Err(BatchError::Token("request_hash_mismatch"));
    }
    // Each line still to pay is what was approved: its stored canonical
    // request hashes to its stored request hash (which the batch hash binds).
    let tampered = unpaid(&lines)
        .into_iter()
        .find(|l| Included::of(l).is_none_or(|i| Some(i.canonical.hash().to_string()) != l.request_hash));
    if let Some(line) = tampered {
        tracing::error!(batch_id = %batch.id, line = line.line, "a stored batch line does not hash to its request hash");
        return Err(BatchError::Token("request_hash_mismatch"));
    }
    if batch.token_jti.as_deref() != Some(claims.jti.as_str()) {
        return Err(BatchError::Token("superseded"));
    }
    match batch.status.as_str() {
        "approved" => {
            recheck(state, agent, &batch, &lines, &claims).await?;
            let mut tx = state.db().begin().await?;
            if !store::batches::use_token(&mut tx, &batch.id, &claims.jti, now).await? {
                drop(tx);
                // Another commit of this batch with this token got there
                // first: this one goes on as its retry (each line is
                // recorded once, whoever records it).
                let now_stored = store::batches::get(read, &agent.tenant_id, id).await?;
                if !now_stored.is_some_and(|b| b.status == "committed" && b.token_jti.as_deref() == Some(&claims.jti)) {
                    return Err(BatchError::Token("already_used"));
                }
                return Box::pin(pay_lines(state, agent, &batch, &lines, (&claims, token))).await;
            }
            let data = json!({"batch_id": batch.id, "jti": claims.jti, "lines": unpaid(&lines).len()});
            store::audit::append(
                &mut tx,
                &AuditEntry {
                    tenant_id: Some(batch.tenant_id.clone()),
                    actor: agent.actor(),
                    action: "batch.committed".into(),
                    proposal_id: None,
                    request_hash: Some(batch.batch_hash.clone()),
                    data,
                },
            )
            .await?;
            tx.commit().await?;
        }
        // A retry: the lines not recorded yet are recorded now.
        "committed" => {}
        other => return Err(BatchError::InvalidState(status_word(other))),
    }
    pay_lines(state, agent, &batch, &lines, (&claims, token)).await
}

/// Steps 4 and 5 for the lines not recorded yet; the batch as it stands then.
async fn pay_lines(
    state: &(impl Store
          + crate::platform::clock::Clock
          + Config
          + Keys
          + Notifier
          + Payments
          + Hooks
          + crate::decision::approval::receipts::Receipts),
    agent: &AgentPrincipal,
    batch: &BatchRow,
    lines: &[LineRow],
    (claims, token): (&ApprovalClaims, &str),
) -> Result<BatchView, BatchError> {
    let read = &state.db().read;
    let id = batch.id.as_str();
    let approvals: Vec<store::batches::BatchApprovalRow> = store::batches::approvals(read, &batch.id)
        .await?
        .into_iter()
        .filter(|a| a.round == batch.round && a.decision == "approve" && a.batch_hash == batch.batch_hash)
        .collect();
    let kid = kid_of(token);
    let mut recorded = Vec::new();
    for line in unpaid(lines) {
        let Some(included) = Included::of(line) else { continue };
        match record_line(state, agent, batch, (line, &included), (claims, token, &kid), &approvals, state.now())
            .await?
        {
            Ok(done) => {
                state.changes().publish(&done.1.id);
                recorded.push(done);
            }
            Err(reasons) => hold_at_commit(state, batch, line.line, reasons, state.now()).await?,
        }
    }
    state.changes().publish(&batch.id);
    futures::stream::iter(recorded)
        .for_each_concurrent(CALLS_AT_ONCE, |(op, row)| async move {
            let Some(_in_flight) = InFlight::claim(state, &op.id) else { return };
            let outcome = operations::call_rail(state, &op, &row).await;
            if let Err(e) = operations::record(state, &op, outcome, state.now()).await {
                // The operation stays open: reconciliation settles it.
                tracing::warn!(operation_id = %op.id, error = %e, "a batch line's rail outcome was not recorded");
            }
        })
        .await;
    view(state, &agent.tenant_id, id, Some(&agent.agent_id)).await
}

/// The signing key's id from a compact JWS's header.
fn kid_of(token: &str) -> String {
    use base64::Engine;
    token
        .split('.')
        .next()
        .and_then(|h| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(h).ok())
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|header| header["kid"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Step 2: every approver as they stand now.
async fn recheck(
    state: &(impl Store + Config),
    agent: &AgentPrincipal,
    batch: &BatchRow,
    lines: &[LineRow],
    claims: &ApprovalClaims,
) -> Result<(), BatchError> {
    let included: Vec<Included> = lines.iter().filter(|l| l.status == "included").filter_map(Included::of).collect();
    if needs_passkey(state, &included).is_some() {
        return Err(BatchError::Token("passkey_required"));
    }
    let totals = per_currency(&included);
    let mut conn = state.db().reader().await?;
    for approver in &claims.approvers {
        let user = store::directory::user_by_id(&mut conn, approver).await?;
        let Some(user) =
            user.filter(|u| u.tenant_id == batch.tenant_id && u.active && u.roles.contains(&Role::Approver))
        else {
            return Err(denied("approver_active", format!("Approver {approver} is no longer an active approver.")));
        };
        if user.id == agent.acts_for || agent.key_holder.as_deref() == Some(user.id.as_str()) {
            return Err(denied(
                "segregation_of_duties",
                format!("{} may not approve agent {}'s payments.", user.username, agent.agent_id),
            ));
        }
        for (currency, total) in &totals {
            let limit = user.approval_limits_minor.get(currency.code()).copied().unwrap_or(0);
            if *total > limit {
                return Err(denied(
                    "approver_limit",
                    format!(
                        "The batch's {} is above {}'s approval limit of {}.",
                        currency.format_minor(*total),
                        user.username,
                        currency.format_minor(limit)
                    ),
                ));
            }
        }
    }
    if claims.approvers.len() < usize::from(batch.required_approvals.max(1)) {
        return Err(denied("dual_approval", "The token carries fewer approvals than the batch needs.".into()));
    }
    Ok(())
}

/// Holds a line back at commit, with why, in a transaction of its own.
async fn hold_at_commit(
    state: &impl Store,
    batch: &BatchRow,
    line: i64,
    reasons: Vec<LineReason>,
    now: DateTime<Utc>,
) -> Result<(), BatchError> {
    let text = serde_json::to_string(&reasons).expect("reasons serialize");
    let mut tx = state.db().begin().await?;
    if store::batches::hold_line(&mut tx, &batch.id, line, "commit", &text).await? {
        store::audit::append(
            &mut tx,
            &AuditEntry {
                tenant_id: Some(batch.tenant_id.clone()),
                actor: "system:commit".into(),
                action: "batch.line_held".into(),
                proposal_id: None,
                request_hash: Some(batch.batch_hash.clone()),
                data: json!({"batch_id": batch.id, "line": line, "reasons": reasons, "at": store::ts(now)}),
            },
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// What a refusal inside a line's transaction says.
fn because(rule: &str, message: impl Into<String>) -> Vec<LineReason> {
    vec![super::reason(rule, message)]
}

/// Step 4 for one line: its proposal and operation, recorded in one
/// transaction with every check; the operation and proposal to call the
/// rail with, or why the line is held back (nothing of it was written).
async fn record_line(
    state: &(impl Store + Config + crate::decision::approval::receipts::Receipts),
    agent: &AgentPrincipal,
    batch: &BatchRow,
    (line, included): (&LineRow, &Included),
    (claims, token, kid): (&ApprovalClaims, &str, &str),
    approvals: &[store::batches::BatchApprovalRow],
    now: DateTime<Utc>,
) -> Result<Result<(OperationRow, ProposalRow), Vec<LineReason>>, BatchError> {
    let c = &included.canonical;
    // Policy as it stands now (the agent's scope, its payee's trust).
    let trusted = store::directory::payee(&state.db().read, &batch.tenant_id, c.destination.id.expose())
        .await?
        .is_some_and(|p| p.trusted);
    let now_decision = proposals::evaluate(state, agent, c, trusted);
    if now_decision.outcome == Outcome::Denied {
        let words: Vec<String> = now_decision.reasons.iter().map(|r| r.message.clone()).collect();
        return Ok(Err(because("policy_denied", words.join(" "))));
    }
    // What is read of the registries is read before the transaction: a
    // transaction never waits for another connection of the pool (another
    // commit of the batch, recording this line, may hold the rest).
    // An account that a verified change of bank account replaced since the
    // approval is no longer paid.
    let payee_id = c.destination.id.expose();
    let entry = store::directory::payee_entry(&state.db().read, &batch.tenant_id, payee_id).await?;
    if let Some(refused) = entry.as_ref().and_then(crate::payables::account_change::replaced) {
        return Ok(Err(refused.reasons.into_iter().map(|r| super::reason(&r.rule, r.message)).collect()));
    }
    // The invoice as it stands now; a registered one's open balance is
    // reserved in the transaction.
    let registered = match crate::payables::invoices::at_commit_of(state, &batch.tenant_id, payee_id, c).await? {
        Ok(registered) => registered,
        Err(refused) => {
            return Ok(Err(refused.reasons.into_iter().map(|r| super::reason(&r.rule, r.message)).collect()))
        }
    };
    let id = store::new_id("prop", now);
    let run_id = format!("{}:{}", batch.run_id, line.line);
    let hash = c.hash().to_string();
    let names: Vec<&str> = approvals.iter().map(|a| a.approver_id.as_str()).collect();
    let mut policy = included.decision.clone();
    policy.reasons.push(Reason {
        rule: "batch".into(),
        message: format!("Approved as line {} of batch {}.", line.line, batch.id),
    });
    let canonical_json = c.to_value().to_string();
    let policy_json = serde_json::to_string(&policy).expect("a decision serializes");
    let new = store::proposals::NewProposal {
        id: &id,
        tenant_id: &batch.tenant_id,
        agent_id: &batch.agent_id,
        run_id: &run_id,
        kind: ProposalKind::Transfer.as_str(),
        status: ProposalStatus::Executing,
        amount_minor: c.amount_minor,
        currency: c.currency.code(),
        payee_id: c.destination.id.expose(),
        invoice_id: c.invoice_id.as_ref().map(|i| i.as_str()),
        canonical_request: &canonical_json,
        request_hash: &hash,
        policy: &policy_json,
        required_approvals: policy.required_approvals,
        now,
        expires_at: now,
    };
    let mut tx = state.db().begin().await?;
    if let Some(freeze) = store::freezes::blocking(&mut tx, &batch.tenant_id, &batch.agent_id).await? {
        return Err(denied("kill_switch", crate::intake::freeze::refusal(&freeze)));
    }
    let Some(row) = store::proposals::insert(&mut tx, &new).await? else {
        return Ok(Err(because("duplicate", "This line's payment is already recorded in its run.")));
    };
    let mut given = Vec::with_capacity(approvals.len());
    for a in approvals {
        let approval = ApprovalRow {
            proposal_id: id.clone(),
            round: 1,
            approver_id: a.approver_id.clone(),
            decision: "approve".into(),
            reason: None,
            via: "batch".into(),
            amr: a.amr.clone(),
            at: a.at,
            on_behalf_of: None,
            delegation_id: None,
        };
        store::proposals::insert_approval(&mut tx, &approval).await?;
        given.push(approval);
    }
    let jti = format!("{}.{}", claims.jti, line.line);
    let at = |secs: i64| DateTime::from_timestamp(secs, 0).unwrap_or(now);
    store::proposals::insert_token(
        &mut tx,
        &TokenRow {
            jti: jti.clone(),
            proposal_id: id.clone(),
            round: 1,
            token: token.to_owned(),
            kid: kid.to_owned(),
            issued_at: at(claims.iat),
            expires_at: at(claims.exp),
            used_at: None,
        },
    )
    .await?;
    store::operations::use_token(&mut tx, &jti, &id, now).await?;
    let day = crate::commit::budget_day(now);
    if !store::operations::reserve(&mut tx, &batch.tenant_id, c.currency.code(), &day, c.amount_minor).await? {
        return Ok(Err(because("daily_budget", "Today's budget (UTC) would be exceeded by this line.")));
    }
    if let Some(invoice) = registered {
        let key = store::invoices::InvoiceKey {
            tenant_id: &batch.tenant_id,
            payee_id: invoice.payee_id,
            number: invoice.invoice_id,
        };
        if !store::invoices::reserve(&mut tx, key, c.currency.code(), c.amount_minor).await? {
            let refused = crate::payables::invoices::reservation_refused(&mut tx, &row, invoice).await?;
            return Ok(Err(refused.reasons.into_iter().map(|r| super::reason(&r.rule, r.message)).collect()));
        }
    }
    let key = crate::commit::idempotency_key(&id, &hash);
    let op_id = store::new_id("op", now);
    let op = NewOperation {
        id: &op_id,
        proposal_id: &id,
        jti: &jti,
        idempotency_key: &key,
        tenant_id: &batch.tenant_id,
        kind: ProposalKind::Transfer.as_str(),
        amount_minor: c.amount_minor,
        currency: c.currency.code(),
        budget_day: Some(&day),
        reverses: None,
        now,
        claimed_until: now + operations::rail_call_lease(state.settings()),
        invoice: crate::intake::duplicates::held(&row, &given),
        rail: state.settings().tenants.get(&batch.tenant_id).and_then(|t| t.rail.as_deref()),
        reserves: registered,
    };
    let Some(recorded) = store::operations::insert(&mut tx, &op).await? else {
        let holder = match op.invoice {
            Some(invoice) => store::operations::invoice_holder(&mut *tx, &batch.tenant_id, invoice).await?,
            None => None,
        };
        return Ok(Err(because(
            crate::intake::duplicates::RULE,
            crate::intake::duplicates::held_elsewhere(&row, holder.as_deref()),
        )));
    };
    if !store::batches::commit_line(&mut tx, &batch.id, line.line, &id).await? {
        // Recorded meanwhile by another commit of the batch: nothing of this
        // transaction is kept.
        return Ok(Err(because("duplicate", "This line's payment was recorded by another commit of the batch.")));
    }
    store::audit::append(
        &mut tx,
        &AuditEntry {
            tenant_id: Some(batch.tenant_id.clone()),
            actor: agent.actor(),
            action: "proposal.created".into(),
            proposal_id: Some(id.clone()),
            request_hash: Some(hash.clone()),
            data: json!({"batch_id": batch.id, "line": line.line, "run_id": run_id, "approvers": names,
                         "amount_minor": c.amount_minor, "currency": c.currency,
                         "destination": c.destination.id.masked(), "policy": policy}),
        },
    )
    .await?;
    let committed = crate::evidence::Committed::of(&mut tx, &id, c).await?.commitments();
    crate::decision::approval::receipts::append(
        state,
        &mut tx,
        &crate::commit::authorization(&row, &op, &committed),
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(Ok((recorded, row)))
}
