//! `countersign mcp`: the MCP server over stdio, driven by a minimal MCP
//! client written here from the protocol (newline-delimited JSON-RPC 2.0:
//! initialize, initialized, tools/list, tools/call), against a real server
//! and a real rail simulator.

use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::console_client::Console;
use crate::helpers::*;
use crate::rail_harness::with_rail;

/// An MCP client session with `countersign mcp`.
struct Mcp {
    _child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl Mcp {
    /// Starts `countersign mcp` for `server` with `key` (given in the
    /// environment, never on the command line) and initializes the session.
    async fn start(server: &TestServer, key: &str) -> (Mcp, Value) {
        let mut child = Command::new(BIN)
            .arg("--config")
            .arg(&server.config)
            .args(["mcp", "--url", &server.base])
            .env("COUNTERSIGN_AGENT_KEY", key)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn countersign mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut mcp = Mcp { _child: child, stdin, stdout, next_id: 1 };
        let init = mcp
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": { "name": "countersign-tests", "version": "0" },
                }),
            )
            .await;
        mcp.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;
        (mcp, init)
    }

    async fn send(&mut self, message: Value) {
        self.stdin.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Sends a request and returns its `result` (panics on a JSON-RPC error).
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })).await;
        loop {
            let line = tokio::time::timeout(Duration::from_secs(90), self.stdout.next_line())
                .await
                .unwrap_or_else(|_| panic!("no answer to {method} within 90 s"))
                .unwrap()
                .unwrap_or_else(|| panic!("the MCP server closed stdout during {method}"));
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            if message["id"] == json!(id) {
                assert!(message["error"].is_null(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }

    /// Calls a tool: (is_error, the text of its first content block).
    async fn call(&mut self, tool: &str, arguments: Value) -> (bool, String) {
        let result = self.request("tools/call", json!({ "name": tool, "arguments": arguments })).await;
        let text = result["content"][0]["text"].as_str().unwrap_or_default().to_owned();
        (result["isError"] == true, text)
    }

    /// Calls a tool that must succeed and returns its JSON answer.
    async fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let (is_error, text) = self.call(tool, arguments).await;
        assert!(!is_error, "{tool}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{tool} answered non-JSON ({e}): {text}"))
    }
}

fn payment(run_id: &str) -> Value {
    json!({
        "run_id": run_id,
        "amount_minor": 25_000,
        "currency": "USD",
        "source_account": ACME_SOURCE,
        "destination": ACME_PAYEE,
        "purpose_code": "vendor",
        "reference": "Invoice 1842",
        "invoice_id": "1842",
    })
}

#[tokio::test]
async fn the_tools_say_what_moves_money() {
    let server = TestServer::start().await;
    let (mut mcp, init) = Mcp::start(&server, ACME_BOT_KEY).await;
    assert_eq!(init["serverInfo"]["name"], "countersign", "{init}");
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    let tools = mcp.request("tools/list", json!({})).await;
    let described = |name: &str| -> String {
        let tool = tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == name);
        let tool = tool.unwrap_or_else(|| panic!("{name} is listed: {tools}"));
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        tool["description"].as_str().unwrap().to_lowercase()
    };
    let mut names: Vec<&str> = tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "cancel_proposal",
            "commit_payment",
            "get_proposal",
            "propose_payment",
            "request_reversal",
            "wait_for_decision"
        ]
    );
    assert!(described("propose_payment").contains("moves no money"));
    assert!(described("request_reversal").contains("moves no money"));
    assert!(described("commit_payment").contains("cannot be undone"));
    let schema =
        &tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == "propose_payment").unwrap()["inputSchema"];
    for field in ["run_id", "amount_minor", "currency", "source_account", "destination", "purpose_code"] {
        assert!(schema["required"].as_array().unwrap().contains(&json!(field)), "{field} is required: {schema}");
    }
}

#[tokio::test]
async fn propose_wait_commit_pays_once_through_the_api_checks() {
    let (server, rail) = with_rail("").await;
    let (mut mcp, _) = Mcp::start(&server, ACME_BOT_KEY).await;
    let proposed = mcp.ok("propose_payment", payment("mcp-run")).await;
    assert_eq!(proposed["status"], "pending_approval", "{proposed}");
    let id = proposed["id"].as_str().unwrap().to_owned();

    // Committing before a human approved moves nothing.
    let (refused, text) = mcp.call("commit_payment", json!({ "id": id })).await;
    assert!(refused && text.contains("pending_approval"), "{text}");
    assert!(rail.transfers().await.is_empty());

    // A short wait with nobody deciding returns the proposal still pending.
    let waited = mcp.ok("wait_for_decision", json!({ "id": id, "timeout_secs": 1 })).await;
    assert_eq!(waited["status"], "pending_approval");

    // A human approves while the tool waits.
    let approver = {
        let server_base = server.base.clone();
        let id = id.clone();
        let console = Console::sign_in(&server, "ana").await;
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let r = console.approve(&id).await;
            assert_eq!(r.status, 200, "{server_base}: {}", r.text);
        })
    };
    let decided = mcp.ok("wait_for_decision", json!({ "id": id, "timeout_secs": 30 })).await;
    approver.await.unwrap();
    assert_eq!(decided["status"], "approved", "{decided}");

    let committed = mcp.ok("commit_payment", json!({ "id": id })).await;
    assert!(committed["operation"]["id"].is_string(), "{committed}");
    // Committing again is safe: the same operation, still one transfer.
    let again = mcp.ok("commit_payment", json!({ "id": id })).await;
    assert_eq!(again["operation"]["id"], committed["operation"]["id"]);
    assert_eq!(rail.transfers().await.len(), 1);
}

#[tokio::test]
async fn refusals_come_back_as_tool_errors_with_the_api_code() {
    let server = TestServer::start().await;
    let created = server.create(&transfer()).await;
    let id = created["id"].as_str().unwrap();

    // Another agent of the same tenant cannot see or cancel it.
    let (mut other, _) = Mcp::start(&server, ACME_OTHER_KEY).await;
    for tool in ["get_proposal", "cancel_proposal", "commit_payment"] {
        let (is_error, text) = other.call(tool, json!({ "id": id })).await;
        assert!(is_error && text.contains("\"not_found\""), "{tool}: {text}");
    }
    // A wrong key is refused like on the HTTP API, and the key is not echoed.
    let (mut stranger, _) = Mcp::start(&server, "cs_test_wrong0key0000000000000000000000").await;
    let (is_error, text) = stranger.call("propose_payment", payment("x")).await;
    assert!(is_error && text.contains("\"unauthenticated\""), "{text}");
    assert!(!text.contains("cs_test_wrong"), "{text}");
    // The strict schema of the API still applies.
    let (mut mcp, _) = Mcp::start(&server, ACME_BOT_KEY).await;
    let (is_error, text) = mcp.call("propose_payment", with(payment("y"), json!({ "amount_minor": 0 }))).await;
    assert!(is_error && text.contains("\"validation_failed\""), "{text}");
    // An id that is not a plain id is refused before any request is made.
    let answer = mcp.send_raw_call("get_proposal", json!({ "id": "../../admin" })).await;
    assert!(answer["error"].is_object() || answer["result"]["isError"] == true, "{answer}");
    // The owner cancels through the tool.
    let cancelled = mcp.ok("cancel_proposal", json!({ "id": id })).await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
}

impl Mcp {
    /// A tools/call whose answer may be a JSON-RPC error: the whole message.
    async fn send_raw_call(&mut self, tool: &str, arguments: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let params = json!({ "name": tool, "arguments": arguments });
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params })).await;
        loop {
            let line = self.stdout.next_line().await.unwrap().expect("an answer");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) {
                return message;
            }
        }
    }
}
