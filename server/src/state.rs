//! What every request handler and background task of the server shares:
//! the core's [`Services`] (database, settings, clock, keys, ports… — the
//! capabilities the use cases name, `countersign_core::platform::deps`), and what only
//! the HTTP side needs (sign-in throttling, the trusted proxies, single
//! sign-on, the metrics recorder). `AppState` provides every capability
//! through its `Services`, and derefs to it for their fields.

use std::ops::Deref;
use std::sync::Arc;

use crate::config::Settings;
use crate::decision::approval::keys::KeyStore;
use crate::people::client_ip::TrustedProxies;
use crate::platform::services::Services;
use crate::platform::shutdown::Shutdown;
use crate::store::Db;

pub use crate::{platform::hooks::TestHooks, rail::InFlight};

pub struct AppState {
    pub core: Services,
    /// Failed sign-in counters.
    pub throttle: crate::people::throttle::Throttle,
    /// The proxies whose forwarding headers name the client.
    pub proxies: TrustedProxies,
    /// Request and use-case metrics (`GET /metrics`).
    pub metrics: crate::metrics::Metrics,
    /// Single sign-on: the providers' client and cached discovery.
    pub sso: crate::sso::Sso,
    /// Per-agent request limits on the agent API.
    pub agent_limits: crate::agent_limits::AgentLimits,
    /// Teams: the Bot Framework's keys, the bot's own token, the connector.
    pub bot: crate::bot_framework::BotFramework,
}

pub type Shared = Arc<AppState>;

impl AppState {
    pub fn new(
        db: Db,
        settings: Settings,
        keys: KeyStore,
        rails: crate::rail::Rails,
        shutdown: Shutdown,
    ) -> anyhow::Result<Shared> {
        // Validated with the settings; an invalid list never gets this far.
        let proxies = TrustedProxies::parse(&settings.console.trusted_proxies).unwrap_or_default();
        let agent_limits = crate::agent_limits::AgentLimits::new(&settings.agent_api);
        let bot = crate::bot_framework::BotFramework::new(&settings.teams)?;
        let ports: (crate::rail::Rails, Arc<dyn crate::notify::outbound::Poster>) =
            (rails, Arc::new(crate::poster::HttpPoster::new()?));
        Ok(Arc::new(AppState {
            core: Services::new(db, settings, keys, ports, shutdown)?,
            throttle: Default::default(),
            proxies,
            metrics: crate::metrics::Metrics::shared(),
            sso: Default::default(),
            agent_limits,
            bot,
        }))
    }

    /// The server's clock (the system clock, plus a test-only skew).
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.core.clock.now()
    }

    /// Test-only: kills the process at an armed failpoint (see `TestHooks`).
    pub fn failpoint(&self, step: &str) {
        self.core.hooks.failpoint(step);
    }
}

impl Deref for AppState {
    type Target = Services;
    fn deref(&self) -> &Services {
        &self.core
    }
}

impl crate::sso::SingleSignOn for AppState {
    fn sso(&self) -> &crate::sso::Sso {
        &self.sso
    }
}

impl crate::notify::teams::BotConnector for AppState {
    fn connector(&self) -> &dyn crate::notify::teams::Connector {
        &self.bot
    }
}

impl crate::platform::services::HasServices for AppState {
    fn services(&self) -> &Services {
        &self.core
    }
}
