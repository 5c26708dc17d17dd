use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_location, use_query_map};

use crate::api::{console_error, load_bulk};
use crate::components::{CsrfField, LoadError, StatusBadge};
use crate::pages::proposal::outcome_message;
use crate::views::{BulkPage, Viewer};

/// Several payments decided at once: the confirmation lists every one and
/// the total per currency; each is still decided on its own (its limits,
/// policy, state), and the outcome of each is shown after. Plain forms, so
/// it works without JavaScript.
#[component]
pub fn BulkDecisionPage() -> impl IntoView {
    let location = use_location();
    let query = use_query_map();
    let data = crate::codec::page(move || location.search.get(), load_bulk);
    let csrf = use_context::<Viewer>().map(|v| v.csrf_token).unwrap_or_default();
    let error = move || query.with(|q| q.get("error"));
    view! {
        <Title text="Decide on several payments"/>
        <section class="bulk">
            <h1>"Decide on several payments"</h1>
            {move || error().map(|code| view! { <p class="notice notice-error" role="alert">{outcome_message(&code)}</p> })}
            <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || {
                    let csrf = csrf.clone();
                    Suspend::new(async move {
                        match data.await {
                            Ok(page) if page.done => view! { <BulkResults page/> }.into_any(),
                            Ok(page) => view! { <BulkConfirm page csrf/> }.into_any(),
                            Err(e) => view! { <LoadError error=console_error(&e)/> }.into_any(),
                        }
                    })
                }}
            </Suspense>
            <p><a href="/">"Back to the queue"</a></p>
        </section>
    }
}

/// "1 payment", "3 payments".
fn payments(n: usize) -> String {
    format!("{n} payment{}", if n == 1 { "" } else { "s" })
}

#[component]
fn BulkConfirm(page: BulkPage, csrf: String) -> impl IntoView {
    if page.items.is_empty() {
        return view! { <p class="muted">"No payments were selected."</p> }.into_any();
    }
    // Two copies of one invoice are never approved together: the set is
    // refused (here and by the server) until one is dropped.
    let paired = page.items.iter().any(|i| !i.twins.is_empty());
    let approvable: Vec<String> = page.items.iter().filter(|i| i.can_approve).map(|i| i.id.clone()).collect();
    let without = |dropped: &str| {
        let kept: Vec<String> = page.items.iter().filter(|i| i.id != dropped).map(|i| format!("id={}", i.id)).collect();
        format!("/bulk?{}", kept.join("&"))
    };
    let rejectable: Vec<String> = page.items.iter().filter(|i| i.can_reject).map(|i| i.id.clone()).collect();
    let hidden = |ids: &[String]| {
        ids.iter().map(|id| view! { <input type="hidden" name="id" value=id.clone()/> }).collect_view()
    };
    let items = page
        .items
        .iter()
        .map(|i| {
            let tags = i.signals.iter().map(|s| view! { <span class="tag">{s.clone()}</span> }).collect_view();
            let twin = (!i.twins.is_empty()).then(|| {
                view! {
                    <p class="twin-of error-text small">
                        {format!("Same invoice as {}.", i.twins.join(", "))}" "
                        <a href=without(&i.id) class="drop">"Drop this one"</a>
                    </p>
                }
            });
            let class = if i.twins.is_empty() { "card" } else { "card paired" };
            view! {
                <li data-proposal=i.id.clone() class=class data-twins=i.twins.join(" ")>
                    <StatusBadge status=i.status.clone()/>" "
                    <a href=format!("/proposals/{}", i.id)>{i.sentence.clone()}</a>
                    <span class="num">" "{i.amount.clone()}</span>
                    <span class="tags">{tags}</span>
                    {i.approve_blocker.clone().map(|b| view! { <p class="muted small blocker">{b}</p> })}
                    {twin}
                </li>
            }
        })
        .collect_view();
    let total = if page.approvable_totals.is_empty() {
        "nothing you may approve".to_owned()
    } else {
        page.approvable_totals.join(" + ")
    };
    let count = approvable.len();
    let approve = (count > 0 && !paired).then(|| {
        let total = total.clone();
        view! {
            <form method="post" action="/bulk/decision" class="stack" data-step-up-bulk="/api/v1/bulk/step-up">
                <CsrfField token=csrf.clone()/>
                <input type="hidden" name="decision" value="approve"/>
                {hidden(&approvable)}
                <button type="submit" class="primary" id="bulk-approve">
                    {format!("Approve {}: {total}", payments(count))}
                </button>
            </form>
        }
    });
    let reject_count = rejectable.len();
    let reject = (reject_count > 0).then(|| {
        view! {
            <form method="post" action="/bulk/decision" class="reject stack">
                <CsrfField token=csrf.clone()/>
                <input type="hidden" name="decision" value="reject"/>
                {hidden(&rejectable)}
                <label>"Reason for rejecting them all" <textarea name="reason" required maxlength="500"></textarea></label>
                <button type="submit" class="danger" id="bulk-reject">
                    {format!("Reject {}", payments(reject_count))}
                </button>
            </form>
        }
    });
    let twins_notice = paired.then(|| {
        view! {
            <p class="notice notice-error" role="alert" id="bulk-twins">
                "Some of these are the same invoice twice: they cannot be approved together. Drop one of each pair \
                 (or reject the copy), then approve the rest."
            </p>
        }
    });
    view! {
        {twins_notice}
        <p>{format!("{} selected.", payments(page.items.len()))}</p>
        {(page.unknown > 0).then(|| view! { <p class="muted">{format!("{} could not be found.", page.unknown)}</p> })}
        <ul class="bulk-list">{items}</ul>
        <p id="bulk-total"><strong>"You may approve: "</strong>{total}{format!(" ({count} of {})", page.items.len())}</p>
        <p class="muted small">"Each payment is still checked on its own (your limit, policy, its state): some may be refused."</p>
        <div class="actions">{approve}{reject}</div>
    }
    .into_any()
}

#[component]
fn BulkResults(page: BulkPage) -> impl IntoView {
    let items = page
        .items
        .iter()
        .map(|i| {
            let code = i.outcome.clone().unwrap_or_default();
            let ok = code == "approved" || code == "rejected";
            let class = if ok { "outcome ok" } else { "outcome error-text" };
            view! {
                <li data-proposal=i.id.clone() data-outcome=code.clone()>
                    <a href=format!("/proposals/{}", i.id)>{i.sentence.clone()}</a>
                    <span class="num">" "{i.amount.clone()}</span>" — "
                    <span class=class>{outcome_message(&code)}</span>
                </li>
            }
        })
        .collect_view();
    view! {
        <h2>"Results"</h2>
        <ul class="bulk-list">{items}</ul>
    }
}
