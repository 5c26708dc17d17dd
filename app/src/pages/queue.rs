use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::{console_error, load_queue};
use crate::components::{DecidedNotice, LoadError, StatusBadge};
use crate::views::QueuePage as Page;
use countersign_domain::ProposalStatus;

/// The queue: pending by default, filtered by status, newest or oldest first,
/// cursor pagination; refreshes itself when any proposal changes.
#[component]
pub fn QueuePage() -> impl IntoView {
    let query = use_query_map();
    let tick = RwSignal::new(0u64);
    let params = move || query.with(|q| (q.get("status"), q.get("order"), q.get("cursor")));
    let data =
        Resource::new(move || (params(), tick.get()), |((status, order, cursor), _)| load_queue(status, order, cursor));

    // In the browser: long-poll for changes and refetch; no reload needed.
    #[cfg(feature = "hydrate")]
    let waiting_refresh = use_context::<crate::shell::WaitingRefresh>();
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        // Start from what the page shows, so a change made between rendering
        // and the first wait is not missed.
        let mut seen = data.get_untracked().and_then(|r| r.ok()).map_or(0, |p| p.change_seq);
        leptos::task::spawn_local(async move {
            while let Ok(now) = crate::api::wait_for_change(seen).await {
                if now != seen {
                    if tick.try_update(|t| *t += 1).is_none() {
                        break;
                    }
                    // The count of waiting proposals in the title follows too.
                    if let Some(crate::shell::WaitingRefresh(count)) = waiting_refresh {
                        count.try_update(|t| *t += 1);
                    }
                }
                seen = now;
            }
        });
    });

    view! {
        <Title text="Approval queue"/>
        <section class="queue">
            <h1>"Approval queue"</h1>
            <DecidedNotice queue_clear=true/>
            <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match data.await {
                        Ok(page) => view! { <QueueTable page/> }.into_any(),
                        Err(e) => view! { <LoadError error=console_error(&e)/> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

#[component]
fn QueueTable(page: Page) -> impl IntoView {
    let status = page.status.clone();
    let order = page.order.clone();
    let other_order = if order == "oldest" { "newest" } else { "oldest" };
    // A compact status filter: a GET form, so it works without JavaScript
    // too; the statuses come from the same enum the server enforces.
    let options = ProposalStatus::ALL
        .iter()
        .map(|st| {
            let value = st.as_str();
            view! { <option value=value selected=value == status>{st.label()}</option> }
        })
        .collect_view();
    let next = page.next_cursor.clone().map(|cursor| {
        view! { <a class="button" rel="next" href=format!("/?status={status}&order={order}&cursor={cursor}")>"Next page →"</a> }
    });
    let empty = page.items.is_empty();
    let rows = page
        .items
        .into_iter()
        .map(|item| {
            let flags = (!item.signals.is_empty() || item.no_one_can_approve).then(|| {
                let tags = item.signals.into_iter().map(|s| view! { <span class="tag">{s}</span> }).collect_view();
                let nobody = item
                    .no_one_can_approve
                    .then(|| view! { <span class="tag tag-alert" data-flag="no-approver">"No one can approve"</span> });
                view! { <span class="tags">{nobody}{tags}</span> }
            });
            view! {
                <tr data-proposal=item.id.clone()>
                    <td class="c-status"><StatusBadge status=item.status/></td>
                    <td class="c-payment"><a href=format!("/proposals/{}", item.id)>{item.sentence}</a>{flags}</td>
                    <td class="num c-amount">{item.amount}</td>
                    <td class="c-meta" data-label="Approvals">{format!("{}/{}", item.approvals, item.required_approvals)}</td>
                    <td class="c-meta" data-label="Agent">{item.agent_id}</td>
                    <td class="c-meta" data-label="Proposed"><time>{item.created_at}</time></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <form class="filter" method="get" action="/">
            <label for="status-filter">"Status"</label>
            <select id="status-filter" name="status">{options}</select>
            <input type="hidden" name="order" value=order.clone()/>
            <button type="submit">"Show"</button>
        </form>
        <p class="toolbar">
            <span class="muted">{format!("Sorted {} first. ", order)}</span>
            <a href=format!("/?status={}&order={other_order}", page.status)>{format!("Show {other_order} first")}</a>
        </p>
        {if empty {
            view! { <p class="empty muted">"Nothing here."</p> }.into_any()
        } else {
            view! {
                <table class="list queue-list">
                    <thead><tr><th>"Status"</th><th>"Payment"</th><th class="num">"Amount"</th><th>"Approvals"</th><th>"Agent"</th><th>"Proposed"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            }.into_any()
        }}
        <p class="pager">{next}</p>
    }
}
