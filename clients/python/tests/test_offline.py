"""Pieces that need no Countersign server: JCS, error mapping, parsing, the stream deadline."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from countersign import (
    Client,
    CountersignError,
    Deadline,
    DeadlineExceeded,
    InvalidState,
    PolicyDenied,
    Proposal,
    RateLimited,
    ServerError,
    jcs,
    request_hash,
)
from countersign._errors import error_from_response

pytestmark = pytest.mark.offline

PROPOSAL = {
    "id": "prop_01",
    "status": "approved",
    "kind": "transfer",
    "run_id": "run-42",
    "request_hash": "sha256:" + "a" * 64,
    "canonical_request": {"v": 1, "amount_minor": 25000, "currency": "USD", "destination": {"id": "ba_x"}},
    "payee": {"id": "ba_x", "legal_name": "Acme Supplies Ltd", "masked_account": "ba_…9f3a", "trusted": False},
    "policy": {"outcome": "needs_approval", "required_approvals": 1,
               "reasons": [{"rule": "manual", "message": "needs a human"}]},
    "approvals": [{"approver_id": "usr_1", "decision": "approve", "reason": None, "via": "console",
                   "at": "2026-01-02T03:04:05.123456789Z"}],
    "approval_token": "eyJ.x.y",
    "approval_expires_at": "2026-01-02T03:09:05Z",
    "operation": None,
    "approval_url": "http://console/proposals/prop_01",
    "created_at": "2026-01-02T03:00:00Z",
    "updated_at": "2026-01-02T03:04:05Z",
    "expires_at": None,
}


def test_jcs_follows_rfc_8785() -> None:
    # Member order by UTF-16 code units, minimal escapes, ECMAScript numbers.
    assert jcs({"b": 1, "a": [True, None, "x"], "\ufb33": 0, "\U0001f600": 0, "\u20ac": 0}) == (
        '{"a":[true,null,"x"],"b":1,"\u20ac":0,"\U0001f600":0,"\ufb33":0}'.encode()
    )
    assert jcs("\u0007\n\"\\/é") == b'"\\u0007\\n\\"\\\\/\xc3\xa9"'
    numbers = [333333333.33333329, 1e30, 4.50, 2e-3, 0.000001, 1e-7, 1e21, 1e20, -0.0, 100]
    assert jcs(numbers) == b"[333333333.3333333,1e+30,4.5,0.002,0.000001,1e-7,1e+21,100000000000000000000,0,100]"
    assert request_hash({"a": 1}) == "sha256:015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"


def test_the_proposal_object_parses_typed() -> None:
    p = Proposal.from_json(PROPOSAL, etag='"e1"')
    assert (p.id, p.status, p.etag, p.amount_minor, p.currency) == ("prop_01", "approved", '"e1"', 25000, "USD")
    assert p.payee is not None and p.payee.legal_name == "Acme Supplies Ltd"
    assert p.policy is not None and p.policy.reasons[0].rule == "manual"
    assert p.approvals[0].at is not None and p.approvals[0].at.microsecond == 123456
    assert p.approval_expires_at is not None and p.approval_expires_at.minute == 9
    assert p.operation is None and not p.paid and not p.final and p.expires_at is None
    assert p.status_reason is None
    assert p.policy.groups == ()
    grouped = Proposal.from_json({**PROPOSAL, "policy": {**PROPOSAL["policy"],
                                  "groups": [{"group": "treasury", "count": 1}]}})
    assert grouped.policy is not None and grouped.policy.groups == (("treasury", 1),)
    expired = Proposal.from_json({**PROPOSAL, "status": "expired",
                                  "status_reason": {"code": "no_decision", "message": "Nobody decided."}})
    assert expired.status_reason is not None and expired.status_reason.code == "no_decision"
    assert p.approvals[0].on_behalf_of is None
    delegated = Proposal.from_json({**PROPOSAL, "approvals": [{**PROPOSAL["approvals"][0], "on_behalf_of": "usr_ana"}]})
    assert delegated.approvals[0].on_behalf_of == "usr_ana"


def test_errors_map_to_their_codes() -> None:
    def err(status: int, body: Any, headers: dict[str, str] | None = None) -> CountersignError:
        return error_from_response(status, httpx.Headers(headers or {}), body)

    denied = err(403, {"error": {"code": "policy_denied", "message": "no", "request_id": "r1",
                                 "details": [{"rule": "daily_budget", "message": "over"}]}})
    assert isinstance(denied, PolicyDenied) and denied.rules == ["daily_budget"] and denied.request_id == "r1"
    state = err(409, {"error": {"code": "invalid_state", "message": "x", "details": [{"current_status": "rejected"}],
                                "current_status": "rejected"}})
    assert isinstance(state, InvalidState) and state.current_status == "rejected"
    limited = err(429, {"error": {"code": "rate_limited", "message": "slow down"}}, {"Retry-After": "3"})
    assert isinstance(limited, RateLimited) and limited.retry_after == 3.0
    proxy = err(502, "<html>Bad Gateway</html>", {"X-Request-Id": "r2"})
    assert isinstance(proxy, ServerError) and proxy.status == 502 and "html" not in str(proxy)


def test_a_deadline_is_monotonic_and_fixed() -> None:
    d = Deadline.after(0.2)
    assert 0 < d.remaining() <= 0.2 and not d.expired()
    assert Deadline.of(d) is d
    time.sleep(0.25)
    assert d.expired() and d.remaining() == 0
    with pytest.raises(TypeError):
        Deadline.of("soon")  # type: ignore[arg-type]


class Keepalives(BaseHTTPRequestHandler):
    """An event stream that only ever sends keepalive comments (and no long-poll)."""

    protocol_version = "HTTP/1.1"
    closed_at: list[float] = []

    def do_GET(self) -> None:  # noqa: N802
        if not self.path.endswith("/events"):
            # The long-poll: nothing changed (after holding it a little).
            time.sleep(0.3)
            self.send_response(304)
            self.send_header("ETag", '"e1"')
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        event = f"event: proposal\nid: \"e1\"\ndata: {json.dumps({**PROPOSAL, 'status': 'pending_approval'})}\n\n"
        try:
            for chunk in [event] + [": keepalive\n\n"] * 1000:
                data = chunk.encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:
            Keepalives.closed_at.append(time.monotonic())

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def keepalive_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Keepalives)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_keepalives_do_not_extend_the_deadline_and_the_stream_is_closed(keepalive_server: str) -> None:
    Keepalives.closed_at.clear()
    with Client(keepalive_server, "cs_test_key") as client:
        deadline = Deadline.after(1.5)
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded) as raised:
            client.wait("prop_01", deadline=deadline)
        elapsed = time.monotonic() - started
    assert 1.45 <= elapsed <= 2.0, f"returned after {elapsed:.2f}s for a 1.5 s deadline"
    # The state the stream carried is the one reported.
    assert raised.value.proposal is not None and raised.value.proposal.status == "pending_approval"
    # The server saw its stream closed right at the deadline.
    until = time.monotonic() + 2
    while not Keepalives.closed_at and time.monotonic() < until:
        time.sleep(0.05)
    assert Keepalives.closed_at and Keepalives.closed_at[0] - deadline.at < 1.0
