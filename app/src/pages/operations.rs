use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::{console_error, load_operations};
use crate::components::{CsrfField, LoadError, StatusBadge};
use crate::views::{OperationItem, OperationsPage as Page, Viewer};

/// Fixed messages for the outcome of a resolve form (never reflected text).
pub fn resolve_message(code: &str) -> &'static str {
    match code {
        "succeeded" => "The operation was marked succeeded.",
        "failed" => "The operation was marked failed; its budget reservation was released.",
        "rail_reference" => "The rail reference must be the rail's transfer id: tr_… (or trr_… for a reversal).",
        "reason" => "A reason (1–500 characters) is required to mark an operation failed.",
        "invalid_state" => "This operation no longer needs review: it was settled already.",
        "forbidden" => "Only admins can resolve operations.",
        _ => "The operation could not be resolved.",
    }
}

/// Operations needing review (SPEC §10): reconciliation could not tell
/// whether the money moved, so an admin decides, with evidence. Operations
/// whose outcome is still unknown are listed below, read-only.
#[component]
pub fn OperationsPage() -> impl IntoView {
    let query = use_query_map();
    let data = Resource::new(|| (), |_| load_operations());
    let flash =
        move || query.with(|q| q.get("result").or_else(|| q.get("error")).map(|c| (q.get("error").is_some(), c)));
    view! {
        <section class="operations">
            <h1>"Operations needing review"</h1>
            {move || flash().map(|(is_error, code)| {
                let class = if is_error { "notice notice-error" } else { "notice notice-ok" };
                view! { <p class=class role="status">{resolve_message(&code)}</p> }
            })}
            <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match data.await {
                        Ok(page) => view! { <Operations page/> }.into_any(),
                        Err(e) => view! { <LoadError error=console_error(&e)/> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}

#[component]
fn Operations(page: Page) -> impl IntoView {
    let csrf = use_context::<Viewer>().map(|v| v.csrf_token).unwrap_or_default();
    let can_resolve = page.can_resolve;
    let review = if page.needs_review.is_empty() {
        view! { <p class="empty muted" id="no-review">"Nothing needs review."</p> }.into_any()
    } else {
        page.needs_review
            .into_iter()
            .map(|op| view! { <ReviewCard op can_resolve csrf=csrf.clone()/> })
            .collect_view()
            .into_any()
    };
    let reconciling = if page.reconciling.is_empty() {
        view! { <p class="empty muted">"No operation is being reconciled."</p> }.into_any()
    } else {
        let rows = page
            .reconciling
            .into_iter()
            .map(|op| {
                let id = op.id.clone();
                view! {
                    <tr data-operation=id>
                        <td><StatusBadge status=op.status/></td>
                        <td><a href=format!("/proposals/{}", op.proposal_id)>{op.sentence}</a></td>
                        <td class="num">{op.amount}</td>
                        <td><code>{op.id}</code><br/><code class="hash muted">{op.idempotency_key}</code></td>
                        <td class="small">{op.why}</td>
                        <td><time>{op.created_at}</time></td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <table class="list">
                <thead><tr><th>"Status"</th><th>"Payment"</th><th>"Amount"</th><th>"Operation / idempotency key"</th><th>"Why"</th><th>"Recorded"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
        .into_any()
    };
    view! {
        <p class="muted">
            "Reconciliation could not tell whether these payments moved money. Check the rail's records under the "
            "idempotency key, then record what happened. "
            {(!can_resolve).then_some("Only an admin can resolve them.")}
        </p>
        <div id="needs-review">{review}</div>
        <h2 class="section">"Being reconciled"</h2>
        <p class="muted small">"The rail's answer was lost; reconciliation is still reading the rail. Nothing to do yet."</p>
        <div id="reconciling">{reconciling}</div>
    }
}

#[component]
fn ReviewCard(op: OperationItem, can_resolve: bool, csrf: String) -> impl IntoView {
    let action = format!("/operations/{}/resolve", op.id);
    let forms = can_resolve.then(|| {
        view! {
            <div class="actions">
                <form method="post" action=action.clone() class="stack resolve resolve-succeeded">
                    <CsrfField token=csrf.clone()/>
                    <input type="hidden" name="outcome" value="succeeded"/>
                    <label>
                        "Rail reference — the money moved"
                        <input name="rail_reference" required maxlength="255" placeholder="tr_…" autocomplete="off"/>
                    </label>
                    <button type="submit" class="primary">"Mark succeeded"</button>
                </form>
                <form method="post" action=action class="stack resolve resolve-failed">
                    <CsrfField token=csrf/>
                    <input type="hidden" name="outcome" value="failed"/>
                    <label>
                        "Reason — the money did not move"
                        <textarea name="reason" required maxlength="500"></textarea>
                    </label>
                    <button type="submit" class="danger">"Mark failed"</button>
                </form>
            </div>
        }
    });
    let id = op.id.clone();
    view! {
        <article class="card operation" data-operation=id>
            <header class="proposal-head">
                <StatusBadge status=op.status/>
                <a class="sentence" href=format!("/proposals/{}", op.proposal_id)>{op.sentence}</a>
            </header>
            <dl class="facts">
                <dt>"Amount"</dt><dd class="num">{op.amount}</dd>
                <dt>"Why"</dt><dd class="why">{op.why}</dd>
                <dt>"Operation"</dt><dd><code>{op.id}</code></dd>
                <dt>"Idempotency key"</dt><dd><code class="hash">{op.idempotency_key}</code></dd>
                {op.rail_reference.map(|r| view! { <dt>"Rail reference"</dt><dd><code>{r}</code></dd> })}
                <dt>"Recorded"</dt><dd><time>{op.created_at}</time></dd>
                <dt>"Last change"</dt><dd><time>{op.updated_at}</time></dd>
            </dl>
            {forms}
        </article>
    }
}
