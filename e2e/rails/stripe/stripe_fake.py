#!/usr/bin/env python3
"""A stateful fake of Stripe's Transfers and Payouts API, checked against Stripe's
own OpenAPI description (``openapi-excerpt.json`` beside this file, an excerpt of
stripe/openapi's ``openapi/spec3.json``; see SOURCE.md).

    python3 stripe_fake.py --url-file PATH [--spec openapi-excerpt.json]
        [--fixtures fixtures-excerpt.json] [--listen 127.0.0.1:0]
        [--settle-after-ms 0]

Binds (port 0 = a free port), writes ``http://127.0.0.1:PORT`` to PATH
atomically once it serves, runs until killed. One log line per request on
stderr (method, path, status; never the Authorization header).

Standard library only (Python 3.11).

What is checked against the excerpt, on every request:

* the route and method exist in the excerpt's ``paths``;
* every parameter (form body of a POST, query of a GET; bracket notation
  ``metadata[k]=v``, ``created[gte]=N``, ``expand[]=x`` decoded) is declared by
  the operation (else 400 ``parameter_unknown``), required ones are present
  (``parameter_missing``), values have the declared type / enum / maxLength
  (``parameter_invalid_integer``, ``parameter_invalid_empty``, ...);
* every answer body (objects, list objects and error envelopes) is validated
  against the operation's response schema before it is sent; a body that does
  not validate is a bug of the fake: it answers 500 and prints why on stderr.

State: connected accounts (``acct_…``, registered through the controls), the
platform, balances per (account, currency) (unset = 1,000,000,000 minor
units), transfers, reversals and payouts, each owned by the account that made
it (``Stripe-Account`` header, the platform when absent); a request sees only
its account's objects. Idempotency keys are per account, kept 24 h (the fake's
clock), compared on method + path + parameters. Error codes and the reasons for
them: SOURCE.md.

Controls (JSON bodies, no auth; the shapes of Countersign's rail simulator):

* ``GET /_sim/health`` → ``{"ok": true}``
* ``GET|POST /_sim/accounts`` — ``{"id": "acct_…" | "platform", "closed": bool,
  "external_accounts": ["ba_…", "card_…"]}`` registers or updates an account
  (a closed account cannot receive transfers).
* ``GET|POST /_sim/balances`` — ``{"account": "platform" | "acct_…",
  "currency": "usd", "amount": N}`` sets a balance.
* ``GET|POST|DELETE /_sim/faults`` — ``{"mode": "drop_after_accept" | "delay" |
  "error_500" | "garbage", "count": N, "delay_ms": N, "on": "any" | "transfers"
  | "reversals" | "payouts"}``: the next N fresh (not replayed, validated)
  creations misbehave. drop_after_accept creates the object and stores the
  idempotent result, then closes the connection without a byte (after
  delay_ms); delay creates the object, holds the key in progress for delay_ms,
  then answers; error_500 creates nothing, stores nothing, answers 500 with an
  HTML body; garbage creates the object, stores the real answer under the key
  and sends 200 with a body that is not JSON.
* ``GET /_sim/calls`` → ``{"POST /v1/transfers": 2, ...}`` (route templates).
* ``GET /_sim/objects`` → every transfer, reversal and payout, oldest first
  (``accounts`` maps each id to its owner).
* ``GET /_sim/requests`` → the last 200 ``/v1`` requests: method, path, the
  headers Stripe-Version, Stripe-Account, Idempotency-Key, Content-Type (never
  Authorization), the decoded parameters and the status.
* ``POST /_sim/payouts/{id}/fail`` — ``{"failure_code": "account_closed"}``
  (Stripe's payout failure codes) marks a payout failed and refunds it.
* ``GET|POST /_sim/clock`` — ``{"advance_secs": N}`` moves the fake's clock
  (``created``, payout settlement, idempotency-key expiry).
"""

from __future__ import annotations

import argparse
import base64
import copy
import hashlib
import json
import os
import re
import secrets
import string
import sys
import threading
import time
import traceback
import urllib.parse
from collections import OrderedDict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SPEC = os.path.join(HERE, "openapi-excerpt.json")
DEFAULT_FIXTURES = os.path.join(HERE, "fixtures-excerpt.json")

DEFAULT_BALANCE = 1_000_000_000
IDEMPOTENCY_TTL_S = 24 * 3600
IDEMPOTENCY_KEY_MAX = 255
MAX_BODY = 1 << 20
REQUEST_LOG = 200
PLATFORM = "platform"
INT64_MAX = (1 << 63) - 1

ALNUM = string.ascii_letters + string.digits
VERSION_RE = re.compile(r"\d{4}-\d{2}-\d{2}(\.[a-z_]+)?")

# Stripe's payout failure codes (https://stripe.com/docs/api#payout_failures).
PAYOUT_FAILURES = {
    "account_closed": "The bank account has been closed.",
    "account_frozen": "The bank account has been frozen.",
    "bank_account_restricted": "The bank account has restrictions on either the type, or the number, of payouts allowed.",
    "bank_ownership_changed": "The destination bank account is no longer valid because its branch has changed ownership.",
    "could_not_process": "The bank could not process this payout.",
    "debit_not_authorized": "Debit transactions are not approved on the bank account.",
    "declined": "The bank has declined this transfer.",
    "insufficient_funds": "Your Stripe account has insufficient funds to cover the payout.",
    "invalid_account_number": "The routing number seems correct, but the account number is invalid.",
    "incorrect_account_holder_name": "Your bank notified us that the bank account holder name on file is incorrect.",
    "invalid_currency": "The bank was unable to process this payout because of its currency.",
    "no_account": "The bank account details on file are probably incorrect. "
                  "No bank account could be located with those details.",
    "unsupported_card": "The bank no longer supports payouts to this card.",
}

FAULT_MODES = ("drop_after_accept", "delay", "error_500", "garbage")
FAULT_TARGETS = ("any", "transfers", "reversals", "payouts")

CREATION_OPS = {
    "PostTransfers": "transfers",
    "PostTransfersIdReversals": "reversals",
    "PostPayouts": "payouts",
}

MISSING_KEY_MESSAGE = (
    "You did not provide an API key. You need to provide your API key in the Authorization header, "
    "using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication "
    "for details, or we can help at https://support.stripe.com/."
)
INSUFFICIENT_FUNDS_MESSAGE = (
    "Insufficient funds in Stripe account. In test mode, you can add funds to your available balance "
    "(bypassing your pending balance) by creating a charge with 4000 0000 0000 0077 as the card number. "
    "You can use the /v1/balance endpoint to view your Stripe balance (for more details, see stripe.com/docs/api#balance)."
)


def new_id(prefix: str, n: int = 24) -> str:
    return prefix + "".join(secrets.choice(ALNUM) for _ in range(n))


def eprint(*args) -> None:
    print(*args, file=sys.stderr, flush=True)


# --------------------------------------------------------------------- errors


class ApiError(Exception):
    """A Stripe error envelope: ``{"error": {"type", "code", "message", "param"}}``."""

    def __init__(self, status, kind, message, code=None, param=None, headers=None):
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.code = code
        self.param = param
        self.headers = headers or []

    def body(self) -> dict:
        err = OrderedDict()
        if self.code:
            err["code"] = self.code
            err["doc_url"] = "https://stripe.com/docs/error-codes/" + self.code.replace("_", "-")
        err["message"] = self.message
        if self.param is not None:
            err["param"] = self.param
        err["type"] = self.kind
        return {"error": err}


def invalid(message, code=None, param=None, status=400) -> ApiError:
    return ApiError(status, "invalid_request_error", message, code=code, param=param)


class ParamError(ApiError):
    """A request that failed validation: never stored under its idempotency key."""

    def __init__(self, code, param, message):
        super().__init__(400, "invalid_request_error", message, code=code, param=param)


def no_such(kind: str, ident: str, param="id", status=404) -> ApiError:
    return invalid(f"No such {kind}: '{ident}'", code="resource_missing", param=param, status=status)


# --------------------------------------------------------------------- the OpenAPI excerpt


class Spec:
    """The excerpt: routes, operations, $ref resolution and a JSON-schema validator
    for the subset the excerpt uses (type, nullable, enum, maxLength, pattern,
    properties, required, additionalProperties, items, anyOf, $ref)."""

    def __init__(self, doc: dict):
        self.doc = doc
        self.routes = []  # (method, regex, template, operation)
        for template, item in doc["paths"].items():
            rx = "^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template)) + "$"
            for method, op in item.items():
                if method in ("get", "post", "delete", "put", "patch"):
                    self.routes.append((method.upper(), re.compile(rx), template, op))
        self.version = doc.get("info", {}).get("version", "")

    # -- structure

    def deref(self, ref: str):
        if not ref.startswith("#/"):
            raise KeyError(f"external $ref not supported: {ref}")
        node = self.doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            node = node[part]
        return node

    def resolve(self, schema: dict) -> dict:
        seen = 0
        while isinstance(schema, dict) and "$ref" in schema:
            schema = self.deref(schema["$ref"])
            seen += 1
            if seen > 50:
                raise ValueError("$ref loop")
        return schema

    def unresolved_refs(self) -> list:
        bad = []

        def walk(o, where):
            if isinstance(o, dict):
                for k, v in o.items():
                    if k == "$ref":
                        try:
                            self.deref(v)
                        except (KeyError, TypeError):
                            bad.append(f"{where}: {v}")
                    else:
                        walk(v, f"{where}/{k}")
            elif isinstance(o, list):
                for i, x in enumerate(o):
                    walk(x, f"{where}/{i}")

        walk(self.doc, "#")
        return bad

    def match(self, method: str, path: str):
        for m, rx, template, op in self.routes:
            if m == method:
                hit = rx.match(path)
                if hit:
                    params = {k: urllib.parse.unquote(v) for k, v in hit.groupdict().items()}
                    return template, op, params
        return None

    @staticmethod
    def response_schema(op: dict, status: int):
        responses = op.get("responses", {})
        r = responses.get(str(status)) or responses.get("default")
        if not r:
            return None
        return r.get("content", {}).get("application/json", {}).get("schema")

    @staticmethod
    def form_schema(op: dict):
        body = op.get("requestBody", {}).get("content", {}).get("application/x-www-form-urlencoded", {})
        return body.get("schema", {"type": "object", "properties": {}, "additionalProperties": False})

    @staticmethod
    def query_schema(op: dict):
        props, required = {}, []
        for p in op.get("parameters", []):
            if p.get("in") == "query":
                props[p["name"]] = p.get("schema", {})
                if p.get("required"):
                    required.append(p["name"])
        return {"type": "object", "properties": props, "required": required, "additionalProperties": False}

    # -- validation of JSON values (responses)

    def validate(self, schema, value, where="$", strict=True):
        """Returns None, or a string naming the first violation. ``strict``: an
        object schema that declares ``properties`` and says nothing of
        ``additionalProperties`` admits no other property (catches a fake that
        invents fields Stripe's object does not have)."""
        schema = self.resolve(schema)
        if not isinstance(schema, dict):
            return None
        if value is None:
            if schema.get("nullable"):
                return None
            if "anyOf" in schema:
                for sub in schema["anyOf"]:
                    if self.validate(sub, None, where, strict) is None:
                        return None
            if not schema.get("type") and "anyOf" not in schema and "enum" not in schema:
                return None
            return f"{where}: null is not allowed"
        if "anyOf" in schema:
            errs = []
            for sub in schema["anyOf"]:
                e = self.validate(sub, value, where, strict)
                if e is None:
                    break
                errs.append(e)
            else:
                return f"{where}: matches no anyOf branch ({' | '.join(errs)})"
        t = schema.get("type")
        if t is not None:
            ok = {
                "string": lambda v: isinstance(v, str),
                "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
                "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
                "boolean": lambda v: isinstance(v, bool),
                "object": lambda v: isinstance(v, dict),
                "array": lambda v: isinstance(v, list),
            }.get(t, lambda v: True)(value)
            if not ok:
                return f"{where}: expected {t}, got {type(value).__name__} {json.dumps(value)[:80]}"
        if "enum" in schema and value not in schema["enum"]:
            return f"{where}: {json.dumps(value)[:80]} is not one of {schema['enum']}"
        if isinstance(value, str):
            if "maxLength" in schema and len(value) > schema["maxLength"]:
                return f"{where}: longer than {schema['maxLength']} characters"
            if "pattern" in schema and not re.search(schema["pattern"], value):
                return f"{where}: {value!r} does not match {schema['pattern']}"
        if isinstance(value, dict):
            props = schema.get("properties")
            for r in schema.get("required", []):
                if r not in value:
                    return f"{where}: required property {r!r} is missing"
            ap = schema.get("additionalProperties")
            for k, v in value.items():
                if props is not None and k in props:
                    e = self.validate(props[k], v, f"{where}.{k}", strict)
                elif ap is False:
                    e = f"{where}: property {k!r} is not allowed"
                elif isinstance(ap, dict):
                    e = self.validate(ap, v, f"{where}.{k}", strict)
                elif strict and props is not None:
                    e = f"{where}: property {k!r} is not in the schema"
                else:
                    e = None
                if e:
                    return e
        if isinstance(value, list) and "items" in schema:
            for i, x in enumerate(value):
                e = self.validate(schema["items"], x, f"{where}[{i}]", strict)
                if e:
                    return e
        return None

    # -- coercion of decoded form / query parameters (requests)

    def coerce(self, schema, node, name, in_props=True):
        schema = self.resolve(schema)
        if "anyOf" in schema:
            first = None
            for sub in schema["anyOf"]:
                b = self.resolve(sub)
                if self._kind_fits(b, node):
                    try:
                        return self.coerce(b, node, name, in_props)
                    except ParamError as e:
                        first = first or e
            if first:
                raise first
            raise ParamError(None, name, f"Invalid value for {name}.")
        t = schema.get("type")
        if t == "object":
            if not isinstance(node, dict):
                raise ParamError(None, name, f"Invalid object: {name} must be sent as {name}[key]=value.")
            return self.coerce_object(schema, node, name)
        if t == "array":
            items = self._as_list(node, name)
            out = []
            for i, x in enumerate(items):
                if x == "":
                    continue
                out.append(self.coerce(schema.get("items", {}), x, f"{name}[{i}]", in_props))
            return out
        if not isinstance(node, str):
            raise ParamError(None, name, f"Invalid {t or 'value'}: {name} must be a single value, not a hash or an array.")
        if t == "integer":
            if not re.fullmatch(r"-?[0-9]+", node) or abs(int(node)) > INT64_MAX:
                raise ParamError("parameter_invalid_integer", name, f"Invalid integer: {node}")
            return int(node)
        if t == "number":
            try:
                return float(node)
            except ValueError:
                raise ParamError(None, name, f"Invalid decimal: {node}")
        if t == "boolean":
            if node not in ("true", "false"):
                raise ParamError(None, name, f"Invalid boolean: {node}")
            return node == "true"
        # string (or untyped)
        if in_props and node.strip() == "":
            raise ParamError(
                "parameter_invalid_string_blank", name,
                f"Invalid {name}: the value only contains whitespace. Send a value with at least one non-whitespace character.")
        if "enum" in schema and node not in schema["enum"]:
            raise ParamError(None, name, f"Invalid {name}: must be one of {', '.join(map(str, schema['enum']))}")
        if "maxLength" in schema and len(node) > schema["maxLength"]:
            shown = node[:40] + ("..." if len(node) > 40 else "")
            raise ParamError(None, name, f"Invalid string: {shown}; must be at most {schema['maxLength']} characters")
        return node

    def coerce_object(self, schema, node: dict, name):
        props = schema.get("properties", {}) or {}
        ap = schema.get("additionalProperties")
        required = schema.get("required", []) or []

        def sub(k):
            return k if name is None else f"{name}[{k}]"

        for k in node:
            if k not in props and not isinstance(ap, dict):
                raise ParamError("parameter_unknown", sub(k), f"Received unknown parameter: {sub(k)}")
        out = {}
        for k, v in node.items():
            pn = sub(k)
            if v == "":
                if k in required:
                    raise ParamError(
                        "parameter_invalid_empty", pn,
                        f"You passed an empty string for '{pn}'. We assume empty values are an attempt to unset a "
                        f"parameter; however '{pn}' cannot be unset. You should remove '{pn}' from your request or "
                        f"supply a non-empty value.")
                continue  # an empty value unsets (Stripe's semantics); on a create it is simply absent
            if k in props:
                out[k] = self.coerce(props[k], v, pn, in_props=True)
            else:
                out[k] = self.coerce(ap, v, pn, in_props=False)
        for r in required:
            if r not in node:
                raise ParamError("parameter_missing", sub(r), f"Missing required param: {sub(r)}.")
        return out

    @staticmethod
    def _kind_fits(schema, node) -> bool:
        t = schema.get("type")
        if t == "object":
            return isinstance(node, dict)
        if t == "array":
            return isinstance(node, list) or (isinstance(node, dict) and all(k.isdigit() for k in node))
        return isinstance(node, str)

    @staticmethod
    def _as_list(node, name):
        if isinstance(node, list):
            return node
        if isinstance(node, dict) and all(k.isdigit() for k in node):
            return [node[k] for k in sorted(node, key=int)]
        if isinstance(node, str):
            raise ParamError(None, name, f"Invalid array: send {name}[]=value (or {name}[0]=value).")
        raise ParamError(None, name, f"Invalid array: {name}")


# --------------------------------------------------------------------- form decoding

KEY_RE = re.compile(r"^([^\[\]]+)((?:\[[^\[\]]*\])*)$")


def decode_pairs(raw: str):
    try:
        return urllib.parse.parse_qsl(raw, keep_blank_values=True, strict_parsing=False,
                                      errors="strict", max_num_fields=2000)
    except (UnicodeDecodeError, ValueError) as e:
        raise ParamError(None, None, f"Invalid request: the parameters could not be decoded ({e}).")


def build_tree(pairs):
    """``metadata[k]=v`` → ``{"metadata": {"k": "v"}}``; ``expand[]=a`` → ``{"expand": ["a"]}``."""
    tree = OrderedDict()
    for key, value in pairs:
        m = KEY_RE.match(key)
        if not m:
            raise ParamError("parameter_unknown", key, f"Received unknown parameter: {key}")
        segs = [m.group(1)] + re.findall(r"\[([^\[\]]*)\]", m.group(2))
        cur = tree
        for i, seg in enumerate(segs[:-1]):
            nxt = segs[i + 1]
            if seg == "":
                raise ParamError(None, key, f"Invalid parameter name: {key} (nested arrays are not supported)")
            want = list if nxt == "" else OrderedDict
            existing = cur.get(seg)
            if existing is None:
                existing = want()
                cur[seg] = existing
            elif not isinstance(existing, want):
                raise ParamError(None, key, f"Invalid parameter {key}: it conflicts with another parameter of the same name.")
            if want is list:
                if i + 1 != len(segs) - 1:
                    raise ParamError(None, key, f"Invalid parameter name: {key} (nested arrays are not supported)")
                existing.append(value)
                break
            cur = existing
        else:
            last = segs[-1]
            if last in cur:
                raise ParamError(None, key, f"Invalid parameter {key}: received more than one value.")
            cur[last] = value
    return tree


# --------------------------------------------------------------------- state


class Resp:
    def __init__(self, status: int, body: bytes, content_type="application/json", headers=None,
                 drop=False, delay_s=0.0):
        self.status = status
        self.body = body
        self.content_type = content_type
        self.headers = list(headers or [])
        self.drop = drop
        self.delay_s = delay_s


def json_bytes(obj) -> bytes:
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


class KeyEntry:
    def __init__(self, endpoint, fingerprint, created_s):
        self.endpoint = endpoint
        self.fingerprint = fingerprint
        self.created_s = created_s
        self.in_progress = True
        self.status = None
        self.body = None
        self.content_type = None
        self.request_id = None


class Fake:
    def __init__(self, spec: Spec, fixtures: dict, settle_after_ms: int = 0):
        self.spec = spec
        self.fix = fixtures["resources"]
        self.settle_ms = max(0, int(settle_after_ms))
        self.lock = threading.RLock()
        self.clock_offset_ms = 0
        self.accounts = {PLATFORM: {"id": PLATFORM, "closed": False, "external_accounts": []}}
        self.balances = {}
        self.transfers = {}
        self.reversals = {}
        self.payouts = {}
        self.created = []  # (kind, id), oldest first
        self.seq = 0
        self.keys = {}
        self.fault = None
        self.calls = {}
        self.requests = deque(maxlen=REQUEST_LOG)

    # -- time, balances

    def now_ms(self) -> int:
        return int(time.time() * 1000) + self.clock_offset_ms

    def now_s(self) -> int:
        return self.now_ms() // 1000

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def balance(self, account, currency) -> int:
        return self.balances.get((account, currency), DEFAULT_BALANCE)

    def move(self, account, currency, delta):
        self.balances[(account, currency)] = self.balance(account, currency) + delta

    # -- rendering (every object starts from Stripe's fixture, fields replaced)

    def _from_fixture(self, name, fields: dict) -> dict:
        obj = copy.deepcopy(self.fix[name])
        unknown = set(fields) - set(obj)
        if unknown:
            raise AssertionError(f"fields {sorted(unknown)} are not in Stripe's {name} fixture")
        obj.update(fields)
        return obj

    def render_reversal(self, r) -> dict:
        return self._from_fixture("transfer_reversal", {
            "amount": r["amount"],
            "balance_transaction": r["balance_transaction"],
            "created": r["created"],
            "currency": r["currency"],
            "destination_payment_refund": r["destination_payment_refund"],
            "id": r["id"],
            "metadata": dict(r["metadata"]),
            "object": "transfer_reversal",
            "source_refund": None,
            "transfer": r["transfer"],
        })

    def render_transfer(self, t) -> dict:
        revs = sorted((self.reversals[i] for i in t["reversals"]), key=lambda r: -r["seq"])
        return self._from_fixture("transfer", {
            "amount": t["amount"],
            "amount_reversed": t["amount_reversed"],
            "balance_transaction": t["balance_transaction"],
            "created": t["created"],
            "currency": t["currency"],
            "description": t["description"],
            "destination": t["destination"],
            "destination_payment": t["destination_payment"],
            "id": t["id"],
            "livemode": False,
            "metadata": dict(t["metadata"]),
            "object": "transfer",
            "reversals": {
                "data": [self.render_reversal(r) for r in revs[:10]],
                "has_more": len(revs) > 10,
                "object": "list",
                "url": f"/v1/transfers/{t['id']}/reversals",
            },
            "reversed": t["amount_reversed"] >= t["amount"],
            "source_transaction": None,
            "source_type": t["source_type"],
            "transfer_group": t["transfer_group"],
        })

    def payout_status(self, p, fresh=False) -> str:
        if p["status"] == "pending" and not fresh and self.now_ms() >= p["created_ms"] + self.settle_ms:
            p["status"] = "paid"
        return p["status"]

    def render_payout(self, p, fresh=False) -> dict:
        return self._from_fixture("payout", {
            "amount": p["amount"],
            "arrival_date": p["arrival_date"],
            "automatic": False,
            "balance_transaction": p["balance_transaction"],
            "created": p["created"],
            "currency": p["currency"],
            "description": p["description"],
            "destination": p["destination"],
            "failure_balance_transaction": p["failure_balance_transaction"],
            "failure_code": p["failure_code"],
            "failure_message": p["failure_message"],
            "id": p["id"],
            "livemode": False,
            "metadata": dict(p["metadata"]),
            "method": p["method"],
            "object": "payout",
            "source_type": p["source_type"],
            "statement_descriptor": p["statement_descriptor"],
            "status": self.payout_status(p, fresh),
            "type": p["type"],
        })

    def render(self, kind, ident) -> dict:
        if kind == "transfer":
            return self.render_transfer(self.transfers[ident])
        if kind == "transfer_reversal":
            return self.render_reversal(self.reversals[ident])
        return self.render_payout(self.payouts[ident])

    # -- pagination

    def paginate(self, items, params, url, what):
        """``items``: the account's objects of that kind (dicts with ``seq`` and
        ``id``) after the filters, any order; answers a list object, newest first."""
        limit = params.get("limit", 10)
        if not 1 <= limit <= 100:
            raise ParamError("parameter_invalid_integer", "limit",
                             f"Invalid limit: must be between 1 and 100 (it was {limit}).")
        sa, eb = params.get("starting_after"), params.get("ending_before")
        if sa and eb:
            raise ParamError("parameters_exclusive", "ending_before",
                             "You may only specify one of these parameters: ending_before, starting_after.")
        items = sorted(items, key=lambda x: -x["seq"])
        cursor_pool = params.get("_cursor_pool", {})
        if sa or eb:
            cid = sa or eb
            cur = cursor_pool.get(cid)
            if cur is None:
                raise no_such(what, cid, param="starting_after" if sa else "ending_before", status=400)
            if sa:
                rest = [x for x in items if x["seq"] < cur["seq"]]
                page, more = rest[:limit], len(rest) > limit
            else:
                before = [x for x in items if x["seq"] > cur["seq"]]
                page, more = before[-limit:], len(before) > limit
        else:
            page, more = items[:limit], len(items) > limit
        return {"object": "list", "data": page, "has_more": more, "url": url}

    @staticmethod
    def created_filter(spec_value):
        if spec_value is None:
            return lambda c: True
        if isinstance(spec_value, int):
            return lambda c: c == spec_value
        ops = {"gt": lambda c, v: c > v, "gte": lambda c, v: c >= v, "lt": lambda c, v: c < v, "lte": lambda c, v: c <= v}
        return lambda c: all(ops[k](c, v) for k, v in spec_value.items())


# --------------------------------------------------------------------- the API


class Api:
    def __init__(self, fake: Fake):
        self.f = fake
        self.spec = fake.spec
        self.ops = {
            "GetTransfers": (None, self.list_transfers),
            "PostTransfers": (self.check_transfer, self.create_transfer),
            "GetTransfersTransfer": (None, self.get_transfer),
            "GetTransfersIdReversals": (None, self.list_reversals),
            "PostTransfersIdReversals": (self.check_reversal, self.create_reversal),
            "GetPayouts": (None, self.list_payouts),
            "PostPayouts": (self.check_payout, self.create_payout),
            "GetPayoutsPayout": (None, self.get_payout),
            "PostPayoutsPayoutCancel": (None, self.cancel_payout),
        }

    # -- the request pipeline

    def handle(self, method, raw_path, headers, body: bytes) -> Resp:
        rid = new_id("req_", 14)
        path, _, query = raw_path.partition("?")
        route = self.spec.match(method, path)
        rec = OrderedDict(
            request_id=rid, method=method, path=path,
            headers={h: headers.get(h) for h in ("Stripe-Version", "Stripe-Account", "Idempotency-Key", "Content-Type")
                     if headers.get(h) is not None},
            params=None, status=None)
        if route:
            with self.f.lock:
                name = f"{method} {route[0]}"
                self.f.calls[name] = self.f.calls.get(name, 0) + 1
        try:
            resp = self._handle(method, path, query, headers, body, route, rid, rec)
        except ApiError as e:
            resp = self.error_resp(e, route[1] if route else None, headers)
        except Exception:  # a bug of the fake: say so, loudly
            eprint("stripe-fake: internal error\n" + traceback.format_exc())
            resp = self.error_resp(ApiError(500, "api_error", "An internal error occurred in the Stripe fake."), None, headers)
        resp.headers.append(("Request-Id", rid))
        version = headers.get("Stripe-Version")
        resp.headers.append(("Stripe-Version", version if version and VERSION_RE.fullmatch(version) else self.spec.version))
        rec["status"] = resp.status if not resp.drop else "dropped"
        with self.f.lock:
            self.f.requests.append(rec)
        return resp

    def _handle(self, method, path, query, headers, body, route, rid, rec) -> Resp:
        self.authenticate(headers.get("Authorization"))
        version = headers.get("Stripe-Version")
        if version is not None and not VERSION_RE.fullmatch(version):
            raise invalid(f"Invalid Stripe API version: {version}", param="Stripe-Version")
        account = self.account_of(headers.get("Stripe-Account"))
        if route is None:
            raise ApiError(404, "invalid_request_error",
                           f"Unrecognized request URL ({method}: {path}). Please see https://stripe.com/docs or we can "
                           f"help at https://support.stripe.com/.")
        template, op, path_params = route
        for k, v in path_params.items():
            if len(v) > 5000:
                raise ParamError(None, k, f"Invalid {k}: must be at most 5000 characters")

        pairs = decode_pairs(query)
        if method == "POST":
            ctype = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
            if body and ctype != "application/x-www-form-urlencoded":
                raise invalid(f"Invalid request: unsupported Content-Type {ctype or '(none)'}. If error persists and you "
                              f"need assistance, please contact support@stripe.com.")
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                raise invalid("Invalid request: the body is not UTF-8.")
            pairs = pairs + decode_pairs(text)
        tree = build_tree(pairs)
        rec["params"] = tree

        key = headers.get("Idempotency-Key") if method == "POST" else None
        if key is not None and (key == "" or len(key) > IDEMPOTENCY_KEY_MAX):
            raise invalid(f"Idempotency-Key must be 1 to {IDEMPOTENCY_KEY_MAX} characters long (it was {len(key)}).",
                          param="Idempotency-Key")
        ctx = {"account": account, "path": path_params, "op": op, "method": method, "url_path": path}
        if key is None:
            return self.run(op, tree, ctx, rid, None)

        endpoint = f"{method} {path}"
        fingerprint = hashlib.sha256(json.dumps(sorted(pairs)).encode("utf-8")).hexdigest()
        scope = (account, key)
        with self.f.lock:
            now = self.f.now_s()
            for k in [k for k, e in self.f.keys.items() if e.created_s + IDEMPOTENCY_TTL_S <= now]:
                del self.f.keys[k]
            entry = self.f.keys.get(scope)
            if entry is not None:
                if entry.endpoint != endpoint:
                    raise ApiError(400, "idempotency_error",
                                   f"Keys for idempotent requests can only be used for the same endpoint they were "
                                   f"first used for ('{entry.endpoint}' vs '{endpoint}'). Try using a key other than "
                                   f"'{key}' if you meant to execute a different request.")
                if entry.fingerprint != fingerprint:
                    raise ApiError(400, "idempotency_error",
                                   f"Keys for idempotent requests can only be used with the same parameters they were "
                                   f"first used with. Try using a key other than '{key}' if you meant to execute a "
                                   f"different request.")
                if entry.in_progress:
                    raise ApiError(409, "idempotency_error",
                                   "There is currently another in-progress request using this idempotent key (that "
                                   "probably means you submitted twice, and the other request is still going "
                                   "through): " + key + ". Please try again later.",
                                   code="idempotency_key_in_use")
                return Resp(entry.status, entry.body, entry.content_type, headers=[
                    ("Idempotent-Replayed", "true"), ("Original-Request", entry.request_id), ("Idempotency-Key", key)])
            entry = KeyEntry(endpoint, fingerprint, now)
            self.f.keys[scope] = entry
        stored = False
        try:
            resp, store = self.run(op, tree, ctx, rid, (entry, scope))
            resp.headers.append(("Idempotency-Key", key))
            stored = store
            return resp
        finally:
            with self.f.lock:
                if stored and entry.body is not None:
                    entry.in_progress = False
                elif self.f.keys.get(scope) is entry:
                    del self.f.keys[scope]

    def run(self, op, tree, ctx, rid, keyed):
        """Validate, execute, render. Without a key answers a Resp; with one,
        (Resp, store?) where the result has been put in ``keyed[0]`` when it is
        stored (before a fault delays or drops the answer)."""
        op_id = op["operationId"]
        check, execute = self.ops[op_id]
        schema = self.spec.form_schema(op) if ctx["method"] == "POST" else self.spec.query_schema(op)
        params = self.spec.coerce_object(self.spec.resolve(schema), tree, None)
        if params.get("expand"):
            raise ParamError(None, "expand", "The Stripe fake does not expand objects; send no expand parameter.")
        if "metadata" in params:
            check_metadata(params["metadata"])
        if check:
            check(params, ctx)

        fault = None
        kind = CREATION_OPS.get(op_id)
        if kind:
            with self.f.lock:
                fault = self.take_fault(kind)
        if fault and fault["mode"] == "error_500":
            eprint(f"stripe-fake fault: error_500 on {op_id}")
            resp = Resp(500, b"<html><head><title>500 Internal Server Error</title></head><body><h1>Internal Server "
                             b"Error</h1></body></html>\n", "text/html; charset=utf-8")
            return (resp, False) if keyed else resp

        with self.f.lock:
            try:
                status, obj = execute(params, ctx)
                err = None
            except ParamError:
                raise
            except ApiError as e:
                err = e
            if err is None:
                resp = self.ok_resp(op, status, obj)
            else:
                resp = self.error_resp(err, op, {})
        store = resp.status < 500

        if fault and fault["mode"] == "delay":
            eprint(f"stripe-fake fault: delay {fault['delay_ms']} ms on {op_id}")
            time.sleep(fault["delay_ms"] / 1000.0)
        if keyed and store:
            entry, _ = keyed
            with self.f.lock:
                entry.status, entry.body, entry.content_type, entry.request_id = resp.status, resp.body, resp.content_type, rid
                entry.in_progress = False
        if fault and fault["mode"] == "drop_after_accept":
            eprint(f"stripe-fake fault: drop_after_accept on {op_id} (after {fault['delay_ms']} ms)")
            resp = Resp(resp.status, b"", drop=True, delay_s=fault["delay_ms"] / 1000.0)
        elif fault and fault["mode"] == "garbage":
            eprint(f"stripe-fake fault: garbage on {op_id}")
            resp = Resp(200, b"\x00\xffHTTP garbage <not json> {{\"id\": tr_", "application/json")
        return (resp, store) if keyed else resp

    def take_fault(self, kind):
        f = self.f.fault
        if not f or f["count"] <= 0 or f["on"] not in ("any", kind):
            return None
        f["count"] -= 1
        taken = dict(f)
        if f["count"] <= 0:
            self.f.fault = None
        return taken

    # -- auth, accounts

    def authenticate(self, auth):
        if not auth or not auth.strip():
            raise ApiError(401, "invalid_request_error", MISSING_KEY_MESSAGE,
                           headers=[("WWW-Authenticate", 'Basic realm="Stripe"')])
        scheme, _, cred = auth.strip().partition(" ")
        cred = cred.strip()
        if scheme.lower() == "basic":
            try:
                cred = base64.b64decode(cred, validate=True).decode("utf-8").split(":", 1)[0]
            except Exception:
                cred = ""
        elif scheme.lower() != "bearer":
            raise ApiError(401, "invalid_request_error",
                           "Invalid API Key provided: the Authorization header must use Bearer auth "
                           "(e.g. 'Authorization: Bearer YOUR_SECRET_KEY').",
                           headers=[("WWW-Authenticate", 'Basic realm="Stripe"')])
        if not re.fullmatch(r"sk_test_[A-Za-z0-9_]+", cred):
            masked = (cred[:8] + "*" * max(0, len(cred) - 12) + cred[-4:]) if len(cred) > 12 else "****"
            raise ApiError(401, "invalid_request_error", f"Invalid API Key provided: {masked}",
                           headers=[("WWW-Authenticate", 'Basic realm="Stripe"')])

    def account_of(self, header):
        if header is None:
            return PLATFORM
        with self.f.lock:
            known = header in self.f.accounts and header != PLATFORM
        if not re.fullmatch(r"acct_[A-Za-z0-9_]+", header) or not known:
            raise ApiError(403, "invalid_request_error",
                           f"The provided key does not have access to account '{header}' (or that account does not "
                           f"exist). Application access may have been revoked.",
                           code="account_invalid")
        return header

    # -- answers

    def ok_resp(self, op, status, obj) -> Resp:
        schema = self.spec.response_schema(op, status)
        problem = self.spec.validate(schema, obj) if schema else f"no response schema for status {status}"
        if problem:
            eprint(f"stripe-fake BUG: {op['operationId']} answer does not validate against the excerpt: {problem}\n"
                   f"{json.dumps(obj)[:2000]}")
            return self.error_resp(ApiError(500, "api_error",
                                            "The Stripe fake built an answer that does not match Stripe's OpenAPI "
                                            "description (see its stderr)."), None, {})
        return Resp(status, json_bytes(obj))

    def error_resp(self, err: ApiError, op, headers) -> Resp:
        body = err.body()
        schema = (self.spec.response_schema(op, err.status) if op else None) or {"$ref": "#/components/schemas/error"}
        problem = self.spec.validate(schema, body)
        if problem:
            eprint(f"stripe-fake BUG: error body does not validate: {problem}: {body}")
            body = {"error": {"message": "The Stripe fake built an invalid error body (see its stderr).", "type": "api_error"}}
            return Resp(500, json_bytes(body))
        return Resp(err.status, json_bytes(body), headers=err.headers)

    # -- transfers

    def check_transfer(self, p, ctx):
        if "amount" not in p:
            raise ParamError("parameter_missing", "amount", "Missing required param: amount.")
        if p["amount"] < 1:
            raise ParamError("parameter_invalid_integer", "amount", "This value must be greater than or equal to 1.")
        p["currency"] = check_currency(p["currency"])

    def create_transfer(self, p, ctx):
        f, src = self.f, ctx["account"]
        dest = p["destination"]
        acct = f.accounts.get(dest)
        if acct is None or dest == PLATFORM:
            raise no_such("destination", dest, param="destination", status=400)
        if acct["closed"]:
            raise invalid("Your destination account needs to have at least one of the following capabilities enabled: "
                          "transfers, crypto_transfers, legacy_payments",
                          code="insufficient_capabilities_for_transfer", param="destination")
        if "source_transaction" in p:
            raise no_such("charge", p["source_transaction"], param="source_transaction", status=400)
        amount, cur = p["amount"], p["currency"]
        if f.balance(src, cur) < amount:
            raise invalid(INSUFFICIENT_FUNDS_MESSAGE, code="balance_insufficient")
        f.move(src, cur, -amount)
        f.move(dest, cur, amount)
        t = {
            "id": new_id("tr_"), "seq": f.next_seq(), "owner": src, "amount": amount, "amount_reversed": 0,
            "currency": cur, "destination": dest, "description": p.get("description"),
            "metadata": dict(p.get("metadata", {})), "created": f.now_s(),
            "transfer_group": p.get("transfer_group"), "source_type": p.get("source_type", "card"),
            "balance_transaction": new_id("txn_"), "destination_payment": new_id("py_", 14), "reversals": [],
        }
        f.transfers[t["id"]] = t
        f.created.append(("transfer", t["id"]))
        return 200, f.render_transfer(t)

    def find_transfer(self, ident, ctx):
        t = self.f.transfers.get(ident)
        if t is None or t["owner"] != ctx["account"]:
            raise no_such("transfer", ident)
        return t

    def get_transfer(self, p, ctx):
        return 200, self.f.render_transfer(self.find_transfer(ctx["path"]["transfer"], ctx))

    def list_transfers(self, p, ctx):
        f, acct = self.f, ctx["account"]
        created = f.created_filter(p.get("created"))
        mine = {t["id"]: t for t in f.transfers.values() if t["owner"] == acct}
        rows = [t for t in mine.values()
                if created(t["created"])
                and ("transfer_group" not in p or t["transfer_group"] == p["transfer_group"])
                and ("destination" not in p or t["destination"] == p["destination"])]
        page = f.paginate(rows, dict(p, _cursor_pool=mine), "/v1/transfers", "transfer")
        page["data"] = [f.render_transfer(t) for t in page["data"]]
        return 200, page

    # -- reversals

    def check_reversal(self, p, ctx):
        if "amount" in p and p["amount"] < 1:
            raise ParamError("parameter_invalid_integer", "amount", "This value must be greater than or equal to 1.")

    def create_reversal(self, p, ctx):
        f = self.f
        t = self.find_transfer(ctx["path"]["id"], ctx)
        remaining = t["amount"] - t["amount_reversed"]
        if remaining <= 0:
            raise invalid(f"Transfer {t['id']} has already been reversed.", param="amount" if "amount" in p else None)
        amount = p.get("amount", remaining)
        if amount > remaining:
            raise invalid(f"You cannot reverse {amount} {t['currency']}: only {remaining} {t['currency']} of transfer "
                          f"{t['id']} has not been reversed.", code="amount_too_large", param="amount")
        if f.balance(t["destination"], t["currency"]) < amount:
            raise invalid(f"Insufficient funds in the destination account {t['destination']} to reverse {amount} "
                          f"{t['currency']}.", code="balance_insufficient")
        f.move(t["destination"], t["currency"], -amount)
        f.move(t["owner"], t["currency"], amount)
        r = {
            "id": new_id("trr_"), "seq": f.next_seq(), "owner": t["owner"], "amount": amount,
            "currency": t["currency"], "created": f.now_s(), "metadata": dict(p.get("metadata", {})),
            "transfer": t["id"], "balance_transaction": new_id("txn_"),
            "destination_payment_refund": new_id("pyr_"),
        }
        f.reversals[r["id"]] = r
        t["reversals"].append(r["id"])
        t["amount_reversed"] += amount
        f.created.append(("transfer_reversal", r["id"]))
        return 200, f.render_reversal(r)

    def list_reversals(self, p, ctx):
        f = self.f
        t = self.find_transfer(ctx["path"]["id"], ctx)
        mine = {i: f.reversals[i] for i in t["reversals"]}
        page = f.paginate(list(mine.values()), dict(p, _cursor_pool=mine), f"/v1/transfers/{t['id']}/reversals",
                          "transfer_reversal")
        page["data"] = [f.render_reversal(r) for r in page["data"]]
        return 200, page

    # -- payouts

    def check_payout(self, p, ctx):
        if p["amount"] < 1:
            raise ParamError("parameter_invalid_integer", "amount", "This value must be greater than or equal to 1.")
        p["currency"] = check_currency(p["currency"])

    def create_payout(self, p, ctx):
        f, acct = self.f, ctx["account"]
        externals = f.accounts[acct]["external_accounts"]
        dest = p.get("destination")
        if dest is None:
            if not externals:
                raise invalid(f"You have no external accounts in that currency ({p['currency']}).", param="destination")
            dest = externals[0]
        elif dest not in externals:
            raise no_such("external account", dest, param="destination", status=400)
        dtype = "card" if dest.startswith("card_") else "bank_account"
        method = p.get("method", "standard")
        if method == "instant" and dtype != "card":
            raise invalid("Instant payouts are only supported for payouts to debit cards.",
                          code="instant_payouts_unsupported", param="method")
        amount, cur = p["amount"], p["currency"]
        if f.balance(acct, cur) < amount:
            raise invalid(INSUFFICIENT_FUNDS_MESSAGE, code="balance_insufficient")
        f.move(acct, cur, -amount)
        now_ms = f.now_ms()
        po = {
            "id": new_id("po_"), "seq": f.next_seq(), "owner": acct, "amount": amount, "currency": cur,
            "created": now_ms // 1000, "created_ms": now_ms, "arrival_date": (now_ms + f.settle_ms) // 1000,
            "balance_transaction": new_id("txn_"), "description": p.get("description"), "destination": dest,
            "failure_balance_transaction": None, "failure_code": None, "failure_message": None,
            "metadata": dict(p.get("metadata", {})), "method": method,
            "source_type": p.get("source_type", "card"), "statement_descriptor": p.get("statement_descriptor"),
            "status": "pending", "type": dtype,
        }
        f.payouts[po["id"]] = po
        f.created.append(("payout", po["id"]))
        return 200, f.render_payout(po, fresh=True)

    def find_payout(self, ident, ctx):
        po = self.f.payouts.get(ident)
        if po is None or po["owner"] != ctx["account"]:
            raise no_such("payout", ident)
        return po

    def get_payout(self, p, ctx):
        return 200, self.f.render_payout(self.find_payout(ctx["path"]["payout"], ctx))

    def list_payouts(self, p, ctx):
        f, acct = self.f, ctx["account"]
        created = f.created_filter(p.get("created"))
        arrival = f.created_filter(p.get("arrival_date"))
        mine = {po["id"]: po for po in f.payouts.values() if po["owner"] == acct}
        rows = [po for po in mine.values()
                if created(po["created"]) and arrival(po["arrival_date"])
                and ("destination" not in p or po["destination"] == p["destination"])
                and ("status" not in p or f.payout_status(po) == p["status"])]
        page = f.paginate(rows, dict(p, _cursor_pool=mine), "/v1/payouts", "payout")
        page["data"] = [f.render_payout(po) for po in page["data"]]
        return 200, page

    def cancel_payout(self, p, ctx):
        f = self.f
        po = self.find_payout(ctx["path"]["payout"], ctx)
        status = f.payout_status(po)
        if status != "pending":
            raise invalid(f"Payouts can only be canceled while they are pending. Payout {po['id']} is {status}.",
                          param="payout")
        po["status"] = "canceled"
        po["failure_balance_transaction"] = new_id("txn_")
        f.move(po["owner"], po["currency"], po["amount"])
        return 200, f.render_payout(po)


def check_currency(cur: str) -> str:
    if not re.fullmatch(r"[A-Za-z]{3}", cur):
        raise ParamError(None, "currency", f"Invalid currency: {cur}. Stripe currently supports three-letter ISO "
                                           f"currency codes (https://stripe.com/docs/currencies).")
    return cur.lower()


def check_metadata(md: dict):
    if len(md) > 50:
        raise ParamError(None, "metadata", f"Metadata can have up to 50 keys, but you passed in {len(md)} keys.")
    for k, v in md.items():
        if len(k) > 40:
            raise ParamError(None, f"metadata[{k}]",
                             f"Metadata keys can have up to 40 characters, but you passed in a key that is {len(k)} "
                             f"characters long.")
        if len(v) > 500:
            raise ParamError(None, f"metadata[{k}]",
                             f"Metadata values can have up to 500 characters, but you passed in a value that is "
                             f"{len(v)} characters long.")


# --------------------------------------------------------------------- controls (/_sim/...)


class ControlError(Exception):
    def __init__(self, status, message, param=None):
        super().__init__(message)
        self.status, self.message, self.param = status, message, param


class Controls:
    """The same shapes as Countersign's own rail simulator (crates/rail-sim)."""

    def __init__(self, fake: Fake, api: Api):
        self.f = fake
        self.api = api

    def handle(self, method, raw_path, body: bytes) -> Resp:
        path = raw_path.partition("?")[0]
        try:
            status, obj = self.route(method, path, body)
        except ControlError as e:
            err = {"type": "invalid_request_error", "message": e.message}
            if e.param:
                err["param"] = e.param
            status, obj = e.status, {"error": err}
        resp = Resp(status, json_bytes(obj))
        resp.headers.append(("Request-Id", new_id("req_", 14)))
        return resp

    @staticmethod
    def body(raw: bytes) -> dict:
        if not raw.strip():
            return {}
        try:
            obj = json.loads(raw)
        except ValueError as e:
            raise ControlError(400, f"Invalid JSON body: {e}")
        if not isinstance(obj, dict):
            raise ControlError(400, "The JSON body must be an object.")
        return obj

    @staticmethod
    def only(obj, allowed):
        extra = sorted(set(obj) - set(allowed))
        if extra:
            raise ControlError(400, f"Unknown field(s): {', '.join(extra)}", param=extra[0])

    def route(self, method, path, raw):
        f = self.f
        if path == "/_sim/health" and method == "GET":
            return 200, {"ok": True}
        if path == "/_sim/accounts":
            if method == "GET":
                with f.lock:
                    return 200, {"data": [dict(a) for a in f.accounts.values()]}
            if method == "POST":
                return 200, self.post_account(self.body(raw))
        if path == "/_sim/balances":
            if method == "GET":
                with f.lock:
                    rows = [{"account": a, "currency": c, "amount": v} for (a, c), v in sorted(f.balances.items())]
                return 200, {"data": rows, "default": DEFAULT_BALANCE}
            if method == "POST":
                b = self.body(raw)
                self.only(b, ("account", "currency", "amount"))
                acct, cur, amount = b.get("account"), b.get("currency"), b.get("amount")
                if not isinstance(acct, str) or not (acct == PLATFORM or re.fullmatch(r"acct_[A-Za-z0-9_]+", acct)):
                    raise ControlError(400, "account must be \"platform\" or an acct_… id", "account")
                if not isinstance(cur, str) or not re.fullmatch(r"[A-Za-z]{3}", cur):
                    raise ControlError(400, "currency must be three letters", "currency")
                if not isinstance(amount, int) or isinstance(amount, bool):
                    raise ControlError(400, "amount must be an integer (minor units)", "amount")
                with f.lock:
                    f.balances[(acct, cur.lower())] = amount
                return 200, {"account": acct, "currency": cur.lower(), "amount": amount}
        if path == "/_sim/faults":
            if method == "GET":
                return 200, self.faults_json()
            if method == "DELETE":
                with f.lock:
                    f.fault = None
                return 200, self.faults_json()
            if method == "POST":
                b = self.body(raw)
                self.only(b, ("mode", "count", "delay_ms", "on"))
                mode, count, delay, on = b.get("mode"), b.get("count", 1), b.get("delay_ms", 0), b.get("on", "any")
                if mode not in FAULT_MODES:
                    raise ControlError(400, f"mode must be one of {', '.join(FAULT_MODES)}", "mode")
                if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                    raise ControlError(400, "count must be a non-negative integer", "count")
                if not isinstance(delay, int) or isinstance(delay, bool) or not 0 <= delay <= 600_000:
                    raise ControlError(400, "delay_ms must be an integer in 0..600000", "delay_ms")
                if on not in FAULT_TARGETS:
                    raise ControlError(400, f"on must be one of {', '.join(FAULT_TARGETS)}", "on")
                with f.lock:
                    f.fault = {"mode": mode, "count": count, "delay_ms": delay, "on": on} if count > 0 else None
                return 200, self.faults_json()
        if path == "/_sim/calls" and method == "GET":
            with f.lock:
                return 200, dict(sorted(f.calls.items()))
        if path == "/_sim/objects" and method == "GET":
            with f.lock:
                data = [f.render(kind, ident) for kind, ident in f.created]
                owners = {ident: self.owner(kind, ident) for kind, ident in f.created}
            return 200, {"object": "list", "data": data, "has_more": False, "url": "/_sim/objects", "accounts": owners}
        if path == "/_sim/requests" and method == "GET":
            with f.lock:
                return 200, {"data": list(f.requests)}
        if path == "/_sim/clock":
            if method == "GET":
                return 200, self.clock_json()
            if method == "POST":
                b = self.body(raw)
                self.only(b, ("advance_secs",))
                n = b.get("advance_secs")
                if not isinstance(n, int) or isinstance(n, bool):
                    raise ControlError(400, "advance_secs must be an integer", "advance_secs")
                with f.lock:
                    f.clock_offset_ms += n * 1000
                return 200, self.clock_json()
        m = re.fullmatch(r"/_sim/payouts/([^/]+)/fail", path)
        if m and method == "POST":
            return 200, self.fail_payout(urllib.parse.unquote(m.group(1)), self.body(raw))
        raise ControlError(404, f"Unknown control {method} {path}")

    def owner(self, kind, ident):
        f = self.f
        return {"transfer": f.transfers, "transfer_reversal": f.reversals, "payout": f.payouts}[kind][ident]["owner"]

    def faults_json(self):
        with self.f.lock:
            fl = self.f.fault
            if fl:
                return dict(fl)
        return {"mode": None, "count": 0, "delay_ms": 0, "on": None}

    def clock_json(self):
        return {"offset_secs": self.f.clock_offset_ms // 1000, "now": self.f.now_s()}

    def post_account(self, b):
        self.only(b, ("id", "closed", "external_accounts"))
        ident = b.get("id")
        if not isinstance(ident, str) or not (ident == PLATFORM or re.fullmatch(r"acct_[A-Za-z0-9_]+", ident)):
            raise ControlError(400, "id must be an acct_… id (or \"platform\" for the platform's external accounts)", "id")
        closed = b.get("closed")
        if closed is not None and not isinstance(closed, bool):
            raise ControlError(400, "closed must be a boolean", "closed")
        ext = b.get("external_accounts")
        if ext is not None:
            if not isinstance(ext, list) or not all(isinstance(x, str) and re.fullmatch(r"(ba|card)_[A-Za-z0-9_]+", x)
                                                    for x in ext):
                raise ControlError(400, "external_accounts must be a list of ba_… / card_… ids", "external_accounts")
        with self.f.lock:
            a = self.f.accounts.setdefault(ident, {"id": ident, "closed": False, "external_accounts": []})
            if closed is not None:
                a["closed"] = closed
            if ext is not None:
                a["external_accounts"] = list(dict.fromkeys(ext))
            return dict(a)

    def fail_payout(self, ident, b):
        self.only(b, ("failure_code", "failure_message"))
        code = b.get("failure_code", "could_not_process")
        if code not in PAYOUT_FAILURES:
            raise ControlError(400, f"failure_code must be one of Stripe's payout failure codes: "
                                    f"{', '.join(PAYOUT_FAILURES)}", "failure_code")
        f = self.f
        with f.lock:
            po = f.payouts.get(ident)
            if po is None:
                raise ControlError(404, f"No such payout: '{ident}'", "id")
            status = f.payout_status(po)
            if status in ("canceled", "failed"):
                raise ControlError(400, f"Payout {ident} is already {status}.")
            po["status"] = "failed"
            po["failure_code"] = code
            po["failure_message"] = b.get("failure_message") or PAYOUT_FAILURES[code]
            po["failure_balance_transaction"] = new_id("txn_")
            f.move(po["owner"], po["currency"], po["amount"])
            return f.render_payout(po)


# --------------------------------------------------------------------- HTTP


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The headers and the body are two writes: without TCP_NODELAY the body
    # waits for the client's delayed ACK of the headers (40 ms on Linux),
    # which real Stripe never adds and which would swamp every timing.
    disable_nagle_algorithm = True
    server_version = "stripe-fake"
    sys_version = ""

    def version_string(self):
        return self.server_version

    def log_message(self, fmt, *args):  # the default logs the request line; we log our own line
        pass

    def read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            out = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0] or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
                if len(out) > MAX_BODY:
                    raise ValueError("body too large")
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            raise ValueError("body too large")
        return self.rfile.read(n) if n > 0 else b""

    def dispatch(self, method):
        path = self.path.partition("?")[0]
        try:
            body = self.read_body()
        except (ValueError, OSError):
            self.close_connection = True
            err = {"error": {"message": "The request body is too large or malformed.", "type": "invalid_request_error"}}
            return self.send(Resp(413, json_bytes(err), headers=[("Request-Id", new_id("req_", 14))]), method, path)
        app = self.server.app
        if path.startswith("/_sim/"):
            resp = app["controls"].handle(method, self.path, body)
        else:
            resp = app["api"].handle(method, self.path, self.headers, body)
        self.send(resp, method, path)

    def send(self, resp: Resp, method, path):
        if resp.drop:
            if resp.delay_s:
                time.sleep(resp.delay_s)
            self.close_connection = True
            eprint(f"{method} {path} -> dropped (connection closed without a response)")
            return
        self.send_response(resp.status)
        self.send_header("Content-Type", resp.content_type)
        self.send_header("Content-Length", str(len(resp.body)))
        self.send_header("Cache-Control", "no-cache, no-store")
        for k, v in resp.headers:
            self.send_header(k, v)
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(resp.body)
        eprint(f"{method} {path} -> {resp.status}")

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def load(spec_path, fixtures_path, settle_after_ms):
    with open(spec_path, encoding="utf-8") as fh:
        spec = Spec(json.load(fh))
    bad = spec.unresolved_refs()
    if bad:
        raise SystemExit(f"stripe-fake: the excerpt has unresolved $refs: {bad[:5]}")
    with open(fixtures_path, encoding="utf-8") as fh:
        fixtures = json.load(fh)
    for name in ("transfer", "transfer_reversal", "payout"):
        problem = spec.validate({"$ref": f"#/components/schemas/{name}"}, fixtures["resources"][name])
        if problem:
            raise SystemExit(f"stripe-fake: Stripe's {name} fixture does not validate against the excerpt: {problem}")
    fake = Fake(spec, fixtures, settle_after_ms)
    api = Api(fake)
    return fake, api, Controls(fake, api)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url-file", required=True)
    ap.add_argument("--spec", default=DEFAULT_SPEC)
    ap.add_argument("--fixtures", default=DEFAULT_FIXTURES)
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--settle-after-ms", type=int, default=0)
    args = ap.parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    fake, api, controls = load(args.spec, args.fixtures, args.settle_after_ms)
    server = Server((host or "127.0.0.1", int(port)), Handler)
    server.app = {"fake": fake, "api": api, "controls": controls}
    bound_host, bound_port = server.server_address[:2]
    url = f"http://{bound_host}:{bound_port}"
    tmp = f"{args.url_file}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(url + "\n")
    os.replace(tmp, args.url_file)
    eprint(f"stripe-fake listening on {url} (spec {os.path.basename(args.spec)}, version {fake.spec.version}, "
           f"settle after {fake.settle_ms} ms)")
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
