//! Countersign's server: the HTTP routers (agent API, console JSON and
//! pages, Slack, Teams, MCP), the console's data service, the command line and
//! start-up, and the adapters that implement the core's ports (the rail's
//! HTTP connector, outbound posts, single sign-on). The use cases, rules
//! and storage are `countersign-core`, re-exported here under their own
//! names so that `countersign::store`, `countersign::approvals`… keep
//! meaning what they did. See `docs/ARCHITECTURE.md` for the map.
// The console's proposal page renders into one deeply nested view type.
#![recursion_limit = "256"]

pub use countersign_core::{
    actors, approval, approvals, backup, batches, cache, changes, client_ip, clock, commit, config, delegate,
    delegation, demo, deps, digest, domain, duplicates, eligibility, escalation, evidence, expiry, exports, freeze,
    hooks, human_loop, idempotency, notifications, notify, operations, outbound, passkeys, password, payables, people,
    policy, policy_backtest, policy_explain, proposals, provision, queue, registry_changes, risk, services, shutdown,
    slack, slack_press, store, teams, teams_press, throttle, tlog, webhooks,
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
