use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::api::{console_error, load_proposal};
use crate::components::{CsrfField, DecidedNotice, LoadError, SignalList, StatusBadge};
use crate::views::{ProposalDetail, Viewer};

/// Fixed messages for the outcome of a decision form (never reflected text).
pub fn outcome_message(code: &str) -> &'static str {
    match code {
        "approved" => "Your approval was recorded.",
        "rejected" => "The proposal was rejected.",
        "reason_required" => "A reason is required to reject.",
        "segregation_of_duties" => "You cannot approve a proposal of an agent that acts for you.",
        "approver_limit" => "This amount is above your approval limit.",
        "distinct_approvers" => "You have already approved; another approver must give the next approval.",
        "invalid_state" => "This proposal is no longer waiting for a decision.",
        "policy_denied" => "Policy no longer allows this payment.",
        "forbidden" => "Your role does not allow this.",
        _ => "The decision could not be recorded.",
    }
}

/// Proposal detail: the canonical request restated in words, the evidence a
/// reviewer needs, and the decision forms.
#[component]
pub fn ProposalPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let id = move || params.with(|p| p.get("id").unwrap_or_default());
    let data = Resource::new(id, load_proposal);
    let flash =
        move || query.with(|q| q.get("result").or_else(|| q.get("error")).map(|c| (q.get("error").is_some(), c)));
    view! {
        <Title text="Proposal"/>
        <section class="proposal">
            <DecidedNotice/>
            {move || flash().map(|(is_error, code)| {
                let class = if is_error { "notice notice-error" } else { "notice notice-ok" };
                view! { <p class=class role="status">{outcome_message(&code)}</p> }
            })}
            <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match data.await {
                        Ok(detail) => view! { <Detail detail/> }.into_any(),
                        Err(e) => view! { <h1>"Proposal"</h1><LoadError error=console_error(&e)/> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}

#[component]
fn Detail(detail: ProposalDetail) -> impl IntoView {
    let viewer = use_context::<Viewer>();
    let csrf = viewer.as_ref().map(|v| v.csrf_token.clone()).unwrap_or_default();
    let reasons =
        detail.reasons.iter().map(|r| view! { <li data-rule=r.rule.clone()>{r.message.clone()}</li> }).collect_view();
    let approvals = detail
        .approvals
        .iter()
        .map(|a| {
            view! {
                <li>
                    <strong>{a.approver.clone()}</strong>" "{a.decision.clone()}" "{a.via.clone()}" at "<time>{a.at.clone()}</time>
                    {a.reason.clone().map(|r| view! { <span class="muted">{format!(" — “{r}”")}</span> })}
                </li>
            }
        })
        .collect_view();
    let timeline = detail
        .timeline
        .iter()
        .map(|t| view! { <li><time>{t.at.clone()}</time>" — "{t.action.clone()}" ("{t.actor.clone()}")"</li> })
        .collect_view();
    let no_approvals = detail.approvals.is_empty();
    let approve = if detail.can_approve {
        view! { <a class="button primary" id="approve" href=format!("/proposals/{}/approve", detail.id)>"Approve…"</a> }
            .into_any()
    } else {
        // Shown, disabled, with the reason: nobody learns only after confirming.
        detail
            .approve_blocker
            .clone()
            .map(|why| {
                view! {
                    <button type="button" id="approve-unavailable" disabled=true aria-describedby="approve-blocker">"Approve"</button>
                    <p class="muted" id="approve-blocker">{why}</p>
                }
            })
            .into_any()
    };
    let reject = detail.can_reject.then(|| {
        view! {
            <form method="post" action=format!("/proposals/{}/decision", detail.id) class="reject stack">
                <CsrfField token=csrf/>
                <input type="hidden" name="decision" value="reject"/>
                <label>"Reason for rejecting" <textarea name="reason" required maxlength="500"></textarea></label>
                <button type="submit" class="danger" id="reject">"Reject"</button>
            </form>
        }
    });
    let history = detail
        .payee_history
        .iter()
        .map(|h| {
            view! {
                <li><a href=format!("/proposals/{}", h.id)>{h.amount.clone()}</a>" "<StatusBadge status=h.status.clone()/>" "<time class="muted">{h.at.clone()}</time></li>
            }
        })
        .collect_view();
    let no_history = detail.payee_history.is_empty();
    let payment = detail.operation_status.clone().map(|status| {
        view! {
            <Payment
                status
                rail_reference=detail.rail_reference.clone()
                error=detail.operation_error.clone()
                action_required=detail.action_required.clone()
            />
        }
    });
    view! {
        <header class="proposal-head">
            <StatusBadge status=detail.status.clone()/>
            <h1 class="sentence">{detail.sentence.clone()}</h1>
        </header>
        {detail.no_one_can_approve.then(|| view! {
            <p class="notice notice-error" role="alert" id="no-approver">"No one in this tenant can approve this."</p>
        })}
        {payment}
        <div class="card" id="signals">
            <h2>"Risk signals"</h2>
            <SignalList signals=detail.signals.clone()/>
        </div>
        <div class="grid">
            <dl class="facts card">
                <dt>"Amount"</dt><dd class="num">{detail.amount.clone()}</dd>
                <dt>"Payee"</dt><dd>{detail.payee_name.clone()}" "<span class="muted">{detail.payee_masked.clone()}</span>{detail.payee_trusted.then(|| view! { " " <span class="badge">"trusted"</span> })}</dd>
                <dt>"From"</dt><dd>{detail.source_label.clone().map(|l| view! { {l}" " })}<span class="muted">{detail.source_masked.clone()}</span></dd>
                {detail.budget_today.clone().map(|b| view! { <dt>"Budget"</dt><dd id="budget-today">{b}</dd> })}
                <dt>"Purpose"</dt><dd>{detail.purpose.clone()}</dd>
                <dt>"Invoice"</dt><dd>{detail.invoice_id.clone().unwrap_or_else(|| "—".into())}</dd>
                <dt>"Agent"</dt><dd>{detail.agent_id.clone()}" "<span class="muted">{format!("run {}", detail.run_id)}</span></dd>
                <dt>"Request hash"</dt><dd><code class="hash">{detail.request_hash.clone()}</code></dd>
                <dt>"Proposed"</dt><dd><time>{detail.created_at.clone()}</time></dd>
                <dt>"Expires"</dt><dd><time>{detail.expires_at.clone()}</time></dd>
            </dl>
            <div class="card untrusted">
                <h2>"Reference from the agent"</h2>
                <p class="muted small">"Untrusted text written by the agent. It is data, never an instruction."</p>
                <blockquote class="reference" id="agent-reference">{detail.reference.clone().unwrap_or_else(|| "(none)".into())}</blockquote>
            </div>
        </div>
        <div class="card">
            <h2>{format!("Policy: {}", detail.policy_outcome)}</h2>
            <p>{format!("Approvals required: {}", detail.required_approvals)}</p>
            <ul class="reasons">{reasons}</ul>
        </div>
        <div class="card">
            <h2>"Approvals"</h2>
            {detail.still_needed.clone().map(|n| view! { <p id="still-needed">{n}</p> })}
            {if no_approvals { Some(view! { <p class="muted">"None in this round yet."</p> }) } else { None }}
            <ul>{approvals}</ul>
            <div class="actions">{approve}{reject}</div>
        </div>
        <div class="card" id="payee-history">
            <h2>"Earlier proposals to this payee"</h2>
            {if no_history { Some(view! { <p class="muted">"None: this is the first."</p> }) } else { None }}
            <ul class="history">{history}</ul>
        </div>
        <div class="card">
            <h2>"Timeline"</h2>
            <ol class="timeline">{timeline}</ol>
        </div>
    }
}

/// What one sentence says about an operation in each status.
fn operation_explained(status: &str) -> &'static str {
    match status {
        "pending" => "Recorded; the rail has not answered yet.",
        "accepted" => "The rail accepted the transfer; it has not settled yet.",
        "succeeded" => "The rail settled the payment.",
        "failed" => "The rail refused the payment: no money moved.",
        "unknown" => "The rail's answer was lost. Reconciliation is reading the rail's record; nothing to do yet.",
        "needs_review" => {
            "Reconciliation could not tell whether money moved: an admin must decide on the Operations page."
        }
        "too_late" => "The transfer is past the rail's reversal cutoff.",
        _ => "",
    }
}

/// The committed payment: its operation's status, the rail's reference,
/// the error, and what a human must do, if anything.
#[component]
fn Payment(
    status: String,
    rail_reference: Option<String>,
    error: Option<String>,
    action_required: Option<String>,
) -> impl IntoView {
    let explained = operation_explained(&status);
    let review =
        (status == "needs_review").then(|| view! { " " <a href="/operations">"Operations needing review"</a> });
    let escalate = action_required.as_deref() == Some("escalate_to_ops");
    view! {
        <div class="card payment" id="payment">
            <h2>"Payment"</h2>
            <dl class="facts">
                <dt>"Operation"</dt><dd id="operation-status"><StatusBadge status=status/></dd>
                <dt>"Rail reference"</dt>
                <dd>{match rail_reference {
                    Some(r) => view! { <code id="rail-reference">{r}</code> }.into_any(),
                    None => view! { <span class="muted">"none yet"</span> }.into_any(),
                }}</dd>
                {error.map(|e| view! { <dt>"Error"</dt><dd class="error-text" id="operation-error">{e}</dd> })}
            </dl>
            <p class="muted small">{explained}{review}</p>
            {escalate.then(|| view! {
                <div class="notice notice-error" role="alert" id="escalate">
                    <strong>"Escalate to operations."</strong>
                    " The rail can no longer reverse this transfer automatically. Retrying will not help: \
                     operations must recover the money with the payee directly."
                </div>
            })}
        </div>
    }
}
