"""pay(): the whole flow against a real server and rail, with the harness as the approver."""

from __future__ import annotations

import time
from typing import Any

import pytest

from countersign import Client, DeadlineExceeded, TokenVerificationError
from support import Env, FakeJwks, Recorder, fresh_key, run_id


def test_pay_approved_verifies_the_token_commits_once_and_succeeds(
    make_client: Any, env: Env, recorder: Recorder
) -> None:
    client: Client = make_client()
    seen: list[str] = []
    paid = client.pay(**env.request(run_id("approve"), 2500, reference="Invoice 1842", invoice_id="INV-1842"),
                      deadline=30, on_proposed=lambda p: seen.append(p.status))

    assert seen == ["pending_approval"], "the proposal waited for the human"
    assert paid.status == "succeeded" and paid.paid
    assert paid.operation is not None and paid.operation.status == "succeeded"
    assert paid.operation.rail_reference, "the rail's transfer is named"
    assert paid.amount_minor == 2500 and paid.currency == "USD"
    # The token was checked against the server's keys and bound to this proposal.
    claims = client.last_verified
    assert claims is not None
    assert (claims.pid, claims.rh, claims.aud) == (paid.id, paid.request_hash, "countersign:commit")
    assert claims.azp == paid.canonical_request["agent_id"] and claims.approvers
    paths = recorder.paths("GET")
    assert "/.well-known/jwks.json" in paths
    assert recorder.commits() == [f"/api/v1/proposals/{paid.id}/commit"], "exactly one commit"
    jwks_at = recorder.requests.index(("GET", "/.well-known/jwks.json", ""))
    commit_at = next(i for i, r in enumerate(recorder.requests) if r[1].endswith("/commit"))
    assert jwks_at < commit_at, "verified before committing"
    # The decision came by Server-Sent Events, not by polling.
    assert recorder.streams() and not recorder.long_polls()
    assert client.get(paid.id).status == "succeeded"


def test_pay_rejected_returns_rejected_and_never_commits(make_client: Any, env: Env, recorder: Recorder) -> None:
    client: Client = make_client()
    result = client.pay(**env.request(run_id("reject")), deadline=30)

    assert result.status == "rejected" and not result.paid
    assert result.rejection_reason == "declined by the test approver"
    assert result.operation is None
    assert recorder.commits() == []
    assert client.get(result.id).status == "rejected"


def test_pay_cancels_at_the_deadline_and_never_commits(make_client: Any, env: Env, recorder: Recorder) -> None:
    client: Client = make_client()
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded) as raised:
        client.pay(**env.request(run_id("pending")), deadline=3)
    elapsed = time.monotonic() - started

    assert 3.0 <= elapsed <= 5.0, f"gave up after {elapsed:.2f}s for a 3 s deadline"
    err = raised.value
    assert err.code == "deadline_exceeded"
    assert err.proposal is not None and err.proposal.status == "cancelled"
    assert client.get(err.proposal.id).status == "cancelled", "the server agrees it was withdrawn"
    assert recorder.commits() == []


def test_pay_follows_an_unknown_outcome_to_success_without_committing_again(
    make_client: Any, env: Env, recorder: Recorder
) -> None:
    client: Client = make_client()
    paid = client.pay(**env.request(run_id("unknown"), 4321), deadline=30, settle_timeout=30)

    # The commit's own answer was `unknown` (the rail's answer was dropped)...
    assert len(recorder.commit_answers) == 1
    answer = recorder.commit_answers[0]
    assert answer["status"] == 200
    assert answer["body"]["status"] == "unknown" and answer["body"]["operation"]["status"] == "unknown"
    # ...and reconciliation settled it while the client waited, without a second commit.
    assert recorder.commits() == [f"/api/v1/proposals/{paid.id}/commit"]
    assert paid.status == "succeeded" and paid.operation is not None
    assert paid.operation.status == "succeeded" and paid.operation.rail_reference


def test_pay_refuses_a_token_that_does_not_verify_and_withdraws(
    make_client: Any, env: Env, recorder: Recorder, fake_jwks: FakeJwks
) -> None:
    # Keys that never signed anything the server minted: the genuine token
    # cannot verify against them, so pay() must not commit it.
    _, jwk = fresh_key("someone-else")
    fake_jwks.document = {"keys": [jwk]}
    client: Client = make_client(jwks_url=fake_jwks.url)
    proposed: list[str] = []
    with pytest.raises(TokenVerificationError) as raised:
        client.pay(**env.request(run_id("approve")), deadline=30, on_proposed=lambda p: proposed.append(p.id))

    assert raised.value.reason == "unknown_kid"
    assert fake_jwks.hits >= 1, "the configured key set was consulted"
    assert recorder.commits() == [], "nothing was committed"
    refused = client.get(proposed[0])
    assert refused.status == "cancelled" and refused.operation is None
