//! A human approver for tests whose agent is another program (the client
//! libraries' suites, the MCP SDK check): it decides the acme bot's pending
//! proposals by `run_id` prefix, the way an approver in the console would.
//!
//! - `approve-…`: approved by ana a second after it arrives;
//! - `reject-…`: rejected by ana, reason "declined by the test approver";
//! - `unknown-…`: approved, with the rail's next transfer accepted and its
//!   answer dropped, so the commit ends `unknown` until reconciliation
//!   finds the transfer and settles it `succeeded`;
//! - anything else is left pending (deadlines, cancelling).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::console_client::Console;
use crate::helpers::*;
use crate::rail_harness::RailSim;

/// Decides the pending proposals of the acme bot by `run_id` prefix, for
/// ever (until dropped).
pub async fn approve(server: &TestServer, rail: &RailSim) {
    let ana = Console::sign_in(server, "ana").await;
    let mut seen: HashMap<String, Instant> = HashMap::new();
    loop {
        let listed = server.list(ACME_BOT_KEY, "status=pending_approval&limit=100").await;
        for p in listed.body["data"].as_array().into_iter().flatten() {
            let (Some(id), Some(run)) = (p["id"].as_str(), p["run_id"].as_str()) else { continue };
            let first = *seen.entry(id.to_owned()).or_insert_with(Instant::now);
            if first.elapsed() < Duration::from_secs(1) {
                continue;
            }
            if run.starts_with("approve-") {
                ana.approve(id).await;
            } else if run.starts_with("reject-") {
                ana.reject(id, "declined by the test approver").await;
            } else if run.starts_with("unknown-") {
                rail.fault("drop_after_accept", 1).await;
                ana.approve(id).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
