//! The console's own actions: the documented JSON endpoints (session cookie +
//! `X-CSRF-Token`) and the HTML form posts the pages use (so approve and
//! reject work without JavaScript). Both call the same functions.

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Form, Json};
use serde::{Deserialize, Serialize};
use tower_sessions::Session;

use super::agent::ProposalPath;
use super::error::ApiError;
use super::extract::ApiQuery;
use super::extract::{typed, JsonBody};
use super::openapi::error_responses;
use super::session::{self, client_address, CurrentUser, SignInError};
use crate::commit::operations::{Resolution, ResolveError};
use crate::decision::approval::approve::{self, DecideError, Verdict};
use crate::decision::queue::{ListQuery, QueueParams};
use crate::domain::Role;
use crate::domain::{FieldError, ProposalStatus, ReturnPath};
use crate::intake::proposals::{self, ProposalView};
use crate::people::passkeys::step_up::{self, Asker, StepUp, StepUpAnswer, StepUpError, StepUpOptions};
use crate::state::Shared;

impl From<DecideError> for ApiError {
    fn from(e: DecideError) -> Self {
        match e {
            DecideError::NotFound => ApiError::NotFound,
            DecideError::NotAnApprover => ApiError::ForbiddenBecause("only approvers can decide on proposals"),
            DecideError::InvalidState(s) => ApiError::InvalidState(s),
            DecideError::BadReason { field, why } => {
                ApiError::Validation(vec![FieldError::new(field, "invalid_value", why)])
            }
            DecideError::Denied(d) => ApiError::PolicyDenied(d),
            DecideError::Token(e) => ApiError::Internal(e.into()),
            DecideError::StepUp(e) => e.into(),
            DecideError::Store(e) => e.into(),
        }
    }
}

impl From<StepUpError> for ApiError {
    fn from(e: StepUpError) -> Self {
        let reason = e.reason();
        match e {
            StepUpError::Required | StepUpError::NoPasskey | StepUpError::CoolingOff(_) => {
                ApiError::StepUpRequired(reason, e.to_string())
            }
            StepUpError::NotFound => ApiError::NotFound,
            StepUpError::NoRelyingParty => ApiError::Internal(Box::new(e)),
            StepUpError::Store(s) => s.into(),
            _ => ApiError::PasskeyRefused(reason, e.to_string()),
        }
    }
}

impl From<ResolveError> for ApiError {
    fn from(e: ResolveError) -> Self {
        match e {
            ResolveError::NotFound => ApiError::NotFound,
            ResolveError::NotAnAdmin => ApiError::ForbiddenBecause("only admins can resolve operations"),
            ResolveError::InvalidState(s) => ApiError::OperationState(s),
            ResolveError::BadInput(field, why) => {
                ApiError::Validation(vec![FieldError::new(field, "invalid_value", why)])
            }
            ResolveError::RailUnavailable => ApiError::RailUnavailable,
            ResolveError::Store(e) => e.into(),
        }
    }
}

/// `POST /api/v1/session`'s body.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = SignInRequest)]
#[serde(deny_unknown_fields)]
pub struct SignInBody {
    #[schema(min_length = 1)]
    username: String,
    #[schema(min_length = 1, format = Password)]
    password: String,
}

/// `POST /api/v1/proposals/{id}/approvals`'s body.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = DecisionRequest)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    decision: DecisionWord,
    /// Required to reject: 1–500 characters, not blank.
    #[schema(min_length = 1, max_length = 500)]
    reason: Option<String>,
    /// To approve at or above the step-up threshold: the passkey assertion
    /// over this proposal's step-up challenge.
    step_up: Option<StepUpAnswer>,
    /// To approve a proposal whose invoice is already approved or paid: why
    /// this payment is not a duplicate (1–500 characters). Without it that
    /// approval is refused (403 `policy_denied`, rule `duplicate_invoice`);
    /// with it one more approver is needed than policy otherwise asks.
    #[schema(min_length = 1, max_length = 500)]
    not_duplicate_reason: Option<String>,
    /// To approve for someone away: their username, with a delegation of
    /// theirs to you in force (`/api/v1/me/delegations`). The approval then
    /// counts for them, passes every rule for both of you (the lower of your
    /// two limits), and is refused (403 `policy_denied`, rule `delegation`)
    /// without one. Approvals only; a rejection is always your own.
    #[schema(max_length = 64)]
    on_behalf_of: Option<String>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, utoipa::ToSchema)]
#[schema(as = ApprovalDecision)]
#[serde(rename_all = "snake_case")]
enum DecisionWord {
    Approve,
    Reject,
}

/// `POST /api/v1/operations/{id}/resolution`'s body:
/// `{"outcome": "succeeded", "rail_reference": "tr_…"}` or
/// `{"outcome": "failed", "reason": "…"}`.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = ResolutionRequest)]
#[serde(deny_unknown_fields)]
pub struct ResolutionBody {
    outcome: OutcomeWord,
    /// With `succeeded`: one of the rail's own records for this operation
    /// (see `rail-records`).
    #[schema(pattern = "^trr?_[A-Za-z0-9_]+$")]
    rail_reference: Option<String>,
    /// With `failed`: why (it becomes the operation's error message).
    #[schema(min_length = 1, max_length = 500)]
    reason: Option<String>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, utoipa::ToSchema)]
#[schema(as = ResolutionOutcome)]
#[serde(rename_all = "snake_case")]
enum OutcomeWord {
    Succeeded,
    Failed,
}

/// The signed-in user and the CSRF token.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Session)]
pub struct SessionBody {
    user: SessionUser,
    /// Send back as `X-CSRF-Token` on every state-changing request.
    csrf_token: String,
}

impl SessionBody {
    /// The answer of a sign-in that started `current`'s session.
    pub fn of(current: &CurrentUser) -> SessionBody {
        let viewer = current.viewer();
        let user = SessionUser {
            id: viewer.user_id,
            username: viewer.username,
            tenant_id: viewer.tenant_id,
            roles: viewer.roles,
        };
        SessionBody { user, csrf_token: viewer.csrf_token }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
struct SessionUser {
    id: String,
    username: String,
    tenant_id: String,
    roles: Vec<Role>,
}

/// An operation id in a path (`op_…`).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct OperationPath {
    /// The operation id (`op_…`).
    #[param(pattern = "^op_")]
    pub id: String,
}

error_responses!(SignInErrors: InvalidJson, Unauthenticated, Forbidden, PayloadTooLarge, UnsupportedMediaType,
    ValidationFailed, RateLimited, InternalError);

/// Sign in to the console
///
/// `{"username", "password"}` → the user and the CSRF token. Starts a
/// session (a fresh session id; HttpOnly, SameSite=Lax, Secure over
/// HTTPS) and returns the CSRF token to send back as `X-CSRF-Token`. A wrong
/// username and a wrong password give the same 401. Repeated failures are
/// throttled (429). The right password of a user whose tenant signs in
/// only with single sign-on is 403 `forbidden`.
#[utoipa::path(
    post,
    path = "/api/v1/session",
    operation_id = "signIn",
    tag = "console",
    security(()),
    request_body(content = SignInBody, content_type = "application/json"),
    responses(
        (status = 200, body = SessionBody, description = "Signed in.",
            headers(("Set-Cookie" = String, description = "The session cookie (HttpOnly; SameSite=Lax; Secure over HTTPS)."))),
        SignInErrors,
    ),
)]
pub async fn sign_in_json(
    State(state): State<Shared>,
    session: Session,
    request: axum::extract::Request,
) -> Result<Response, ApiError> {
    let address = client_address(&state, &request);
    let device = session::cookie_value(request.headers(), session::DEVICE_COOKIE);
    let JsonBody { value } = <JsonBody as axum::extract::FromRequest<Shared>>::from_request(request, &state).await?;
    let SignInBody { username, password } = typed(value)?;
    let (username, password) = (username.as_str(), password.as_str());
    match session::sign_in(&state, &session, (username, password), &address, device.as_deref()).await {
        Ok(signed_in) => {
            let mut response = Json(SessionBody::of(&signed_in.current)).into_response();
            remember_device(&state, &mut response, signed_in.new_device.as_deref());
            Ok(response)
        }
        Err(e) => Err(e.into()),
    }
}

error_responses!(SignOutErrors: Unauthenticated, Forbidden, InternalError);

/// Sign out
///
/// Ends the session and purges it from the store.
#[utoipa::path(
    delete,
    path = "/api/v1/session",
    operation_id = "signOut",
    tag = "console",
    security(("consoleSession" = [])),
    params(CsrfHeader),
    responses((status = 204, description = "Signed out; the session cookie is cleared."), SignOutErrors),
)]
pub async fn sign_out_json(
    State(state): State<Shared>,
    _user: CurrentUser,
    session: Session,
) -> Result<StatusCode, ApiError> {
    session::sign_out(&state, &session).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The `X-CSRF-Token` header of every state-changing console request.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)] // read by the CSRF guard (`csrf.rs`), not by the handlers
pub struct CsrfHeader {
    /// The `csrf_token` returned by `POST /api/v1/session`.
    #[param(rename = "X-CSRF-Token", min_length = 1)]
    csrf_token: String,
}

error_responses!(QueueErrors: Unauthenticated, Forbidden, ValidationFailed, InternalError);

/// One risk signal of a proposal waiting for a decision (docs/CONFIG.md,
/// "Risk signals").
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RiskSignal {
    #[schema(examples("duplicate_invoice", "first_payment", "unusual_amount", "new_payee", "payee_changed"))]
    pub code: &'static str,
    /// The signal in a sentence, for a person.
    pub message: String,
}

/// A proposal in the queue: as its agent sees it (never with the approval
/// token), and its risk signals while it waits for a decision.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct QueueEntry {
    #[serde(flatten)]
    pub proposal: ProposalView,
    /// Empty unless the proposal waits for a decision.
    pub risk_signals: Vec<RiskSignal>,
}

/// A page of the review queue.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct QueuePageBody {
    pub data: Vec<QueueEntry>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// The review queue
///
/// The tenant's proposals with one status (`pending_approval` by default),
/// searched by payee, currency and amount range, agent, invoice id and
/// creation day; newest or oldest first, by amount, or soonest to expire;
/// cursor-paginated.
#[utoipa::path(
    get,
    path = "/api/v1/queue",
    operation_id = "listQueue",
    tag = "console",
    security(("consoleSession" = [])),
    params(QueueParams),
    responses((status = 200, body = QueuePageBody, description = "A page of the queue."), QueueErrors),
)]
pub async fn queue(
    State(state): State<Shared>,
    user: CurrentUser,
    ApiQuery(p): ApiQuery<QueueParams>,
) -> Result<Json<QueuePageBody>, ApiError> {
    let query = ListQuery::parse(&p).map_err(ApiError::Validation)?;
    let (rows, next_cursor) = query.run(&state, &user.user.tenant_id, None).await?;
    let views = proposals::views(&state, rows.clone()).await?;
    let signals_of = crate::intake::risk::signals_while_waiting(&state, &rows).await?;
    let mut data = Vec::with_capacity(views.len());
    for (proposal, signals) in views.into_iter().zip(signals_of) {
        let risk_signals = signals.into_iter().map(|s| RiskSignal { code: s.code, message: s.message }).collect();
        data.push(QueueEntry { proposal, risk_signals });
    }
    Ok(Json(QueuePageBody { data, next_cursor }))
}

fn verdict(decision: DecisionWord, reason: Option<String>) -> Verdict {
    match decision {
        DecisionWord::Approve => Verdict::Approve,
        DecisionWord::Reject => Verdict::Reject { reason: reason.unwrap_or_default() },
    }
}

error_responses!(DecideErrors: InvalidJson, Unauthenticated, Forbidden, PolicyDenied, StepUpRequired, PasskeyRefused,
    NotFound, InvalidState, PayloadTooLarge, UnsupportedMediaType, ValidationFailed, RateLimited, InternalError);

/// Approve or reject a proposal
///
/// `{"decision": "approve"|"reject", "reason": "..."}`; a reason is
/// required to reject. The same domain checks as every other approval path
/// (console page, Slack button). When the last required approval is given,
/// the proposal becomes `approved` and an approval token is minted for the
/// agent.
#[utoipa::path(
    post,
    path = "/api/v1/proposals/{id}/approvals",
    operation_id = "decideProposal",
    tag = "console",
    security(("consoleSession" = [])),
    params(ProposalPath, CsrfHeader),
    request_body(content = DecisionBody, content_type = "application/json"),
    responses(
        (status = 200, body = ProposalView,
            description = "The proposal after the decision (never carries `approval_token`: that goes only to the \
                owning agent)."),
        DecideErrors,
    ),
)]
pub async fn decide_json(
    State(state): State<Shared>,
    user: CurrentUser,
    Path(ProposalPath { id }): Path<ProposalPath>,
    JsonBody { value }: JsonBody,
) -> Result<Json<ProposalView>, ApiError> {
    let DecisionBody { decision, reason, step_up, not_duplicate_reason, on_behalf_of } = typed(value)?;
    let verdict = verdict(decision, reason);
    let mut approver = user.approver("api");
    approver.step_up = step_up.map(StepUp::One);
    approver.not_duplicate = not_duplicate_reason;
    approver.on_behalf_of = on_behalf_of.filter(|_| verdict == Verdict::Approve);
    let view = approve::decide(&state, &approver, &id, verdict, state.now()).await?;
    Ok(Json(view))
}

error_responses!(StepUpErrors: InvalidJson, Unauthenticated, Forbidden, StepUpRequired, NotFound, ValidationFailed,
    InternalError);

/// A step-up challenge for approving a proposal
///
/// The options for `navigator.credentials.get` (binary values base64url):
/// the challenge is derived from the proposal's request hash, the proposal,
/// the signed-in approver and a single-use nonce kept by the server for five
/// minutes. The assertion goes back as `step_up` with the approval. Without
/// a registered passkey: `step_up_required` (`no_passkey`).
#[utoipa::path(
    post,
    path = "/api/v1/proposals/{id}/step-up",
    operation_id = "startStepUp",
    tag = "console",
    security(("consoleSession" = [])),
    params(ProposalPath, CsrfHeader),
    responses((status = 201, body = StepUpOptions, description = "The request options."), StepUpErrors),
)]
pub async fn step_up_json(
    State(state): State<Shared>,
    user: CurrentUser,
    Path(ProposalPath { id }): Path<ProposalPath>,
) -> Result<(StatusCode, Json<StepUpOptions>), ApiError> {
    let asker = Asker::from(&user.user);
    Ok((StatusCode::CREATED, Json(step_up::start_one(&state, &asker, &id, state.now()).await?)))
}

fn resolution(outcome: OutcomeWord, rail_reference: Option<String>, reason: Option<String>) -> Resolution {
    match outcome {
        OutcomeWord::Succeeded => {
            Resolution::Succeeded { rail_reference: rail_reference.unwrap_or_default().trim().to_owned() }
        }
        OutcomeWord::Failed => Resolution::Failed { reason: reason.unwrap_or_default() },
    }
}

error_responses!(ResolveErrors: InvalidJson, UnsupportedMediaType, Unauthenticated, Forbidden, NotFound, InvalidState,
    ValidationFailed, InternalError, RailUnavailable);

/// Decide an operation that needs review (admins)
///
/// Reconciliation hands an operation to a human when the rail has no record
/// under its key past the resubmit window, or a record that does not match.
/// An admin of the tenant settles it: `{"outcome": "succeeded",
/// "rail_reference": "tr_…"}` (the money moved: the reference must be one of
/// the rail's own records for this operation, read at that moment, matching
/// its amount, currency and destination — see `rail-records`; a reference
/// already settling another operation is refused) or `{"outcome": "failed",
/// "reason": "…"}` (it did not; the budget reservation is released and the
/// operation's error becomes `marked_failed` with the admin's reason).
/// Audited with the admin as actor. Answers with the proposal object.
#[utoipa::path(
    post,
    path = "/api/v1/operations/{id}/resolution",
    operation_id = "resolveOperation",
    tag = "console",
    security(("consoleSession" = [])),
    params(OperationPath, CsrfHeader),
    request_body(content = ResolutionBody, content_type = "application/json"),
    responses(
        (status = 200, body = ProposalView,
            description = "The proposal after the decision, with its settled operation."),
        ResolveErrors,
    ),
)]
pub async fn resolve_json(
    State(state): State<Shared>,
    user: CurrentUser,
    Path(OperationPath { id }): Path<OperationPath>,
    JsonBody { value }: JsonBody,
) -> Result<Json<ProposalView>, ApiError> {
    let ResolutionBody { outcome, rail_reference, reason } = typed(value)?;
    let resolution = resolution(outcome, rail_reference, reason);
    let op = crate::commit::operations::resolve(&state, &user.resolver(), &id, resolution, state.now()).await?;
    let view = proposals::load_view(&state, &user.user.tenant_id, &op.proposal_id).await?.ok_or(ApiError::NotFound)?;
    Ok(Json(view))
}

/// What the rail holds for an operation that needs review.
#[derive(Serialize, utoipa::ToSchema)]
pub struct RailRecords {
    operation_id: String,
    idempotency_key: String,
    data: Vec<RailRecord>,
}

/// One of the rail's records, and whether it settles the operation.
#[derive(Serialize, utoipa::ToSchema)]
pub struct RailRecord {
    rail_reference: String,
    amount_minor: u64,
    currency: String,
    /// Masked.
    destination: String,
    #[schema(schema_with = rail_status_schema)]
    status: &'static str,
    /// For a reversal: how much of the transfer the rail reports reversed.
    amount_reversed: u64,
    settles_operation: bool,
    /// Why the record does not settle the operation, if it does not.
    #[schema(required = true)]
    mismatch: Option<String>,
}

/// A transfer's status on the rail (SPEC §12).
fn rail_status_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["pending", "paid", "failed", "reversed"])).build()
}

error_responses!(RailRecordsErrors: Unauthenticated, Forbidden, NotFound, InvalidState, InternalError, RailUnavailable);

/// What the rail holds for an operation that needs review (admins)
///
/// Read from the rail now: for a transfer, every transfer under the
/// operation's idempotency key; for a reversal, the transfer it reverses.
/// Each says whether it settles the operation (`settles_operation`) and if
/// not why (`mismatch`): the evidence an admin picks from before resolving
/// it as succeeded. Destinations are masked.
#[utoipa::path(
    get,
    path = "/api/v1/operations/{id}/rail-records",
    operation_id = "listRailRecords",
    tag = "console",
    security(("consoleSession" = [])),
    params(OperationPath),
    responses((status = 200, body = RailRecords, description = "The rail's records."), RailRecordsErrors),
)]
pub async fn rail_records_json(
    State(state): State<Shared>,
    user: CurrentUser,
    Path(OperationPath { id }): Path<OperationPath>,
) -> Result<Json<RailRecords>, ApiError> {
    let (op, candidates) = crate::commit::operations::rail_candidates(&state, &user.resolver(), &id).await?;
    let data = candidates
        .into_iter()
        .map(|c| RailRecord {
            settles_operation: c.mismatch.is_none(),
            rail_reference: c.reference,
            amount_minor: c.amount_minor,
            currency: c.currency,
            destination: c.destination,
            status: c.status,
            amount_reversed: c.amount_reversed,
            mismatch: c.mismatch,
        })
        .collect();
    Ok(Json(RailRecords { operation_id: op.id, idempotency_key: op.idempotency_key, data }))
}

#[derive(Debug, Deserialize)]
pub struct ResolveForm {
    outcome: String,
    rail_reference: Option<String>,
    reason: Option<String>,
    /// `yes` when the admin ticked the confirmation restating the payment.
    confirm: Option<String>,
}

/// `POST /operations/{id}/resolve` (form) — from the resolution page, after
/// the admin confirmed what they saw; back to the operations page when done,
/// else back to the resolution page with the reason.
pub async fn resolve_form(
    State(state): State<Shared>,
    user: Option<CurrentUser>,
    Path(id): Path<String>,
    Form(form): Form<ResolveForm>,
) -> Response {
    let Some(user) = user else { return Redirect::to("/login").into_response() };
    let again = |code: &str| Redirect::to(&format!("/operations/{id}/resolve?error={code}")).into_response();
    if form.confirm.as_deref() != Some("yes") {
        return again("confirm");
    }
    let outcome = match form.outcome.as_str() {
        "succeeded" => OutcomeWord::Succeeded,
        "failed" => OutcomeWord::Failed,
        _ => return again("invalid"),
    };
    let resolution = resolution(outcome, form.rail_reference, form.reason);
    match crate::commit::operations::resolve(&state, &user.resolver(), &id, resolution, state.now()).await {
        Ok(op) => Redirect::to(&format!("/operations?result={}", op.status.as_str())).into_response(),
        Err(ResolveError::BadInput(field, _)) => again(field),
        Err(ResolveError::InvalidState(_)) => again("invalid_state"),
        Err(ResolveError::NotAnAdmin) => again("forbidden"),
        Err(ResolveError::RailUnavailable) => again("rail_unavailable"),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[derive(Debug, Deserialize)]
pub struct LoginForm {
    username: String,
    password: String,
    /// The page the reviewer asked for before signing in (`ReturnPath`).
    next: Option<String>,
}

/// `/login?error=…`, keeping the typed username (never the password; only
/// what could be a username: 128 characters of `[A-Za-z0-9_.@+-]`) and the page
/// to return to, so a failed attempt costs only retyping the password.
fn login_again(error: &str, username: Option<&str>, next: Option<&ReturnPath>) -> Response {
    let mut query = vec![("error", error)];
    if let Some(name) = username.map(str::trim).filter(|u| crate::domain::Username::parse(u).is_ok()) {
        query.push(("username", name));
    }
    if let Some(next) = next {
        query.push(("next", next.as_str()));
    }
    Redirect::to(&format!("/login?{}", serde_urlencoded::to_string(query).unwrap_or_default())).into_response()
}

/// `POST /login` (form) — the page's sign-in; redirects: to `next` when it
/// is a path on this origin (`ReturnPath`; anything else is ignored), else
/// to the queue; after a failure back to the page with the username kept.
pub async fn sign_in_form(State(state): State<Shared>, session: Session, request: axum::extract::Request) -> Response {
    let address = client_address(&state, &request);
    let device = session::cookie_value(request.headers(), session::DEVICE_COOKIE);
    let Ok(Form(form)) = <Form<LoginForm> as axum::extract::FromRequest<Shared>>::from_request(request, &state).await
    else {
        return Redirect::to("/login?error=invalid").into_response();
    };
    let next = form.next.as_deref().and_then(ReturnPath::parse);
    match session::sign_in(&state, &session, (&form.username, &form.password), &address, device.as_deref()).await {
        Ok(signed_in) => {
            let mut response = Redirect::to(next.as_ref().map_or("/", ReturnPath::as_str)).into_response();
            remember_device(&state, &mut response, signed_in.new_device.as_deref());
            response
        }
        Err(SignInError::Throttled(_)) => login_again("throttled", Some(&form.username), next.as_ref()),
        Err(SignInError::Unauthenticated) => login_again("invalid", Some(&form.username), next.as_ref()),
        Err(SignInError::PasswordsDisabled) => login_again("sso_only", Some(&form.username), next.as_ref()),
        Err(SignInError::Api(e)) => e.into_response(),
    }
}

/// Sets the device cookie after a sign-in from a browser not known yet.
fn remember_device(state: &Shared, response: &mut Response, token: Option<&str>) {
    if let Some(value) = token.and_then(|t| HeaderValue::from_str(&session::device_cookie(state, t)).ok()) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}

/// `POST /logout` (form)
pub async fn sign_out_form(State(state): State<Shared>, session: Session) -> Response {
    match session::sign_out(&state, &session).await {
        Ok(()) => Redirect::to("/login").into_response(),
        Err(e) => e.into_response(),
    }
}

#[derive(Debug, Deserialize)]
pub struct DecisionForm {
    decision: String,
    reason: Option<String>,
    /// Approving a payment whose invoice is already approved or paid: why
    /// it is not a duplicate.
    not_duplicate: Option<String>,
    /// Approving for someone away (their username), under their delegation.
    on_behalf_of: Option<String>,
    /// The step-up assertion, filled in by `passkeys.js` (all or none).
    step_up_challenge_id: Option<String>,
    step_up_credential_id: Option<String>,
    step_up_authenticator_data: Option<String>,
    step_up_client_data_json: Option<String>,
    step_up_signature: Option<String>,
}

impl DecisionForm {
    /// The step-up assertion, when the form carries one.
    fn step_up(&self) -> Option<StepUpAnswer> {
        step_up_fields(
            self.step_up_challenge_id.as_deref(),
            self.step_up_credential_id.as_deref(),
            self.step_up_authenticator_data.as_deref(),
            self.step_up_client_data_json.as_deref(),
            self.step_up_signature.as_deref(),
        )
    }
}

/// A form's step-up fields as an answer, when the challenge id is filled in
/// (an empty field among the rest is refused by the verifier, not here).
pub fn step_up_fields(
    challenge_id: Option<&str>,
    credential_id: Option<&str>,
    authenticator_data: Option<&str>,
    client_data_json: Option<&str>,
    signature: Option<&str>,
) -> Option<StepUpAnswer> {
    let challenge_id = challenge_id.filter(|c| !c.is_empty())?;
    let own = |v: Option<&str>| v.unwrap_or_default().to_owned();
    Some(StepUpAnswer {
        challenge_id: challenge_id.to_owned(),
        credential_id: own(credential_id),
        authenticator_data: own(authenticator_data),
        client_data_json: own(client_data_json),
        signature: own(signature),
    })
}

/// `POST /proposals/{id}/decision` (form) — approve or reject, then on to
/// the next proposal waiting for this reviewer (oldest first, `flow`), or to
/// the queue when none is left, with `done` (what was done: a fixed code) and
/// `decided` (to which proposal) for the notice. A refusal goes back to the
/// same proposal with `error`.
pub async fn decide_form(
    State(state): State<Shared>,
    user: Option<CurrentUser>,
    Path(id): Path<String>,
    Form(form): Form<DecisionForm>,
) -> Response {
    let Some(user) = user else {
        return Redirect::to(&crate::domain::login_href(&format!("/proposals/{id}"))).into_response();
    };
    let back = |key: &str, code: &str| Redirect::to(&format!("/proposals/{id}?{key}={code}")).into_response();
    let decision = match form.decision.as_str() {
        "approve" => DecisionWord::Approve,
        "reject" => DecisionWord::Reject,
        _ => return back("error", "invalid"),
    };
    let mut approver = user.approver("console");
    approver.step_up = form.step_up().map(StepUp::One);
    approver.not_duplicate = form.not_duplicate.clone();
    let verdict = verdict(decision, form.reason);
    approver.on_behalf_of = form.on_behalf_of.clone().filter(|n| !n.is_empty() && verdict == Verdict::Approve);
    let approving = verdict == Verdict::Approve;
    match approve::decide(&state, &approver, &id, verdict, state.now()).await {
        Ok(view) => {
            let done = match (approving, view.status) {
                (true, ProposalStatus::Approved) => "approved",
                (true, _) => "approval_recorded",
                (false, _) => "rejected",
            };
            onwards(&state, &user, &view.id, done).await
        }
        Err(DecideError::NotFound) => ApiError::NotFound.into_response(),
        Err(e @ (DecideError::Token(_) | DecideError::Store(_))) => ApiError::from(e).into_response(),
        // A refusal, worded on the page from its fixed code.
        Err(e) => back("error", e.code()),
    }
}

/// After a decision on `decided`: the next proposal waiting for `user`, else
/// the queue (also when looking fails: the decision is recorded either way).
async fn onwards(state: &Shared, user: &CurrentUser, decided: &str, done: &str) -> Response {
    let notice = format!("done={done}&decided={decided}");
    match crate::flow::next_after(state, &user.user.tenant_id, &user.user.id, decided).await {
        Ok(Some(next)) => Redirect::to(&format!("/proposals/{next}?{notice}")).into_response(),
        Ok(None) | Err(_) => Redirect::to(&format!("/?{notice}")).into_response(),
    }
}

/// `GET /session/alive` — the person is at the console (a key or a click,
/// reported by `/session.js`): 204, the session's idle timeout starting
/// again; 401 when it has ended.
pub async fn session_alive(user: Option<CurrentUser>) -> Response {
    match user {
        Some(_) => axum::http::StatusCode::NO_CONTENT.into_response(),
        None => ApiError::Unauthenticated.into_response(),
    }
}

/// Loads the signed-in user (if any) for the pages.
pub async fn load_viewer(
    State(state): State<Shared>,
    session: Session,
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    // The top bar of a page flags what the person has not read about their
    // account: counted while the session's user is checked (used only if
    // they pass).
    let page = req.method() == axum::http::Method::GET;
    let (user, unread) = match session::signed_in(&session).await {
        Ok(Some(data)) => {
            let id = data.user_id.clone();
            tokio::join!(session::checked_user(&state, &session, data), async {
                if page {
                    crate::store::notices::unread(&state.db.read, &id).await.unwrap_or(0)
                } else {
                    0
                }
            })
        }
        _ => (Ok(None), 0),
    };
    if let Ok(Some(user)) = user {
        user.record_in(req.extensions());
        let mut viewer = user.viewer();
        viewer.idle_timeout_secs = state.settings.console.idle_timeout_secs;
        if page {
            viewer.unread_notices = u32::try_from(unread).unwrap_or(u32::MAX);
        }
        req.extensions_mut().insert(viewer);
        req.extensions_mut().insert(user);
    } else if needs_sign_in(&req) || (req.uri().path() == "/" && session::cookie_sent(req.headers())) {
        // A deep link (a Slack message, a bookmark) opened signed out: sign
        // in first, then land on it. So does the queue for a browser whose
        // session ended (signed out everywhere, deactivated): the welcome is
        // for those who never signed in.
        let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
        return Redirect::to(&crate::domain::login_href(path)).into_response();
    }
    next.run(req).await
}

/// Whether `req` reads a console page that only a signed-in user can see
/// (the queue's `/` shows a welcome instead; the sign-in page is public).
fn needs_sign_in(req: &axum::extract::Request) -> bool {
    let path = req.uri().path();
    let under = |prefix: &str| path == prefix || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/'));
    matches!(*req.method(), axum::http::Method::GET | axum::http::Method::HEAD)
        && (path.starts_with("/proposals/") || under("/operations") || under("/admin") || under("/account"))
}
