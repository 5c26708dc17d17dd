//! The port: what the UI needs from the server. The server implements it
//! and provides it (and the signed-in `Viewer`) through Leptos context, so
//! the UI and the APIs share one set of domain operations.

#[cfg(feature = "ssr")]
pub use ssr::*;

#[cfg(feature = "ssr")]
mod ssr {
    use crate::views::{
        AdminData, BatchList, BatchReview, BulkPage, ConsoleError, HumanLoopPage, OperationsPage, PolicyPage,
        ProposalDetail, QueuePage, ResolvePage, Viewer,
    };
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Arc;

    pub type PortFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, ConsoleError>> + Send + 'a>>;

    pub trait ConsolePort: Send + Sync + 'static {
        /// The queue for a query string (`status=all&currency=USD&min=1000`…),
        /// parsed by the server exactly as `GET /api/v1/queue` parses it.
        fn queue<'a>(&'a self, viewer: &'a Viewer, query: String) -> PortFuture<'a, QueuePage>;
        fn proposal<'a>(&'a self, viewer: &'a Viewer, id: String) -> PortFuture<'a, ProposalDetail>;
        /// The bulk page for a query string: `id=…` (repeated) and, after a
        /// decision, `outcome=<id>:<code>` (repeated).
        fn bulk<'a>(&'a self, viewer: &'a Viewer, query: String) -> PortFuture<'a, BulkPage>;
        fn admin<'a>(&'a self, viewer: &'a Viewer) -> PortFuture<'a, AdminData>;
        /// The policy page (admins): what decides, observe mode's differences,
        /// the last backtest asked for, the policy changes waiting.
        fn policy<'a>(&'a self, viewer: &'a Viewer) -> PortFuture<'a, PolicyPage>;
        /// The human loop page (admins): decisions, expiries, delays.
        fn human_loop<'a>(&'a self, viewer: &'a Viewer) -> PortFuture<'a, HumanLoopPage>;
        /// The tenant's operations needing review, and those being reconciled.
        fn operations<'a>(&'a self, viewer: &'a Viewer) -> PortFuture<'a, OperationsPage>;
        /// An operation needing review and the rail's records for it (admins).
        fn resolution<'a>(&'a self, viewer: &'a Viewer, id: String) -> PortFuture<'a, ResolvePage>;
        /// The batches waiting for a decision, and the recent others.
        fn batches<'a>(&'a self, viewer: &'a Viewer) -> PortFuture<'a, BatchList>;
        /// A batch's review page.
        fn batch<'a>(&'a self, viewer: &'a Viewer, id: String) -> PortFuture<'a, BatchReview>;
        /// How many pending proposals the viewer may approve now (capped; the
        /// page titles show it).
        fn waiting_count<'a>(&'a self, viewer: &'a Viewer) -> PortFuture<'a, u32>;
        /// Resolves when more than `seen` changes have been published (at once
        /// if that happened already), or after `max_secs`; with the count then.
        fn wait_for_change(&self, max_secs: u64, seen: u64) -> Pin<Box<dyn Future<Output = u64> + Send + '_>>;
    }

    /// The port as stored in context.
    #[derive(Clone)]
    pub struct Port(pub Arc<dyn ConsolePort>);
}
