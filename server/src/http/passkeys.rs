//! A signed-in user's passkeys (`/api/v1/me/passkeys`): register (a
//! challenge, then the browser's answer), list, remove. Console session and
//! CSRF as every console route; the use case is `passkeys::registry`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use chrono::Utc;
use serde::{Deserialize, Serialize};

use super::console::CsrfHeader;
use super::error::ApiError;
use super::extract::{typed, JsonBody};
use super::openapi::error_responses;
use super::session::CurrentUser;
use crate::domain::FieldError;
use crate::passkeys::registry::{self, Answer, Holder, PasskeyView, RegistrationOptions, RegistryError};
use crate::state::Shared;

fn holder(user: &CurrentUser) -> Holder<'_> {
    Holder { tenant_id: &user.user.tenant_id, user_id: &user.user.id, username: &user.user.username }
}

impl From<RegistryError> for ApiError {
    fn from(e: RegistryError) -> Self {
        let field = |field: &str, code: &'static str, message: String| {
            ApiError::Validation(vec![FieldError { field: field.to_owned(), code, message }])
        };
        match e {
            RegistryError::BadName(_) => field("name", "invalid_value", e.to_string()),
            RegistryError::NotBase64(name) => field(name, "invalid_value", e.to_string()),
            RegistryError::NoChallenge => field("challenge_id", "invalid_value", e.to_string()),
            RegistryError::Refused(refusal) => field("credential", refusal.code(), e.to_string()),
            RegistryError::AlreadyRegistered => field("credential", "already_registered", e.to_string()),
            RegistryError::TooMany => field("", "too_many", e.to_string()),
            RegistryError::NotFound => ApiError::NotFound,
            RegistryError::NoRelyingParty => ApiError::Internal(Box::new(e)),
            RegistryError::Store(s) => s.into(),
        }
    }
}

error_responses!(PasskeyErrors: InvalidJson, Unauthenticated, Forbidden, ValidationFailed, InternalError);
error_responses!(PasskeyRemoveErrors: Unauthenticated, Forbidden, NotFound, InternalError);

/// A challenge to register a new passkey with: the options for
/// `navigator.credentials.create` (binary values base64url). It can be
/// answered once, within five minutes.
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
    Ok((StatusCode::CREATED, Json(registry::start(&state, &holder(&user), Utc::now()).await?)))
}

/// The browser's answer to a registration challenge.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistrationBody {
    /// The `challenge_id` of the options answered.
    challenge_id: String,
    /// What the person calls this passkey ("Laptop", "YubiKey").
    name: String,
    /// `response.clientDataJSON`, base64url.
    client_data_json: String,
    /// `response.attestationObject`, base64url.
    attestation_object: String,
}

/// Registers the passkey that answered the challenge (audited
/// `passkey.registered`). Refused with `validation_failed` naming what
/// failed (`credential`: `wrong_challenge`, `wrong_origin`, `user_not_verified`…).
#[utoipa::path(
    post,
    path = "/api/v1/me/passkeys",
    operation_id = "registerPasskey",
    tag = "console",
    security(("consoleSession" = [])),
    params(CsrfHeader),
    request_body(content = RegistrationBody, content_type = "application/json"),
    responses((status = 201, body = PasskeyView, description = "The passkey, registered."), PasskeyErrors),
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
    };
    Ok((StatusCode::CREATED, Json(registry::finish(&state, &holder(&user), &answer, Utc::now()).await?)))
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
    responses((status = 200, body = PasskeyList, description = "Oldest first."), PasskeyRemoveErrors),
)]
pub async fn list(State(state): State<Shared>, user: CurrentUser) -> Result<Json<PasskeyList>, ApiError> {
    Ok(Json(PasskeyList { data: registry::list(&state, &holder(&user)).await? }))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct PasskeyPath {
    /// The passkey's id (`pk_…`). Someone else's is 404.
    id: String,
}

/// Removes one of the signed-in user's passkeys (audited `passkey.removed`).
#[utoipa::path(
    delete,
    path = "/api/v1/me/passkeys/{id}",
    operation_id = "removePasskey",
    tag = "console",
    security(("consoleSession" = [])),
    params(PasskeyPath, CsrfHeader),
    responses((status = 204, description = "Removed."), PasskeyRemoveErrors),
)]
pub async fn remove(
    State(state): State<Shared>,
    user: CurrentUser,
    Path(PasskeyPath { id }): Path<PasskeyPath>,
) -> Result<StatusCode, ApiError> {
    registry::remove(&state, &holder(&user), &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
