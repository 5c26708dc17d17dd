use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_location;

use crate::api::{console_error, load_queue};
use crate::components::{CsrfField, DecidedNotice, LoadError, ReachNote, StatusBadge, When};
use crate::views::{QueuePage as Page, Viewer};
use countersign_domain::ProposalStatus;

/// The sort orders, as the server names them (`queue::QUEUE_ORDERS`).
const ORDERS: [(&str, &str); 5] = [
    ("newest", "Newest first"),
    ("oldest", "Oldest first"),
    ("amount_desc", "Largest amount first"),
    ("amount_asc", "Smallest amount first"),
    ("expires_soonest", "Expiring soonest first"),
];

/// The queue: pending by default, filtered by status and searched (payee,
/// currency and amounts, agent, invoice, dates), sorted, cursor pagination;
/// refreshes itself when any proposal changes. The server parses the query
/// string exactly as `GET /api/v1/queue` does.
#[component]
pub fn QueuePage() -> impl IntoView {
    let location = use_location();
    let tick = RwSignal::new(0u64);
    let data = crate::codec::page(move || (location.search.get(), tick.get()), |(search, _)| load_queue(search));

    // In the browser: long-poll for changes and refetch; no reload needed.
    #[cfg(feature = "hydrate")]
    let waiting_refresh = use_context::<crate::shell::WaitingRefresh>();
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        // Start from what the page shows, so a change made between rendering
        // and the first wait is not missed.
        let seen = data.get_untracked().and_then(|r| r.ok()).map_or(0, |p| p.change_seq);
        crate::api::follow_changes(seen, move || {
            if tick.try_update(|t| *t += 1).is_none() {
                return false;
            }
            // The count of waiting proposals in the title follows too.
            if let Some(crate::shell::WaitingRefresh(count)) = waiting_refresh {
                count.try_update(|t| *t += 1);
            }
            true
        });
    });

    view! {
        <Title text="Approval queue"/>
        <section class="queue">
            // Batches are reviewed on their own page; the link shares the
            // heading's line, so a phone's header stays two lines.
            <div class="queue-head">
                <h1>"Approval queue"</h1>
                <a href="/batches" id="batches-link">"Batches →"</a>
            </div>
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
    // A GET form, so it works without JavaScript too; the statuses come
    // from the same enum the server enforces.
    let options = ProposalStatus::ALL
        .iter()
        .map(|st| {
            let value = st.as_str();
            view! { <option value=value selected=value == status>{st.label()}</option> }
        })
        .collect_view();
    let orders = ORDERS
        .iter()
        .map(|(value, label)| view! { <option value=*value selected=*value == order>{*label}</option> })
        .collect_view();
    let q = page.search.clone();
    let searched = !q.is_empty();
    let field = |name: &'static str, label: &'static str, value: String, kind: &'static str| {
        let id = format!("q-{name}");
        view! {
            <label for=id.clone()>{label}</label>
            <input id=id name=name type=kind value=value maxlength="100"/>
        }
    };
    let next = page.next_query.clone().map(|query| {
        view! { <a class="button" rel="next" href=format!("/?{query}")>"Next page →"</a> }
    });
    let errors = (!page.errors.is_empty()).then(|| {
        let lines = page.errors.iter().map(|e| view! { <li>{e.clone()}</li> }).collect_view();
        view! { <div class="notice notice-error" role="alert" id="search-errors"><ul>{lines}</ul></div> }
    });
    // One tap approves a lapsed one again: a form of its own (outside the
    // bulk form, which is a GET), its button in the row.
    let viewer = use_context::<Viewer>();
    let can_approve = viewer.as_ref().is_some_and(Viewer::can_approve);
    let csrf = viewer.map(|v| v.csrf_token).unwrap_or_default();
    let again_forms = page
        .items
        .iter()
        .filter(|i| can_approve && i.status == "approval_expired")
        .map(|i| {
            view! {
                <form method="post" action=format!("/proposals/{}/decision", i.id) id=format!("again-{}", i.id) hidden>
                    <CsrfField token=csrf.clone()/>
                    <input type="hidden" name="decision" value="approve"/>
                </form>
            }
        })
        .collect_view();
    let now = page.now.clone();
    let empty = page.items.is_empty();
    let selectable = page.items.iter().any(|i| i.status == "pending_approval" || i.status == "approval_expired");
    let rows = page
        .items
        .into_iter()
        .map(|item| {
            let flags = (!item.signals.is_empty() || item.approver_gap.is_some()).then(|| {
                let tags = item.signals.into_iter().map(|s| view! { <span class="tag">{s}</span> }).collect_view();
                let nobody = item
                    .approver_gap
                    .map(|gap| view! { <span class="tag tag-alert" data-flag="no-approver">{gap}</span> });
                view! { <span class="tags">{nobody}{tags}</span> }
            });
            let again = (can_approve && item.status == "approval_expired").then(|| {
                let label = format!("Approve again: {}", item.sentence);
                view! {
                    <button type="submit" class="again" form=format!("again-{}", item.id) aria-label=label>
                        "Approve again"
                    </button>
                }
            });
            let waiting = item.status == "pending_approval" || item.status == "approval_expired";
            let pick = waiting.then(|| {
                let label = format!("Select {}", item.sentence);
                view! { <input type="checkbox" name="id" value=item.id.clone() aria-label=label/> }
            });
            let note = item.reach.filter(|_| waiting).map(|reach| view! { <ReachNote reach=reach now=now.clone()/> });
            let expires = waiting.then(|| view! { <When at=item.expires_at now=now.clone() brief=true/>{note} });
            view! {
                <tr data-proposal=item.id.clone()>
                    <td class="c-pick">{pick}</td>
                    <td class="c-status"><StatusBadge status=item.status/></td>
                    <td class="c-payee">
                        <a href=format!("/proposals/{}", item.id) title=item.sentence.clone()>{item.payee}</a>
                        " "<span class="muted account-tag">{item.payee_masked}</span>
                        {again}
                    </td>
                    <td class="c-invoice" data-label="Invoice">{item.invoice_id.unwrap_or_else(|| "—".into())}</td>
                    <td class="num c-amount">{item.amount}</td>
                    <td class="c-signals" data-label="Signals">{flags}</td>
                    <td class="c-expires" data-label="Expires">{expires}</td>
                    <td class="c-approvals" data-label="Approvals">{format!("{}/{}", item.approvals, item.required_approvals)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <form class="filter" method="get" action="/" id="queue-search">
            <div class="filter-row">
                <span class="filter-pair">
                    <label for="status-filter">"Status"</label>
                    <select id="status-filter" name="status">{options}</select>
                </span>
                <span class="filter-pair">
                    <label for="order">"Sort"</label>
                    <select id="order" name="order">{orders}</select>
                </span>
            </div>
            <details class="search" open=searched>
                <summary>"Search"</summary>
                <div class="search-grid">
                    {field("payee", "Payee", q.payee, "search")}
                    {field("currency", "Currency", q.currency, "text")}
                    {field("min", "Amount from", q.min, "text")}
                    {field("max", "Amount to", q.max, "text")}
                    {field("agent", "Agent", q.agent, "text")}
                    {field("invoice_id", "Invoice", q.invoice_id, "text")}
                    {field("from", "Proposed from", q.from, "date")}
                    {field("to", "Proposed to", q.to, "date")}
                </div>
            </details>
            <div class="filter-row">
                <button type="submit" class="primary">"Show"</button>
                {searched.then(|| view! { <a href=format!("/?status={}&order={}", page.status, page.order)>"Clear search"</a> })}
            </div>
        </form>
        {errors}
        {if empty {
            view! { <p class="empty muted">"Nothing here."</p> }.into_any()
        } else {
            view! {
                <form method="get" action="/bulk" id="bulk-form">
                    {selectable.then(|| view! {
                        <p class="toolbar"><button type="submit" id="bulk-review">"Decide on the selected…"</button></p>
                    })}
                    <table class="list queue-list">
                        <thead><tr><th class="c-pick"><span class="visually-hidden">"Select"</span></th><th>"Status"</th><th>"Payee"</th><th>"Invoice"</th><th class="num">"Amount"</th><th>"Signals"</th><th>"Expires"</th><th>"Approvals"</th></tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                </form>
                {again_forms}
            }.into_any()
        }}
        <p class="pager">{next}</p>
    }
}
