//! What the core's own tests run on: [`Services`] on a fresh SQLite file,
//! with a rail and an outbound port that reach nothing (every call is an
//! unknown outcome, as a rail that never answers would give).

use std::path::Path;
use std::sync::Arc;

use crate::config::Settings;
use crate::notify::outbound::{Post, PostError, Poster};
use crate::platform::services::Services;
use crate::platform::shutdown::Trigger;
use crate::rail::{
    CreateOutcome, Lookup, Rail, RailKind, RailProfile, RailReversal, RailTransfer, Rails, ReversalOutcome,
    TransferOrder, UnknownCause,
};

/// A rail that never answers.
pub struct Unreachable;

#[async_trait::async_trait]
impl Rail for Unreachable {
    fn profile(&self) -> RailProfile {
        RailProfile { kind: RailKind::Simulator, resubmit_window: chrono::Duration::hours(23), reverses: true }
    }
    async fn create_transfer(&self, _: &TransferOrder<'_>) -> CreateOutcome {
        CreateOutcome::Unknown(UnknownCause::Connection)
    }
    async fn find(&self, _: &Lookup<'_>) -> Result<Vec<RailTransfer>, UnknownCause> {
        Err(UnknownCause::Connection)
    }
    async fn list_since(&self, _: chrono::DateTime<chrono::Utc>, _: usize) -> Result<Vec<RailTransfer>, UnknownCause> {
        Err(UnknownCause::Connection)
    }
    async fn get_transfer(&self, _: &str) -> Result<Option<RailTransfer>, UnknownCause> {
        Err(UnknownCause::Connection)
    }
    async fn reversals_of(&self, _: &str) -> Result<Vec<RailReversal>, UnknownCause> {
        Err(UnknownCause::Connection)
    }
    async fn reverse(&self, _: &str, _: &str, _: Option<u64>) -> ReversalOutcome {
        ReversalOutcome::Unknown(UnknownCause::Connection)
    }
}

#[async_trait::async_trait]
impl Poster for Unreachable {
    async fn post(&self, _: Post<'_>) -> Result<u16, PostError> {
        Err(PostError::Connect)
    }
}

/// Services with default settings on a fresh SQLite file in `dir`.
pub async fn services(dir: &Path) -> (Arc<Services>, Trigger) {
    services_with(Settings { data_dir: dir.to_owned(), ..Default::default() }).await
}

/// Services with `settings` (its `data_dir` holds the database and keys).
pub async fn services_with(settings: Settings) -> (Arc<Services>, Trigger) {
    services_on(settings, Arc::new(Unreachable)).await
}

/// [`services_with`], on `rail`.
pub async fn services_on(settings: Settings, rail: Arc<dyn Rail>) -> (Arc<Services>, Trigger) {
    let db = crate::store::Db::connect(&settings.backend().expect("backend")).await.expect("database");
    let keys = crate::decision::approval::keys::KeyStore::open_or_create(&settings.data_dir).expect("keys");
    let (trigger, shutdown) = crate::platform::shutdown::channel();
    let ports: (Rails, Arc<dyn Poster>) = (Rails::single(rail), Arc::new(Unreachable));
    (Arc::new(Services::new(db, settings, keys, ports, shutdown).expect("note key")), trigger)
}
