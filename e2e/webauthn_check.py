#!/usr/bin/env python3
"""An independent check of Countersign's passkey verifier.

The browser tests (e2e/tests/passkeys.spec.mjs) write every WebAuthn
ceremony Chromium's virtual authenticator made, with the challenge the
server derived and what the server made of it, to e2e/artifacts/webauthn.json.
This script verifies the same bytes with py_webauthn
(`verify_registration_response`, `verify_authentication_response`), a
library Countersign does not use, and fails unless both agree on every
ceremony: each the server accepted verifies here too, and each it refused
(a tampered challenge, a replayed assertion) is refused here too.

Assertions are checked in order with the signature counter of the passkey
as the last accepted assertion left it, as a relying party keeps it: a
replayed assertion repeats a counter and is refused for that.

Usage: webauthn_check.py e2e/artifacts/webauthn.json
"""

import base64
import json
import sys
from urllib.parse import urlparse

from webauthn import verify_authentication_response, verify_registration_response
from webauthn.helpers import parse_attestation_object


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def main(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        transcript = json.load(f)
    origin = transcript["origin"].rstrip("/")
    rp_id = urlparse(origin).hostname
    keys = {}  # credential id (base64url) -> [public key (COSE), sign count]
    counts = {"registration": 0, "assertion": 0, "refused": 0}
    failures = []
    for number, c in enumerate(transcript["ceremonies"], 1):
        counts[c["kind"]] += 1
        if c["server"] == "refused":
            counts["refused"] += 1
        expected = unb64(c["expected_challenge"])
        if c.get("rp_id") != rp_id:
            failures.append(f"#{number}: the server's rp_id {c.get('rp_id')!r} is not the origin's host {rp_id!r}")
        try:
            if c["kind"] == "registration":
                attestation = unb64(c["attestation_object"])
                credential_id = parse_attestation_object(attestation).auth_data.attested_credential_data.credential_id
                verified = verify_registration_response(
                    credential={
                        "id": b64(credential_id),
                        "rawId": b64(credential_id),
                        "type": "public-key",
                        "response": {
                            "clientDataJSON": c["client_data_json"],
                            "attestationObject": c["attestation_object"],
                        },
                    },
                    expected_challenge=expected,
                    expected_rp_id=rp_id,
                    expected_origin=origin,
                    require_user_verification=True,
                )
                ours = "accepted"
                if c["server"] == "accepted":
                    keys[b64(verified.credential_id)] = [verified.credential_public_key, verified.sign_count]
            else:
                key = keys.get(c["credential_id"].rstrip("="))
                if key is None:
                    raise ValueError("assertion by a passkey whose registration is not in the transcript")
                verified = verify_authentication_response(
                    credential={
                        "id": c["credential_id"],
                        "rawId": c["credential_id"],
                        "type": "public-key",
                        "response": {
                            "clientDataJSON": c["client_data_json"],
                            "authenticatorData": c["authenticator_data"],
                            "signature": c["signature"],
                        },
                    },
                    expected_challenge=expected,
                    expected_rp_id=rp_id,
                    expected_origin=origin,
                    credential_public_key=key[0],
                    credential_current_sign_count=key[1],
                    require_user_verification=True,
                )
                ours = "accepted"
                if c["server"] == "accepted":
                    key[1] = verified.new_sign_count
        except Exception as e:  # py_webauthn raises one exception type per check
            ours = "refused"
            why = f"{type(e).__name__}: {e}"
        else:
            why = ""
        verdict = "agree" if ours == c["server"] else "DISAGREE"
        print(f"#{number} {c['kind']} ({c.get('what', 'new passkey')}): server {c['server']}, py_webauthn {ours} {why}".rstrip() + f" -> {verdict}")
        if ours != c["server"]:
            failures.append(f"#{number}: the server {c['server']} it, py_webauthn {ours} it {why}")
    print(f"{counts['registration']} registrations, {counts['assertion']} assertions, {counts['refused']} refused by the server")
    # The browser tests must have exercised both ceremonies and a refusal:
    # an empty or partial transcript proves nothing.
    if counts["registration"] < 1 or counts["assertion"] < 2 or counts["refused"] < 2:
        failures.append("the transcript is too thin: at least 1 registration, 2 assertions and 2 refusals were expected")
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "e2e/artifacts/webauthn.json"))
