//! SCIM PATCH (RFC 7644 §3.5.2) applied to a resource's JSON: `add`,
//! `remove` and `replace`, with or without a path, paths with a value
//! filter (`emails[type eq "work"].value`, `members[value eq "…"]`). The
//! result is then parsed like a PUT's body, so a PATCH is checked exactly
//! as a replacement is, and applied whole or not at all.
//!
//! What identity providers send and RFC 7644 does not quite say, taken as
//! they mean it: operation names in any case (`"Replace"`), booleans as
//! strings (`"False"`, read by the resource parser), `add` to a filtered
//! path nothing matches yet (`emails[type eq "work"].value`: the address is
//! added with that type), and `remove` of `members` with a list of members
//! as its value (those are removed). Attributes of other schemas
//! (extensions) are ignored, as on POST and PUT.

use serde_json::{Map, Value};

use super::filter::{self, Filter, PatchPath};
use super::resource::{get_ci_key, PATCH_SCHEMA};
use super::ScimError;

/// Attributes that hold several values.
const MULTI: [&str; 3] = ["emails", "members", "groups"];
/// Attributes nobody writes.
const READ_ONLY: [&str; 4] = ["id", "meta", "schemas", "groups"];
/// Attributes a resource always has: they are replaced, never removed.
const REQUIRED: [&str; 2] = ["userName", "active"];

fn bad(scim_type: &'static str, detail: impl Into<String>) -> ScimError {
    ScimError::BadRequest { scim_type: Some(scim_type), detail: detail.into() }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Add,
    Remove,
    Replace,
}

/// Applies a PatchOp request's operations to `resource` (its JSON without
/// `meta`), in order. Any refused operation refuses the whole request.
pub fn apply(resource: &mut Value, body: &Value) -> Result<(), ScimError> {
    let Some(request) = body.as_object() else { return Err(bad("invalidSyntax", "a PatchOp is a JSON object")) };
    match filter::get_ci(body, "schemas") {
        None => {}
        Some(Value::Array(s)) if s.iter().any(|s| s.as_str() == Some(PATCH_SCHEMA)) => {}
        Some(_) => return Err(bad("invalidSyntax", format!("schemas must list {PATCH_SCHEMA}"))),
    }
    let _ = request;
    let Some(Value::Array(ops)) = filter::get_ci(body, "Operations") else {
        return Err(bad("invalidSyntax", "Operations must be an array of operations"));
    };
    if ops.is_empty() || ops.len() > 1000 {
        return Err(bad("invalidSyntax", "Operations lists 1 to 1000 operations"));
    }
    for (i, op) in ops.iter().enumerate() {
        one(resource, op).map_err(|e| match e {
            ScimError::BadRequest { scim_type, detail } => {
                ScimError::BadRequest { scim_type, detail: format!("Operations[{i}]: {detail}") }
            }
            other => other,
        })?;
    }
    Ok(())
}

fn one(resource: &mut Value, op: &Value) -> Result<(), ScimError> {
    if !op.is_object() {
        return Err(bad("invalidSyntax", "an operation is a JSON object"));
    }
    let kind = match filter::get_ci(op, "op").and_then(Value::as_str).map(str::to_ascii_lowercase).as_deref() {
        Some("add") => Kind::Add,
        Some("remove") => Kind::Remove,
        Some("replace") => Kind::Replace,
        _ => return Err(bad("invalidSyntax", "op must be add, remove or replace")),
    };
    let value = filter::get_ci(op, "value");
    let path = match filter::get_ci(op, "path") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) if p.trim().is_empty() => None,
        Some(Value::String(p)) => Some(filter::parse_path(p.trim()).map_err(|why| bad("invalidPath", why))?),
        Some(_) => return Err(bad("invalidPath", "path must be a string")),
    };
    match path {
        None => {
            if kind == Kind::Remove {
                return Err(bad("noTarget", "remove needs a path"));
            }
            let Some(Value::Object(values)) = value else {
                return Err(bad("invalidValue", "without a path, value must be an object of attributes"));
            };
            for (name, v) in values {
                let Ok(path) = filter::parse_path(name) else { continue };
                if path.attr.starts_with("urn:") || path.filter.is_some() {
                    // Another schema's attributes (an extension): not kept.
                    continue;
                }
                at_path(resource, kind, &path, Some(v))?;
            }
            Ok(())
        }
        Some(path) => {
            if kind != Kind::Remove && value.is_none() {
                return Err(bad("invalidValue", "add and replace need a value"));
            }
            at_path(resource, kind, &path, value)
        }
    }
}

fn at_path(resource: &mut Value, kind: Kind, path: &PatchPath, value: Option<&Value>) -> Result<(), ScimError> {
    if path.attr.starts_with("urn:") {
        return Ok(());
    }
    if READ_ONLY.iter().any(|r| r.eq_ignore_ascii_case(&path.attr)) {
        return Err(bad("mutability", format!("{} cannot be changed", path.attr)));
    }
    if kind == Kind::Remove
        && path.sub.is_none()
        && path.filter.is_none()
        && REQUIRED.iter().any(|r| r.eq_ignore_ascii_case(&path.attr))
    {
        return Err(bad("mutability", format!("{} is required: replace it, it cannot be removed", path.attr)));
    }
    let multi = MULTI.iter().any(|m| m.eq_ignore_ascii_case(&path.attr));
    let object = resource.as_object_mut().expect("a resource is an object");
    let key = get_ci_key(object, &path.attr).unwrap_or_else(|| path.attr.clone());
    match (&path.filter, &path.sub) {
        (None, None) => whole(object, key, kind, multi, value),
        (None, Some(sub)) => {
            if multi {
                return Err(bad("invalidPath", format!("{}.{sub} needs a filter to say which value", path.attr)));
            }
            match kind {
                Kind::Remove => {
                    if let Some(Value::Object(inner)) = object.get_mut(&key) {
                        if let Some(k) = get_ci_key(inner, sub) {
                            inner.remove(&k);
                        }
                    }
                }
                Kind::Add | Kind::Replace => {
                    let entry = object.entry(key).or_insert_with(|| Value::Object(Map::new()));
                    let Value::Object(inner) = entry else {
                        return Err(bad("invalidPath", format!("{} has no sub-attributes", path.attr)));
                    };
                    let k = get_ci_key(inner, sub).unwrap_or_else(|| sub.clone());
                    inner.insert(k, value.cloned().unwrap_or(Value::Null));
                }
            }
            Ok(())
        }
        (Some(f), sub) => {
            if !multi {
                return Err(bad("invalidPath", format!("{} is not multi-valued: it takes no filter", path.attr)));
            }
            filtered(object, key, kind, (f, sub.as_deref()), value)
        }
    }
}

/// An operation on a whole attribute.
fn whole(
    object: &mut Map<String, Value>,
    key: String,
    kind: Kind,
    multi: bool,
    value: Option<&Value>,
) -> Result<(), ScimError> {
    match kind {
        Kind::Remove => match (multi, value) {
            // Entra's removal of some members: `{"op": "Remove", "path": "members", "value": [{"value": id}]}`.
            (true, Some(Value::Array(gone))) => {
                let gone: Vec<&Value> = gone.iter().filter_map(|g| filter::get_ci(g, "value")).collect();
                if let Some(Value::Array(items)) = object.get_mut(&key) {
                    items.retain(|item| !filter::get_ci(item, "value").is_some_and(|v| gone.contains(&v)));
                }
                Ok(())
            }
            _ => {
                object.remove(&key);
                Ok(())
            }
        },
        Kind::Add if multi => {
            let new: Vec<Value> = match value.cloned().unwrap_or(Value::Null) {
                Value::Array(items) => items,
                Value::Null => Vec::new(),
                one => vec![one],
            };
            let entry = object.entry(key).or_insert_with(|| Value::Array(Vec::new()));
            let Value::Array(items) = entry else { return Err(bad("invalidValue", "not a list")) };
            for item in new {
                let same = |existing: &Value| {
                    existing == &item
                        || (filter::get_ci(existing, "value").is_some()
                            && filter::get_ci(existing, "value") == filter::get_ci(&item, "value"))
                };
                if !items.iter().any(same) {
                    items.push(item);
                }
            }
            Ok(())
        }
        Kind::Replace if multi => {
            let new = match value.cloned().unwrap_or(Value::Null) {
                Value::Array(items) => Value::Array(items),
                Value::Null => Value::Null,
                one => Value::Array(vec![one]),
            };
            object.insert(key, new);
            Ok(())
        }
        Kind::Add | Kind::Replace => {
            let value = value.cloned().unwrap_or(Value::Null);
            match (object.get_mut(&key), value) {
                // A complex attribute: the sub-attributes given replace theirs, the others stay.
                (Some(Value::Object(existing)), Value::Object(new)) => {
                    for (k, v) in new {
                        let k = get_ci_key(existing, &k).unwrap_or(k);
                        existing.insert(k, v);
                    }
                }
                (_, value) => {
                    object.insert(key, value);
                }
            }
            Ok(())
        }
    }
}

/// An operation on the values of a multi-valued attribute a filter selects.
fn filtered(
    object: &mut Map<String, Value>,
    key: String,
    kind: Kind,
    (f, sub): (&Filter, Option<&str>),
    value: Option<&Value>,
) -> Result<(), ScimError> {
    let exact = |p: &str| super::resource::case_exact(p);
    let items = match object.get_mut(&key) {
        Some(Value::Array(items)) => items,
        _ => {
            object.insert(key.clone(), Value::Array(Vec::new()));
            match object.get_mut(&key) {
                Some(Value::Array(items)) => items,
                _ => unreachable!("just inserted"),
            }
        }
    };
    let matching: Vec<usize> = (0..items.len()).filter(|i| f.matches(&items[*i], &exact)).collect();
    match kind {
        Kind::Remove => {
            match sub {
                Some(sub) => {
                    for i in &matching {
                        if let Value::Object(item) = &mut items[*i] {
                            if let Some(k) = get_ci_key(item, sub) {
                                item.remove(&k);
                            }
                        }
                    }
                }
                None => {
                    let mut i = 0;
                    items.retain(|_| {
                        let keep = !matching.contains(&i);
                        i += 1;
                        keep
                    });
                }
            }
            Ok(())
        }
        Kind::Add | Kind::Replace => {
            let value = value.cloned().unwrap_or(Value::Null);
            if matching.is_empty() {
                // Nothing matches yet: `type eq "work"` makes a work value.
                let Filter::Compare(p, filter::Op::Eq, Value::String(want)) = f else {
                    return Err(bad("noTarget", "the filter matches no value"));
                };
                let mut item = Map::new();
                item.insert(p.attr.clone(), Value::String(want.clone()));
                match (sub, value) {
                    (Some(sub), v) => {
                        item.insert(sub.to_owned(), v);
                    }
                    (None, Value::Object(fields)) => item.extend(fields),
                    (None, _) => return Err(bad("invalidValue", "the value must be an object")),
                }
                items.push(Value::Object(item));
                return Ok(());
            }
            for i in matching {
                let Value::Object(item) = &mut items[i] else { continue };
                match (sub, &value) {
                    (Some(sub), v) => {
                        let k = get_ci_key(item, sub).unwrap_or_else(|| sub.to_owned());
                        item.insert(k, v.clone());
                    }
                    (None, Value::Object(fields)) => {
                        for (k, v) in fields {
                            let k = get_ci_key(item, k).unwrap_or_else(|| k.clone());
                            item.insert(k, v.clone());
                        }
                    }
                    (None, _) => return Err(bad("invalidValue", "the value must be an object")),
                }
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patched(resource: Value, ops: Value) -> Result<Value, ScimError> {
        let mut r = resource;
        apply(&mut r, &json!({"schemas": [PATCH_SCHEMA], "Operations": ops}))?;
        Ok(r)
    }

    #[test]
    fn okta_deactivates_without_a_path() {
        let r =
            patched(json!({"userName": "a", "active": true}), json!([{"op": "replace", "value": {"active": false}}]));
        assert_eq!(r.unwrap()["active"], json!(false));
    }

    #[test]
    fn entra_operations_as_entra_sends_them() {
        let user = json!({"userName": "a", "active": true, "name": {"givenName": "A", "familyName": "B"},
            "emails": [{"value": "a@old.example", "type": "work"}]});
        let r = patched(user.clone(), json!([
            {"op": "Replace", "path": "active", "value": "False"},
            {"op": "Replace", "path": "name.givenName", "value": "Ana"},
            {"op": "Replace", "path": "emails[type eq \"work\"].value", "value": "ana@new.example"},
            {"op": "Add", "path": "emails[type eq \"home\"].value", "value": "ana@home.example"},
            {"op": "Add", "path": "externalId", "value": "e-1"},
            {"op": "Add", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber", "value": "7"},
        ])).unwrap();
        assert_eq!(r["active"], json!("False"), "the resource parser reads it");
        assert_eq!(r["name"], json!({"givenName": "Ana", "familyName": "B"}));
        assert_eq!(
            r["emails"],
            json!([{"value": "ana@new.example", "type": "work"}, {"type": "home", "value": "ana@home.example"}])
        );
        assert_eq!(r["externalId"], json!("e-1"));

        let group = json!({"displayName": "g", "members": [{"value": "u1"}, {"value": "u2"}]});
        let r = patched(
            group.clone(),
            json!([{"op": "Add", "path": "members", "value": [{"value": "u3"}, {"value": "u1"}]}]),
        )
        .unwrap();
        assert_eq!(r["members"], json!([{"value": "u1"}, {"value": "u2"}, {"value": "u3"}]));
        let r =
            patched(group.clone(), json!([{"op": "Remove", "path": "members", "value": [{"value": "u1"}]}])).unwrap();
        assert_eq!(r["members"], json!([{"value": "u2"}]));
        let r = patched(group, json!([{"op": "remove", "path": "members[value eq \"u2\"]"}])).unwrap();
        assert_eq!(r["members"], json!([{"value": "u1"}]));
    }

    #[test]
    fn refusals_name_the_operation_and_scim_type() {
        let user = json!({"userName": "a"});
        let cases = [
            (json!([{"op": "remove"}]), "noTarget"),
            (json!([{"op": "move", "path": "active"}]), "invalidSyntax"),
            (json!([{"op": "replace", "path": "id", "value": "x"}]), "mutability"),
            (json!([{"op": "replace", "path": "emails[type eq ", "value": "x"}]), "invalidPath"),
            (json!([{"op": "replace", "path": "emails[value co \"x\"].value", "value": "y"}]), "noTarget"),
            (json!([{"op": "replace", "path": "userName"}]), "invalidValue"),
            (json!([{"op": "replace", "value": "x"}]), "invalidValue"),
            (json!([]), "invalidSyntax"),
        ];
        for (ops, want) in cases {
            match patched(user.clone(), ops.clone()) {
                Err(ScimError::BadRequest { scim_type: Some(t), detail }) => {
                    assert_eq!(t, want, "{ops}: {detail}");
                    assert!(detail.starts_with("Operations[0]") || want == "invalidSyntax", "{detail}");
                }
                other => panic!("{ops}: {other:?}"),
            }
        }
        let mut r = user;
        assert!(apply(
            &mut r,
            &json!({"schemas": ["urn:x"], "Operations": [{"op": "add", "path": "active", "value": true}]})
        )
        .is_err());
    }
}
