//! The administration page's form posts: registry changes (four-eyes, see
//! `registry_changes`), passkey confirmations and removals, enrolment codes
//! and webhook redeliveries. Each answers with a redirect to `/admin` and a
//! one-time message, or with a page showing a secret once.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;
use std::collections::BTreeMap;
use tower_sessions::Session;

use super::error::ApiError;
use super::session::CurrentUser;
use crate::decision::registry_changes::{self, AgentForm, ChangeError, PayeeForm, Request, Submitted, UserForm};
use crate::domain::Role;
use crate::state::Shared;

/// Session key of the admin page's one-time message (never a secret: a
/// new agent key is shown in the answer to the form post itself).
pub use crate::console::ADMIN_FLASH;

async fn admin_done(session: &Session, outcome: Result<String, String>) -> Response {
    let message = match outcome {
        Ok(m) => m,
        Err(m) => format!("Not saved: {m}"),
    };
    let _ = session.insert(ADMIN_FLASH, message).await;
    Redirect::to("/admin").into_response()
}

/// Why an admin form was refused.
pub enum NotAdmin {
    SignedOut,
    WrongRole,
}

impl IntoResponse for NotAdmin {
    fn into_response(self) -> Response {
        match self {
            NotAdmin::SignedOut => Redirect::to("/login").into_response(),
            NotAdmin::WrongRole => ApiError::ForbiddenBecause("only admins can change the registry").into_response(),
        }
    }
}

/// The signed-in admin of an admin form post.
pub struct AdminUser(pub CurrentUser);

impl axum::extract::FromRequestParts<Shared> for AdminUser {
    type Rejection = NotAdmin;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &Shared) -> Result<Self, NotAdmin> {
        let user = <CurrentUser as axum::extract::OptionalFromRequestParts<Shared>>::from_request_parts(parts, state)
            .await
            .ok()
            .flatten()
            .ok_or(NotAdmin::SignedOut)?;
        if user.user.roles.contains(&Role::Admin) {
            Ok(AdminUser(user))
        } else {
            Err(NotAdmin::WrongRole)
        }
    }
}

/// A form's text field: trimmed, absent and blank alike.
fn trimmed(value: &Option<String>) -> String {
    value.as_deref().map(str::trim).unwrap_or_default().to_owned()
}

/// A form's optional text field: `None` when absent or blank.
fn given(value: &Option<String>) -> Option<String> {
    Some(trimmed(value)).filter(|v| !v.is_empty())
}

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty()).map(str::to_owned).collect()
}

/// The form's outcome, as the admin page says it.
async fn submitted(session: &Session, outcome: Result<Submitted, ChangeError>) -> Response {
    let message = outcome
        .map(|s| match s {
            Submitted::Applied { message } => message,
            Submitted::Pending { message, .. } => format!("Proposed: {message}"),
        })
        .map_err(|e| e.to_string());
    admin_done(session, message).await
}

/// `POST /admin/users`. Every field may be absent (an unticked box is); the
/// `csrf_token` field is the CSRF layer's.
#[derive(Debug, Deserialize)]
pub struct UserFields {
    username: Option<String>,
    /// Blank: keep an existing user's password.
    password: Option<String>,
    role_viewer: Option<String>,
    role_approver: Option<String>,
    role_admin: Option<String>,
    role_auditor: Option<String>,
    slack_user_id: Option<String>,
    /// `limit_<CUR>`: an approval limit in major units per accepted currency
    /// (blank: none in that currency); other names are ignored.
    #[serde(flatten)]
    rest: BTreeMap<String, String>,
}

impl UserFields {
    fn roles(&self) -> Vec<Role> {
        [
            (Role::Viewer, &self.role_viewer),
            (Role::Approver, &self.role_approver),
            (Role::Admin, &self.role_admin),
            (Role::Auditor, &self.role_auditor),
        ]
        .into_iter()
        .filter(|(_, ticked)| ticked.is_some())
        .map(|(role, _)| role)
        .collect()
    }

    /// The limits, typed in major units, per accepted currency.
    fn limits(&self, state: &Shared) -> Result<BTreeMap<String, u64>, String> {
        let mut limits = BTreeMap::new();
        for currency in state.currencies.allowed() {
            let text = trimmed(&self.rest.get(&format!("limit_{}", currency.code())).cloned());
            if text.is_empty() {
                continue;
            }
            let minor = currency.parse_major(&text).map_err(|e| format!("the {} limit {e}", currency.code()))?;
            limits.insert(currency.code().to_owned(), minor);
        }
        Ok(limits)
    }
}

/// `POST /admin/users` (form): creates or changes a user (four-eyes, see
/// `registry_changes`). A blank password keeps an existing user's.
pub async fn admin_add_user(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Form(form): Form<UserFields>,
) -> Response {
    let limits = match form.limits(&state) {
        Ok(limits) => limits,
        Err(why) => return admin_done(&session, Err(why)).await,
    };
    let request = Request::User(UserForm {
        username: trimmed(&form.username),
        password: form.password.clone().filter(|p| !p.is_empty()),
        roles: form.roles(),
        limits,
        slack_user_id: given(&form.slack_user_id),
    });
    submitted(&session, registry_changes::submit(&state, &admin.admin(), request).await).await
}

/// `POST /admin/slack-links`.
#[derive(Debug, Deserialize)]
pub struct SlackLinkFields {
    username: Option<String>,
    /// Blank: unlink.
    slack_user_id: Option<String>,
}

/// `POST /admin/slack-links` (form): links a user of the admin's tenant to a
/// Slack user id (four-eyes); an empty id unlinks (at once).
pub async fn admin_link_slack(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Form(form): Form<SlackLinkFields>,
) -> Response {
    let request = Request::SlackLink { username: trimmed(&form.username), slack_user_id: given(&form.slack_user_id) };
    submitted(&session, registry_changes::submit(&state, &admin.admin(), request).await).await
}

/// `POST /admin/agents`: lists are separated by spaces or commas.
#[derive(Debug, Deserialize)]
pub struct AgentFields {
    id: Option<String>,
    acts_for: Option<String>,
    source_accounts: Option<String>,
    purposes: Option<String>,
}

/// `POST /admin/agents` (form): proposes the agent (four-eyes). Its new key
/// is shown in this answer, once, and is never stored anywhere but as a hash.
pub async fn admin_add_agent(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Form(form): Form<AgentFields>,
) -> Response {
    let id = trimmed(&form.id);
    let request = Request::Agent(AgentForm {
        id: id.clone(),
        acts_for: trimmed(&form.acts_for),
        source_accounts: words(&trimmed(&form.source_accounts)),
        purposes: words(&trimmed(&form.purposes)),
    });
    match registry_changes::submit(&state, &admin.admin(), request).await {
        Ok(Submitted::Pending { agent_key: Some(key), message, .. }) => one_time_key_page(&id, &key, &message),
        other => submitted(&session, other).await,
    }
}

/// `POST /admin/freezes` and `/admin/freezes/lift`: `agent` blank for the
/// whole tenant.
#[derive(Debug, Deserialize)]
pub struct FreezeFields {
    agent: Option<String>,
    reason: Option<String>,
}

/// `POST /admin/freezes` (form): the kill switch, at once, audited.
pub async fn admin_freeze(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Form(form): Form<FreezeFields>,
) -> Response {
    let request = Request::Freeze { agent: given(&form.agent), reason: trimmed(&form.reason) };
    submitted(&session, registry_changes::submit(&state, &admin.admin(), request).await).await
}

/// `POST /admin/freezes/lift` (form): proposes lifting a freeze; a second
/// admin confirms it like any change that grants.
pub async fn admin_lift_freeze(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Form(form): Form<FreezeFields>,
) -> Response {
    let request = Request::Unfreeze { agent: given(&form.agent) };
    submitted(&session, registry_changes::submit(&state, &admin.admin(), request).await).await
}

/// `POST /admin/payees`: `trusted` is a checkbox.
#[derive(Debug, Deserialize)]
pub struct PayeeFields {
    id: Option<String>,
    legal_name: Option<String>,
    trusted: Option<String>,
}

/// `POST /admin/payees` (form): a new untrusted payee at once; trusting or
/// renaming one waits for a second admin.
pub async fn admin_add_payee(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Form(form): Form<PayeeFields>,
) -> Response {
    let request = Request::Payee(PayeeForm {
        id: trimmed(&form.id),
        legal_name: trimmed(&form.legal_name),
        trusted: form.trusted.is_some(),
    });
    submitted(&session, registry_changes::submit(&state, &admin.admin(), request).await).await
}

/// `POST /admin/payees/account`: another bank account for a payee.
#[derive(Debug, Deserialize)]
pub struct AccountChangeFields {
    /// The payee's current account (its id).
    payee: Option<String>,
    new_account: Option<String>,
}

/// `POST /admin/payees/account` (form): proposes that a new bank account
/// take over from a payee's; it applies once a second admin records the
/// call-back that verified it (`payables::account_change`).
pub async fn admin_change_account(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Form(form): Form<AccountChangeFields>,
) -> Response {
    let request = Request::PayeeAccount { from: trimmed(&form.payee), to: trimmed(&form.new_account) };
    submitted(&session, registry_changes::submit(&state, &admin.admin(), request).await).await
}

/// `POST /admin/changes/{id}/confirm`: nothing but the CSRF token, or, for
/// a change of bank account, the call-back that verified it.
#[derive(Debug, Default, Deserialize)]
pub struct ConfirmFields {
    spoke_to: Option<String>,
    phone: Option<String>,
    number_source: Option<String>,
    note: Option<String>,
    /// A checkbox: the payee confirmed the new account on that call.
    confirmed: Option<String>,
}

/// `POST /admin/changes/{id}/confirm` (form): a second admin confirms (a
/// change of bank account with its call-back).
pub async fn admin_confirm_change(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Path(id): Path<String>,
    Form(form): Form<ConfirmFields>,
) -> Response {
    let outcome = if form.spoke_to.is_some() || form.phone.is_some() {
        let call_back = crate::payables::account_change::CallBack::parse(
            form.spoke_to.as_deref().unwrap_or(""),
            form.phone.as_deref().unwrap_or(""),
            form.number_source.as_deref().unwrap_or(""),
            form.note.as_deref(),
            form.confirmed.is_some(),
        );
        match call_back {
            Ok(call_back) => registry_changes::confirm_account_change(&state, &admin.admin(), &id, &call_back).await,
            Err((field, why)) => return admin_done(&session, Err(format!("{field}: {why}"))).await,
        }
    } else {
        registry_changes::confirm(&state, &admin.admin(), &id).await
    };
    match outcome {
        Ok(registry_changes::Confirmed { message, secret: Some(secret), .. }) => {
            super::pages::one_time_secret(&secret.title, &secret.explanation, &secret.value, &message)
        }
        Ok(registry_changes::Confirmed { message, backtest: Some(report), .. }) => {
            // A policy change: what it would have changed, run again now.
            admin_done(&session, Ok(format!("{message} {}", report.lines().join(" ")))).await
        }
        Ok(confirmed) => admin_done(&session, Ok(confirmed.message)).await,
        Err(e) => admin_done(&session, Err(e.to_string())).await,
    }
}

/// `POST /admin/passkeys/{id}/confirm` (form): an admin lets a new passkey
/// of someone else approve before its cool-off ends (`passkeys::admin`).
pub async fn admin_confirm_passkey(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Path(id): Path<String>,
) -> Response {
    let outcome = crate::people::passkeys::admin::confirm(&state, &admin.admin(), &id, state.now())
        .await
        .map(|p| format!("Passkey “{}” confirmed: it can approve payments now.", p.name))
        .map_err(|e| e.to_string());
    admin_done(&session, outcome).await
}

/// `POST /admin/passkeys/{id}/remove` (form): proposes removing someone's
/// passkey, which a second admin confirms.
pub async fn admin_remove_passkey(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Path(id): Path<String>,
) -> Response {
    let request = Request::PasskeyRemoval { passkey_id: id };
    submitted(&session, registry_changes::submit(&state, &admin.admin(), request).await).await
}

/// `POST /admin/enrolment-codes`: the user to issue a code for.
#[derive(Debug, Deserialize)]
pub struct EnrolmentFields {
    username: Option<String>,
}

/// `POST /admin/enrolment-codes` (form): proposes a one-time passkey
/// enrolment code for a user, which a second admin confirms (and is shown).
pub async fn admin_propose_enrolment(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Form(form): Form<EnrolmentFields>,
) -> Response {
    let request = Request::PasskeyEnrolment { username: trimmed(&form.username) };
    submitted(&session, registry_changes::submit(&state, &admin.admin(), request).await).await
}

/// `POST /admin/changes/{id}/reject`.
#[derive(Debug, Deserialize)]
pub struct RejectFields {
    note: Option<String>,
}

/// `POST /admin/changes/{id}/reject` (form, optional `note`).
pub async fn admin_reject_change(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Path(id): Path<String>,
    Form(form): Form<RejectFields>,
) -> Response {
    let note = trimmed(&form.note);
    let outcome = registry_changes::reject(&state, &admin.admin(), &id, Some(&note)).await.map_err(|e| e.to_string());
    admin_done(&session, outcome).await
}

/// `POST /admin/webhook-deliveries/{id}/redeliver` (form): sends the
/// proposal of a logged webhook attempt again, as a new event with its
/// current state (`webhooks::redeliver`); the outcome is the page's message.
pub async fn admin_redeliver_webhook(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Path(id): Path<String>,
) -> Response {
    let outcome = match crate::notify::webhooks::redeliver(&state.db, &admin.admin(), &id, state.now()).await {
        Ok(queued) => Ok(queued.message()),
        Err(e) => {
            if let crate::notify::webhooks::RedeliverError::Store(cause) = &e {
                tracing::error!(error = %cause, "a webhook redelivery could not be queued");
            }
            Err(e.to_string())
        }
    };
    admin_done(&session, outcome).await
}

/// The answer to a new agent's form: its key, shown this once. Not stored
/// in the session or anywhere else; `no-store` so no cache keeps it.
fn one_time_key_page(agent_id: &str, key: &str, message: &str) -> Response {
    super::pages::one_time_secret(
        &format!("Agent {agent_id}: its key"),
        "Copy the bearer key now: it is shown only this once and cannot be recovered.",
        key,
        message,
    )
}

/// `POST /admin/invoices/import`: an accounting export pasted as CSV.
#[derive(Debug, Deserialize)]
pub struct InvoiceImportFields {
    csv: Option<String>,
}

/// `POST /admin/invoices/import` (form): imports the pasted CSV, all or
/// nothing; the page says what was imported or every bad row
/// (`payables::import`; larger files go through the API or the CLI).
pub async fn admin_import_invoices(
    State(state): State<Shared>,
    session: Session,
    AdminUser(admin): AdminUser,
    Form(form): Form<InvoiceImportFields>,
) -> Response {
    use crate::payables::import::{self, ImportError};
    let actor = format!("user:{}", admin.user.id);
    let csv = form.csv.unwrap_or_default();
    let outcome = match import::import(&state, &admin.user.tenant_id, &actor, csv.as_bytes(), state.now()).await {
        Ok(r) => Ok(format!("Invoices imported: {} new, {} updated, {} unchanged.", r.created, r.updated, r.unchanged)),
        Err(ImportError::Rows(rows)) => Err(format!(
            "nothing was imported; {}",
            rows.iter()
                .map(|r| match &r.column {
                    Some(c) => format!("line {} ({c}): {}", r.line, r.message),
                    None => format!("line {}: {}", r.line, r.message),
                })
                .collect::<Vec<_>>()
                .join("; ")
        )),
        Err(e) => Err(e.to_string()),
    };
    admin_done(&session, outcome).await
}
