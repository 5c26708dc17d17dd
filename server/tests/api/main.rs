//! Black-box tests: each starts a real server on a random port with a fresh
//! data directory (or PostgreSQL database) and drives it over HTTP. The
//! server runs in this process unless a process is the point (kill -9,
//! signals, two instances, the CLI, a process's metrics), or
//! `API_TESTS_IN_PROCESS=0` asks for processes everywhere: helpers.rs says
//! which and why.

mod approver;
mod console_client;
mod helpers;
mod oidc_harness;
mod rail_harness;
mod slack_harness;
mod teams_harness;

mod admin_forms;
mod agent_example;
mod agent_limits;
mod approval_groups;
mod approval_tokens;
mod audit;
mod backup;
mod batches;
mod business_metrics;
mod cancel;
mod cedar_policy;
mod cli_commands;
mod clients;
mod commit;
mod commit_recovery;
mod config;
mod consent;
mod console_csrf;
mod console_decide;
mod console_flow;
mod console_headers;
mod console_session;
mod contract;
mod controls;
mod decision_support;
mod delegation;
mod duplicates;
mod escalation;
mod events;
mod evidence;
mod expiry;
mod exports;
mod human_loop;
mod idempotency;
mod in_process;
mod kill_switch;
mod listing;
mod mcp;
mod mcp_sdk;
mod multi_instance;
mod observability;
mod offboarding;
mod oidc;
mod otlp;
mod passkey_sign_in;
mod passkeys;
mod passkeys_step_up;
mod payables;
mod payables_controls;
mod policy;
mod proposals_create;
mod queue_search;
mod rails;
mod reach;
mod read_cache;
mod receipts;
mod scim;
mod slack;
mod status_poll;
mod strict_schema;
mod teams;
mod upgrade;

mod surface;
mod transparency_log;
mod webhooks;
