//! The OpenAPI 3.1 description of the agent API and the console JSON API,
//! served at `GET /openapi.json`.
//!
//! Built by hand with `serde_json::json!`, one small function per schema and
//! per route, so a change to the contract (SPEC §3, §5, §6, §9, §10) is a
//! change to one readable function. The route lists below are what the router
//! is checked against, so the document and the real routes cannot drift apart
//! silently.

use serde_json::{json, Map, Value};

/// `(METHOD, path template)` of every agent API route, in axum's `{param}`
/// syntax. Other code checks that the router serves exactly these.
pub const AGENT_ROUTES: &[(&str, &str)] = &[
    ("POST", "/api/v1/proposals"),
    ("GET", "/api/v1/proposals"),
    ("GET", "/api/v1/proposals/{id}"),
    ("POST", "/api/v1/proposals/{id}/cancel"),
    ("POST", "/api/v1/proposals/{id}/commit"),
    ("GET", "/openapi.json"),
];

/// `(METHOD, path template)` of the console's JSON routes (session cookie;
/// state-changing ones also need the `X-CSRF-Token` header).
pub const CONSOLE_ROUTES: &[(&str, &str)] = &[
    ("POST", "/api/v1/session"),
    ("DELETE", "/api/v1/session"),
    ("GET", "/api/v1/queue"),
    ("POST", "/api/v1/proposals/{id}/approvals"),
    ("POST", "/api/v1/operations/{id}/resolution"),
    ("GET", "/api/v1/operations/{id}/rail-records"),
];

/// `(METHOD, path template)` of the unauthenticated operational routes that
/// the document also describes.
pub const PUBLIC_ROUTES: &[(&str, &str)] =
    &[("GET", "/.well-known/jwks.json"), ("GET", "/healthz"), ("GET", "/readyz")];

/// Every `error.code` the API can answer with (SPEC §9), in the order of the
/// HTTP status they usually travel with.
pub const ERROR_CODES: &[&str] = &[
    "invalid_json",
    "unauthenticated",
    "approval_token_invalid",
    "forbidden",
    "policy_denied",
    "not_found",
    "invalid_state",
    "idempotency_key_in_use",
    "payload_too_large",
    "unsupported_media_type",
    "validation_failed",
    "unknown_destination",
    "idempotency_key_reused",
    "rate_limited",
    "rail_unavailable",
    "internal_error",
];

// The closed sets the document lists come from the domain's own enums.

fn names<T: Copy>(all: &[T], name: fn(&T) -> &'static str) -> Vec<&'static str> {
    all.iter().map(name).collect()
}

fn proposal_statuses() -> Vec<&'static str> {
    names(crate::domain::ProposalStatus::ALL, crate::domain::ProposalStatus::as_str)
}

fn operation_statuses() -> Vec<&'static str> {
    names(&crate::domain::OpStatus::ALL, crate::domain::OpStatus::as_str)
}

fn purpose_codes() -> Vec<&'static str> {
    names(crate::domain::PurposeCode::ALL, crate::domain::PurposeCode::as_str)
}

fn reason_codes() -> Vec<&'static str> {
    names(crate::domain::ReasonCode::ALL, crate::domain::ReasonCode::as_str)
}

fn roles() -> Vec<&'static str> {
    names(&crate::domain::Role::ALL, crate::domain::Role::as_str)
}

const SOURCE_ACCOUNT_PATTERN: &str = "^acct_[A-Za-z0-9]{16}$";
const PAYEE_PATTERN: &str = "^(acct_|card_|ba_)[A-Za-z0-9]{1,64}$";
const RUN_ID_PATTERN: &str = "^[A-Za-z0-9_.:-]{1,128}$";
const INVOICE_ID_PATTERN: &str = "^[A-Za-z0-9_-]{1,64}$";
const TRANSFER_REF_PATTERN: &str = "^(prop_|tr_)[A-Za-z0-9]{1,64}$";
/// No control characters (Unicode Cc) and no bidirectional-override or
/// zero-width formatting characters (ECMA-262 syntax, as JSON Schema uses).
const REFERENCE_PATTERN: &str = crate::domain::fields::NO_CONTROL_OR_DECEPTIVE_PATTERN;
const REQUEST_HASH_PATTERN: &str = "^sha256:[0-9a-f]{64}$";
const COMPACT_JWS_PATTERN: &str = "^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$";
const IDEMPOTENCY_KEY_PATTERN: &str = "^[\\u0020-\\u007E]+$";

/// The OpenAPI 3.1.0 document, with `public_url` (the console's configured
/// public URL, also the tokens' `iss`) as its only server.
pub fn document(public_url: &str) -> Value {
    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
        "info": info(),
        "servers": [{ "url": server_url(public_url), "description": "this Countersign deployment" }],
        "tags": tags(),
        "paths": paths(),
        "components": components(),
    })
}

/// The public URL without a trailing slash, so `{url}{path}` never doubles it.
fn server_url(public_url: &str) -> &str {
    match public_url.trim_end_matches('/') {
        "" => "/",
        url => url,
    }
}

fn info() -> Value {
    json!({
        "title": "Countersign API",
        "version": env!("CARGO_PKG_VERSION"),
        "summary": "Human approval for AI agents that move money.",
        "description": "An agent *proposes* a payment; a human (or an explicit, audited policy) \
            approves it; the payment rail is called only by `commit`, which verifies a short-lived \
            ES256 approval token bound to the exact request hash. Amounts are integers in the \
            currency's minor units. Every error has the same envelope (`Error`) with a stable \
            `code` an agent can act on. Text such as `reference` is data shown to humans, never \
            an instruction.",
        "license": { "name": "Apache-2.0", "identifier": "Apache-2.0" },
    })
}

fn tags() -> Value {
    json!([
        { "name": "agent", "description": "The agent API: bearer agent key." },
        { "name": "console", "description": "The console's JSON API: session cookie, plus `X-CSRF-Token` on state-changing requests." },
        { "name": "public", "description": "Unauthenticated discovery and health endpoints." },
    ])
}

// ---------------------------------------------------------------------------
// Small builders
// ---------------------------------------------------------------------------

fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn param_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/parameters/{name}") })
}

fn response_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/responses/{name}") })
}

fn header_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/headers/{name}") })
}

fn json_content(schema: Value) -> Value {
    json!({ "application/json": { "schema": schema } })
}

fn json_body(schema: Value) -> Value {
    json!({ "required": true, "content": json_content(schema) })
}

fn enum_of(values: &[&str]) -> Value {
    json!({ "type": "string", "enum": values })
}

/// A string enum that may also be `null`.
fn nullable_enum_of(values: &[&str]) -> Value {
    let mut all: Vec<Value> = values.iter().map(|v| json!(v)).collect();
    all.push(Value::Null);
    json!({ "type": ["string", "null"], "enum": all })
}

fn timestamp(description: &str) -> Value {
    json!({ "type": "string", "format": "date-time", "description": description })
}

fn nullable_timestamp(description: &str) -> Value {
    json!({ "type": ["string", "null"], "format": "date-time", "description": description })
}

fn agent_security() -> Value {
    json!([{ "agentKey": [] }])
}

fn console_security() -> Value {
    json!([{ "consoleSession": [] }])
}

fn no_security() -> Value {
    json!([])
}

/// An error response whose `error.code` is one of `codes`.
fn error_response(description: &str, codes: &[&str]) -> Value {
    let schema = json!({
        "allOf": [
            schema_ref("Error"),
            {
                "type": "object",
                "properties": {
                    "error": {
                        "type": "object",
                        "properties": { "code": enum_of(codes) },
                    },
                },
            },
        ],
    });
    json!({
        "description": description,
        "headers": { "X-Request-Id": header_ref("RequestId") },
        "content": json_content(schema),
    })
}

/// `error_response` with one more response header.
fn error_response_with_header(description: &str, codes: &[&str], name: &str, header: &str) -> Value {
    let mut response = error_response(description, codes);
    response["headers"][name] = header_ref(header);
    response
}

fn proposal_response(description: &str) -> Value {
    json!({ "description": description, "content": json_content(schema_ref("Proposal")) })
}

/// Builds a JSON object from `(key, value)` pairs, keeping their order.
fn object(entries: Vec<(&str, Value)>) -> Value {
    Value::Object(entries.into_iter().map(|(k, v)| (k.to_owned(), v)).collect::<Map<_, _>>())
}

// ---------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------

fn paths() -> Value {
    object(vec![
        ("/api/v1/proposals", json!({ "post": create_proposal(), "get": list_proposals() })),
        ("/api/v1/proposals/{id}", json!({ "get": get_proposal() })),
        ("/api/v1/proposals/{id}/cancel", json!({ "post": cancel_proposal() })),
        ("/api/v1/proposals/{id}/commit", json!({ "post": commit_proposal() })),
        ("/api/v1/proposals/{id}/approvals", json!({ "post": decide_proposal() })),
        ("/api/v1/operations/{id}/resolution", json!({ "post": resolve_operation() })),
        ("/api/v1/operations/{id}/rail-records", json!({ "get": rail_records() })),
        ("/api/v1/session", json!({ "post": sign_in(), "delete": sign_out() })),
        ("/api/v1/queue", json!({ "get": list_queue() })),
        ("/.well-known/jwks.json", json!({ "get": get_jwks() })),
        ("/openapi.json", json!({ "get": get_openapi() })),
        ("/healthz", json!({ "get": healthz() })),
        ("/readyz", json!({ "get": readyz() })),
    ])
}

fn create_proposal_responses() -> Value {
    json!({
        "201": {
            "description": "A new proposal. A replay of this response under the same `Idempotency-Key` repeats it with `Idempotent-Replayed: true`.",
            "headers": { "Idempotent-Replayed": header_ref("IdempotentReplayed") },
            "content": json_content(schema_ref("Proposal")),
        },
        "200": {
            "description": "An existing proposal: the same agent and `run_id` already proposed an identical canonical request (duplicates collapse), or an idempotent replay of an earlier 200 (then `Idempotent-Replayed: true`).",
            "headers": { "Idempotent-Replayed": header_ref("IdempotentReplayed") },
            "content": json_content(schema_ref("Proposal")),
        },
        "400": response_ref("InvalidJson"),
        "401": response_ref("Unauthenticated"),
        "403": error_response(
            "Policy denied the proposal; nothing is stored but the audit entry. `details` lists the rules that fired.",
            &["policy_denied"],
        ),
        "409": error_response(
            "The first request under this `Idempotency-Key` is still in flight; retry later with the same key.",
            &["idempotency_key_in_use"],
        ),
        "413": response_ref("PayloadTooLarge"),
        "415": response_ref("UnsupportedMediaType"),
        "422": error_response(
            "`validation_failed`: `details` names every offending field (unknown, missing, wrong type, out of range). `unknown_destination`: the destination is not in the tenant's payee registry. `idempotency_key_reused`: the key was first used with a different body.",
            &["validation_failed", "unknown_destination", "idempotency_key_reused"],
        ),
        "429": response_ref("RateLimited"),
        "500": response_ref("InternalError"),
    })
}

fn create_proposal() -> Value {
    json!({
        "tags": ["agent"],
        "operationId": "createProposal",
        "summary": "Propose a payment",
        "description": "Validates the request strictly, builds the canonical request (identity from the credential, payee resolved from the registry), hashes it (`sha256:` + hex SHA-256 of its RFC 8785 form) and evaluates policy. The result is auto-approved, pending approval, or refused with 403 `policy_denied`.",
        "security": agent_security(),
        "parameters": [param_ref("IdempotencyKey")],
        "requestBody": {
            "required": true,
            "content": {
                "application/json": {
                    "schema": schema_ref("ProposalRequest"),
                    "examples": proposal_request_examples(),
                },
            },
        },
        "responses": create_proposal_responses(),
    })
}

fn proposal_request_examples() -> Value {
    json!({
        "transfer": {
            "summary": "Pay an invoice",
            "value": {
                "run_id": "run-42",
                "kind": "transfer",
                "amount_minor": 25000,
                "currency": "USD",
                "source_account": "acct_0123456789abcdef",
                "destination": "acct_acme0000000001",
                "reference": "Invoice 1842",
                "purpose_code": "vendor",
                "invoice_id": "1842",
            },
        },
        "reversal": {
            "summary": "Reverse a succeeded transfer",
            "value": {
                "run_id": "run-43",
                "kind": "reversal",
                "transfer_id": "prop_01hx2v9k3m",
                "reason_code": "duplicate",
            },
        },
    })
}

fn get_proposal() -> Value {
    json!({
        "tags": ["agent"],
        "operationId": "getProposal",
        "summary": "Read (or long-poll) one proposal",
        "description": "Status, canonical request, request hash, policy decision, approvals, `approval_token` and `approval_expires_at` when `approved` (only to the owning agent), and `operation` once one exists. With `?wait=N` and `If-None-Match`, the request is held until the proposal's ETag differs (200) or N seconds pass (304).",
        "security": agent_security(),
        "parameters": [param_ref("ProposalId"), param_ref("Wait"), param_ref("IfNoneMatch")],
        "responses": {
            "200": {
                "description": "The proposal.",
                "headers": { "ETag": header_ref("ETag") },
                "content": json_content(schema_ref("Proposal")),
            },
            "304": {
                "description": "Unchanged: the ETag still equals `If-None-Match` after `wait` seconds.",
                "headers": { "ETag": header_ref("ETag") },
            },
            "401": response_ref("Unauthenticated"),
            "404": response_ref("NotFound"),
            "422": error_response("`wait` is above 60 or not an integer.", &["validation_failed"]),
            "429": response_ref("RateLimited"),
            "500": response_ref("InternalError"),
        },
    })
}

fn list_proposals() -> Value {
    json!({
        "tags": ["agent"],
        "operationId": "listProposals",
        "summary": "List the agent's own proposals",
        "description": "Newest first, cursor-paginated: pass `next_cursor` back as `cursor` until it is `null`.",
        "security": agent_security(),
        "parameters": [param_ref("StatusFilter"), param_ref("Limit"), param_ref("Cursor")],
        "responses": {
            "200": {
                "description": "A page of proposals.",
                "content": json_content(schema_ref("ProposalList")),
            },
            "401": response_ref("Unauthenticated"),
            "422": error_response("A query parameter is out of range or not recognised.", &["validation_failed"]),
            "429": response_ref("RateLimited"),
            "500": response_ref("InternalError"),
        },
    })
}

fn cancel_proposal() -> Value {
    json!({
        "tags": ["agent"],
        "operationId": "cancelProposal",
        "summary": "Withdraw a proposal",
        "description": "Allowed while the proposal is `pending_approval` or `approved`; an unredeemed approval token can no longer be committed.",
        "security": agent_security(),
        "parameters": [param_ref("ProposalId")],
        "responses": {
            "200": proposal_response("The cancelled proposal."),
            "401": response_ref("Unauthenticated"),
            "404": response_ref("NotFound"),
            "409": response_ref("InvalidState"),
            "429": response_ref("RateLimited"),
            "500": response_ref("InternalError"),
        },
    })
}

fn commit_responses() -> Value {
    json!({
        "200": proposal_response("The proposal with its `operation`. A retried commit never calls the rail again: it answers with the operation's current state."),
        "400": response_ref("InvalidJson"),
        "401": error_response(
            "`approval_token_invalid` (with `reason`): bad signature, unknown `kid`, wrong `alg` or `typ`, wrong `iss`/`aud`, outside `nbf`/`exp`, token for another proposal, tenant or agent, request hash mismatch, or already used for another operation. `unauthenticated`: no valid agent key.",
            &["approval_token_invalid", "unauthenticated"],
        ),
        "403": error_response(
            "Policy or budget no longer allows the payment, or an approver is no longer active or within their limit.",
            &["policy_denied"],
        ),
        "404": response_ref("NotFound"),
        "409": response_ref("InvalidState"),
        "413": response_ref("PayloadTooLarge"),
        "415": response_ref("UnsupportedMediaType"),
        "422": error_response("The body is not `{\"approval_token\": \"...\"}`.", &["validation_failed"]),
        "429": response_ref("RateLimited"),
        "500": response_ref("InternalError"),
    })
}

fn commit_proposal() -> Value {
    json!({
        "tags": ["agent"],
        "operationId": "commitProposal",
        "summary": "Execute an approved proposal",
        "description": "Verifies the approval token (ES256 under a published `kid`, `typ` `countersign-approval+jwt`, `iss`, `aud` `countersign:commit`, `nbf`/`exp` with 30 s leeway, `pid`/`tid`/`azp`, `rh` against the stored and the recomputed request hash, `jti` the proposal's current token), rechecks approvers, policy and the daily budget, then in one transaction marks the token used, records the durable operation, reserves the budget and moves the proposal to `executing`; only then calls the rail with an idempotency key derived from the proposal id and request hash. The answer carries the outcome: `succeeded`, `executing` (accepted, settling), `failed` with a typed `operation.error.code`, or `unknown` (the rail may have acted; reconciliation settles it, never a blind retry). A retried commit for the same proposal returns the existing operation and never calls the rail again.",
        "security": agent_security(),
        "parameters": [param_ref("ProposalId")],
        "requestBody": json_body(schema_ref("CommitRequest")),
        "responses": commit_responses(),
    })
}

fn decide_proposal_responses() -> Value {
    json!({
        "200": proposal_response("The proposal after the decision (never carries `approval_token`: that goes only to the owning agent)."),
        "400": response_ref("InvalidJson"),
        "401": response_ref("Unauthenticated"),
        "403": error_response(
            "`forbidden`: missing or wrong `X-CSRF-Token`, not an approver, or segregation of duties (the human the agent acts for, or the same person twice in a dual approval). `policy_denied`: above the approver's limit or policy no longer allows it.",
            &["forbidden", "policy_denied"],
        ),
        "404": response_ref("NotFound"),
        "409": response_ref("InvalidState"),
        "413": response_ref("PayloadTooLarge"),
        "415": response_ref("UnsupportedMediaType"),
        "422": error_response("A bad `decision`, or a rejection without a `reason`.", &["validation_failed"]),
        "429": response_ref("RateLimited"),
        "500": response_ref("InternalError"),
    })
}

fn decide_proposal() -> Value {
    json!({
        "tags": ["console"],
        "operationId": "decideProposal",
        "summary": "Approve or reject a proposal",
        "description": "The same domain checks as every other approval path (console page, Slack button). When the last required approval is given, the proposal becomes `approved` and an approval token is minted for the agent.",
        "security": console_security(),
        "parameters": [param_ref("ProposalId"), param_ref("CsrfToken")],
        "requestBody": json_body(schema_ref("DecisionRequest")),
        "responses": decide_proposal_responses(),
    })
}

fn resolve_operation() -> Value {
    json!({
        "tags": ["console"],
        "operationId": "resolveOperation",
        "summary": "Decide an operation that needs review (admins)",
        "description": "Reconciliation hands an operation to a human when the rail has no record under its key past the resubmit window, or a record that does not match. An admin of the tenant settles it: `{\"outcome\": \"succeeded\", \"rail_reference\": \"tr_…\"}` (the money moved: the reference must be one of the rail's own records for this operation, read at that moment, matching its amount, currency and destination — see `rail-records`; a reference already settling another operation is refused) or `{\"outcome\": \"failed\", \"reason\": \"…\"}` (it did not; the budget reservation is released and the operation's error becomes `marked_failed` with the admin's reason). Audited with the admin as actor.",
        "security": console_security(),
        "parameters": [
            { "name": "id", "in": "path", "required": true, "schema": { "type": "string", "pattern": "^op_" } },
            param_ref("CsrfToken"),
        ],
        "requestBody": json_body(json!({
            "type": "object",
            "properties": {
                "outcome": { "type": "string", "enum": ["succeeded", "failed"] },
                "rail_reference": { "type": "string", "pattern": "^trr?_[A-Za-z0-9_]+$" },
                "reason": { "type": "string", "minLength": 1, "maxLength": 500 },
            },
            "required": ["outcome"],
            "additionalProperties": false,
        })),
        "responses": {
            "200": proposal_response("The proposal after the decision, with its settled operation."),
            "400": response_ref("InvalidJson"),
            "401": response_ref("Unauthenticated"),
            "403": error_response("Missing or wrong `X-CSRF-Token`, or not an admin.", &["forbidden"]),
            "404": response_ref("NotFound"),
            "409": error_response("The operation does not need review (any more).", &["invalid_state"]),
            "422": error_response(
                "A bad `outcome`, a missing `reason`, or a `rail_reference` that is not a matching rail record.",
                &["validation_failed"],
            ),
            "500": response_ref("InternalError"),
            "503": error_response("The rail could not be read to check the reference.", &["rail_unavailable"]),
        },
    })
}

fn rail_records() -> Value {
    json!({
        "tags": ["console"],
        "operationId": "listRailRecords",
        "summary": "What the rail holds for an operation that needs review (admins)",
        "description": "Read from the rail now: for a transfer, every transfer under the operation's idempotency key; for a reversal, the transfer it reverses. Each says whether it settles the operation (`settles_operation`) and if not why (`mismatch`). Destinations are masked.",
        "security": console_security(),
        "parameters": [{ "name": "id", "in": "path", "required": true, "schema": { "type": "string", "pattern": "^op_" } }],
        "responses": {
            "200": {
                "description": "The rail's records.",
                "content": json_content(json!({
                    "type": "object",
                    "properties": {
                        "operation_id": { "type": "string" },
                        "idempotency_key": { "type": "string" },
                        "data": { "type": "array", "items": {
                            "type": "object",
                            "properties": {
                                "rail_reference": { "type": "string" },
                                "amount_minor": { "type": "integer" },
                                "currency": { "type": "string" },
                                "destination": { "type": "string" },
                                "status": { "type": "string", "enum": ["pending", "paid", "failed", "reversed"] },
                                "amount_reversed": { "type": "integer" },
                                "settles_operation": { "type": "boolean" },
                                "mismatch": { "type": ["string", "null"] },
                            },
                        }},
                    },
                })),
            },
            "401": response_ref("Unauthenticated"),
            "403": error_response("Not an admin.", &["forbidden"]),
            "404": response_ref("NotFound"),
            "409": error_response("The operation does not need review (any more).", &["invalid_state"]),
            "500": response_ref("InternalError"),
            "503": error_response("The rail could not be read.", &["rail_unavailable"]),
        },
    })
}

fn sign_in() -> Value {
    json!({
        "tags": ["console"],
        "operationId": "signIn",
        "summary": "Sign in to the console",
        "description": "Starts a session (a fresh session id; cookie `id`, HttpOnly, SameSite=Strict, Secure over HTTPS) and returns the CSRF token to send back as `X-CSRF-Token`. A wrong username and a wrong password give the same 401. Repeated failures are throttled (429).",
        "security": no_security(),
        "requestBody": json_body(schema_ref("SignInRequest")),
        "responses": {
            "200": {
                "description": "Signed in.",
                "headers": { "Set-Cookie": header_ref("SessionCookie") },
                "content": json_content(schema_ref("Session")),
            },
            "400": response_ref("InvalidJson"),
            "401": response_ref("Unauthenticated"),
            "413": response_ref("PayloadTooLarge"),
            "415": response_ref("UnsupportedMediaType"),
            "422": error_response("`username` or `password` missing or not a string.", &["validation_failed"]),
            "429": response_ref("RateLimited"),
            "500": response_ref("InternalError"),
        },
    })
}

fn sign_out() -> Value {
    json!({
        "tags": ["console"],
        "operationId": "signOut",
        "summary": "Sign out",
        "description": "Ends the session and purges it from the store.",
        "security": console_security(),
        "parameters": [param_ref("CsrfToken")],
        "responses": {
            "204": { "description": "Signed out; the session cookie is cleared." },
            "401": response_ref("Unauthenticated"),
            "403": error_response("Missing or wrong `X-CSRF-Token`.", &["forbidden"]),
            "500": response_ref("InternalError"),
        },
    })
}

fn list_queue() -> Value {
    json!({
        "tags": ["console"],
        "operationId": "listQueue",
        "summary": "The review queue",
        "description": "The tenant's proposals with one status (`pending_approval` by default), newest or oldest first, cursor-paginated.",
        "security": console_security(),
        "parameters": [
            {
                "name": "status",
                "in": "query",
                "required": false,
                "description": "Only proposals with this status.",
                "schema": { "type": "string", "enum": proposal_statuses(), "default": "pending_approval" },
            },
            param_ref("Order"),
            param_ref("Limit"),
            param_ref("Cursor"),
        ],
        "responses": {
            "200": {
                "description": "A page of the queue.",
                "content": json_content(schema_ref("ProposalList")),
            },
            "401": response_ref("Unauthenticated"),
            "403": error_response("The user has no role that may read the queue.", &["forbidden"]),
            "422": error_response("A query parameter is out of range or not recognised.", &["validation_failed"]),
            "500": response_ref("InternalError"),
        },
    })
}

fn get_jwks() -> Value {
    json!({
        "tags": ["public"],
        "operationId": "getJwks",
        "summary": "Approval-token verification keys",
        "description": "Every P-256 public key whose tokens may still be valid (the current key and, after a rotation, the previous ones until their tokens expire), so a rail or an auditor can verify an approval token independently.",
        "security": no_security(),
        "responses": {
            "200": {
                "description": "A JSON Web Key Set (RFC 7517).",
                "content": json_content(schema_ref("Jwks")),
            },
        },
    })
}

fn get_openapi() -> Value {
    json!({
        "tags": ["agent", "public"],
        "operationId": "getOpenApi",
        "summary": "This document",
        "security": no_security(),
        "responses": {
            "200": {
                "description": "The OpenAPI 3.1 description of the agent and console APIs.",
                "content": { "application/json": { "schema": { "type": "object" } } },
            },
        },
    })
}

fn healthz() -> Value {
    json!({
        "tags": ["public"],
        "operationId": "healthz",
        "summary": "Liveness",
        "description": "The process is up and serving HTTP.",
        "security": no_security(),
        "responses": {
            "200": {
                "description": "Alive.",
                "content": { "text/plain": { "schema": { "type": "string", "const": "ok" } } },
            },
        },
    })
}

fn readyz() -> Value {
    json!({
        "tags": ["public"],
        "operationId": "readyz",
        "summary": "Readiness",
        "description": "The server can take traffic: the database answers.",
        "security": no_security(),
        "responses": {
            "200": {
                "description": "Ready.",
                "content": { "text/plain": { "schema": { "type": "string", "const": "ready" } } },
            },
            "500": error_response("Not ready: the database does not answer.", &["internal_error"]),
        },
    })
}

// ---------------------------------------------------------------------------
// Components
// ---------------------------------------------------------------------------

fn components() -> Value {
    json!({
        "securitySchemes": security_schemes(),
        "parameters": parameters(),
        "headers": headers(),
        "responses": responses(),
        "schemas": schemas(),
    })
}

fn security_schemes() -> Value {
    json!({
        "agentKey": {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "Countersign agent key",
            "description": "`Authorization: Bearer <agent key>`. The key is shown once when the agent is created and stored only as a hash. Tenant, agent and the human the agent acts for all come from this credential, never from a request body.",
        },
        "consoleSession": {
            "type": "apiKey",
            "in": "cookie",
            "name": "id",
            "description": "The console session cookie set by `POST /api/v1/session` (HttpOnly, SameSite=Strict, Secure over HTTPS; idle and absolute timeouts). Every state-changing request must also send the `csrf_token` returned at sign-in in the `X-CSRF-Token` header, or it is refused with 403 `forbidden`.",
        },
    })
}

fn parameters() -> Value {
    json!({
        "ProposalId": {
            "name": "id",
            "in": "path",
            "required": true,
            "description": "The proposal id (`prop_…`). Another tenant's proposal is 404, as if it did not exist.",
            "schema": { "type": "string", "minLength": 1 },
        },
        "IdempotencyKey": {
            "name": "Idempotency-Key",
            "in": "header",
            "required": false,
            "description": "Stripe semantics: the same key with the same body replays the first response (same status and body, `Idempotent-Replayed: true`); with a different body it is 422 `idempotency_key_reused`; while the first request is in flight it is 409 `idempotency_key_in_use`. Kept at least 7 days.",
            "schema": { "type": "string", "minLength": 1, "maxLength": 255, "pattern": IDEMPOTENCY_KEY_PATTERN },
        },
        "IfNoneMatch": {
            "name": "If-None-Match",
            "in": "header",
            "required": false,
            "description": "The `ETag` last seen; with `wait`, the request is held until the proposal changes.",
            "schema": { "type": "string" },
        },
        "Wait": {
            "name": "wait",
            "in": "query",
            "required": false,
            "description": "Long-poll for up to this many seconds (needs `If-None-Match`).",
            "schema": { "type": "integer", "minimum": 0, "maximum": 60, "default": 0 },
        },
        "StatusFilter": {
            "name": "status",
            "in": "query",
            "required": false,
            "description": "Only proposals with this status.",
            "schema": enum_of(&proposal_statuses()),
        },
        "Order": {
            "name": "order",
            "in": "query",
            "required": false,
            "schema": { "type": "string", "enum": ["newest", "oldest"], "default": "newest" },
        },
        "Limit": {
            "name": "limit",
            "in": "query",
            "required": false,
            "description": "Page size.",
            "schema": { "type": "integer", "minimum": 1, "maximum": 100, "default": 50 },
        },
        "Cursor": {
            "name": "cursor",
            "in": "query",
            "required": false,
            "description": "The opaque `next_cursor` of the previous page.",
            "schema": { "type": "string" },
        },
        "CsrfToken": {
            "name": "X-CSRF-Token",
            "in": "header",
            "required": true,
            "description": "The `csrf_token` returned by `POST /api/v1/session`.",
            "schema": { "type": "string", "minLength": 1 },
        },
    })
}

fn headers() -> Value {
    json!({
        "ETag": {
            "description": "Changes whenever the proposal (status, approvals, operation) changes.",
            "schema": { "type": "string" },
        },
        "IdempotentReplayed": {
            "description": "`true` when this response replays the first response under the same `Idempotency-Key`.",
            "schema": { "type": "string", "enum": ["true"] },
        },
        "RetryAfter": {
            "description": "Seconds to wait before retrying.",
            "schema": { "type": "integer", "minimum": 0 },
        },
        "RequestId": {
            "description": "The id of this request, also `error.request_id`; quote it when reporting a problem.",
            "schema": { "type": "string" },
        },
        "WwwAuthenticate": {
            "description": "`Bearer` on the agent API.",
            "schema": { "type": "string" },
        },
        "SessionCookie": {
            "description": "The session cookie `id` (HttpOnly; SameSite=Strict; Secure over HTTPS).",
            "schema": { "type": "string" },
        },
    })
}

fn responses() -> Value {
    let rate_limited = error_response_with_header(
        "Too many requests; retry after `Retry-After` seconds.",
        &["rate_limited"],
        "Retry-After",
        "RetryAfter",
    );
    let unauthenticated = error_response_with_header(
        "Missing, unknown or revoked credential (or expired session).",
        &["unauthenticated"],
        "WWW-Authenticate",
        "WwwAuthenticate",
    );
    json!({
        "InvalidJson": error_response("The body is not valid JSON.", &["invalid_json"]),
        "Unauthenticated": unauthenticated,
        "NotFound": error_response("No such proposal for this tenant (another tenant's objects are never revealed).", &["not_found"]),
        "InvalidState": error_response("The proposal's current status does not allow this; `error.current_status` (also in `details`) names it.", &["invalid_state"]),
        "PayloadTooLarge": error_response("The body is over 64 KiB.", &["payload_too_large"]),
        "UnsupportedMediaType": error_response("The body is not `application/json`.", &["unsupported_media_type"]),
        "RateLimited": rate_limited,
        "InternalError": error_response("An internal error; the body is generic and the cause is logged under `request_id`.", &["internal_error"]),
    })
}

fn schemas() -> Value {
    object(vec![
        ("ProposalRequest", proposal_request_schema()),
        ("Proposal", proposal_schema()),
        ("ProposalList", proposal_list_schema()),
        ("CanonicalRequest", canonical_request_schema()),
        ("CanonicalPayee", canonical_payee_schema()),
        ("Payee", payee_schema()),
        ("PolicyDecision", policy_decision_schema()),
        ("PolicyReason", policy_reason_schema()),
        ("Approval", approval_schema()),
        ("Operation", operation_schema()),
        ("CommitRequest", commit_request_schema()),
        ("DecisionRequest", decision_request_schema()),
        ("SignInRequest", sign_in_request_schema()),
        ("Session", session_schema()),
        ("Jwks", jwks_schema()),
        ("Jwk", jwk_schema()),
        ("Error", error_schema()),
        ("FieldError", field_error_schema()),
    ])
}

// ---------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------

fn proposal_request_properties() -> Value {
    json!({
        "run_id": {
            "type": "string", "minLength": 1, "maxLength": 128, "pattern": RUN_ID_PATTERN,
            "description": "The agent run this proposal belongs to. Within one agent and run, an identical canonical request collapses into the existing proposal.",
        },
        "kind": { "type": "string", "enum": ["transfer", "reversal"], "default": "transfer" },
        "amount_minor": {
            "type": "integer", "minimum": 1,
            "description": "Integer minor units (cents for USD, whole yen for JPY), written as a JSON integer literal: `\"2500\"` is refused, and so is `2500.0` (stricter than JSON Schema's `integer`, which admits it). At most the deployment's cap for the currency. Required for transfers; optional for reversals (a partial reversal).",
        },
        "currency": {
            "type": "string", "pattern": "^[A-Za-z]{3}$",
            "description": "ISO 4217 code in the deployment's allowlist (default USD, EUR, GBP, JPY, VND); any case, canonical form upper case.",
        },
        "source_account": {
            "type": "string", "pattern": SOURCE_ACCOUNT_PATTERN,
            "description": "One of the agent's configured source accounts.",
        },
        "destination": {
            "type": "string", "pattern": PAYEE_PATTERN,
            "description": "A payee in the tenant's registry (else 422 `unknown_destination`).",
        },
        "reference": {
            "type": "string", "maxLength": 140, "pattern": REFERENCE_PATTERN,
            "description": "Free text shown to humans as untrusted data, never an instruction. No control or bidirectional formatting characters.",
        },
        "purpose_code": enum_of(&purpose_codes()),
        "invoice_id": { "type": "string", "pattern": INVOICE_ID_PATTERN },
        "transfer_id": {
            "type": "string", "pattern": TRANSFER_REF_PATTERN,
            "description": "Reversals only (required there, forbidden otherwise): the proposal (`prop_…`) or rail transfer (`tr_…`) to reverse.",
        },
        "reason_code": {
            "type": "string", "enum": reason_codes(),
            "description": "Reversals only (required there, forbidden otherwise).",
        },
    })
}

/// Transfers need the payment fields and may not name a transfer to reverse;
/// reversals take currency, accounts and purpose from the transfer they name.
fn proposal_request_kind_rules() -> Value {
    let forbid = |fields: &[&str]| {
        let any: Vec<Value> = fields.iter().map(|f| json!({ "required": [f] })).collect();
        json!({ "not": { "anyOf": any } })
    };
    json!({
        "if": { "properties": { "kind": { "const": "reversal" } }, "required": ["kind"] },
        "then": {
            "required": ["transfer_id", "reason_code"],
            "allOf": [forbid(&["currency", "source_account", "destination", "purpose_code", "invoice_id"])],
        },
        "else": {
            "required": ["amount_minor", "currency", "source_account", "destination", "purpose_code"],
            "allOf": [forbid(&["transfer_id", "reason_code"])],
        },
    })
}

fn proposal_request_schema() -> Value {
    json!({
        "type": "object",
        "description": "A payment proposal (SPEC §3). Unknown fields (including identity fields such as `tenant` or `user_id`), missing required fields, wrong types and out-of-range values are all refused with 422 `validation_failed`, naming every offending field.",
        "properties": proposal_request_properties(),
        "required": ["run_id"],
        "additionalProperties": false,
        "allOf": [proposal_request_kind_rules()],
    })
}

fn proposal_properties() -> Value {
    json!({
        "id": { "type": "string", "pattern": "^prop_", "examples": ["prop_01hx2v9k3m"] },
        "status": enum_of(&proposal_statuses()),
        "kind": { "type": "string", "enum": ["transfer", "reversal"] },
        "run_id": { "type": "string", "pattern": RUN_ID_PATTERN },
        "request_hash": {
            "type": "string", "pattern": REQUEST_HASH_PATTERN,
            "description": "`sha256:` + lowercase hex SHA-256 of the RFC 8785 serialization of `canonical_request`.",
        },
        "canonical_request": schema_ref("CanonicalRequest"),
        "payee": schema_ref("Payee"),
        "policy": schema_ref("PolicyDecision"),
        "approvals": { "type": "array", "items": schema_ref("Approval") },
        "approval_token": {
            "type": ["string", "null"], "pattern": COMPACT_JWS_PATTERN,
            "description": "Compact ES256 JWS (`typ` `countersign-approval+jwt`) bound to this proposal and request hash; only while `approved`, and only to the owning agent. Redeem it with `commit`.",
        },
        "approval_expires_at": nullable_timestamp("Equals the token's `exp`; `null` when there is no token."),
        "operation": {
            "oneOf": [schema_ref("Operation"), { "type": "null" }],
            "description": "The durable operation once `commit` created one, else `null`.",
        },
        "approval_url": {
            "type": "string", "format": "uri",
            "description": "Where a human reviews this proposal in the console.",
        },
        "created_at": timestamp("When the proposal was created."),
        "updated_at": timestamp("When the proposal last changed."),
        "expires_at": timestamp("When the proposal expires if it is still awaiting approval (kept as a record afterwards)."),
    })
}

fn proposal_schema() -> Value {
    json!({
        "type": "object",
        "description": "A proposal as the agent and the console see it (SPEC §9). Fields that do not apply yet are `null`.",
        "properties": proposal_properties(),
        "required": [
            "id", "status", "kind", "run_id", "request_hash", "canonical_request", "payee", "policy",
            "approvals", "approval_token", "approval_expires_at", "operation", "approval_url",
            "created_at", "updated_at", "expires_at",
        ],
    })
}

fn proposal_list_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "data": { "type": "array", "items": schema_ref("Proposal") },
            "next_cursor": {
                "type": ["string", "null"],
                "description": "Pass as `cursor` for the next page; `null` on the last page.",
            },
        },
        "required": ["data", "next_cursor"],
    })
}

fn canonical_request_properties() -> Value {
    json!({
        "v": { "type": "integer", "minimum": 1, "description": "Version of the canonical form." },
        "tenant_id": { "type": "string", "description": "From the credential." },
        "agent_id": { "type": "string", "description": "From the credential." },
        "kind": { "type": "string", "enum": ["transfer", "reversal"] },
        "amount_minor": { "type": "integer", "minimum": 1 },
        "currency": { "type": "string", "pattern": "^[A-Z]{3}$" },
        "source_account": { "type": "string", "pattern": SOURCE_ACCOUNT_PATTERN },
        "destination": schema_ref("CanonicalPayee"),
        "reference": { "type": ["string", "null"], "maxLength": 140 },
        "purpose_code": enum_of(&purpose_codes()),
        "invoice_id": { "type": ["string", "null"], "pattern": INVOICE_ID_PATTERN },
        "transfer_id": { "type": ["string", "null"], "pattern": TRANSFER_REF_PATTERN },
        "reason_code": nullable_enum_of(&reason_codes()),
    })
}

fn canonical_request_schema() -> Value {
    json!({
        "type": "object",
        "description": "The exact object that was hashed into `request_hash` (RFC 8785 / JCS): normalized values, tenant and agent from the credential, the payee resolved from the registry. Reversals carry the currency, accounts and purpose of the transfer they reverse.",
        "properties": canonical_request_properties(),
        "required": [
            "v", "tenant_id", "agent_id", "kind", "amount_minor", "currency", "source_account",
            "destination", "reference", "purpose_code", "invoice_id", "transfer_id", "reason_code",
        ],
        "additionalProperties": false,
    })
}

fn canonical_payee_schema() -> Value {
    json!({
        "type": "object",
        "description": "The payee as resolved from the tenant's registry at proposal time.",
        "properties": {
            "id": { "type": "string", "pattern": PAYEE_PATTERN },
            "legal_name": { "type": "string" },
            "masked_account": { "type": "string", "examples": ["acct_…0001"] },
        },
        "required": ["id", "legal_name", "masked_account"],
        "additionalProperties": false,
    })
}

fn payee_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": { "type": "string", "pattern": PAYEE_PATTERN },
            "legal_name": { "type": "string", "examples": ["Acme Supplies Ltd"] },
            "masked_account": { "type": "string", "examples": ["acct_…9f3a"] },
            "trusted": { "type": "boolean", "description": "Trusted payees may be auto-approved below the threshold." },
        },
        "required": ["id", "legal_name", "masked_account", "trusted"],
    })
}

fn policy_decision_schema() -> Value {
    json!({
        "type": "object",
        "description": "The policy decision and every rule that fired.",
        "properties": {
            "outcome": { "type": "string", "enum": ["auto_approved", "needs_approval", "denied"] },
            "required_approvals": { "type": "integer", "minimum": 0, "maximum": 2 },
            "reasons": { "type": "array", "items": schema_ref("PolicyReason") },
        },
        "required": ["outcome", "required_approvals", "reasons"],
    })
}

fn policy_reason_schema() -> Value {
    json!({
        "type": "object",
        "description": "One policy rule that fired, with a human-readable reason.",
        "properties": {
            "rule": { "type": "string", "examples": ["dual_approval"] },
            "message": { "type": "string" },
        },
        "required": ["rule", "message"],
    })
}

fn approval_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "approver_id": {
                "type": "string",
                "description": "A user id, or `policy:<rule id>` for an auto-approval.",
            },
            "decision": { "type": "string", "enum": ["approve", "reject"] },
            "via": {
                "type": "string",
                "description": "Where the decision was made.",
                "examples": ["console", "slack", "policy"],
            },
            "at": timestamp("When the decision was made."),
            "reason": { "type": ["string", "null"], "description": "The approver's reason (always present for a rejection)." },
        },
        "required": ["approver_id", "decision", "reason", "via", "at"],
    })
}

fn operation_schema() -> Value {
    json!({
        "type": "object",
        "description": "The durable operation behind a commit. `unknown` means the rail may have acted: reconciliation settles it; it is never reported as `failed`.",
        "properties": {
            "id": { "type": "string", "pattern": "^op_" },
            "status": enum_of(&operation_statuses()),
            "idempotency_key": {
                "type": "string",
                "description": "The rail idempotency key, derived from the proposal id and request hash.",
            },
            "rail_reference": { "type": ["string", "null"], "examples": ["tr_1Nv0"] },
            "error": {
                "type": ["object", "null"],
                "description": "Set with `failed` (`code` one of `insufficient_funds`, `destination_closed`, `limit_exceeded`, `rail_rejected`), `too_late` (`too_late`) and `needs_review` (why: `no_rail_record`, `rail_record_mismatch`, `duplicate_rail_records`, `rail_record_missing`). Raw rail bodies are never passed through.",
                "properties": {
                    "code": { "type": "string", "examples": ["insufficient_funds", "destination_closed", "limit_exceeded", "rail_rejected"] },
                    "message": { "type": "string" },
                },
                "required": ["code", "message"],
            },
            "action_required": {
                "type": ["string", "null"],
                "enum": ["escalate_to_ops", null],
                "description": "Set with status `too_late` (a reversal past the rail's cutoff): a terminal result for humans, not an error to retry.",
            },
            "created_at": { "type": "string", "format": "date-time" },
            "updated_at": { "type": "string", "format": "date-time" },
        },
        "required": ["id", "status", "idempotency_key", "rail_reference", "error", "action_required", "created_at", "updated_at"],
    })
}

fn commit_request_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "approval_token": {
                "type": "string", "minLength": 1,
                "description": "The `approval_token` from the proposal. A malformed, expired or foreign token is 401 `approval_token_invalid`, not a validation error.",
            },
        },
        "required": ["approval_token"],
    })
}

fn decision_request_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "decision": { "type": "string", "enum": ["approve", "reject"] },
            "reason": { "type": "string", "description": "Required to reject." },
        },
        "required": ["decision"],
        "if": { "properties": { "decision": { "const": "reject" } }, "required": ["decision"] },
        "then": { "required": ["reason"], "properties": { "reason": { "minLength": 1 } } },
    })
}

fn sign_in_request_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "username": { "type": "string", "minLength": 1 },
            "password": { "type": "string", "minLength": 1, "format": "password" },
        },
        "required": ["username", "password"],
    })
}

fn session_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "user": {
                "type": "object",
                "properties": {
                    "id": { "type": "string" },
                    "username": { "type": "string" },
                    "tenant_id": { "type": "string" },
                    "roles": { "type": "array", "items": enum_of(&roles()) },
                },
                "required": ["id", "username", "tenant_id", "roles"],
            },
            "csrf_token": {
                "type": "string",
                "description": "Send back as `X-CSRF-Token` on every state-changing request.",
            },
        },
        "required": ["user", "csrf_token"],
    })
}

fn jwks_schema() -> Value {
    json!({
        "type": "object",
        "properties": { "keys": { "type": "array", "items": schema_ref("Jwk") } },
        "required": ["keys"],
    })
}

fn jwk_schema() -> Value {
    json!({
        "type": "object",
        "description": "A P-256 public key (RFC 7518 §6.2) that signs approval tokens.",
        "properties": {
            "kty": { "const": "EC" },
            "crv": { "const": "P-256" },
            "x": { "type": "string", "description": "base64url" },
            "y": { "type": "string", "description": "base64url" },
            "kid": { "type": "string" },
            "alg": { "const": "ES256" },
            "use": { "const": "sig" },
        },
        "required": ["kty", "crv", "x", "y", "kid"],
    })
}

fn error_schema() -> Value {
    json!({
        "type": "object",
        "description": "Every error has this envelope. 5xx bodies are generic; the cause is logged under `request_id`.",
        "properties": {
            "error": {
                "type": "object",
                "properties": {
                    "code": enum_of(ERROR_CODES),
                    "message": { "type": "string", "description": "For humans; do not parse." },
                    "details": {
                        "type": "array",
                        "description": "For `validation_failed`, one `FieldError` per offending field; for `policy_denied`, the `PolicyReason`s that fired; for `invalid_state`, `[{\"current_status\": ...}]`; otherwise usually empty.",
                        "items": {
                            "anyOf": [
                                schema_ref("FieldError"),
                                schema_ref("PolicyReason"),
                                current_status_detail(),
                                { "type": "object" },
                            ],
                        },
                    },
                    "request_id": { "type": "string" },
                    "reason": {
                        "type": "string",
                        "description": "With `approval_token_invalid`: which check failed.",
                    },
                    "current_status": {
                        "type": "string",
                        "enum": proposal_statuses(),
                        "description": "With `invalid_state`: the proposal's status now.",
                    },
                },
                "required": ["code", "message", "details", "request_id"],
            },
        },
        "required": ["error"],
    })
}

fn current_status_detail() -> Value {
    json!({
        "type": "object",
        "properties": { "current_status": enum_of(&proposal_statuses()) },
        "required": ["current_status"],
    })
}

fn field_error_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "field": { "type": "string", "description": "The offending field (empty for the body as a whole)." },
            "code": { "type": "string", "examples": ["required", "invalid_type", "invalid_value", "unknown_field", "forbidden"] },
            "message": { "type": "string" },
        },
        "required": ["field", "code", "message"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];

    fn doc() -> Value {
        document("https://console.example")
    }

    /// Follows a local `$ref` (`#/components/...`), if `v` is one.
    fn deref<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
        match v.get("$ref").and_then(Value::as_str) {
            Some(r) => doc.pointer(r.trim_start_matches('#')).unwrap_or_else(|| panic!("dangling {r}")),
            None => v,
        }
    }

    fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
        let mut out = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                if METHODS.contains(&method.as_str()) {
                    out.push((method.to_uppercase(), path.clone(), op));
                }
            }
        }
        out
    }

    fn walk<'a>(v: &'a Value, f: &mut impl FnMut(&'a Map<String, Value>)) {
        match v {
            Value::Object(m) => {
                f(m);
                m.values().for_each(|c| walk(c, f));
            }
            Value::Array(a) => a.iter().for_each(|c| walk(c, f)),
            _ => {}
        }
    }

    #[test]
    fn is_valid_json_and_openapi_3_1() {
        let d = doc();
        let text = serde_json::to_string(&d).unwrap();
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, d);
        assert_eq!(d["openapi"], "3.1.0");
        assert!(d["info"]["title"].is_string());
        assert!(d["info"]["version"].is_string());
        assert_eq!(
            d["servers"],
            json!([{ "url": "https://console.example", "description": "this Countersign deployment" }])
        );
    }

    #[test]
    fn server_url_is_the_public_url_without_a_trailing_slash() {
        assert_eq!(document("https://pay.example.com/")["servers"][0]["url"], "https://pay.example.com");
        assert_eq!(document("http://127.0.0.1:8080")["servers"][0]["url"], "http://127.0.0.1:8080");
    }

    #[test]
    fn every_agent_route_is_documented() {
        let d = doc();
        for (method, path) in AGENT_ROUTES {
            let op = &d["paths"][*path][method.to_lowercase()];
            assert!(op.is_object(), "{method} {path} is not in the document");
            assert!(op["tags"].as_array().unwrap().contains(&json!("agent")), "{method} {path} not tagged agent");
        }
    }

    #[test]
    fn documented_operations_are_exactly_the_route_lists() {
        let d = doc();
        let documented: BTreeSet<(String, String)> = operations(&d).into_iter().map(|(m, p, _)| (m, p)).collect();
        let listed: BTreeSet<(String, String)> = AGENT_ROUTES
            .iter()
            .chain(CONSOLE_ROUTES)
            .chain(PUBLIC_ROUTES)
            .map(|(m, p)| (m.to_string(), p.to_string()))
            .collect();
        assert_eq!(documented, listed);
        assert_eq!(
            listed.len(),
            AGENT_ROUTES.len() + CONSOLE_ROUTES.len() + PUBLIC_ROUTES.len(),
            "a route is listed twice"
        );
    }

    #[test]
    fn error_schema_lists_every_contract_code() {
        let d = doc();
        let codes: BTreeSet<&str> = d["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]
            ["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        let expected: BTreeSet<&str> = [
            "invalid_json",
            "payload_too_large",
            "unsupported_media_type",
            "unauthenticated",
            "forbidden",
            "not_found",
            "invalid_state",
            "idempotency_key_in_use",
            "validation_failed",
            "unknown_destination",
            "idempotency_key_reused",
            "approval_token_invalid",
            "policy_denied",
            "rate_limited",
            "rail_unavailable",
            "internal_error",
        ]
        .into_iter()
        .collect();
        assert_eq!(codes, expected);
        assert_eq!(ERROR_CODES.len(), expected.len(), "ERROR_CODES has a duplicate");
    }

    #[test]
    fn every_ref_resolves() {
        let d = doc();
        let mut refs = Vec::new();
        walk(&d, &mut |m| {
            if let Some(r) = m.get("$ref") {
                refs.push(r.as_str().expect("$ref is a string").to_owned());
            }
        });
        assert!(refs.len() > 20, "suspiciously few refs: {}", refs.len());
        for r in refs {
            assert!(r.starts_with("#/components/"), "non-local ref {r}");
            let target = d.pointer(&r[1..]).unwrap_or_else(|| panic!("dangling ref {r}"));
            assert!(target.is_object(), "{r} points at a non-object");
        }
    }

    #[test]
    fn per_response_error_codes_are_contract_codes() {
        let d = doc();
        let known: BTreeSet<&str> = ERROR_CODES.iter().copied().collect();
        let mut checked = 0;
        walk(&d, &mut |m| {
            let Some(all) = m.get("allOf").and_then(Value::as_array) else {
                return;
            };
            if all.first() != Some(&schema_ref("Error")) {
                return;
            }
            for code in all[1]["properties"]["error"]["properties"]["code"]["enum"].as_array().unwrap() {
                assert!(known.contains(code.as_str().unwrap()), "unknown error code {code}");
                checked += 1;
            }
        });
        assert!(checked >= ERROR_CODES.len());
    }

    #[test]
    fn every_error_code_is_used_by_some_response() {
        let text = serde_json::to_string(&doc()["paths"]).unwrap()
            + &serde_json::to_string(&doc()["components"]["responses"]).unwrap();
        for code in ERROR_CODES {
            assert!(text.contains(&format!("\"{code}\"")), "{code} is never answered");
        }
    }

    #[test]
    fn operations_are_well_formed() {
        let d = doc();
        let mut ids = BTreeSet::new();
        for (method, path, op) in operations(&d) {
            let id = op["operationId"].as_str().unwrap_or_else(|| panic!("{method} {path} has no operationId"));
            assert!(ids.insert(id.to_owned()), "duplicate operationId {id}");
            assert!(op["security"].is_array(), "{method} {path} does not state its security");
            assert!(!op["responses"].as_object().unwrap().is_empty());
            for (status, resp) in op["responses"].as_object().unwrap() {
                assert!(status.len() == 3 && status.chars().all(|c| c.is_ascii_digit()), "{status}");
                assert!(deref(&d, resp)["description"].is_string(), "{method} {path} {status}");
            }
        }
    }

    #[test]
    fn path_parameters_are_declared() {
        let d = doc();
        for (method, path, op) in operations(&d) {
            let declared: BTreeSet<String> = op["parameters"]
                .as_array()
                .map(|ps| {
                    ps.iter()
                        .map(|p| deref(&d, p))
                        .filter(|p| p["in"] == "path")
                        .map(|p| p["name"].as_str().unwrap().to_owned())
                        .collect()
                })
                .unwrap_or_default();
            let in_template: BTreeSet<String> = path
                .split('/')
                .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
                .map(str::to_owned)
                .collect();
            assert_eq!(declared, in_template, "{method} {path}");
        }
    }

    #[test]
    fn security_matches_the_audience() {
        let d = doc();
        for (method, path) in AGENT_ROUTES.iter().filter(|(_, p)| p.starts_with("/api/")) {
            assert_eq!(
                d["paths"][*path][method.to_lowercase()]["security"],
                json!([{ "agentKey": [] }]),
                "{method} {path}"
            );
        }
        for (method, path) in CONSOLE_ROUTES.iter().filter(|r| **r != ("POST", "/api/v1/session")) {
            let op = &d["paths"][*path][method.to_lowercase()];
            assert_eq!(op["security"], json!([{ "consoleSession": [] }]), "{method} {path}");
            if *method != "GET" {
                assert!(
                    op["parameters"].as_array().unwrap().contains(&param_ref("CsrfToken")),
                    "{method} {path} lacks X-CSRF-Token"
                );
            }
        }
        let schemes = &d["components"]["securitySchemes"];
        assert_eq!(schemes["agentKey"]["scheme"], "bearer");
        assert_eq!(schemes["consoleSession"]["in"], "cookie");
        assert_eq!(schemes["consoleSession"]["name"], "id");
    }

    #[test]
    fn proposal_schema_has_every_spec_field() {
        let d = doc();
        let p = &d["components"]["schemas"]["Proposal"];
        for field in [
            "id",
            "status",
            "kind",
            "run_id",
            "request_hash",
            "canonical_request",
            "payee",
            "policy",
            "approvals",
            "approval_token",
            "approval_expires_at",
            "operation",
            "approval_url",
            "created_at",
            "updated_at",
            "expires_at",
        ] {
            assert!(p["properties"][field].is_object(), "Proposal.{field}");
            assert!(p["required"].as_array().unwrap().contains(&json!(field)), "Proposal.{field} not required");
        }
        assert_eq!(p["properties"]["status"]["enum"].as_array().unwrap().len(), 12);
        for nullable in ["approval_token", "approval_expires_at"] {
            assert!(p["properties"][nullable]["type"].as_array().unwrap().contains(&json!("null")), "{nullable}");
        }
        let op = &d["components"]["schemas"]["Operation"]["properties"];
        assert_eq!(
            op["status"]["enum"],
            json!(["pending", "accepted", "succeeded", "failed", "unknown", "needs_review", "too_late"])
        );
        assert!(op["action_required"]["enum"].as_array().unwrap().contains(&json!("escalate_to_ops")));
        assert_eq!(
            d["components"]["schemas"]["PolicyDecision"]["properties"]["outcome"]["enum"],
            json!(["auto_approved", "needs_approval", "denied"])
        );
    }

    #[test]
    fn proposal_request_is_strict() {
        let d = doc();
        let r = &d["components"]["schemas"]["ProposalRequest"];
        assert_eq!(r["additionalProperties"], false);
        assert_eq!(r["properties"]["amount_minor"]["type"], "integer");
        assert_eq!(r["properties"]["amount_minor"]["minimum"], 1);
        assert_eq!(r["properties"]["source_account"]["pattern"], "^acct_[A-Za-z0-9]{16}$");
        assert_eq!(r["properties"]["destination"]["pattern"], "^(acct_|card_|ba_)[A-Za-z0-9]{1,64}$");
        assert_eq!(r["properties"]["reference"]["maxLength"], 140);
        assert_eq!(r["properties"]["purpose_code"]["enum"], json!(["payroll", "refund", "vendor", "disbursement"]));
        assert_eq!(
            r["properties"]["reason_code"]["enum"],
            json!(["duplicate", "fraudulent", "requested_by_customer", "error"])
        );
        assert_eq!(d["components"]["parameters"]["IdempotencyKey"]["schema"]["maxLength"], 255);

        // The examples use only declared fields and satisfy the kind rules.
        let props = r["properties"].as_object().unwrap();
        let rules = &r["allOf"][0];
        let examples =
            &d["paths"]["/api/v1/proposals"]["post"]["requestBody"]["content"]["application/json"]["examples"];
        for (name, ex) in examples.as_object().unwrap() {
            let body = ex["value"].as_object().unwrap();
            assert!(body.keys().all(|k| props.contains_key(k)), "example {name} has an unknown field");
            let branch = if body.get("kind") == Some(&json!("reversal")) { &rules["then"] } else { &rules["else"] };
            for req in r["required"].as_array().unwrap().iter().chain(branch["required"].as_array().unwrap()) {
                assert!(body.contains_key(req.as_str().unwrap()), "example {name} lacks {req}");
            }
            for forbidden in branch["allOf"][0]["not"]["anyOf"].as_array().unwrap() {
                let f = forbidden["required"][0].as_str().unwrap();
                assert!(!body.contains_key(f), "example {name} has forbidden {f}");
            }
        }
    }

    #[test]
    fn create_proposal_answers_the_contract_statuses() {
        let d = doc();
        let responses = d["paths"]["/api/v1/proposals"]["post"]["responses"].as_object().unwrap();
        for status in ["200", "201", "400", "401", "403", "409", "413", "415", "422", "429"] {
            assert!(responses.contains_key(status), "POST /api/v1/proposals lacks {status}");
        }
        let get = &d["paths"]["/api/v1/proposals/{id}"]["get"]["responses"];
        assert!(get["200"]["headers"]["ETag"].is_object());
        assert!(get["304"].is_object());
    }
}
