use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::{console_error, load_policy};
use crate::components::{CsrfField, LoadError, When};
use crate::views::{PolicyPage as Page, Viewer};

/// The tenant's payment policy, for admins (docs/POLICY.md): what is
/// enforced and observed, the proposals the observed candidate would have
/// decided differently, a backtest of a candidate over the recorded
/// history, and policy changes (four-eyes: another admin confirms, shown
/// the backtest).
#[component]
pub fn PolicyPage() -> impl IntoView {
    let data = crate::codec::page(|| (), |_| load_policy());
    view! {
        <section class="policy stack">
            <Title text="Policy"/>
            <h1>"Payment policy"</h1>
            <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match data.await {
                        Ok(page) => view! { <Policy page/> }.into_any(),
                        Err(e) => view! { <LoadError error=console_error(&e)/> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}

#[component]
fn Policy(page: Page) -> impl IntoView {
    let csrf = use_context::<Viewer>().map(|v| v.csrf_token).unwrap_or_default();
    let observations = if page.observations.is_empty() {
        view! { <p class="muted" id="no-observations">"Observe mode has recorded no difference."</p> }.into_any()
    } else {
        let rows = page
            .observations
            .into_iter()
            .map(|o| {
                let proposal = if o.proposal_id.is_empty() {
                    view! { <span class="muted">"refused, not stored"</span> }.into_any()
                } else {
                    view! { <a href=format!("/proposals/{}", o.proposal_id)>{o.proposal_id.clone()}</a> }.into_any()
                };
                view! {
                    <tr class="observation">
                        <td data-label="When"><When at=o.at/></td>
                        <td data-label="Proposal">{proposal}</td>
                        <td data-label="Amount">{o.amount}</td>
                        <td data-label="Change">{o.change}</td>
                        <td data-label="Enforced rules">{o.enforced_rules}</td>
                        <td data-label="Observed rules">{o.observed_rules}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <table id="observations">
                <thead><tr><th>"When"</th><th>"Proposal"</th><th>"Amount"</th><th>"Change"</th>
                    <th>"Enforced rules"</th><th>"Observed rules"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
        .into_any()
    };
    let backtest = (!page.backtest.is_empty()).then(|| {
        let lines = page.backtest.into_iter().map(|l| view! { <li>{l}</li> }).collect_view();
        view! {
            <div class="card" id="backtest-result">
                <h2>"Backtest"</h2>
                <ul class="plain">{lines}</ul>
            </div>
        }
    });
    let pending = page
        .pending
        .into_iter()
        .map(|c| {
            let lines = c.lines.into_iter().map(|l| view! { <li>{l}</li> }).collect_view();
            let backtest = c.backtest.into_iter().map(|l| view! { <li>{l}</li> }).collect_view();
            let confirm = match c.blocker {
                None => view! {
                    <form method="post" action=format!("/admin/changes/{}/confirm", c.id) class="inline">
                        <CsrfField token=csrf.clone()/>
                        <button type="submit" class="primary">"Confirm"</button>
                    </form>
                }
                .into_any(),
                Some(why) => view! { <p class="muted small blocker">{why}</p> }.into_any(),
            };
            view! {
                <li class="card pending-change" data-change=c.id.clone() data-kind="policy">
                    <ul class="change-lines">{lines}</ul>
                    <p class="small"><strong>"What it would have changed (backtest when proposed):"</strong></p>
                    <ul class="plain small change-backtest">{backtest}</ul>
                    <p class="muted small">{format!("Proposed by {} at ", c.proposed_by)}<When at=c.proposed_at/></p>
                    {confirm}
                </li>
            }
        })
        .collect_view();
    view! {
        {page.flash.map(|f| view! { <p class="notice" role="status" id="policy-flash">{f}</p> })}
        <dl class="card">
            <dt>"Enforced"</dt><dd id="policy-enforced">{page.enforced}</dd>
            <dt>"Observed"</dt>
            <dd id="policy-observed">{page.observed.unwrap_or_else(|| "nothing (no candidate is observed)".into())}</dd>
        </dl>
        <section class="stack">
            <h2>"Observed differences"</h2>
            <p class="muted small">"Proposals the observed candidate would have decided differently. Never enforced."</p>
            {observations}
        </section>
        <section class="stack">
            <h2>"Waiting for a second admin"</h2>
            <ul class="plain" id="pending-policy-changes">{pending}</ul>
        </section>
        {backtest}
        <form method="post" action="/admin/policy" class="card stack" id="policy-form">
            <h2>"Try a candidate"</h2>
            <CsrfField token=csrf/>
            <label for="policy-text">"Cedar policy (schema: policies/countersign.cedarschema)"</label>
            <textarea id="policy-text" name="policy" rows="16" spellcheck="false">{page.candidate}</textarea>
            <label for="policy-since">"Backtest over"</label>
            <select id="policy-since" name="since">
                <option value="7d">"7 days"</option>
                <option value="30d">"30 days"</option>
                <option value="90d" selected>"90 days"</option>
            </select>
            <div class="actions">
                <button type="submit" name="action" value="backtest" id="policy-backtest">"Backtest"</button>
                <button type="submit" name="action" value="observe" id="policy-observe">"Propose to observe"</button>
                <button type="submit" name="action" value="enforce" class="primary" id="policy-enforce">
                    "Propose to enforce"
                </button>
            </div>
            <p class="muted small">"A proposed policy applies once another admin confirms it."</p>
        </form>
    }
}
