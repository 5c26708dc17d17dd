//! What agents and the console read of a proposal: the views (SPEC §4's
//! response shapes, with their OpenAPI schemas) and the queries behind them.

use super::*;

/// The proposal object of the API (SPEC §9), as the agent and the console
/// see it. Fields that do not apply yet are `null`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = Proposal)]
pub struct ProposalView {
    #[schema(pattern = "^prop_", examples("prop_01hx2v9k3m"))]
    pub id: String,
    pub status: ProposalStatus,
    #[schema(value_type = crate::domain::ProposalKind)]
    pub kind: String,
    #[schema(value_type = crate::domain::RunId)]
    pub run_id: String,
    #[schema(value_type = crate::domain::RequestHash)]
    pub request_hash: String,
    pub canonical_request: CanonicalRequest,
    pub payee: PayeeView,
    pub policy: Decision,
    pub approvals: Vec<ApprovalView>,
    /// Compact ES256 JWS (`typ` `countersign-approval+jwt`) bound to this
    /// proposal and request hash; only while `approved`, and only to the
    /// owning agent. Redeem it with `commit`.
    #[schema(required = true, pattern = "^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$")]
    pub approval_token: Option<String>,
    /// Equals the token's `exp`; `null` when there is no token.
    #[schema(required = true, format = DateTime)]
    pub approval_expires_at: Option<String>,
    /// The durable operation once `commit` created one, else `null`.
    #[schema(required = true)]
    pub operation: Option<OperationView>,
    /// Why the proposal is in its status, when that needs saying: `expired`
    /// (`no_decision`: nobody decided in time; never approved by default)
    /// and `approval_expired` (`approval_lapsed`); else `null`.
    #[schema(required = true)]
    pub status_reason: Option<StatusReason>,
    /// Where a human reviews this proposal in the console.
    #[schema(format = "uri")]
    pub approval_url: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// When the proposal expires if it is still awaiting approval (kept as a
    /// record afterwards).
    #[schema(format = DateTime)]
    pub expires_at: String,
    #[serde(skip)]
    pub version: i64,
}

impl ProposalView {
    /// Changes whenever the proposal changes; used as the `ETag`.
    pub fn etag(&self) -> String {
        format!("\"{}.{}\"", self.id, self.version)
    }
}

/// Why a proposal is in its status.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct StatusReason {
    #[schema(examples("no_decision"))]
    pub code: &'static str,
    pub message: String,
}

impl StatusReason {
    fn of(row: &ProposalRow) -> Option<StatusReason> {
        match row.status {
            ProposalStatus::Expired => Some(StatusReason {
                code: "no_decision",
                message: format!(
                    "Nobody approved or rejected this proposal before it expired at {}. It was not approved: \
                     Countersign never approves by default. Propose again if the payment is still needed.",
                    store::ts(row.expires_at)
                ),
            }),
            ProposalStatus::ApprovalExpired => Some(StatusReason {
                code: "approval_lapsed",
                message: "The approval token expired before it was committed; the approvers are asked to \
                          approve again."
                    .into(),
            }),
            _ => None,
        }
    }
}

/// The durable operation of a committed proposal (SPEC §6, §9). `unknown`
/// means the rail may have acted: reconciliation settles it; it is never
/// reported as `failed`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = Operation)]
pub struct OperationView {
    #[schema(pattern = "^op_")]
    pub id: String,
    pub status: store::operations::OpStatus,
    /// The rail idempotency key, derived from the proposal id and request hash.
    pub idempotency_key: String,
    #[schema(required = true, examples("tr_1Nv0"))]
    pub rail_reference: Option<String>,
    /// Set with `failed` (`code` one of `insufficient_funds`,
    /// `destination_closed`, `limit_exceeded`, `rail_rejected`), `too_late`
    /// (`too_late`) and `needs_review` (why: `no_rail_record`,
    /// `rail_record_mismatch`, `duplicate_rail_records`,
    /// `rail_record_missing`). Raw rail bodies are never passed through.
    #[schema(required = true)]
    pub error: Option<OperationError>,
    /// `escalate_to_ops` next to a reversal's `too_late`: a terminal result
    /// for humans, not an error to retry.
    #[schema(required = true, schema_with = action_required_schema)]
    pub action_required: Option<&'static str>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

/// `action_required`'s only value (or `null`).
pub(super) fn action_required_schema() -> utoipa::openapi::Object {
    words_or_null(&["escalate_to_ops"])
}

/// A string schema with a closed set of values, or `null`.
pub(super) fn words_or_null(words: &[&str]) -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .enum_values(Some(words.iter().map(|w| Value::from(*w)).chain([Value::Null])))
        .build()
}

/// A string schema with a closed set of values.
pub(super) fn words(words: &[&str]) -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new().schema_type(Type::String).enum_values(Some(words.iter().copied())).build()
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct OperationError {
    #[schema(examples("insufficient_funds", "destination_closed", "limit_exceeded", "rail_rejected"))]
    pub code: String,
    pub message: String,
}

impl From<store::operations::OperationRow> for OperationView {
    fn from(op: store::operations::OperationRow) -> Self {
        use store::operations::OpStatus;
        let shows_error = matches!(op.status, OpStatus::Failed | OpStatus::TooLate | OpStatus::NeedsReview);
        let error = match (shows_error, op.error_code, op.error_message) {
            (true, Some(code), message) => Some(OperationError { code, message: message.unwrap_or_default() }),
            _ => None,
        };
        OperationView {
            action_required: (op.status == OpStatus::TooLate).then_some("escalate_to_ops"),
            id: op.id,
            status: op.status,
            idempotency_key: op.idempotency_key,
            rail_reference: op.rail_reference,
            error,
            created_at: store::ts(op.created_at),
            updated_at: store::ts(op.updated_at),
        }
    }
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = Payee)]
pub struct PayeeView {
    #[schema(value_type = crate::domain::PayeeId)]
    pub id: String,
    #[schema(examples("Acme Supplies Ltd"))]
    pub legal_name: String,
    #[schema(examples("acct_…9f3a"))]
    pub masked_account: String,
    /// Trusted payees may be auto-approved below the threshold.
    pub trusted: bool,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = Approval)]
pub struct ApprovalView {
    /// A user id, or `policy:<rule id>` for an auto-approval.
    pub approver_id: String,
    #[schema(schema_with = decision_schema)]
    pub decision: String,
    /// The approver's reason (always present for a rejection).
    #[schema(required = true)]
    pub reason: Option<String>,
    /// Where the decision was made.
    #[schema(examples("console", "api", "slack", "policy"))]
    pub via: String,
    #[schema(format = DateTime)]
    pub at: String,
    /// For an approval a delegate gave while someone was away: the user it
    /// counts for (`approver_id` is the delegate). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_behalf_of: Option<String>,
}

/// `decision`'s values.
pub(super) fn decision_schema() -> utoipa::openapi::Object {
    words(&["approve", "reject"])
}

/// Builds the API view of proposal rows (approvals loaded in one query).
pub async fn views(state: &(impl Store + Config), rows: Vec<ProposalRow>) -> crate::store::Result<Vec<ProposalView>> {
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    let (approvals, mut operations) = tokio::try_join!(
        store::proposals::approvals_of(&state.db().read, &ids),
        store::operations::for_proposals(&state.db().read, &ids),
    )?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let operation = operations.iter().position(|o| o.proposal_id == row.id).map(|i| operations.swap_remove(i));
            let mine = approvals.iter().filter(|a| a.proposal_id == row.id).map(approval_view).collect();
            let mut view = to_view(state, row, mine);
            view.operation = operation.map(OperationView::from);
            view
        })
        .collect())
}

/// [`views`] of one proposal whose approvals of every round were read
/// already (the console's detail page lists them all): the current round's
/// are taken from them rather than read again.
pub async fn view_given_rounds(
    state: &(impl Store + Config),
    row: ProposalRow,
    every_round: &[store::proposals::ApprovalRow],
) -> crate::store::Result<ProposalView> {
    let operation = store::operations::for_proposals(&state.db().read, &[row.id.as_str()]).await?.pop();
    let current = every_round.iter().filter(|a| a.round == row.approval_round).map(approval_view).collect();
    let mut view = to_view(state, row, current);
    view.operation = operation.map(OperationView::from);
    Ok(view)
}

pub(super) fn approval_view(a: &store::proposals::ApprovalRow) -> ApprovalView {
    ApprovalView {
        approver_id: a.approver_id.clone(),
        decision: a.decision.clone(),
        reason: a.reason.clone(),
        via: a.via.clone(),
        at: store::ts(a.at),
        on_behalf_of: a.on_behalf_of.clone(),
    }
}

pub(super) fn to_view(state: &impl Config, row: ProposalRow, approvals: Vec<ApprovalView>) -> ProposalView {
    let payee = PayeeView {
        id: row.payee_id.clone(),
        legal_name: row.request.destination.legal_name.clone(),
        masked_account: mask_account(&row.payee_id),
        trusted: row.payee_trusted,
    };
    ProposalView {
        approval_url: state.settings().proposal_url(&row.id),
        status_reason: StatusReason::of(&row),
        id: row.id,
        status: row.status,
        kind: row.kind,
        run_id: row.run_id,
        request_hash: row.request_hash,
        canonical_request: row.request,
        payee,
        policy: row.policy,
        approvals,
        approval_token: None,
        approval_expires_at: None,
        operation: None,
        created_at: store::ts(row.created_at),
        updated_at: store::ts(row.updated_at),
        expires_at: store::ts(row.expires_at),
        version: row.version,
    }
}

/// One proposal of `tenant`, as the API shows it.
pub async fn load_view(
    state: &(impl Store + Config),
    tenant: &str,
    id: &str,
) -> crate::store::Result<Option<ProposalView>> {
    let Some(row) = store::proposals::get(&state.db().read, tenant, id).await? else {
        return Ok(None);
    };
    Ok(views(state, vec![row]).await?.pop())
}

/// One of the agent's own proposals; another agent's or tenant's is "not found".
/// Only here, for the owning agent, does the view carry the approval token.
/// Read in one statement: this is what every status poll costs.
pub async fn for_agent(
    state: &(impl Store + Config),
    agent: &AgentPrincipal,
    id: &str,
) -> Result<ProposalView, ActionError> {
    let bundle = store::proposals::bundle(&state.db().read, &agent.tenant_id, id).await?;
    agents_view(state, agent, bundle).ok_or(ActionError::NotFound)
}

/// [`for_agent`]'s view of `bundle`, read already: `None` when there is
/// none or it is another agent's (the tenant's is the read's own filter).
pub fn agents_view(
    state: &impl Config,
    agent: &AgentPrincipal,
    bundle: Option<store::proposals::ProposalBundle>,
) -> Option<ProposalView> {
    let bundle = bundle.filter(|b| b.row.agent_id == agent.agent_id && b.row.tenant_id == agent.tenant_id)?;
    let approvals = bundle.approvals.iter().map(approval_view).collect();
    let mut view = to_view(state, bundle.row, approvals);
    view.operation = bundle.operation.map(OperationView::from);
    if view.status == ProposalStatus::Approved {
        if let Some(token) = bundle.token.filter(|t| t.used_at.is_none()) {
            view.approval_token = Some(token.token);
            view.approval_expires_at = Some(store::ts(token.expires_at));
        }
    }
    Some(view)
}

impl PolledView {
    /// `view` as read by `for_agent`, which checked that `owner` owns it.
    fn render(owner: &AgentPrincipal, view: &ProposalView) -> PolledView {
        PolledView {
            tenant_id: owner.tenant_id.clone(),
            agent_id: owner.agent_id.clone(),
            etag: view.etag(),
            body: serde_json::to_vec(view).expect("views serialize").into(),
        }
    }
}

/// [`for_agent`], already serialized, from the read cache when it can be
/// trusted (`crate::platform::changes`). The status poll's path: most polls find the
/// proposal unchanged and never reach the database.
pub async fn poll(
    state: &(impl Store + Config + Notifier),
    agent: &AgentPrincipal,
    id: &str,
) -> Result<std::sync::Arc<PolledView>, ActionError> {
    let caches = state.changes().caches();
    let load = async {
        Ok::<_, ActionError>(std::sync::Arc::new(PolledView::render(agent, &for_agent(state, agent, id).await?)))
    };
    let polled = crate::platform::cache::read_through(caches.as_ref().map(|c| c.views), id, load).await?;
    // The same owner check as the database read's, for what came from the cache.
    if polled.tenant_id != agent.tenant_id || polled.agent_id != agent.agent_id {
        return Err(ActionError::NotFound);
    }
    Ok(polled)
}
