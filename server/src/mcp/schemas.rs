//! The JSON Schemas of the MCP tools, taken from the API's own OpenAPI
//! document (`http::openapi`), so that a tool states exactly what the API
//! checks: `amount_minor` at least 1, the currency's pattern, the purpose
//! and reason codes as enums, the run id's length and alphabet, and the
//! proposal a tool answers with (`outputSchema`, which `structuredContent`
//! conforms to).
//!
//! A schema of the document refers to others as `#/components/schemas/X`;
//! a tool's schema must stand alone, so each gets the components it reaches
//! under `$defs`, with its references rewritten to `#/$defs/X`.

use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};

use serde_json::{json, Map, Value};

type JsonObject = Map<String, Value>;

/// The tools' schemas, built once from the OpenAPI document.
pub struct Schemas {
    pub propose_payment: Arc<JsonObject>,
    pub request_reversal: Arc<JsonObject>,
    pub proposal_id: Arc<JsonObject>,
    pub wait_for_decision: Arc<JsonObject>,
    pub proposal: Arc<JsonObject>,
}

pub static SCHEMAS: LazyLock<Schemas> = LazyLock::new(|| {
    let document = serde_json::to_value(crate::http::openapi::document("/")).expect("the OpenAPI document serializes");
    let components = document["components"]["schemas"].as_object().cloned().unwrap_or_default();
    let with_defs = |root: Value| Arc::new(standalone(root, &components));
    let component = |name: &str| components.get(name).cloned().unwrap_or_else(|| panic!("no schema {name}"));

    let mut propose = component("TransferProposalRequest");
    // The tool proposes transfers only (reversals have their own tool).
    remove_property(&mut propose, "kind");
    add_property(&mut propose, "idempotency_key", idempotency_key());

    let mut reversal = component("ReversalProposalRequest");
    remove_property(&mut reversal, "kind");
    add_property(&mut reversal, "idempotency_key", idempotency_key());

    let proposal_id = json!({
        "type": "string",
        "description": "The proposal's id (prop_…), as propose_payment returned it.",
        "pattern": "^prop_[A-Za-z0-9]{1,123}$",
    });
    Schemas {
        propose_payment: with_defs(propose),
        request_reversal: with_defs(reversal),
        proposal_id: with_defs(json!({
            "type": "object",
            "properties": { "id": proposal_id },
            "required": ["id"],
            "additionalProperties": false,
        })),
        wait_for_decision: with_defs(json!({
            "type": "object",
            "properties": {
                "id": proposal_id,
                "timeout_secs": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": super::MAX_WAIT_SECS,
                    "description": "How long to wait at most, in seconds (default 300).",
                },
            },
            "required": ["id"],
            "additionalProperties": false,
        })),
        proposal: with_defs(component("Proposal")),
    }
});

fn idempotency_key() -> Value {
    json!({
        "type": "string",
        "minLength": 1,
        "maxLength": 255,
        "pattern": "^[\\x21-\\x7E]+$",
        "description": "Optional Idempotency-Key: retrying with the same key replays the first answer \
            instead of proposing again.",
    })
}

fn remove_property(schema: &mut Value, name: &str) {
    if let Some(properties) = schema["properties"].as_object_mut() {
        properties.remove(name);
    }
    if let Some(required) = schema["required"].as_array_mut() {
        required.retain(|field| field != name);
    }
}

fn add_property(schema: &mut Value, name: &str, property: Value) {
    if let Some(properties) = schema["properties"].as_object_mut() {
        properties.insert(name.to_owned(), property);
    }
}

/// `root` with every component it reaches (transitively) under `$defs`,
/// and every reference pointing there.
fn standalone(mut root: Value, components: &JsonObject) -> JsonObject {
    let mut reached = BTreeSet::new();
    let mut todo = referenced(&root);
    while let Some(name) = todo.pop() {
        if reached.insert(name.clone()) {
            if let Some(schema) = components.get(&name) {
                todo.extend(referenced(schema));
            }
        }
    }
    rewrite_refs(&mut root);
    let Value::Object(mut object) = root else { panic!("a tool's schema is an object") };
    object.entry("type").or_insert_with(|| "object".into());
    if !reached.is_empty() {
        let defs = reached
            .into_iter()
            .filter_map(|name| {
                let mut schema = components.get(&name)?.clone();
                rewrite_refs(&mut schema);
                Some((name, schema))
            })
            .collect();
        object.insert("$defs".into(), Value::Object(defs));
    }
    object
}

const COMPONENT_REF: &str = "#/components/schemas/";

/// The components `schema` refers to directly.
fn referenced(schema: &Value) -> Vec<String> {
    let mut names = Vec::new();
    let mut stack = vec![schema];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(object) => {
                if let Some(name) =
                    object.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix(COMPONENT_REF))
                {
                    names.push(name.to_owned());
                }
                stack.extend(object.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    names
}

fn rewrite_refs(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            if let Some(Value::String(reference)) = object.get_mut("$ref") {
                if let Some(name) = reference.strip_prefix(COMPONENT_REF) {
                    *reference = format!("#/$defs/{name}");
                }
            }
            object.values_mut().for_each(rewrite_refs);
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs_resolve(schema: &JsonObject) {
        let defs = schema.get("$defs").and_then(Value::as_object).cloned().unwrap_or_default();
        let text = serde_json::to_string(schema).unwrap();
        assert!(!text.contains(COMPONENT_REF), "a reference into the OpenAPI document is left");
        assert_eq!(referenced(&Value::Object(schema.clone())), Vec::<String>::new(), "unrewritten references");
        let mut stack = vec![Value::Object(schema.clone())];
        while let Some(value) = stack.pop() {
            match value {
                Value::Object(object) => {
                    if let Some(r) = object.get("$ref").and_then(Value::as_str) {
                        let name = r.strip_prefix("#/$defs/").expect("only $defs references");
                        assert!(defs.contains_key(name), "{name} is referenced but not defined");
                    }
                    stack.extend(object.into_iter().map(|(_, v)| v));
                }
                Value::Array(items) => stack.extend(items),
                _ => {}
            }
        }
    }

    #[test]
    fn the_tools_schemas_are_the_apis_and_stand_alone() {
        let schemas = &*SCHEMAS;
        for schema in [
            &schemas.propose_payment,
            &schemas.request_reversal,
            &schemas.proposal_id,
            &schemas.wait_for_decision,
            &schemas.proposal,
        ] {
            assert_eq!(schema["type"], "object");
            refs_resolve(schema);
        }
        let propose = Value::Object((*schemas.propose_payment).clone());
        assert_eq!(propose["properties"]["amount_minor"]["minimum"], 1, "the API needs more than 0");
        assert_eq!(propose["$defs"]["PurposeCode"]["enum"], json!(["payroll", "refund", "vendor", "disbursement"]));
        assert_eq!(propose["$defs"]["RunId"]["maxLength"], 128);
        assert!(propose["properties"].get("kind").is_none());
        assert!(propose["required"].as_array().unwrap().iter().all(|f| f != "kind"));
        assert_eq!(propose["additionalProperties"], false);
        let reversal = Value::Object((*schemas.request_reversal).clone());
        assert_eq!(reversal["$defs"]["ReasonCode"]["enum"][0], "duplicate");
        assert!(reversal["required"].as_array().unwrap().iter().all(|f| f != "kind"));
        let proposal = Value::Object((*schemas.proposal).clone());
        assert!(proposal["properties"]["status"].is_object());
        assert!(proposal["$defs"]["Operation"].is_object());
    }
}
