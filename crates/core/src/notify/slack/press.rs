//! A verified button press becomes a decision: the Slack user is mapped to
//! a console user, the button's request hash must still match the proposal,
//! an approval must be within `slack.max_direct_approve_minor` and below
//! `policy.step_up_at_minor` (a passkey step-up happens in the console), then the
//! same `approval::approve::decide` as the console runs, with `amr: slack` and
//! `via: slack`. Whatever happens, the presser is told through the
//! interaction's `response_url` (queued in the outbox): the updated message
//! after a decision, a short ephemeral explanation after a refusal.

use serde_json::Value;

use crate::config::Config;
use crate::decision::approval::keys::Keys;
use crate::decision::approval::{
    self,
    approve::{Approver, DecideError, Verdict},
};
use crate::domain::ProposalStatus;
use crate::notify::outbound::Outbound;
use crate::platform::changes::Notifier;
use crate::platform::clock::Clock;
use crate::store::Store;
use crate::store::{self, slack::NewMessage, slack::Target};

use crate::notify::slack::interaction::{Action, Interaction};
use crate::notify::slack::message::notice;
use crate::notify::slack::outbox;

/// What a press came to (for the log and the tests' sake).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A decision was recorded; the proposal is now in this status.
    Decided(ProposalStatus),
    /// Nothing changed, for this reason (machine-readable).
    Refused(&'static str),
    /// A link button: nothing to do.
    Ignored,
}

/// Handles one verified, parsed press and queues the follow-up message.
pub async fn handle(
    state: &(impl Store + Clock + Config + Keys + Notifier + Outbound + crate::decision::approval::receipts::Receipts),
    press: Interaction,
) -> crate::store::Result<Outcome> {
    let Answer { outcome, reply, about } = answer(state, &press).await?;
    tracing::info!(slack_user = %press.user_id, ?outcome, "slack button press");
    if let (Some(reply), Some(url)) = (reply, &press.response_url) {
        match state.slack().allowlist().check(url) {
            Ok(_) => {
                let message = NewMessage {
                    tenant_id: about.as_ref().map(|(t, _)| t.as_str()),
                    proposal_id: about.as_ref().map(|(_, p)| p.as_str()),
                    target: Target::ResponseUrl,
                    url: Some(url),
                    body: &reply,
                };
                store::slack::enqueue(&state.db().write, &message, state.now()).await?;
                outbox::wake(state);
            }
            Err(why) => tracing::warn!(slack_user = %press.user_id, why, "response_url refused: no follow-up sent"),
        }
    }
    Ok(outcome)
}

const NOT_FOUND: &str = "Nothing was done: this payment was not found.";

/// What a press came to, and what the presser is told.
struct Answer {
    outcome: Outcome,
    /// The follow-up for `response_url`.
    reply: Option<Value>,
    /// The (tenant, proposal) the press was about, once known.
    about: Option<(String, String)>,
}

fn refused(reason: &'static str, text: String, about: Option<(String, String)>) -> Answer {
    Answer { outcome: Outcome::Refused(reason), reply: Some(notice(&text)), about }
}

async fn answer(
    state: &(impl Store + Clock + Config + Keys + Notifier + crate::decision::approval::receipts::Receipts),
    press: &Interaction,
) -> crate::store::Result<Answer> {
    let (button, verdict) = match &press.action {
        Action::Approve(b) => (b, Verdict::Approve),
        Action::Reject(b) => (b, Verdict::Reject { reason: String::new() }),
        Action::Link => return Ok(Answer { outcome: Outcome::Ignored, reply: None, about: None }),
    };
    let Some(user) = store::directory::user_by_slack_id(&state.db().read, &press.user_id).await?.filter(|u| u.active)
    else {
        let text = "Nothing was done: your Slack account is not linked to a Countersign user. \
                    An admin can link it on the console's Admin page.";
        return Ok(refused("unmapped_user", text.into(), None));
    };
    let Some(row) = store::proposals::get(&state.db().read, &user.tenant_id, &button.proposal_id).await? else {
        return Ok(refused("not_found", NOT_FOUND.into(), None));
    };
    let about = Some((row.tenant_id.clone(), row.id.clone()));
    let console_url = state.settings().proposal_url(&row.id);
    if row.request_hash != button.request_hash {
        let text = format!(
            "Nothing was done: this message no longer matches the payment as it stands. Review it in the console: {console_url}"
        );
        return Ok(refused("hash_mismatch", text, about));
    }
    let mut card = outbox::card(state, &row.id, &row.request, &row.request_hash, row.required_approvals);
    card.groups = crate::decision::policy::describe_groups(&row.policy.groups);
    card.signals = crate::intake::risk::signals(state, &crate::intake::risk::Subject::of(&row)).await?;
    if verdict == Verdict::Approve && !card.direct_approve {
        let text =
            format!("Nothing was done: payments of this size are approved in the console, signed in: {console_url}");
        return Ok(refused("above_direct_limit", text, about));
    }
    let who = user.username.clone();
    let verdict = match verdict {
        Verdict::Reject { .. } => Verdict::Reject { reason: format!("Rejected from Slack by {who}") },
        approve => approve,
    };
    let approver = Approver {
        user_id: user.id,
        tenant_id: user.tenant_id,
        roles: user.roles,
        approval_limits_minor: user.approval_limits_minor,
        amr: "slack",
        via: "slack",
        step_up: None,
        not_duplicate: None,
        on_behalf_of: None,
    };
    let view = match approval::approve::decide(state, &approver, &row.id, verdict, state.now()).await {
        Ok(view) => view,
        Err(e) => {
            let (reason, text) = match e {
                DecideError::Store(e) => return Err(e),
                DecideError::NotFound => ("not_found", NOT_FOUND.to_owned()),
                DecideError::NotAnApprover => {
                    ("not_an_approver", "Nothing was done: only approvers can approve or reject payments.".to_owned())
                }
                DecideError::InvalidState(status) => {
                    ("invalid_state", format!("Nothing was done: this payment is already {status}."))
                }
                DecideError::Denied(decision)
                    if decision.reasons.iter().any(|r| r.rule == crate::intake::duplicates::RULE) =>
                {
                    let why = decision.reasons.first().map_or("", |r| r.message.as_str());
                    ("duplicate_invoice", format!("Nothing was done: {why} Approve it in the console: {console_url}"))
                }
                DecideError::Denied(decision) => {
                    let why: Vec<&str> = decision.reasons.iter().map(|r| r.message.as_str()).collect();
                    ("policy_denied", format!("Nothing was done: {}", why.join(" ")))
                }
                // Someone who has a passkey approves with it, so in the console.
                DecideError::StepUp(_) => (
                    "step_up_required",
                    format!(
                        "Nothing was done: approving this payment needs your passkey, in the console: {console_url}"
                    ),
                ),
                other => {
                    tracing::error!(error = %other, proposal_id = %row.id, "slack press could not be decided");
                    (
                        "error",
                        format!("Nothing was confirmed because of an error; please use the console: {console_url}"),
                    )
                }
            };
            return Ok(refused(reason, text, about));
        }
    };
    let given = view.approvals.iter().filter(|a| a.decision == "approve").count();
    let update = match view.status {
        ProposalStatus::Approved => card.decided(&format!("Approved by {who}")),
        ProposalStatus::Rejected => card.decided(&format!("Rejected by {who}")),
        _ if view.status == row.status => card.in_progress(&format!(
            "Approved by {who}: {given} of {} approvals given; another approver is needed.",
            view.policy.required_approvals.max(row.required_approvals)
        )),
        other => card.decided(&format!("This payment is now {other}")),
    };
    Ok(Answer { outcome: Outcome::Decided(view.status), reply: Some(update), about })
}
