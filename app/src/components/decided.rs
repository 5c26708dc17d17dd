//! The notice after a decision: what was just done (a fixed message for the
//! `done` code) to which payment (the `decided` proposal's sentence, read
//! from the server, never from the address), with a link back to it.

use countersign_domain::is_proposal_id;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::load_proposal;

/// Fixed words for the `done` code of the decision form's redirect.
pub fn done_message(code: &str) -> Option<&'static str> {
    match code {
        "approved" => Some("You approved this payment; it is now approved:"),
        "approval_recorded" => Some("Your approval was recorded; another approval is still needed:"),
        "rejected" => Some("You rejected this payment:"),
        _ => None,
    }
}

/// Shown above the next proposal (`queue_clear` false) or the queue, when
/// the address carries `done` and `decided`.
#[component]
pub fn DecidedNotice(#[prop(optional)] queue_clear: bool) -> impl IntoView {
    let query = use_query_map();
    let decided = move || {
        query.with(|q| {
            let message = done_message(q.get("done")?.as_str())?;
            let id = q.get("decided").filter(|id| is_proposal_id(id))?;
            Some((message, id))
        })
    };
    let sentence = crate::codec::resource(
        move || decided().map(|(_, id)| id),
        |id| async move {
            match id {
                Some(id) => load_proposal(id).await.ok().map(|d| d.sentence),
                None => None,
            }
        },
    );
    let then = if queue_clear {
        "Queue clear: nothing else is waiting for your approval."
    } else {
        "Next: the oldest proposal still waiting for you."
    };
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                let sentence = sentence.await;
                decided().map(|(message, id)| view! {
                    <div class="notice notice-ok" role="status" id="decided-notice">
                        <p>{message}" "<a id="decided-link" href=format!("/proposals/{id}")>{sentence.unwrap_or_else(|| "the proposal".into())}</a></p>
                        <p id="decided-then">{then}</p>
                    </div>
                })
            })}
        </Suspense>
    }
}
