//! `POST /bulk/decision` (form): one decision over the proposals a reviewer
//! listed on the bulk page (`/bulk?id=…`). Each goes through `decide` on its
//! own; the page then shows each one's outcome.

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;

use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use std::sync::Arc;

use super::openapi::error_responses;
use crate::decision::approval::{
    self,
    approve::{DecideError, Verdict},
};
use crate::people::passkeys::step_up::{self, Asker, StepUp, StepUpOptions};
use crate::state::Shared;

use super::console::{step_up_fields, CsrfHeader};
use super::error::ApiError;
use super::extract::{typed, JsonBody};
use super::session::CurrentUser;

/// The bulk page again, for these ids, with `extra` pairs (outcomes, an error).
fn bulk_page(ids: &[String], extra: &[(&str, String)]) -> Response {
    let mut pairs: Vec<(&str, &str)> = ids.iter().map(|id| ("id", id.as_str())).collect();
    pairs.extend(extra.iter().map(|(k, v)| (*k, v.as_str())));
    Redirect::to(&format!("/bulk?{}", serde_urlencoded::to_string(pairs).unwrap_or_default())).into_response()
}

pub use crate::decision::approval::approve::listed_ids;

/// Fields: `id` (repeated, at most 50), `decision` (`approve`|`reject`),
/// `reason` (to reject), `csrf_token` (checked by the CSRF layer), and to
/// approve with a passkey the `step_up_*` fields: one assertion over the
/// listed set (`POST /api/v1/bulk/step-up`).
pub async fn bulk_form(
    State(state): State<Shared>,
    user: Option<CurrentUser>,
    Form(fields): Form<Vec<(String, String)>>,
) -> Response {
    let Some(user) = user else { return Redirect::to("/login").into_response() };
    let field = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let ids = listed_ids(&fields);
    if ids.is_empty() {
        return Redirect::to("/").into_response();
    }
    let verdict = match field("decision") {
        Some("approve") => Verdict::Approve,
        Some("reject") if field("reason").is_some_and(|r| !r.trim().is_empty()) => {
            Verdict::Reject { reason: field("reason").unwrap_or_default().to_owned() }
        }
        Some("reject") => return bulk_page(&ids, &[("error", "reason_required".into())]),
        _ => return bulk_page(&ids, &[("error", "invalid".into())]),
    };
    let approving = verdict == Verdict::Approve;
    let mut approver = user.approver("console");
    let answer = step_up_fields(
        field("step_up_challenge_id"),
        field("step_up_credential_id"),
        field("step_up_authenticator_data"),
        field("step_up_client_data_json"),
        field("step_up_signature"),
    );
    if let (true, Some(answer)) = (approving, answer) {
        let asker = Asker::from(&user.user);
        // One assertion over the set as listed, verified (and its nonce
        // spent) before any of them is decided; each approval then checks
        // its proposal is still as listed.
        match step_up::verify_listed(&state, &asker, &ids, &answer, state.now()).await {
            Ok(proof) => approver.step_up = Some(StepUp::Listed(Arc::new(proof))),
            Err(e) => {
                let e = DecideError::from(e);
                if e.code() == "error" {
                    tracing::error!(error = %e, "bulk step-up failed");
                }
                return bulk_page(&ids, &[("error", e.code().into())]);
            }
        }
    }
    let results = match approval::approve::decide_many(&state, &approver, &ids, &verdict, state.now()).await {
        Ok(results) => results,
        // Nothing was decided: the page pairs the twins until one is dropped.
        Err(approval::approve::BulkRefusal::Twins(_)) => return bulk_page(&ids, &[("error", "duplicate_pair".into())]),
        Err(approval::approve::BulkRefusal::Store(e)) => return ApiError::from(e).into_response(),
    };
    let outcomes: Vec<(&str, String)> = results
        .iter()
        .map(|(id, result)| {
            let code = match result {
                Ok(_) if approving => "approved",
                Ok(_) => "rejected",
                Err(e) => {
                    if e.code() == "error" {
                        tracing::error!(error = %e, proposal_id = %id, "bulk decision failed");
                    }
                    e.code()
                }
            };
            ("outcome", format!("{id}:{code}"))
        })
        .collect();
    bulk_page(&ids, &outcomes)
}

/// `POST /api/v1/bulk/step-up`'s body.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = BulkStepUpRequest)]
#[serde(deny_unknown_fields)]
pub struct BulkStepUpBody {
    /// The proposal ids as the bulk page lists them, in that order: 1 to 50
    /// (a repeated id counts once).
    #[schema(min_items = 1, max_items = 50)]
    ids: Vec<String>,
}

error_responses!(BulkStepUpErrors: InvalidJson, UnsupportedMediaType, Unauthenticated, Forbidden, StepUpRequired,
    NotFound, ValidationFailed, InternalError);

/// A step-up challenge for approving a listed set at once
///
/// One assertion over every listed proposal (its id and request hash, in
/// the order given), the approver and a single-use nonce: the options for
/// `navigator.credentials.get`. The assertion goes back with the bulk
/// decision form; a changed set, or a listed payment changed since, is
/// refused.
#[utoipa::path(
    post,
    path = "/api/v1/bulk/step-up",
    operation_id = "startBulkStepUp",
    tag = "console",
    security(("consoleSession" = [])),
    params(CsrfHeader),
    request_body(content = BulkStepUpBody, content_type = "application/json"),
    responses((status = 201, body = StepUpOptions, description = "The request options."), BulkStepUpErrors),
)]
pub async fn step_up_json(
    State(state): State<Shared>,
    user: CurrentUser,
    JsonBody { value }: JsonBody,
) -> Result<(StatusCode, Json<StepUpOptions>), ApiError> {
    let BulkStepUpBody { ids } = typed(value)?;
    if ids.len() > crate::decision::approval::approve::BULK_MAX {
        let why = format!("list at most {} proposals", crate::decision::approval::approve::BULK_MAX);
        return Err(ApiError::Validation(vec![crate::domain::FieldError::new("ids", "invalid_value", why)]));
    }
    let fields: Vec<(String, String)> = ids.into_iter().map(|id| ("id".to_owned(), id)).collect();
    let ids = listed_ids(&fields);
    if ids.is_empty() {
        let why = "list at least one proposal";
        return Err(ApiError::Validation(vec![crate::domain::FieldError::new("ids", "invalid_value", why)]));
    }
    let asker = Asker::from(&user.user);
    Ok((StatusCode::CREATED, Json(step_up::start_listed(&state, &asker, &ids, state.now()).await?)))
}
