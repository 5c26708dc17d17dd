//! Request extractors: the agent credential, and a strict JSON body.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{header, request::Parts};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

use super::error::ApiError;
use crate::domain::FieldError;
use crate::intake::proposals::AgentPrincipal;
use crate::state::Shared;
use crate::store;

/// Bodies above this are refused with 413 before they are parsed.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The agent behind `Authorization: Bearer <key>`. Keys are looked up by
/// their SHA-256, so the stored value is useless to a database thief.
pub struct AgentAuth(pub AgentPrincipal);

impl FromRequestParts<Shared> for AgentAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Shared) -> Result<Self, Self::Rejection> {
        let digest = key_digest(parts)?;
        let agent =
            store::directory::agent_by_key_hash(&state.db.read, &digest).await?.ok_or(ApiError::Unauthenticated)?;
        let agent = AgentPrincipal::from(agent);
        super::observe::record_principal(&parts.extensions, &agent.tenant_id, || agent.actor());
        state.agent_limits.take(&agent.tenant_id, &agent.agent_id).map_err(ApiError::RetryAfter)?;
        Ok(AgentAuth(agent))
    }
}

/// The SHA-256 (hex) of the bearer key, or 401 when there is none.
fn key_digest(parts: &Parts) -> Result<String, ApiError> {
    let key = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|k| !k.is_empty() && k.len() <= 256)
        .ok_or(ApiError::Unauthenticated)?;
    Ok(crate::domain::key_sha256(key).into_string())
}

/// [`AgentAuth`] for endpoints that only read (the status poll): the
/// credential may come from the read cache, which a deactivated or changed
/// agent leaves at once when the change is made by this process and within
/// `changes::FOLLOW_EVERY` otherwise. Endpoints that change anything (propose,
/// cancel, commit) use `AgentAuth`, which always asks the database.
///
/// It also keeps the key's digest, so a long-poll can ask the database again
/// whether the key still stands each time it wakes.
pub struct ReadOnlyAgentAuth(pub std::sync::Arc<AgentPrincipal>, pub KeyDigest);

/// The SHA-256 of an agent's bearer key, as the registry stores it.
#[derive(Clone)]
pub struct KeyDigest(String);

impl KeyDigest {
    /// Whether the key still belongs to this agent, active, asking the
    /// database (never the cache): a key replaced or an agent deactivated
    /// while a long-poll waits is refused at the poll's next wake.
    pub async fn still_valid(&self, state: &Shared, agent: &AgentPrincipal) -> Result<bool, ApiError> {
        let current = store::directory::agent_by_key_hash(&state.db.read, &self.0).await?;
        Ok(current.is_some_and(|a| a.tenant_id == agent.tenant_id && a.id == agent.agent_id))
    }
}

impl FromRequestParts<Shared> for ReadOnlyAgentAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Shared) -> Result<Self, Self::Rejection> {
        let digest = key_digest(parts)?;
        let caches = state.changes.caches();
        // Unknown keys are not remembered: the cache holds only real agents.
        let load = async {
            let agent = store::directory::agent_by_key_hash(&state.db.read, &digest).await?;
            agent.map(|a| std::sync::Arc::new(AgentPrincipal::from(a))).ok_or(ApiError::Unauthenticated)
        };
        let agent = crate::platform::cache::read_through(caches.as_ref().map(|c| c.agents), &digest, load).await?;
        super::observe::record_principal(&parts.extensions, &agent.tenant_id, || agent.actor());
        state.agent_limits.take(&agent.tenant_id, &agent.agent_id).map_err(ApiError::RetryAfter)?;
        Ok(ReadOnlyAgentAuth(agent, KeyDigest(digest)))
    }
}

/// A JSON body: `application/json`, at most 64 KiB, well-formed, and with no
/// duplicate member names (two parsers must never see two different requests).
pub struct JsonBody {
    pub value: Value,
}

impl FromRequest<Shared> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &Shared) -> Result<Self, Self::Rejection> {
        if !is_json(req.headers()) {
            return Err(ApiError::UnsupportedMediaType);
        }
        let bytes: Bytes =
            axum::body::to_bytes(req.into_body(), MAX_BODY_BYTES).await.map_err(|_| ApiError::PayloadTooLarge)?;
        let value = parse_strict(&bytes).map_err(ApiError::InvalidJson)?;
        Ok(JsonBody { value })
    }
}

/// An optional JSON body: none when the request has no `Content-Type` (a
/// `DELETE` without a body), else exactly [`JsonBody`]'s rules.
impl axum::extract::OptionalFromRequest<Shared> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &Shared) -> Result<Option<Self>, Self::Rejection> {
        if req.headers().get(header::CONTENT_TYPE).is_none() {
            return Ok(None);
        }
        <JsonBody as FromRequest<Shared>>::from_request(req, state).await.map(Some)
    }
}

/// A body already read strictly ([`JsonBody`]) as a typed request (a
/// struct with `deny_unknown_fields`): a refusal names its field (422
/// `validation_failed`), as the strict proposal parser does.
/// The body must be a JSON object: serde would also read a struct from an
/// array of its fields in order (`[null, null]`), which no schema allows.
pub fn typed<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, ApiError> {
    if !value.is_object() {
        return Err(ApiError::Validation(vec![FieldError::new("", "invalid_value", "the body must be a JSON object")]));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let message = e.inner().to_string();
        let quoted =
            |prefix: &str| message.strip_prefix(prefix).and_then(|rest| rest.split('`').next()).map(str::to_owned);
        let error = if let Some(name) = quoted("unknown field `") {
            FieldError::new(&name, "unknown_field", "is not a field of this request")
        } else if let Some(name) = quoted("missing field `") {
            FieldError::new(&name, "required", "is required")
        } else {
            let field = if path == "." { String::new() } else { path };
            FieldError::new(&field, "invalid_value", message)
        };
        ApiError::Validation(vec![error])
    })
}

/// Parses JSON, refusing duplicate object member names.
pub fn parse_strict(bytes: &[u8]) -> Result<Value, String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let StrictValue(value) = StrictValue::deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(value)
}

struct StrictValue(Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map(Value::Number).unwrap_or(Value::Null))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(StrictValue(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate member `{key}`")));
            }
            let StrictValue(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// Whether the body is declared `application/json` (parameters such as
/// `charset` aside, any case): what every JSON endpoint, the CSRF guard's
/// script exception and `/mcp` ask of a body.
pub fn is_json(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"))
}

/// The query string of a JSON API route, read as `T` (whose
/// `deny_unknown_fields` refuses a parameter it does not know). A parameter
/// given empty (`?status=`, `?to=`) is refused, naming it, rather than read
/// as absent: a client that meant a value learns it sent none. Any refusal
/// is 422 `validation_failed`.
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    S: Send + Sync,
    T: serde::de::DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or_default();
        let empty: Vec<FieldError> = query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .filter_map(|pair| match pair.split_once('=') {
                Some((name, "")) => Some(name),
                None => Some(pair),
                Some(_) => None,
            })
            .map(|name| {
                // Named only when it is a plain parameter name: the rest of
                // a query is the client's data, not echoed.
                let plain = !name.is_empty()
                    && name.len() <= 32
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                let field = if plain { name } else { "query" };
                FieldError::new(field, "invalid_value", "is empty: leave the parameter out instead")
            })
            .collect();
        if !empty.is_empty() {
            return Err(ApiError::Validation(empty));
        }
        let axum::extract::Query(value) = axum::extract::Query::<T>::try_from_uri(&parts.uri).map_err(query_error)?;
        Ok(ApiQuery(value))
    }
}

/// A query string that does not read as the route's parameters.
pub(super) fn query_error(e: impl fmt::Display) -> ApiError {
    ApiError::Validation(vec![FieldError::new("query", "invalid_value", e.to_string())])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_bodies_name_the_field_they_refuse() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Body {
            decision: String,
            count: Option<u8>,
        }
        let field = |v: Value| match typed::<Body>(v) {
            Err(ApiError::Validation(errors)) => (errors[0].field.clone(), errors[0].code),
            other => panic!("{other:?}"),
        };
        assert_eq!(field(serde_json::json!({"decision": "a", "extra": 1})), ("extra".to_owned(), "unknown_field"));
        assert_eq!(field(serde_json::json!({})), ("decision".to_owned(), "required"));
        assert_eq!(field(serde_json::json!({"decision": 1})), ("decision".to_owned(), "invalid_value"));
        assert_eq!(field(serde_json::json!({"decision": "a", "count": 300})), ("count".to_owned(), "invalid_value"));
        assert!(typed::<Body>(serde_json::json!({"decision": "a"})).is_ok());
        // Not read from an array of the fields in order, nor from anything but an object.
        for not_an_object in [serde_json::json!(["a", null]), serde_json::json!("a"), serde_json::json!(null)] {
            assert_eq!(field(not_an_object), (String::new(), "invalid_value"));
        }
    }

    #[test]
    fn strict_parsing() {
        assert_eq!(parse_strict(br#"{"a": [1, 2.5, "x", null, true]}"#).unwrap()["a"][1], serde_json::json!(2.5));
        assert!(parse_strict(br#"{"a": 1, "a": 2}"#).unwrap_err().contains("duplicate member `a`"));
        assert!(parse_strict(br#"{"o": {"b": 1, "b": 1}}"#).is_err());
        assert!(parse_strict(b"{").is_err());
        assert!(parse_strict(b"{} x").is_err());
        assert!(parse_strict(br#"{"amount_minor": 2500.0}"#).unwrap()["amount_minor"].is_f64());
    }
}
