//! A human's decision on an operation that needs review: the rail's
//! candidate records, and marking the operation succeeded or failed.

use super::*;

/// A human's decision on an operation that needs review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// The money moved: this rail record (one the rail holds for the
    /// operation, matching it) proves it.
    Succeeded { rail_reference: String },
    /// The money did not move, for this reason (the admin's words, shown as
    /// the operation's error message).
    Failed { reason: String },
}

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("no such operation")]
    NotFound,
    #[error("only admins can resolve operations")]
    NotAnAdmin,
    #[error("the operation is {0}, not needs_review")]
    InvalidState(&'static str),
    #[error("{1}")]
    BadInput(&'static str, &'static str),
    #[error("the rail could not be read")]
    RailUnavailable,
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// Who resolves: an authenticated console user.
#[derive(Debug, Clone)]
pub struct Resolver {
    pub user_id: String,
    pub tenant_id: String,
    pub roles: Vec<Role>,
}

/// A record of the rail's that might settle an operation, and whether it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The rail's id: a transfer's (`tr_…`), or for a reversal its own (`trr_…`).
    pub reference: String,
    pub amount_minor: u64,
    pub currency: String,
    /// Masked; for a reversal, the transfer it reverses.
    pub destination: String,
    pub status: &'static str,
    /// For a reversal: how much it reversed.
    pub amount_reversed: u64,
    /// `None`: it settles the operation; else why not, for a person.
    pub mismatch: Option<String>,
}

pub(super) fn status_name(s: RailStatus) -> &'static str {
    match s {
        RailStatus::Pending => "pending",
        RailStatus::Paid => "paid",
        RailStatus::Failed => "failed",
        RailStatus::Reversed => "reversed",
    }
}

/// The `needs_review` operation `op_id` of the resolver's tenant, checked
/// for role and state.
pub(super) async fn reviewable(state: &impl Store, who: &Resolver, op_id: &str) -> Result<OperationRow, ResolveError> {
    let op = store::operations::get(&state.db().read, op_id)
        .await?
        .filter(|o| o.tenant_id == who.tenant_id)
        .ok_or(ResolveError::NotFound)?;
    if !who.roles.contains(&Role::Admin) {
        return Err(ResolveError::NotAnAdmin);
    }
    if op.status != OpStatus::NeedsReview {
        return Err(ResolveError::InvalidState(op.status.as_str()));
    }
    Ok(op)
}

/// What the rail holds for a `needs_review` operation, read now: for a
/// transfer, every transfer under its idempotency key; for a reversal, the
/// transfer it reverses. Each says whether it settles the operation.
pub async fn rail_candidates(
    state: &(impl Store + Payments),
    who: &Resolver,
    op_id: &str,
) -> Result<(OperationRow, Vec<Candidate>), ResolveError> {
    let op = reviewable(state, who, op_id).await?;
    let candidates = candidates_of(state, &op).await?;
    Ok((op, candidates))
}

pub(super) async fn candidates_of(
    state: &(impl Store + Payments),
    op: &OperationRow,
) -> Result<Vec<Candidate>, ResolveError> {
    let row =
        store::proposals::get(&state.db().read, &op.tenant_id, &op.proposal_id).await?.ok_or(ResolveError::NotFound)?;
    let canonical = &row.request;
    let candidate = |t: &RailTransfer, mismatch: Option<String>| Candidate {
        reference: t.id.clone(),
        amount_minor: t.amount_minor,
        currency: t.currency.clone(),
        destination: crate::domain::mask_account(&t.destination),
        status: status_name(t.status),
        amount_reversed: t.amount_reversed,
        mismatch,
    };
    let amount = |minor: u64| {
        crate::domain::Currency::parse(&op.currency).map(|c| c.format_minor(minor)).unwrap_or(minor.to_string())
    };
    if op.kind == "reversal" {
        // The evidence is the reversal's own record: a reversal of the
        // transfer made under this operation's idempotency key, for its
        // amount — never the transfer's "amount reversed", which another
        // reversal could have filled.
        let Some(reversed) = op.reverses.as_deref() else { return Ok(Vec::new()) };
        let rail = rail_of(state, op).ok_or(ResolveError::RailUnavailable)?;
        let found = rail.reversals_of(reversed).await.map_err(|_| ResolveError::RailUnavailable)?;
        return Ok(found
            .iter()
            .map(|r| {
                let mut why = Vec::new();
                if r.key.as_deref() != Some(op.idempotency_key.as_str()) {
                    why.push(
                        "it is another reversal of that transfer (not made under this operation's key)".to_owned(),
                    );
                }
                if r.amount_minor != op.amount_minor {
                    why.push(format!("it reversed {}, not {}", amount(r.amount_minor), amount(op.amount_minor)));
                }
                Candidate {
                    reference: r.id.clone(),
                    amount_minor: r.amount_minor,
                    currency: op.currency.to_uppercase(),
                    destination: r.transfer.clone(),
                    status: "reversed",
                    amount_reversed: r.amount_minor,
                    mismatch: (!why.is_empty()).then(|| why.join("; ")),
                }
            })
            .collect());
    }
    let destination = canonical.destination.id.expose();
    let rail = rail_of(state, op).ok_or(ResolveError::RailUnavailable)?;
    let lookup = Lookup { key: &op.idempotency_key, destination, since: op.created_at - Duration::hours(1) };
    let found = rail.find(&lookup).await.map_err(|_| ResolveError::RailUnavailable)?;
    Ok(found
        .iter()
        .map(|t| {
            let mut why = Vec::new();
            if t.amount_minor != op.amount_minor {
                why.push(format!("its amount is {}, not {}", amount(t.amount_minor), amount(op.amount_minor)));
            }
            if !t.currency.eq_ignore_ascii_case(&op.currency) {
                why.push(format!("its currency is {}, not {}", t.currency, op.currency.to_uppercase()));
            }
            if t.destination != destination {
                why.push(format!(
                    "it went to {}, not {}",
                    crate::domain::mask_account(&t.destination),
                    canonical.destination.id.masked()
                ));
            }
            match t.status {
                RailStatus::Paid | RailStatus::Reversed => {}
                RailStatus::Pending => why.push("the rail has not settled it yet".into()),
                RailStatus::Failed => why.push("the rail reports it failed".into()),
            }
            candidate(t, (!why.is_empty()).then(|| why.join("; ")))
        })
        .collect())
}

/// Settles a `needs_review` operation by a human decision (audited).
///
/// Succeeded needs evidence: the reference must be one of the rail's own
/// records for this operation (read now), matching its amount, currency
/// and destination; a reference already settling another operation is
/// refused by the database. Failed needs the admin's reason, which becomes
/// the operation's error message (code `marked_failed`).
pub async fn resolve(
    state: &(impl Store + Notifier + Payments + crate::decision::approval::receipts::Receipts),
    who: &Resolver,
    op_id: &str,
    resolution: Resolution,
    now: DateTime<Utc>,
) -> Result<OperationRow, ResolveError> {
    let op = reviewable(state, who, op_id).await?;
    let actor = format!("user:{}", who.user_id);
    let moved = match &resolution {
        Resolution::Succeeded { rail_reference } => {
            let candidates = candidates_of(state, &op).await?;
            let Some(chosen) = candidates.iter().find(|c| &c.reference == rail_reference) else {
                return Err(ResolveError::BadInput(
                    "rail_reference",
                    "is not a record the rail holds for this operation",
                ));
            };
            if chosen.mismatch.is_some() {
                return Err(ResolveError::BadInput(
                    "rail_reference",
                    "does not settle this operation (amount, currency, destination or status differ)",
                ));
            }
            // A reversal's record is its own (`trr_…`), as the rail answers
            // a reversal made in one go.
            let update = Update {
                rail_reference: Some(rail_reference.as_str()),
                resolved_by: Some(&who.user_id),
                ..Default::default()
            };
            let evidence = json!({"resolution": "succeeded", "rail_record": chosen.reference,
                                  "rail_status": chosen.status, "amount_reversed": chosen.amount_reversed});
            let settled =
                settle(state, &op, OpStatus::Succeeded, &update, ProposalStatus::Succeeded, &actor, evidence, now)
                    .await;
            match settled {
                Err(e) if e.is_conflict() => {
                    return Err(ResolveError::BadInput("rail_reference", "already settles another operation"));
                }
                other => other?,
            }
        }
        Resolution::Failed { reason } => {
            let reason = reason.trim();
            if reason.is_empty() || reason.chars().count() > 500 || reason.chars().any(char::is_control) {
                return Err(ResolveError::BadInput("reason", "1-500 characters are required to mark it failed"));
            }
            let message = format!("Marked failed after review: {reason}");
            let update = Update {
                error: Some(("marked_failed", &message)),
                resolved_by: Some(&who.user_id),
                ..Default::default()
            };
            settle(
                state,
                &op,
                OpStatus::Failed,
                &update,
                ProposalStatus::Failed,
                &actor,
                json!({"resolution": "failed", "reason": reason}),
                now,
            )
            .await?
        }
    };
    if !moved {
        let latest = store::operations::get(&state.db().read, op_id).await?.ok_or(ResolveError::NotFound)?;
        return Err(ResolveError::InvalidState(latest.status.as_str()));
    }
    store::operations::get(&state.db().read, op_id).await?.ok_or(ResolveError::NotFound)
}
