//! Execution: reference checks and upserts in one write transaction.

use super::*;

// ---------------------------------------------------------------------------
// Execution: reference checks and upserts in one write transaction
// ---------------------------------------------------------------------------

/// What [`execute`] did: the counts, and the id of every user applied.
pub(super) struct Applied {
    pub(super) summary: ApplySummary,
    pub(super) user_ids: BTreeMap<String, String>,
}

/// Checks references, then applies the whole plan, in one write
/// transaction: on any error it is rolled back and nothing is applied.
pub(super) async fn execute(db: &Db, source: &Source<'_>, plan: &Plan) -> Result<Applied, ApplyError> {
    let hashes = hash_plain_passwords(db, plan).await?;
    let mut tx = db.begin().await?;
    let applied = execute_in(&mut tx, source, plan, &hashes).await?;
    tx.commit().await?;
    Ok(applied)
}

/// Checks references and applies the plan in the caller's transaction.
/// `hashes` holds the hash of every plain password (by username).
pub(super) async fn execute_in(
    conn: &mut Conn,
    source: &Source<'_>,
    plan: &Plan,
    hashes: &BTreeMap<String, String>,
) -> Result<Applied, ApplyError> {
    let problems = check_references(conn, source, plan).await?;
    if !problems.is_empty() {
        return Err(ApplyError::Invalid(problems));
    }
    apply_plan(conn, plan, source.actor, hashes).await
}

/// The hash to store for every plain password of the plan, computed before
/// any write transaction starts (argon2 is slow: the writer must not wait
/// on it). A plain password keeps the stored hash when it still matches (a
/// fresh salt would otherwise change it on every apply). Only a user of the
/// same tenant is ever looked at: a username taken in another tenant is
/// refused without touching that user's hash, with one generic message.
pub(super) async fn hash_plain_passwords(db: &Db, plan: &Plan) -> Result<BTreeMap<String, String>, ApplyError> {
    let mut hashes = BTreeMap::new();
    let mut problems = Vec::new();
    for u in &plan.users {
        let Credential::Plain { password, .. } = &u.credential else { continue };
        let existing = {
            let mut conn = db.reader().await?;
            directory::user_by_username(&mut conn, &u.username.value).await?
        };
        let stored = match existing {
            Some(other) if other.tenant_id != u.tenant.value => {
                problems.push(u.username.at.problem(unavailable_username(&u.username.value)));
                continue;
            }
            Some(same) => directory::password_hash(&db.read, &same.id).await?,
            None => None,
        };
        let password = password.clone();
        let hash = tokio::task::spawn_blocking(move || match stored {
            Some(hash) if password::verify_password(password.expose_secret(), &hash) => hash,
            _ => password::hash_password(password.expose_secret()),
        })
        .await
        .map_err(|_| ApplyError::Hashing)?;
        hashes.insert(u.username.value.clone(), hash);
    }
    if problems.is_empty() {
        Ok(hashes)
    } else {
        Err(ApplyError::Invalid(problems))
    }
}

/// The one answer for a username another tenant holds (usernames are global:
/// they are what people sign in with). It says no more than that.
pub fn unavailable_username(username: &str) -> String {
    format!("username `{username}` is not available")
}

/// Every tenant named must be in the plan or the database; every user an
/// agent acts for must be in the plan or the database, in the agent's tenant.
pub(super) async fn check_references(
    conn: &mut Conn,
    source: &Source<'_>,
    plan: &Plan,
) -> crate::store::Result<Vec<Problem>> {
    let planned: BTreeSet<&str> = plan.tenants.iter().map(|t| t.id.value.as_str()).collect();
    let tenant_refs = plan
        .users
        .iter()
        .map(|u| &u.tenant)
        .chain(plan.agents.iter().map(|a| &a.tenant))
        .chain(plan.payees.iter().map(|p| &p.tenant));
    let mut problems = Vec::new();
    for tenant in tenant_refs {
        if !planned.contains(tenant.value.as_str()) && !directory::tenant_exists(conn, &tenant.value).await? {
            problems.push(tenant.at.problem(format!(
                "tenant `{}` is not defined {}",
                tenant.value,
                source.defined_where()
            )));
        }
    }
    for agent in &plan.agents {
        let name = &agent.acts_for.value;
        let problem = match tenant_of_user(conn, plan, name).await? {
            None => format!("user `{name}` is not defined {}", source.defined_where()),
            Some(tenant) if tenant != agent.tenant.value => format!("user `{name}` belongs to another tenant"),
            Some(_) => continue,
        };
        problems.push(agent.acts_for.at.problem(problem));
    }
    Ok(problems)
}

/// The tenant of the user `username`, as the plan will leave it.
pub(super) async fn tenant_of_user(
    conn: &mut Conn,
    plan: &Plan,
    username: &str,
) -> crate::store::Result<Option<String>> {
    if let Some(user) = plan.users.iter().find(|u| u.username.value == username) {
        return Ok(Some(user.tenant.value.clone()));
    }
    Ok(directory::user_by_username(conn, username).await?.map(|u| u.tenant_id))
}

pub(super) async fn apply_plan(
    conn: &mut Conn,
    plan: &Plan,
    actor: &str,
    hashes: &BTreeMap<String, String>,
) -> Result<Applied, ApplyError> {
    let mut applied = Applied { summary: ApplySummary::default(), user_ids: BTreeMap::new() };
    for tenant in &plan.tenants {
        apply_tenant(conn, tenant, &mut applied.summary, actor).await?;
    }
    for user in &plan.users {
        let id = apply_user(conn, user, hashes, &mut applied.summary.users, actor).await?;
        applied.user_ids.insert(user.username.value.clone(), id);
    }
    for agent in &plan.agents {
        apply_agent(conn, agent, &applied.user_ids, &mut applied.summary.agents, actor).await?;
    }
    for payee in &plan.payees {
        apply_payee(conn, payee, &mut applied.summary.payees, actor).await?;
    }
    Ok(applied)
}

pub(super) async fn apply_tenant(
    conn: &mut Conn,
    t: &TenantPlan,
    summary: &mut ApplySummary,
    actor: &str,
) -> Result<(), ApplyError> {
    let id = &t.id.value;
    let outcome = directory::upsert_tenant(conn, id, &t.name).await?;
    record(conn, &mut summary.tenants, outcome, "tenant", id, json!({ "tenant_id": id, "name": t.name }), actor)
        .await?;
    let stored = directory::budgets_of(conn, id).await?;
    for (currency, limit) in &t.budgets {
        let outcome = match stored.get(currency) {
            None => Upsert::Created,
            Some(old) if old == limit => Upsert::Unchanged,
            Some(_) => Upsert::Updated,
        };
        if outcome != Upsert::Unchanged {
            directory::set_budget(conn, id, currency, *limit).await?;
        }
        let data = json!({ "currency": currency, "daily_limit_minor": limit });
        record(conn, &mut summary.budgets, outcome, "budget", id, data, actor).await?;
    }
    Ok(())
}

/// Upserts the user; returns its id.
pub(super) async fn apply_user(
    conn: &mut Conn,
    u: &UserPlan,
    hashes: &BTreeMap<String, String>,
    counts: &mut Counts,
    actor: &str,
) -> Result<String, ApplyError> {
    let spec = UserSpec {
        tenant_id: u.tenant.value.clone(),
        username: u.username.value.clone(),
        password_hash: password_hash(conn, u, hashes).await?,
        roles: u.roles.clone(),
        approval_limits_minor: u.limits.clone(),
        slack_user_id: u.slack_user_id.as_ref().map(|s| s.value.clone()),
        oidc: u.oidc.as_ref().map(|link| link.as_ref().map(|l| l.value.clone())),
    };
    let Some((id, outcome)) = directory::upsert_user(conn, &spec).await.map_err(|e| conflict(e, &u.entry))? else {
        return Err(ApplyError::Invalid(vec![u.username.at.problem(unavailable_username(&spec.username))]));
    };
    let data = json!({
        "user_id": id,
        "username": spec.username,
        "roles": spec.roles,
        "approval_limit_minor": spec.approval_limits_minor,
        "slack_user_id": spec.slack_user_id,
    });
    let mut data = data;
    if let Some(link) = &spec.oidc {
        // The subject as a hash, as the sign-in audit names it.
        data["oidc_issuer"] = json!(link.as_ref().map(|l| &l.issuer));
        data["oidc_subject_sha256"] = json!(link.as_ref().map(|l| crate::platform::digest::sha256_hex(&l.subject)));
    }
    record(conn, counts, outcome, "user", &spec.tenant_id, data, actor).await?;
    Ok(id)
}

/// The hash to store for `u`: given, computed before the transaction, or
/// (kept) the stored one of the same tenant's user.
pub(super) async fn password_hash(
    conn: &mut Conn,
    u: &UserPlan,
    hashes: &BTreeMap<String, String>,
) -> Result<String, ApplyError> {
    match &u.credential {
        Credential::Hash(hash) => Ok(hash.clone()),
        Credential::Plain { at, .. } => hashes
            .get(&u.username.value)
            .cloned()
            .ok_or_else(|| ApplyError::Invalid(vec![at.problem("a password must be hashed before it is applied")])),
        Credential::Keep { at } => {
            directory::password_hash_in_tenant(conn, &u.tenant.value, &u.username.value).await?.ok_or_else(|| {
                ApplyError::Invalid(vec![at.problem(format!("user `{}` is new: give a password", u.username.value))])
            })
        }
    }
}

pub(super) async fn apply_agent(
    conn: &mut Conn,
    a: &AgentPlan,
    planned_users: &BTreeMap<String, String>,
    counts: &mut Counts,
    actor: &str,
) -> Result<(), ApplyError> {
    let acts_for = match planned_users.get(&a.acts_for.value) {
        Some(id) => id.clone(),
        None => directory::user_by_username(conn, &a.acts_for.value)
            .await?
            .map(|u| u.id)
            .ok_or_else(|| ApplyError::Invalid(vec![a.acts_for.at.problem("this user no longer exists")]))?,
    };
    let spec = AgentSpec {
        tenant_id: a.tenant.value.clone(),
        id: a.id.value.clone(),
        key_sha256: a.key_sha256.value.clone(),
        acts_for,
        source_accounts: a.source_accounts.iter().map(|s| s.expose().to_owned()).collect(),
        purposes: a.purposes.iter().map(|p| p.as_str().to_owned()).collect(),
    };
    let outcome = directory::upsert_agent(conn, &spec).await.map_err(|e| conflict(e, &a.entry))?;
    // A new principal thaws an agent frozen because its last one left.
    crate::intake::freeze::thaw_if_reassigned(conn, &spec.tenant_id, &spec.id, actor, None).await?;
    let data = json!({
        "agent_id": spec.id,
        "acts_for": spec.acts_for,
        "acts_for_username": a.acts_for.value,
        "source_accounts": a.source_accounts.iter().map(SourceAccount::masked).collect::<Vec<_>>(),
        "purposes": spec.purposes,
    });
    record(conn, counts, outcome, "agent", &spec.tenant_id, data, actor).await
}

pub(super) async fn apply_payee(
    conn: &mut Conn,
    p: &PayeePlan,
    counts: &mut Counts,
    actor: &str,
) -> Result<(), ApplyError> {
    let payee = Payee {
        tenant_id: p.tenant.value.clone(),
        id: p.id.value.expose().to_owned(),
        legal_name: p.legal_name.clone(),
        trusted: p.trusted,
    };
    let outcome = directory::upsert_payee(conn, &payee).await.map_err(|e| conflict(e, &p.entry))?;
    let data = json!({ "payee_id": p.id.value.masked(), "legal_name": payee.legal_name, "trusted": payee.trusted });
    record(conn, counts, outcome, "payee", &payee.tenant_id, data, actor).await
}

/// A unique-constraint violation is a conflict with another row, reported
/// against the entry; anything else is a database failure.
pub(super) fn conflict(e: StoreError, entry: &Loc) -> ApplyError {
    match e {
        StoreError::Conflict(detail) => {
            ApplyError::Invalid(vec![entry.problem(format!("conflicts with an existing record ({detail})"))])
        }
        e => ApplyError::Database(e),
    }
}

/// Counts the outcome and, for a change, appends `registry.<kind>.<created|updated>`
/// to the audit trail. `data` never holds a secret; accounts are masked.
pub(super) async fn record(
    conn: &mut Conn,
    counts: &mut Counts,
    outcome: Upsert,
    kind: &str,
    tenant: &str,
    data: serde_json::Value,
    actor: &str,
) -> Result<(), ApplyError> {
    counts.add(outcome);
    let verb = match outcome {
        Upsert::Created => "created",
        Upsert::Updated => "updated",
        Upsert::Unchanged => return Ok(()),
    };
    let entry = AuditEntry {
        tenant_id: Some(tenant.to_owned()),
        actor: actor.to_owned(),
        action: format!("registry.{kind}.{verb}"),
        proposal_id: None,
        request_hash: None,
        data,
    };
    Ok(audit::append(conn, &entry).await?)
}
