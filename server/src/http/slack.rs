//! `POST /integrations/slack/interactions`: Slack's button presses.
//!
//! Order matters: the signature is checked over the raw bytes first (no
//! parsing before it), then the request is remembered so a replay is
//! refused, and only then is the payload parsed. The press is handled on
//! its own task; the answer (an empty 200) goes back within 2.5 s whatever
//! happens, and the presser hears the outcome through `response_url`.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::time::Duration;

use super::error::ApiError;
use crate::domain::FieldError;
use crate::notify::slack::press;
use crate::notify::slack::{interaction::Interaction, signature};
use crate::state::Shared;

/// Slack's payloads are small; anything larger is refused unread.
pub const MAX_BODY: usize = 64 * 1024;

/// How long the press may take before Slack is answered anyway (Slack
/// gives up after 3 s).
const ANSWER_WITHIN: Duration = Duration::from_millis(2_500);

pub async fn interactions(State(state): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let now = state.now();
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (timestamp, signature) = (header("x-slack-request-timestamp"), header("x-slack-signature"));
    if let Err(refusal) =
        signature::verify(&state.settings.slack.signing_secrets, timestamp, signature, &body, now.timestamp())
    {
        tracing::warn!(reason = refusal.reason(), "slack request refused");
        return ApiError::SlackRequestRefused(refusal.reason()).into_response();
    }
    // Both headers are present once verified.
    let seen = format!("{}:{}", timestamp.unwrap_or_default(), signature.unwrap_or_default());
    let key = hex::encode(Sha256::digest(seen.as_bytes()));
    match crate::store::slack::first_sighting(&state.db.write, &key, now).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::warn!(reason = "replayed", "slack request refused");
            return ApiError::SlackRequestRefused("replayed").into_response();
        }
        Err(e) => return ApiError::from(e).into_response(),
    }
    let press = match Interaction::parse(&body) {
        Ok(press) => press,
        Err(e) => {
            return ApiError::Validation(vec![FieldError::new("payload", "invalid", e.to_string())]).into_response()
        }
    };
    let task = tokio::spawn({
        let state = state.clone();
        async move { press::handle(&state, press).await }
    });
    match tokio::time::timeout(ANSWER_WITHIN, task).await {
        Ok(Ok(Ok(_))) => StatusCode::OK.into_response(),
        Ok(Ok(Err(e))) => ApiError::from(e).into_response(),
        Ok(Err(join)) => ApiError::Internal(Box::new(join)).into_response(),
        Err(_) => {
            tracing::warn!("slack press still running after 2.5 s; answered, it finishes on its own");
            StatusCode::OK.into_response()
        }
    }
}
