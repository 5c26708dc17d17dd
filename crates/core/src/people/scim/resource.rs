//! The SCIM resources as JSON (RFC 7643): a User and a Group rendered from
//! the store, parsed back from what a client sends (POST, PUT, and the
//! result of a PATCH), their ETags, and the discovery documents
//! (`/ServiceProviderConfig`, `/Schemas`, `/ResourceTypes`) that say
//! exactly which attributes Countersign keeps.

use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

use super::filter::get_ci;
use super::ScimError;
use crate::domain::Username;
use crate::store::people::{GroupRow, ScimUserRow};

pub const USER_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
pub const GROUP_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
pub const LIST_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
pub const PATCH_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
pub const ERROR_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:Error";

/// A User's attributes a filter may name (lower case); anything else is
/// `invalidFilter`.
pub const USER_FILTERABLE: &[&str] = &[
    "id",
    "externalid",
    "username",
    "displayname",
    "active",
    "name",
    "name.givenname",
    "name.familyname",
    "name.formatted",
    "emails",
    "emails.value",
    "emails.type",
    "emails.primary",
    "groups",
    "groups.value",
    "groups.display",
    "meta.created",
    "meta.lastmodified",
    "meta.resourcetype",
];

pub const GROUP_FILTERABLE: &[&str] = &[
    "id",
    "externalid",
    "displayname",
    "members",
    "members.value",
    "members.display",
    "meta.created",
    "meta.lastmodified",
    "meta.resourcetype",
];

/// Attributes compared with case in filters (`caseExact` in the schemas).
pub fn case_exact(path: &str) -> bool {
    matches!(path, "id" | "externalid" | "groups.value" | "members.value" | "meta.created" | "meta.lastmodified")
}

/// What a User is made of, parsed from a client's JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct UserInput {
    pub username: String,
    pub external_id: Option<String>,
    pub active: bool,
    /// `name`, `displayName`, `emails`, normalized.
    pub profile: Map<String, Value>,
}

/// What a Group is made of.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupInput {
    pub display_name: String,
    pub external_id: Option<String>,
    /// User ids, as given.
    pub members: Vec<String>,
}

/// The key of `map` that is `name` without case, if any.
pub fn get_ci_key(map: &Map<String, Value>, name: &str) -> Option<String> {
    map.keys().find(|k| k.eq_ignore_ascii_case(name)).cloned()
}

fn invalid(detail: impl Into<String>) -> ScimError {
    ScimError::BadRequest { scim_type: Some("invalidValue"), detail: detail.into() }
}

/// A short text a person reads: 1–256 characters, no control characters.
fn text(value: &Value, what: &str) -> Result<String, ScimError> {
    match value {
        Value::String(s) if !s.trim().is_empty() && s.chars().count() <= 256 && !s.chars().any(char::is_control) => {
            Ok(s.clone())
        }
        Value::String(_) => Err(invalid(format!("{what} must be 1-256 characters without control characters"))),
        _ => Err(invalid(format!("{what} must be a string"))),
    }
}

fn optional_text(value: Option<&Value>, what: &str) -> Result<Option<String>, ScimError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => text(v, what).map(Some),
    }
}

/// A boolean, or the strings "True"/"False" in any case (Microsoft Entra
/// sends those in PATCH values).
pub fn boolean(value: &Value, what: &str) -> Result<bool, ScimError> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
        _ => Err(invalid(format!("{what} must be true or false"))),
    }
}

/// Parses a User (the whole resource: POST, PUT, a PATCH's result).
/// Read-only attributes (`id`, `meta`, `groups`, `schemas`) and attributes
/// Countersign does not keep are ignored (docs/PEOPLE.md lists them).
pub fn parse_user(body: &Value) -> Result<UserInput, ScimError> {
    if !body.is_object() {
        return Err(ScimError::BadRequest {
            scim_type: Some("invalidSyntax"),
            detail: "a User is a JSON object".into(),
        });
    }
    let username = match get_ci(body, "userName") {
        Some(Value::String(s)) => Username::parse(s)
            .map(|u| u.into_string())
            .map_err(|_| invalid("userName must be 1-128 characters of letters, digits and _ . @ + -"))?,
        Some(_) => return Err(invalid("userName must be a string")),
        None => return Err(invalid("userName is required")),
    };
    let external_id = optional_text(get_ci(body, "externalId"), "externalId")?;
    let active = match get_ci(body, "active") {
        None | Some(Value::Null) => true,
        Some(v) => boolean(v, "active")?,
    };
    let mut profile = Map::new();
    if let Some(display) = optional_text(get_ci(body, "displayName"), "displayName")? {
        profile.insert("displayName".into(), Value::String(display));
    }
    match get_ci(body, "name") {
        None | Some(Value::Null) => {}
        Some(Value::Object(_)) => {
            let name = get_ci(body, "name").expect("present");
            let mut kept = Map::new();
            for part in ["formatted", "familyName", "givenName", "middleName", "honorificPrefix", "honorificSuffix"] {
                if let Some(v) = optional_text(get_ci(name, part), &format!("name.{part}"))? {
                    kept.insert(part.into(), Value::String(v));
                }
            }
            if !kept.is_empty() {
                profile.insert("name".into(), Value::Object(kept));
            }
        }
        Some(_) => return Err(invalid("name must be an object")),
    }
    match get_ci(body, "emails") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            let mut emails = Vec::new();
            for item in items {
                let value = match get_ci(item, "value") {
                    Some(v) => text(v, "emails.value")?,
                    None => return Err(invalid("each of emails needs a value")),
                };
                if !value.contains('@') {
                    return Err(invalid("emails.value must be an e-mail address"));
                }
                let mut email = Map::new();
                email.insert("value".into(), Value::String(value));
                if let Some(kind) = optional_text(get_ci(item, "type"), "emails.type")? {
                    email.insert("type".into(), Value::String(kind));
                }
                match get_ci(item, "primary") {
                    None | Some(Value::Null) => {}
                    Some(p) => {
                        email.insert("primary".into(), Value::Bool(boolean(p, "emails.primary")?));
                    }
                }
                if let Some(display) = optional_text(get_ci(item, "display"), "emails.display")? {
                    email.insert("display".into(), Value::String(display));
                }
                emails.push(Value::Object(email));
            }
            if emails.iter().filter(|e| e.get("primary") == Some(&Value::Bool(true))).count() > 1 {
                return Err(invalid("at most one of emails is primary"));
            }
            if emails.len() > 20 {
                return Err(ScimError::BadRequest { scim_type: Some("tooMany"), detail: "at most 20 emails".into() });
            }
            if !emails.is_empty() {
                profile.insert("emails".into(), Value::Array(emails));
            }
        }
        Some(_) => return Err(invalid("emails must be an array")),
    }
    Ok(UserInput { username, external_id, active, profile })
}

/// Parses a Group (the whole resource). `members` are `{"value": user id}`.
pub fn parse_group(body: &Value) -> Result<GroupInput, ScimError> {
    if !body.is_object() {
        return Err(ScimError::BadRequest {
            scim_type: Some("invalidSyntax"),
            detail: "a Group is a JSON object".into(),
        });
    }
    let display_name = match get_ci(body, "displayName") {
        Some(v) => text(v, "displayName")?,
        None => return Err(invalid("displayName is required")),
    };
    let external_id = optional_text(get_ci(body, "externalId"), "externalId")?;
    let mut members = Vec::new();
    match get_ci(body, "members") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for item in items {
                match get_ci(item, "value") {
                    Some(Value::String(id)) if !id.is_empty() => {
                        if !members.contains(id) {
                            members.push(id.clone());
                        }
                    }
                    _ => return Err(invalid("each member needs a value: the id of a User")),
                }
            }
        }
        Some(_) => return Err(invalid("members must be an array")),
    }
    if members.len() > 10_000 {
        return Err(ScimError::BadRequest { scim_type: Some("tooMany"), detail: "at most 10,000 members".into() });
    }
    Ok(GroupInput { display_name, external_id, members })
}

fn meta(kind: &str, location: String, created: DateTime<Utc>, modified: DateTime<Utc>) -> Value {
    json!({
        "resourceType": kind,
        "created": crate::store::ts(created),
        "lastModified": crate::store::ts(modified),
        "location": location,
    })
}

/// The ETag of a resource: a weak tag of a digest of what it says.
pub fn etag(resource: &Value) -> String {
    use sha2::{Digest, Sha256};
    let mut without = resource.clone();
    if let Some(meta) = without.get_mut("meta").and_then(Value::as_object_mut) {
        meta.remove("version");
    }
    let digest = Sha256::digest(serde_json::to_vec(&without).expect("JSON serializes"));
    format!("W/\"{}\"", hex::encode(&digest[..12]))
}

/// Sets `meta.version` to the resource's ETag; returns the ETag.
fn versioned(mut resource: Value) -> (Value, String) {
    let tag = etag(&resource);
    resource["meta"]["version"] = Value::String(tag.clone());
    (resource, tag)
}

/// A User as SCIM shows it, with its ETag. `groups`: (id, displayName) of
/// the groups they are in.
pub fn user_json(row: &ScimUserRow, groups: &[(String, String)], base: &str) -> (Value, String) {
    let profile: Map<String, Value> =
        row.profile.as_deref().and_then(|p| serde_json::from_str(p).ok()).unwrap_or_default();
    let mut user = Map::new();
    user.insert("schemas".into(), json!([USER_SCHEMA]));
    user.insert("id".into(), json!(row.id));
    if let Some(external) = &row.external_id {
        user.insert("externalId".into(), json!(external));
    }
    user.insert("userName".into(), json!(row.username));
    for (k, v) in profile {
        user.insert(k, v);
    }
    user.insert("active".into(), json!(row.active));
    if !groups.is_empty() {
        let listed: Vec<Value> = groups
            .iter()
            .map(|(id, name)| json!({"value": id, "display": name, "$ref": format!("{base}/Groups/{id}"), "type": "direct"}))
            .collect();
        user.insert("groups".into(), Value::Array(listed));
    }
    let modified = row.updated_at.unwrap_or(row.created_at);
    user.insert("meta".into(), meta("User", format!("{base}/Users/{}", row.id), row.created_at, modified));
    versioned(Value::Object(user))
}

/// A Group as SCIM shows it, with its ETag. `members`: (user id, userName);
/// each is shown as the client wrote it (`value`, `$ref`, `type`), without
/// a `display` it did not send.
pub fn group_json(row: &GroupRow, members: &[(String, String)], base: &str) -> (Value, String) {
    let mut group = Map::new();
    group.insert("schemas".into(), json!([GROUP_SCHEMA]));
    group.insert("id".into(), json!(row.id));
    if let Some(external) = &row.external_id {
        group.insert("externalId".into(), json!(external));
    }
    group.insert("displayName".into(), json!(row.display_name));
    let listed: Vec<Value> = members
        .iter()
        .map(|(id, _)| json!({"value": id, "$ref": format!("{base}/Users/{id}"), "type": "User"}))
        .collect();
    group.insert("members".into(), Value::Array(listed));
    group.insert("meta".into(), meta("Group", format!("{base}/Groups/{}", row.id), row.created_at, row.updated_at));
    versioned(Value::Object(group))
}

/// Keeps only what `attributes` asks for (or drops what `excluded` names):
/// `id`, `schemas` and `meta` always stay (RFC 7644 §3.4.2.5).
pub fn project(resource: Value, attributes: &[String], excluded: &[String]) -> Value {
    let Value::Object(map) = resource else { return resource };
    let always = |k: &str| ["id", "schemas", "meta"].iter().any(|a| a.eq_ignore_ascii_case(k));
    let wanted = |k: &str, list: &[String]| {
        list.iter().any(|a| {
            let a = a.rsplit_once(':').map_or(a.as_str(), |(_, tail)| tail);
            a.eq_ignore_ascii_case(k) || a.split_once('.').is_some_and(|(top, _)| top.eq_ignore_ascii_case(k))
        })
    };
    let mut out = Map::new();
    for (k, v) in map {
        let keep = if !attributes.is_empty() {
            always(&k) || wanted(&k, attributes)
        } else {
            always(&k)
                || !excluded.iter().any(|e| {
                    let e = e.rsplit_once(':').map_or(e.as_str(), |(_, tail)| tail);
                    e.eq_ignore_ascii_case(&k)
                })
        };
        if !keep {
            continue;
        }
        // `name.givenName` keeps only that sub-attribute of `name`.
        let subs: Vec<&str> = attributes
            .iter()
            .filter_map(|a| a.split_once('.'))
            .filter(|(top, _)| top.eq_ignore_ascii_case(&k))
            .map(|(_, sub)| sub)
            .collect();
        let whole = attributes.iter().any(|a| a.eq_ignore_ascii_case(&k));
        let v = match v {
            Value::Object(inner) if !subs.is_empty() && !whole && !always(&k) => Value::Object(
                inner.into_iter().filter(|(sk, _)| subs.iter().any(|s| s.eq_ignore_ascii_case(sk))).collect(),
            ),
            other => other,
        };
        out.insert(k, v);
    }
    Value::Object(out)
}

/// `GET /ServiceProviderConfig`.
pub fn service_provider_config(base: &str) -> Value {
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
        "documentationUri": "https://github.com/countersign/countersign/blob/main/docs/PEOPLE.md",
        "patch": {"supported": true},
        "bulk": {"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": true, "maxResults": super::MAX_COUNT},
        "changePassword": {"supported": false},
        "sort": {"supported": false},
        "etag": {"supported": true},
        "authenticationSchemes": [{
            "type": "oauthbearertoken",
            "name": "Bearer token",
            "description": "A tenant's SCIM token, issued on the console by two admins",
            "primary": true,
        }],
        "meta": {"resourceType": "ServiceProviderConfig", "location": format!("{base}/ServiceProviderConfig")},
    })
}

fn attribute(
    name: &str,
    kind: &str,
    (multi, required): (bool, bool),
    (mutability, returned, uniqueness): (&str, &str, &str),
    case_exact: bool,
) -> Value {
    json!({
        "name": name, "type": kind, "multiValued": multi, "description": name, "required": required,
        "caseExact": case_exact, "mutability": mutability, "returned": returned, "uniqueness": uniqueness,
    })
}

fn with_subs(mut attr: Value, subs: Vec<Value>) -> Value {
    attr["subAttributes"] = Value::Array(subs);
    attr
}

fn text_attr(name: &str) -> Value {
    attribute(name, "string", (false, false), ("readWrite", "default", "none"), false)
}

/// The User schema: exactly the attributes Countersign keeps.
pub fn user_schema(base: &str) -> Value {
    let mut id_ref = attribute("$ref", "reference", (false, false), ("readOnly", "default", "none"), false);
    id_ref["referenceTypes"] = json!(["Group"]);
    let mut user_name = attribute("userName", "string", (false, true), ("readWrite", "default", "server"), false);
    user_name["description"] = json!("What the person signs in with (letters, digits and _ . @ + -, at most 128)");
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
        "id": USER_SCHEMA,
        "name": "User",
        "description": "A person of the tenant",
        "attributes": [
            user_name,
            with_subs(attribute("name", "complex", (false, false), ("readWrite", "default", "none"), false), vec![
                text_attr("formatted"), text_attr("familyName"), text_attr("givenName"), text_attr("middleName"),
                text_attr("honorificPrefix"), text_attr("honorificSuffix"),
            ]),
            text_attr("displayName"),
            // Required here: a user is active or not, always (absent on a
            // POST means active; a PATCH cannot remove it).
            attribute("active", "boolean", (false, true), ("readWrite", "default", "none"), false),
            with_subs(attribute("emails", "complex", (true, false), ("readWrite", "default", "none"), false), vec![
                text_attr("value"), text_attr("display"),
                {
                    let mut t = text_attr("type");
                    t["canonicalValues"] = json!(["work", "home", "other"]);
                    t
                },
                attribute("primary", "boolean", (false, false), ("readWrite", "default", "none"), false),
            ]),
            with_subs(attribute("groups", "complex", (true, false), ("readOnly", "default", "none"), false), vec![
                attribute("value", "string", (false, false), ("readOnly", "default", "none"), true),
                id_ref,
                attribute("display", "string", (false, false), ("readOnly", "default", "none"), false),
                attribute("type", "string", (false, false), ("readOnly", "default", "none"), false),
            ]),
        ],
        "meta": {"resourceType": "Schema", "location": format!("{base}/Schemas/{USER_SCHEMA}")},
    })
}

/// The Group schema.
pub fn group_schema(base: &str) -> Value {
    let mut member_ref = attribute("$ref", "reference", (false, false), ("immutable", "default", "none"), false);
    member_ref["referenceTypes"] = json!(["User"]);
    let mut member_type = attribute("type", "string", (false, false), ("immutable", "default", "none"), false);
    member_type["canonicalValues"] = json!(["User"]);
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
        "id": GROUP_SCHEMA,
        "name": "Group",
        "description": "An identity provider's group: what it grants is the tenant's idp_groups setting",
        "attributes": [
            attribute("displayName", "string", (false, true), ("readWrite", "default", "server"), false),
            with_subs(attribute("members", "complex", (true, false), ("readWrite", "default", "none"), false), vec![
                attribute("value", "string", (false, false), ("immutable", "default", "none"), true),
                member_ref,
                attribute("display", "string", (false, false), ("readOnly", "default", "none"), false),
                member_type,
            ]),
        ],
        "meta": {"resourceType": "Schema", "location": format!("{base}/Schemas/{GROUP_SCHEMA}")},
    })
}

/// The two resource types.
pub fn resource_types(base: &str) -> Vec<Value> {
    vec![
        json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
            "id": "User", "name": "User", "endpoint": "/Users", "description": "People", "schema": USER_SCHEMA,
            "meta": {"resourceType": "ResourceType", "location": format!("{base}/ResourceTypes/User")},
        }),
        json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
            "id": "Group", "name": "Group", "endpoint": "/Groups", "description": "Groups", "schema": GROUP_SCHEMA,
            "meta": {"resourceType": "ResourceType", "location": format!("{base}/ResourceTypes/Group")},
        }),
    ]
}

/// A list response of `resources` (one page) of `total`.
pub fn list(resources: Vec<Value>, total: usize, start_index: usize) -> Value {
    json!({
        "schemas": [LIST_SCHEMA],
        "totalResults": total,
        "itemsPerPage": resources.len(),
        "startIndex": start_index,
        "Resources": resources,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_is_parsed_strictly_and_entra_booleans_are_read() {
        let u = parse_user(&json!({"userName": "ana@example.com", "ACTIVE": "False", "externalId": "00u1",
            "name": {"givenName": "Ana", "nickName": "ignored"}, "emails": [{"value": "ana@example.com", "type": "work", "primary": "True"}],
            "title": "ignored", "id": "ignored", "meta": {"x": 1}})).unwrap();
        assert_eq!((u.username.as_str(), u.active, u.external_id.as_deref()), ("ana@example.com", false, Some("00u1")));
        assert_eq!(
            Value::Object(u.profile),
            json!({"name": {"givenName": "Ana"},
            "emails": [{"value": "ana@example.com", "type": "work", "primary": true}]})
        );
        for bad in [
            json!({}),
            json!({"userName": 7}),
            json!({"userName": "a b"}),
            json!({"userName": "a", "active": "yes"}),
            json!({"userName": "a", "emails": [{"value": "no-at"}]}),
            json!({"userName": "a", "name": "Ana"}),
            json!({"userName": "a", "emails": [{"value": "a@x", "primary": true}, {"value": "b@x", "primary": true}]}),
            json!({"userName": "a", "displayName": "a\u{0}b"}),
            json!([1]),
        ] {
            assert!(parse_user(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn etags_follow_the_content_and_projection_keeps_the_core() {
        let a = json!({"id": "1", "userName": "a", "meta": {"version": "x"}});
        let b = json!({"id": "1", "userName": "b", "meta": {"version": "x"}});
        assert_ne!(etag(&a), etag(&b));
        assert_eq!(etag(&a), etag(&json!({"id": "1", "userName": "a", "meta": {"version": "y"}})));
        let user = json!({"id": "1", "schemas": [], "meta": {}, "userName": "a", "name": {"givenName": "A", "familyName": "B"}, "active": true});
        assert_eq!(
            project(user.clone(), &["userName".into()], &[]),
            json!({"id": "1", "schemas": [], "meta": {}, "userName": "a"})
        );
        assert_eq!(project(user.clone(), &["name.givenName".into()], &[])["name"], json!({"givenName": "A"}));
        assert_eq!(
            project(user, &[], &["active".into(), "name".into()]),
            json!({"id": "1", "schemas": [], "meta": {}, "userName": "a"})
        );
    }
}
