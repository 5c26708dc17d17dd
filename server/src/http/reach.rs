//! A signed-in person's notification settings (`/api/v1/me/notifications`,
//! `/api/v1/me/email`, `/api/v1/me/push-subscriptions`): console session
//! and CSRF as every console route; the use cases are `notify::account`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;

use super::console::CsrfHeader;
use super::error::ApiError;
use super::extract::{typed, JsonBody};
use super::openapi::error_responses;
use super::session::CurrentUser;
use crate::domain::FieldError;
use crate::notify::account::{self, AccountError, DeviceView, NewDevice, NotificationSettings};
use crate::notify::push::BadSubscription;
use crate::state::Shared;

impl From<AccountError> for ApiError {
    fn from(e: AccountError) -> Self {
        let message = e.to_string();
        let field = |field: &str, code: &'static str| {
            ApiError::Validation(vec![FieldError { field: field.to_owned(), code, message: message.clone() }])
        };
        match e {
            AccountError::BadEmail => field("email", "invalid_value"),
            AccountError::BadSubscription(BadSubscription::Endpoint(_)) => field("endpoint", "not_allowed"),
            AccountError::BadSubscription(BadSubscription::Key) => field("keys.p256dh", "invalid_value"),
            AccountError::BadSubscription(BadSubscription::Auth) => field("keys.auth", "invalid_value"),
            AccountError::BadLabel => field("label", "invalid_value"),
            AccountError::TooMany => field("", "too_many"),
            AccountError::PushOff => ApiError::ForbiddenBecause("web push is off on this deployment"),
            AccountError::NotFound => ApiError::NotFound,
            AccountError::BadTimeZone(_) => field("time_zone", "invalid_value"),
            AccountError::BadHours(_) => field("hours", "invalid_value"),
            AccountError::Store(s) => s.into(),
        }
    }
}

error_responses!(ReadErrors: Unauthenticated, Forbidden, InternalError);
error_responses!(WriteErrors: InvalidJson, UnsupportedMediaType, Unauthenticated, Forbidden, ValidationFailed,
    InternalError);
error_responses!(RemoveErrors: Unauthenticated, Forbidden, NotFound, InternalError);

/// The signed-in person's notification settings: their email address, and
/// their devices subscribed to Web Push with the key to subscribe with.
#[utoipa::path(
    get,
    path = "/api/v1/me/notifications",
    operation_id = "getNotificationSettings",
    tag = "console",
    security(("consoleSession" = [])),
    responses((status = 200, body = NotificationSettings, description = "Their settings."), ReadErrors),
)]
pub async fn get(State(state): State<Shared>, user: CurrentUser) -> Result<Json<NotificationSettings>, ApiError> {
    Ok(Json(account::settings(&state, &user.user).await?))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmailBody {
    /// Where email notifications go; null or blank stops them.
    #[schema(max_length = 254)]
    email: Option<String>,
}

/// Sets (or, null or blank, clears) where the person's email notifications
/// go. Refused with `validation_failed` (`email`) when it is not an address.
#[utoipa::path(
    put,
    path = "/api/v1/me/email",
    operation_id = "setNotificationEmail",
    tag = "console",
    security(("consoleSession" = [])),
    params(CsrfHeader),
    request_body(content = EmailBody, content_type = "application/json"),
    responses((status = 200, body = NotificationSettings, description = "Their settings, changed."), WriteErrors),
)]
pub async fn set_email(
    State(state): State<Shared>,
    user: CurrentUser,
    JsonBody { value }: JsonBody,
) -> Result<Json<NotificationSettings>, ApiError> {
    let body: EmailBody = typed(value)?;
    Ok(Json(account::set_email(&state, &user.user, body.email.as_deref()).await?))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuietHoursBody {
    /// An IANA time zone ("Europe/Paris"); null with `hours` null clears them.
    #[schema(max_length = 64)]
    time_zone: Option<String>,
    /// "HH:MM-HH:MM" in that zone; may span midnight ("22:00-07:00").
    #[schema(max_length = 11)]
    hours: Option<String>,
}

/// Sets (or, both null, clears) the person's quiet hours: arrival notices
/// and reminders are not sent to them by push or email then; an
/// escalation is. Refused with `validation_failed` naming `time_zone` or
/// `hours`.
#[utoipa::path(
    put,
    path = "/api/v1/me/quiet-hours",
    operation_id = "setQuietHours",
    tag = "console",
    security(("consoleSession" = [])),
    params(CsrfHeader),
    request_body(content = QuietHoursBody, content_type = "application/json"),
    responses((status = 200, body = NotificationSettings, description = "Their settings, changed."), WriteErrors),
)]
pub async fn set_quiet_hours(
    State(state): State<Shared>,
    user: CurrentUser,
    JsonBody { value }: JsonBody,
) -> Result<Json<NotificationSettings>, ApiError> {
    let body: QuietHoursBody = typed(value)?;
    let quiet = match (body.time_zone.as_deref(), body.hours.as_deref()) {
        (None, None) => None,
        (zone, hours) => Some((zone.unwrap_or_default(), hours.unwrap_or_default())),
    };
    Ok(Json(account::set_quiet_hours(&state, &user.user, quiet).await?))
}

/// A browser's push subscription keys (`PushSubscription.toJSON().keys`).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct SubscriptionKeys {
    /// The browser's P-256 public key, base64url.
    p256dh: String,
    /// Its 16-byte auth secret, base64url.
    auth: String,
}

/// `PushSubscription.toJSON()`, and what to call the device.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct SubscriptionBody {
    /// The push service's URL for this device; its host must be one of
    /// `notifications.push.allowed_hosts`.
    #[schema(max_length = 2048)]
    endpoint: String,
    keys: SubscriptionKeys,
    /// 1–100 characters ("Phone", "Chrome on Android").
    #[schema(min_length = 1, max_length = 100)]
    label: String,
    /// Sent by browsers; not used.
    #[serde(default, rename = "expirationTime")]
    #[allow(dead_code)]
    expiration_time: Option<serde_json::Value>,
}

/// Subscribes a device of the signed-in person to Web Push: they are told
/// there when a payment they can approve arrives, and before it expires.
/// The same endpoint again replaces the earlier subscription. Refused with
/// `validation_failed` naming `endpoint` (`not_allowed`), `keys.p256dh`,
/// `keys.auth` or `label`, or (`too_many`) past ten devices.
#[utoipa::path(
    post,
    path = "/api/v1/me/push-subscriptions",
    operation_id = "subscribeToPush",
    tag = "console",
    security(("consoleSession" = [])),
    params(CsrfHeader),
    request_body(content = SubscriptionBody, content_type = "application/json"),
    responses((status = 201, body = DeviceView, description = "The device, subscribed."), WriteErrors),
)]
pub async fn subscribe(
    State(state): State<Shared>,
    user: CurrentUser,
    JsonBody { value }: JsonBody,
) -> Result<(StatusCode, Json<DeviceView>), ApiError> {
    let body: SubscriptionBody = typed(value)?;
    let device =
        NewDevice { endpoint: &body.endpoint, p256dh: &body.keys.p256dh, auth: &body.keys.auth, label: &body.label };
    Ok((StatusCode::CREATED, Json(account::subscribe(&state, &user.user, &device, state.now()).await?)))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct DevicePath {
    /// The device's id (`psub_…`). Someone else's is 404.
    id: String,
}

/// Stops Web Push to one of the signed-in person's devices.
#[utoipa::path(
    delete,
    path = "/api/v1/me/push-subscriptions/{id}",
    operation_id = "unsubscribeFromPush",
    tag = "console",
    security(("consoleSession" = [])),
    params(DevicePath, CsrfHeader),
    responses((status = 204, description = "Removed."), RemoveErrors),
)]
pub async fn unsubscribe(
    State(state): State<Shared>,
    user: CurrentUser,
    Path(DevicePath { id }): Path<DevicePath>,
) -> Result<StatusCode, ApiError> {
    account::unsubscribe(&state, &user.user, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
