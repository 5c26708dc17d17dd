//! `utoipa::ToSchema` for the domain's values, for the server's OpenAPI
//! document (feature `openapi`, which only the server enables: the console's
//! wasm build never compiles this).
//!
//! The enums and structs derive their schemas where they are defined. The
//! text values (`SourceAccount`, `RunId`, …) are newtypes checked by code, so
//! their schemas are written here from the same pattern constants their
//! tests check against the parsers. The proposal request is read field by
//! field from JSON (`ProposalRequest::parse`), so its wire form is described
//! by two schema-only structs whose fields a test checks against the
//! parser's own field lists.

use std::borrow::Cow;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

use crate::canonical::{RequestHash, REQUEST_HASH_PATTERN};
use crate::fields::{
    InvoiceId, PayeeId, PurposeCode, ReasonCode, Reference, RunId, SourceAccount, TransferRef, INVOICE_ID_PATTERN,
    NO_CONTROL_OR_DECEPTIVE_PATTERN, PAYEE_ID_PATTERN, RUN_ID_PATTERN, SOURCE_ACCOUNT_PATTERN, TRANSFER_REF_PATTERN,
};
use crate::money::Currency;

fn text(description: &str, pattern: &str) -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String).description(Some(description)).pattern(Some(pattern))
}

/// `PartialSchema` + `ToSchema` (named after the type) from a schema builder.
macro_rules! text_schema {
    ($($name:ident => $schema:expr;)+) => {$(
        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                Schema::Object($schema.build()).into()
            }
        }
        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }
        }
    )+};
}

text_schema! {
    SourceAccount => text("One of the agent's configured source accounts.", SOURCE_ACCOUNT_PATTERN)
        .examples(["acct_0123456789abcdef"]);
    PayeeId => text("A payee in the tenant's registry: an account, card or bank account id.", PAYEE_ID_PATTERN)
        .examples(["acct_acme0000000001"]);
    RunId => text(
        "The agent run a proposal belongs to. Within one agent and run, an identical canonical request \
         collapses into the existing proposal.",
        RUN_ID_PATTERN,
    )
    .min_length(Some(1))
    .max_length(Some(128))
    .examples(["run-42"]);
    InvoiceId => text("An invoice number.", INVOICE_ID_PATTERN).examples(["1842"]);
    TransferRef => text(
        "The transfer a reversal names: the proposal (`prop_…`) or the rail transfer (`tr_…`) to reverse.",
        TRANSFER_REF_PATTERN,
    );
    Reference => text(
        "Free text shown to humans as untrusted data, never an instruction: at most 140 characters, no \
         control or bidirectional formatting characters.",
        NO_CONTROL_OR_DECEPTIVE_PATTERN,
    )
    .max_length(Some(Reference::MAX_CHARS))
    .examples(["Invoice 1842"]);
    RequestHash => text(
        "`sha256:` + lowercase hex SHA-256 of the RFC 8785 serialization of the canonical request.",
        REQUEST_HASH_PATTERN,
    );
    Currency => text("ISO 4217 code, upper case (its canonical form).", "^[A-Z]{3}$").examples(["USD"]);
}

/// A proposal's `kind` on the wire when it is a transfer (the default).
#[derive(serde::Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum TransferKind {
    Transfer,
}

/// A proposal's `kind` on the wire when it is a reversal.
#[derive(serde::Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum ReversalKind {
    Reversal,
}

/// A payment proposal (SPEC §3).
#[derive(serde::Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct TransferProposalRequest {
    run_id: RunId,
    #[schema(inline)]
    #[serde(default)]
    kind: Option<TransferKind>,
    /// Integer minor units (cents for USD, whole yen for JPY), written as a
    /// JSON integer literal: `"2500"` is refused, and so is `2500.0`
    /// (stricter than JSON Schema's `integer`, which admits it). At most the
    /// deployment's cap for the currency.
    #[schema(minimum = 1)]
    amount_minor: u64,
    /// ISO 4217 code in the deployment's allowlist (default USD, EUR, GBP,
    /// JPY, VND); any case, canonical form upper case.
    #[schema(value_type = String, pattern = "^[A-Za-z]{3}$", examples("USD"))]
    currency: Currency,
    source_account: SourceAccount,
    /// A payee in the tenant's registry (else 422 `unknown_destination`).
    destination: PayeeId,
    reference: Option<Reference>,
    purpose_code: PurposeCode,
    invoice_id: Option<InvoiceId>,
}

/// A request to reverse a succeeded transfer. Currency, accounts and
/// purpose come from the transfer it names.
#[derive(serde::Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ReversalProposalRequest {
    run_id: RunId,
    #[schema(inline)]
    kind: ReversalKind,
    transfer_id: TransferRef,
    reason_code: ReasonCode,
    /// A partial reversal: at most the transfer's amount; the whole
    /// transfer when absent.
    #[schema(minimum = 1)]
    amount_minor: Option<u64>,
    reference: Option<Reference>,
}

/// The body of `POST /api/v1/proposals`: a transfer or a reversal. Unknown
/// fields (including identity fields such as `tenant` or `user_id`),
/// missing required fields, wrong types and out-of-range values are all
/// refused with 422 `validation_failed`, naming every offending field.
pub struct ProposalRequestBody;

impl PartialSchema for ProposalRequestBody {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .description(Some(
                "A payment proposal (SPEC §3): a transfer (`kind` absent or `transfer`) or a reversal \
                 (`kind: reversal`). Unknown fields (including identity fields such as `tenant` or `user_id`), \
                 missing required fields, wrong types and out-of-range values are all refused with 422 \
                 `validation_failed`, naming every offending field.",
            ))
            .item(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(TransferProposalRequest::name())))
            .item(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(ReversalProposalRequest::name())))
            .into()
    }
}

impl ToSchema for ProposalRequestBody {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("ProposalRequest")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((TransferProposalRequest::name().into(), TransferProposalRequest::schema()));
        TransferProposalRequest::schemas(schemas);
        schemas.push((ReversalProposalRequest::name().into(), ReversalProposalRequest::schema()));
        ReversalProposalRequest::schemas(schemas);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{REVERSAL_FORBIDDEN, REVERSAL_ONLY, TRANSFER_FIELDS};
    use std::collections::BTreeSet;

    fn properties<T: PartialSchema>() -> (BTreeSet<String>, BTreeSet<String>, serde_json::Value) {
        let schema = serde_json::to_value(T::schema()).unwrap();
        let names = |key: &str| -> BTreeSet<String> {
            match &schema[key] {
                serde_json::Value::Object(m) => m.keys().cloned().collect(),
                serde_json::Value::Array(a) => a.iter().map(|v| v.as_str().unwrap().to_owned()).collect(),
                _ => BTreeSet::new(),
            }
        };
        (names("properties"), names("required"), schema)
    }

    #[test]
    fn the_wire_schemas_name_exactly_the_fields_the_parser_reads() {
        let (transfer, required, schema) = properties::<TransferProposalRequest>();
        let expected: BTreeSet<String> = TRANSFER_FIELDS.iter().map(|f| f.to_string()).collect();
        assert_eq!(transfer, expected);
        assert_eq!(
            required,
            ["run_id", "amount_minor", "currency", "source_account", "destination", "purpose_code"]
                .map(String::from)
                .into()
        );
        assert_eq!(schema["additionalProperties"], false);

        let (reversal, required, schema) = properties::<ReversalProposalRequest>();
        let expected: BTreeSet<String> = TRANSFER_FIELDS
            .iter()
            .chain(REVERSAL_ONLY)
            .filter(|f| !REVERSAL_FORBIDDEN.contains(f))
            .map(|f| f.to_string())
            .collect();
        assert_eq!(reversal, expected);
        assert_eq!(required, ["run_id", "kind", "transfer_id", "reason_code"].map(String::from).into());
        assert_eq!(schema["additionalProperties"], false);
    }
}
