//! Batches in the console: the list of batches, and a batch's review page —
//! totals by currency and by payee first, then every line (payee, masked
//! account, amount, its invoice's match, why it is held back), a form to
//! hold a line back, and approve or reject. Each line reads as a card on a
//! phone; the forms post plainly (no JavaScript needed).

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::api::{console_error, load_batch, load_batches};
use crate::components::{CsrfField, LoadError, When};
use crate::views::{BatchLineItem, BatchReview, BatchSummary, BatchTotalLine, Viewer};

/// Fixed messages for the outcome of a batch form (never reflected text).
pub fn batch_message(code: &str) -> &'static str {
    match code {
        "approved" => "Your approval was recorded.",
        "rejected" => "The batch was rejected.",
        "held" => "The line was held back. The batch changed: it needs its approvals again.",
        "changed" => "The batch changed since you opened it (a line was held back): review it again, then approve.",
        "reason" => "A reason (1–500 characters) is required.",
        "invalid_state" => "This batch, or that line, can no longer be changed.",
        "forbidden" => "Only approvers decide on batches.",
        "denied" => {
            "You may not approve this batch: your approval limit does not cover its total, you already approved \
             it, or the agent acts for you."
        }
        "not_found" => "No such line.",
        _ => "That did not work.",
    }
}

/// `/batches`: the batches waiting for a decision, and recent ones.
#[component]
pub fn BatchesPage() -> impl IntoView {
    let data = crate::codec::page(|| (), |_| load_batches());
    view! {
        <Title text="Batches"/>
        <section class="batches">
            <h1>"Batches"</h1>
            <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match data.await {
                        Ok(list) => view! {
                            <h2>"Waiting for a decision"</h2>
                            <Summaries items=list.waiting empty="No batch is waiting."/>
                            <h2>"Recent"</h2>
                            <Summaries items=list.recent empty="None yet."/>
                        }
                        .into_any(),
                        Err(e) => view! { <LoadError error=console_error(&e)/> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}

#[component]
fn Summaries(items: Vec<BatchSummary>, empty: &'static str) -> impl IntoView {
    if items.is_empty() {
        return view! { <p class="muted">{empty}</p> }.into_any();
    }
    let rows = items
        .into_iter()
        .map(|b| {
            let label = b.label.clone().unwrap_or_else(|| "Batch".into());
            view! {
                <li class="card batch-summary" data-batch=b.id.clone()>
                    <span class=format!("badge badge-{}", b.status)>{status_word(&b.status)}</span>" "
                    <a href=format!("/batches/{}", b.id)>{label}</a>
                    <p class="small">{b.summary}</p>
                    <p class="muted small"><When at=b.created_at/></p>
                </li>
            }
        })
        .collect_view();
    view! { <ul class="plain">{rows}</ul> }.into_any()
}

/// A batch's or a line's status in words.
fn status_word(status: &str) -> &'static str {
    match status {
        "pending_approval" => "Pending approval",
        "approved" => "Approved",
        "approval_expired" => "Approval expired",
        "rejected" => "Rejected",
        "cancelled" => "Cancelled",
        "expired" => "Expired",
        "committed" => "Committed",
        "included" => "Included",
        "held" => "Held back",
        _ => "Unknown status",
    }
}

/// `/batches/:id`: the review page.
#[component]
pub fn BatchPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let id = move || params.with(|p| p.get("id").unwrap_or_default());
    let data = crate::codec::page(id, load_batch);
    let flash =
        move || query.with(|q| q.get("result").or_else(|| q.get("error")).map(|c| (q.get("error").is_some(), c)));
    view! {
        <Title text="Batch"/>
        <section class="batch">
            {move || flash().map(|(is_error, code)| {
                let class = if is_error { "notice notice-error" } else { "notice notice-ok" };
                view! { <p class=class role="status" id="batch-notice">{batch_message(&code)}</p> }
            })}
            <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match data.await {
                        Ok(batch) => view! { <Review batch/> }.into_any(),
                        Err(e) => view! { <h1>"Batch"</h1><LoadError error=console_error(&e)/> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}

#[component]
fn Totals(title: &'static str, id: &'static str, lines: Vec<BatchTotalLine>) -> impl IntoView {
    let rows = lines
        .into_iter()
        .map(|t| {
            let count = format!(" ({} payment{})", t.lines, if t.lines == 1 { "" } else { "s" });
            view! {
                <li><span class="total-label">{t.label}</span>" "<strong class="num">{t.amount}</strong>
                <span class="muted small">{count}</span></li>
            }
        })
        .collect_view();
    view! {
        <h2 class="small">{title}</h2>
        <ul class="plain totals" id=id>{rows}</ul>
    }
}

#[component]
fn Review(batch: BatchReview) -> impl IntoView {
    let csrf = use_context::<Viewer>().map(|v| v.csrf_token).unwrap_or_default();
    let title = batch.label.clone().unwrap_or_else(|| "Batch".into());
    let waiting = batch.can_decide;
    let approvals = format!(
        "{} of {} approval{}{}",
        batch.approved_by.len(),
        batch.required_approvals,
        if batch.required_approvals == 1 { "" } else { "s" },
        if batch.approved_by.is_empty() { String::new() } else { format!(" ({})", batch.approved_by.join(", ")) }
    );
    let reasons = batch.reasons.iter().map(|r| view! { <li>{r.clone()}</li> }).collect_view();
    let lines = batch
        .lines
        .iter()
        .cloned()
        .map(|l| view! { <Line line=l id=batch.id.clone() csrf=csrf.clone() can_hold=waiting/> })
        .collect_view();
    let decide = waiting.then(|| {
        let action = format!("/batches/{}/decide", batch.id);
        view! {
            <div class="card decide" id="batch-decide">
                <h2>"Decide"</h2>
                <form method="post" action=action.clone() class="stack">
                    <CsrfField token=csrf.clone()/>
                    <input type="hidden" name="decision" value="approve"/>
                    <input type="hidden" name="batch_hash" value=batch.batch_hash.clone()/>
                    <p class="small">{format!(
                        "Approving pays every included line: {}.",
                        batch.by_currency.iter().map(|t| t.amount.clone()).collect::<Vec<_>>().join(" and ")
                    )}</p>
                    <button type="submit" class="primary" id="approve-batch">"Approve the batch"</button>
                </form>
                <form method="post" action=action class="stack">
                    <CsrfField token=csrf.clone()/>
                    <input type="hidden" name="decision" value="reject"/>
                    <label>"Reason to reject"<textarea name="reason" required maxlength="500"></textarea></label>
                    <button type="submit" class="danger" id="reject-batch">"Reject the batch"</button>
                </form>
            </div>
        }
    });
    view! {
        <article class="card batch-head" data-batch=batch.id.clone() data-status=batch.status.clone()>
            <h1>
                <span class=format!("badge badge-{}", batch.status) id="batch-status">{status_word(&batch.status)}</span>
                " "{title}
            </h1>
            <p class="muted small">
                {format!("Proposed by agent {}, ", batch.agent_id)}<When at=batch.created_at.clone()/>
                {batch.label.is_some().then_some(" — the label is the agent's own text, untrusted.")}
            </p>
            <p id="batch-approvals">{approvals}</p>
            <ul class="small reasons">{reasons}</ul>
            <Totals title="Totals by currency" id="totals-currency" lines=batch.by_currency.clone()/>
            <Totals title="Totals by payee" id="totals-payee" lines=batch.by_payee.clone()/>
            <p class="muted small">"Batch hash "<code class="hash">{batch.batch_hash.clone()}</code></p>
        </article>
        <h2>"Lines"</h2>
        <ul class="plain batch-lines">{lines}</ul>
        {decide}
    }
}

#[component]
fn Line(line: BatchLineItem, id: String, csrf: String, can_hold: bool) -> impl IntoView {
    let held = line.status == "held";
    let invoice = match (&line.invoice, &line.invoice_id) {
        (Some(m), _) => {
            let mark = match m.verdict.as_str() {
                "matches" => "✓",
                "mismatch" => "✗",
                _ => "?",
            };
            let failing: Vec<String> = m.checks.iter().filter(|c| !c.ok).map(|c| c.message.clone()).collect();
            view! {
                <p class=format!("verdict verdict-{}", m.verdict) data-verdict=m.verdict.clone()>
                    {format!("{mark} {}", m.summary)}
                </p>
                {(m.verdict == "mismatch" && !failing.is_empty()).then(|| view! { <p class="small">{failing.join(" ")}</p> })}
            }
            .into_any()
        }
        (None, Some(number)) => view! { <p class="small">{format!("Invoice {number}")}</p> }.into_any(),
        (None, None) => view! { <p class="muted small">"No invoice named."</p> }.into_any(),
    };
    let why = held.then(|| {
        let by = line.held_by.clone().unwrap_or_default();
        view! {
            <div class="held" role="note">
                <strong>{format!("Held back by {by}: ")}</strong>
                {line.held_reasons.join(" ")}
            </div>
        }
    });
    let payment = line.proposal_id.clone().map(|pid| {
        let status = line.payment_status.clone().unwrap_or_default();
        view! {
            <p class="small">
                <span class=format!("badge badge-{status}") data-payment=status.clone()>{status.replace('_', " ")}</span>
                " "<a href=format!("/proposals/{pid}")>"Its payment"</a>
            </p>
        }
    });
    let hold = (can_hold && line.status == "included").then(|| {
        view! {
            <form method="post" action=format!("/batches/{id}/hold") class="stack hold">
                <CsrfField token=csrf/>
                <input type="hidden" name="line" value=line.line.to_string()/>
                <label>"Reason to hold it back"<input type="text" name="reason" required maxlength="500"/></label>
                <button type="submit" class="secondary">{format!("Hold back line {}", line.line)}</button>
            </form>
        }
    });
    view! {
        <li class="card batch-line" class:held=held data-line=line.line data-status=line.status.clone()>
            <p class="line-head">
                <span class="muted">{format!("#{} ", line.line)}</span>
                <strong>{line.payee.clone()}</strong>" "<code>{line.masked_account.clone()}</code>
                <span class="num amount">{line.amount.clone()}</span>
            </p>
            {invoice}
            {why}
            {payment}
            {hold}
        </li>
    }
}
