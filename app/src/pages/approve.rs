use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::api::{console_error, load_proposal};
use crate::components::{CsrfField, LoadError, SignalList};
use crate::views::Viewer;

/// The confirmation step: restates the exact payment, then posts the approval.
/// A page rather than a script dialog, so it works without JavaScript.
#[component]
pub fn ApprovePage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let id = move || params.with(|p| p.get("id").unwrap_or_default());
    // `?for=ana`: approving for someone away, under their delegation.
    let on_behalf_of = move || query.with(|q| q.get("for")).filter(|n| !n.is_empty());
    let data = crate::codec::page(id, load_proposal);
    let csrf = use_context::<Viewer>().map(|v| v.csrf_token).unwrap_or_default();
    view! {
        <Title text="Confirm approval"/>
        <section class="card narrow confirm">
            <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || {
                    let csrf = csrf.clone();
                    let for_whom = on_behalf_of();
                    Suspend::new(async move {
                        match data.await {
                            Ok(d) if for_whom.as_ref().map_or(d.can_approve, |n| d.approve_for.contains(n)) => view! {
                                <h1>"Confirm approval"</h1>
                                {match &for_whom {
                                    Some(name) => view! {
                                        <p id="approving-for">{format!(
                                            "You are approving for {name}, under their delegation to you: it counts \
                                             as {name}'s approval and says so. Exactly this payment:"
                                        )}</p>
                                    }.into_any(),
                                    None => view! { <p>"You are approving exactly this payment:"</p> }.into_any(),
                                }}
                                <p class="sentence" id="confirm-sentence">{d.sentence.clone()}</p>
                                <SignalList signals=d.signals.clone()/>
                                <p class="muted">"Request hash "<code class="hash">{d.request_hash.clone()}</code></p>
                                <form method="post" action=format!("/proposals/{}/decision", d.id) class="stack"
                                    data-step-up=format!("/api/v1/proposals/{}/step-up", d.id)>
                                    <CsrfField token=csrf/>
                                    <input type="hidden" name="decision" value="approve"/>
                                    {for_whom.clone().map(|name| view! { <input type="hidden" name="on_behalf_of" value=name/> })}
                                    {d.twins.iter().any(|t| t.approved_or_paid).then(|| view! {
                                        <p class="notice notice-error" role="alert" id="duplicate-warning">
                                            {format!(
                                                "Invoice {} to this payee is already approved or paid. Approve only \
                                                 if this is a different payment; one more approver will be needed.",
                                                d.invoice_id.clone().unwrap_or_default()
                                            )}
                                        </p>
                                        <label>"Why this is not a duplicate"
                                            <textarea name="not_duplicate" id="not-duplicate" required maxlength="500"></textarea>
                                        </label>
                                    })}
                                    <button type="submit" class="primary" id="confirm-approve">"Approve this payment"</button>
                                    <a href=format!("/proposals/{}", d.id)>"Cancel"</a>
                                </form>
                            }.into_any(),
                            Ok(d) => view! {
                                <h1>"Cannot approve"</h1>
                                <p>{d.approve_blocker.unwrap_or_else(|| "This proposal cannot be approved now.".into())}</p>
                                <a href=format!("/proposals/{}", d.id)>"Back"</a>
                            }.into_any(),
                            Err(e) => view! { <h1>"Confirm approval"</h1><LoadError error=console_error(&e)/> }.into_any(),
                        }
                    })
                }}
            </Suspense>
        </section>
    }
}
