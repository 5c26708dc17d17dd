//! The capabilities a use case can ask for, in one place for the code
//! outside the core. A use case's signature names exactly the ones it uses
//! — `state: &(impl Store + Clock + Notifier)` — so what it can touch is read
//! off its declaration, and anything that provides them can be handed in.
//! Each is defined beside what it gives (`store::Store` beside the
//! database…); `services::Services` provides them all, and so does the
//! server's state, which holds one.

pub use crate::config::Config;
pub use crate::decision::approval::keys::Keys;
pub use crate::decision::approval::receipts::Receipts;
pub use crate::evidence::tlog::Log;
pub use crate::intake::proposals::group_commit::Batching;
pub use crate::notify::outbound::Outbound;
pub use crate::notify::teams::{BotConnector, TeamsOutbound};
pub use crate::notify::Reaching;
pub use crate::people::password::Passwords;
pub use crate::platform::changes::Notifier;
pub use crate::platform::clock::Clock;
pub use crate::platform::hooks::Hooks;
pub use crate::platform::shutdown::Lifecycle;
pub use crate::rail::Payments;
pub use crate::store::Store;
