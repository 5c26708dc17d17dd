//! `POST /integrations/teams/messages`: the bot's messaging endpoint, where
//! the Bot Framework delivers Teams activities (a press on a card's
//! `Action.Execute` arrives as an `adaptiveCard/action` invoke).
//!
//! Order matters: the bearer token is verified first (`server::teams`, the
//! core's `teams::token`), then the activity is parsed and checked against
//! the token (`serviceUrl`, channel, the key's endorsement), then it is
//! remembered so a replay is refused, and only then is it acted on. The
//! answer to a press is the card that replaces it for the presser.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use sha2::{Digest, Sha256};

use super::error::ApiError;
use crate::domain::FieldError;
use crate::notify::teams::activity::{Activity, Kind};
use crate::notify::teams::token::{self, Refusal};
use crate::state::Shared;

/// Activities are small; anything larger is refused unread.
pub const MAX_BODY: usize = 256 * 1024;

fn refuse(refusal: Refusal) -> Response {
    tracing::warn!(reason = refusal.reason(), "teams request refused");
    ApiError::TeamsRequestRefused(refusal.reason()).into_response()
}

pub async fn messages(State(state): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let now = state.now();
    let authorization = headers.get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let verified = match state.bot.verify(authorization, now.timestamp()).await {
        Ok(v) => v,
        Err(refusal) => return refuse(refusal),
    };
    let activity = match Activity::parse(&body) {
        Ok(a) => a,
        Err(e) => {
            return ApiError::Validation(vec![FieldError::new("activity", "invalid", e.to_string())]).into_response()
        }
    };
    if let Err(refusal) = token::check_activity(&verified, &activity.service_url, &activity.channel_id) {
        return refuse(refusal);
    }
    // Remembered while the token that carried it could verify again.
    let key = hex::encode(Sha256::digest(format!("{}:{}", activity.conversation_id, activity.id)));
    let keep_until = chrono::DateTime::from_timestamp(verified.expires_at + token::LEEWAY_SECS, 0).unwrap_or(now);
    match crate::store::teams::first_sighting(&state.db.write, &key, keep_until.max(now)).await {
        Ok(true) => {}
        Ok(false) => return refuse(Refusal::Replayed),
        Err(e) => return ApiError::from(e).into_response(),
    }
    match &activity.kind {
        Kind::CardAction(press) => match crate::notify::teams::press::handle(&*state, &activity, press).await {
            Ok(answer) => Json(answer.invoke).into_response(),
            Err(e) => ApiError::from(e).into_response(),
        },
        Kind::Other => StatusCode::OK.into_response(),
    }
}
