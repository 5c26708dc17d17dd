//! The JSON Schemas of the MCP tools, taken from the API's own OpenAPI
//! document (`http::openapi`), so that a tool states exactly what the API
//! checks: `amount_minor` at least 1, the currency's pattern, the purpose
//! and reason codes as enums, the run id's length and alphabet, and the
//! proposal a tool answers with (`outputSchema`, which `structuredContent`
//! conforms to).
//!
//! The document is the HTTP layer's (`http::openapi`), which depends on this
//! module's callers, not the other way: whoever starts the tools hands it
//! over ([`install`], from `Countersign::new` and `in_process`).
//!
//! A schema of the document refers to others as `#/components/schemas/X`;
//! a tool's schema must stand alone, so each gets the components it reaches
//! under `$defs`, with its references rewritten to `#/$defs/X`.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use serde_json::{json, Map, Value};

type JsonObject = Map<String, Value>;

/// The tools' schemas, built once from the OpenAPI document.
pub struct Schemas {
    pub propose_payment: Arc<JsonObject>,
    pub request_reversal: Arc<JsonObject>,
    pub proposal_id: Arc<JsonObject>,
    pub wait_for_decision: Arc<JsonObject>,
    pub proposal: Arc<JsonObject>,
    pub search_invoices: Arc<JsonObject>,
    pub search_payees: Arc<JsonObject>,
    pub invoice_page: Arc<JsonObject>,
    pub payee_page: Arc<JsonObject>,
}

static SCHEMAS: OnceLock<Schemas> = OnceLock::new();

/// The tools' schemas, cut from `document` (the API's OpenAPI document) the
/// first time; later calls keep them (one process serves one API).
pub fn install(document: &Value) {
    SCHEMAS.get_or_init(|| cut(document));
}

/// The installed schemas (the tools are listed only after [`install`]).
pub fn get() -> &'static Schemas {
    SCHEMAS.get().expect("mcp::schemas::install runs before the tools are built")
}

/// The tools' schemas out of the OpenAPI document.
pub fn cut(document: &Value) -> Schemas {
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
        search_invoices: with_defs(json!({
            "type": "object",
            "properties": {
                "status": {"type": "string", "enum": ["open", "paid", "void", "any"],
                           "description": "open (default), paid, void or any."},
                "payee": {"type": "string", "pattern": "^(acct_|card_|ba_)[A-Za-z0-9]{1,64}$",
                          "description": "Only invoices owed to this payee id."},
                "number": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$",
                           "description": "Only this invoice number."},
                "vendor": {"type": "string", "minLength": 1, "maxLength": 100,
                           "description": "Vendor names containing this (case-insensitive)."},
                "due_before": {"type": "string", "format": "date", "description": "Due on or before this day."},
                "limit": page_limit(),
                "cursor": cursor(),
            },
            "additionalProperties": false,
        })),
        search_payees: with_defs(json!({
            "type": "object",
            "properties": {
                "q": {"type": "string", "minLength": 1, "maxLength": 100,
                      "description": "Legal names containing this (case-insensitive), or this payee id."},
                "limit": page_limit(),
                "cursor": cursor(),
            },
            "additionalProperties": false,
        })),
        invoice_page: with_defs(component("InvoicePage")),
        payee_page: with_defs(component("PayeePage")),
    }
}

fn page_limit() -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": 100, "description": "Page size (default 25)."})
}

fn cursor() -> Value {
    json!({"type": "string", "description": "The next_cursor of the previous page."})
}

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

pub const COMPONENT_REF: &str = "#/components/schemas/";

/// The components `schema` refers to directly.
pub fn referenced(schema: &Value) -> Vec<String> {
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
