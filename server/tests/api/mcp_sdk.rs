//! The MCP server driven by the official MCP Python SDK (`e2e/mcp_sdk_check.py`)
//! over stdio and streamable HTTP against a real server and rail, with a
//! human approver played by the clients' harness: tool annotations, the
//! API's schemas as input and output schemas, structured results and
//! errors, a paid proposal end to end on each transport, a wrong key
//! stopping `countersign mcp` at start-up, and the raw HTTP answers (parse
//! error, batches by protocol version, the 401's resource metadata).

use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;

use crate::approver::approve;
use crate::helpers::*;
use crate::rail_harness::with_rail;

const CHECK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../e2e/mcp_sdk_check.py");

#[tokio::test]
async fn the_official_mcp_sdk_reads_typed_annotated_tools_and_pays_over_stdio_and_http() {
    if on_postgres() {
        return; // MCP sees only the agent API: one backend is enough.
    }
    let python = checkers_python().expect("scripts/setup.sh --tests made the checkers' venv");
    let (server, rail) = with_rail("").await;
    let child = Command::new(python)
        .arg(CHECK)
        .args(["--url", &server.base, "--bin", BIN, "--config"])
        .arg(&server.config)
        .args(["--source", ACME_SOURCE, "--destination", ACME_PAYEE])
        .env("COUNTERSIGN_AGENT_KEY", ACME_BOT_KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the checkers' python runs");
    let checked = async {
        tokio::select! {
            out = child.wait_with_output() => out,
            () = approve(&server, &rail) => unreachable!("the approver decides for ever"),
        }
    };
    let out = tokio::time::timeout(Duration::from_secs(240), checked).await.expect("the check ends").unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let output = format!("stdout:\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{output}");
    let versions: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    // What the SDK negotiates with rmcp, recorded in docs/DECISIONS.md.
    eprintln!("negotiated: {versions}");
    for transport in ["stdio", "http"] {
        assert_eq!(versions[format!("{transport}_auto")], "2026-07-28", "{output}");
        assert_eq!(versions[format!("{transport}_legacy")], "2025-11-25", "{output}");
    }
    // Four payments (each transport, each way of negotiating), one rail
    // transfer each.
    assert_eq!(rail.transfers().await.len(), 4, "{output}");
}
