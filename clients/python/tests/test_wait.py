"""wait(), settle(), cancel(), commit(): SSE, the long-poll fallback, one deadline."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from countersign import Client, Deadline, DeadlineExceeded, InvalidState
from support import Env, Recorder, run_id


def commit_and_settle(client: Client, proposal_id: str) -> None:
    """Pays an approved proposal the careful way (the suite leaves nothing approved)."""
    p = client.get(proposal_id)
    assert p.status == "approved" and p.approval_token
    client.verify_token(p.approval_token, p)
    done = client.settle(client.commit(p.id, p.approval_token), deadline=30)
    assert done.status == "succeeded"


def test_wait_long_polls_when_sse_is_disabled(make_client: Any, env: Env, recorder: Recorder) -> None:
    client: Client = make_client(use_sse=False)
    p = client.propose(**env.request(run_id("approve")))
    assert p.status == "pending_approval" and p.etag, "the proposal comes with its ETag"
    decided = client.wait(p, deadline=20)

    assert decided.status == "approved" and decided.approval_token
    assert recorder.streams() == [], "no event stream was opened"
    assert recorder.long_polls(), "the decision came by long-poll"
    assert decided.etag and decided.etag != p.etag
    commit_and_settle(client, p.id)


class NoEventStream(httpx.HTTPTransport):
    """A proxy that does not pass event streams (502 for them)."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/events"):
            return httpx.Response(502, text="<html>Bad Gateway</html>", request=request)
        return super().handle_request(request)


def test_wait_falls_back_to_long_poll_when_the_stream_is_unavailable(
    make_client: Any, env: Env, recorder: Recorder
) -> None:
    client: Client = make_client(transport=NoEventStream())
    p = client.propose(**env.request(run_id("approve")))
    decided = client.wait(p.id, deadline=20)

    assert decided.status == "approved"
    assert recorder.streams(), "the stream was tried first"
    assert recorder.long_polls(), "then the long-poll took over"
    commit_and_settle(client, p.id)


@pytest.mark.parametrize("use_sse", [True, False], ids=["sse", "long-poll"])
def test_wait_ends_at_its_deadline_and_does_not_cancel(
    make_client: Any, env: Env, recorder: Recorder, use_sse: bool
) -> None:
    client: Client = make_client(use_sse=use_sse)
    p = client.propose(**env.request(run_id("pending")))
    deadline = Deadline.after(2)
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded) as raised:
        client.wait(p, deadline=deadline)
    elapsed = time.monotonic() - started

    assert 1.9 <= elapsed <= 3.0, f"returned after {elapsed:.2f}s for a 2 s deadline"
    assert raised.value.proposal is not None and raised.value.proposal.status == "pending_approval"
    assert client.get(p.id).status == "pending_approval", "waiting withdraws nothing"
    # Cancel, then cancel again: the second answers the cancelled proposal.
    assert client.cancel(p).status == "cancelled"
    assert client.cancel(p.id).status == "cancelled"
    # Waiting on a decided proposal returns at once.
    started = time.monotonic()
    assert client.wait(p.id, deadline=10).status == "cancelled"
    assert time.monotonic() - started < 2


def test_an_expired_deadline_waits_not_at_all(client: Client, env: Env) -> None:
    p = client.propose(**env.request(run_id("pending")))
    try:
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded):
            client.wait(p, deadline=0)
        assert time.monotonic() - started < 0.5
    finally:
        client.cancel(p)


def test_a_cancelled_approval_cannot_be_committed(client: Client, env: Env, recorder: Recorder) -> None:
    p = client.wait(client.propose(**env.request(run_id("approve"))), deadline=20)
    assert p.status == "approved" and p.approval_token
    assert client.cancel(p).status == "cancelled"
    with pytest.raises(InvalidState) as raised:
        client.commit(p.id, p.approval_token)
    assert raised.value.status == 409 and raised.value.code == "invalid_state"
    assert raised.value.current_status == "cancelled"
    assert client.get(p.id).operation is None
