//! What every request handler and background task shares.

use std::sync::Arc;

use crate::approval::keys::KeyStore;
use crate::changes::Changes;
use crate::config::Settings;
use crate::domain::CurrencyRules;
use crate::shutdown::Shutdown;
use crate::store::Db;

pub struct AppState {
    pub db: Db,
    pub settings: Settings,
    pub currencies: CurrencyRules,
    pub changes: Changes,
    /// Approval-token signing keys.
    pub keys: KeyStore,
    /// Failed sign-in counters.
    pub throttle: crate::throttle::Throttle,
    /// Fires when the server starts shutting down (long-polls return early).
    pub shutdown: Shutdown,
}

pub type Shared = Arc<AppState>;

impl AppState {
    pub fn new(db: Db, settings: Settings, keys: KeyStore, shutdown: Shutdown) -> Shared {
        let currencies = settings.currency_rules();
        Arc::new(AppState {
            db,
            settings,
            currencies,
            changes: Changes::default(),
            keys,
            throttle: Default::default(),
            shutdown,
        })
    }
}
