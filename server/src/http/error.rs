//! The one place errors become HTTP responses with the contract's codes.
//! 5xx bodies are generic; the cause is logged with its chain.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::domain::{FieldError, ProposalStatus};
use crate::policy::Decision;

tokio::task_local! {
    /// The id of the request being served, for error bodies and logs (the
    /// header value itself: setting it per request allocates nothing).
    pub static REQUEST_ID: Option<HeaderValue>;
}

pub fn current_request_id() -> String {
    REQUEST_ID
        .try_with(|id| id.as_ref().and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned())
        .unwrap_or_default()
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("the body is not valid JSON: {0}")]
    InvalidJson(String),
    #[error("the body is larger than 64 KiB")]
    PayloadTooLarge,
    #[error("the body must be application/json")]
    UnsupportedMediaType,
    #[error("a valid credential is required")]
    Unauthenticated,
    #[error("this credential may not do that")]
    Forbidden,
    #[error("{0}")]
    ForbiddenBecause(&'static str),
    #[error("no such object")]
    NotFound,
    #[error("the proposal is {0}")]
    InvalidState(ProposalStatus),
    #[error("the operation is {0}")]
    OperationState(&'static str),
    #[error("a request with this Idempotency-Key is still being processed")]
    IdempotencyKeyInUse,
    #[error("the request is invalid")]
    Validation(Vec<FieldError>),
    #[error("destination {0} is not in the payee registry")]
    UnknownDestination(String),
    #[error("this Idempotency-Key was used with a different request")]
    IdempotencyKeyReused,
    #[error("denied by policy")]
    PolicyDenied(Decision),
    #[error("the approval token is not valid for this commit ({0})")]
    ApprovalTokenInvalid(&'static str),
    #[error("the request is not a valid signed Slack request ({0})")]
    SlackRequestRefused(&'static str),
    #[error("too many requests")]
    RateLimited,
    #[error("the payment rail could not be reached; try again")]
    RailUnavailable,
    #[error("internal error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> Self {
        ApiError::Internal(Box::new(e))
    }
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        use ApiError::*;
        match self {
            InvalidJson(_) => StatusCode::BAD_REQUEST,
            PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Unauthenticated | ApprovalTokenInvalid(_) | SlackRequestRefused(_) => StatusCode::UNAUTHORIZED,
            Forbidden | ForbiddenBecause(_) | PolicyDenied(_) => StatusCode::FORBIDDEN,
            NotFound => StatusCode::NOT_FOUND,
            InvalidState(_) | OperationState(_) | IdempotencyKeyInUse => StatusCode::CONFLICT,
            Validation(_) | UnknownDestination(_) | IdempotencyKeyReused => StatusCode::UNPROCESSABLE_ENTITY,
            RateLimited => StatusCode::TOO_MANY_REQUESTS,
            RailUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        use ApiError::*;
        match self {
            InvalidJson(_) => "invalid_json",
            PayloadTooLarge => "payload_too_large",
            UnsupportedMediaType => "unsupported_media_type",
            Unauthenticated | SlackRequestRefused(_) => "unauthenticated",
            Forbidden | ForbiddenBecause(_) => "forbidden",
            NotFound => "not_found",
            InvalidState(_) | OperationState(_) => "invalid_state",
            IdempotencyKeyInUse => "idempotency_key_in_use",
            Validation(_) => "validation_failed",
            UnknownDestination(_) => "unknown_destination",
            IdempotencyKeyReused => "idempotency_key_reused",
            PolicyDenied(_) => "policy_denied",
            ApprovalTokenInvalid(_) => "approval_token_invalid",
            RateLimited => "rate_limited",
            RailUnavailable => "rail_unavailable",
            Internal(_) => "internal_error",
        }
    }

    /// The JSON envelope `{"error": {code, message, details, request_id}}`.
    pub fn body(&self) -> Value {
        let details = match self {
            ApiError::Validation(fields) => json!(fields),
            ApiError::PolicyDenied(decision) => json!(decision.reasons),
            ApiError::InvalidState(status) => json!([{"current_status": status}]),
            ApiError::OperationState(status) => json!([{"current_status": status}]),
            ApiError::ApprovalTokenInvalid(reason) | ApiError::SlackRequestRefused(reason) => {
                json!([{"reason": reason}])
            }
            _ => json!([]),
        };
        let message = match self {
            ApiError::Validation(fields) => format!(
                "The request is invalid: {}.",
                fields.iter().map(|f| format!("{} {}", f.field, f.message)).collect::<Vec<_>>().join("; ")
            ),
            ApiError::PolicyDenied(d) => format!(
                "Denied by policy: {}",
                d.reasons.iter().map(|r| r.message.as_str()).collect::<Vec<_>>().join(" ")
            ),
            other => {
                let mut m = other.to_string();
                if let Some(first) = m.get(..1) {
                    m = first.to_uppercase() + &m[1..];
                }
                m + "."
            }
        };
        let mut error = json!({
            "code": self.code(),
            "message": message,
            "details": details,
            "request_id": current_request_id(),
        });
        if let ApiError::InvalidState(status) = self {
            error["current_status"] = json!(status);
        }
        if let ApiError::ApprovalTokenInvalid(reason) | ApiError::SlackRequestRefused(reason) = self {
            error["reason"] = json!(reason);
        }
        json!({ "error": error })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Internal(cause) = &self {
            tracing::error!(request_id = %current_request_id(), error = %error_chain(cause.as_ref()), "internal error");
        }
        let mut response = (self.status(), axum::Json(self.body())).into_response();
        if matches!(self, ApiError::PayloadTooLarge) {
            // The rest of the body was not read: the connection cannot be reused.
            response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        if matches!(self, ApiError::Unauthenticated) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
