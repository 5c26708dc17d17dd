//! The money rails: the core's contract (`countersign_core::rail`,
//! re-exported here), the HTTP connectors that implement it, the bundled
//! simulator, and the registry built from the settings.
//!
//! - [`simulator`]: the bundled simulator's Stripe-compatible API (SPEC §12).
//! - [`stripe`]: Stripe's own API (Transfers and Payouts).
//! - [`http`]: what the HTTP connectors share (client, error envelope).
//! - the bank-file rail (ISO 20022) needs no HTTP: it lives in the core
//!   (`countersign_core::rail::iso20022`), beside the ledger it keeps.
//! - [`sim`]: the bundled rail simulator (crate `countersign-rail-sim`, run
//!   by `countersign rail-sim` or in-process by `serve`).

pub use countersign_core::rail::*;
pub mod http;
pub mod simulator;
pub mod stripe;
pub use countersign_rail_sim as sim;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::rails::NamedRail;
use crate::config::Settings;
use crate::store::Db;

/// The process's rails: the default one at `default_url` (the bundled
/// simulator's, or `rail.url`), and every `[rails.NAME]`, with each
/// tenant's choice.
pub fn build(settings: &Settings, default_url: &str, db: &Db) -> anyhow::Result<Rails> {
    let window = chrono::Duration::seconds(settings.rail.resubmit_window_secs as i64);
    let r = &settings.rail;
    let config = http_config(default_url, r.api_key.clone(), r.connect_timeout_ms, r.total_timeout_ms);
    let default = simulator::SimulatorRail::with_window(config, window)?;
    let mut named: BTreeMap<String, Arc<dyn Rail>> = BTreeMap::new();
    let clock =
        crate::platform::clock::SystemClock::skewed(crate::platform::hooks::TestHooks::from_env().clock_skew_secs);
    for (name, rail) in &settings.rails {
        let built: Arc<dyn Rail> = match rail {
            NamedRail::Simulator(r) => Arc::new(simulator::SimulatorRail::with_window(
                http_config(&r.url, r.api_key.clone(), r.connect_timeout_ms, r.total_timeout_ms),
                chrono::Duration::seconds(r.resubmit_window_secs as i64),
            )?),
            NamedRail::Stripe(r) => Arc::new(stripe::StripeRail::new(stripe::StripeConfig {
                http: http_config(&r.url, r.api_key.clone(), r.connect_timeout_ms, r.total_timeout_ms),
                api_version: r.api_version.clone(),
                account: r.account.clone(),
                resubmit_window: chrono::Duration::seconds(r.resubmit_window_secs as i64),
            })?),
            NamedRail::Iso20022(r) => {
                let tenant = settings.tenants_on(name).first().map(|t| (*t).to_owned());
                Arc::new(
                    iso20022::BankFiles::new(name, tenant, r.clone(), db.clone(), clock)
                        .map_err(|e| anyhow::anyhow!("rails.{name}.beneficiaries: {e}"))?,
                )
            }
        };
        named.insert(name.clone(), built);
    }
    let tenants = settings.tenants.iter().filter_map(|(id, t)| Some((id.clone(), t.rail.clone()?))).collect();
    Ok(Rails::new(Arc::new(default), named, tenants))
}

fn http_config(url: &str, api_key: Option<secrecy::SecretString>, connect_ms: u64, total_ms: u64) -> RailConfig {
    RailConfig {
        base_url: url.to_owned(),
        api_key,
        connect_timeout: std::time::Duration::from_millis(connect_ms),
        total_timeout: std::time::Duration::from_millis(total_ms),
    }
}
