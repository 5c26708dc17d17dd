//! A policy change under the four-eyes rule (docs/POLICY.md, "Changing a
//! policy"): one admin proposes a Cedar policy for the tenant, enforced or
//! observed; it is validated against the schema (refused whole, with
//! Cedar's error located, when it does not validate) and backtested over
//! the last [`BACKTEST_DAYS`] days; the result is stored with the change
//! and shown to the second admin, whose confirmation runs it again and
//! answers with it. What it says it replaces is checked again at
//! confirmation: a change proposed against a policy that has changed since
//! is superseded.

use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use super::{grants, propose_with, require_admin, Admin, ChangeError, Stored, Submitted};
use crate::config::Config;
use crate::decision::policy::backtest::Report;
use crate::decision::policy::{Engine, MODE_ENFORCE, MODE_OBSERVE};
use crate::store::{self, Conn, Store};

/// How far back a proposed policy is backtested.
pub const BACKTEST_DAYS: i64 = 90;
/// The longest policy text a change may carry.
pub const MAX_TEXT: usize = 64 * 1024;

/// The candidate a change names (`None`: the config's own).
fn candidate(text: &str) -> Result<Option<Engine>, ChangeError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    if text.len() > MAX_TEXT {
        return Err(ChangeError::Invalid(format!("policy: at most {} KiB", MAX_TEXT / 1024)));
    }
    Engine::from_text("policy", text).map(Some).map_err(|e| ChangeError::Invalid(e.to_string()))
}

/// Validates, backtests and stores a pending policy change.
pub(super) async fn submit(
    state: &(impl Store + Config),
    admin: &Admin,
    mode: String,
    text: String,
    now: DateTime<Utc>,
) -> Result<Submitted, ChangeError> {
    require_admin(admin)?;
    if mode != MODE_ENFORCE && mode != MODE_OBSERVE {
        return Err(ChangeError::Invalid(format!("mode: `{mode}` is not {MODE_ENFORCE} or {MODE_OBSERVE}")));
    }
    let engine = candidate(&text)?;
    let text = if engine.is_some() { text } else { String::new() };
    let digest = engine.as_ref().map(Engine::digest).unwrap_or_default();
    let stored = Stored::Policy { mode, text, digest };
    let lines = {
        let mut conn = state.db().reader().await?;
        grants(&mut conn, state.settings(), &admin.tenant_id, &stored, now).await?.unwrap_or_default()
    };
    let report = match &engine {
        Some(engine) => Some(run_backtest(state, &admin.tenant_id, engine, now).await?),
        None => None,
    };
    let shown = report.as_ref().map(|r| serde_json::to_value(r).expect("reports serialize"));
    let id = propose_with(state, admin, &stored, lines, shown, now).await?;
    let message = match &report {
        Some(r) => format!(
            "Another admin must confirm the policy change; its backtest over {BACKTEST_DAYS} days: {} of {} \
             proposals decided differently.",
            r.changed, r.replayed
        ),
        None => "Another admin must confirm the policy change.".into(),
    };
    Ok(Submitted::Pending { id, message, agent_key: None })
}

async fn run_backtest(
    state: &(impl Store + Config),
    tenant: &str,
    engine: &Engine,
    now: DateTime<Utc>,
) -> Result<Report, ChangeError> {
    Ok(crate::decision::policy::backtest::recorded::run(state, tenant, engine, now - Duration::days(BACKTEST_DAYS))
        .await?)
}

/// What a policy change would do, in one line: what it sets, in place of
/// what (so it is stale once the tenant's policy changed otherwise).
pub(super) fn lines(settings: &crate::config::Settings, tenant: &str, stored: &Stored) -> Vec<String> {
    let Stored::Policy { mode, text, digest } = stored else { return Vec::new() };
    let now = settings.policies.for_tenant(tenant);
    let new = if text.is_empty() {
        "the config's own policy".to_owned()
    } else {
        format!("Cedar policy {}", crate::decision::policy::short(digest))
    };
    if mode == MODE_ENFORCE {
        vec![format!("Enforce {new} for tenant {tenant}, in place of {}", now.enforced.label())]
    } else {
        let current = now.observed.as_ref().map_or("nothing".to_owned(), Engine::label);
        vec![format!("Observe {new} beside the enforced policy of tenant {tenant}, in place of {current}")]
    }
}

/// Stores the confirmed policy, in the confirming transaction.
pub(super) async fn apply(
    conn: &mut Conn,
    admin: &Admin,
    change_id: &str,
    proposed_by: &str,
    stored: &Stored,
    now: DateTime<Utc>,
) -> Result<(), ChangeError> {
    let Stored::Policy { mode, text, digest } = stored else { return Ok(()) };
    let row = store::policies::PolicyRow {
        id: store::new_id("pol", now),
        tenant_id: admin.tenant_id.clone(),
        mode: mode.clone(),
        text: text.clone(),
        digest: digest.clone(),
        change_id: change_id.to_owned(),
        proposed_by: proposed_by.to_owned(),
        confirmed_by: admin.user_id.clone(),
        at: now,
    };
    store::policies::insert_policy(conn, &row).await?;
    super::append(
        conn,
        admin,
        "policy.changed",
        json!({"change_id": change_id, "mode": mode, "digest": digest, "proposed_by": proposed_by}),
    )
    .await?;
    Ok(())
}

/// After a policy change's transaction: this instance takes it at once
/// (the others within `policy::REFRESH_EVERY`), and the confirming admin
/// gets its backtest, run again now.
pub(super) async fn confirmed(
    state: &(impl Store + Config + crate::platform::clock::Clock),
    tenant: &str,
    stored: &Stored,
) -> Result<Option<Report>, ChangeError> {
    let Stored::Policy { text, .. } = stored else { return Ok(None) };
    let engine = candidate(text)?;
    // The backtest compares with the policy enforced before this change.
    let report = match &engine {
        Some(engine) => Some(run_backtest(state, tenant, engine, state.now()).await?),
        None => None,
    };
    store::policies::refresh(&state.db().read, &state.settings().policies).await?;
    Ok(report)
}

/// A pending policy change's backtest as stored when it was proposed.
pub fn stored_backtest(summary: &str) -> Option<Report> {
    let value: serde_json::Value = serde_json::from_str(summary).ok()?;
    serde_json::from_value(value.get("backtest")?.clone()).ok()
}

/// The backtest stored with `tenant`'s change `id`, if it has one.
pub async fn backtest_of(state: &impl Store, tenant: &str, id: &str) -> Result<Option<Report>, ChangeError> {
    let row = store::registry_changes::get(&state.db().read, tenant, id).await?;
    Ok(row.and_then(|r| stored_backtest(&r.summary)))
}
