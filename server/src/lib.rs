//! Countersign's server: the HTTP routers (agent API, console JSON and
//! pages, Slack, Teams, MCP), the console's data service, the command line and
//! start-up, and the adapters that implement the core's ports (the rail's
//! HTTP connector, outbound posts, single sign-on). The use cases, rules
//! and storage are `countersign-core`, re-exported here by concern (`countersign::store`,
//! `countersign::decision::approval`…). See `docs/ARCHITECTURE.md` for the map.
// The console's proposal page renders into one deeply nested view type.
#![recursion_limit = "256"]

pub use countersign_core::{
    commit, config, decision, domain, evidence, intake, notify, payables, people, platform, store,
};

pub mod admin_view;
pub mod agent_limits;
pub mod bot_framework;
pub mod cli;
pub mod console;
pub mod flow;
pub mod http;
pub mod mcp;
pub mod metrics;
pub mod monitor;
pub mod operator;
pub mod policy_cli;
pub mod poster;
pub mod rail;
pub mod sso;
pub mod startup;
pub mod state;
pub mod telemetry;
