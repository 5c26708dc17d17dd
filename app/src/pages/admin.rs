use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::{console_error, load_admin};
use crate::components::{CsrfField, LoadError, When};
use crate::pages::admin_user::UserForm;
use crate::views::{AdminData, DeliveryRow, FreezeRow, PasskeyAdminRow, PendingChangeRow, Viewer, WebhookRow};
use leptos_router::hooks::use_query_map;

/// Admin: users, agents (and their webhooks' delivery logs) and payees of
/// the admin's tenant; create each.
#[component]
pub fn AdminPage() -> impl IntoView {
    let data = crate::codec::page(|| (), |_| load_admin());
    view! {
        <section class="admin">
            <Title text="Administration"/>
            <h1>"Administration"</h1>
            <p><a href="/admin/loop">"Human loop: how fast people decide, and what expires"</a></p>
            <p><a href="/admin/policy" id="policy-link">"Payment policy: what decides, observe mode, backtests and changes"</a></p>
            <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match data.await {
                        Ok(admin) => view! { <Admin admin/> }.into_any(),
                        Err(e) => view! { <LoadError error=console_error(&e)/> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}

#[component]
fn Admin(admin: AdminData) -> impl IntoView {
    let csrf = use_context::<Viewer>().map(|v| v.csrf_token).unwrap_or_default();
    let users = admin
        .users
        .clone()
        .into_iter()
        .map(|u| {
            let edit = format!("/admin?edit={}#user-form", u.username);
            let label = format!("Edit {}", u.username);
            view! {
                <tr data-user=u.username.clone()><td data-label="Username">{u.username.clone()}" "
                    <a href=edit class="edit-user" aria-label=label rel="external">"Edit"</a>" "
                    <a href=format!("/admin/users/{}", u.username.replace('+', "%2B")) class="user-page" rel="external"
                        aria-label=format!("{}'s page: sessions, history, deactivate", u.username)>"Page"</a></td>
                <td data-label="Roles">{u.roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", ")}</td>
                <td data-label="Approval limits">{u.limits.join(", ")}</td>
                <td data-label="Slack">{u.slack_user_id.unwrap_or_default()}</td></tr>
            }
        })
        .collect_view();
    let agent_ids: Vec<String> = admin.agents.iter().map(|a| a.id.clone()).collect();
    let agents = admin
        .agents
        .into_iter()
        .map(|a| {
            view! {
                <tr><td data-label="Agent">{a.id}</td><td data-label="Acts for">{a.acts_for}</td>
                <td data-label="Source accounts">{a.source_accounts.join(", ")}</td>
                <td data-label="Purposes">{a.purposes.join(", ")}</td>
                <td data-label="Key shown to">{a.key_holder.unwrap_or_else(|| "operator".into())}</td></tr>
            }
        })
        .collect_view();
    let payees = admin
        .payees
        .into_iter()
        .map(|p| {
            view! {
                <tr><td data-label="Legal name">{p.legal_name}</td><td data-label="Account" class="payee-account">{p.masked}</td>
                <td data-label="Trusted">{if p.trusted { "yes" } else { "no" }}</td></tr>
            }
        })
        .collect_view();
    let editing = use_query_map().with_untracked(|q| q.get("edit"));
    let editing = editing.and_then(|name| admin.users.iter().find(|u| u.username == name).cloned());
    view! {
        {admin.flash.map(|f| view! { <p class="notice" role="status" id="admin-flash">{f}</p> })}
        <KillSwitch freezes=admin.freezes agents=agent_ids csrf=csrf.clone()/>
        <PendingChanges changes=admin.pending_changes csrf=csrf.clone()/>
        <div class="card">
            <h2>"Users"</h2>
            <table class="list"><thead><tr><th>"Username"</th><th>"Roles"</th><th>"Approval limits"</th><th>"Slack"</th></tr></thead><tbody>{users}</tbody></table>
            <UserForm editing currencies=admin.currencies.clone() csrf=csrf.clone()/>
            <form method="post" action="/admin/slack-links" class="inline-form" aria-label="Link a Slack user">
                <CsrfField token=csrf.clone()/>
                <input name="username" placeholder="username" required aria-label="Username to link"/>
                <input name="slack_user_id" placeholder="Slack user id (empty: unlink)" aria-label="Slack user id to link"/>
                <button type="submit">"Link Slack user"</button>
            </form>
        </div>
        <div class="card">
            <h2>"Agents"</h2>
            <table class="list"><thead><tr><th>"Agent"</th><th>"Acts for"</th><th>"Source accounts"</th><th>"Purposes"</th><th>"Key given to"</th></tr></thead><tbody>{agents}</tbody></table>
            <p class="muted small">
                "A new agent's key is shown once, to you, when you add it; it works once a second admin confirms. "
                "Whoever was given an agent's key may not approve its payments, like the person it acts for."
            </p>
            <form method="post" action="/admin/agent-reassignments" class="inline-form" aria-label="Reassign an agent">
                <CsrfField token=csrf.clone()/>
                <input name="agent" placeholder="agent id" required aria-label="Agent to reassign"/>
                <input name="acts_for" placeholder="now acts for (username)" required aria-label="Username it acts for from now on"/>
                <button type="submit">"Reassign (its key stays)"</button>
            </form>
            <form method="post" action="/admin/scim-tokens" class="inline-form" aria-label="Issue a SCIM token">
                <CsrfField token=csrf.clone()/>
                <input name="label" placeholder="identity provider (e.g. Okta)" required aria-label="SCIM token label"/>
                <button type="submit">"Issue a SCIM token"</button>
            </form>
            <form method="post" action="/admin/agents" class="inline-form" aria-label="Add an agent">
                <CsrfField token=csrf.clone()/>
                <input name="id" placeholder="agent id" required aria-label="Agent id"/>
                <input name="acts_for" placeholder="acts for (username)" required aria-label="Acts for"/>
                <input name="source_accounts" placeholder="acct_… (space separated)" required aria-label="Source accounts"/>
                <input name="purposes" placeholder="purposes, e.g. vendor refund" required aria-label="Purposes"/>
                <button type="submit">"Add agent"</button>
            </form>
        </div>
        <Webhooks webhooks=admin.webhooks csrf=csrf.clone()/>
        <div class="card">
            <h2>"Payees"</h2>
            <table class="list"><thead><tr><th>"Legal name"</th><th>"Account"</th><th>"Trusted"</th></tr></thead><tbody>{payees}</tbody></table>
            <p class="muted small">"Trusting or renaming a payee waits for a second admin."</p>
            <form method="post" action="/admin/payees" class="inline-form" aria-label="Add a payee">
                <CsrfField token=csrf.clone()/>
                <input name="id" placeholder="acct_… / card_… / ba_…" required aria-label="Payee account"/>
                <input name="legal_name" placeholder="legal name" required aria-label="Legal name"/>
                <label><input type="checkbox" name="trusted" value="on"/>" trusted"</label>
                <button type="submit">"Save payee"</button>
            </form>
            <p class="muted small">
                "A new bank account for a payee applies only when a second admin has called the payee back and recorded the call; "
                "the first payment to it then needs the stricter approval."
            </p>
            <form method="post" action="/admin/payees/account" class="inline-form" aria-label="Change a payee's bank account">
                <CsrfField token=csrf.clone()/>
                <input name="payee" placeholder="current account (payee id)" required aria-label="Current account"/>
                <input name="new_account" placeholder="new account (acct_… / ba_…)" required aria-label="New account"/>
                <button type="submit">"Propose new bank account"</button>
            </form>
        </div>
        <div class="card">
            <h2>"Invoices"</h2>
            <p class="muted small">
                "Paste an accounting export (CSV with a header: number, vendor, account, amount, currency, due_date, status; "
                "optionally amount_paid, purpose, note, memo). All or nothing: any bad row is named and nothing is imported. "
                "Larger files: the API or the CLI."
            </p>
            <form method="post" action="/admin/invoices/import" aria-label="Import invoices">
                <CsrfField token=csrf.clone()/>
                <textarea name="csv" rows="6" required aria-label="Invoices as CSV" class="csv-input"></textarea>
                <button type="submit">"Import invoices"</button>
            </form>
        </div>
        <Passkeys passkeys=admin.passkeys csrf=csrf/>
    }
}

/// Registry changes waiting for a second admin, with Confirm (when this
/// admin may) and Reject (Withdraw for the viewer's own).
#[component]
fn PendingChanges(changes: Vec<PendingChangeRow>, csrf: String) -> impl IntoView {
    let me = use_context::<Viewer>().map(|v| v.username).unwrap_or_default();
    if changes.is_empty() {
        return view! { <p class="muted" id="no-pending-changes">"No registry change waits for confirmation."</p> }
            .into_any();
    }
    let items = changes
        .into_iter()
        .map(|c| {
            // Your own change is withdrawn, someone else's rejected.
            let (verb, why) = if c.proposed_by == me { ("Withdraw", "Why withdraw") } else { ("Reject", "Why reject") };
            let lines = c.lines.into_iter().map(|l| view! { <li>{l}</li> }).collect_view();
            let backtest = (!c.backtest.is_empty()).then(|| {
                let rows = c.backtest.into_iter().map(|l| view! { <li>{l}</li> }).collect_view();
                view! {
                    <div class="change-backtest">
                        <p class="small"><strong>"What it would have changed (backtest when proposed):"</strong></p>
                        <ul class="plain small">{rows}</ul>
                    </div>
                }
            });
            let confirm = match c.blocker {
                // A change of bank account is confirmed with the call-back
                // that verified it, recorded by the confirming admin.
                None if c.kind == "payee_account" => view! {
                    <form method="post" action=format!("/admin/changes/{}/confirm", c.id) class="call-back" aria-label="Record the call-back">
                        <CsrfField token=csrf.clone()/>
                        <p class="small">"Call the payee back at a number you already had (the vendor file, the contract), never one that came with the request."</p>
                        <input name="spoke_to" placeholder="whom you spoke to (name, role)" required aria-label="Whom you spoke to"/>
                        <input name="phone" placeholder="the number you called" required aria-label="The number you called" inputmode="tel"/>
                        <input name="number_source" placeholder="where the number came from" required aria-label="Where the number came from"/>
                        <input name="note" placeholder="note (optional)" aria-label="Note"/>
                        <label><input type="checkbox" name="confirmed" value="on" required/>" They confirmed the new account on that call"</label>
                        <button type="submit" class="primary">"Confirm with this call-back"</button>
                    </form>
                }
                .into_any(),
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
                <li class="card pending-change" data-change=c.id.clone() data-kind=c.kind>
                    <ul class="change-lines">{lines}</ul>
                    {backtest}
                    <p class="muted small">{format!("Proposed by {} at ", c.proposed_by)}<When at=c.proposed_at/></p>
                    <div class="actions">
                        {confirm}
                        <form method="post" action=format!("/admin/changes/{}/reject", c.id) class="inline">
                            <CsrfField token=csrf.clone()/>
                            <input name="note" placeholder="why (optional)" aria-label=why/>
                            <button type="submit" class="danger">{verb}</button>
                        </form>
                    </div>
                </li>
            }
        })
        .collect_view();
    view! {
        <section id="pending-changes">
            <h2>"Waiting for a second admin"</h2>
            <ul class="plain">{items}</ul>
        </section>
    }
    .into_any()
}

/// The kill switch: freeze the tenant's commits or one agent's at once;
/// lifting a freeze waits for a second admin (docs/SECURITY.md).
#[component]
fn KillSwitch(freezes: Vec<FreezeRow>, agents: Vec<String>, csrf: String) -> impl IntoView {
    let frozen = !freezes.is_empty();
    let rows = freezes
        .into_iter()
        .map(|f| {
            let lift = f.liftable.then(|| {
                view! {
                    <form method="post" action="/admin/freezes/lift" class="inline">
                        <CsrfField token=csrf.clone()/>
                        <input type="hidden" name="agent" value=f.agent.clone().unwrap_or_default()/>
                        <button type="submit" aria-label=format!("Lift the freeze of {}", f.what)>"Lift…"</button>
                    </form>
                }
            });
            view! {
                <li class="freeze">
                    <strong>{format!("Frozen: {}", f.what)}</strong>
                    " "<span class="muted small">{format!("by {} at {}: {}", f.frozen_by, f.at, f.reason)}</span>
                    " "{lift}
                </li>
            }
        })
        .collect_view();
    let options =
        agents.into_iter().map(|id| view! { <option value=id.clone()>{format!("agent {id}")}</option> }).collect_view();
    view! {
        <div class="card" id="kill-switch" class:frozen=frozen>
            <h2>"Kill switch"</h2>
            <ul class="plain">{rows}</ul>
            <p class="muted small">
                "Freezing refuses commits before the rail is called, on every instance, at once. "
                "Lifting a freeze waits for a second admin."
            </p>
            <form method="post" action="/admin/freezes" class="inline-form" aria-label="Freeze commits">
                <CsrfField token=csrf/>
                <select name="agent" aria-label="What to freeze">
                    <option value="">"every commit of this tenant"</option>
                    {options}
                </select>
                <input name="reason" placeholder="why" required maxlength="500" aria-label="Reason"/>
                <button type="submit" class="danger" id="freeze">"Freeze commits"</button>
            </form>
        </div>
    }
}

/// The tenant's passkeys: confirm a new one early (not your own, not one
/// enrolled with a code you saw), propose removing one, and propose an
/// enrolment code (both confirmed by a second admin).
#[component]
fn Passkeys(passkeys: Vec<PasskeyAdminRow>, csrf: String) -> impl IntoView {
    let rows = passkeys
        .into_iter()
        .map(|p| {
            let state = match (&p.usable_from, &p.confirmed_by) {
                (Some(from), _) => view! { "cools off until " <When at=from.clone()/> }.into_any(),
                (None, Some(by)) => format!("confirmed by {by}").into_any(),
                (None, None) => "can approve".into_any(),
            };
            let confirm = match (&p.usable_from, p.blocker) {
                (Some(_), None) => view! {
                    <form method="post" action=format!("/admin/passkeys/{}/confirm", p.id) class="inline">
                        <CsrfField token=csrf.clone()/>
                        <button type="submit" class="primary" aria-label=format!("Confirm {}'s passkey {}", p.username, p.name)>"Confirm"</button>
                    </form>
                }
                .into_any(),
                (Some(_), Some(why)) => view! { <span class="muted small blocker">{why}</span> }.into_any(),
                (None, _) => ().into_any(),
            };
            view! {
                <tr data-passkey=p.id.clone()>
                    <td data-label="User">{p.username.clone()}</td>
                    <td data-label="Name">{p.name.clone()}</td>
                    <td data-label="Fingerprint" class="c-id"><code>{p.fingerprint}</code></td>
                    <td data-label="Added"><When at=p.created_at/></td>
                    <td data-label="State">{state}</td>
                    <td>
                        {confirm}
                        <form method="post" action=format!("/admin/passkeys/{}/remove", p.id) class="inline">
                            <CsrfField token=csrf.clone()/>
                            <button type="submit" class="danger" aria-label=format!("Remove {}'s passkey {}", p.username, p.name)>"Remove…"</button>
                        </form>
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="card" id="admin-passkeys">
            <h2>"Passkeys"</h2>
            <p class="muted small">
                "A new passkey can approve payments after its cool-off, or once an admin other than its holder confirms it here. "
                "Removing one, and a one-time code to enrol one without holding one, wait for a second admin."
            </p>
            <table class="list"><thead><tr><th>"User"</th><th>"Name"</th><th>"Fingerprint"</th><th>"Added"</th><th>"State"</th><th>"Action"</th></tr></thead><tbody>{rows}</tbody></table>
            <form method="post" action="/admin/enrolment-codes" class="inline-form" aria-label="Propose an enrolment code">
                <CsrfField token=csrf/>
                <input name="username" placeholder="username" required aria-label="Username to enrol"/>
                <button type="submit">"Propose an enrolment code"</button>
            </form>
        </div>
    }
}

/// Each agent's webhook: where it goes (no query string, no secret), how its
/// stream fares, and its latest attempts, each with Redeliver.
#[component]
fn Webhooks(webhooks: Vec<WebhookRow>, csrf: String) -> impl IntoView {
    let body = if webhooks.is_empty() {
        view! {
            <p class="muted" id="no-webhooks">
                "No agent has a webhook. An operator sets one with "<code>"countersign agent webhook set"</code>"."
            </p>
        }
        .into_any()
    } else {
        webhooks.into_iter().map(|w| view! { <Webhook webhook=w csrf=csrf.clone()/> }).collect_view().into_any()
    };
    view! {
        <div class="card" id="webhooks">
            <h2>"Webhooks"</h2>
            <p class="muted small">
                "Each change to an agent's proposals is sent to its webhook, in order, retried with backoff. "
                "Redeliver sends that proposal again as a new event carrying its current state, "
                "for instance after an attempt was abandoned; the agent's other events are not held up."
            </p>
            {body}
        </div>
    }
}

#[component]
fn Webhook(webhook: WebhookRow, csrf: String) -> impl IntoView {
    let w = webhook;
    let plural = |n: i64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let stream = match w.next_attempt_at {
        Some(at) => view! {
            {format!("{} at the current event; next attempt ", plural(w.failed_attempts, "failed attempt", "failed attempts"))}
            <When at=at/>
            "."
        }
        .into_any(),
        None => "No failed attempt at the current event.".into_any(),
    };
    let queued = (w.queued_redeliveries > 0)
        .then(|| format!(" {} queued.", plural(w.queued_redeliveries, "redelivery", "redeliveries")));
    let label = format!("Latest deliveries to agent {}'s webhook", w.agent_id);
    let log = if w.deliveries.is_empty() {
        view! { <p class="muted small">"Nothing sent yet."</p> }.into_any()
    } else {
        let rows = w.deliveries.into_iter().map(|d| view! { <Delivery delivery=d csrf=csrf.clone()/> }).collect_view();
        view! {
            <table class="list webhook-log" aria-label=label>
                <thead><tr><th>"When"</th><th>"Proposal"</th><th>"Event"</th><th>"Outcome"</th><th>"HTTP"</th><th>"Error"</th><th>"Action"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
        .into_any()
    };
    view! {
        <section class="webhook" data-agent=w.agent_id.clone()>
            <h3>{format!("Agent {}", w.agent_id)}</h3>
            <p class="webhook-target">"Sends to "<code>{w.target}</code></p>
            <p class="webhook-state" data-failed-attempts=w.failed_attempts.to_string()>{stream}{queued}</p>
            {log}
        </section>
    }
}

/// One logged attempt and its Redeliver button.
#[component]
fn Delivery(delivery: DeliveryRow, csrf: String) -> impl IntoView {
    let d = delivery;
    let status = d.http_status.map_or_else(|| "none".to_owned(), |s| s.to_string());
    let kind = if d.redelivery { "redelivery, attempt" } else { "attempt" };
    view! {
        <tr data-delivery=d.id.clone() data-outcome=d.outcome.clone()>
            <td data-label="When"><When at=d.at/></td>
            <td data-label="Proposal" class="c-id"><a href=format!("/proposals/{}", d.proposal_id)>{d.proposal_id.clone()}</a></td>
            <td data-label="Event" class="c-id"><code>{d.event_id}</code></td>
            <td data-label="Outcome">
                <span class=format!("badge badge-{}", d.outcome)>{d.outcome.clone()}</span>
                <span class="muted small">{format!(" {kind} {}", d.attempt)}</span>
            </td>
            <td data-label="HTTP">{status}</td>
            // On a phone the label shows only when there is an error.
            <td data-label=d.error.as_ref().map(|_| "Error") class="c-id">{d.error.clone().unwrap_or_default()}</td>
            <td>
                <form method="post" action=format!("/admin/webhook-deliveries/{}/redeliver", d.id) class="inline">
                    <CsrfField token=csrf/>
                    <button type="submit" aria-label=format!("Redeliver proposal {}", d.proposal_id)>"Redeliver"</button>
                </form>
            </td>
        </tr>
    }
}
