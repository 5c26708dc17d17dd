//! Delegation while away (`/api/v1/me/delegations`): console session and
//! CSRF as every console route; the use cases are `crate::decision::delegation`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};

use super::console::CsrfHeader;
use super::error::ApiError;
use super::extract::{typed, JsonBody};
use super::openapi::error_responses;
use super::session::CurrentUser;
use crate::decision::delegation::{
    self as delegation,
    manage::{Ask, DelegationError, DelegationView, Made},
};
use crate::domain::FieldError;
use crate::state::Shared;

impl From<DelegationError> for ApiError {
    fn from(e: DelegationError) -> Self {
        match e {
            DelegationError::NotAnApprover => ApiError::ForbiddenBecause("only approvers can delegate their approvals"),
            DelegationError::NotYours => {
                ApiError::ForbiddenBecause("only the two people it names, or an admin, can end a delegation")
            }
            DelegationError::Invalid { field, why } => {
                ApiError::Validation(vec![FieldError { field: field.to_owned(), code: "invalid_value", message: why }])
            }
            DelegationError::NotFound => ApiError::NotFound,
            DelegationError::Ended => ApiError::OperationState("ended"),
            DelegationError::Store(s) => s.into(),
        }
    }
}

error_responses!(ReadErrors: Unauthenticated, Forbidden, InternalError);
error_responses!(WriteErrors: InvalidJson, UnsupportedMediaType, Unauthenticated, Forbidden, ValidationFailed,
    InternalError);
error_responses!(EndErrors: Unauthenticated, Forbidden, NotFound, InvalidState, InternalError);

/// The delegations that name the signed-in person and are not over: those
/// they gave and those they hold (an admin sees the whole tenant's).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DelegationList {
    pub delegations: Vec<DelegationView>,
}

/// Delegations given by or to the signed-in person, pending or in force and
/// not yet over, oldest first; every one of the tenant's for an admin.
#[utoipa::path(
    get,
    path = "/api/v1/me/delegations",
    operation_id = "listDelegations",
    tag = "console",
    security(("consoleSession" = [])),
    responses((status = 200, body = DelegationList, description = "The delegations."), ReadErrors),
)]
pub async fn list(State(state): State<Shared>, user: CurrentUser) -> Result<Json<DelegationList>, ApiError> {
    let admin = user.user.roles.contains(&crate::domain::Role::Admin);
    let delegations =
        delegation::manage::listed(&state, &user.user.tenant_id, &user.user.id, admin, state.now()).await?;
    Ok(Json(DelegationList { delegations }))
}

/// Whom to let approve for you, and when.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct DelegationBody {
    /// The delegate's username: an active approver of your tenant.
    #[schema(max_length = 64)]
    delegate: String,
    /// From when (RFC 3339); a past instant means now.
    #[schema(format = DateTime)]
    starts_at: String,
    /// Until when (RFC 3339, exclusive): later than `starts_at`, at most 90 days after it.
    #[schema(format = DateTime)]
    ends_at: String,
}

/// A delegation asked for: in force from its start, or (`status`
/// `pending`) waiting for an admin other than the two people it names,
/// because it would let the delegate count for approval groups they are
/// not in; `lines` say what that admin confirms.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DelegationMade {
    pub delegation: DelegationView,
    /// What the confirming admin is shown, while it waits.
    pub lines: Vec<String>,
}

fn instant(field: &'static str, text: &str) -> Result<chrono::DateTime<chrono::Utc>, ApiError> {
    chrono::DateTime::parse_from_rfc3339(text).map(|t| t.with_timezone(&chrono::Utc)).map_err(|_| {
        ApiError::Validation(vec![FieldError {
            field: field.to_owned(),
            code: "invalid_value",
            message: "must be an RFC 3339 date-time, e.g. 2026-12-24T00:00:00Z".into(),
        }])
    })
}

/// Lets another approver approve for the signed-in approver between two
/// instants. Their approvals then say "for you", use the lower of your two
/// limits and keep every segregation rule of both. Refused with
/// `validation_failed` naming `delegate`, `starts_at` or `ends_at` (an
/// unknown or non-approver delegate, yourself, a range that is empty, over
/// 90 days, or overlapping one you already gave).
#[utoipa::path(
    post,
    path = "/api/v1/me/delegations",
    operation_id = "delegate",
    tag = "console",
    security(("consoleSession" = [])),
    params(CsrfHeader),
    request_body(content = DelegationBody, content_type = "application/json"),
    responses((status = 201, body = DelegationMade, description = "The delegation, active or pending."), WriteErrors),
)]
pub async fn create(
    State(state): State<Shared>,
    user: CurrentUser,
    JsonBody { value }: JsonBody,
) -> Result<(StatusCode, Json<DelegationMade>), ApiError> {
    let body: DelegationBody = typed(value)?;
    let ask = Ask {
        delegate: body.delegate,
        starts_at: instant("starts_at", &body.starts_at)?,
        ends_at: instant("ends_at", &body.ends_at)?,
    };
    let made = delegation::manage::create(&state, &user.admin(), ask, state.now()).await?;
    let made = match made {
        Made::Active(delegation) => DelegationMade { delegation, lines: Vec::new() },
        Made::Pending { view, lines } => DelegationMade { delegation: view, lines },
    };
    Ok((StatusCode::CREATED, Json(made)))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct DelegationPath {
    /// The delegation's id (`dlg_…`). Another tenant's is 404.
    id: String,
}

/// Ends a delegation now, or withdraws it while it waits for an admin:
/// either of the two people it names, or an admin. Approvals already given
/// under it stay; a token not yet redeemed that carries one is refused at
/// commit.
#[utoipa::path(
    delete,
    path = "/api/v1/me/delegations/{id}",
    operation_id = "endDelegation",
    tag = "console",
    security(("consoleSession" = [])),
    params(DelegationPath, CsrfHeader),
    responses((status = 200, body = DelegationView, description = "The delegation, ended."), EndErrors),
)]
pub async fn end(
    State(state): State<Shared>,
    user: CurrentUser,
    Path(DelegationPath { id }): Path<DelegationPath>,
) -> Result<Json<DelegationView>, ApiError> {
    Ok(Json(delegation::manage::end(&state, &user.admin(), &id, state.now()).await?))
}
