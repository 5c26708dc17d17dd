//! Observe mode at intake: a candidate policy decides beside the enforced
//! one, and where it would have decided otherwise the difference is
//! recorded and counted, never enforced (docs/POLICY.md, "Observe mode").

use super::*;

/// Observe mode: when the candidate would have decided `assessed`
/// differently, the difference is recorded (never enforced) and counted.
/// A failure to record is logged: it never touches the proposal.
pub(crate) async fn observe(state: &impl Store, assessed: &ObservedDecision) {
    let Some((digest, observed)) = &assessed.observed else { return };
    let Some(change) = policy::backtest::change_of(&assessed.decision, observed) else { return };
    crate::platform::metrics::policy_difference_observed(&change);
    let row = store::policies::ObservationRow {
        id: store::new_id("obs", assessed.at),
        tenant_id: assessed.tenant_id.clone(),
        proposal_id: if assessed.decision.outcome == Outcome::Denied { String::new() } else { assessed.id.clone() },
        request_hash: assessed.hash.clone(),
        amount_minor: assessed.amount_minor,
        currency: assessed.currency.clone(),
        change,
        enforced: serde_json::to_string(&assessed.decision).expect("decisions serialize"),
        observed: serde_json::to_string(observed).expect("decisions serialize"),
        observed_digest: digest.clone(),
        at: assessed.at,
    };
    let written = async {
        let mut conn = state.db().write.acquire().await?;
        store::policies::insert_observation(&mut conn, &row).await
    };
    if let Err(error) = written.await {
        tracing::warn!(%error, tenant = %row.tenant_id, "an observed policy difference could not be recorded");
    }
}

/// What observe mode needs of an assessment.
pub(crate) struct ObservedDecision {
    pub(super) tenant_id: String,
    pub(super) id: String,
    pub(super) hash: String,
    pub(super) amount_minor: u64,
    pub(super) currency: String,
    pub(super) at: DateTime<Utc>,
    pub(super) decision: Decision,
    pub(super) observed: Option<(String, Decision)>,
}
