//! People on the console (docs/PEOPLE.md): a user's page for the tenant's
//! admins (`/admin/users/{username}`: status, own and identity-provider
//! roles, groups, active sessions, history) with Deactivate, Reactivate and
//! Sign out everywhere; everyone's own sessions (`/account/sessions`) with
//! Sign out everywhere; and the admin forms for SCIM tokens (four-eyes,
//! shown once) and for reassigning an agent's `acts_for`. Standalone pages
//! (`pages.rs`): server-rendered, no script; forms carry the CSRF token.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use leptos::prelude::*;
use serde::Deserialize;
use serde_json::json;
use tower_sessions::Session;

use super::admin::{AdminUser, ADMIN_FLASH};
use super::error::ApiError;
use super::session::CurrentUser;
use crate::decision::registry_changes::{self, Request, Submitted};
use crate::people::lifecycle::{self, By, Via};
use crate::state::Shared;
use crate::store;

/// The user's page. Usernames are letters, digits and `_ . @ + -`: only
/// `+` needs escaping in a path.
fn user_href(username: &str) -> String {
    format!("/admin/users/{}", username.replace('+', "%2B"))
}

async fn flash(session: &Session, message: String) {
    let _ = session.insert(ADMIN_FLASH, message).await;
}

/// A form that posts to `action` with the CSRF token and one button.
fn button_form(
    action: String,
    csrf: &str,
    id: &'static str,
    label: &'static str,
    class: &'static str,
) -> impl IntoView {
    view! {
        <form method="post" action=action class="inline-form">
            <input type="hidden" name="csrf_token" value=csrf.to_owned() />
            <button type="submit" id=id class=class>{label}</button>
        </form>
    }
}

fn sessions_table(sessions: &[store::people::SessionInfo]) -> impl IntoView {
    if sessions.is_empty() {
        return view! { <p class="muted" id="no-sessions">"No active session."</p> }.into_any();
    }
    let rows = sessions
        .iter()
        .map(|s| {
            let data: serde_json::Value = serde_json::from_str(&s.data).unwrap_or_default();
            let amr = data["console"]["amr"].as_str().unwrap_or("?").to_owned();
            let current = if s.current { " (this one)" } else { "" };
            view! {
                <tr data-session=s.tag.clone()>
                    <td data-label="Session">{format!("{}{current}", s.tag)}</td>
                    <td data-label="Signed in">{store::ts(s.created_at)}</td>
                    <td data-label="How">{amr}</td>
                    <td data-label="Ends by">{store::ts(s.expires_at)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="list" id="sessions">
            <thead><tr><th>"Session"</th><th>"Signed in"</th><th>"How"</th><th>"Ends by"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
    .into_any()
}

/// `GET /admin/users/{username}`: the user's page.
pub async fn user_page(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Path(username): Path<String>,
) -> Result<Response, ApiError> {
    let user = {
        let mut conn = state.db.reader().await?;
        store::directory::user_by_username(&mut conn, &username).await?
    };
    let Some(user) = user.filter(|u| u.tenant_id == admin.user.tenant_id) else { return Err(ApiError::NotFound) };
    let now = state.now();
    let sessions = store::people::sessions_of(&state.db.read, &user.id, None, now).await?;
    let history = store::people::history_of(&state.db.read, &user.tenant_id, &user.id, 50).await?;
    let groups = {
        let mut conn = state.db.reader().await?;
        store::people::group_names_of(&mut conn, &user.id).await?
    };
    let message = session.remove::<String>(ADMIN_FLASH).await.ok().flatten();
    let csrf = admin.session.csrf_token.clone();
    let status = match (user.active, user.deactivated_at, user.deleted_at) {
        (true, _, _) => "Active".to_owned(),
        (false, _, Some(at)) => format!("Deleted by the identity provider at {}", store::ts(at)),
        (false, Some(at), None) => format!("Deactivated at {}", store::ts(at)),
        (false, None, None) => "Deactivated".to_owned(),
    };
    let own: Vec<&str> = user.roles.iter().filter(|r| !user.idp_roles.contains(r)).map(|r| r.as_str()).collect();
    let idp: Vec<&str> = user.idp_roles.iter().map(|r| r.as_str()).collect();
    let limits: Vec<String> = user.approval_limits_minor.iter().map(|(c, m)| format!("{c} {m}")).collect();
    let href = user_href(&user.username);
    let actions = if user.active {
        view! {
            {button_form(format!("{href}/deactivate"), &csrf, "deactivate", "Deactivate", "danger")}
            {button_form(format!("{href}/sessions/end"), &csrf, "end-sessions", "Sign out everywhere", "")}
        }
        .into_any()
    } else if user.deleted_at.is_none() {
        button_form(format!("{href}/reactivate"), &csrf, "reactivate", "Reactivate", "").into_any()
    } else {
        ().into_any()
    };
    let history_rows = history
        .into_iter()
        .map(|h| {
            view! {
                <tr><td data-label="When">{h.at}</td><td data-label="What">{h.action}</td>
                    <td data-label="By">{h.actor}</td><td data-label="Details"><code>{h.data}</code></td></tr>
            }
        })
        .collect_view();
    let title = format!("User {}", user.username);
    let body = view! {
        <h1>{title.clone()}</h1>
        {message.map(|m| view! { <p class="notice" role="status" id="flash">{m}</p> })}
        <dl class="facts">
            <dt>"Status"</dt><dd id="user-status">{status}</dd>
            <dt>"Roles given here"</dt><dd id="own-roles">{if own.is_empty() { "none".to_owned() } else { own.join(", ") }}</dd>
            <dt>"Roles from the identity provider"</dt><dd id="idp-roles">{if idp.is_empty() { "none".to_owned() } else { idp.join(", ") }}</dd>
            <dt>"Identity provider groups"</dt><dd id="idp-groups">{if groups.is_empty() { "none".to_owned() } else { groups.join(", ") }}</dd>
            <dt>"Approval groups from them"</dt><dd>{user.idp_approval_groups.join(", ")}</dd>
            <dt>"Approval limits (minor units)"</dt><dd id="limits">{if limits.is_empty() { "none".to_owned() } else { limits.join(", ") }}</dd>
        </dl>
        <div class="actions">{actions}</div>
        <h2>"Active sessions"</h2>
        {sessions_table(&sessions)}
        <h2>"History"</h2>
        <table class="list" id="history">
            <thead><tr><th>"When"</th><th>"What"</th><th>"By"</th><th>"Details"</th></tr></thead>
            <tbody>{history_rows}</tbody>
        </table>
        <p><a href="/admin">"Back to administration"</a></p>
    };
    Ok(super::pages::page(&title, body))
}

/// The admin's tenant's user `username`, or the page says so.
async fn tenant_user(state: &Shared, admin: &CurrentUser, username: &str) -> Result<store::directory::User, String> {
    let mut conn = state.db.reader().await.map_err(|e| e.to_string())?;
    store::directory::user_by_username(&mut conn, username)
        .await
        .map_err(|e| e.to_string())?
        .filter(|u| u.tenant_id == admin.user.tenant_id)
        .ok_or_else(|| format!("there is no user {username} here"))
}

/// `POST /admin/users/{username}/deactivate` (form): offboarding, at once
/// (it only takes authority away).
pub async fn deactivate_form(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Path(username): Path<String>,
) -> Response {
    let outcome = match tenant_user(&state, &admin, &username).await {
        Err(why) => Err(why),
        Ok(user) => {
            let by = By { actor: admin.actor(), via: Via::Console };
            lifecycle::deactivate(&state, &user.tenant_id, &user.id, &by, state.now())
                .await
                .map(|done| {
                    format!(
                        "{} deactivated: {} session(s) ended, {} passkey(s) and {} push device(s) removed, {} \
                         delegation(s) ended, {} approval(s) withdrawn, {} sent back for approval, agents frozen: {}.",
                        done.username,
                        done.sessions_ended,
                        done.passkeys_removed,
                        done.push_devices_removed,
                        done.delegations_ended.len(),
                        done.approvals_withdrawn.len(),
                        done.approvals_lapsed.len(),
                        if done.agents_frozen.is_empty() { "none".to_owned() } else { done.agents_frozen.join(", ") }
                    )
                })
                .map_err(|e| e.to_string())
        }
    };
    flash(&session, outcome.unwrap_or_else(|m| format!("Not done: {m}"))).await;
    Redirect::to(&user_href(&username)).into_response()
}

/// `POST /admin/users/{username}/reactivate` (form): they may sign in
/// again, with nothing deactivation ended.
pub async fn reactivate_form(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Path(username): Path<String>,
) -> Response {
    let outcome = match tenant_user(&state, &admin, &username).await {
        Err(why) => Err(why),
        Ok(user) => {
            let by = By { actor: admin.actor(), via: Via::Console };
            lifecycle::reactivate(&state, &user.tenant_id, &user.id, &by, state.now())
                .await
                .map(|name| {
                    format!(
                        "{name} reactivated. They have no session, passkey, role or limit of their own: give them \
                         what they need (limits wait for a second admin)."
                    )
                })
                .map_err(|e| e.to_string())
        }
    };
    flash(&session, outcome.unwrap_or_else(|m| format!("Not done: {m}"))).await;
    Redirect::to(&user_href(&username)).into_response()
}

/// Ends every session of `user_id`, audited (`session.ended_everywhere`).
async fn end_all(state: &Shared, tenant: &str, user_id: &str, actor: &str) -> Result<u64, ApiError> {
    let mut tx = state.db.begin().await?;
    let ended = store::sessions::delete_of_user(&mut tx, user_id).await?;
    store::audit::append(
        &mut tx,
        &store::audit::AuditEntry {
            tenant_id: Some(tenant.to_owned()),
            actor: actor.to_owned(),
            action: "session.ended_everywhere".into(),
            proposal_id: None,
            request_hash: None,
            data: json!({"user_id": user_id, "sessions_ended": ended}),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(ended)
}

/// `POST /admin/users/{username}/sessions/end` (form).
pub async fn end_sessions_form(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Path(username): Path<String>,
) -> Response {
    let outcome = match tenant_user(&state, &admin, &username).await {
        Err(why) => Err(why),
        Ok(user) => end_all(&state, &user.tenant_id, &user.id, &admin.actor())
            .await
            .map(|n| format!("{username} was signed out everywhere ({n} session(s))."))
            .map_err(|e| e.to_string()),
    };
    flash(&session, outcome.unwrap_or_else(|m| format!("Not done: {m}"))).await;
    Redirect::to(&user_href(&username)).into_response()
}

/// `GET /account/sessions`: one's own active sessions.
pub async fn own_sessions_page(
    State(state): State<Shared>,
    session: Session,
    me: CurrentUser,
) -> Result<Response, ApiError> {
    let current = session.id().map(|id| id.to_string());
    let sessions = store::people::sessions_of(&state.db.read, &me.user.id, current.as_deref(), state.now()).await?;
    let csrf = me.session.csrf_token.clone();
    let body = view! {
        <h1>"Your sessions"</h1>
        <p>"Everywhere you are signed in now. Signing out everywhere ends them all, this one too."</p>
        {sessions_table(&sessions)}
        {button_form("/account/sessions/end".to_owned(), &csrf, "end-my-sessions", "Sign out everywhere", "danger")}
        <p><a href="/account">"Back to your account"</a></p>
    };
    Ok(super::pages::page("Your sessions", body))
}

/// `POST /account/sessions/end` (form): signs oneself out everywhere.
pub async fn end_own_sessions(State(state): State<Shared>, me: CurrentUser) -> Result<Response, ApiError> {
    end_all(&state, &me.user.tenant_id, &me.user.id, &me.actor()).await?;
    Ok(Redirect::to("/login").into_response())
}

/// `POST /admin/scim-tokens`.
#[derive(Debug, Deserialize)]
pub struct ScimTokenFields {
    label: Option<String>,
}

/// `POST /admin/scim-tokens` (form): proposes a SCIM token for the tenant's
/// identity provider; it is shown in this answer, once, and works when a
/// second admin confirms.
pub async fn propose_scim_token(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Form(form): Form<ScimTokenFields>,
) -> Response {
    let label = form.label.unwrap_or_default();
    match registry_changes::submit(&state, &admin.admin(), Request::ScimToken { label: label.clone() }).await {
        Ok(Submitted::Pending { agent_key: Some(token), message, .. }) => super::pages::one_time_secret(
            &format!("SCIM token for {}", label.trim()),
            "Copy this token into your identity provider's provisioning settings now (base URL: your console's \
             address followed by /scim/v2): it is shown only this once and cannot be recovered.",
            &token,
            &message,
        ),
        other => {
            let message = match other {
                Ok(Submitted::Applied { message }) | Ok(Submitted::Pending { message, .. }) => message,
                Err(e) => format!("Not saved: {e}"),
            };
            flash(&session, message).await;
            Redirect::to("/admin").into_response()
        }
    }
}

/// `POST /admin/scim-tokens/{id}/revoke` (form): at once.
pub async fn revoke_scim_token(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Path(id): Path<String>,
) -> Response {
    let message = match registry_changes::submit(&state, &admin.admin(), Request::RevokeScimToken { id }).await {
        Ok(Submitted::Applied { message } | Submitted::Pending { message, .. }) => message,
        Err(e) => format!("Not saved: {e}"),
    };
    flash(&session, message).await;
    Redirect::to("/admin").into_response()
}

/// `POST /admin/agent-reassignments`.
#[derive(Debug, Deserialize)]
pub struct ReassignFields {
    agent: Option<String>,
    acts_for: Option<String>,
}

/// `POST /admin/agent-reassignments` (form): proposes that the agent acts
/// for someone else (four-eyes); its key stays.
pub async fn reassign_agent(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Form(form): Form<ReassignFields>,
) -> Response {
    let agent = form.agent.unwrap_or_default().trim().to_owned();
    let acts_for = form.acts_for.unwrap_or_default().trim().to_owned();
    let message = match registry_changes::submit(&state, &admin.admin(), Request::Reassign { agent, acts_for }).await {
        Ok(Submitted::Applied { message }) => message,
        Ok(Submitted::Pending { message, .. }) => format!("Proposed: {message}"),
        Err(e) => format!("Not saved: {e}"),
    };
    flash(&session, message).await;
    Redirect::to("/admin").into_response()
}
