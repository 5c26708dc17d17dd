//! A signed-in user's passkeys (`/api/v1/me/passkeys`): register (a
//! challenge, then the browser's answer with what allows it), list, remove
//! (a challenge, then an assertion over the removal); and their notices
//! (`/api/v1/me/notices`). Console session and CSRF as every console route;
//! the use case is `passkeys::registry`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};

use super::console::CsrfHeader;
use super::error::ApiError;
use super::extract::{typed, JsonBody};
use super::openapi::error_responses;
use super::session::CurrentUser;
use crate::domain::FieldError;
use crate::people::passkeys::registry::{
    self, Answer, AuthorizationOptions, Holder, PasskeyView, RegistrationOptions, RegistryError,
};
use crate::people::passkeys::step_up::StepUpAnswer;
use crate::state::Shared;

fn holder(user: &CurrentUser) -> Holder<'_> {
    Holder {
        tenant_id: &user.user.tenant_id,
        user_id: &user.user.id,
        username: &user.user.username,
        roles: &user.user.roles,
    }
}

impl From<RegistryError> for ApiError {
    fn from(e: RegistryError) -> Self {
        let field = |field: &str, code: &'static str, message: String| {
            ApiError::Validation(vec![FieldError { field: field.to_owned(), code, message }])
        };
        match e {
            RegistryError::BadName(_) => field("name", "invalid_value", e.to_string()),
            RegistryError::NotBase64(name) => field(name, "invalid_value", e.to_string()),
            RegistryError::TooLarge(name) => field(name, "too_large", e.to_string()),
            RegistryError::NoChallenge => field("challenge_id", "invalid_value", e.to_string()),
            RegistryError::Refused(refusal) => field("credential", refusal.code(), e.to_string()),
            RegistryError::ProofRequired | RegistryError::RemovalProofRequired => {
                ApiError::StepUpRequired("authorization_required", e.to_string())
            }
            RegistryError::BadEnrolmentCode => field("enrolment_code", "invalid_value", e.to_string()),
            RegistryError::Authorization(refusal) => refusal.into(),
            RegistryError::LastRequired => ApiError::ForbiddenBecause(
                "your role needs a passkey and this is your last one: an admin can remove it (a change a second \
                 admin confirms)",
            ),
            RegistryError::AlreadyRegistered => field("credential", "already_registered", e.to_string()),
            RegistryError::TooMany => field("", "too_many", e.to_string()),
            RegistryError::NotFound => ApiError::NotFound,
            RegistryError::NoRelyingParty => ApiError::Internal(Box::new(e)),
            RegistryError::Store(s) => s.into(),
        }
    }
}

error_responses!(PasskeyErrors: InvalidJson, Unauthenticated, Forbidden, StepUpRequired, PasskeyRefused,
    ValidationFailed, InternalError);
error_responses!(PasskeyRegisterErrors: InvalidJson, UnsupportedMediaType, Unauthenticated, Forbidden, StepUpRequired,
    PasskeyRefused, ValidationFailed, InternalError);
error_responses!(PasskeyListErrors: Unauthenticated, Forbidden, NotFound, InternalError);
error_responses!(PasskeyRemoveErrors: InvalidJson, UnsupportedMediaType, Unauthenticated, Forbidden, StepUpRequired,
    PasskeyRefused, NotFound, ValidationFailed, InternalError);

/// A challenge to register a new passkey with: the options for
/// `navigator.credentials.create` (binary values base64url), and, when the
/// user holds passkeys, the `authorization` challenge one of them must sign
/// to allow it. It can be answered once, within five minutes.
#[utoipa::path(
    post,
    path = "/api/v1/me/passkeys/challenges",
    operation_id = "startPasskeyRegistration",
    tag = "console",
    security(("consoleSession" = [])),
    params(CsrfHeader),
    responses((status = 201, body = RegistrationOptions, description = "The registration options."), PasskeyErrors),
)]
pub async fn start(
    State(state): State<Shared>,
    user: CurrentUser,
) -> Result<(StatusCode, Json<RegistrationOptions>), ApiError> {
    Ok((StatusCode::CREATED, Json(registry::start(&state, &holder(&user), state.now()).await?)))
}

/// The browser's answer to a registration challenge.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistrationBody {
    /// The `challenge_id` of the options answered.
    challenge_id: String,
    /// What the person calls this passkey ("Laptop", "YubiKey"): 1–200
    /// characters, not blank.
    #[schema(min_length = 1, max_length = 200)]
    name: String,
    /// `response.clientDataJSON`, base64url.
    client_data_json: String,
    /// `response.attestationObject`, base64url.
    attestation_object: String,
    /// What allows it when the user holds passkeys: one of them signed the
    /// `authorization` challenge of these options (`challenge_id` is the
    /// registration's).
    #[serde(default)]
    authorization: Option<StepUpAnswer>,
    /// What allows it otherwise: a one-time enrolment code issued for this
    /// user (`countersign user enrolment-code`, or two admins).
    #[serde(default)]
    enrolment_code: Option<String>,
}

/// Registers the passkey that answered the challenge (audited
/// `passkey.registered` with its fingerprint; the user is notified). It
/// cannot approve payments until its cool-off ends or an admin confirms it.
/// Refused with `step_up_required` (`authorization_required`) when neither
/// an assertion by one of the user's passkeys nor an enrolment code allows
/// it, with `passkey_refused` when that assertion fails, and with
/// `validation_failed` naming what failed (`credential`: `wrong_challenge`,
/// `wrong_origin`, `user_not_verified`…; `enrolment_code`).
#[utoipa::path(
    post,
    path = "/api/v1/me/passkeys",
    operation_id = "registerPasskey",
    tag = "console",
    security(("consoleSession" = [])),
    params(CsrfHeader),
    request_body(content = RegistrationBody, content_type = "application/json"),
    responses((status = 201, body = PasskeyView, description = "The passkey, registered."), PasskeyRegisterErrors),
)]
pub async fn register(
    State(state): State<Shared>,
    user: CurrentUser,
    JsonBody { value }: JsonBody,
) -> Result<(StatusCode, Json<PasskeyView>), ApiError> {
    let body: RegistrationBody = typed(value)?;
    let answer = Answer {
        challenge_id: &body.challenge_id,
        name: &body.name,
        client_data_json: &body.client_data_json,
        attestation_object: &body.attestation_object,
        authorization: body.authorization.as_ref(),
        enrolment_code: body.enrolment_code.as_deref(),
    };
    Ok((StatusCode::CREATED, Json(registry::finish(&state, &holder(&user), &answer, state.now()).await?)))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PasskeyList {
    pub data: Vec<PasskeyView>,
}

/// The signed-in user's passkeys (names and dates; never key material).
#[utoipa::path(
    get,
    path = "/api/v1/me/passkeys",
    operation_id = "listPasskeys",
    tag = "console",
    security(("consoleSession" = [])),
    responses((status = 200, body = PasskeyList, description = "Oldest first."), PasskeyListErrors),
)]
pub async fn list(State(state): State<Shared>, user: CurrentUser) -> Result<Json<PasskeyList>, ApiError> {
    Ok(Json(PasskeyList { data: registry::list(&state, &holder(&user), state.now()).await? }))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct PasskeyPath {
    /// The passkey's id (`pk_…`). Someone else's is 404.
    id: String,
}

/// A challenge for removing one of the signed-in user's passkeys: one of
/// their passkeys (that one too) signs it, within five minutes, once.
#[utoipa::path(
    post,
    path = "/api/v1/me/passkeys/{id}/removal-challenges",
    operation_id = "startPasskeyRemoval",
    tag = "console",
    security(("consoleSession" = [])),
    params(PasskeyPath, CsrfHeader),
    responses((status = 201, body = AuthorizationOptions, description = "The request options."), PasskeyListErrors),
)]
pub async fn start_removal(
    State(state): State<Shared>,
    user: CurrentUser,
    Path(PasskeyPath { id }): Path<PasskeyPath>,
) -> Result<(StatusCode, Json<AuthorizationOptions>), ApiError> {
    Ok((StatusCode::CREATED, Json(registry::start_removal(&state, &holder(&user), &id, state.now()).await?)))
}

/// What allows a removal.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RemovalBody {
    /// An assertion by one of the user's passkeys over the removal challenge
    /// (`POST …/removal-challenges`).
    authorization: StepUpAnswer,
}

/// Removes one of the signed-in user's passkeys (audited `passkey.removed`
/// with its fingerprint; the user is notified), with an assertion by one of
/// their passkeys over this removal. Without it: `step_up_required`
/// (`authorization_required`). The last passkey of someone whose role
/// requires one is removed only by two admins (`forbidden`).
#[utoipa::path(
    delete,
    path = "/api/v1/me/passkeys/{id}",
    operation_id = "removePasskey",
    tag = "console",
    security(("consoleSession" = [])),
    params(PasskeyPath, CsrfHeader),
    request_body(content = RemovalBody, content_type = "application/json"),
    responses((status = 204, description = "Removed."), PasskeyRemoveErrors),
)]
pub async fn remove(
    State(state): State<Shared>,
    user: CurrentUser,
    Path(PasskeyPath { id }): Path<PasskeyPath>,
    body: Option<JsonBody>,
) -> Result<StatusCode, ApiError> {
    let Some(JsonBody { value }) = body else {
        return Err(RegistryError::RemovalProofRequired.into());
    };
    let body: RemovalBody = typed(value)?;
    registry::remove(&state, &holder(&user), &id, &body.authorization, state.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A notice about the user's own account.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct NoticeView {
    pub id: String,
    /// `passkey.registered`, `passkey.removed`, `passkey.confirmed`, `passkey.enrolment_issued`.
    pub kind: String,
    pub message: String,
    pub created_at: String,
    pub read: bool,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct NoticeList {
    /// Newest first, the latest 50.
    pub data: Vec<NoticeView>,
    pub unread: i64,
}

/// What the signed-in user has been told about their account (passkeys
/// added or removed, enrolment codes issued for them).
#[utoipa::path(
    get,
    path = "/api/v1/me/notices",
    operation_id = "listNotices",
    tag = "console",
    security(("consoleSession" = [])),
    responses((status = 200, body = NoticeList, description = "Newest first."), PasskeyListErrors),
)]
pub async fn notices(State(state): State<Shared>, user: CurrentUser) -> Result<Json<NoticeList>, ApiError> {
    let rows = crate::store::notices::of_user(&state.db.read, &user.user.id, 50).await?;
    let unread = crate::store::notices::unread(&state.db.read, &user.user.id).await?;
    let data = rows
        .into_iter()
        .map(|n| NoticeView {
            id: n.id,
            kind: n.kind,
            message: n.message,
            created_at: crate::store::ts(n.created_at),
            read: n.read_at.is_some(),
        })
        .collect();
    Ok(Json(NoticeList { data, unread }))
}

/// Marks every notice of the signed-in user read.
#[utoipa::path(
    post,
    path = "/api/v1/me/notices/read",
    operation_id = "markNoticesRead",
    tag = "console",
    security(("consoleSession" = [])),
    params(CsrfHeader),
    responses((status = 204, description = "Marked read."), PasskeyListErrors),
)]
pub async fn mark_notices_read(State(state): State<Shared>, user: CurrentUser) -> Result<StatusCode, ApiError> {
    crate::store::notices::mark_read(&state.db.write, &user.user.id, state.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}
