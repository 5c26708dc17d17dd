"""Fixtures for the suite, which runs against a real Countersign server.

The environment names it: ``COUNTERSIGN_URL``, ``COUNTERSIGN_AGENT_KEY``,
``COUNTERSIGN_SOURCE_ACCOUNT``, ``COUNTERSIGN_DESTINATION``. A human approver
(the Rust harness, server/tests/api/clients.rs) decides by run_id prefix:
``approve-`` approved after about a second, ``reject-`` rejected,
``unknown-`` approved with the rail's answer dropped; anything else stays
pending.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from countersign import Client
from support import Env, FakeJwks, Recorder

REQUIRED = ("COUNTERSIGN_URL", "COUNTERSIGN_AGENT_KEY", "COUNTERSIGN_SOURCE_ACCOUNT", "COUNTERSIGN_DESTINATION")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = [name for name in REQUIRED if not os.environ.get(name)]
    if missing:
        skip = pytest.mark.skip(reason=f"needs a running server: set {', '.join(missing)}")
        for item in items:
            if "offline" not in item.keywords:
                item.add_marker(skip)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "offline: runs without a server")


@pytest.fixture(scope="session")
def env() -> Env:
    return Env(
        url=os.environ["COUNTERSIGN_URL"],
        key=os.environ["COUNTERSIGN_AGENT_KEY"],
        source=os.environ["COUNTERSIGN_SOURCE_ACCOUNT"],
        destination=os.environ["COUNTERSIGN_DESTINATION"],
    )


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def make_client(env: Env, recorder: Recorder) -> Iterator[Any]:
    """Clients on a recording httpx.Client, closed after the test."""
    made: list[tuple[Client, httpx.Client]] = []

    def make(transport: httpx.BaseTransport | None = None, **options: Any) -> Client:
        http = httpx.Client(
            timeout=30,
            transport=transport,
            event_hooks={"request": [recorder.on_request], "response": [recorder.on_response]},
        )
        client = Client(env.url, options.pop("agent_key", env.key), http=http, **options)
        made.append((client, http))
        return client

    yield make
    for client, http in made:
        client.close()
        http.close()


@pytest.fixture
def client(make_client: Any) -> Client:
    return make_client()


@pytest.fixture
def fake_jwks() -> Iterator[FakeJwks]:
    jwks = FakeJwks()
    yield jwks
    jwks.close()
