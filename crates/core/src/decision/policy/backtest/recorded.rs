//! `policy::backtest` over a tenant's recorded proposals (docs/POLICY.md,
//! "Backtest"): reads the history and the agents' scopes, replays them
//! under the enforced policy and the candidate off the async workers, and
//! reports. The CLI (`countersign policy backtest`), the console and a
//! policy change's confirmation call this.

use chrono::{DateTime, Utc};
use std::collections::HashMap;

use crate::config::Config;
use crate::decision::policy::backtest::{replay, report, Report};
use crate::decision::policy::{AgentScope, Engine};
use crate::store::{self, Store};

/// Backtests `candidate` over `tenant`'s proposals since `since`, against
/// the tenant's enforced policy.
pub async fn run(
    state: &(impl Store + Config),
    tenant: &str,
    candidate: &Engine,
    since: DateTime<Utc>,
) -> Result<Report, store::StoreError> {
    let started = std::time::Instant::now();
    let rows = store::policies::history(&state.db().read, tenant, since).await?;
    let agents: HashMap<String, AgentScope> = store::directory::agents_of(&state.db().read, tenant)
        .await?
        .into_iter()
        .map(|a| (a.id.clone(), crate::people::actors::AgentPrincipal::from(a).scope))
        .collect();
    let enforced = state.settings().policies.for_tenant(tenant).enforced.clone();
    // Off the async workers: the replay keeps every core busy for a while.
    let (settings, owned_tenant, engines) =
        (state.settings().clone(), tenant.to_owned(), (enforced.clone(), candidate.clone()));
    let (rows, result) = tokio::task::spawn_blocking(move || {
        let after = |currency, amount, d| settings.with_group_rule(&owned_tenant, currency, amount, d);
        let result = replay((&settings.policy, &after), &rows, &agents, &engines.0, &engines.1);
        (rows, result)
    })
    .await
    .map_err(|_| store::StoreError::corrupt("backtest", "the replay stopped"))?;
    let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(report(tenant, since, (&enforced, candidate), &rows, result, elapsed))
}
