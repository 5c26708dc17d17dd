//! `POST /bulk/decision` (form): one decision over the proposals a reviewer
//! listed on the bulk page (`/bulk?id=…`). Each goes through `decide` on its
//! own; the page then shows each one's outcome.

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;

use crate::approvals::{self, Verdict, BULK_MAX};
use crate::state::Shared;

use super::session::CurrentUser;

/// The bulk page again, for these ids, with `extra` pairs (outcomes, an error).
fn bulk_page(ids: &[String], extra: &[(&str, String)]) -> Response {
    let mut pairs: Vec<(&str, &str)> = ids.iter().map(|id| ("id", id.as_str())).collect();
    pairs.extend(extra.iter().map(|(k, v)| (*k, v.as_str())));
    Redirect::to(&format!("/bulk?{}", serde_urlencoded::to_string(pairs).unwrap_or_default())).into_response()
}

/// The proposal ids of a bulk form or page (`id`, repeated): each once, in
/// the order given, at most [`BULK_MAX`].
pub fn listed_ids(fields: &[(String, String)]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for (_, id) in fields.iter().filter(|(k, _)| k == "id") {
        if !ids.contains(id) && ids.len() < BULK_MAX {
            ids.push(id.clone());
        }
    }
    ids
}

/// Fields: `id` (repeated, at most 50), `decision` (`approve`|`reject`),
/// `reason` (to reject), `csrf_token` (checked by the CSRF layer).
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
    let results = approvals::decide_many(&state, &user.approver("console"), &ids, &verdict, state.now()).await;
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
