"""Approval-token verification (SPEC section 5): ES256 over P-256, checked
against the server's published keys, and bound to one proposal.

The header never chooses anything: the algorithm must be exactly ES256 and
the key is found by ``kid`` among the published P-256 keys only.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from ._errors import TokenVerificationError
from ._models import Proposal, TokenClaims

__all__ = [
    "AUDIENCE",
    "TOKEN_TYPE",
    "b64url_decode",
    "b64url_encode",
    "jcs",
    "request_hash",
    "verify_approval_token",
]

AUDIENCE = "countersign:commit"
TOKEN_TYPE = "countersign-approval+jwt"
MAX_TOKEN_BYTES = 8 * 1024


def b64url_decode(text: str) -> bytes:
    """Unpadded base64url (RFC 7515), strictly: no padding, no other alphabet."""
    if "=" in text or any(c not in _B64URL for c in text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


_B64URL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


# ------------------------------------------------------------ RFC 8785 (JCS)


def _jcs_number(value: float) -> str:
    """ECMAScript's Number-to-string, as RFC 8785 requires."""
    if math.isnan(value) or math.isinf(value):
        raise ValueError("JCS has no NaN or infinity")
    if value == 0:
        return "0"
    if value < 0:
        return "-" + _jcs_number(-value)
    sign, digit_tuple, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    k, n = len(digits), exponent + len(digits)  # value = 0.digits * 10**n
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{mantissa}e{'+' if e > 0 else '-'}{abs(e)}"


def _jcs_into(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(_jcs_number(value))
    elif isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, Mapping):
        out.append("{")
        # Members sorted by their names' UTF-16 code units.
        for i, key in enumerate(sorted(value, key=lambda k: str(k).encode("utf-16-be"))):
            if not isinstance(key, str):
                raise ValueError("JSON object keys are strings")
            if i:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _jcs_into(value[key], out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _jcs_into(item, out)
        out.append("]")
    else:
        raise ValueError(f"not a JSON value: {type(value).__name__}")


def jcs(value: Any) -> bytes:
    """The RFC 8785 (JSON Canonicalization Scheme) serialization of ``value``."""
    out: list[str] = []
    _jcs_into(value, out)
    return "".join(out).encode("utf-8")


def request_hash(canonical_request: Mapping[str, Any]) -> str:
    """``sha256:`` + hex SHA-256 of the canonical request's JCS form, as the server computes it."""
    return "sha256:" + hashlib.sha256(jcs(canonical_request)).hexdigest()


# ------------------------------------------------------------ verification


def _fail(reason: str, message: str) -> TokenVerificationError:
    return TokenVerificationError(message, reason=reason)


def split_token(token: str) -> tuple[dict[str, Any], dict[str, Any], bytes, bytes]:
    """(header, claims, signing input, signature) of a compact JWS, or raises ``malformed``."""
    if not isinstance(token, str) or not token:
        raise _fail("malformed", "no approval token")
    if len(token) > MAX_TOKEN_BYTES:
        raise _fail("malformed", "the approval token is too long")
    parts = token.split(".")
    if len(parts) != 3:
        raise _fail("malformed", "the approval token is not a compact JWS")
    try:
        header = json.loads(b64url_decode(parts[0]))
        claims = json.loads(b64url_decode(parts[1]))
        signature = b64url_decode(parts[2])
    except (ValueError, binascii.Error, UnicodeDecodeError) as err:
        raise _fail("malformed", f"the approval token does not decode: {err}") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise _fail("malformed", "the approval token's header and claims must be JSON objects")
    return header, claims, f"{parts[0]}.{parts[1]}".encode("ascii"), signature


def find_key(jwks: Mapping[str, Any], kid: str) -> Mapping[str, Any] | None:
    """The one published key named ``kid`` (``None`` when absent or ambiguous)."""
    keys = jwks.get("keys") if isinstance(jwks, Mapping) else None
    found = [k for k in keys or [] if isinstance(k, Mapping) and k.get("kid") == kid]
    return found[0] if len(found) == 1 else None


def _public_key(jwk: Mapping[str, Any]) -> ec.EllipticCurvePublicKey:
    if jwk.get("kty") != "EC" or jwk.get("crv") != "P-256":
        raise _fail("unusable_key", f"the key {jwk.get('kid')!r} is not an EC P-256 key")
    if jwk.get("alg", "ES256") != "ES256" or jwk.get("use", "sig") != "sig":
        raise _fail("unusable_key", f"the key {jwk.get('kid')!r} is not an ES256 signing key")
    if "d" in jwk:
        raise _fail("unusable_key", "the key set publishes a private key")
    try:
        x, y = b64url_decode(str(jwk["x"])), b64url_decode(str(jwk["y"]))
        if len(x) != 32 or len(y) != 32:
            raise ValueError("coordinates must be 32 bytes")
        numbers = ec.EllipticCurvePublicNumbers(int.from_bytes(x, "big"), int.from_bytes(y, "big"), ec.SECP256R1())
        return numbers.public_key()  # refuses a point off the curve
    except (KeyError, ValueError, binascii.Error) as err:
        raise _fail("unusable_key", f"the key {jwk.get('kid')!r} is not a valid P-256 point: {err}") from None


def check_signature(jwk: Mapping[str, Any], signing_input: bytes, signature: bytes) -> None:
    key = _public_key(jwk)
    if len(signature) != 64:
        raise _fail("bad_signature", "an ES256 signature is 64 bytes (r || s)")
    r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
    try:
        key.verify(encode_dss_signature(r, s), signing_input, ec.ECDSA(hashes.SHA256()))
    except (InvalidSignature, ValueError):
        raise _fail("bad_signature", "the approval token's signature does not verify") from None


def _int_claim(claims: Mapping[str, Any], name: str) -> int:
    value = claims.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail("malformed", f"the claim {name!r} is missing or not a number")
    return int(value)


def _str_claim(claims: Mapping[str, Any], name: str) -> str:
    value = claims.get(name)
    if not isinstance(value, str):
        raise _fail("malformed", f"the claim {name!r} is missing or not a string")
    return value


def verify_approval_token(
    token: str,
    proposal: Proposal,
    jwks: Mapping[str, Any],
    *,
    now: float,
    leeway: float,
    issuer: str | None = None,
    expected: Mapping[str, Any] | None = None,
) -> TokenClaims:
    """Every check of a token for ``proposal``; the claims, or raises
    :class:`TokenVerificationError` naming the failed check.

    ``expected`` is the request the agent itself sent (propose's body): the
    approved canonical request must restate it.
    """
    header, claims, signing_input, signature = split_token(token)
    if header.get("alg") != "ES256":
        raise _fail("wrong_alg", f"the approval token's alg is {header.get('alg')!r}, not ES256")
    if header.get("typ") != TOKEN_TYPE:
        raise _fail("wrong_typ", f"the approval token's typ is {header.get('typ')!r}")
    if "crit" in header or "jku" in header or "jwk" in header or "x5u" in header:
        raise _fail("malformed", "the approval token's header names its own key or critical extensions")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise _fail("unknown_kid", "the approval token names no kid")
    jwk = find_key(jwks, kid)
    if jwk is None:
        raise _fail("unknown_kid", f"no published key has kid {kid!r}")
    check_signature(jwk, signing_input, signature)

    # Lifetime and audience.
    aud = claims.get("aud")
    if not (aud == AUDIENCE or (isinstance(aud, list) and aud == [AUDIENCE])):
        raise _fail("wrong_audience", f"the approval token's aud is {aud!r}")
    iss = _str_claim(claims, "iss")
    if issuer is not None and iss.rstrip("/") != issuer.rstrip("/"):
        raise _fail("wrong_issuer", f"the approval token's iss is {iss!r}, not {issuer!r}")
    exp, nbf, iat = _int_claim(claims, "exp"), _int_claim(claims, "nbf"), _int_claim(claims, "iat")
    if now > exp + leeway:
        raise _fail("expired", "the approval token has expired")
    if now < nbf - leeway:
        raise _fail("not_yet_valid", "the approval token is not valid yet")

    # Bound to this proposal, this request and this agent.
    pid, rh = _str_claim(claims, "pid"), _str_claim(claims, "rh")
    if pid != proposal.id:
        raise _fail("wrong_proposal", f"the approval token is for {pid}, not {proposal.id}")
    if rh != proposal.request_hash:
        raise _fail("request_hash_mismatch", "the approval token's request hash is not the proposal's")
    canonical = proposal.canonical_request
    try:
        recomputed = request_hash(canonical)
    except ValueError as err:
        raise _fail("request_hash_mismatch", f"the canonical request does not canonicalize: {err}") from None
    if recomputed != rh:
        raise _fail("request_hash_mismatch", "the canonical request does not hash to the approved request hash")
    azp, tid = _str_claim(claims, "azp"), _str_claim(claims, "tid")
    if azp != canonical.get("agent_id"):
        raise _fail("wrong_agent", f"the approval token is for agent {azp!r}, not {canonical.get('agent_id')!r}")
    if tid != canonical.get("tenant_id"):
        raise _fail("wrong_tenant", f"the approval token is for tenant {tid!r}")
    if expected is not None:
        _check_expected(proposal, expected)

    approvers = claims.get("approvers")
    amr = claims.get("amr")
    return TokenClaims(
        iss=iss,
        aud=AUDIENCE,
        sub=_str_claim(claims, "sub"),
        approvers=tuple(str(a) for a in approvers) if isinstance(approvers, list) else (),
        tid=tid,
        pid=pid,
        rh=rh,
        azp=azp,
        amr=tuple(str(a) for a in amr) if isinstance(amr, list) else ((amr,) if isinstance(amr, str) else ()),
        iat=iat,
        nbf=nbf,
        exp=exp,
        jti=_str_claim(claims, "jti"),
        kid=kid,
        raw=dict(claims),
    )


def _check_expected(proposal: Proposal, expected: Mapping[str, Any]) -> None:
    """The approved canonical request says what the agent asked for."""
    canonical = proposal.canonical_request
    destination = canonical.get("destination")
    approved: dict[str, Any] = {
        "amount_minor": canonical.get("amount_minor"),
        "currency": canonical.get("currency"),
        "source_account": canonical.get("source_account"),
        "destination": destination.get("id") if isinstance(destination, Mapping) else destination,
        "purpose_code": canonical.get("purpose_code"),
        "reference": canonical.get("reference"),
        "invoice_id": canonical.get("invoice_id"),
        "kind": canonical.get("kind"),
    }
    for name, asked in expected.items():
        if name == "run_id":
            if asked != proposal.run_id:
                raise _fail("request_mismatch", f"the proposal's run_id is {proposal.run_id!r}, not {asked!r}")
            continue
        if name not in approved:
            continue
        if name == "currency" and isinstance(asked, str):
            asked = asked.upper()
        if approved[name] != asked:
            raise _fail("request_mismatch", f"the approved {name} is {approved[name]!r}, not {asked!r} as asked")
