"""Helpers shared by the tests (see conftest.py for the fixtures)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from countersign import Client, Proposal
from countersign._tokens import b64url_encode


@dataclass(frozen=True)
class Env:
    url: str
    key: str
    source: str
    destination: str

    def request(self, run_id: str, amount_minor: int = 1234, **extra: Any) -> dict[str, Any]:
        """propose()'s keyword arguments for a USD vendor payment."""
        return {
            "run_id": run_id,
            "amount_minor": amount_minor,
            "currency": "usd",
            "source_account": self.source,
            "destination": self.destination,
            "purpose_code": "vendor",
            **extra,
        }


def run_id(prefix: str) -> str:
    """A unique run id the approver recognizes by its prefix."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@dataclass
class Recorder:
    """Every request a client sent (method, path, query) and the commit answers."""

    requests: list[tuple[str, str, str]] = field(default_factory=list)
    commit_answers: list[dict[str, Any]] = field(default_factory=list)

    def on_request(self, request: httpx.Request) -> None:
        self.requests.append((request.method, request.url.path, request.url.query.decode()))

    def on_response(self, response: httpx.Response) -> None:
        if response.request.method == "POST" and response.request.url.path.endswith("/commit"):
            response.read()
            self.commit_answers.append({"status": response.status_code, "body": response.json()})

    def paths(self, method: str | None = None) -> list[str]:
        return [p for m, p, _ in self.requests if method is None or m == method]

    def commits(self) -> list[str]:
        return [p for m, p, _ in self.requests if m == "POST" and p.endswith("/commit")]

    def long_polls(self) -> list[str]:
        return [q for m, p, q in self.requests if m == "GET" and "wait=" in q]

    def streams(self) -> list[str]:
        return [p for m, p, _ in self.requests if m == "GET" and p.endswith("/events")]


def wait_for_status(client: Client, proposal: Proposal, status: str, seconds: float = 15) -> Proposal:
    """Polls until the proposal has ``status`` (test helper, independent of wait())."""
    end = time.monotonic() + seconds
    while True:
        current = client.get(proposal.id)
        if current.status == status or time.monotonic() > end:
            return current
        time.sleep(0.2)


class FakeJwks:
    """A JWKS document served by a local HTTP server the test controls."""

    def __init__(self) -> None:
        self.document: dict[str, Any] = {"keys": []}
        self.hits = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                owner.hits += 1
                body = json.dumps(owner.document).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks.json"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def fresh_key(kid: str) -> tuple[ec.EllipticCurvePrivateKey, dict[str, Any]]:
    """A new P-256 key and its public JWK."""
    key = ec.generate_private_key(ec.SECP256R1())
    numbers = key.public_key().public_numbers()
    jwk = {
        "kty": "EC",
        "crv": "P-256",
        "x": b64url_encode(numbers.x.to_bytes(32, "big")),
        "y": b64url_encode(numbers.y.to_bytes(32, "big")),
        "kid": kid,
        "alg": "ES256",
        "use": "sig",
    }
    return key, jwk


def b64json(obj: Any) -> str:
    return b64url_encode(json.dumps(obj, separators=(",", ":")).encode())


def sign(key: ec.EllipticCurvePrivateKey, header: dict[str, Any], claims: dict[str, Any]) -> str:
    signing_input = f"{b64json(header)}.{b64json(claims)}"
    r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    return f"{signing_input}.{b64url_encode(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"
