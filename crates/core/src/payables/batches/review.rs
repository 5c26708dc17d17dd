//! People's decisions on a batch: approve it as one (naming the batch hash
//! they saw), reject it with a reason, hold a line back; and the agent's
//! cancel, the expiry sweep.
//!
//! Who may approve is the single-proposal rule (`approval::approve::may_approve`)
//! asked of the batch as a whole: the approver role, never the person the
//! agent acts for or who holds its key, a limit in each currency that covers
//! the batch's total in it, one approval per person and round; and named
//! groups, each person counting once.

use chrono::{DateTime, Utc};
use serde_json::json;

use super::*;
use crate::decision::approval::approve::{
    may_approve, record_decision, Approvable, Approver, Candidate, Duties, Ineligible, Verdict,
};
use crate::decision::approval::keys::Keys;
use crate::decision::approval::token::MintRequest;
use crate::domain::{ProposalStatus, Role};

const WAITING: [&str; 2] = ["pending_approval", "approval_expired"];

fn denied(rule: &str, message: String) -> BatchError {
    BatchError::Denied(Decision::denied_by(rule, message))
}

fn check_reason(reason: &str, field: &'static str) -> Result<String, BatchError> {
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(BatchError::BadReason { field, why: "a reason is required" });
    }
    if reason.chars().count() > 500 || reason.chars().any(char::is_control) {
        return Err(BatchError::BadReason {
            field,
            why: "the reason must be at most 500 characters, without control characters",
        });
    }
    Ok(reason.to_owned())
}

fn from_ineligible(why: Ineligible) -> BatchError {
    let message = why.message();
    match why {
        Ineligible::NotAnApprover => BatchError::NotAnApprover,
        Ineligible::NotWaiting(_) => BatchError::InvalidState("approved"),
        Ineligible::ActsFor { .. } | Ineligible::KeyHolder { .. } => denied("segregation_of_duties", message),
        Ineligible::NoLimit { .. } | Ineligible::OverLimit { .. } => denied("approver_limit", message),
        Ineligible::AlreadyApproved => denied("distinct_approvers", message),
        Ineligible::NotInGroup { .. } => denied(crate::decision::policy::RULE_GROUPS, message),
    }
}

/// Whether `who` may approve the batch now: `may_approve` for its total in
/// each currency.
pub(crate) fn eligible(
    who: &Candidate<'_>,
    batch: &BatchRow,
    lines: &[LineRow],
    duties: Duties<'_>,
    approved_by: &[&str],
) -> Result<(), Ineligible> {
    let status = if WAITING.contains(&batch.status.as_str()) {
        ProposalStatus::PendingApproval
    } else {
        ProposalStatus::Approved
    };
    let included: Vec<Included> = lines.iter().filter(|l| l.status == "included").filter_map(Included::of).collect();
    for (currency, total) in per_currency(&included) {
        let approvable = Approvable {
            status,
            agent_id: &batch.agent_id,
            currency,
            amount_minor: total,
            groups: &[],
            required: batch.required_approvals,
        };
        may_approve(who, &approvable, duties, approved_by)?;
    }
    Ok(())
}

/// The people who approved the batch in its current round, on its current hash.
fn approvers_now<'a>(batch: &BatchRow, approvals: &'a [store::batches::BatchApprovalRow]) -> Vec<&'a str> {
    approvals
        .iter()
        .filter(|a| a.round == batch.round && a.decision == "approve" && a.batch_hash == batch.batch_hash)
        .map(|a| a.approver_id.as_str())
        .collect()
}

fn entry(batch: &BatchRow, actor: String, action: &str, data: serde_json::Value) -> AuditEntry {
    AuditEntry {
        tenant_id: Some(batch.tenant_id.clone()),
        actor,
        action: action.into(),
        proposal_id: None,
        request_hash: Some(batch.batch_hash.clone()),
        data,
    }
}

/// A person's decision on a batch: approve it (naming `seen`, the batch
/// hash they reviewed) or reject it with a reason. Counted in the decision
/// metrics as one decision, as the human loop counts it.
pub async fn decide(
    state: &(impl Store + Config + Keys + Notifier),
    approver: &Approver,
    id: &str,
    verdict: Verdict,
    seen: Option<&str>,
    now: DateTime<Utc>,
) -> Result<BatchView, BatchError> {
    let verdict_name = verdict.name();
    let result =
        crate::platform::metrics::use_case("decide_batch", decide_inner(state, approver, id, verdict, seen, now)).await;
    if let Ok((created, _)) = &result {
        record_decision(approver, verdict_name, Some(*created), now);
    }
    result.map(|(_, view)| view)
}

/// [`decide`]: the batch's creation time (for the metrics) and its view.
async fn decide_inner(
    state: &(impl Store + Config + Keys + Notifier),
    approver: &Approver,
    id: &str,
    verdict: Verdict,
    seen: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(DateTime<Utc>, BatchView), BatchError> {
    let read = &state.db().read;
    let batch = store::batches::get(read, &approver.tenant_id, id).await?.ok_or(BatchError::NotFound)?;
    if !approver.roles.contains(&Role::Approver) {
        return Err(BatchError::NotAnApprover);
    }
    if !WAITING.contains(&batch.status.as_str()) {
        return Err(BatchError::InvalidState(status_word(&batch.status)));
    }
    if let Verdict::Reject { reason } = &verdict {
        let reason = check_reason(reason, "reason")?;
        let mut tx = state.db().begin().await?;
        if !store::batches::transition(&mut tx, &batch.id, &WAITING, "rejected", now).await? {
            return Err(BatchError::InvalidState("rejected"));
        }
        store::batches::insert_approval(
            &mut tx,
            &store::batches::BatchApprovalRow {
                batch_id: batch.id.clone(),
                round: batch.round,
                approver_id: approver.user_id.clone(),
                decision: "reject".into(),
                reason: Some(reason.clone()),
                batch_hash: batch.batch_hash.clone(),
                via: approver.via.into(),
                amr: approver.amr.into(),
                at: now,
            },
        )
        .await?;
        let data = json!({"batch_id": batch.id, "via": approver.via, "reason": reason});
        store::audit::append(&mut tx, &entry(&batch, format!("user:{}", approver.user_id), "batch.rejected", data))
            .await?;
        tx.commit().await?;
        state.changes().publish(&batch.id);
        return Ok((batch.created_at, view(state, &approver.tenant_id, id, None).await?));
    }
    let Some(seen) = seen.filter(|s| *s == batch.batch_hash) else {
        return Err(BatchError::Changed { status: status_word(&batch.status), hash: batch.batch_hash });
    };
    let (lines, approvals) =
        tokio::try_join!(store::batches::lines(read, &batch.id), store::batches::approvals(read, &batch.id))?;
    let agent = {
        let mut conn = state.db().reader().await?;
        store::directory::agent(&mut conn, &batch.tenant_id, &batch.agent_id).await?.ok_or(BatchError::NotFound)?
    };
    let given = approvers_now(&batch, &approvals);
    eligible(&approver.candidate(), &batch, &lines, Duties::from(&agent), &given).map_err(from_ineligible)?;
    if !batch.policy.groups.is_empty() {
        let mut conn = state.db().reader().await?;
        let members =
            crate::decision::approval_groups::Members::load_in(&mut conn, state.settings(), &batch.tenant_id).await?;
        members
            .helps(&batch.policy.groups, batch.required_approvals, &given, &approver.user_id)
            .map_err(|groups| from_ineligible(Ineligible::NotInGroup { groups }))?;
    }

    let mut tx = state.db().begin().await?;
    let current =
        store::batches::get_locked(&mut tx, &batch.tenant_id, &batch.id).await?.ok_or(BatchError::NotFound)?;
    if !WAITING.contains(&current.status.as_str()) {
        return Err(BatchError::InvalidState(status_word(&current.status)));
    }
    if current.batch_hash != seen || current.round != batch.round {
        return Err(BatchError::Changed { status: status_word(&current.status), hash: current.batch_hash });
    }
    let given = store::batches::BatchApprovalRow {
        batch_id: batch.id.clone(),
        round: current.round,
        approver_id: approver.user_id.clone(),
        decision: "approve".into(),
        reason: None,
        batch_hash: current.batch_hash.clone(),
        via: approver.via.into(),
        amr: approver.amr.into(),
        at: now,
    };
    if let Err(e) = store::batches::insert_approval(&mut tx, &given).await {
        return Err(if e.is_conflict() { from_ineligible(Ineligible::AlreadyApproved) } else { e.into() });
    }
    let all = store::batches::approvals(&mut *tx, &batch.id).await?;
    let now_approved: Vec<store::batches::BatchApprovalRow> = all
        .into_iter()
        .filter(|a| a.round == current.round && a.decision == "approve" && a.batch_hash == current.batch_hash)
        .collect();
    let data = json!({"batch_id": batch.id, "via": approver.via, "amr": approver.amr, "round": current.round});
    store::audit::append(&mut tx, &entry(&current, format!("user:{}", approver.user_id), "batch.approval_given", data))
        .await?;
    let people: Vec<&str> = now_approved.iter().map(|a| a.approver_id.as_str()).collect();
    let groups_met = current.policy.groups.is_empty() || {
        let members =
            crate::decision::approval_groups::Members::load_in(&mut tx, state.settings(), &current.tenant_id).await?;
        members.unmet(&current.policy.groups, &people).is_empty()
    };
    if people.len() >= usize::from(current.required_approvals.max(1)) && groups_met {
        grant(state, &mut tx, &current, &now_approved, now).await?;
    } else {
        store::batches::transition(&mut tx, &batch.id, &WAITING, &current.status, now).await?;
    }
    tx.commit().await?;
    state.changes().publish(&batch.id);
    Ok((batch.created_at, view(state, &approver.tenant_id, id, None).await?))
}

/// The last approval was given: the batch is approved and its one token
/// minted, bound to the batch id (`pid`) and the batch hash (`rh`).
async fn grant(
    state: &(impl Config + Keys),
    tx: &mut store::Conn,
    batch: &BatchRow,
    approvals: &[store::batches::BatchApprovalRow],
    now: DateTime<Utc>,
) -> Result<(), BatchError> {
    let approvers: Vec<String> = approvals.iter().map(|a| a.approver_id.clone()).collect();
    let mut amr: Vec<String> = approvals.iter().map(|a| a.amr.clone()).collect();
    amr.dedup();
    let sub = approvers.last().cloned().unwrap_or_default();
    let (token, claims) = state
        .keys()
        .mint(&MintRequest {
            issuer: &state.settings().public_url,
            sub: &sub,
            approvers: &approvers,
            tenant_id: &batch.tenant_id,
            proposal_id: &batch.id,
            request_hash: &batch.batch_hash,
            agent_id: &batch.agent_id,
            amr: &amr,
            delegations: &[],
            now,
            ttl_secs: state.settings().approval.token_ttl_secs,
        })
        .map_err(|e| BatchError::Minting(e.to_string()))?;
    let expires = DateTime::from_timestamp(claims.exp, 0).unwrap_or(now);
    if !store::batches::approve(tx, &batch.id, (&token, &claims.jti, expires), now).await? {
        return Err(BatchError::InvalidState("approved"));
    }
    let data = json!({"batch_id": batch.id, "approvers": approvers, "amr": amr, "jti": claims.jti,
                      "kid": state.keys().active_kid(), "token_expires_at": store::ts(expires)});
    store::audit::append(tx, &entry(batch, format!("user:{sub}"), "batch.approved", data)).await?;
    Ok(())
}

/// A reviewer holds a line back, with a reason: the batch changes (a new
/// hash, a new decision, a new round of approvals). Holding back its last
/// line rejects the batch.
pub async fn hold(
    state: &(impl Store + Config + Notifier),
    approver: &Approver,
    id: &str,
    line: i64,
    why: &str,
    now: DateTime<Utc>,
) -> Result<BatchView, BatchError> {
    if !approver.roles.contains(&Role::Approver) {
        return Err(BatchError::NotAnApprover);
    }
    let why = check_reason(why, "reason")?;
    let mut tx = state.db().begin().await?;
    let batch = store::batches::get_locked(&mut tx, &approver.tenant_id, id).await?.ok_or(BatchError::NotFound)?;
    if !WAITING.contains(&batch.status.as_str()) {
        return Err(BatchError::InvalidState(status_word(&batch.status)));
    }
    let reasons = serde_json::to_string(&[super::reason("held_by_reviewer", why.clone())]).expect("serializes");
    if !store::batches::hold_line(&mut tx, &batch.id, line, &format!("user:{}", approver.user_id), &reasons).await? {
        let lines = store::batches::lines(&mut *tx, &batch.id).await?;
        return Err(match lines.iter().find(|l| l.line == line) {
            Some(l) => BatchError::InvalidState(status_word(&l.status)),
            None => BatchError::NotFound,
        });
    }
    let lines = store::batches::lines(&mut *tx, &batch.id).await?;
    let included: Vec<Included> = lines.iter().filter(|l| l.status == "included").filter_map(Included::of).collect();
    let actor = format!("user:{}", approver.user_id);
    if included.is_empty() {
        store::batches::transition(&mut tx, &batch.id, &WAITING, "rejected", now).await?;
        let data = json!({"batch_id": batch.id, "line": line, "reason": why, "rejected": "every line is held back"});
        store::audit::append(&mut tx, &entry(&batch, actor, "batch.line_held", data)).await?;
    } else {
        let agent =
            store::directory::agent(&mut tx, &batch.tenant_id, &batch.agent_id).await?.ok_or(BatchError::NotFound)?;
        let policy = decision(state, &AgentPrincipal::from(agent), &included);
        let hash = hash_of(&batch, &lines);
        store::batches::revise(&mut tx, &batch.id, &hash, &policy, now).await?;
        let data = json!({"batch_id": batch.id, "line": line, "reason": why, "batch_hash": hash,
                          "required_approvals": policy.required_approvals});
        store::audit::append(&mut tx, &entry(&batch, actor, "batch.line_held", data)).await?;
    }
    tx.commit().await?;
    state.changes().publish(&batch.id);
    view(state, &approver.tenant_id, id, None).await
}

/// The agent withdraws its batch while it waits or is approved.
pub async fn cancel(
    state: &(impl Store + Config + Notifier),
    agent: &AgentPrincipal,
    id: &str,
    now: DateTime<Utc>,
) -> Result<BatchView, BatchError> {
    let batch = store::batches::get(&state.db().read, &agent.tenant_id, id).await?;
    let batch = batch.filter(|b| b.agent_id == agent.agent_id).ok_or(BatchError::NotFound)?;
    let mut tx = state.db().begin().await?;
    let from = ["pending_approval", "approval_expired", "approved"];
    if !store::batches::transition(&mut tx, &batch.id, &from, "cancelled", now).await? {
        let latest = store::batches::get(&mut *tx, &agent.tenant_id, id).await?.ok_or(BatchError::NotFound)?;
        return Err(BatchError::InvalidState(status_word(&latest.status)));
    }
    let data = json!({"batch_id": batch.id, "from": batch.status});
    store::audit::append(&mut tx, &entry(&batch, agent.actor(), "batch.cancelled", data)).await?;
    tx.commit().await?;
    state.changes().publish(&batch.id);
    view(state, &agent.tenant_id, id, Some(&agent.agent_id)).await
}

/// The sweep: batches nobody decided in time expire; an approved batch
/// whose token lapsed unused needs approving again (a new round). Returns
/// how many moved.
pub async fn expire_due(state: &(impl Store + Notifier), now: DateTime<Utc>) -> store::Result<usize> {
    let mut tx = state.db().begin().await?;
    let due = store::batches::due_for_expiry(&mut tx, now).await?;
    let mut moved = Vec::new();
    for (id, tenant, status) in due {
        let (action, done) = if status == "approved" {
            ("batch.approval_expired", store::batches::lapse(&mut tx, &id, now).await?)
        } else {
            ("batch.expired", store::batches::transition(&mut tx, &id, &WAITING, "expired", now).await?)
        };
        if done {
            store::audit::append(
                &mut tx,
                &AuditEntry {
                    tenant_id: Some(tenant),
                    actor: "system:expiry".into(),
                    action: action.into(),
                    proposal_id: None,
                    request_hash: None,
                    data: json!({"batch_id": id, "from": status}),
                },
            )
            .await?;
            moved.push(id);
        }
    }
    tx.commit().await?;
    for id in &moved {
        state.changes().publish(id);
    }
    Ok(moved.len())
}
