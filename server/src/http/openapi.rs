//! The OpenAPI 3.1 description of the agent API and the console JSON API,
//! served at `GET /openapi.json`.
//!
//! Generated, not written: `http::api` registers every documented route once
//! through `utoipa_axum`'s `OpenApiRouter` (the same registration the server
//! routes requests with); each handler's `#[utoipa::path]` gives its
//! parameters, body and responses; the schemas derive from the request and
//! response types themselves (`ProposalView`, `policy::Decision`, the domain's
//! enums and values, feature `openapi` of countersign-domain); the error
//! responses come from `ErrorCode` (`http/error.rs`), each code under the
//! status the server really answers it with. What is added here is what no
//! type says: the document's info, tags, servers and security schemes.
//!
//! A snapshot test (`snapshots/`) pins the whole document: a changed route,
//! field or type shows up as a diff to review and accept (`cargo insta`).

use std::collections::BTreeMap;
use std::sync::LazyLock;
use utoipa::openapi::content::ContentBuilder;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::info::{InfoBuilder, LicenseBuilder};
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{AllOfBuilder, ObjectBuilder, Schema, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::server::ServerBuilder;
use utoipa::openapi::tag::TagBuilder;
use utoipa::openapi::{OpenApi, Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use super::error::{ErrorCode, ErrorEnvelope};

/// `(METHOD, path template)` of every agent API route, in axum's `{param}`
/// syntax: the document describes exactly these and the other two lists
/// (tested below), and the server answers each (`tests/api/surface.rs`).
pub const AGENT_ROUTES: &[(&str, &str)] = &[
    ("POST", "/api/v1/proposals"),
    ("GET", "/api/v1/proposals"),
    ("GET", "/api/v1/proposals/{id}"),
    ("POST", "/api/v1/proposals/{id}/cancel"),
    ("POST", "/api/v1/proposals/{id}/commit"),
    ("GET", "/api/v1/proposals/{id}/evidence"),
    ("GET", "/api/v1/events"),
    ("GET", "/api/v1/proposals/{id}/events"),
    ("GET", "/api/v1/invoices"),
    ("GET", "/api/v1/invoices/{payee}/{number}"),
    ("GET", "/api/v1/payees"),
    ("POST", "/api/v1/batches"),
    ("GET", "/api/v1/batches/{id}"),
    ("POST", "/api/v1/batches/{id}/cancel"),
    ("POST", "/api/v1/batches/{id}/commit"),
    ("GET", "/openapi.json"),
];

/// `(METHOD, path template)` of the console's JSON routes (session cookie;
/// state-changing ones also need the `X-CSRF-Token` header).
pub const CONSOLE_ROUTES: &[(&str, &str)] = &[
    ("POST", "/api/v1/session"),
    ("POST", "/api/v1/session/passkey-challenges"),
    ("POST", "/api/v1/session/passkey"),
    ("DELETE", "/api/v1/session"),
    ("GET", "/api/v1/queue"),
    ("POST", "/api/v1/proposals/{id}/approvals"),
    ("POST", "/api/v1/proposals/{id}/step-up"),
    ("POST", "/api/v1/bulk/step-up"),
    ("POST", "/api/v1/operations/{id}/resolution"),
    ("GET", "/api/v1/operations/{id}/rail-records"),
    ("GET", "/api/v1/console/proposals/{id}/evidence"),
    ("GET", "/api/v1/console/exports/payments"),
    ("POST", "/api/v1/console/invoices/import"),
    ("GET", "/api/v1/console/batches"),
    ("GET", "/api/v1/console/batches/{id}"),
    ("POST", "/api/v1/console/batches/{id}/lines/{line}/hold"),
    ("POST", "/api/v1/console/batches/{id}/approvals"),
    ("POST", "/api/v1/me/passkeys/challenges"),
    ("POST", "/api/v1/me/passkeys"),
    ("GET", "/api/v1/me/passkeys"),
    ("DELETE", "/api/v1/me/passkeys/{id}"),
    ("POST", "/api/v1/me/passkeys/{id}/removal-challenges"),
    ("GET", "/api/v1/me/notices"),
    ("POST", "/api/v1/me/notices/read"),
    ("GET", "/api/v1/me/notifications"),
    ("PUT", "/api/v1/me/email"),
    ("PUT", "/api/v1/me/quiet-hours"),
    ("POST", "/api/v1/me/push-subscriptions"),
    ("DELETE", "/api/v1/me/push-subscriptions/{id}"),
    ("GET", "/api/v1/me/delegations"),
    ("POST", "/api/v1/me/delegations"),
    ("DELETE", "/api/v1/me/delegations/{id}"),
    ("GET", "/api/v1/admin/policy"),
    ("POST", "/api/v1/admin/policy/backtest"),
    ("POST", "/api/v1/admin/policy/changes"),
    ("POST", "/api/v1/admin/policy/changes/{id}/confirm"),
];

/// `(METHOD, path template)` of the unauthenticated operational routes that
/// the document also describes.
pub const PUBLIC_ROUTES: &[(&str, &str)] = &[
    ("GET", "/.well-known/jwks.json"),
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/api/v1/openapi.json"),
    ("GET", "/api/v1/log"),
    ("GET", "/api/v1/log/checkpoint"),
    ("GET", "/api/v1/log/proofs/inclusion"),
    ("GET", "/api/v1/log/proofs/consistency"),
];

/// The security scheme of the agent API (`security(("agentKey" = []))`).
pub const AGENT_KEY: &str = "agentKey";
/// The security scheme of the console's JSON API.
pub const CONSOLE_SESSION: &str = "consoleSession";

/// The document without its `servers`: built once from the route
/// registration (`http::api`).
static DOCUMENT: LazyLock<OpenApi> = LazyLock::new(|| {
    let mut doc = super::api(tower::layer::util::Identity::new()).into_openapi();
    describe(&mut doc);
    doc
});

/// The OpenAPI 3.1 document, with `public_url` (the console's configured
/// public URL, also the tokens' `iss`) as its only server.
pub fn document(public_url: &str) -> OpenApi {
    let mut doc = DOCUMENT.clone();
    doc.servers = Some(vec![ServerBuilder::new()
        .url(server_url(public_url))
        .description(Some("this Countersign deployment"))
        .build()]);
    doc
}

/// The public URL without a trailing slash, so `{url}{path}` never doubles it.
fn server_url(public_url: &str) -> &str {
    match public_url.trim_end_matches('/') {
        "" => "/",
        url => url,
    }
}

/// What the routes and types cannot say: info, tags, security schemes, and
/// the error envelope's schema (error responses name it by reference).
fn describe(doc: &mut OpenApi) {
    doc.info = InfoBuilder::new()
        .title("Countersign API")
        .version(env!("CARGO_PKG_VERSION"))
        .description(Some(
            "Human approval for AI agents that move money. An agent *proposes* a payment; a human (or an \
             explicit, audited policy) approves it; the payment rail is called only by `commit`, which verifies \
             a short-lived ES256 approval token bound to the exact request hash. Amounts are integers in the \
             currency's minor units. Every error has the same envelope (`Error`) with a stable `code` an agent \
             can act on. Text such as `reference` is data shown to humans, never an instruction.",
        ))
        .license(Some(LicenseBuilder::new().name("Apache-2.0").identifier(Some("Apache-2.0")).build()))
        .build();
    doc.tags = Some(
        [
            ("agent", "The agent API: bearer agent key."),
            ("console", "The console's JSON API: session cookie, plus `X-CSRF-Token` on state-changing requests."),
            ("public", "Unauthenticated discovery and health endpoints."),
        ]
        .into_iter()
        .map(|(name, description)| TagBuilder::new().name(name).description(Some(description)).build())
        .collect(),
    );
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        AGENT_KEY,
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .bearer_format("Countersign agent key")
                .description(Some(
                    "`Authorization: Bearer <agent key>`. The key is shown once when the agent is created and \
                     stored only as a hash. Tenant, agent and the human the agent acts for all come from this \
                     credential, never from a request body.",
                ))
                .build(),
        ),
    );
    components.add_security_scheme(
        CONSOLE_SESSION,
        SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
            super::SESSION_COOKIE,
            "The console session cookie set by `POST /api/v1/session` (HttpOnly, SameSite=Lax, Secure over \
             HTTPS; idle and absolute timeouts). Every state-changing request must also send the `csrf_token` \
             returned at sign-in in the `X-CSRF-Token` header, or it is refused with 403 `forbidden`.",
        ))),
    );
    let mut schemas = vec![(ErrorEnvelope::name().into_owned(), ErrorEnvelope::schema())];
    ErrorEnvelope::schemas(&mut schemas);
    components.schemas.extend(schemas);
}

/// The error responses of an operation answering `codes`: one response per
/// HTTP status, its body the error envelope with `error.code` narrowed to
/// the codes of that status, its description what each code means.
pub fn error_responses_for(codes: &[ErrorCode]) -> BTreeMap<String, RefOr<Response>> {
    let mut by_status: BTreeMap<u16, Vec<ErrorCode>> = BTreeMap::new();
    for code in codes {
        by_status.entry(code.status().as_u16()).or_default().push(*code);
    }
    by_status
        .into_iter()
        .map(|(status, codes)| {
            let description = match codes.as_slice() {
                [one] => one.meaning().to_owned(),
                many => many.iter().map(|c| format!("`{}`: {}", c.as_str(), c.meaning())).collect::<Vec<_>>().join(" "),
            };
            let narrowed = ObjectBuilder::new().property(
                "error",
                ObjectBuilder::new().property(
                    "code",
                    ObjectBuilder::new().schema_type(Type::String).enum_values(Some(codes.iter().map(|c| c.as_str()))),
                ),
            );
            let schema: Schema =
                AllOfBuilder::new().item(Ref::from_schema_name(ErrorEnvelope::name())).item(narrowed).build().into();
            let mut response = ResponseBuilder::new()
                .description(description)
                .header("X-Request-Id", header("The id of this request, also `error.request_id`."))
                .content("application/json", ContentBuilder::new().schema(Some(schema)).build());
            if codes.contains(&ErrorCode::Unauthenticated) {
                response = response.header("WWW-Authenticate", header("`Bearer`."));
            }
            if codes.contains(&ErrorCode::RateLimited) {
                response = response.header("Retry-After", header("Seconds to wait before retrying."));
            }
            (status.to_string(), response.build().into())
        })
        .collect()
}

fn header(description: &str) -> utoipa::openapi::header::Header {
    HeaderBuilder::new().schema(ObjectBuilder::new().schema_type(Type::String)).description(Some(description)).build()
}

/// Declares a type whose `utoipa::IntoResponses` are the error responses of
/// the named codes, for a handler's `#[utoipa::path(responses(...))]`:
/// `error_responses!(CancelErrors: Unauthenticated, NotFound, InvalidState);`
macro_rules! error_responses {
    ($name:ident: $($code:ident),+ $(,)?) => {
        #[doc = concat!("The error responses of one operation: ", $("`", stringify!($code), "` ",)+)]
        pub struct $name;

        impl utoipa::IntoResponses for $name {
            fn responses(
            ) -> std::collections::BTreeMap<String, utoipa::openapi::RefOr<utoipa::openapi::response::Response>> {
                $crate::http::openapi::error_responses_for(&[$($crate::http::error::ErrorCode::$code),+])
            }
        }
    };
}
pub(crate) use error_responses;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map, Value};
    use std::collections::BTreeSet;

    const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];

    fn doc() -> Value {
        serde_json::to_value(document("https://console.example")).unwrap()
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

    /// The schema of a component, and of one of its properties (through a `$ref`).
    fn schema<'a>(d: &'a Value, name: &str) -> &'a Value {
        let s = &d["components"]["schemas"][name];
        assert!(s.is_object(), "no schema {name}");
        s
    }

    /// A property's schema, through its `$ref` (also when it is nullable:
    /// `oneOf: [{type: null}, {$ref}]`).
    fn property<'a>(d: &'a Value, schema_name: &str, field: &str) -> &'a Value {
        let p = &schema(d, schema_name)["properties"][field];
        match p["oneOf"].as_array().map(Vec::as_slice) {
            Some([null, some]) if null["type"] == "null" => deref(d, some),
            _ => deref(d, p),
        }
    }

    /// The whole document, pinned: a route, parameter, field or type that
    /// changes shows up here as a diff to review (`cargo insta review`).
    #[test]
    fn the_document_is_pinned() {
        insta::assert_json_snapshot!("openapi", doc());
    }

    #[test]
    fn is_openapi_3_1_with_the_public_url_as_server() {
        let d = doc();
        assert_eq!(d["openapi"], "3.1.0");
        assert_eq!(d["info"]["title"], "Countersign API");
        assert_eq!(d["info"]["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(d["info"]["license"]["identifier"], "Apache-2.0");
        assert_eq!(
            d["servers"],
            json!([{ "url": "https://console.example", "description": "this Countersign deployment" }])
        );
        let tags: BTreeSet<&str> = d["tags"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(tags, ["agent", "console", "public"].into());
    }

    #[test]
    fn server_url_is_the_public_url_without_a_trailing_slash() {
        let url = |public: &str| serde_json::to_value(document(public)).unwrap()["servers"][0]["url"].clone();
        assert_eq!(url("https://pay.example.com/"), "https://pay.example.com");
        assert_eq!(url("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
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
        let codes: BTreeSet<&str> =
            property(&d, "ErrorBody", "code")["enum"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
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
            "step_up_required",
            "passkey_refused",
            "rate_limited",
            "rail_unavailable",
            "internal_error",
        ]
        .into_iter()
        .collect();
        assert_eq!(codes, expected);
        let all: BTreeSet<&str> = ErrorCode::ALL.iter().map(ErrorCode::as_str).collect();
        assert_eq!(all, expected, "ErrorCode::ALL lists every code once");
        for code in ErrorCode::ALL {
            assert_eq!(serde_json::to_value(code).unwrap(), json!(code.as_str()));
        }
        let envelope = &schema(&d, "Error");
        assert_eq!(envelope["required"], json!(["error"]));
        let body = schema(&d, "ErrorBody");
        for field in ["code", "message", "details", "request_id"] {
            assert!(body["required"].as_array().unwrap().contains(&json!(field)), "error.{field} is required");
        }
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

    /// Every error response is the envelope with `error.code` narrowed to
    /// contract codes that really travel with that status, and every code
    /// is answered somewhere.
    #[test]
    fn error_responses_carry_their_codes_under_their_statuses() {
        let d = doc();
        let mut answered = BTreeSet::new();
        for (method, path, op) in operations(&d) {
            for (status, response) in op["responses"].as_object().unwrap() {
                let Some(schema) = response.pointer("/content/application~1json/schema") else { continue };
                let Some(all) = schema["allOf"].as_array() else { continue };
                assert_eq!(all[0], json!({ "$ref": "#/components/schemas/Error" }), "{method} {path} {status}");
                for code in all[1]["properties"]["error"]["properties"]["code"]["enum"].as_array().unwrap() {
                    let code = ErrorCode::ALL
                        .iter()
                        .find(|c| c.as_str() == code)
                        .unwrap_or_else(|| panic!("{method} {path}: unknown code {code}"));
                    assert_eq!(code.status().as_str(), status, "{method} {path}: {code:?}");
                    answered.insert(code.as_str());
                }
                assert!(response["headers"]["X-Request-Id"].is_object(), "{method} {path} {status}");
            }
        }
        for code in ErrorCode::ALL {
            assert!(answered.contains(code.as_str()), "{code:?} is never answered");
        }
    }

    #[test]
    fn operations_are_well_formed() {
        let d = doc();
        let schemes: BTreeSet<&String> = d["components"]["securitySchemes"].as_object().unwrap().keys().collect();
        let mut ids = BTreeSet::new();
        for (method, path, op) in operations(&d) {
            let id = op["operationId"].as_str().unwrap_or_else(|| panic!("{method} {path} has no operationId"));
            assert!(ids.insert(id.to_owned()), "duplicate operationId {id}");
            assert!(op["summary"].is_string(), "{method} {path} has no summary");
            let security = op["security"].as_array().unwrap_or_else(|| panic!("{method} {path} states no security"));
            for requirement in security {
                for scheme in requirement.as_object().unwrap().keys() {
                    assert!(schemes.contains(scheme), "{method} {path}: undefined scheme {scheme}");
                }
            }
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
        let params = |op: &Value| -> Vec<String> {
            op["parameters"]
                .as_array()
                .map(|ps| ps.iter().map(|p| deref(&d, p)["name"].as_str().unwrap().to_owned()).collect())
                .unwrap_or_default()
        };
        for (method, path) in AGENT_ROUTES.iter().filter(|(_, p)| p.starts_with("/api/")) {
            assert_eq!(
                d["paths"][*path][method.to_lowercase()]["security"],
                json!([{ AGENT_KEY: [] }]),
                "{method} {path}"
            );
        }
        // Signing in (by password or passkey) needs no session yet.
        let signing_in = |(method, path): &(&str, &str)| *method == "POST" && path.starts_with("/api/v1/session");
        for (method, path) in CONSOLE_ROUTES.iter().filter(|r| !signing_in(r)) {
            let op = &d["paths"][*path][method.to_lowercase()];
            assert_eq!(op["security"], json!([{ CONSOLE_SESSION: [] }]), "{method} {path}");
            if *method != "GET" {
                assert!(params(op).contains(&"X-CSRF-Token".to_owned()), "{method} {path} lacks X-CSRF-Token");
            }
        }
        let schemes = &d["components"]["securitySchemes"];
        assert_eq!(schemes[AGENT_KEY]["scheme"], "bearer");
        assert_eq!(schemes[CONSOLE_SESSION]["in"], "cookie");
        assert_eq!(schemes[CONSOLE_SESSION]["name"], super::super::SESSION_COOKIE);
    }

    #[test]
    fn proposal_schema_has_every_spec_field() {
        let d = doc();
        let p = schema(&d, "Proposal");
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
        assert!(p["properties"].get("version").is_none(), "the ETag's version is not part of the object");
        let statuses: Vec<&str> = crate::domain::ProposalStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(property(&d, "Proposal", "status")["enum"], json!(statuses));
        assert_eq!(statuses.len(), 12);
        for nullable in ["approval_token", "approval_expires_at"] {
            assert!(p["properties"][nullable]["type"].as_array().unwrap().contains(&json!("null")), "{nullable}");
        }
        assert_eq!(
            property(&d, "Operation", "status")["enum"],
            json!(["pending", "accepted", "succeeded", "failed", "unknown", "needs_review", "too_late"])
        );
        assert!(property(&d, "Operation", "action_required")["enum"]
            .as_array()
            .unwrap()
            .contains(&json!("escalate_to_ops")));
        assert_eq!(
            property(&d, "PolicyDecision", "outcome")["enum"],
            json!(["auto_approved", "needs_approval", "denied"])
        );
        assert_eq!(property(&d, "Payee", "id")["pattern"], crate::domain::fields::PAYEE_ID_PATTERN);
        assert_eq!(property(&d, "Proposal", "request_hash")["pattern"], "^sha256:[0-9a-f]{64}$");
        let roles = &deref(&d, &property(&d, "SessionUser", "roles")["items"])["enum"];
        assert_eq!(roles, &json!(["viewer", "approver", "admin", "auditor"]));
    }

    #[test]
    fn proposal_request_is_strict() {
        let d = doc();
        let request = schema(&d, "ProposalRequest");
        let variants: Vec<&str> =
            request["oneOf"].as_array().unwrap().iter().map(|v| v["$ref"].as_str().unwrap()).collect();
        assert_eq!(
            variants,
            ["#/components/schemas/TransferProposalRequest", "#/components/schemas/ReversalProposalRequest"]
        );
        for name in ["TransferProposalRequest", "ReversalProposalRequest"] {
            assert_eq!(schema(&d, name)["additionalProperties"], false, "{name}");
        }
        let t = "TransferProposalRequest";
        assert_eq!(property(&d, t, "amount_minor")["type"], "integer");
        assert_eq!(property(&d, t, "amount_minor")["minimum"], 1);
        assert_eq!(property(&d, t, "source_account")["pattern"], "^acct_[A-Za-z0-9]{16}$");
        assert_eq!(property(&d, t, "destination")["pattern"], "^(acct_|card_|ba_)[A-Za-z0-9]{1,64}$");
        assert_eq!(property(&d, t, "run_id")["pattern"], "^[A-Za-z0-9_.:-]{1,128}$");
        assert_eq!(property(&d, t, "invoice_id")["pattern"], "^[A-Za-z0-9_-]{1,64}$");
        assert_eq!(property(&d, t, "reference")["maxLength"], 140);
        assert_eq!(property(&d, t, "purpose_code")["enum"], json!(["payroll", "refund", "vendor", "disbursement"]));
        assert_eq!(
            property(&d, "ReversalProposalRequest", "reason_code")["enum"],
            json!(["duplicate", "fraudulent", "requested_by_customer", "error"])
        );
        let create = &d["paths"]["/api/v1/proposals"]["post"];
        let key = create["parameters"].as_array().unwrap().iter().find(|p| p["name"] == "Idempotency-Key").unwrap();
        assert_eq!(key["in"], "header");
        assert_eq!(key["schema"]["maxLength"], 255);

        // The examples are valid requests, read by the real parser.
        let examples = create["requestBody"]["content"]["application/json"]["examples"].as_object().unwrap();
        assert_eq!(examples.len(), 2);
        let currencies = crate::domain::CurrencyRules::defaults();
        for (name, example) in examples {
            let parsed = crate::domain::ProposalRequest::parse(&example["value"], &currencies);
            assert!(parsed.is_ok(), "example {name}: {parsed:?}");
        }
    }

    #[test]
    fn create_proposal_answers_the_contract_statuses() {
        let d = doc();
        let responses = d["paths"]["/api/v1/proposals"]["post"]["responses"].as_object().unwrap();
        for status in ["200", "201", "400", "401", "403", "409", "413", "415", "422", "429"] {
            assert!(responses.contains_key(status), "POST /api/v1/proposals lacks {status}");
        }
        assert!(responses["201"]["headers"]["Idempotent-Replayed"].is_object());
        let get = &d["paths"]["/api/v1/proposals/{id}"]["get"]["responses"];
        assert!(get["200"]["headers"]["ETag"].is_object());
        assert!(get["304"].is_object());
        let names: BTreeSet<&str> = d["paths"]["/api/v1/proposals/{id}"]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["id", "wait", "If-None-Match"].into());
    }
}
