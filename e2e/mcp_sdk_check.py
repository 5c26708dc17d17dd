"""Countersign's MCP server, driven by the official MCP Python SDK (`mcp`,
e2e/requirements.txt) over stdio and streamable HTTP, plus the raw HTTP
answers a client library does not show (parse errors, batches, the 401's
resource metadata). Run by server/tests/api/mcp_sdk.rs against a real
server, whose harness approves proposals whose run id starts `approve-`.

Each transport is tried twice: as the SDK negotiates by default (the
stateless 2026-07-28 protocol, through server/discover) and with the
initialize handshake a 1.x SDK uses (mode "legacy"). Exits 0 when every
check holds, printing one JSON line with the protocol versions negotiated;
else fails on the first check that does not.
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
import uuid

import httpx
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

# What each tool says it does to money (MCP tool annotations).
ANNOTATIONS = {
    "propose_payment": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True},
    "get_proposal": {"readOnlyHint": True},
    "wait_for_decision": {"readOnlyHint": True},
    "commit_payment": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": True},
    "cancel_proposal": {"readOnlyHint": False, "destructiveHint": True},
    "request_reversal": {"readOnlyHint": False, "destructiveHint": False},
    "search_invoices": {"readOnlyHint": True},
    "search_payees": {"readOnlyHint": True},
}
# The tools that answer with a proposal (the searches answer with a page).
PROPOSAL_TOOLS = [name for name in ANNOTATIONS if not name.startswith("search_")]


def check(condition, what):
    if not condition:
        raise AssertionError(what)
    print(f"ok: {what}", file=sys.stderr)


def structured(result, what):
    check(not result.is_error, f"{what}: not an error ({result.content})")
    check(isinstance(result.structured_content, dict), f"{what}: structured content")
    # The same JSON as text, for clients that read text only: no prefix.
    check(json.loads(result.content[0].text) == result.structured_content, f"{what}: the text is the same JSON")
    return result.structured_content


def refused(result, code, what):
    check(result.is_error, f"{what}: a tool error")
    envelope = result.structured_content
    check(isinstance(envelope, dict) and envelope["error"]["code"] == code, f"{what}: error.code {code} ({envelope})")
    check(json.loads(result.content[0].text)["error"]["code"] == code, f"{what}: the text is the envelope, no prefix")


async def check_tools(client, transport):
    tools = {tool.name: tool.model_dump(by_alias=True, exclude_none=True) for tool in (await client.list_tools()).tools}
    check(set(tools) == set(ANNOTATIONS), f"{transport}: the eight tools ({sorted(tools)})")
    for name, hints in ANNOTATIONS.items():
        annotations = tools[name].get("annotations", {})
        for hint, value in hints.items():
            check(annotations.get(hint) == value, f"{transport}: {name} {hint}={value}")
    for name in PROPOSAL_TOOLS:
        check("status" in tools[name]["outputSchema"]["properties"], f"{transport}: {name} has the proposal's outputSchema")
    for name in ["search_invoices", "search_payees"]:
        check("next_cursor" in tools[name]["outputSchema"]["properties"], f"{transport}: {name} has a page's outputSchema")
        # The SDK checks the structured content against the outputSchema.
        page = structured(await client.call_tool(name, {}), f"{transport}: {name}")
        check(isinstance(page["data"], list), f"{transport}: {name} answers a page")
    propose = tools["propose_payment"]["inputSchema"]
    check(propose["properties"]["amount_minor"]["minimum"] == 1, f"{transport}: amount_minor minimum 1")
    check(propose["$defs"]["PurposeCode"]["enum"] == ["payroll", "refund", "vendor", "disbursement"], "purpose enum")
    check(propose["properties"]["currency"]["pattern"] == "^[A-Za-z]{3}$", f"{transport}: currency pattern")
    check(propose.get("additionalProperties") is False, f"{transport}: no unknown arguments")


def payment(args, run_id):
    return {
        "run_id": run_id,
        "amount_minor": 25000,
        "currency": "USD",
        "source_account": args.source,
        "destination": args.destination,
        "purpose_code": "vendor",
        "reference": "Invoice 1842 via MCP",
    }


async def pay(client, args, transport):
    """Propose, wait for the harness's approval, commit, see it succeed."""
    run = f"approve-mcp-{transport}-{uuid.uuid4().hex[:8]}"
    proposal = structured(await client.call_tool("propose_payment", payment(args, run)), f"{transport}: propose")
    check(proposal["status"] == "pending_approval", f"{transport}: the proposal waits for a human")
    decided = structured(
        await client.call_tool("wait_for_decision", {"id": proposal["id"], "timeout_secs": 60}), f"{transport}: wait"
    )
    check(decided["status"] == "approved", f"{transport}: approved ({decided['status']})")
    committed = structured(await client.call_tool("commit_payment", {"id": proposal["id"]}), f"{transport}: commit")
    check(isinstance(committed["operation"], dict), f"{transport}: the commit made an operation")
    again = structured(await client.call_tool("commit_payment", {"id": proposal["id"]}), f"{transport}: commit again")
    check(again["operation"]["id"] == committed["operation"]["id"], f"{transport}: a second commit pays nothing more")
    for _ in range(100):
        seen = structured(await client.call_tool("get_proposal", {"id": proposal["id"]}), f"{transport}: get")
        if seen["status"] == "succeeded":
            break
        await asyncio.sleep(0.2)
    check(seen["status"] == "succeeded", f"{transport}: the payment succeeded ({seen['status']})")


async def refusals(client, args, transport):
    refused(await client.call_tool("get_proposal", {"id": "prop_doesnotexist0"}), "not_found", f"{transport}: unknown id")
    bad = dict(payment(args, f"mcp-bad-{uuid.uuid4().hex[:8]}"), amount_minor=0)
    refused(await client.call_tool("propose_payment", bad), "validation_failed", f"{transport}: amount 0")
    pending = structured(
        await client.call_tool("propose_payment", payment(args, f"mcp-pending-{uuid.uuid4().hex[:8]}")),
        f"{transport}: propose",
    )
    refused(await client.call_tool("commit_payment", {"id": pending["id"]}), "invalid_state", f"{transport}: commit pending")
    cancelled = structured(await client.call_tool("cancel_proposal", {"id": pending["id"]}), f"{transport}: cancel")
    check(cancelled["status"] == "cancelled", f"{transport}: cancelled")


def stdio_server(args, key):
    env = {"PATH": os.environ.get("PATH", ""), "COUNTERSIGN_AGENT_KEY": key, "COUNTERSIGN_LOG": "warn"}
    return StdioServerParameters(command=args.bin, args=["--config", args.config, "mcp", "--url", args.url], env=env)


async def over_stdio(args, mode):
    transport = f"stdio-{mode}"
    async with Client(stdio_server(args, args.key), read_timeout_seconds=120, mode=mode) as client:
        await check_tools(client, transport)
        await refusals(client, args, transport)
        await pay(client, args, transport)
        return client.protocol_version


def wrong_key_at_start(args):
    """A wrong key stops `countersign mcp` at start-up, saying why."""
    env = dict(os.environ, COUNTERSIGN_AGENT_KEY="cs_test_not0a0real0key0000000000000000000")
    done = subprocess.run(
        [args.bin, "--config", args.config, "mcp", "--url", args.url], env=env, stdin=subprocess.PIPE, capture_output=True, timeout=30, text=True
    )
    check(done.returncode != 0, "stdio: a wrong key exits at start-up")
    check("refused the agent key" in done.stderr, f"stdio: it says why ({done.stderr.strip()[-200:]})")


async def over_http(args, mode):
    transport = f"http-{mode}"
    headers = {"Authorization": f"Bearer {args.key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        connection = streamable_http_client(f"{args.url}/mcp", http_client=http)
        async with Client(connection, read_timeout_seconds=120, mode=mode) as client:
            await check_tools(client, transport)
            await refusals(client, args, transport)
            await pay(client, args, transport)
            return client.protocol_version


def raw_http(args):
    url = f"{args.url}/mcp"
    base = {"Authorization": f"Bearer {args.key}", "Accept": "application/json, text/event-stream"}
    json_headers = dict(base, **{"Content-Type": "application/json"})
    with httpx.Client(timeout=30) as http:
        r = http.post(url, headers=json_headers, content=b'{"jsonrpc": "2.0", "id": 1, "method": ')
        check(r.status_code == 400, f"malformed JSON: 400 ({r.status_code})")
        check(r.json()["error"]["code"] == -32700 and r.json()["id"] is None, "malformed JSON: JSON-RPC -32700")
        r = http.post(url, headers=dict(base, **{"Content-Type": "text/plain"}), content=b"{}")
        check(r.status_code == 415 and r.json()["error"]["code"] == -32600, f"text/plain: 415 in JSON-RPC ({r.text})")

        batch = [
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": "two", "method": "ping"},
        ]
        r = http.post(url, headers=dict(json_headers, **{"MCP-Protocol-Version": "2025-03-26"}), json=batch)
        check(r.status_code == 200, f"a 2025-03-26 batch is served ({r.status_code} {r.text[:300]})")
        answers = {answer["id"]: answer for answer in r.json()}
        check(set(answers) == {1, "two"}, f"one answer per request, none for the notification ({r.text[:300]})")
        check(len(answers[1]["result"]["tools"]) == len(ANNOTATIONS) and answers["two"]["result"] == {}, "the batch's answers")
        r = http.post(url, headers=dict(json_headers, **{"MCP-Protocol-Version": "2025-06-18"}), json=batch)
        check(r.status_code == 400 and r.json()["error"]["code"] == -32600, "no batches under 2025-06-18")

        r = http.post(url, headers=dict(json_headers, Authorization="Bearer cs_test_wrong"), json=batch[0])
        check(r.status_code == 401, "a wrong key over HTTP: 401")
        challenge = r.headers.get("www-authenticate", "")
        check('resource_metadata="' in challenge, f"the 401 names the resource metadata ({challenge})")
        metadata_url = challenge.split('resource_metadata="')[1].split('"')[0]
        path = metadata_url[metadata_url.index("/.well-known/"):]
        check(path == "/.well-known/oauth-protected-resource/mcp", f"at the RFC 9728 address ({path})")
        metadata = http.get(f"{args.url}{path}").json()
        check(metadata["resource"].endswith("/mcp") and metadata["bearer_methods_supported"] == ["header"], "metadata")


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--bin", required=True)
    parser.add_argument("--config", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--destination", required=True)
    args = parser.parse_args()
    args.key = os.environ["COUNTERSIGN_AGENT_KEY"]
    args.url = args.url.rstrip("/")

    wrong_key_at_start(args)
    raw_http(args)
    # "auto" negotiates the newest version both sides know (server/discover);
    # "legacy" forces the initialize handshake, as a 1.x SDK or another
    # handshake-era client does.
    versions = {}
    for mode in ("auto", "legacy"):
        versions[f"stdio_{mode}"] = await over_stdio(args, mode)
        versions[f"http_{mode}"] = await over_http(args, mode)
    print(json.dumps(versions))


if __name__ == "__main__":
    asyncio.run(main())
