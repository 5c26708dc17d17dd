//! The client libraries (`clients/python`, `clients/typescript`) and the
//! LangGraph example, each running its own test suite against a real server
//! and a real rail simulator, with a human approver played here.
//!
//! The suites are the clients' own (pytest, `node --test`); this harness
//! gives them a server and decides their proposals by `run_id` prefix, the
//! way an approver in the console would:
//!
//! - `approve-…`: approved by ana a second after it arrives;
//! - `reject-…`: rejected by ana, reason "declined by the test approver";
//! - `unknown-…`: approved, with the rail's next transfer accepted and its
//!   answer dropped, so the commit ends `unknown` until reconciliation
//!   (every second here) finds the transfer and settles it `succeeded`;
//! - anything else is left pending (deadlines, cancelling).
//!
//! Each suite gets the environment: `COUNTERSIGN_URL`,
//! `COUNTERSIGN_AGENT_KEY`, `COUNTERSIGN_SOURCE_ACCOUNT`,
//! `COUNTERSIGN_DESTINATION`; amounts up to 100000 minor USD are within
//! ana's limit. The suites run one test at a time (one rail, one fault
//! queue).

use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;

use crate::approver::approve;
use crate::helpers::*;
use crate::rail_harness::with_rail;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// Runs `program` in `dir` with the suite's environment, beside the approver.
async fn run_suite(dir: &Path, program: &Path, args: &[&str], extra_env: &[(&str, &str)]) -> String {
    let (server, rail) = with_rail("").await;
    let mut cmd = Command::new(program);
    cmd.current_dir(dir)
        .args(args)
        .env("COUNTERSIGN_URL", &server.base)
        .env("COUNTERSIGN_AGENT_KEY", ACME_BOT_KEY)
        .env("COUNTERSIGN_SOURCE_ACCOUNT", ACME_SOURCE)
        .env("COUNTERSIGN_DESTINATION", ACME_PAYEE)
        .envs(extra_env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd.spawn().unwrap_or_else(|e| panic!("{} runs: {e}", program.display()));
    let suite = async {
        tokio::select! {
            out = child.wait_with_output() => out,
            () = approve(&server, &rail) => unreachable!("the approver decides for ever"),
        }
    };
    let out =
        tokio::time::timeout(Duration::from_secs(300), suite).await.expect("the suite ends within 5 minutes").unwrap();
    let output =
        format!("stdout:\n{}\nstderr:\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{} {args:?} failed:\n{output}", program.display());

    // Whatever the suite did, the server's own books agree: one rail
    // transfer per succeeded payment, and none for anything else.
    let listed = server.list(ACME_BOT_KEY, "status=succeeded&limit=100").await;
    let succeeded: Vec<&Value> = listed.body["data"].as_array().into_iter().flatten().collect();
    assert!(!succeeded.is_empty(), "the suite paid nothing:\n{output}");
    assert_eq!(rail.transfers().await.len(), succeeded.len(), "{output}");
    output
}

#[tokio::test]
async fn the_python_client_and_the_langgraph_example_pass_their_tests_against_a_real_server() {
    if on_postgres() {
        return; // The clients see only HTTP: one backend is enough.
    }
    let python = checkers_python().expect("scripts/setup.sh --tests made the checkers' venv");
    let dir = Path::new(ROOT).join("clients/python");
    let src = dir.join("src");
    let output = run_suite(
        &dir,
        &python,
        &["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        &[("PYTHONPATH", src.to_str().unwrap())],
    )
    .await;
    assert!(output.contains(" passed"), "{output}");
}

#[tokio::test]
async fn the_typescript_client_passes_its_tests_against_a_real_server() {
    if on_postgres() {
        return;
    }
    let dir = Path::new(ROOT).join("clients/typescript");
    let output = run_suite(&dir, Path::new("npm"), &["test", "--silent"], &[]).await;
    assert!(output.contains("# pass"), "{output}");
}
