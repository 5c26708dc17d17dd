#!/usr/bin/env python3
"""A Web Push service stand-in for the tests.

Independent of Countersign's code. It plays the browser vendor's push
service and the browser's keys: each subscription it hands out has a P-256
key pair and auth secret of its own (made with `cryptography`), and every
message posted to it is checked and decrypted with the packages other
servers use, not ours:

- the VAPID `Authorization` header is verified with `py_vapid`
  (Vapid02.verify: the ES256 signature under the key `k` it names), and its
  claims checked here: `aud` is this service's origin, `exp` in the future
  and at most 24 hours away, `sub` a mailto: or https: URL;
- the body is decrypted with `http_ece` (aes128gcm, RFC 8291/8188) using the
  subscription's private key and auth secret;
- `Content-Encoding: aes128gcm` and a `TTL` header are required.

A message that fails any check is answered 400 and recorded with its
"error". Subscriptions made with ?gone=1 answer 410, as an expired one does.

    push_service.py            prints "listening on PORT" once ready

    POST /subscriptions[?gone=1]  -> {"endpoint", "keys": {"p256dh", "auth"}}
    POST /push/<id>               the push service's endpoint (201)
    GET  /messages                -> every record so far, oldest first
"""

import base64
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs

import http_ece
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from py_vapid import Vapid02

LOCK = threading.Lock()
SUBSCRIPTIONS = {}
RECORDS = []


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def claims_of(jwt):
    return json.loads(unb64url(jwt.split(".")[1]))


def check(headers, body, origin, sub):
    """The decrypted payload and what was seen, or raises with why."""
    auth = headers.get("Authorization", "")
    if headers.get("Content-Encoding") != "aes128gcm":
        raise ValueError("Content-Encoding is not aes128gcm")
    ttl = headers.get("TTL")
    if ttl is None or not ttl.isdigit():
        raise ValueError("no TTL header")
    if not Vapid02.verify(auth):
        raise ValueError("the VAPID signature does not verify")
    params = dict(p.split("=", 1) for p in auth.split(" ", 1)[1].split(","))
    claims = claims_of(params["t"])
    now = time.time()
    if claims.get("aud") != origin:
        raise ValueError(f"aud {claims.get('aud')!r} is not {origin!r}")
    if not (now < claims.get("exp", 0) <= now + 24 * 3600):
        raise ValueError("exp is not within the next 24 hours")
    if not str(claims.get("sub", "")).startswith(("mailto:", "https://")):
        raise ValueError("sub is not a mailto: or https: URL")
    plain = http_ece.decrypt(body, private_key=sub["key"], auth_secret=sub["auth"], version="aes128gcm")
    return {
        "payload": json.loads(plain),
        "ttl": int(ttl),
        "urgency": headers.get("Urgency"),
        "vapid": {"aud": claims["aud"], "exp": claims["exp"], "sub": claims["sub"], "k": params["k"]},
    }


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body=None):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def origin(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def do_GET(self):
        if self.path == "/messages":
            with LOCK:
                return self.answer(200, list(RECORDS))
        self.answer(404)

    def do_POST(self):
        url = urlparse(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if url.path == "/subscriptions":
            key = ec.generate_private_key(ec.SECP256R1())
            public = key.public_key().public_bytes(
                serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
            )
            sid = b64url(os.urandom(9))
            gone = parse_qs(url.query).get("gone") == ["1"]
            with LOCK:
                SUBSCRIPTIONS[sid] = {"key": key, "auth": os.urandom(16), "gone": gone}
                auth = SUBSCRIPTIONS[sid]["auth"]
            return self.answer(
                201,
                {"endpoint": f"{self.origin()}/push/{sid}", "keys": {"p256dh": b64url(public), "auth": b64url(auth)}},
            )
        if url.path.startswith("/push/"):
            sid = url.path[len("/push/"):]
            with LOCK:
                sub = SUBSCRIPTIONS.get(sid)
            if sub is None:
                return self.answer(404)
            record = {"subscription": sid, "received_at": time.time()}
            if sub["gone"]:
                record["gone"] = True
                with LOCK:
                    RECORDS.append(record)
                return self.answer(410)
            try:
                record.update(check(self.headers, body, self.origin(), sub))
                status = 201
            except Exception as e:  # every refusal is recorded for the test
                record["error"] = f"{type(e).__name__}: {e}"
                status = 400
            with LOCK:
                RECORDS.append(record)
            return self.answer(status)
        self.answer(404)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"listening on {server.server_address[1]}", flush=True)
server.serve_forever()
