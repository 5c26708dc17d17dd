//! The tenant's payment policy for admins (`/api/v1/admin/policy…`,
//! docs/POLICY.md): what is enforced and observed, observe mode's
//! differences, a backtest of a candidate, and four-eyes policy changes
//! whose confirmation answers with the candidate's backtest. Console
//! session and CSRF as every console route; the use cases are
//! `policy::backtest` and `registry_changes::policy_change`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use serde::{Deserialize, Serialize};

use super::console::CsrfHeader;
use super::error::ApiError;
use super::extract::{typed, JsonBody};
use super::openapi::error_responses;
use super::session::CurrentUser;
use crate::console::policy::{policy_status, PolicyStatus};
use crate::decision::policy::backtest::{self, Report};
use crate::decision::policy::Engine;
use crate::decision::registry_changes::{self, ChangeError, Request, Submitted};
use crate::domain::{FieldError, Role};
use crate::state::Shared;

impl From<ChangeError> for ApiError {
    fn from(e: ChangeError) -> Self {
        match e {
            ChangeError::NotAnAdmin => ApiError::ForbiddenBecause("only admins can change the policy"),
            ChangeError::Invalid(why) => ApiError::Validation(vec![FieldError::new("policy", "invalid_value", why)]),
            ChangeError::Busy => ApiError::RetryAfter(std::time::Duration::from_secs(1)),
            ChangeError::NotFound => ApiError::NotFound,
            ChangeError::NotPending(status) => ApiError::OperationState(match status.as_str() {
                "applied" => "applied",
                "rejected" => "rejected",
                "superseded" => "superseded",
                _ => "not_pending",
            }),
            ChangeError::OwnProposal => {
                ApiError::ForbiddenBecause("you proposed this change: another admin must confirm it")
            }
            ChangeError::OwnAccount => {
                ApiError::ForbiddenBecause("this change is to your own account: another admin must confirm it")
            }
            ChangeError::Expired => ApiError::OperationState("expired"),
            ChangeError::Stale(_) => ApiError::OperationState("superseded"),
            ChangeError::Store(e) => e.into(),
        }
    }
}

error_responses!(ReadErrors: Unauthenticated, Forbidden, InternalError);
error_responses!(WriteErrors: InvalidJson, UnsupportedMediaType, Unauthenticated, Forbidden, ValidationFailed,
    InternalError);
error_responses!(ConfirmErrors: Unauthenticated, Forbidden, NotFound, InvalidState, ValidationFailed, InternalError);

fn admin(user: &CurrentUser) -> Result<(), ApiError> {
    if user.user.roles.contains(&Role::Admin) {
        Ok(())
    } else {
        Err(ApiError::ForbiddenBecause("only admins can see and change the policy"))
    }
}

/// The tenant's enforced and observed policies and observe mode's newest
/// differences (admins).
#[utoipa::path(
    get,
    path = "/api/v1/admin/policy",
    operation_id = "getPolicy",
    tag = "console",
    security(("consoleSession" = [])),
    responses((status = 200, body = PolicyStatus, description = "The policies and the differences."), ReadErrors),
)]
pub async fn status(State(state): State<Shared>, user: CurrentUser) -> Result<Json<PolicyStatus>, ApiError> {
    admin(&user)?;
    Ok(Json(policy_status(&state, &user.user.tenant_id).await?))
}

/// A candidate policy and how far back to replay it.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BacktestBody {
    /// The candidate Cedar policy (validated against the schema).
    policy: String,
    /// `90d` (the default), `12h`, `2w`.
    since: Option<String>,
}

/// Replays the tenant's recorded proposals under a candidate policy and
/// says what would have changed, with totals by currency (admins; changes
/// nothing). A candidate that does not validate is 422 naming `policy`,
/// with Cedar's error and its line and column.
#[utoipa::path(
    post,
    path = "/api/v1/admin/policy/backtest",
    operation_id = "backtestPolicy",
    tag = "console",
    security(("consoleSession" = [])),
    params(CsrfHeader),
    request_body(content = BacktestBody, content_type = "application/json"),
    responses((status = 200, body = Report, description = "What would have changed."), WriteErrors),
)]
pub async fn backtest(
    State(state): State<Shared>,
    user: CurrentUser,
    JsonBody { value }: JsonBody,
) -> Result<Json<Report>, ApiError> {
    admin(&user)?;
    let body: BacktestBody = typed(value)?;
    let since = backtest::parse_since(body.since.as_deref().unwrap_or("90d"))
        .map_err(|why| ApiError::Validation(vec![FieldError::new("since", "invalid_value", why)]))?;
    let candidate = Engine::from_text("policy", &body.policy)
        .map_err(|e| ApiError::Validation(vec![FieldError::new("policy", "invalid_value", e.to_string())]))?;
    let report =
        crate::decision::policy::backtest::recorded::run(&state, &user.user.tenant_id, &candidate, state.now() - since)
            .await?;
    Ok(Json(report))
}

/// A policy change to propose.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyChangeBody {
    /// `enforce` or `observe`.
    #[schema(examples("enforce"))]
    mode: String,
    /// The Cedar policy; empty for the config's own.
    policy: String,
}

/// A proposed policy change: its id and the backtest its confirming admin
/// is shown.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PolicyChangeProposed {
    pub change_id: String,
    pub status: &'static str,
    pub message: String,
    pub backtest: Option<Report>,
}

/// Proposes a policy for the tenant, enforced or observed (four-eyes:
/// another admin confirms). Validated against the schema (422 naming
/// `policy`, Cedar's error located, when it does not) and backtested over
/// 90 days.
#[utoipa::path(
    post,
    path = "/api/v1/admin/policy/changes",
    operation_id = "proposePolicyChange",
    tag = "console",
    security(("consoleSession" = [])),
    params(CsrfHeader),
    request_body(content = PolicyChangeBody, content_type = "application/json"),
    responses((status = 202, body = PolicyChangeProposed, description = "Waiting for a second admin."), WriteErrors),
)]
pub async fn propose(
    State(state): State<Shared>,
    user: CurrentUser,
    JsonBody { value }: JsonBody,
) -> Result<(StatusCode, Json<PolicyChangeProposed>), ApiError> {
    let body: PolicyChangeBody = typed(value)?;
    let request = Request::Policy { mode: body.mode, text: body.policy };
    match registry_changes::submit(&state, &user.admin(), request).await? {
        Submitted::Pending { id, message, .. } => {
            let backtest = registry_changes::policy_change::backtest_of(&state, &user.user.tenant_id, &id).await?;
            Ok((
                StatusCode::ACCEPTED,
                Json(PolicyChangeProposed { change_id: id, status: "pending", message, backtest }),
            ))
        }
        Submitted::Applied { .. } => unreachable!("a policy change always waits for a second admin"),
    }
}

/// A confirmed policy change and its backtest, run again as it was confirmed.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PolicyChangeConfirmed {
    pub change_id: String,
    pub status: &'static str,
    pub message: String,
    pub backtest: Option<Report>,
}

/// Confirms another admin's policy change: it is enforced (or observed)
/// from now on, on every instance within seconds. The proposer cannot
/// confirm their own (403); a change proposed against a policy that has
/// changed since is `superseded` (409).
#[utoipa::path(
    post,
    path = "/api/v1/admin/policy/changes/{id}/confirm",
    operation_id = "confirmPolicyChange",
    tag = "console",
    security(("consoleSession" = [])),
    params(("id" = String, Path, description = "The change's id (`chg_…`)."), CsrfHeader),
    responses((status = 200, body = PolicyChangeConfirmed, description = "Applied."), ConfirmErrors),
)]
pub async fn confirm(
    State(state): State<Shared>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> Result<Json<PolicyChangeConfirmed>, ApiError> {
    admin(&user)?;
    // Only policy changes here: another kind (or another tenant's) is "not found".
    let is_policy = crate::store::registry_changes::get(&state.db.read, &user.user.tenant_id, &id)
        .await?
        .is_some_and(|c| c.kind == "policy");
    if !is_policy {
        return Err(ApiError::NotFound);
    }
    let confirmed = registry_changes::confirm(&state, &user.admin(), &id).await?;
    Ok(Json(PolicyChangeConfirmed {
        change_id: id,
        status: "applied",
        message: confirmed.message,
        backtest: confirmed.backtest,
    }))
}

/// `POST /admin/policy` (the policy page's form): `action` is `backtest`
/// (the result is shown once on the page), `enforce` or `observe` (a
/// four-eyes policy change, backtested, waiting for a second admin).
#[derive(Debug, Deserialize)]
pub struct PolicyFields {
    policy: Option<String>,
    since: Option<String>,
    action: Option<String>,
}

pub async fn policy_form(
    State(state): State<Shared>,
    session: tower_sessions::Session,
    super::admin::AdminUser(admin): super::admin::AdminUser,
    axum::Form(form): axum::Form<PolicyFields>,
) -> axum::response::Response {
    use crate::console::policy::{POLICY_BACKTEST, POLICY_CANDIDATE, POLICY_FLASH};
    let text = form.policy.unwrap_or_default().replace("\r\n", "\n");
    let _ = session.insert(POLICY_CANDIDATE, text.clone()).await;
    let flash = match form.action.as_deref().unwrap_or("backtest") {
        "backtest" => {
            let since = form.since.unwrap_or_else(|| "90d".into());
            match (backtest::parse_since(&since), Engine::from_text("policy", &text)) {
                (Err(why), _) => format!("Not run: since {why}"),
                (_, Err(why)) => format!("Not run: the policy does not validate: {why}"),
                (Ok(back), Ok(candidate)) => {
                    match crate::decision::policy::backtest::recorded::run(
                        &state,
                        &admin.user.tenant_id,
                        &candidate,
                        state.now() - back,
                    )
                    .await
                    {
                        Ok(report) => {
                            let _ = session.insert(POLICY_BACKTEST, report.lines()).await;
                            format!("Backtest done in {} ms.", report.elapsed_ms)
                        }
                        Err(error) => {
                            tracing::error!(%error, "a backtest failed");
                            "Not run: the history could not be read; try again.".into()
                        }
                    }
                }
            }
        }
        mode @ ("enforce" | "observe") => {
            let request = Request::Policy { mode: mode.to_owned(), text };
            match registry_changes::submit(&state, &admin.admin(), request).await {
                Ok(Submitted::Pending { message, .. } | Submitted::Applied { message }) => {
                    format!("Proposed: {message}")
                }
                Err(e) => format!("Not proposed: {e}"),
            }
        }
        _ => "Not saved: unknown action.".into(),
    };
    let _ = session.insert(POLICY_FLASH, flash).await;
    axum::response::Redirect::to("/admin/policy").into_response()
}
