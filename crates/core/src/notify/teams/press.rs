//! A verified Teams button press (`Action.Execute` on a proposal's Adaptive
//! Card) becomes a decision: the Teams user (Entra ID object id) is mapped
//! to a console user, the card's request hash, amount and currency must
//! still be the proposal's, an approval must be within
//! `teams.max_direct_approve_minor` and below `policy.step_up_at_minor` (a
//! passkey step-up happens in the console, which the card links to), then
//! the same `approval::approve::decide` as the console runs, with `amr: teams` and
//! `via: teams`. The presser's card is answered in place; after a decision
//! the card is also replaced for everyone in the conversation (queued in
//! the outbox).

use serde_json::Value;

use crate::config::Config;
use crate::decision::approval::keys::Keys;
use crate::decision::approval::{
    self,
    approve::{Approver, DecideError, Verdict},
};
use crate::domain::ProposalStatus;
use crate::notify::slack::message::Card;
use crate::notify::teams::activity::{Activity, CardAction, Verb};
use crate::notify::teams::{self, card, Method, TeamsOutbound};
use crate::platform::changes::Notifier;
use crate::platform::clock::Clock;
use crate::store::{self, Store};

/// What a press came to (for the log and the tests' sake).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A decision was recorded; the proposal is now in this status.
    Decided(ProposalStatus),
    /// Nothing changed, for this reason (machine-readable).
    Refused(&'static str),
    /// The card as it stands was shown (a refresh).
    Shown,
}

/// The press's outcome and the invoke answer for Teams.
pub struct Answer {
    pub outcome: Outcome,
    pub invoke: Value,
}

const NOT_FOUND: &str = "Nothing was done: this payment was not found.";

fn refused(reason: &'static str, text: &str) -> Answer {
    Answer { outcome: Outcome::Refused(reason), invoke: card::invoke_message(text) }
}

/// Handles one verified press.
pub async fn handle(
    state: &(impl Store + Clock + Config + Keys + Notifier + TeamsOutbound + crate::decision::approval::receipts::Receipts),
    activity: &Activity,
    press: &CardAction,
) -> store::Result<Answer> {
    let answer = answer(state, activity, press).await?;
    tracing::info!(verb = press.verb.as_str(), outcome = ?answer.outcome, "teams button press");
    Ok(answer)
}

async fn answer(
    state: &(impl Store + Clock + Config + Keys + Notifier + TeamsOutbound + crate::decision::approval::receipts::Receipts),
    activity: &Activity,
    press: &CardAction,
) -> store::Result<Answer> {
    let user = match &activity.from_aad_object_id {
        Some(aad) => store::directory::user_by_teams_id(&state.db().read, aad).await?.filter(|u| u.active),
        None => None,
    };
    let Some(user) = user else {
        return Ok(refused(
            "unmapped_user",
            "Nothing was done: your Teams account is not linked to a Countersign user. \
             An admin can link it (countersign user link-teams).",
        ));
    };
    let Some(row) = store::proposals::get(&state.db().read, &user.tenant_id, &press.proposal_id).await? else {
        return Ok(refused("not_found", NOT_FOUND));
    };
    let console_url = state.settings().proposal_url(&row.id);
    if row.request_hash != press.request_hash
        || row.request.amount_minor != press.amount_minor
        || row.request.currency.code() != press.currency
    {
        let text = format!(
            "Nothing was done: this card no longer matches the payment as it stands. Review it in the console: {console_url}"
        );
        return Ok(refused("stale_card", &text));
    }
    let mut shown = teams::card(state, &row.id, &row.request, &row.request_hash, row.required_approvals);
    shown.groups = crate::decision::policy::describe_groups(&row.policy.groups);
    shown.signals = crate::intake::risk::signals(state, &crate::intake::risk::Subject::of(&row)).await?;
    let verdict = match press.verb {
        Verb::Refresh => {
            let content = match row.status {
                ProposalStatus::PendingApproval | ProposalStatus::ApprovalExpired => card::pending(&shown, None),
                status => card::decided(&shown, &format!("This payment is now {status}")),
            };
            return Ok(Answer { outcome: Outcome::Shown, invoke: card::invoke_card(content) });
        }
        Verb::Approve if !shown.direct_approve => {
            let text = format!(
                "Nothing was done: payments of this size are approved in the console, signed in: {console_url}"
            );
            return Ok(refused("above_direct_limit", &text));
        }
        Verb::Approve => Verdict::Approve,
        Verb::Reject if press.reason.is_empty() => {
            Verdict::Reject { reason: format!("Rejected from Teams by {}", user.username) }
        }
        Verb::Reject => Verdict::Reject { reason: press.reason.clone() },
    };
    let who = user.username.clone();
    let approver = Approver {
        user_id: user.id,
        tenant_id: user.tenant_id.clone(),
        roles: user.roles,
        approval_limits_minor: user.approval_limits_minor,
        amr: "teams",
        via: "teams",
        step_up: None,
        not_duplicate: None,
        on_behalf_of: None,
    };
    let view = match approval::approve::decide(state, &approver, &row.id, verdict, state.now()).await {
        Ok(view) => view,
        Err(e) => {
            let (reason, text) = refusal(e, &row.id, &console_url)?;
            return Ok(refused(reason, &text));
        }
    };
    let given = view.approvals.iter().filter(|a| a.decision == "approve").count();
    let content = match view.status {
        ProposalStatus::Approved => card::decided(&shown, &format!("Approved by {who}")),
        ProposalStatus::Rejected => card::decided(&shown, &format!("Rejected by {who}")),
        _ if view.status == row.status => card::pending(
            &shown,
            Some(&format!(
                "Approved by {who}: {given} of {} approvals given; another approver is needed.",
                view.policy.required_approvals.max(row.required_approvals)
            )),
        ),
        other => card::decided(&shown, &format!("This payment is now {other}")),
    };
    replace_for_everyone(state, activity, &shown, &content).await?;
    Ok(Answer { outcome: Outcome::Decided(view.status), invoke: card::invoke_card(content) })
}

/// Queues the pressed card's replacement for everyone in the conversation.
async fn replace_for_everyone(
    state: &(impl Store + Clock + TeamsOutbound),
    activity: &Activity,
    shown: &Card<'_>,
    content: &Value,
) -> store::Result<()> {
    let Some(card_id) = &activity.reply_to_id else { return Ok(()) };
    let body = card::activity(content.clone(), "Payment decided");
    let row = store::teams::NewCard {
        tenant_id: &shown.request.tenant_id,
        proposal_id: shown.proposal_id,
        method: Method::Put,
        service_url: &activity.service_url,
        conversation_id: &activity.conversation_id,
        activity_id: Some(card_id),
        body: &body,
    };
    store::teams::enqueue(&state.db().write, &row, state.now()).await?;
    teams::wake(state);
    Ok(())
}

/// What a refused decision tells the presser.
fn refusal(e: DecideError, id: &str, console_url: &str) -> store::Result<(&'static str, String)> {
    Ok(match e {
        DecideError::Store(e) => return Err(e),
        DecideError::NotFound => ("not_found", NOT_FOUND.to_owned()),
        DecideError::NotAnApprover => {
            ("not_an_approver", "Nothing was done: only approvers can approve or reject payments.".to_owned())
        }
        DecideError::InvalidState(status) => {
            ("invalid_state", format!("Nothing was done: this payment is already {status}."))
        }
        DecideError::Denied(decision) if decision.reasons.iter().any(|r| r.rule == crate::intake::duplicates::RULE) => {
            let why = decision.reasons.first().map_or("", |r| r.message.as_str());
            ("duplicate_invoice", format!("Nothing was done: {why} Approve it in the console: {console_url}"))
        }
        DecideError::Denied(decision) => {
            let why: Vec<&str> = decision.reasons.iter().map(|r| r.message.as_str()).collect();
            ("policy_denied", format!("Nothing was done: {}", why.join(" ")))
        }
        DecideError::StepUp(_) => (
            "step_up_required",
            format!("Nothing was done: approving this payment needs your passkey, in the console: {console_url}"),
        ),
        DecideError::BadReason { why, .. } => ("reason_required", format!("Nothing was done: {why}")),
        other => {
            tracing::error!(error = %other, proposal_id = %id, "teams press could not be decided");
            ("error", format!("Nothing was confirmed because of an error; please use the console: {console_url}"))
        }
    })
}
