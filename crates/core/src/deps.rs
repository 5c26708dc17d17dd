//! The capabilities a use case can ask for, in one place for the code
//! outside the core. A use case's signature names exactly the ones it uses
//! — `state: &(impl Store + Clock + Notifier)` — so what it can touch is read
//! off its declaration, and anything that provides them can be handed in.
//! Each is defined beside what it gives (`store::Store` beside the
//! database…); `services::Services` provides them all, and so does the
//! server's state, which holds one.

pub use crate::approval::keys::Keys;
pub use crate::approval::receipts::Receipts;
pub use crate::changes::Notifier;
pub use crate::clock::Clock;
pub use crate::config::Config;
pub use crate::hooks::Hooks;
pub use crate::notify::Reaching;
pub use crate::outbound::Outbound;
pub use crate::password::Passwords;
pub use crate::proposals::intake::Batching;
pub use crate::rail::Payments;
pub use crate::shutdown::Lifecycle;
pub use crate::store::Store;
pub use crate::teams::{BotConnector, TeamsOutbound};
pub use crate::tlog::Log;
