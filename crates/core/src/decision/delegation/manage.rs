//! Giving, ending and listing delegations (docs/DELEGATION.md): the use
//! cases of `crate::decision::delegation`. A delegation that would let its delegate
//! count for an approval group they are not in is proposed as a four-eyes
//! registry change (`registry_changes::propose_delegation`).

use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use crate::config::{Config, Settings};
use crate::domain::Role;
use crate::people::actors::Admin;
use crate::store::{self, delegations::DelegationRow, Store};

/// The longest delegation: a long absence is a registry change (a new
/// approver or a limit), not a delegation.
pub const MAX_DAYS: i64 = 90;

/// What someone asks: let `delegate` (a username) approve for them from
/// `starts_at` until `ends_at`.
#[derive(Debug, Clone)]
pub struct Ask {
    pub delegate: String,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
}

/// A delegation as the account page and the API show it, with names.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct DelegationView {
    /// `dlg_…`
    pub id: String,
    /// Who lets someone approve for them (a username).
    pub delegator: String,
    /// Who may approve for them (a username).
    pub delegate: String,
    #[schema(format = DateTime)]
    pub starts_at: String,
    #[schema(format = DateTime)]
    pub ends_at: String,
    /// `pending` (a second admin must confirm it), `active`, `revoked`,
    /// `refused`.
    #[schema(examples("pending", "active", "revoked", "refused"))]
    pub status: String,
    /// Whether it lets the delegate approve for the delegator now.
    pub in_force: bool,
    /// The registry change that must confirm it, while `pending`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_id: Option<String>,
    /// The groups the delegate counts for through it, beyond their own.
    pub extra_groups: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum DelegationError {
    #[error("only approvers can delegate their approvals")]
    NotAnApprover,
    #[error("{field}: {why}")]
    Invalid { field: &'static str, why: String },
    #[error("no such delegation")]
    NotFound,
    #[error("only the two people it names, or an admin, can end a delegation")]
    NotYours,
    #[error("the delegation has already ended")]
    Ended,
    #[error(transparent)]
    Store(#[from] store::StoreError),
}

fn invalid(field: &'static str, why: impl Into<String>) -> DelegationError {
    DelegationError::Invalid { field, why: why.into() }
}

/// What became of an [`Ask`].
#[derive(Debug)]
pub enum Made {
    /// In force from its start.
    Active(DelegationView),
    /// Waits for a second admin: the delegate would count for groups they
    /// are not in. The lines say what the admin confirms.
    Pending { view: DelegationView, lines: Vec<String> },
}

/// Asks for a delegation from `me` (an approver) to another approver.
pub async fn create(
    state: &(impl Store + Config),
    me: &Admin,
    ask: Ask,
    now: DateTime<Utc>,
) -> Result<Made, DelegationError> {
    if !me.roles.contains(&Role::Approver) {
        return Err(DelegationError::NotAnApprover);
    }
    let starts_at = ask.starts_at.max(now);
    let ends_at = ask.ends_at;
    if ends_at <= starts_at {
        return Err(invalid("ends_at", "must be later than starts_at and than now"));
    }
    if ends_at - starts_at > Duration::days(MAX_DAYS) {
        return Err(invalid("ends_at", format!("a delegation lasts at most {MAX_DAYS} days")));
    }
    if starts_at - now > Duration::days(365) {
        return Err(invalid("starts_at", "must be within a year"));
    }
    let mut conn = state.db().reader().await?;
    let delegate = store::directory::user_by_username(&mut conn, &ask.delegate)
        .await?
        .filter(|u| u.tenant_id == me.tenant_id && u.active)
        .ok_or_else(|| invalid("delegate", format!("there is no active user {} here", ask.delegate)))?;
    if delegate.id == me.user_id {
        return Err(invalid("delegate", "delegate to someone else"));
    }
    if !delegate.roles.contains(&Role::Approver) {
        return Err(invalid("delegate", format!("{} is not an approver", delegate.username)));
    }
    let current = store::delegations::current(&mut *conn, &me.tenant_id, now).await?;
    drop(conn);
    if let Some(clash) =
        current.iter().find(|d| d.delegator_id == me.user_id && d.starts_at < ends_at && starts_at < d.ends_at)
    {
        return Err(invalid(
            "starts_at",
            format!(
                "you already delegate from {} until {} ({}): end it first",
                store::ts(clash.starts_at),
                store::ts(clash.ends_at),
                clash.id
            ),
        ));
    }
    let mut row = DelegationRow {
        id: store::new_id("dlg", now),
        tenant_id: me.tenant_id.clone(),
        delegator_id: me.user_id.clone(),
        delegate_id: delegate.id.clone(),
        starts_at,
        ends_at,
        status: store::delegations::ACTIVE.into(),
        change_id: None,
        created_at: now,
        ended_at: None,
    };
    let names = (me.username.as_str(), delegate.username.as_str());
    let span = (store::ts(starts_at), store::ts(ends_at));
    let lines =
        crate::decision::registry_changes::delegation_lines(state.settings(), &me.tenant_id, names, (&span.0, &span.1));
    let mut tx = state.db().begin().await?;
    if let Some(lines) = &lines {
        row.status = store::delegations::PENDING.into();
        let change =
            crate::decision::registry_changes::propose_delegation(&mut tx, me, &row, names, lines.clone(), now).await?;
        row.change_id = Some(change);
    }
    store::delegations::insert(&mut tx, &row).await?;
    let action = if lines.is_some() { "delegation.requested" } else { "delegation.created" };
    append(&mut tx, me, action, &row, names).await?;
    tx.commit().await?;
    let view = view_of(state.settings(), &row, names, now);
    Ok(match lines {
        None => Made::Active(view),
        Some(lines) => Made::Pending { view, lines },
    })
}

/// Ends a delegation now (or withdraws it while pending): either of the
/// two people it names, or an admin of the tenant. Applies at once.
pub async fn end(
    state: &(impl Store + Config),
    me: &Admin,
    id: &str,
    now: DateTime<Utc>,
) -> Result<DelegationView, DelegationError> {
    let row = store::delegations::get(&state.db().read, &me.tenant_id, id).await?.ok_or(DelegationError::NotFound)?;
    if row.delegator_id != me.user_id && row.delegate_id != me.user_id && !me.roles.contains(&Role::Admin) {
        return Err(DelegationError::NotYours);
    }
    let mut tx = state.db().begin().await?;
    let live = [store::delegations::PENDING, store::delegations::ACTIVE];
    if !store::delegations::set_status(&mut tx, id, &live, store::delegations::REVOKED, now).await? {
        return Err(DelegationError::Ended);
    }
    if let (Some(change), store::delegations::PENDING) = (&row.change_id, row.status.as_str()) {
        let note = "the delegation was withdrawn";
        store::registry_changes::decide(&mut tx, change, "rejected", &me.user_id, Some(note), now).await?;
    }
    let names = names_of(&mut tx, &row).await?;
    append(&mut tx, me, "delegation.ended", &row, (&names.0, &names.1)).await?;
    tx.commit().await?;
    let ended = DelegationRow { status: store::delegations::REVOKED.into(), ended_at: Some(now), ..row };
    Ok(view_of(state.settings(), &ended, (&names.0, &names.1), now))
}

/// The delegations of `user_id`'s tenant that name them and are not over,
/// pending or active; every one of the tenant's for an admin (`all`).
pub async fn listed(
    state: &(impl Store + Config),
    tenant: &str,
    user_id: &str,
    all: bool,
    now: DateTime<Utc>,
) -> Result<Vec<DelegationView>, DelegationError> {
    let mut conn = state.db().reader().await?;
    let rows = store::delegations::current(&mut *conn, tenant, now).await?;
    let users = store::directory::users_of(&mut conn, tenant).await?;
    let name = |id: &str| users.iter().find(|u| u.id == id).map_or_else(|| id.to_owned(), |u| u.username.clone());
    Ok(rows
        .iter()
        .filter(|d| all || d.delegator_id == user_id || d.delegate_id == user_id)
        .map(|d| view_of(state.settings(), d, (&name(&d.delegator_id), &name(&d.delegate_id)), now))
        .collect())
}

async fn names_of(conn: &mut store::Conn, row: &DelegationRow) -> store::Result<(String, String)> {
    let name = |u: Option<store::directory::User>, id: &str| u.map_or_else(|| id.to_owned(), |u| u.username);
    let delegator = store::directory::user_by_id(&mut *conn, &row.delegator_id).await?;
    let delegate = store::directory::user_by_id(&mut *conn, &row.delegate_id).await?;
    Ok((name(delegator, &row.delegator_id), name(delegate, &row.delegate_id)))
}

fn view_of(
    settings: &Settings,
    row: &DelegationRow,
    (delegator, delegate): (&str, &str),
    now: DateTime<Utc>,
) -> DelegationView {
    DelegationView {
        id: row.id.clone(),
        delegator: delegator.to_owned(),
        delegate: delegate.to_owned(),
        starts_at: store::ts(row.starts_at),
        ends_at: store::ts(row.ends_at),
        status: row.status.clone(),
        in_force: row.in_force(now),
        change_id: (row.status == store::delegations::PENDING).then(|| row.change_id.clone()).flatten(),
        extra_groups: crate::decision::approval_groups::beyond(settings, &row.tenant_id, delegator, delegate),
    }
}

async fn append(
    conn: &mut store::Conn,
    me: &Admin,
    action: &str,
    row: &DelegationRow,
    (delegator, delegate): (&str, &str),
) -> store::Result<()> {
    let entry = store::audit::AuditEntry {
        tenant_id: Some(row.tenant_id.clone()),
        actor: me.actor(),
        action: action.into(),
        proposal_id: None,
        request_hash: None,
        data: json!({
            "delegation_id": row.id, "delegator": delegator, "delegate": delegate,
            "starts_at": store::ts(row.starts_at), "ends_at": store::ts(row.ends_at), "change_id": row.change_id,
        }),
    };
    store::audit::append(conn, &entry).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_groups_the_delegate_lacks_need_a_second_admin() {
        let text = r#"
[tenants.acme.approval_groups]
treasury = ["ana", "ben"]
controllers = ["ana"]
directors = ["carl"]
"#;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, text).unwrap();
        let settings = Settings::load(Some(&path), &Default::default()).unwrap();
        assert_eq!(crate::decision::approval_groups::beyond(&settings, "acme", "ana", "ben"), ["controllers"]);
        assert!(
            crate::decision::approval_groups::beyond(&settings, "acme", "ben", "ana").is_empty(),
            "ana is in every group ben is in"
        );
        assert!(crate::decision::approval_groups::beyond(&settings, "other", "ana", "ben").is_empty());
        let lines =
            crate::decision::registry_changes::delegation_lines(&settings, "acme", ("ana", "ben"), ("a", "b")).unwrap();
        assert_eq!(lines[1], "ben's approvals for ana count for controllers (ben is not in it)");
        assert_eq!(
            crate::decision::registry_changes::delegation_lines(&settings, "acme", ("ben", "ana"), ("a", "b")),
            None
        );
    }
}
