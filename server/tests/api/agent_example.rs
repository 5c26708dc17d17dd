//! `examples/agent.py`, the standard-library Python agent, run against a
//! real server and rail: it proposes, waits (SSE), verifies the approval
//! token itself, commits and follows the payment; and it refuses to commit
//! with a token it cannot verify against the keys it trusts.

use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::console_client::Console;
use crate::helpers::*;
use crate::rail_harness::with_rail;

const AGENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/agent.py");

/// Starts the agent for one payment in `run_id`; `jwks_url` overrides the keys it trusts.
fn agent(server: &TestServer, run_id: &str, jwks_url: Option<&str>) -> tokio::process::Child {
    agent_with_deadline(server, run_id, jwks_url, 60)
}

/// [`agent`] with `--timeout timeout_secs`.
fn agent_with_deadline(
    server: &TestServer,
    run_id: &str,
    jwks_url: Option<&str>,
    timeout_secs: u64,
) -> tokio::process::Child {
    let mut cmd = Command::new("python3");
    cmd.arg(AGENT)
        .args(["--url", &server.base, "--run-id", run_id, "--amount-minor", "25000", "--currency", "usd"])
        .args(["--source", ACME_SOURCE, "--destination", ACME_PAYEE, "--purpose", "vendor"])
        .args(["--reference", "Invoice 1842", "--invoice", run_id, "--timeout", &timeout_secs.to_string()])
        .env("COUNTERSIGN_AGENT_KEY", ACME_BOT_KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(url) = jwks_url {
        cmd.args(["--jwks-url", url]);
    }
    cmd.spawn().expect("python3 runs examples/agent.py")
}

/// Approves the agent's proposal of `run_id` as ana once it exists.
async fn approve_when_proposed(server: &TestServer, run_id: &str) -> String {
    let ana = Console::sign_in(server, "ana").await;
    for _ in 0..200 {
        let listed = server.list(ACME_BOT_KEY, "status=pending_approval").await;
        let found = listed.body["data"].as_array().into_iter().flatten().find(|p| p["run_id"] == run_id);
        if let Some(p) = found {
            let id = p["id"].as_str().unwrap().to_owned();
            assert_eq!(ana.approve(&id).await.status, 200);
            return id;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the agent never proposed run {run_id}");
}

async fn finish(child: tokio::process::Child) -> (i32, Value, String) {
    let out =
        tokio::time::timeout(Duration::from_secs(90), child.wait_with_output()).await.expect("agent ends").unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let result = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), result, format!("stdout: {stdout}\nstderr: {stderr}"))
}

#[tokio::test]
async fn the_python_agent_proposes_waits_verifies_commits_and_sees_the_payment_through() {
    let (server, rail) = with_rail("").await;
    let child = agent(&server, "py-agent-1", None);
    let id = approve_when_proposed(&server, "py-agent-1").await;
    let (code, result, output) = finish(child).await;
    assert_eq!(code, 0, "{output}");
    assert_eq!(result["id"], id.as_str(), "{output}");
    assert_eq!(result["status"], "succeeded", "{output}");
    assert!(output.contains("approval token verified"), "{output}");
    assert!(!output.contains("long-polling instead"), "it waited on the event stream: {output}");
    let transfers = rail.transfers().await;
    assert_eq!(transfers.len(), 1);
    assert_eq!(result["rail_reference"], transfers[0]["id"], "{output}");
}

#[tokio::test]
async fn the_python_agent_commits_nothing_with_a_token_it_cannot_verify() {
    let (server, rail) = with_rail("").await;
    let real: Value = send(server.client.get(server.url("/.well-known/jwks.json"))).await.body;
    let kid = real["keys"][0]["kid"].clone();
    // The same kid, but the curve's generator as the key: a valid point that
    // did not sign the token.
    let wrong_key = json!({ "keys": [{
        "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
        "x": "axfR8uEsQkf4vOblY6RA8ncDfYEt6zOg9KE5RdiYwpY",
        "y": "T-NC4v4af5uO5-tKfA-eFivOM1drMV7Oy7ZAaDe_UfU",
    }]});
    let unknown_kid = json!({ "keys": [ with(real["keys"][0].clone(), json!({ "kid": "not-this-one" })) ] });
    for (n, keys) in [wrong_key, unknown_kid].into_iter().enumerate() {
        let jwks = MockServer::start().await;
        Mock::given(method("GET")).respond_with(ResponseTemplate::new(200).set_body_json(keys)).mount(&jwks).await;
        let run = format!("py-agent-bad-{n}");
        let child = agent(&server, &run, Some(&jwks.uri()));
        let id = approve_when_proposed(&server, &run).await;
        let (code, _, output) = finish(child).await;
        assert_eq!(code, 2, "{output}");
        assert!(output.contains("not committed"), "{output}");
        assert_eq!(server.get_proposal(ACME_BOT_KEY, &id).await.body["status"], "approved", "{output}");
    }
    assert!(rail.transfers().await.is_empty());
}

#[tokio::test]
async fn the_python_agent_cancels_at_its_deadline_and_never_commits_after_it() {
    let (server, rail) = with_rail("").await;
    let started = std::time::Instant::now();
    let child = agent_with_deadline(&server, "py-agent-late", None, 4);
    // The proposal arrives; nobody decides before the agent's deadline
    // (the event stream's keepalives must not stretch it).
    let id = loop {
        let listed = server.list(ACME_BOT_KEY, "status=pending_approval").await;
        let found = listed.body["data"].as_array().into_iter().flatten().find(|p| p["run_id"] == "py-agent-late");
        if let Some(p) = found {
            break p["id"].as_str().unwrap().to_owned();
        }
        assert!(started.elapsed() < Duration::from_secs(4), "the agent never proposed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let (code, result, output) = finish(child).await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "the agent kept waiting past its deadline: {took:?}\n{output}");
    assert_eq!(code, 1, "{output}");
    assert_eq!(result["status"], "cancelled", "{output}");
    assert!(output.contains("deadline passed before a commit"), "{output}");

    // Approving now is too late: the proposal is withdrawn, nothing is paid.
    let ana = Console::sign_in(&server, "ana").await;
    ana.approve(&id).await.assert_error(409, "invalid_state");
    let view = server.get_proposal(ACME_BOT_KEY, &id).await;
    assert_eq!(view.body["status"], "cancelled", "{}", view.text);
    assert!(rail.transfers().await.is_empty(), "nothing reached the rail");
    assert!(!server.audit_actions(&id).await.iter().any(|a| a.starts_with("operation.")), "no operation");
}
