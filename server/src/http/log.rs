//! The transparency log, public (docs/EVIDENCE.md): its note key, its
//! signed checkpoints, and inclusion and consistency proofs between any
//! sizes it reached. Everything here is hashes and signatures: no entry's
//! content is served, so anyone may read it (monitors, auditors, rails).

use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::{Deserialize, Serialize};

use super::error::ApiError;
use super::extract::ApiQuery;
use super::openapi::error_responses;
use crate::domain::FieldError;
use crate::evidence::tlog::merkle::Hash;
use crate::state::Shared;
use crate::store::tlog as stored;

/// The log's identity and key.
#[derive(Serialize, utoipa::ToSchema)]
pub struct LogInfo {
    /// The checkpoints' origin line, also the note key's name.
    #[schema(example = "pay.example.com/log")]
    origin: String,
    /// The note key in the C2SP signed-note verifier form
    /// `<name>+<hex key id>+<base64(0x01 ‖ Ed25519 public key)>`.
    verifier_key: String,
    /// The signature algorithm of the checkpoints.
    #[schema(example = "Ed25519")]
    algorithm: &'static str,
    /// The raw 32-byte Ed25519 public key, base64.
    public_key: String,
    /// Leaves logged so far (the newest checkpoint's size; 0 before the
    /// first).
    size: u64,
}

/// A proof: the hashes, base64, in the order RFC 9162 section 2.1 gives.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Proof {
    /// Inclusion: the leaf's index. Consistency: the smaller size.
    #[serde(skip_serializing_if = "Option::is_none")]
    leaf_index: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    first: Option<u64>,
    /// The tree size the proof is to.
    tree_size: u64,
    /// Base64 SHA-256 hashes.
    hashes: Vec<String>,
}

fn hashes(path: Vec<Hash>) -> Vec<String> {
    path.iter().map(|h| STANDARD.encode(h)).collect()
}

fn beyond(field: &'static str, size: u64) -> ApiError {
    ApiError::Validation(vec![FieldError::new(
        field,
        "invalid_value",
        format!("the log has {size} leaves (its newest checkpoint's size)"),
    )])
}

error_responses!(LogErrors: ValidationFailed, InternalError);
error_responses!(CheckpointErrors: NotFound, ValidationFailed, InternalError);

/// The transparency log's key
///
/// Its origin, its note key (verify checkpoints with it) and its size.
#[utoipa::path(
    get,
    path = "/api/v1/log",
    operation_id = "getLog",
    tag = "public",
    security(()),
    responses((status = 200, body = LogInfo), LogErrors),
)]
pub async fn info(State(state): State<Shared>) -> Result<Json<LogInfo>, ApiError> {
    let verifier = state.core.log.verifier();
    Ok(Json(LogInfo {
        origin: verifier.name.clone(),
        verifier_key: verifier.encoded(),
        algorithm: "Ed25519",
        public_key: STANDARD.encode(verifier.public_key()),
        size: stored::size(&state.db.read).await?,
    }))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CheckpointParams {
    /// A past size the log signed a checkpoint of (default: the newest).
    size: Option<u64>,
}

/// A signed checkpoint
///
/// The newest (or the one of `size`), as a C2SP `tlog-checkpoint` signed
/// note (`text/plain`): origin, size, base64 root hash, an empty line, the
/// signature line. A new one is signed within a second or two of new audit
/// entries.
#[utoipa::path(
    get,
    path = "/api/v1/log/checkpoint",
    operation_id = "getLogCheckpoint",
    tag = "public",
    security(()),
    params(CheckpointParams),
    responses((status = 200, content_type = "text/plain", body = String, description = "The signed note."), CheckpointErrors),
)]
pub async fn checkpoint(
    State(state): State<Shared>,
    ApiQuery(params): ApiQuery<CheckpointParams>,
) -> Result<Response, ApiError> {
    let found = match params.size {
        Some(size) => stored::checkpoint(&state.db.read, size).await?,
        None => stored::latest(&state.db.read).await?,
    };
    let Some(found) = found else { return Err(ApiError::NotFound) };
    let mut response = found.note.into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(response)
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InclusionParams {
    /// The leaf (leaf i is audit entry `seq` i + 1).
    leaf_index: u64,
    /// The tree size to prove it in: a size the log reached.
    tree_size: u64,
}

/// An inclusion proof
///
/// That leaf `leaf_index` is in the tree of `tree_size` leaves (RFC 9162
/// section 2.1.3).
#[utoipa::path(
    get,
    path = "/api/v1/log/proofs/inclusion",
    operation_id = "getLogInclusionProof",
    tag = "public",
    security(()),
    params(InclusionParams),
    responses((status = 200, body = Proof), LogErrors),
)]
pub async fn inclusion(
    State(state): State<Shared>,
    ApiQuery(params): ApiQuery<InclusionParams>,
) -> Result<Json<Proof>, ApiError> {
    let InclusionParams { leaf_index, tree_size } = params;
    if leaf_index >= tree_size {
        return Err(ApiError::Validation(vec![FieldError::new(
            "leaf_index",
            "invalid_value",
            "must be below tree_size",
        )]));
    }
    let Some(path) = stored::inclusion(&state.db.read, leaf_index, tree_size).await? else {
        return Err(beyond("tree_size", stored::size(&state.db.read).await?));
    };
    Ok(Json(Proof { leaf_index: Some(leaf_index), first: None, tree_size, hashes: hashes(path) }))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ConsistencyParams {
    /// The smaller size (a size a monitor saw).
    first: u64,
    /// The larger size: a size the log reached.
    second: u64,
}

/// A consistency proof
///
/// That the tree of `second` leaves extends the tree of `first` (RFC 9162
/// section 2.1.4): nothing logged was changed or dropped.
#[utoipa::path(
    get,
    path = "/api/v1/log/proofs/consistency",
    operation_id = "getLogConsistencyProof",
    tag = "public",
    security(()),
    params(ConsistencyParams),
    responses((status = 200, body = Proof), LogErrors),
)]
pub async fn consistency(
    State(state): State<Shared>,
    ApiQuery(params): ApiQuery<ConsistencyParams>,
) -> Result<Json<Proof>, ApiError> {
    let ConsistencyParams { first, second } = params;
    if first > second {
        return Err(ApiError::Validation(vec![FieldError::new("first", "invalid_value", "must not exceed second")]));
    }
    let Some(path) = stored::consistency(&state.db.read, first, second).await? else {
        return Err(beyond("second", stored::size(&state.db.read).await?));
    };
    Ok(Json(Proof { leaf_index: None, first: Some(first), tree_size: second, hashes: hashes(path) }))
}
