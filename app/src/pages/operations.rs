use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::{console_error, load_operations, load_resolution};
use crate::components::{CsrfField, LoadError, StatusBadge, When};
use crate::views::{OperationItem, OperationsPage as Page, RailDocumentItem, ResolvePage, Viewer};

/// Fixed messages for the outcome of a resolve form (never reflected text).
pub fn resolve_message(code: &str) -> &'static str {
    match code {
        "succeeded" => "The operation was marked succeeded.",
        "failed" => "The operation was marked failed; its budget reservation was released.",
        "rail_reference" => {
            "That record does not settle this operation: pick one of the rail's records listed here that matches \
             its amount, currency and destination."
        }
        "reason" => "A reason (1–500 characters) is required to mark an operation failed.",
        "confirm" => "Tick the confirmation first: it restates exactly what you are recording.",
        "invalid_state" => "This operation no longer needs review: it was settled already.",
        "forbidden" => "Only admins can resolve operations.",
        "rail_unavailable" => "The rail could not be read just now. Try again in a moment.",
        _ => "The operation could not be resolved.",
    }
}

/// Operations needing review (SPEC §10): reconciliation could not tell
/// whether the money moved, so an admin decides, with evidence. Operations
/// whose outcome is still unknown are listed below, read-only.
#[component]
pub fn OperationsPage() -> impl IntoView {
    let query = use_query_map();
    let tick = RwSignal::new(0u64);
    let data = crate::codec::page(move || tick.get(), |_| load_operations());

    // In the browser: long-poll for changes and refetch, as the queue does:
    // an operation that needs review, or settles, shows without a reload.
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        let seen = data.get_untracked().and_then(|r| r.ok()).map_or(0, |p| p.change_seq);
        crate::api::follow_changes(seen, move || tick.try_update(|t| *t += 1).is_some());
    });
    let flash =
        move || query.with(|q| q.get("result").or_else(|| q.get("error")).map(|c| (q.get("error").is_some(), c)));
    view! {
        <section class="operations">
            <Title text="Operations"/>
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
    let can_resolve = page.can_resolve;
    let review = if page.needs_review.is_empty() {
        view! { <p class="empty muted" id="no-review">"Nothing needs review."</p> }.into_any()
    } else {
        page.needs_review.into_iter().map(|op| view! { <ReviewCard op can_resolve/> }).collect_view().into_any()
    };
    let reconciling = if page.reconciling.is_empty() {
        view! { <p class="empty muted">"No operation is being reconciled."</p> }.into_any()
    } else {
        let rows = page
            .reconciling
            .into_iter()
            .map(|op| {
                let id = op.id.clone();
                let code = op.code.clone();
                view! {
                    <tr data-operation=id data-code=code>
                        <td><StatusBadge status=op.status/></td>
                        <td><a href=format!("/proposals/{}", op.proposal_id)>{op.sentence}</a></td>
                        <td class="num">{op.amount}</td>
                        <td><code>{op.id}</code><br/><code class="hash muted">{op.idempotency_key}</code></td>
                        <td class="small">{op.why}</td>
                        <td><When at=op.created_at/></td>
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
    let documents = (!page.rail_documents.is_empty()).then(|| {
        let cards = page.rail_documents.into_iter().map(|d| view! { <DocumentCard d/> }).collect_view();
        view! {
            <h2 class="section">"Bank documents"</h2>
            <p class="muted small">
                "What the bank sent back: status reports and statements. A payment is marked paid only when a \
                 statement books it for the amount sent; anything that does not fit is listed here."
            </p>
            <div id="rail-documents">{cards}</div>
        }
    });
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
        {documents}
    }
}

/// One document a bank rail read, and its problems in words.
#[component]
fn DocumentCard(d: RailDocumentItem) -> impl IntoView {
    let class = if d.problems.is_empty() { "card rail-document" } else { "card rail-document notice-error" };
    let codes = d.problem_codes.join(" ");
    let status = d.status.clone();
    let problems = d.problems.into_iter().map(|p| view! { <li>{p}</li> }).collect_view();
    view! {
        <article class=class data-document=d.id data-status=status data-problems=codes>
            <dl class="facts">
                <dt>"Document"</dt><dd><code>{d.kind}</code>" "{d.message_id.unwrap_or_default()}</dd>
                <dt>"File"</dt><dd><code>{d.file_name}</code>" ("{d.rail}")"</dd>
                <dt>"Received"</dt><dd><When at=d.received_at/></dd>
                <dt>"Read"</dt><dd>{d.status}", "{d.entries}" entries"</dd>
            </dl>
            <ul class="problems">{problems}</ul>
        </article>
    }
}

#[component]
fn ReviewCard(op: OperationItem, can_resolve: bool) -> impl IntoView {
    let resolve = can_resolve.then(|| {
        view! {
            <p class="actions">
                <a class="button primary" href=format!("/operations/{}/resolve", op.id)>"Resolve…"</a>
            </p>
        }
    });
    let id = op.id.clone();
    view! {
        <article class="card operation" data-operation=id>
            <header class="proposal-head">
                <StatusBadge status=op.status.clone()/>
                <a class="sentence" href=format!("/proposals/{}", op.proposal_id)>{op.sentence.clone()}</a>
            </header>
            <OperationFacts op=op/>
            {resolve}
        </article>
    }
}

#[component]
fn OperationFacts(op: OperationItem) -> impl IntoView {
    view! {
        <dl class="facts">
            <dt>"Amount"</dt><dd class="num">{op.amount}</dd>
            <dt>"Why"</dt><dd class="why" data-code=op.code.clone()>{op.why}</dd>
            <dt>"Operation"</dt><dd><code>{op.id}</code></dd>
            <dt>"Idempotency key"</dt><dd><code class="hash">{op.idempotency_key}</code></dd>
            {op.rail_reference.map(|r| view! { <dt>"Rail reference"</dt><dd><code>{r}</code></dd> })}
            <dt>"Recorded"</dt><dd><When at=op.created_at/></dd>
            <dt>"Last change"</dt><dd><When at=op.updated_at/></dd>
        </dl>
    }
}

/// Resolving one operation (admins): the rail's own records for it, read
/// now; only a record that matches can be picked as proof that the money
/// moved, and both outcomes need a confirmation that restates them.
#[component]
pub fn ResolveOperationPage() -> impl IntoView {
    let params = leptos_router::hooks::use_params_map();
    let query = use_query_map();
    let id = move || params.with(|p| p.get("id").unwrap_or_default());
    let data = crate::codec::page(id, load_resolution);
    let error = move || query.with(|q| q.get("error"));
    view! {
        <section class="operations resolve-page">
            <p><a href="/operations">"← Operations needing review"</a></p>
            <Title text="Resolve an operation"/>
            <h1>"Resolve an operation"</h1>
            {move || error().map(|code| view! { <p class="notice notice-error" role="alert">{resolve_message(&code)}</p> })}
            <Suspense fallback=|| view! { <p class="muted">"Reading the rail…"</p> }>
                {move || Suspend::new(async move {
                    match data.await {
                        Ok(page) => view! { <Resolve page/> }.into_any(),
                        Err(e) => view! { <LoadError error=console_error(&e)/> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}

#[component]
fn Resolve(page: ResolvePage) -> impl IntoView {
    let csrf = use_context::<Viewer>().map(|v| v.csrf_token).unwrap_or_default();
    let op = page.operation;
    let action = format!("/operations/{}/resolve", op.id);
    let payment = format!("{} ({})", op.sentence, op.amount);
    let settling = page.records.iter().filter(|r| r.mismatch.is_none()).count();
    let records = if page.records.is_empty() {
        let none = match &page.rail_error {
            Some(e) => e.clone(),
            None => "The rail holds no record for this operation: the money did not move under its key.".into(),
        };
        view! { <p class="empty muted" id="no-rail-records">{none}</p> }.into_any()
    } else {
        let rows = page
            .records
            .into_iter()
            .map(|r| {
                let settles = r.mismatch.is_none();
                let reference = r.reference.clone();
                view! {
                    <tr data-record=reference.clone() class:mismatch=!settles>
                        <td>
                            <input type="radio" name="rail_reference" value=reference.clone() required
                                disabled=!settles aria-label=format!("Record {reference}")/>
                        </td>
                        <td><code>{r.reference}</code></td>
                        <td class="num">{r.amount}</td>
                        <td><code>{r.destination}</code></td>
                        <td>{r.status}</td>
                        <td class="small">{r.mismatch.unwrap_or_else(|| "Matches this operation.".into())}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <table class="list rail-records">
                <thead><tr><th></th><th>"Rail record"</th><th>"Amount"</th><th>"Destination"</th><th>"Status"</th><th>"Against this operation"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
        .into_any()
    };
    let succeeded = (settling > 0).then(|| {
        view! {
            <label class="confirm">
                <input type="checkbox" name="confirm" value="yes" required/>
                {format!(" I confirm the rail settled this payment: {payment}.")}
            </label>
            <button type="submit" class="primary">"Mark succeeded"</button>
        }
    });
    view! {
        <article class="card operation" data-operation=op.id.clone()>
            <header class="proposal-head">
                <StatusBadge status=op.status.clone()/>
                <a class="sentence" href=format!("/proposals/{}", op.proposal_id)>{op.sentence.clone()}</a>
            </header>
            <OperationFacts op=op.clone()/>
        </article>
        <div class="card">
            <h2>"What the rail holds"</h2>
            <p class="muted small">
                {if page.kind == "reversal" {
                    "For a reversal: the transfer it reverses, and how much of it the rail reports reversed."
                } else {
                    "Every transfer the rail holds under this operation's idempotency key."
                }}
            </p>
            <form method="post" action=action.clone() class="stack resolve resolve-succeeded">
                <CsrfField token=csrf.clone()/>
                <input type="hidden" name="outcome" value="succeeded"/>
                {records}
                {succeeded}
            </form>
        </div>
        <div class="card">
            <h2>"The money did not move"</h2>
            <form method="post" action=action class="stack resolve resolve-failed">
                <CsrfField token=csrf/>
                <input type="hidden" name="outcome" value="failed"/>
                <label>
                    "Reason (shown to the agent)"
                    <textarea name="reason" required maxlength="500"></textarea>
                </label>
                <label class="confirm">
                    <input type="checkbox" name="confirm" value="yes" required/>
                    {format!(" I confirm no money moved for: {payment}. Its budget reservation is released.")}
                </label>
                <button type="submit" class="danger">"Mark failed"</button>
            </form>
        </div>
    }
}
