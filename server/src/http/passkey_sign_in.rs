//! Signing in to the console with a passkey (core `passkeys::sign_in`):
//! `POST /api/v1/session/passkey-challenges` hands out a single-use
//! challenge, `POST /api/v1/session/passkey` takes the assertion and starts
//! the session. Like the password sign-in they need no session and pass
//! the origin check only (csrf.rs); every refusal is the same 401.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use tower_sessions::Session;

use super::console::SessionBody;
use super::error::ApiError;
use super::extract::{typed, JsonBody};
use super::openapi::error_responses;
use super::session::{self, client_address};
use crate::people::passkeys::sign_in::{self, SignInError};
use crate::people::passkeys::step_up::{StepUpAnswer, StepUpOptions};
use crate::state::Shared;

/// The amr of a session a passkey started (never `passkey`: that is an
/// assertion over a payment).
pub const AMR: &str = "passkey_session";

/// `POST /api/v1/session/passkey`'s body: the assertion as the browser
/// returns it (`navigator.credentials.get`), binary values base64url.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = PasskeySignInRequest)]
#[serde(deny_unknown_fields)]
pub struct PasskeySignInBody {
    /// The `challenge_id` of the options answered.
    #[schema(min_length = 1, max_length = 64)]
    challenge_id: String,
    /// `rawId`.
    #[schema(min_length = 1, max_length = 1400)]
    credential_id: String,
    /// `response.authenticatorData`.
    #[schema(min_length = 1, max_length = 1400)]
    authenticator_data: String,
    /// `response.clientDataJSON`.
    #[schema(min_length = 1, max_length = 4096)]
    client_data_json: String,
    /// `response.signature` (DER).
    #[schema(min_length = 1, max_length = 200)]
    signature: String,
    /// `response.userHandle`: the user id the passkey was registered for.
    #[schema(min_length = 1, max_length = 200)]
    user_handle: String,
}

error_responses!(PasskeyChallengeErrors: Forbidden, InternalError);

/// Start a passkey sign-in
///
/// A single-use challenge (five minutes) and the options for
/// `navigator.credentials.get`, with no allowed credentials: the browser
/// offers the passkeys it holds for this site.
#[utoipa::path(
    post,
    path = "/api/v1/session/passkey-challenges",
    operation_id = "startPasskeySignIn",
    tag = "console",
    security(()),
    responses((status = 201, body = StepUpOptions, description = "The request options."), PasskeyChallengeErrors),
)]
pub async fn challenge(State(state): State<Shared>) -> Result<(StatusCode, Json<StepUpOptions>), ApiError> {
    match sign_in::start(&state, state.now()).await {
        Ok(options) => Ok((StatusCode::CREATED, Json(options))),
        Err(e) => Err(refusal(e)),
    }
}

error_responses!(PasskeySignInErrors: InvalidJson, Unauthenticated, Forbidden, PayloadTooLarge, UnsupportedMediaType,
    ValidationFailed, InternalError);

/// Sign in with a passkey
///
/// The assertion over a challenge from `startPasskeySignIn`, by a passkey
/// past its cool-off (or confirmed by an admin) of an active user: the
/// user and the CSRF token, as a password sign-in answers. An unknown
/// passkey, a bad signature, a spent challenge and a deactivated user all
/// get the same 401. The session's `amr` is `passkey_session`; approving
/// at or above the step-up threshold still takes an assertion over the
/// payment. A user whose tenant signs in only with single sign-on is 403.
#[utoipa::path(
    post,
    path = "/api/v1/session/passkey",
    operation_id = "signInWithPasskey",
    tag = "console",
    security(()),
    request_body(content = PasskeySignInBody, content_type = "application/json"),
    responses(
        (status = 200, body = SessionBody, description = "Signed in.",
            headers(("Set-Cookie" = String, description = "The session cookie (HttpOnly; SameSite=Lax; Secure over HTTPS)."))),
        PasskeySignInErrors,
    ),
)]
pub async fn sign_in(
    State(state): State<Shared>,
    session: Session,
    request: axum::extract::Request,
) -> Result<Response, ApiError> {
    let address = client_address(&state, &request);
    let JsonBody { value } = <JsonBody as axum::extract::FromRequest<Shared>>::from_request(request, &state).await?;
    let body: PasskeySignInBody = typed(value)?;
    let answer = StepUpAnswer {
        challenge_id: body.challenge_id,
        credential_id: body.credential_id,
        authenticator_data: body.authenticator_data,
        client_data_json: body.client_data_json,
        signature: body.signature,
    };
    let user = match sign_in::finish(&state, &answer, &body.user_handle, state.now()).await {
        Ok(user) => user,
        Err(SignInError::Refused(reason)) => {
            tracing::warn!(%address, reason, "failed passkey sign-in");
            return Err(ApiError::Unauthenticated);
        }
        Err(e) => return Err(refusal(e)),
    };
    if !state.settings.local_passwords(&user.tenant_id) {
        tracing::warn!(%address, "passkey sign-in refused: the tenant signs in with single sign-on");
        return Err(ApiError::ForbiddenBecause("your organisation signs in with single sign-on"));
    }
    let current = session::start_session(&state, &session, user, AMR, None, serde_json::json!({"amr": AMR})).await?;
    Ok(Json(SessionBody::of(&current)).into_response())
}

fn refusal(e: SignInError) -> ApiError {
    match e {
        SignInError::Refused(_) => ApiError::Unauthenticated,
        SignInError::NoRelyingParty => ApiError::ForbiddenBecause("passkeys need a public_url they can be bound to"),
        SignInError::Store(e) => e.into(),
    }
}
