#!/usr/bin/env python3
"""Self-test of stripe_fake.py: ``python3 test_stripe_fake.py`` (unittest).

Starts the fake as a subprocess on port 0 and drives it over HTTP. Every answer
of a ``/v1`` route is validated against the excerpt of Stripe's OpenAPI
description twice: with the fake's own (strict) validator, and, when
``jsonschema`` is importable (it comes with openapi-spec-validator, listed in
e2e/requirements.txt), with ``jsonschema``'s Draft 4 validator on a mechanical
translation of the OpenAPI 3.0 schema (``nullable`` → ``null``), so the check
does not rest only on the fake's own code.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # leave no __pycache__ beside the vendored files
import stripe_fake  # noqa: E402  (the validator, for the strict check)

SPEC_PATH = os.path.join(HERE, "openapi-excerpt.json")
FIXTURES_PATH = os.path.join(HERE, "fixtures-excerpt.json")
with open(SPEC_PATH, encoding="utf-8") as fh:
    DOC = json.load(fh)
SPEC = stripe_fake.Spec(DOC)
KEY = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"

try:
    import jsonschema
except ImportError:  # pragma: no cover - the venv has it (openapi-spec-validator depends on it)
    jsonschema = None


def to_json_schema(o):
    """OpenAPI 3.0 schema → JSON Schema (draft 4): ``nullable`` becomes ``null``."""
    if isinstance(o, list):
        return [to_json_schema(x) for x in o]
    if not isinstance(o, dict):
        return o
    out = {k: to_json_schema(v) for k, v in o.items()
           if not k.startswith("x-") and k not in ("nullable", "format", "description", "title")}
    if o.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = out["enum"] + [None]
        elif "anyOf" in out:
            out["anyOf"] = out["anyOf"] + [{"type": "null"}]
    return out


JS_COMPONENTS = to_json_schema(DOC["components"])
VALIDATED = {"own": 0, "jsonschema": 0}


def independent_errors(schema, instance):
    if jsonschema is None:
        return []
    root = {"allOf": [to_json_schema(schema)], "components": JS_COMPONENTS}
    return [e.message for e in jsonschema.Draft4Validator(root).iter_errors(instance)]


class Answer:
    def __init__(self, status, headers, raw):
        self.status = status
        self.headers = headers
        self.raw = raw
        try:
            self.json = json.loads(raw) if raw else None
        except ValueError:
            self.json = None

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    @property
    def error(self):
        return (self.json or {}).get("error", {})

    def __repr__(self):
        return f"<{self.status} {self.raw[:300]!r}>"


class Server:
    def __init__(self, *extra):
        self.tmp = tempfile.TemporaryDirectory()
        url_file = os.path.join(self.tmp.name, "url")
        self.stderr_path = os.path.join(self.tmp.name, "stderr")
        self.stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "stripe_fake.py"), "--url-file", url_file, "--listen", "127.0.0.1:0",
             *extra], stdout=subprocess.DEVNULL, stderr=self.stderr)
        deadline = time.time() + 15
        while not os.path.exists(url_file):
            if self.proc.poll() is not None or time.time() > deadline:
                with open(self.stderr_path, encoding="utf-8", errors="replace") as fh:
                    raise RuntimeError("the fake did not start: " + fh.read())
            time.sleep(0.02)
        with open(url_file, encoding="utf-8") as fh:
            self.url = fh.read().strip()
        u = urllib.parse.urlparse(self.url)
        self.host, self.port = u.hostname, u.port

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.stderr.close()
        with open(self.stderr_path, encoding="utf-8", errors="replace") as fh:
            log = fh.read()
        self.tmp.cleanup()
        return log

    def raw(self, method, path, body=None, headers=None, timeout=10) -> Answer:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return Answer(r.status, r.getheaders(), r.read())
        finally:
            conn.close()

    def api(self, method, path, params=None, key=None, account=None, version=None, auth=True, headers=None,
            validate=True) -> Answer:
        h = dict(headers or {})
        if auth:
            h["Authorization"] = f"Bearer {KEY}"
        if key is not None:
            h["Idempotency-Key"] = key
        if account is not None:
            h["Stripe-Account"] = account
        if version is not None:
            h["Stripe-Version"] = version
        body = None
        pairs = list(params.items()) if isinstance(params, dict) else list(params or [])
        if method == "GET":
            if pairs:
                path = path + "?" + urllib.parse.urlencode(pairs)
        else:
            body = urllib.parse.urlencode(pairs)
            h.setdefault("Content-Type", "application/x-www-form-urlencoded")
        a = self.raw(method, path, body, h)
        if validate:
            check_answer(method, path, a)
        return a

    def ctl(self, method, path, obj=None):
        body = json.dumps(obj) if obj is not None else None
        a = self.raw(method, path, body, {"Content-Type": "application/json"} if body else {})
        return a


def check_answer(method, path, a: Answer):
    """Every /v1 answer: Request-Id header, JSON body valid against the excerpt."""
    assert (a.header("Request-Id") or "").startswith("req_"), a
    route = SPEC.match(method, path.partition("?")[0])
    if a.json is None:
        raise AssertionError(f"{method} {path}: answer is not JSON: {a}")
    if route is None:
        schema = {"$ref": "#/components/schemas/error"}
    else:
        schema = SPEC.response_schema(route[1], a.status)
    problem = SPEC.validate(schema, a.json)
    assert problem is None, f"{method} {path} -> {a.status}: {problem}"
    VALIDATED["own"] += 1
    errs = independent_errors(schema, a.json)
    assert not errs, f"{method} {path} -> {a.status}: jsonschema: {errs[:3]}"
    if jsonschema is not None:
        VALIDATED["jsonschema"] += 1


def transfer_params(amount=100, currency="usd", destination="acct_dest", group=None, **extra):
    p = [("amount", str(amount)), ("currency", currency), ("destination", destination)]
    if group:
        p.append(("transfer_group", group))
    p += [(k, v) for k, v in extra.items()]
    return p


class ExcerptTest(unittest.TestCase):
    def test_every_ref_resolves(self):
        refs = []

        def walk(o):
            if isinstance(o, dict):
                for k, v in o.items():
                    refs.append(v) if k == "$ref" else walk(v)
            elif isinstance(o, list):
                for x in o:
                    walk(x)

        walk(DOC)
        self.assertGreater(len(refs), 10)
        for ref in refs:
            self.assertTrue(ref.startswith("#/components/schemas/"), ref)
            self.assertIn(ref.rsplit("/", 1)[1], DOC["components"]["schemas"], ref)
        self.assertEqual(SPEC.unresolved_refs(), [])

    def test_is_an_openapi_3_document(self):
        self.assertTrue(DOC["openapi"].startswith("3."))
        for p, methods in {"/v1/transfers": ["get", "post"], "/v1/transfers/{transfer}": ["get"],
                           "/v1/transfers/{id}/reversals": ["get", "post"], "/v1/payouts": ["get", "post"],
                           "/v1/payouts/{payout}": ["get"], "/v1/payouts/{payout}/cancel": ["post"]}.items():
            self.assertEqual(sorted(DOC["paths"][p]), methods)
        for name in ("transfer", "transfer_reversal", "payout", "error", "api_errors"):
            self.assertNotIn("x-excerpt-omitted", DOC["components"]["schemas"][name])
        self.assertLess(os.path.getsize(SPEC_PATH), 250_000)
        try:
            from openapi_spec_validator import validate
        except ImportError:  # pragma: no cover
            self.skipTest("openapi-spec-validator is not installed")
        validate(DOC)

    def test_fixtures_validate(self):
        with open(FIXTURES_PATH, encoding="utf-8") as fh:
            fx = json.load(fh)["resources"]
        for name in ("transfer", "transfer_reversal", "payout"):
            schema = {"$ref": f"#/components/schemas/{name}"}
            self.assertIsNone(SPEC.validate(schema, fx[name]))
            self.assertEqual(independent_errors(schema, fx[name]), [])


class ResponseCheckTest(unittest.TestCase):
    """The fake refuses to send a body that does not match the excerpt."""

    def test_invalid_bodies_become_500(self):
        import contextlib
        import io

        fake, api, _ = stripe_fake.load(SPEC_PATH, FIXTURES_PATH, 0)
        op = SPEC.match("POST", "/v1/transfers")[1]
        with open(FIXTURES_PATH, encoding="utf-8") as fh:
            good = json.load(fh)["resources"]["transfer"]
        self.assertEqual(api.ok_resp(op, 200, good).status, 200)
        for broken in (dict(good, status="paid"),                      # Stripe's transfer has no status
                       {k: v for k, v in good.items() if k != "reversals"},  # a required field missing
                       dict(good, amount="100"),                       # wrong type
                       dict(good, object="payout"),                    # enum
                       dict(good, currency="usdx")):                   # maxLength 3
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                resp = api.ok_resp(op, 200, broken)
            self.assertEqual(resp.status, 500, broken)
            self.assertEqual(json.loads(resp.body)["error"]["type"], "api_error")
            self.assertIn("does not validate", err.getvalue())
        lst = SPEC.match("GET", "/v1/transfers")[1]
        self.assertEqual(api.ok_resp(lst, 200, {"object": "list", "data": [], "has_more": False,
                                                "url": "/v1/payouts"}).status, 500)  # url pattern ^/v1/transfers


class FakeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = Server("--settle-after-ms", "60000")
        s = cls.s
        for body in ({"id": "acct_dest", "external_accounts": ["ba_dest", "card_dest"]},
                     {"id": "acct_conn", "external_accounts": ["ba_conn"]},
                     {"id": "acct_closed", "closed": True},
                     {"id": "platform", "external_accounts": ["ba_platform"]}):
            a = s.ctl("POST", "/_sim/accounts", body)
            assert a.status == 200, a

    @classmethod
    def tearDownClass(cls):
        log = cls.s.stop()
        cls.log = log
        assert "BUG" not in log and "internal error" not in log, log
        assert KEY not in log and "Bearer" not in log and "Authorization" not in log, "the log leaks the key"
        assert "POST /v1/transfers -> 200" in log

    # -- helpers

    def transfers_in(self, group, account=None):
        a = self.s.api("GET", "/v1/transfers", {"transfer_group": group, "limit": "100"}, account=account)
        self.assertEqual(a.status, 200, a)
        return a.json["data"]

    def sim_objects(self, kind="transfer", group=None):
        a = self.s.ctl("GET", "/_sim/objects")
        self.assertEqual(a.status, 200)
        return [o for o in a.json["data"] if o["object"] == kind and (group is None or o.get("transfer_group") == group)]

    def assertError(self, a, status, code, param=None, kind="invalid_request_error"):
        self.assertEqual(a.status, status, a)
        self.assertEqual(a.error.get("type"), kind, a)
        self.assertEqual(a.error.get("code"), code, a)
        if param is not None:
            self.assertEqual(a.error.get("param"), param, a)

    # -- basics

    def test_health(self):
        a = self.s.ctl("GET", "/_sim/health")
        self.assertEqual((a.status, a.json), (200, {"ok": True}))
        self.assertTrue(a.header("Request-Id").startswith("req_"))

    def test_auth_required(self):
        a = self.s.api("POST", "/v1/transfers", transfer_params(), auth=False)
        self.assertError(a, 401, None)
        self.assertTrue(a.error["message"].startswith("You did not provide an API key."), a)
        a = self.s.api("GET", "/v1/transfers", auth=False, headers={"Authorization": "Bearer sk_live_abcdefghijkl1234"})
        self.assertError(a, 401, None)
        self.assertNotIn("sk_live_abcdefghijkl1234", a.error["message"])
        basic = base64.b64encode(f"{KEY}:".encode()).decode()
        a = self.s.api("GET", "/v1/transfers", auth=False, headers={"Authorization": f"Basic {basic}"})
        self.assertEqual(a.status, 200, a)

    def test_unrecognized_url(self):
        a = self.s.api("POST", "/v1/transfers/tr_x")  # exists at Stripe (update), not in the excerpt
        self.assertError(a, 404, None)
        self.assertIn("Unrecognized request URL", a.error["message"])

    # -- request validation against the excerpt

    def test_unknown_parameter(self):
        a = self.s.api("POST", "/v1/transfers", transfer_params(bogus="1"))
        self.assertError(a, 400, "parameter_unknown", "bogus")
        a = self.s.api("GET", "/v1/transfers", {"created[foo]": "1"})
        self.assertError(a, 400, "parameter_unknown", "created[foo]")
        a = self.s.api("GET", "/v1/payouts", {"transfer_group": "x"})  # a transfers filter, not a payouts one
        self.assertError(a, 400, "parameter_unknown", "transfer_group")
        a = self.s.api("POST", "/v1/payouts/po_x/cancel", {"amount": "1"})
        self.assertError(a, 400, "parameter_unknown", "amount")

    def test_missing_and_invalid_parameters(self):
        a = self.s.api("POST", "/v1/transfers", [("amount", "100"), ("destination", "acct_dest")])
        self.assertError(a, 400, "parameter_missing", "currency")
        a = self.s.api("POST", "/v1/transfers", [("currency", "usd"), ("destination", "acct_dest")])
        self.assertError(a, 400, "parameter_missing", "amount")
        a = self.s.api("POST", "/v1/transfers", transfer_params(amount="12.5"))
        self.assertError(a, 400, "parameter_invalid_integer", "amount")
        a = self.s.api("POST", "/v1/transfers", transfer_params(amount="0"))
        self.assertError(a, 400, "parameter_invalid_integer", "amount")
        a = self.s.api("POST", "/v1/transfers", transfer_params(currency=""))
        self.assertError(a, 400, "parameter_invalid_empty", "currency")
        a = self.s.api("POST", "/v1/transfers", transfer_params(source_type="wire"))
        self.assertError(a, 400, None, "source_type")
        a = self.s.api("POST", "/v1/payouts", [("amount", "1"), ("currency", "usd"),
                                               ("statement_descriptor", "X" * 23)])
        self.assertError(a, 400, None, "statement_descriptor")
        self.assertIn("at most 22 characters", a.error["message"])
        a = self.s.api("POST", "/v1/payouts", [("amount", "1"), ("currency", "usd"), ("method", "express")])
        self.assertError(a, 400, None, "method")
        a = self.s.api("POST", "/v1/transfers", transfer_params(**{"metadata[k]": "v" * 501}))
        self.assertError(a, 400, None, "metadata[k]")
        a = self.s.api("GET", "/v1/transfers", {"limit": "101"})
        self.assertError(a, 400, "parameter_invalid_integer", "limit")
        a = self.s.api("GET", "/v1/transfers", {"limit": "ten"})
        self.assertError(a, 400, "parameter_invalid_integer", "limit")
        a = self.s.api("GET", "/v1/transfers", {"created[gte]": "yesterday"})
        self.assertError(a, 400, "parameter_invalid_integer", "created[gte]")

    def test_form_encoding_required(self):
        h = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
        a = self.s.raw("POST", "/v1/transfers", json.dumps({"amount": 1, "currency": "usd", "destination": "acct_dest"}), h)
        check_answer("POST", "/v1/transfers", a)
        self.assertError(a, 400, None)
        self.assertIn("unsupported Content-Type", a.error["message"])

    def test_stripe_version_recorded_and_checked(self):
        a = self.s.api("GET", "/v1/transfers", {"limit": "1"}, version="2019-11-05")
        self.assertEqual(a.status, 200)
        self.assertEqual(a.header("Stripe-Version"), "2019-11-05")
        a = self.s.api("GET", "/v1/payouts", {"limit": "1"}, version="2020-08-27.preview_name")
        self.assertEqual(a.status, 200)
        a = self.s.api("GET", "/v1/transfers", version="latest")
        self.assertError(a, 400, None, "Stripe-Version")
        reqs = self.s.ctl("GET", "/_sim/requests").json["data"]
        self.assertTrue(any(r["headers"].get("Stripe-Version") == "2020-08-27.preview_name" for r in reqs))
        for r in reqs:
            self.assertNotIn("Authorization", r["headers"])
            self.assertNotIn(KEY, json.dumps(r))

    # -- idempotency

    def test_idempotent_replay_byte_for_byte(self):
        params = transfer_params(250, group="grp-replay", **{"metadata[order]": "o-1", "description": "d"})
        first = self.s.api("POST", "/v1/transfers", params, key="key-replay")
        self.assertEqual(first.status, 200, first)
        self.assertIsNone(first.header("Idempotent-Replayed"))
        again = self.s.api("POST", "/v1/transfers", list(reversed(params)), key="key-replay")  # same params, other order
        self.assertEqual(again.status, 200)
        self.assertEqual(again.raw, first.raw)
        self.assertEqual(again.header("Idempotent-Replayed"), "true")
        self.assertNotEqual(again.header("Request-Id"), first.header("Request-Id"))
        self.assertEqual(again.header("Original-Request"), first.header("Request-Id"))
        self.assertEqual(len(self.transfers_in("grp-replay")), 1)
        # the same key under another account is another key
        other = self.s.api("POST", "/v1/transfers", params, key="key-replay", account="acct_conn")
        self.assertEqual(other.status, 200)
        self.assertNotEqual(other.json["id"], first.json["id"])

    def test_key_reused_with_other_parameters_or_endpoint(self):
        first = self.s.api("POST", "/v1/transfers", transfer_params(100, group="grp-reuse"), key="key-reuse")
        self.assertEqual(first.status, 200)
        a = self.s.api("POST", "/v1/transfers", transfer_params(101, group="grp-reuse"), key="key-reuse")
        self.assertError(a, 400, None, kind="idempotency_error")
        self.assertIn("Keys for idempotent requests can only be used with the same parameters", a.error["message"])
        a = self.s.api("POST", "/v1/payouts", [("amount", "100"), ("currency", "usd")], key="key-reuse")
        self.assertError(a, 400, None, kind="idempotency_error")
        self.assertEqual(len(self.transfers_in("grp-reuse")), 1)
        a = self.s.api("POST", "/v1/transfers", transfer_params(100, group="grp-reuse"), key="k" * 256)
        self.assertError(a, 400, None, "Idempotency-Key")

    def test_validation_errors_are_not_stored(self):
        bad = self.s.api("POST", "/v1/transfers", transfer_params(group="grp-val", bogus="1"), key="key-val")
        self.assertError(bad, 400, "parameter_unknown")
        ok = self.s.api("POST", "/v1/transfers", transfer_params(group="grp-val"), key="key-val")
        self.assertEqual(ok.status, 200, ok)
        self.assertIsNone(ok.header("Idempotent-Replayed"))

    def test_business_refusals_are_stored(self):
        self.s.ctl("POST", "/_sim/balances", {"account": "platform", "currency": "nok", "amount": 10})
        a = self.s.api("POST", "/v1/transfers", transfer_params(50, "nok", group="grp-stored"), key="key-stored")
        self.assertError(a, 400, "balance_insufficient")
        self.s.ctl("POST", "/_sim/balances", {"account": "platform", "currency": "nok", "amount": 1000})
        again = self.s.api("POST", "/v1/transfers", transfer_params(50, "nok", group="grp-stored"), key="key-stored")
        self.assertEqual(again.raw, a.raw)
        self.assertEqual(again.header("Idempotent-Replayed"), "true")
        self.assertEqual(self.transfers_in("grp-stored"), [])

    def test_error_500_fault_creates_nothing_and_is_not_stored(self):
        f = self.s.ctl("POST", "/_sim/faults", {"mode": "error_500", "count": 1})
        self.assertEqual(f.json["count"], 1)
        a = self.s.api("POST", "/v1/transfers", transfer_params(group="grp-500"), key="key-500", validate=False)
        self.assertEqual(a.status, 500)
        self.assertIn(b"<html>", a.raw)
        self.assertEqual(self.sim_objects(group="grp-500"), [])
        ok = self.s.api("POST", "/v1/transfers", transfer_params(group="grp-500"), key="key-500")
        self.assertEqual(ok.status, 200)
        self.assertIsNone(ok.header("Idempotent-Replayed"))
        self.assertEqual(len(self.sim_objects(group="grp-500")), 1)
        self.assertEqual(self.s.ctl("GET", "/_sim/faults").json["count"], 0)

    def test_drop_after_accept_leaves_exactly_one_transfer(self):
        self.s.ctl("POST", "/_sim/faults", {"mode": "drop_after_accept", "count": 1, "delay_ms": 50})
        params = transfer_params(321, group="grp-drop")
        with self.assertRaises((http.client.RemoteDisconnected, ConnectionResetError, http.client.BadStatusLine)):
            self.s.api("POST", "/v1/transfers", params, key="key-drop", validate=False)
        created = self.sim_objects(group="grp-drop")
        self.assertEqual(len(created), 1)
        retry = self.s.api("POST", "/v1/transfers", params, key="key-drop")
        self.assertEqual(retry.status, 200)
        self.assertEqual(retry.header("Idempotent-Replayed"), "true")
        self.assertEqual(retry.json["id"], created[0]["id"])
        self.assertEqual(len(self.sim_objects(group="grp-drop")), 1)
        self.assertEqual(len(self.transfers_in("grp-drop")), 1)

    def test_garbage_fault(self):
        self.s.ctl("POST", "/_sim/faults", {"mode": "garbage", "count": 1})
        a = self.s.api("POST", "/v1/transfers", transfer_params(group="grp-garbage"), key="key-garbage", validate=False)
        self.assertEqual(a.status, 200)
        self.assertIsNone(a.json)
        again = self.s.api("POST", "/v1/transfers", transfer_params(group="grp-garbage"), key="key-garbage")
        self.assertEqual(again.header("Idempotent-Replayed"), "true")
        self.assertEqual(len(self.sim_objects(group="grp-garbage")), 1)

    def test_concurrent_requests_with_one_key(self):
        self.s.ctl("POST", "/_sim/faults", {"mode": "delay", "count": 1, "delay_ms": 1500, "on": "transfers"})
        params = transfer_params(77, group="grp-concurrent")
        out = {}
        t = threading.Thread(target=lambda: out.update(first=self.s.api("POST", "/v1/transfers", params, key="key-cc")))
        t.start()
        time.sleep(0.5)
        second = self.s.api("POST", "/v1/transfers", params, key="key-cc")
        self.assertError(second, 409, "idempotency_key_in_use", kind="idempotency_error")
        t.join(10)
        self.assertEqual(out["first"].status, 200)
        third = self.s.api("POST", "/v1/transfers", params, key="key-cc")
        self.assertEqual(third.raw, out["first"].raw)
        self.assertEqual(len(self.transfers_in("grp-concurrent")), 1)

    def test_concurrent_creations_keep_balances_consistent(self):
        self.s.ctl("POST", "/_sim/balances", {"account": "platform", "currency": "dkk", "amount": 1000})
        results = []

        def go(i):
            results.append(self.s.api("POST", "/v1/transfers", transfer_params(100, "dkk", group="grp-race"),
                                      key=f"key-race-{i}"))

        threads = [threading.Thread(target=go, args=(i,)) for i in range(16)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(20)
        self.assertEqual(sorted(r.status for r in results), [200] * 10 + [400] * 6)
        self.assertEqual(len(self.transfers_in("grp-race")), 10)
        bal = {(b["account"], b["currency"]): b["amount"] for b in self.s.ctl("GET", "/_sim/balances").json["data"]}
        self.assertEqual(bal[("platform", "dkk")], 0)

    # -- transfers

    def test_balance_insufficient(self):
        self.s.ctl("POST", "/_sim/balances", {"account": "platform", "currency": "chf", "amount": 500})
        a = self.s.api("POST", "/v1/transfers", transfer_params(600, "CHF", group="grp-bal"))
        self.assertError(a, 400, "balance_insufficient")
        a = self.s.api("POST", "/v1/transfers", transfer_params(500, "CHF", group="grp-bal"))
        self.assertEqual(a.status, 200)
        self.assertEqual(a.json["currency"], "chf")
        a = self.s.api("POST", "/v1/transfers", transfer_params(1, "chf", group="grp-bal"))
        self.assertError(a, 400, "balance_insufficient")

    def test_destination_unknown_or_disabled(self):
        a = self.s.api("POST", "/v1/transfers", transfer_params(destination="acct_nobody"))
        self.assertError(a, 400, "resource_missing", "destination")
        a = self.s.api("POST", "/v1/transfers", transfer_params(destination="acct_closed"))
        self.assertError(a, 400, "insufficient_capabilities_for_transfer", "destination")

    def test_transfer_object_follows_the_schema(self):
        a = self.s.api("POST", "/v1/transfers", transfer_params(42, group="grp-shape", **{"metadata[a]": "b"}))
        t = a.json
        with open(FIXTURES_PATH, encoding="utf-8") as fh:
            fixture = json.load(fh)["resources"]["transfer"]
        self.assertEqual(sorted(t), sorted(fixture))
        self.assertNotIn("status", t)
        self.assertEqual((t["object"], t["amount"], t["amount_reversed"], t["reversed"], t["livemode"]),
                         ("transfer", 42, 0, False, False))
        self.assertEqual(t["metadata"], {"a": "b"})
        self.assertTrue(t["id"].startswith("tr_") and t["balance_transaction"].startswith("txn_"))
        got = self.s.api("GET", f"/v1/transfers/{t['id']}")
        self.assertEqual(got.json, t)
        a = self.s.api("GET", "/v1/transfers/tr_doesnotexist")
        self.assertError(a, 404, "resource_missing", "id")

    def test_list_by_transfer_group_and_created(self):
        g = "grp-list"
        t1 = self.s.api("POST", "/v1/transfers", transfer_params(1, group=g)).json
        self.s.ctl("POST", "/_sim/clock", {"advance_secs": 100})
        t2 = self.s.api("POST", "/v1/transfers", transfer_params(2, group=g)).json
        t3 = self.s.api("POST", "/v1/transfers", transfer_params(3, group=g)).json
        self.s.api("POST", "/v1/transfers", transfer_params(4, group="grp-list-other"))
        all_g = self.transfers_in(g)
        self.assertEqual([t["id"] for t in all_g], [t3["id"], t2["id"], t1["id"]])  # newest first
        a = self.s.api("GET", "/v1/transfers", {"transfer_group": g, "created[gte]": str(t2["created"])})
        self.assertEqual([t["id"] for t in a.json["data"]], [t3["id"], t2["id"]])
        self.assertEqual((a.json["object"], a.json["url"], a.json["has_more"]), ("list", "/v1/transfers", False))
        a = self.s.api("GET", "/v1/transfers", {"transfer_group": g, "created[lt]": str(t2["created"])})
        self.assertEqual([t["id"] for t in a.json["data"]], [t1["id"]])
        a = self.s.api("GET", "/v1/transfers", {"transfer_group": g, "created": str(t1["created"])})
        self.assertEqual([t["id"] for t in a.json["data"]], [t1["id"]])
        page1 = self.s.api("GET", "/v1/transfers", {"transfer_group": g, "limit": "2"}).json
        self.assertEqual(([t["id"] for t in page1["data"]], page1["has_more"]), ([t3["id"], t2["id"]], True))
        page2 = self.s.api("GET", "/v1/transfers", {"transfer_group": g, "limit": "2",
                                                    "starting_after": page1["data"][-1]["id"]}).json
        self.assertEqual(([t["id"] for t in page2["data"]], page2["has_more"]), ([t1["id"]], False))
        back = self.s.api("GET", "/v1/transfers", {"transfer_group": g, "ending_before": t1["id"], "limit": "1"}).json
        self.assertEqual(([t["id"] for t in back["data"]], back["has_more"]), ([t2["id"]], True))
        a = self.s.api("GET", "/v1/transfers", {"destination": "acct_dest", "transfer_group": g})
        self.assertEqual(len(a.json["data"]), 3)
        a = self.s.api("GET", "/v1/transfers", {"starting_after": "tr_nope"})
        self.assertError(a, 400, "resource_missing", "starting_after")
        a = self.s.api("GET", "/v1/transfers", {"starting_after": t1["id"], "ending_before": t3["id"]})
        self.assertError(a, 400, "parameters_exclusive")

    def test_stripe_account_scoping(self):
        mine = self.s.api("POST", "/v1/transfers", transfer_params(9, group="grp-scope"), account="acct_conn")
        self.assertEqual(mine.status, 200, mine)
        self.assertEqual([t["id"] for t in self.transfers_in("grp-scope", account="acct_conn")], [mine.json["id"]])
        self.assertEqual(self.transfers_in("grp-scope"), [])
        a = self.s.api("GET", f"/v1/transfers/{mine.json['id']}")
        self.assertError(a, 404, "resource_missing")
        a = self.s.api("GET", f"/v1/transfers/{mine.json['id']}", account="acct_conn")
        self.assertEqual(a.status, 200)
        a = self.s.api("POST", f"/v1/transfers/{mine.json['id']}/reversals", {"amount": "1"})
        self.assertError(a, 404, "resource_missing")
        a = self.s.api("GET", "/v1/transfers", account="acct_unknown")
        self.assertError(a, 403, "account_invalid")
        owners = self.s.ctl("GET", "/_sim/objects").json["accounts"]
        self.assertEqual(owners[mine.json["id"]], "acct_conn")

    # -- reversals

    def test_reversals(self):
        t = self.s.api("POST", "/v1/transfers", transfer_params(1000, group="grp-rev")).json
        r1 = self.s.api("POST", f"/v1/transfers/{t['id']}/reversals", {"amount": "300", "metadata[why]": "oops"},
                        key="key-rev-1")
        self.assertEqual(r1.status, 200, r1)
        self.assertEqual((r1.json["object"], r1.json["amount"], r1.json["transfer"], r1.json["metadata"]),
                         ("transfer_reversal", 300, t["id"], {"why": "oops"}))
        replay = self.s.api("POST", f"/v1/transfers/{t['id']}/reversals", {"amount": "300", "metadata[why]": "oops"},
                            key="key-rev-1")
        self.assertEqual(replay.raw, r1.raw)
        a = self.s.api("POST", f"/v1/transfers/{t['id']}/reversals", {"amount": "701"})
        self.assertError(a, 400, "amount_too_large", "amount")
        got = self.s.api("GET", f"/v1/transfers/{t['id']}").json
        self.assertEqual((got["amount_reversed"], got["reversed"], len(got["reversals"]["data"])), (300, False, 1))
        rest = self.s.api("POST", f"/v1/transfers/{t['id']}/reversals")  # amount omitted: the rest
        self.assertEqual(rest.json["amount"], 700)
        got = self.s.api("GET", f"/v1/transfers/{t['id']}").json
        self.assertEqual((got["amount_reversed"], got["reversed"]), (1000, True))
        self.assertEqual([r["id"] for r in got["reversals"]["data"]], [rest.json["id"], r1.json["id"]])
        a = self.s.api("POST", f"/v1/transfers/{t['id']}/reversals", {"amount": "1"})
        self.assertError(a, 400, None)
        self.assertIn("already been reversed", a.error["message"])
        lst = self.s.api("GET", f"/v1/transfers/{t['id']}/reversals", {"limit": "1"}).json
        self.assertEqual((lst["url"], lst["has_more"], lst["data"][0]["id"]),
                         (f"/v1/transfers/{t['id']}/reversals", True, rest.json["id"]))
        a = self.s.api("GET", "/v1/transfers/tr_nope/reversals")
        self.assertError(a, 404, "resource_missing")

    def test_reversal_needs_destination_balance(self):
        self.s.ctl("POST", "/_sim/accounts", {"id": "acct_poor"})
        t = self.s.api("POST", "/v1/transfers", transfer_params(500, "sek", "acct_poor", group="grp-rev-bal")).json
        self.s.ctl("POST", "/_sim/balances", {"account": "acct_poor", "currency": "sek", "amount": 100})
        a = self.s.api("POST", f"/v1/transfers/{t['id']}/reversals", {"amount": "200"})
        self.assertError(a, 400, "balance_insufficient")
        a = self.s.api("POST", f"/v1/transfers/{t['id']}/reversals", {"amount": "100"})
        self.assertEqual(a.status, 200)

    # -- payouts

    def test_payout_pending_then_paid(self):
        p = self.s.api("POST", "/v1/payouts", [("amount", "1100"), ("currency", "usd"), ("metadata[run]", "1"),
                                               ("description", "weekly")], key="key-po-1")
        self.assertEqual(p.status, 200, p)
        po = p.json
        self.assertEqual((po["status"], po["destination"], po["type"], po["automatic"], po["method"]),
                         ("pending", "ba_platform", "bank_account", False, "standard"))
        self.assertEqual(self.s.api("GET", f"/v1/payouts/{po['id']}").json["status"], "pending")
        self.s.ctl("POST", "/_sim/clock", {"advance_secs": 61})
        got = self.s.api("GET", f"/v1/payouts/{po['id']}").json
        self.assertEqual(got["status"], "paid")
        a = self.s.api("POST", f"/v1/payouts/{po['id']}/cancel")
        self.assertError(a, 400, None)
        a = self.s.api("GET", "/v1/payouts", {"status": "paid", "limit": "100"})
        self.assertIn(po["id"], [x["id"] for x in a.json["data"]])
        self.assertEqual(a.json["url"], "/v1/payouts")

    def test_payout_cancel(self):
        self.s.ctl("POST", "/_sim/balances", {"account": "acct_dest", "currency": "eur", "amount": 5000})
        p = self.s.api("POST", "/v1/payouts", [("amount", "2000"), ("currency", "eur"), ("destination", "card_dest"),
                                               ("method", "instant")], account="acct_dest").json
        self.assertEqual((p["status"], p["type"], p["method"]), ("pending", "card", "instant"))
        bal = {(b["account"], b["currency"]): b["amount"] for b in self.s.ctl("GET", "/_sim/balances").json["data"]}
        self.assertEqual(bal[("acct_dest", "eur")], 3000)
        c = self.s.api("POST", f"/v1/payouts/{p['id']}/cancel", account="acct_dest")
        self.assertEqual(c.status, 200, c)
        self.assertEqual(c.json["status"], "canceled")
        self.assertTrue(c.json["failure_balance_transaction"].startswith("txn_"))
        bal = {(b["account"], b["currency"]): b["amount"] for b in self.s.ctl("GET", "/_sim/balances").json["data"]}
        self.assertEqual(bal[("acct_dest", "eur")], 5000)
        a = self.s.api("POST", f"/v1/payouts/{p['id']}/cancel", account="acct_dest")
        self.assertError(a, 400, None)
        a = self.s.api("POST", f"/v1/payouts/{p['id']}/cancel")  # another account's payout
        self.assertError(a, 404, "resource_missing")

    def test_payout_refusals(self):
        a = self.s.api("POST", "/v1/payouts", [("amount", "1"), ("currency", "usd"), ("destination", "ba_unknown")])
        self.assertError(a, 400, "resource_missing", "destination")
        a = self.s.api("POST", "/v1/payouts", [("amount", "1"), ("currency", "usd"), ("destination", "ba_dest")])
        self.assertError(a, 400, "resource_missing", "destination")  # acct_dest's, not the platform's
        a = self.s.api("POST", "/v1/payouts", [("amount", "1"), ("currency", "usd"), ("method", "instant")])
        self.assertError(a, 400, "instant_payouts_unsupported", "method")
        self.s.ctl("POST", "/_sim/balances", {"account": "platform", "currency": "jpy", "amount": 5})
        a = self.s.api("POST", "/v1/payouts", [("amount", "6"), ("currency", "jpy")])
        self.assertError(a, 400, "balance_insufficient")

    def test_payout_failed_via_control(self):
        p = self.s.api("POST", "/v1/payouts", [("amount", "10"), ("currency", "usd")], account="acct_conn").json
        f = self.s.ctl("POST", f"/_sim/payouts/{p['id']}/fail", {"failure_code": "account_closed"})
        self.assertEqual(f.status, 200, f)
        got = self.s.api("GET", f"/v1/payouts/{p['id']}", account="acct_conn").json
        self.assertEqual((got["status"], got["failure_code"]), ("failed", "account_closed"))
        self.assertTrue(got["failure_message"])
        a = self.s.api("GET", "/v1/payouts", {"status": "failed"}, account="acct_conn")
        self.assertEqual([x["id"] for x in a.json["data"]], [p["id"]])
        bad = self.s.ctl("POST", f"/_sim/payouts/{p['id']}/fail", {"failure_code": "bogus"})
        self.assertEqual(bad.status, 400)

    # -- controls

    def test_calls_requests_objects(self):
        before = self.s.ctl("GET", "/_sim/calls").json.get("GET /v1/payouts/{payout}", 0)
        self.s.api("GET", "/v1/payouts/po_nope")
        calls = self.s.ctl("GET", "/_sim/calls").json
        self.assertEqual(calls["GET /v1/payouts/{payout}"], before + 1)
        self.assertGreaterEqual(calls["POST /v1/transfers"], 1)
        self.s.api("POST", "/v1/transfers", transfer_params(5, group="grp-req", **{"metadata[k]": "v"}),
                   key="key-req", version="2019-11-05")
        reqs = self.s.ctl("GET", "/_sim/requests").json["data"]
        last = [r for r in reqs if r["headers"].get("Idempotency-Key") == "key-req"][-1]
        self.assertEqual(last["params"]["metadata"], {"k": "v"})
        self.assertEqual(last["headers"]["Content-Type"], "application/x-www-form-urlencoded")
        self.assertEqual(last["headers"]["Stripe-Version"], "2019-11-05")
        self.assertLessEqual(len(reqs), 200)
        objs = self.s.ctl("GET", "/_sim/objects").json["data"]
        seqs = [o["created"] for o in objs]
        self.assertEqual(seqs, sorted(seqs))  # oldest first (the clock only moves forward here)
        self.assertEqual({o["object"] for o in objs} >= {"transfer"}, True)
        f = self.s.ctl("POST", "/_sim/faults", {"mode": "explode"})
        self.assertEqual(f.status, 400)
        self.assertEqual(self.s.ctl("DELETE", "/_sim/faults").json["count"], 0)


class SettlementTest(unittest.TestCase):
    def test_real_time_settlement(self):
        s = Server("--settle-after-ms", "300")
        try:
            p = s.api("POST", "/v1/payouts", [("amount", "5"), ("currency", "usd")], validate=True)
            self.assertEqual(p.status, 400)  # the platform has no external account yet
            s.ctl("POST", "/_sim/accounts", {"id": "platform", "external_accounts": ["ba_1"]})
            p = s.api("POST", "/v1/payouts", [("amount", "5"), ("currency", "usd")]).json
            self.assertEqual(p["status"], "pending")
            time.sleep(0.45)
            self.assertEqual(s.api("GET", f"/v1/payouts/{p['id']}").json["status"], "paid")
        finally:
            log = s.stop()
        self.assertNotIn("BUG", log)

    def test_keys_expire_after_24_hours(self):
        s = Server()
        try:
            s.ctl("POST", "/_sim/accounts", {"id": "acct_d"})
            a = s.api("POST", "/v1/transfers", transfer_params(10, destination="acct_d"), key="day-key")
            self.assertEqual(a.status, 200)
            s.ctl("POST", "/_sim/clock", {"advance_secs": 24 * 3600 - 60})
            b = s.api("POST", "/v1/transfers", transfer_params(11, destination="acct_d"), key="day-key")
            self.assertEqual(b.error.get("type"), "idempotency_error", b)
            s.ctl("POST", "/_sim/clock", {"advance_secs": 120})
            c = s.api("POST", "/v1/transfers", transfer_params(11, destination="acct_d"), key="day-key")
            self.assertEqual(c.status, 200, c)
            self.assertIsNone(c.header("Idempotent-Replayed"))
        finally:
            log = s.stop()
        self.assertNotIn("BUG", log)


def load_tests(loader, tests, pattern):
    suite = unittest.TestSuite()
    for case in (ExcerptTest, ResponseCheckTest, FakeTest, SettlementTest):
        suite.addTests(loader.loadTestsFromTestCase(case))
    return suite


if __name__ == "__main__":
    prog = unittest.main(exit=False, verbosity=2)
    print(f"answers validated against the excerpt: {VALIDATED['own']} (own validator), "
          f"{VALIDATED['jsonschema']} (jsonschema Draft4 on the translated schema)", file=sys.stderr)
    sys.exit(0 if prog.result.wasSuccessful() else 1)
