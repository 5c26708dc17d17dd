#!/usr/bin/env python3
"""A complete Countersign agent in plain Python (standard library only).

It proposes one payment, waits for the human decision (Server-Sent Events,
falling back to long-polling), verifies the approval token itself against
the server's published keys (ES256 over P-256, checked here in pure Python),
commits, and follows the payment to its end without ever retrying blindly.

One deadline (--timeout) bounds the whole decision: every wait ends at it,
whatever the server sends meanwhile (keepalives included). If no approval
has arrived by then, the agent cancels its proposal and never commits
after it. Once committed, it waits for the payment's final status
(--settle-timeout more at most) before it exits, so what it prints is what
the server says.

    COUNTERSIGN_AGENT_KEY=cs_test_... python3 examples/agent.py \\
        --url http://localhost:8080 --run-id run-42 --amount-minor 25000 \\
        --currency USD --source acct_demo000000001234 --destination ba_northwind0007 \\
        --purpose vendor --reference "Invoice 1842" --invoice 1842

Exit status: 0 the payment succeeded; 1 it did not happen (rejected,
expired, cancelled — by this agent at its deadline too —, failed); 2
something is wrong (refused request, a token that does not verify, a
payment still unsettled after --settle-timeout) and nothing was committed
by this run unless it says so.
"""

import argparse
import base64
import hashlib
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

# ---------------------------------------------------------------- P-256 ECDSA

P = 2**256 - 2**224 + 2**192 + 2**96 - 1
N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
A = P - 3
B = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B
G = (
    0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
    0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5,
)


def on_curve(point):
    x, y = point
    return 0 <= x < P and 0 <= y < P and (y * y - (x * x * x + A * x + B)) % P == 0


def add(p1, p2):
    if p1 is None:
        return p2
    if p2 is None:
        return p1
    (x1, y1), (x2, y2) = p1, p2
    if x1 == x2 and (y1 + y2) % P == 0:
        return None
    if p1 == p2:
        slope = (3 * x1 * x1 + A) * pow(2 * y1, -1, P) % P
    else:
        slope = (y2 - y1) * pow(x2 - x1, -1, P) % P
    x3 = (slope * slope - x1 - x2) % P
    return (x3, (slope * (x1 - x3) - y1) % P)


def multiply(k, point):
    result = None
    while k:
        if k & 1:
            result = add(result, point)
        point = add(point, point)
        k >>= 1
    return result


def ecdsa_p256_verify(public, message, signature):
    """FIPS 186-4 ECDSA verification with SHA-256; `signature` is r || s."""
    if len(signature) != 64 or not on_curve(public):
        return False
    r = int.from_bytes(signature[:32], "big")
    s = int.from_bytes(signature[32:], "big")
    if not (1 <= r < N and 1 <= s < N):
        return False
    e = int.from_bytes(hashlib.sha256(message).digest(), "big")
    w = pow(s, -1, N)
    point = add(multiply(e * w % N, G), multiply(r * w % N, public))
    return point is not None and point[0] % N == r


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# ---------------------------------------------------------------- HTTP


class Refused(Exception):
    """The API answered with an error envelope."""

    def __init__(self, status, body):
        super().__init__(f"HTTP {status}: {body}")
        self.status, self.body = status, body


class Api:
    def __init__(self, url, key):
        self.url, self.key = url.rstrip("/"), key

    def request(self, method, path, body=None, headers=None, timeout=30):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.key)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            req.add_header(name, value)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                text = resp.read().decode()
                return resp.status, dict(resp.headers), (json.loads(text) if text else None)
        except urllib.error.HTTPError as err:
            if err.code == 304:
                return 304, dict(err.headers), None
            text = err.read().decode()
            raise Refused(err.code, json.loads(text) if text.startswith("{") else text) from None

    def events(self, path, deadline):
        """Yields each `data:` of an event stream (JSON) until it ends or
        `deadline` (a time.time()) passes. A socket timeout is per read, and
        the server's keepalives would keep resetting it: a timer closes the
        stream at the deadline instead, and the generator simply ends."""
        req = urllib.request.Request(self.url + path)
        req.add_header("Authorization", "Bearer " + self.key)
        req.add_header("Accept", "text/event-stream")
        remaining = deadline - time.time()
        if remaining <= 0:
            return
        with urllib.request.urlopen(req, timeout=remaining) as resp:
            closer = threading.Timer(max(0.0, deadline - time.time()), resp.close)
            closer.daemon = True
            closer.start()
            data = []
            try:
                for raw in resp:
                    line = raw.decode().rstrip("\r\n")
                    if line.startswith("data:"):
                        data.append(line[5:].lstrip())
                    elif line == "" and data:
                        yield json.loads("".join(data))
                        data = []
            except (OSError, ValueError):
                if time.time() < deadline:
                    raise
            finally:
                closer.cancel()


def log(message):
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the agent


def wait_while(api, proposal, still, deadline):
    """The proposal once `still(proposal)` is false: by SSE, else long-poll."""
    pid = proposal["id"]
    if not still(proposal):
        return proposal
    try:
        for update in api.events(f"/api/v1/proposals/{pid}/events", deadline):
            proposal = update
            if not still(proposal):
                return proposal
        if time.time() >= deadline:
            return proposal
    except (OSError, urllib.error.URLError, ValueError) as err:
        log(f"event stream unavailable ({err}); long-polling instead")
    etag = None
    while still(proposal) and deadline - time.time() >= 1:
        wait = int(min(25, deadline - time.time()))
        status, headers, body = api.request(
            "GET", f"/api/v1/proposals/{pid}?wait={wait}", headers={"If-None-Match": etag} if etag else None,
            timeout=wait + 15)
        if status == 200:
            proposal, etag = body, headers.get("ETag") or headers.get("Etag")
    return proposal


def cancel(api, proposal):
    """Withdraws the proposal (pending or approved); its status after."""
    try:
        _, _, proposal = api.request("POST", f"/api/v1/proposals/{proposal['id']}/cancel")
    except Refused as err:
        # Decided meanwhile (rejected, expired…): read what it is now.
        log(f"cancel refused ({err}); reading its status")
        _, _, proposal = api.request("GET", f"/api/v1/proposals/{proposal['id']}")
    return proposal


def jcs(value):
    """RFC 8785 for the canonical request's values (strings, integers, nulls, objects)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def verify_token(api, proposal, asked, jwks_url=None):
    """Checks the approval token against the server's published keys and the
    request this agent asked for. Raises ValueError on any mismatch."""
    token = proposal.get("approval_token")
    if not token:
        raise ValueError("an approved proposal carries no approval token")
    head_b64, claims_b64, sig_b64 = token.split(".")
    header, claims = json.loads(b64url(head_b64)), json.loads(b64url(claims_b64))
    if header.get("alg") != "ES256" or header.get("typ") != "countersign-approval+jwt":
        raise ValueError(f"unexpected token header {header}")
    if jwks_url:
        with urllib.request.urlopen(jwks_url, timeout=30) as resp:
            jwks = json.loads(resp.read().decode())
    else:
        _, _, jwks = api.request("GET", "/.well-known/jwks.json")
    keys = [k for k in jwks.get("keys", []) if k.get("kid") == header.get("kid")]
    if len(keys) != 1 or keys[0].get("kty") != "EC" or keys[0].get("crv") != "P-256":
        raise ValueError(f"no published P-256 key {header.get('kid')!r}")
    public = (int.from_bytes(b64url(keys[0]["x"]), "big"), int.from_bytes(b64url(keys[0]["y"]), "big"))
    if not ecdsa_p256_verify(public, f"{head_b64}.{claims_b64}".encode(), b64url(sig_b64)):
        raise ValueError("the approval token's signature does not verify")
    canonical = proposal["canonical_request"]
    recomputed = "sha256:" + hashlib.sha256(jcs(canonical)).hexdigest()
    if claims.get("aud") != "countersign:commit" or claims.get("pid") != proposal["id"]:
        raise ValueError("the token is not a commit token for this proposal")
    if not (claims.get("rh") == proposal["request_hash"] == recomputed):
        raise ValueError("the token is not bound to this request")
    if claims.get("azp") != canonical["agent_id"] or claims.get("exp", 0) < time.time():
        raise ValueError("the token is not this agent's, or it expired")
    for field in ("amount_minor", "source_account"):
        if canonical[field] != asked[field]:
            raise ValueError(f"the approved {field} is not what was asked")
    if canonical["currency"] != asked["currency"].upper() or canonical["destination"]["id"] != asked["destination"]:
        raise ValueError("the approved payee or currency is not what was asked")
    return claims


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="http://localhost:8080")
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--amount-minor", type=int, required=True)
    parser.add_argument("--currency", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--destination", required=True)
    parser.add_argument("--purpose", default="vendor")
    parser.add_argument("--reference")
    parser.add_argument("--invoice")
    parser.add_argument("--timeout", type=float, default=900,
                        help="seconds from now by which the payment must be approved and committed")
    parser.add_argument("--settle-timeout", type=float, default=300,
                        help="once committed, how long to wait for the payment's final status")
    parser.add_argument("--jwks-url", help="verify tokens against these keys (default: the server's)")
    args = parser.parse_args()
    key = os.environ.get("COUNTERSIGN_AGENT_KEY")
    if not key:
        log("set COUNTERSIGN_AGENT_KEY")
        return 2
    api, deadline = Api(args.url, key), time.time() + args.timeout

    asked = {"run_id": args.run_id, "amount_minor": args.amount_minor, "currency": args.currency,
             "source_account": args.source, "destination": args.destination, "purpose_code": args.purpose}
    if args.reference:
        asked["reference"] = args.reference
    if args.invoice:
        asked["invoice_id"] = args.invoice
    try:
        # A retry of this run with the same key replays the answer instead of proposing twice.
        _, _, proposal = api.request("POST", "/api/v1/proposals", asked,
                                     headers={"Idempotency-Key": f"{args.run_id}-{uuid.uuid5(uuid.NAMESPACE_URL, json.dumps(asked, sort_keys=True))}"})
        log(f"proposed {proposal['id']}: {proposal['status']} (no money moves until commit)")
        proposal = wait_while(api, proposal, lambda p: p["status"] == "pending_approval", deadline)
        if proposal["status"] in ("pending_approval", "approved") and time.time() >= deadline:
            # Too late to pay: withdraw it, so nobody approves it for nothing.
            proposal = cancel(api, proposal)
            log(f"deadline passed before a commit: {proposal['status']}; nothing was committed")
            print(json.dumps({"id": proposal["id"], "status": proposal["status"]}))
            return 1 if proposal["status"] in ("rejected", "expired", "cancelled") else 2
        log(f"decision: {proposal['status']}")
        if proposal["status"] != "approved":
            print(json.dumps({"id": proposal["id"], "status": proposal["status"]}))
            return 1 if proposal["status"] in ("rejected", "expired", "cancelled") else 2
        claims = verify_token(api, proposal, asked, args.jwks_url)
        log(f"approval token verified: signed by the server, bound to this request, approvers {claims.get('approvers')}")
        if time.time() >= deadline:
            proposal = cancel(api, proposal)
            log(f"deadline passed while checking the token: {proposal['status']}; nothing was committed")
            print(json.dumps({"id": proposal["id"], "status": proposal["status"]}))
            return 1 if proposal["status"] == "cancelled" else 2
        _, _, proposal = api.request("POST", f"/api/v1/proposals/{proposal['id']}/commit",
                                     {"approval_token": proposal["approval_token"]})
        log(f"committed: {proposal['status']}")
        # `unknown` means the bank is being asked: wait, never commit again
        # blindly, and report the final status, not a passing one.
        settle_by = time.time() + args.settle_timeout
        proposal = wait_while(api, proposal, lambda p: p["status"] in ("executing", "unknown"), settle_by)
    except Refused as err:
        log(f"refused: {err}")
        return 2
    except ValueError as err:
        log(f"not committed: {err}")
        return 2
    operation = proposal.get("operation") or {}
    print(json.dumps({"id": proposal["id"], "status": proposal["status"],
                      "rail_reference": operation.get("rail_reference")}))
    return 0 if proposal["status"] == "succeeded" else (1 if proposal["status"] == "failed" else 2)


if __name__ == "__main__":
    sys.exit(main())
