//! The one place errors become HTTP responses with the contract's codes.
//! 5xx bodies are generic; the cause is logged with its chain.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::decision::policy::{Decision, Reason};
use crate::domain::{FieldError, ProposalStatus};

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
    /// The body must be of this media type (a route that reads no JSON).
    #[error("the body must be {0}")]
    UnsupportedMediaTypeOf(&'static str),
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
    /// A batch (or its line) in this status (`crate::payables::batches`).
    #[error("the batch is {0}")]
    BatchState(&'static str),
    /// An approval named a batch hash that is no longer the batch's.
    #[error("the batch changed since you reviewed it (a line was held back; its hash is now {1}): review it again")]
    BatchChanged(&'static str, String),
    #[error("a request with this Idempotency-Key is still being processed")]
    IdempotencyKeyInUse,
    #[error("the request is invalid")]
    Validation(Vec<FieldError>),
    /// A file refused whole: every bad row (`crate::payables::import`).
    #[error("the file was refused; nothing was imported")]
    ImportRejected(Vec<crate::payables::import::RowError>),
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
    #[error("the request is not an authenticated Bot Framework request ({0})")]
    TeamsRequestRefused(&'static str),
    /// Approving needs a passkey assertion over the payment (or a passkey
    /// first): the reason and what to do.
    #[error("{1}")]
    StepUpRequired(&'static str, String),
    /// The step-up assertion was refused: the verifier's code and why.
    #[error("{1}")]
    PasskeyRefused(&'static str, String),
    /// 429 with `Retry-After`: this many seconds (at least 1, rounded up).
    #[error("too many requests")]
    RetryAfter(std::time::Duration),
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
        self.error_code().status()
    }

    pub fn code(&self) -> &'static str {
        self.error_code().as_str()
    }

    /// The contract's code for this error (SPEC §9).
    pub fn error_code(&self) -> ErrorCode {
        use ApiError::*;
        match self {
            InvalidJson(_) => ErrorCode::InvalidJson,
            PayloadTooLarge => ErrorCode::PayloadTooLarge,
            UnsupportedMediaType | UnsupportedMediaTypeOf(_) => ErrorCode::UnsupportedMediaType,
            Unauthenticated | SlackRequestRefused(_) | TeamsRequestRefused(_) => ErrorCode::Unauthenticated,
            Forbidden | ForbiddenBecause(_) => ErrorCode::Forbidden,
            NotFound => ErrorCode::NotFound,
            InvalidState(_) | OperationState(_) | BatchState(_) | BatchChanged(..) => ErrorCode::InvalidState,
            IdempotencyKeyInUse => ErrorCode::IdempotencyKeyInUse,
            Validation(_) | ImportRejected(_) => ErrorCode::ValidationFailed,
            UnknownDestination(_) => ErrorCode::UnknownDestination,
            IdempotencyKeyReused => ErrorCode::IdempotencyKeyReused,
            PolicyDenied(_) => ErrorCode::PolicyDenied,
            ApprovalTokenInvalid(_) => ErrorCode::ApprovalTokenInvalid,
            StepUpRequired(..) => ErrorCode::StepUpRequired,
            PasskeyRefused(..) => ErrorCode::PasskeyRefused,
            RetryAfter(_) => ErrorCode::RateLimited,
            RailUnavailable => ErrorCode::RailUnavailable,
            Internal(_) => ErrorCode::InternalError,
        }
    }

    /// The envelope `{"error": {code, message, details, request_id}}`.
    pub fn envelope(&self) -> ErrorEnvelope {
        let details = match self {
            ApiError::Validation(fields) => fields.iter().cloned().map(ErrorDetail::Field).collect(),
            ApiError::ImportRejected(rows) => rows.iter().cloned().map(ErrorDetail::Row).collect(),
            ApiError::PolicyDenied(decision) => decision.reasons.iter().cloned().map(ErrorDetail::Rule).collect(),
            ApiError::InvalidState(status) => vec![ErrorDetail::CurrentStatus { current_status: status.as_str() }],
            ApiError::OperationState(status) | ApiError::BatchState(status) | ApiError::BatchChanged(status, _) => {
                vec![ErrorDetail::CurrentStatus { current_status: status }]
            }
            ApiError::ApprovalTokenInvalid(reason)
            | ApiError::SlackRequestRefused(reason)
            | ApiError::TeamsRequestRefused(reason)
            | ApiError::StepUpRequired(reason, _)
            | ApiError::PasskeyRefused(reason, _) => vec![ErrorDetail::Reason { reason }],
            _ => Vec::new(),
        };
        let message = match self {
            ApiError::Validation(fields) => format!(
                "The request is invalid: {}.",
                fields.iter().map(|f| format!("{} {}", f.field, f.message)).collect::<Vec<_>>().join("; ")
            ),
            ApiError::ImportRejected(rows) => format!(
                "Nothing was imported: the file has {} problem{} ({}).",
                rows.len(),
                if rows.len() == 1 { "" } else { "s" },
                rows.iter()
                    .take(5)
                    .map(|r| match &r.column {
                        Some(c) => format!("line {} {c}: {}", r.line, r.message),
                        None => format!("line {}: {}", r.line, r.message),
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
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
        let reason = match self {
            ApiError::ApprovalTokenInvalid(reason)
            | ApiError::SlackRequestRefused(reason)
            | ApiError::TeamsRequestRefused(reason)
            | ApiError::StepUpRequired(reason, _)
            | ApiError::PasskeyRefused(reason, _) => Some(*reason),
            _ => None,
        };
        let current_status = match self {
            ApiError::InvalidState(status) => Some(*status),
            _ => None,
        };
        ErrorEnvelope {
            error: ErrorBody {
                code: self.error_code(),
                message,
                details,
                request_id: current_request_id(),
                reason,
                current_status,
            },
        }
    }

    /// [`ApiError::envelope`] as JSON.
    pub fn body(&self) -> Value {
        serde_json::to_value(self.envelope()).expect("the error envelope serializes")
    }
}

/// Defines [`ErrorCode`] from one table: each code's variant, its text
/// (SPEC §9) and the HTTP status it travels with.
macro_rules! error_codes {
    ($($variant:ident = $text:literal => $status:ident,)+) => {
        /// Every `error.code` of the API (SPEC §9). Each travels with one HTTP
        /// status; the OpenAPI document lists them per response from here.
        // Serialized in snake case, which is each code's text (a test in
        // openapi.rs checks that the two agree).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
        #[serde(rename_all = "snake_case")]
        pub enum ErrorCode {
            $($variant,)+
        }

        impl ErrorCode {
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),+];

            pub fn as_str(&self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $text,)+
                }
            }

            pub fn status(&self) -> StatusCode {
                match self {
                    $(ErrorCode::$variant => StatusCode::$status,)+
                }
            }
        }
    };
}

error_codes! {
    InvalidJson = "invalid_json" => BAD_REQUEST,
    PayloadTooLarge = "payload_too_large" => PAYLOAD_TOO_LARGE,
    UnsupportedMediaType = "unsupported_media_type" => UNSUPPORTED_MEDIA_TYPE,
    Unauthenticated = "unauthenticated" => UNAUTHORIZED,
    ApprovalTokenInvalid = "approval_token_invalid" => UNAUTHORIZED,
    Forbidden = "forbidden" => FORBIDDEN,
    PolicyDenied = "policy_denied" => FORBIDDEN,
    StepUpRequired = "step_up_required" => FORBIDDEN,
    PasskeyRefused = "passkey_refused" => FORBIDDEN,
    NotFound = "not_found" => NOT_FOUND,
    InvalidState = "invalid_state" => CONFLICT,
    IdempotencyKeyInUse = "idempotency_key_in_use" => CONFLICT,
    ValidationFailed = "validation_failed" => UNPROCESSABLE_ENTITY,
    UnknownDestination = "unknown_destination" => UNPROCESSABLE_ENTITY,
    IdempotencyKeyReused = "idempotency_key_reused" => UNPROCESSABLE_ENTITY,
    RateLimited = "rate_limited" => TOO_MANY_REQUESTS,
    RailUnavailable = "rail_unavailable" => SERVICE_UNAVAILABLE,
    InternalError = "internal_error" => INTERNAL_SERVER_ERROR,
}

impl ErrorCode {
    /// What the code tells a client, for the OpenAPI document.
    pub fn meaning(&self) -> &'static str {
        use ErrorCode::*;
        match self {
            InvalidJson => "The body is not valid JSON (or repeats a member name).",
            PayloadTooLarge => "The body is over 64 KiB.",
            UnsupportedMediaType => "The body is not `application/json` (`text/csv` for an invoice import).",
            Unauthenticated => {
                "Missing, unknown or revoked credential, or an expired session; at sign-in, a wrong username \
                 or password (the same answer for both)."
            }
            ApprovalTokenInvalid => {
                "The approval token does not authorize this commit; `reason` names the check that failed: \
                 signature, unknown `kid` or one marked compromised, `alg` or `typ`, `iss`/`aud`, outside `nbf`/`exp`, a token for another \
                 proposal, tenant or agent, a request hash mismatch, or already used for another operation."
            }
            Forbidden => {
                "This credential may not do that: a missing or wrong `X-CSRF-Token`, a role that does not \
                 allow it, or segregation of duties (the human the agent acts for, or the same person twice \
                 in a dual approval)."
            }
            PolicyDenied => {
                "Policy, the daily budget or an approver's limit does not allow it (now: policy is checked \
                 again at approval and commit); `details` lists the rules that fired. A proposal denied at \
                 creation is not stored, only audited."
            }
            StepUpRequired => {
                "Approving this payment needs a passkey assertion over it (`reason` `assertion_required`: ask \
                 `POST /api/v1/proposals/{id}/step-up` for a challenge, sign it, send it as `step_up`), or a \
                 passkey first (`no_passkey`: register one on the account page), or a passkey past its \
                 cool-off (`passkey_cooling_off`: a new one approves after `passkeys.cool_off_secs`, or once an \
                 admin confirms it). Adding a passkey needs an assertion by one the user holds or an enrolment \
                 code, and removing one an assertion over that removal (`authorization_required`)."
            }
            PasskeyRefused => {
                "The step-up assertion was refused; `reason` names why: the verifier's code (`wrong_challenge` \
                 when the payment, the approver or the nonce differs, `bad_signature`, `counter_went_back`…), \
                 `no_challenge` (unknown, used or expired), `unknown_passkey` (not one of yours), `not_base64`."
            }
            NotFound => "No such object for this tenant (another tenant's objects are never revealed).",
            InvalidState => {
                "The object's current status does not allow this; `current_status` (also in `details`) names it."
            }
            IdempotencyKeyInUse => {
                "The first request under this `Idempotency-Key` is still in flight; retry later with the same key."
            }
            ValidationFailed => {
                "`details` names every offending field or query parameter (unknown, missing, wrong type, out \
                 of range), or, for an invoice import, every bad row (`line`, `column`, `message`)."
            }
            UnknownDestination => "The destination is not in the tenant's payee registry.",
            IdempotencyKeyReused => "The `Idempotency-Key` was first used with a different body.",
            RateLimited => "Too many requests; retry after `Retry-After` seconds.",
            RailUnavailable => "The payment rail could not be reached; try again.",
            InternalError => "An internal error; the body is generic and the cause is logged under `request_id`.",
        }
    }
}

/// Every error's body (SPEC §9). 5xx bodies are generic; the cause is
/// logged under `request_id`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Error)]
pub struct ErrorEnvelope {
    pub error: ErrorBody,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    pub code: ErrorCode,
    /// For humans; do not parse.
    pub message: String,
    /// For `validation_failed`, one `FieldError` per offending field; for
    /// `policy_denied`, the rules that fired; for `invalid_state`, the
    /// current status; for `approval_token_invalid`, the reason; otherwise
    /// empty.
    pub details: Vec<ErrorDetail>,
    pub request_id: String,
    /// With `approval_token_invalid`, `step_up_required` or
    /// `passkey_refused`: which check failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// With `invalid_state` on a proposal: its status now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_status: Option<ProposalStatus>,
}

/// One entry of `error.details`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ErrorDetail {
    Field(FieldError),
    Rule(Reason),
    /// A bad row of an imported file: its line (1 is the header), its
    /// column when one field is at fault, and why.
    Row(crate::payables::import::RowError),
    /// The status (of the proposal, or of the operation) that refused the request.
    CurrentStatus {
        current_status: &'static str,
    },
    /// Why an approval token or a signed request was refused.
    Reason {
        reason: &'static str,
    },
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
        if let ApiError::RetryAfter(wait) = self {
            let secs = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
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
