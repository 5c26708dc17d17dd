"""verify_token(): a genuine token passes; every kind of forgery or mismatch is refused."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from countersign import Client, Proposal, TokenVerificationError
from countersign._tokens import b64url_decode, b64url_encode
from support import Env, FakeJwks, b64json, fresh_key, run_id, sign


def parts(token: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    h, c, s = token.split(".")
    return json.loads(b64url_decode(h)), json.loads(b64url_decode(c)), s


@pytest.fixture(scope="module")
def approved(env: Env) -> Iterator[Proposal]:
    """One proposal approved by the harness, with its genuine token (withdrawn afterwards)."""
    with Client(env.url, env.key) as client:
        p = client.propose(**env.request(run_id("approve"), 777))
        p = client.wait(p, deadline=20)
        assert p.status == "approved" and p.approval_token
        yield p
        client.cancel(p)


def refused(client: Client, token: str, proposal: Proposal, **kw: Any) -> str:
    with pytest.raises(TokenVerificationError) as raised:
        client.verify_token(token, proposal, **kw)
    assert raised.value.code == "token_verification_failed"
    return str(raised.value.reason)


def test_the_genuine_token_verifies(client: Client, approved: Proposal, env: Env) -> None:
    assert approved.approval_token
    claims = client.verify_token(approved.approval_token, approved,
                                 expected={"amount_minor": 777, "currency": "usd", "destination": env.destination,
                                           "source_account": env.source, "purpose_code": "vendor"})
    assert claims.pid == approved.id and claims.rh == approved.request_hash
    assert claims.aud == "countersign:commit" and claims.jti.startswith("tok_")
    assert claims.nbf <= time.time() + 30 < claims.exp + 60
    header, _, _ = parts(approved.approval_token)
    assert header["alg"] == "ES256" and claims.kid == header["kid"]
    assert approved.approval_expires_at is not None
    assert abs(approved.approval_expires_at.timestamp() - claims.exp) < 1


def test_a_tampered_token_is_refused(client: Client, approved: Proposal) -> None:
    token = approved.approval_token or ""
    h, c, s = token.split(".")
    claims = json.loads(b64url_decode(c))
    # Longer lifetime, same signature.
    forged_claims = f"{h}.{b64json({**claims, 'exp': claims['exp'] + 3600})}.{s}"
    assert refused(client, forged_claims, approved) == "bad_signature"
    # One bit of the signature flipped.
    sig = bytearray(b64url_decode(s))
    sig[10] ^= 1
    assert refused(client, f"{h}.{c}.{b64url_encode(bytes(sig))}", approved) == "bad_signature"
    assert refused(client, f"{h}.{c}", approved) == "malformed"


def test_a_token_for_another_proposal_is_refused(client: Client, approved: Proposal, env: Env) -> None:
    other = client.propose(**env.request(run_id("pending"), 778))
    try:
        assert refused(client, approved.approval_token or "", other) == "wrong_proposal"
    finally:
        client.cancel(other)


def test_the_token_binds_the_exact_request(client: Client, approved: Proposal, env: Env) -> None:
    token = approved.approval_token or ""
    # A proposal whose canonical request was altered (amount) no longer hashes to the approved hash...
    more = dict(approved.canonical_request, amount_minor=approved.canonical_request["amount_minor"] + 1)
    assert refused(client, token, dataclasses.replace(approved, canonical_request=more)) == "request_hash_mismatch"
    # ...nor does one whose stated hash was swapped with it.
    swapped = dataclasses.replace(approved, canonical_request=more,
                                  request_hash="sha256:" + hashlib.sha256(b"x").hexdigest())
    assert refused(client, token, swapped) == "request_hash_mismatch"
    # And the approved request must be the one this agent asked for.
    assert refused(client, token, approved, expected={"amount_minor": 778}) == "request_mismatch"
    assert refused(client, token, approved, expected={"destination": "ba_somebodyelse01"}) == "request_mismatch"


@pytest.mark.parametrize("alg", ["HS256", "none", "ES384", "RS256", "es256"])
def test_an_algorithm_other_than_es256_is_refused(client: Client, approved: Proposal, alg: str) -> None:
    token = approved.approval_token or ""
    header, claims, _ = parts(token)
    forged_header = b64json({**header, "alg": alg})
    signing_input = f"{forged_header}.{b64json(claims)}"
    # HS256 "signed" with the public key as the secret: the classic key confusion.
    jwk = client.jwks()["keys"][0]
    mac = hmac.new(json.dumps(jwk).encode(), signing_input.encode(), hashlib.sha256).digest()
    signature = "" if alg == "none" else b64url_encode(mac)
    assert refused(client, f"{signing_input}.{signature}", approved) == "wrong_alg"


def test_an_unknown_kid_is_refused(make_client: Any, approved: Proposal, fake_jwks: FakeJwks) -> None:
    _, jwk = fresh_key("not-the-servers-kid")
    fake_jwks.document = {"keys": [jwk]}
    client: Client = make_client(jwks_url=fake_jwks.url)
    assert refused(client, approved.approval_token or "", approved) == "unknown_kid"
    assert fake_jwks.hits == 1, "the configured key set was read, and only once"
    # The server's own keys (fetched with another client) do verify it.
    assert make_client().verify_token(approved.approval_token or "", approved).pid == approved.id


def test_another_key_under_the_servers_kid_is_refused(
    make_client: Any, approved: Proposal, fake_jwks: FakeJwks
) -> None:
    header, _, _ = parts(approved.approval_token or "")
    _, jwk = fresh_key(header["kid"])
    fake_jwks.document = {"keys": [jwk]}
    client: Client = make_client(jwks_url=fake_jwks.url)
    assert refused(client, approved.approval_token or "", approved) == "bad_signature"


def test_tokens_signed_by_a_published_key_are_checked_claim_by_claim(
    make_client: Any, approved: Proposal, fake_jwks: FakeJwks
) -> None:
    """With a key of our own published, forged-but-signed tokens reach the claim checks."""
    key, jwk = fresh_key("test-key-1")
    fake_jwks.document = {"keys": [jwk]}
    client: Client = make_client(jwks_url=fake_jwks.url)
    header, claims, _ = parts(approved.approval_token or "")
    header = {**header, "kid": "test-key-1"}
    now = int(time.time())

    # A positive control: correctly signed and bound, it verifies.
    assert client.verify_token(sign(key, header, claims), approved).jti == claims["jti"]
    cases = {
        "expired": {**claims, "iat": now - 900, "nbf": now - 900, "exp": now - 120},
        "not_yet_valid": {**claims, "iat": now + 600, "nbf": now + 600, "exp": now + 900},
        "wrong_audience": {**claims, "aud": "countersign:something-else"},
        "wrong_proposal": {**claims, "pid": "prop_someotherproposal000"},
        "request_hash_mismatch": {**claims, "rh": "sha256:" + "0" * 64},
        "wrong_agent": {**claims, "azp": "another-agent"},
        "wrong_tenant": {**claims, "tid": "globex"},
    }
    for reason, forged in cases.items():
        assert refused(client, sign(key, header, forged), approved) == reason, reason
    assert refused(client, sign(key, {**header, "typ": "JWT"}, claims), approved) == "wrong_typ"
    # A configured issuer must match `iss`.
    strict: Client = make_client(jwks_url=fake_jwks.url, issuer="https://not-this-console.example")
    assert refused(strict, sign(key, header, claims), approved) == "wrong_issuer"
    assert make_client(jwks_url=fake_jwks.url, issuer=claims["iss"]).verify_token(
        sign(key, header, claims), approved
    ).iss == claims["iss"]
