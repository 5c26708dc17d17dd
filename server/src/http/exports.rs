//! Exports for finance on the console (docs/DEPLOY.md "Exports for
//! finance"): a tenant's payments in a date range as CSV or JSON, streamed
//! a page at a time (`crate::evidence::exports`), to admins and auditors.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::error::ApiError;
use super::extract::ApiQuery;
use super::openapi::error_responses;
use super::session::CurrentUser;
use crate::domain::{FieldError, Role};
use crate::evidence::exports::{Format, Payments, Range, Writer};
use crate::state::Shared;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportParams {
    /// The first UTC day, `YYYY-MM-DD` (proposals created from its start).
    #[param(example = "2026-01-01")]
    from: Option<String>,
    /// The last UTC day, included (default: `from`).
    #[param(example = "2026-12-31")]
    to: Option<String>,
    /// `csv` (default) or `json`.
    format: Option<String>,
}

error_responses!(ExportErrors: Unauthenticated, Forbidden, ValidationFailed, RateLimited, InternalError);

/// Export payments (admins and auditors)
///
/// Every proposal of the signed-in user's tenant created in the range, with
/// its payee, masked destination, amount, status, policy outcome, approvers
/// and their channels, decision time, operation, rail reference and
/// evidence id (the request hash its proof bundle carries), oldest first.
/// CSV (RFC 4180, a header row, CRLF) or a JSON array, streamed as a
/// download. The export is recorded in the audit trail.
#[utoipa::path(
    get,
    path = "/api/v1/console/exports/payments",
    operation_id = "exportPayments",
    tag = "console",
    security(("consoleSession" = [])),
    params(ExportParams),
    responses(
        (status = 200, content_type = "text/csv", description = "The payments, as a download (CSV or JSON)."),
        ExportErrors
    ),
)]
pub async fn payments(
    State(state): State<Shared>,
    user: CurrentUser,
    ApiQuery(params): ApiQuery<ExportParams>,
) -> Result<Response, ApiError> {
    if !Role::exports_evidence(&user.user.roles) {
        return Err(ApiError::ForbiddenBecause("only admins and auditors export payments"));
    }
    let invalid = |field: &str, why: &str| ApiError::Validation(vec![FieldError::new(field, "invalid_value", why)]);
    let range = Range::parse(params.from.as_deref(), params.to.as_deref()).map_err(|e| invalid(e.field, &e.reason))?;
    let format =
        Format::parse(params.format.as_deref().unwrap_or("csv")).ok_or_else(|| invalid("format", "is csv or json"))?;
    let tenant = user.user.tenant_id.clone();
    crate::evidence::exports::audit(&state.db.write, &tenant, &user.actor(), range, format).await?;

    let disposition = format!("attachment; filename=\"payments-{tenant}-{}.{}\"", range.label(), format.extension());
    let body = Body::from_stream(stream(state, Payments::new(&tenant, range), Writer::new(format)));
    Ok((
        [
            (header::CONTENT_TYPE, format.content_type().to_owned()),
            (header::CONTENT_DISPOSITION, disposition),
            (header::CACHE_CONTROL, "no-store".to_owned()),
        ],
        body,
    )
        .into_response())
}

/// The export's bytes: the writer's start, a chunk per page, its finish. A
/// database failure midway ends the body early (the download is then
/// visibly cut, never silently short: CSV has no closing line, JSON no `]`).
fn stream(
    state: Shared,
    payments: Payments,
    writer: Writer,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send {
    enum Step {
        Start,
        Pages,
        Done,
    }
    futures::stream::unfold(
        (state, payments, writer, Step::Start),
        |(state, mut payments, mut writer, step)| async move {
            match step {
                Step::Start => {
                    let head = Bytes::from(writer.start());
                    Some((Ok(head), (state, payments, writer, Step::Pages)))
                }
                Step::Pages => match payments.next_page(&state.db.read).await {
                    Ok(Some(page)) => {
                        let chunk = Bytes::from(writer.page(&page));
                        Some((Ok(chunk), (state, payments, writer, Step::Pages)))
                    }
                    Ok(None) => {
                        let tail = Bytes::from(writer.finish());
                        Some((Ok(tail), (state, payments, writer, Step::Done)))
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "payments export failed midway");
                        Some((Err(std::io::Error::other("export failed")), (state, payments, writer, Step::Done)))
                    }
                },
                Step::Done => None,
            }
        },
    )
}
