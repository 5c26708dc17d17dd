"""Typed errors carry the API's error.code; idempotent proposing."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from countersign import (
    ApprovalTokenInvalid,
    Client,
    CountersignError,
    IdempotencyKeyReused,
    NotFound,
    Unauthenticated,
    UnknownDestination,
    ValidationFailed,
)
from support import Env, Recorder, run_id


def test_a_bad_request_is_a_typed_validation_error(client: Client, env: Env) -> None:
    with pytest.raises(ValidationFailed) as raised:
        client.propose(**env.request(run_id("pending"), 0))
    err = raised.value
    assert isinstance(raised.value, CountersignError), "one except catches them all"
    assert (err.status, err.code) == (422, "validation_failed")
    assert err.fields == ["amount_minor"]
    assert err.request_id, "the server's request id comes with it"
    assert "amount_minor" in str(err)

    with pytest.raises(ValidationFailed) as raised:
        client.propose(**env.request(run_id("pending"), currency="XXX", purpose_code="lunch"))
    assert set(raised.value.fields) >= {"currency", "purpose_code"}


def test_an_unregistered_destination_is_typed(client: Client, env: Env) -> None:
    with pytest.raises(UnknownDestination) as raised:
        client.propose(**env.request(run_id("pending"), destination="ba_nobodyknowsthis01"))
    assert (raised.value.status, raised.value.code) == (422, "unknown_destination")


def test_a_wrong_agent_key_is_unauthenticated(make_client: Any, env: Env) -> None:
    client: Client = make_client(agent_key="cs_test_this0key0does0not0exist000000000")
    with pytest.raises(Unauthenticated) as raised:
        client.propose(**env.request(run_id("pending")))
    assert (raised.value.status, raised.value.code) == (401, "unauthenticated")
    with pytest.raises(Unauthenticated):
        client.wait("prop_whatever", deadline=5)


def test_an_unknown_proposal_is_not_found(client: Client) -> None:
    with pytest.raises(NotFound) as raised:
        client.get("prop_00000000000000000000000000")
    assert (raised.value.status, raised.value.code) == (404, "not_found")


def test_the_server_refuses_a_forged_token_with_its_reason(client: Client, env: Env, recorder: Recorder) -> None:
    p = client.propose(**env.request(run_id("pending")))
    try:
        with pytest.raises(ApprovalTokenInvalid) as raised:
            client.commit(p.id, "eyJhbGciOiJub25lIn0.e30.")
        assert (raised.value.status, raised.value.code) == (401, "approval_token_invalid")
        assert raised.value.reason, "the failed check is named"
        assert client.get(p.id).status == "pending_approval"
    finally:
        client.cancel(p)


def test_proposing_again_with_the_same_idempotency_key_returns_the_same_proposal(
    client: Client, env: Env, recorder: Recorder
) -> None:
    key = f"test-{uuid.uuid4()}"
    request = env.request(run_id("pending"), 5150)
    first = client.propose(**request, idempotency_key=key)
    again = client.propose(**request, idempotency_key=key)
    try:
        assert first.status == "pending_approval"
        assert again.id == first.id and again.request_hash == first.request_hash
        assert len(recorder.paths("POST")) == 2, "two requests, one proposal"
        # The same key with another body is refused, and creates nothing.
        with pytest.raises(IdempotencyKeyReused) as raised:
            client.propose(**{**request, "amount_minor": 5151}, idempotency_key=key)
        assert (raised.value.status, raised.value.code) == (422, "idempotency_key_reused")
        # Without a key, the same run proposing the same payment collapses too.
        assert client.propose(**request).id == first.id
        assert [p.id for p in client.list_proposals(status="pending_approval", limit=100).data].count(first.id) == 1
    finally:
        client.cancel(first)


class DropFirstProposeAnswer(httpx.HTTPTransport):
    """Delivers the first proposal request, then loses its answer (a network cut)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, str | None]] = []  # (Idempotency-Key, Idempotent-Replayed)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.method == "POST" and request.url.path == "/api/v1/proposals":
            self.sent.append((request.headers["idempotency-key"], response.headers.get("idempotent-replayed")))
            if len(self.sent) == 1:
                response.read()
                response.close()
                raise httpx.ReadError("connection reset after the request was sent", request=request)
        return response


def test_a_lost_answer_is_retried_under_the_same_key_and_makes_one_proposal(make_client: Any, env: Env) -> None:
    transport = DropFirstProposeAnswer()
    client: Client = make_client(transport=transport)
    run = run_id("pending")
    p = client.propose(**env.request(run, 6060))
    try:
        (first_key, first_replayed), (second_key, second_replayed) = transport.sent
        assert first_key == second_key and first_key.startswith("countersign-py-")
        assert (first_replayed, second_replayed) == (None, "true"), "the retry replayed the first answer"
        mine = [q for q in client.list_proposals(limit=100).data if q.run_id == run]
        assert [q.id for q in mine] == [p.id], "one proposal"
        # A new call is a new request: it gets a new key (and the duplicate collapses by run).
        client.propose(**env.request(run, 6060))
        assert transport.sent[2][0] != first_key
    finally:
        client.cancel(p)
