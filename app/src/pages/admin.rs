use leptos::prelude::*;

use crate::api::{console_error, load_admin};
use crate::components::{CsrfField, LoadError};
use crate::views::{AdminData, Viewer};

/// Admin: users, agents and payees of the admin's tenant; create each.
#[component]
pub fn AdminPage() -> impl IntoView {
    let data = Resource::new(|| (), |_| load_admin());
    view! {
        <section class="admin">
            <h1>"Administration"</h1>
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
        .into_iter()
        .map(|u| {
            view! {
                <tr><td>{u.username}</td><td>{u.roles.join(", ")}</td><td>{u.limits.join(", ")}</td>
                <td>{u.slack_user_id.unwrap_or_default()}</td></tr>
            }
        })
        .collect_view();
    let agents = admin
        .agents
        .into_iter()
        .map(|a| {
            view! {
                <tr><td>{a.id}</td><td>{a.acts_for}</td><td>{a.source_accounts.join(", ")}</td><td>{a.purposes.join(", ")}</td></tr>
            }
        })
        .collect_view();
    let payees = admin
        .payees
        .into_iter()
        .map(|p| {
            view! { <tr><td>{p.legal_name}</td><td>{p.masked}</td><td>{if p.trusted { "yes" } else { "no" }}</td></tr> }
        })
        .collect_view();
    view! {
        {admin.flash.map(|f| view! { <p class="notice" role="status">{f}</p> })}
        {admin.new_agent_key.map(|(id, key)| view! {
            <div class="notice notice-ok" role="status">
                <p>{format!("Agent {id} created. Its bearer key is shown only this once:")}</p>
                <code class="secret" id="new-agent-key">{key}</code>
            </div>
        })}
        <div class="card">
            <h2>"Users"</h2>
            <table class="list"><thead><tr><th>"Username"</th><th>"Roles"</th><th>"Approval limits"</th><th>"Slack"</th></tr></thead><tbody>{users}</tbody></table>
            <form method="post" action="/admin/users" class="inline-form">
                <CsrfField token=csrf.clone()/>
                <input name="username" placeholder="username" required/>
                <input name="password" type="password" placeholder="password (min. 8)" required minlength="8"/>
                <label><input type="checkbox" name="role_viewer" value="on"/>" viewer"</label>
                <label><input type="checkbox" name="role_approver" value="on"/>" approver"</label>
                <label><input type="checkbox" name="role_admin" value="on"/>" admin"</label>
                <input name="limits" placeholder="limits, e.g. USD=500000 EUR=500000"/>
                <input name="slack_user_id" placeholder="Slack user id"/>
                <button type="submit">"Add user"</button>
            </form>
            <form method="post" action="/admin/slack-links" class="inline-form" aria-label="Link a Slack user">
                <CsrfField token=csrf.clone()/>
                <input name="username" placeholder="username" required/>
                <input name="slack_user_id" placeholder="Slack user id (empty: unlink)"/>
                <button type="submit">"Link Slack user"</button>
            </form>
        </div>
        <div class="card">
            <h2>"Agents"</h2>
            <table class="list"><thead><tr><th>"Agent"</th><th>"Acts for"</th><th>"Source accounts"</th><th>"Purposes"</th></tr></thead><tbody>{agents}</tbody></table>
            <form method="post" action="/admin/agents" class="inline-form">
                <CsrfField token=csrf.clone()/>
                <input name="id" placeholder="agent id" required/>
                <input name="acts_for" placeholder="acts for (username)" required/>
                <input name="source_accounts" placeholder="acct_… (space separated)" required/>
                <input name="purposes" placeholder="purposes, e.g. vendor refund" required/>
                <button type="submit">"Add agent"</button>
            </form>
        </div>
        <div class="card">
            <h2>"Payees"</h2>
            <table class="list"><thead><tr><th>"Legal name"</th><th>"Account"</th><th>"Trusted"</th></tr></thead><tbody>{payees}</tbody></table>
            <form method="post" action="/admin/payees" class="inline-form">
                <CsrfField token=csrf/>
                <input name="id" placeholder="acct_… / card_… / ba_…" required/>
                <input name="legal_name" placeholder="legal name" required/>
                <label><input type="checkbox" name="trusted" value="on"/>" trusted"</label>
                <button type="submit">"Add payee"</button>
            </form>
        </div>
    }
}
