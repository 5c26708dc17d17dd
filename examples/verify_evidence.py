#!/usr/bin/env python3
"""Check Countersign's evidence without trusting the server.

This is an independent implementation written from docs/EVIDENCE.md alone
and the specifications it cites: RFC 9162 section 2.1 for the Merkle tree and
its proofs, C2SP signed-note and tlog-checkpoint for the signed roots, RFC
8785 (JCS) for the leaf bytes, RFC 7515/7517/7518 for the ES256 receipts,
approval token and mandate, and WebAuthn for the passkey assertions. It
deliberately shares no code with the Rust implementation, so the two can
disagree if either one is wrong. It needs only the Python standard library
and the `cryptography` package (Ed25519, P-256).

    python3 examples/verify_evidence.py log FIXTURE.json
    python3 examples/verify_evidence.py log FIXTURE.json --tampered
    python3 examples/verify_evidence.py bundle BUNDLE.json [--checkpoint NOTE] [--key KEY]
    python3 examples/verify_evidence.py bundle BUNDLE.json --tampered

`log` verifies a log fixture: a JSON object with "verifier_key",
"checkpoints" (signed notes, oldest first, the last the newest), "leaves"
(base64 of each leaf's bytes, all N of the newest checkpoint), "inclusion"
({"leaf_index", "tree_size", "hashes"}) and "consistency" ({"first",
"tree_size", "hashes"}) proofs. It prints one line per check and exits 0, or
exits 1 with "FAIL: <the first failure>" on stderr.

`log --tampered` is a self-test of this script: the untouched fixture must
pass, then tampered copies built in memory (a leaf's byte flipped, two leaves
swapped, a checkpoint's size edited, a checkpoint re-signed by another key,
a proof hash flipped, a leaf dropped) must each be refused, both by the full
verification and by the specific check that should catch it. Exit 1 if any
copy is accepted.

`bundle` verifies one payment's proof bundle (GET
/api/v1/proposals/{id}/evidence) by the twelve checks of EVIDENCE.md's "What
a verifier checks", in order: 1 format, 2 log key, 3 checkpoint, 4 trusted
checkpoint, 5 leaves, 6 receipts, 7 request, 8 policy, 9 approvals, 10
approval token, 11 operation, 12 mandate. It prints "ok N <name>: ..." for
each check passed ("skip 4 ..." without --checkpoint) and, at the first
failure, "FAIL: check N (<name>): <reason>" on stderr. `--checkpoint NOTE`
is a signed checkpoint kept by `log monitor` or fetched independently: the
bundle's must have its size and root (check 4). `--key KEY` pins the log's
verifier key, `<name>+<hex key id>+<base64>` (check 2).

`bundle --tampered` is a self-test: the untouched bundle must pass, then
tampered copies built in memory (the amount changed, a receipt's leaf
dropped, leaves swapped, a checkpoint forged under a fresh key, the bundle
claimed for another tenant, a disclosed account changed, the approval
token's payload changed, the mandate and the token swapped, a token key
published as a receipt key, the policy changed) must each be refused; it
prints the check that refused each. Exit 1 if any copy is accepted.

Exit status: 0 everything verified; 1 a check failed; 2 bad usage or (for
`bundle`) a file that cannot be read.
"""

import argparse
import base64
import binascii
import copy
import hashlib
import json
import re
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

EM_DASH = "\u2014"
ZERO_HASH = "sha256:" + "0" * 64
LEAF_KEYS = {
    "seq", "at", "tenant_id", "actor", "action",
    "proposal_id", "request_hash", "data", "prev_hash",
}
SIZE_RE = re.compile(r"0|[1-9][0-9]*")
HEX_KEY_ID_RE = re.compile(r"[0-9a-f]{8}")
CHAIN_HASH_RE = re.compile(r"sha256:[0-9a-f]{64}")
RFC3339_RE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})"
)


class Fail(Exception):
    """A check failed; the message says which and why."""


def check(condition, message):
    if not condition:
        raise Fail(message)


# ---------------------------------------------------------------- encodings


def b64decode_strict(text, what, length=None):
    """Standard base64 with padding, canonical (re-encodes to the same text)."""
    check(isinstance(text, str), f"{what}: not a string")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as e:
        raise Fail(f"{what}: not standard base64 ({e})") from None
    check(base64.b64encode(raw).decode() == text, f"{what}: base64 is not canonical")
    if length is not None:
        check(len(raw) == length, f"{what}: {len(raw)} bytes, expected {length}")
    return raw


def b64(raw):
    return base64.b64encode(raw).decode()


def as_int(value, what):
    check(isinstance(value, int) and not isinstance(value, bool), f"{what}: not an integer")
    check(value >= 0, f"{what}: negative")
    return value


# ------------------------------------------------ RFC 9162 section 2.1: tree


def sha256(data):
    return hashlib.sha256(data).digest()


def leaf_hash(data):
    return sha256(b"\x00" + data)


def node_hash(left, right):
    return sha256(b"\x01" + left + right)


def largest_power_of_two_below(n):
    """The largest power of two strictly smaller than n (n > 1)."""
    return 1 << ((n - 1).bit_length() - 1)


def mth(hashes):
    """MTH over a list of leaf hashes, straight from the definition."""
    n = len(hashes)
    if n == 0:
        return sha256(b"")
    if n == 1:
        return hashes[0]
    k = largest_power_of_two_below(n)
    return node_hash(mth(hashes[:k]), mth(hashes[k:]))


def verify_inclusion(leaf_index, tree_size, leaf_h, path, root):
    """RFC 9162 2.1.3.2, step by step; raises Fail."""
    check(leaf_index < tree_size, f"leaf_index {leaf_index} >= tree_size {tree_size}")
    fn, sn = leaf_index, tree_size - 1
    r = leaf_h
    for p in path:
        check(sn != 0, "inclusion proof too long")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while not (fn & 1 or fn == 0):
                    fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    check(sn == 0, "inclusion proof too short")
    check(r == root, "inclusion proof does not lead to the root")


def verify_consistency(first, second, first_hash, second_hash, path):
    """RFC 9162 2.1.4.2, with the trivial cases first == second and first == 0."""
    check(first <= second, f"first {first} > second {second}")
    if first == second:
        check(not path, "proof between equal sizes must be empty")
        check(first_hash == second_hash, "equal sizes but different roots")
        return
    if first == 0:
        check(not path, "proof from the empty tree must be empty")
        return
    check(path, "empty consistency proof")                      # step 1
    path = list(path)
    if first & (first - 1) == 0:                                # step 2
        path.insert(0, first_hash)
    fn, sn = first - 1, second - 1                              # step 3
    while fn & 1:                                               # step 4
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]                                           # step 5
    for c in path[1:]:                                          # step 6
        check(sn != 0, "consistency proof too long")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while not (fn & 1 or fn == 0):
                    fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    check(sn == 0, "consistency proof too short")               # step 7
    check(fr == first_hash, "consistency proof does not lead to the first root")
    check(sr == second_hash, "consistency proof does not lead to the second root")


# -------------------------------------------- C2SP signed-note + checkpoint


def key_id(name, public_key):
    return sha256(name.encode() + b"\x0a\x01" + public_key)[:4]


def check_key_name(name, what):
    # C2SP signed-note: non-empty, no Unicode spaces, no '+'.
    check(name != "", f"{what}: empty key name")
    check(not any(ch.isspace() or ch == "+" for ch in name),
          f"{what}: key name {name!r} contains a space or '+'")


def parse_verifier_key(text):
    """'<name>+<hex key id>+<base64(0x01 || key)>' -> (name, key id, key)."""
    check(isinstance(text, str), "verifier key: not a string")
    # Split from the left: the name may not contain '+', but the base64 key may.
    parts = text.split("+", 2)
    check(len(parts) == 3, "verifier key: not <name>+<key id>+<key>")
    name, hex_id, key_b64 = parts
    check_key_name(name, "verifier key")
    check(HEX_KEY_ID_RE.fullmatch(hex_id), f"verifier key: key id {hex_id!r} is not 8 hex digits")
    raw = b64decode_strict(key_b64, "verifier key", 33)
    check(raw[0] == 0x01, f"verifier key: algorithm byte {raw[0]}, expected 1 (Ed25519)")
    public_key = raw[1:]
    check(key_id(name, public_key).hex() == hex_id,
          f"verifier key: key id {hex_id} does not match the name and key "
          f"(computed {key_id(name, public_key).hex()})")
    return name, bytes.fromhex(hex_id), public_key


def split_note(note):
    """A signed note -> (text, [signature lines])."""
    check(isinstance(note, str), "not a string")
    check(note.endswith("\n"), "note does not end with a newline")
    cut = note.find("\n\n")
    check(cut >= 0, "no empty line between text and signatures")
    text, block = note[:cut + 1], note[cut + 2:]
    check(block != "", "no signature lines")
    return text, block[:-1].split("\n")


def parse_signature_line(line):
    check(line.startswith(EM_DASH + " "), f"signature line {line!r} does not start with an em dash")
    fields = line[2:].split(" ")
    check(len(fields) == 2, f"signature line {line!r} is not '\u2014 <name> <signature>'")
    name, sig_b64 = fields
    raw = b64decode_strict(sig_b64, "signature", 4 + 64)
    return name, raw[:4], raw[4:]


def open_checkpoint(note, key):
    """Verify a signed checkpoint with (name, key id, public key); return (size, root)."""
    name, kid, public_key = key
    text, sig_lines = split_note(note)
    # EVIDENCE.md (and C2SP): signature lines by other keys are ignored; one
    # by the trusted key (its name and key id) must be there and verify.
    ours = [parsed for parsed in map(parse_signature_line, sig_lines) if parsed[:2] == (name, kid)]
    others = ", ".join(f"{n} {k.hex()}" for n, k, _ in map(parse_signature_line, sig_lines))
    check(ours, f"no signature by {name} {kid.hex()} (signed by: {others})")
    _, _, signature = ours[0]
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, text.encode())
    except InvalidSignature:
        raise Fail("Ed25519 signature does not verify") from None
    lines = text[:-1].split("\n")
    # EVIDENCE.md lists exactly three lines (no tlog-checkpoint extension lines).
    check(len(lines) == 3, f"{len(lines)} text lines, expected 3 (origin, size, root)")
    origin, size_text, root_b64 = lines
    check(origin == name, f"origin {origin!r} is not the key name {name!r}")
    check(SIZE_RE.fullmatch(size_text), f"size {size_text!r} is not decimal without leading zeros")
    root = b64decode_strict(root_b64, "root hash", 32)
    return int(size_text), root


def sign_checkpoint(origin, size, root, private_key, kid=None):
    """Build a signed note (used only by the --tampered self-test)."""
    text = f"{origin}\n{size}\n{b64(root)}\n"
    public_key = private_key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    kid = key_id(origin, public_key) if kid is None else kid
    signature = private_key.sign(text.encode())
    return f"{text}\n{EM_DASH} {origin} {b64(kid + signature)}\n"


# ------------------------------------------------------ leaves (audit chain)


def reject_duplicate_keys(pairs):
    keys = [k for k, _ in pairs]
    check(len(keys) == len(set(keys)), f"duplicate key in {keys}")
    return dict(pairs)


def reject_float(text):
    raise Fail(f"non-integer number {text}")


def parse_leaf_json(data):
    try:
        text = data.decode("utf-8")
        return json.loads(text, object_pairs_hook=reject_duplicate_keys,
                          parse_float=reject_float, parse_constant=reject_float)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise Fail(f"not UTF-8 JSON ({e})") from None


def jcs_string(s):
    out = ['"']
    for ch in s:
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch in "\b\t\n\f\r":
            out.append({"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            check(not 0xD800 <= ord(ch) <= 0xDFFF, "lone surrogate in a string")
            out.append(ch)
    out.append('"')
    return "".join(out)


def jcs(value):
    """RFC 8785 canonical JSON for the values leaves may hold (no floats)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    # Countersign's numbers are integers; a float would need RFC 8785's
    # ECMAScript number form, which this script does not implement.
    check(not isinstance(value, float), f"non-integer number {value!r}")
    if isinstance(value, int):
        # Beyond 2^53 JCS would print the nearest double, not the integer.
        check(abs(value) <= 2**53, f"integer {value} outside the exact double range")
        return str(value)
    if isinstance(value, str):
        return jcs_string(value)
    if isinstance(value, list):
        return "[" + ",".join(jcs(v) for v in value) + "]"
    keys = sorted(value, key=lambda k: k.encode("utf-16-be"))
    return "{" + ",".join(jcs_string(k) + ":" + jcs(value[k]) for k in keys) + "}"


def check_leaf_entry(index, data):
    """Leaf i is the JCS body of audit entry seq = i + 1; return its chain hash."""
    where = f"leaf {index}"
    try:
        entry = parse_leaf_json(data)
        check(isinstance(entry, dict), "not a JSON object")
        check(set(entry) == LEAF_KEYS,
              f"keys {sorted(entry)}, expected {sorted(LEAF_KEYS)}")
        check(jcs(entry).encode() == data, "bytes are not the RFC 8785 (JCS) form")
    except Fail as e:
        raise Fail(f"{where}: {e}") from None
    check(entry["seq"] == index + 1 and not isinstance(entry["seq"], bool),
          f"{where}: seq {entry['seq']!r}, expected {index + 1}")
    check(isinstance(entry["at"], str) and RFC3339_RE.fullmatch(entry["at"]),
          f"{where}: at {entry['at']!r} is not RFC 3339 text")
    for key in ("actor", "action"):
        check(isinstance(entry[key], str), f"{where}: {key} is not a string")
    for key in ("tenant_id", "proposal_id", "request_hash"):
        check(entry[key] is None or isinstance(entry[key], str),
              f"{where}: {key} is neither a string nor null")
    check(isinstance(entry["data"], dict), f"{where}: data is not an object")
    check(isinstance(entry["prev_hash"], str) and CHAIN_HASH_RE.fullmatch(entry["prev_hash"]),
          f"{where}: prev_hash {entry['prev_hash']!r} is not sha256:<64 hex>")
    return entry["prev_hash"], "sha256:" + hashlib.sha256(data).hexdigest()


def check_audit_chain(leaves):
    expected_prev = ZERO_HASH
    for i, data in enumerate(leaves):
        prev, own = check_leaf_entry(i, data)
        check(prev == expected_prev,
              f"leaf {i}: prev_hash {prev} is not the previous leaf's hash {expected_prev}")
        expected_prev = own


# ------------------------------------------------------------ the log check


def load_fixture(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise Fail(f"cannot read fixture {path}: {e}") from None


def field(obj, name, kind, what="fixture"):
    check(isinstance(obj, dict) and name in obj, f"{what}: missing {name!r}")
    check(isinstance(obj[name], kind), f"{what}: {name!r} has the wrong type")
    return obj[name]


def decode_hashes(entry, what):
    hashes = field(entry, "hashes", list, what)
    return [b64decode_strict(h, f"{what} hash {j}", 32) for j, h in enumerate(hashes)]


def open_all_checkpoints(fixture, key, say):
    notes = field(fixture, "checkpoints", list)
    check(notes, "fixture: no checkpoints")
    opened = []
    for i, note in enumerate(notes):
        try:
            size, root = open_checkpoint(note, key)
        except Fail as e:
            raise Fail(f"checkpoint {i}: {e}") from None
        say(f"ok: checkpoint {i}: size {size}, signed by {key[0]} (key id {key[1].hex()})")
        opened.append((size, root))
    for i in range(1, len(opened)):
        check(opened[i - 1][0] <= opened[i][0],
              f"checkpoint {i}: size {opened[i][0]} is smaller than the one before "
              f"({opened[i - 1][0]})")
    say(f"ok: checkpoint sizes non-decreasing: {', '.join(str(s) for s, _ in opened)}")
    return opened


def check_roots(opened, hashes, say):
    """Every checkpoint's root is the MTH of its prefix of the leaves."""
    newest_size, newest_root = opened[-1]
    check(len(hashes) == newest_size,
          f"{len(hashes)} leaves, but the newest checkpoint has size {newest_size}")
    check(mth(hashes) == newest_root,
          f"MTH of the {len(hashes)} leaves is not the newest checkpoint's root")
    say(f"ok: MTH of all {len(hashes)} leaves = newest checkpoint root")
    for i, (size, root) in enumerate(opened[:-1]):
        check(mth(hashes[:size]) == root,
              f"checkpoint {i}: root is not the MTH of the first {size} leaves")
        say(f"ok: checkpoint {i}: root = MTH of the first {size} leaves")
    return dict(opened)


def root_of(size, roots, hashes):
    check(size <= len(hashes), f"tree size {size} beyond the {len(hashes)} leaves")
    if size in roots:
        return roots[size], "checkpoint"
    return mth(hashes[:size]), "leaves"


def check_inclusion_entry(i, entry, roots, hashes):
    what = f"inclusion {i}"
    index = as_int(field(entry, "leaf_index", int, what), f"{what}: leaf_index")
    size = as_int(field(entry, "tree_size", int, what), f"{what}: tree_size")
    path = decode_hashes(entry, what)
    check(index < len(hashes), f"{what}: leaf_index {index} beyond the leaves")
    root, source = root_of(size, roots, hashes)
    try:
        verify_inclusion(index, size, hashes[index], path, root)
    except Fail as e:
        raise Fail(f"{what} (leaf {index} in tree {size}): {e}") from None
    return f"ok: inclusion of leaf {index} in tree {size} ({len(path)} hashes, root from {source})"


def check_consistency_entry(i, entry, roots, hashes):
    what = f"consistency {i}"
    first = as_int(field(entry, "first", int, what), f"{what}: first")
    second = as_int(field(entry, "tree_size", int, what), f"{what}: tree_size")
    path = decode_hashes(entry, what)
    first_root, first_source = root_of(first, roots, hashes)
    second_root, second_source = root_of(second, roots, hashes)
    try:
        verify_consistency(first, second, first_root, second_root, path)
    except Fail as e:
        raise Fail(f"{what} ({first} -> {second}): {e}") from None
    return (f"ok: consistency {first} -> {second} ({len(path)} hashes, "
            f"roots from {first_source}/{second_source})")


def verify_log(fixture, say=print):
    """Every check of the `log` command, in order; raises Fail at the first failure."""
    check(isinstance(fixture, dict), "fixture: not a JSON object")
    key = parse_verifier_key(field(fixture, "verifier_key", str))
    say(f"ok: verifier key {key[0]} (key id {key[1].hex()}, Ed25519)")
    opened = open_all_checkpoints(fixture, key, say)
    leaves = [b64decode_strict(leaf, f"leaf {i}")
              for i, leaf in enumerate(field(fixture, "leaves", list))]
    hashes = [leaf_hash(leaf) for leaf in leaves]
    roots = check_roots(opened, hashes, say)
    for i, entry in enumerate(field(fixture, "inclusion", list)):
        say(check_inclusion_entry(i, entry, roots, hashes))
    for i, entry in enumerate(field(fixture, "consistency", list)):
        say(check_consistency_entry(i, entry, roots, hashes))
    check_audit_chain(leaves)
    say(f"ok: leaves 0..{len(leaves) - 1} are JCS audit entries with seq = index + 1")
    say("ok: audit chain: each prev_hash is the previous leaf's sha256 (the first, zeros)")


# ---------------------------------------------------------- --tampered


def flip_byte(raw, at=None):
    at = len(raw) // 2 if at is None else at
    return raw[:at] + bytes([raw[at] ^ 0x01]) + raw[at + 1:]


def flip_b64_hash(text):
    return b64(flip_byte(base64.b64decode(text), 0))


def refusal(action):
    """Run action(); return its Fail message, or None if it was accepted."""
    try:
        action()
    except Fail as e:
        return str(e)
    return None


def decoded(texts):
    return [base64.b64decode(t) for t in texts]


def first_entry(entries, what, predicate):
    for entry in entries:
        if predicate(entry):
            return entry
    raise Fail(f"cannot build this tampered copy: no {what} in the fixture")


def longest_proof(entries, what):
    entry = max(entries, key=lambda e: len(e["hashes"]), default=None)
    check(entry and entry["hashes"], f"cannot build this tampered copy: no non-empty {what}")
    return entry


# Each tamper_* edits fx (a deep copy of the fixture) in place and returns
# (what it did, the specific check that must refuse it). `orig` holds the
# untouched fixture's verified state: key, roots by size, leaf hashes.


def tamper_leaf_byte(fx, orig):
    entry = first_entry(fx["inclusion"], "inclusion proof", lambda e: True)
    index, size = entry["leaf_index"], entry["tree_size"]
    leaf = flip_byte(decoded(fx["leaves"])[index])
    fx["leaves"][index] = b64(leaf)
    root = orig["root_of"](size)
    proof = decoded(entry["hashes"])
    targeted = lambda: verify_inclusion(index, size, leaf_hash(leaf), proof, root)
    return f"(a) leaf {index} with one byte flipped", targeted


def tamper_swap_leaves(fx, orig):
    entry = first_entry(fx["inclusion"], "inclusion proof in a tree of 2+ leaves",
                        lambda e: e["tree_size"] >= 2)
    i, size = entry["leaf_index"], entry["tree_size"]
    j = i + 1 if i + 1 < size else i - 1
    leaves = fx["leaves"]
    check(leaves[i] != leaves[j], f"cannot swap: leaves {i} and {j} are equal")
    leaves[i], leaves[j] = leaves[j], leaves[i]
    moved = leaf_hash(base64.b64decode(leaves[i]))
    root, proof = orig["root_of"](size), decoded(entry["hashes"])
    targeted = lambda: verify_inclusion(i, size, moved, proof, root)
    return f"(b) leaves {i} and {j} swapped", targeted


def tamper_size_line(fx, orig):
    lines = fx["checkpoints"][-1].split("\n")
    lines[1] = str(int(lines[1]) + 1)
    note = fx["checkpoints"][-1] = "\n".join(lines)
    targeted = lambda: open_checkpoint(note, orig["key"])
    return f"(c) newest checkpoint's size line changed to {lines[1]}", targeted


def resign_with_fresh_key(fx, orig, keep_key_id):
    key = orig["key"]
    size, root = open_checkpoint(fx["checkpoints"][-1], key)
    kid = key[1] if keep_key_id else None
    note = fx["checkpoints"][-1] = sign_checkpoint(
        key[0], size, root, Ed25519PrivateKey.generate(), kid)
    return lambda: open_checkpoint(note, key)


def tamper_resign(fx, orig):
    targeted = resign_with_fresh_key(fx, orig, keep_key_id=False)
    return "(d) newest checkpoint re-signed by a fresh key of the same name", targeted


def tamper_resign_spoofed_id(fx, orig):
    targeted = resign_with_fresh_key(fx, orig, keep_key_id=True)
    return "(d') newest checkpoint re-signed by a fresh key claiming the real key id", targeted


def tamper_consistency_hash(fx, orig):
    entry = longest_proof(fx["consistency"], "consistency proof")
    entry["hashes"][0] = flip_b64_hash(entry["hashes"][0])
    first, second = entry["first"], entry["tree_size"]
    roots, proof = (orig["root_of"](first), orig["root_of"](second)), decoded(entry["hashes"])
    targeted = lambda: verify_consistency(first, second, *roots, proof)
    return f"(e) a hash flipped in the consistency proof {first} -> {second}", targeted


def tamper_inclusion_hash(fx, orig):
    entry = longest_proof(fx["inclusion"], "inclusion proof")
    entry["hashes"][-1] = flip_b64_hash(entry["hashes"][-1])
    index, size = entry["leaf_index"], entry["tree_size"]
    leaf_h, root, proof = orig["hashes"][index], orig["root_of"](size), decoded(entry["hashes"])
    targeted = lambda: verify_inclusion(index, size, leaf_h, proof, root)
    return f"(f) a hash flipped in the inclusion proof of leaf {index} in tree {size}", targeted


def tamper_drop_leaf(fx, orig):
    check(fx["leaves"], "cannot drop a leaf: there are none")
    index = len(fx["leaves"]) // 2
    del fx["leaves"][index]
    hashes = [leaf_hash(leaf) for leaf in decoded(fx["leaves"])]
    newest_root = orig["newest_root"]
    targeted = lambda: check(mth(hashes) == newest_root,
                             "MTH of the remaining leaves is not the newest root")
    return f"(g) leaf {index} dropped", targeted


TAMPERS = [
    tamper_leaf_byte, tamper_swap_leaves, tamper_size_line, tamper_resign,
    tamper_resign_spoofed_id, tamper_consistency_hash, tamper_inclusion_hash,
    tamper_drop_leaf,
]


def original_state(fixture):
    """The untouched (already verified) fixture's key, roots and leaf hashes."""
    key = parse_verifier_key(fixture["verifier_key"])
    opened = [open_checkpoint(note, key) for note in fixture["checkpoints"]]
    hashes = [leaf_hash(leaf) for leaf in decoded(fixture["leaves"])]
    roots = dict(opened)
    return {
        "key": key,
        "hashes": hashes,
        "newest_root": opened[-1][1],
        "root_of": lambda size: root_of(size, roots, hashes)[0],
    }


def self_test(fixture):
    """The untouched fixture must pass; every tampered copy must be refused."""
    verify_log(fixture, say=lambda line: None)
    print("ok: the untouched fixture verifies")
    orig = original_state(fixture)
    accepted = 0
    for tamper in TAMPERS:
        fx = copy.deepcopy(fixture)
        what, targeted = tamper(fx, orig)
        full = refusal(lambda: verify_log(fx, say=lambda line: None))
        specific = refusal(targeted)
        if full is None or specific is None:
            accepted += 1
            stage = "full verification" if full is None else "the specific check"
            print(f"FAIL: ACCEPTED by {stage}: {what}", file=sys.stderr)
        else:
            print(f"refused: {what} -- {full}; specific check: {specific}")
    check(accepted == 0, f"{accepted} of {len(TAMPERS)} tampered copies accepted")
    print(f"ok: all {len(TAMPERS)} tampered copies refused")


# ------------------------------------------------------------ the bundle
#
# docs/EVIDENCE.md, "The proof bundle" -> "What a verifier checks": checks
# 1 to 12, in that order, one function each. Every check_* function takes the
# Context (the bundle and what earlier checks established), raises Fail with
# the reason, or returns the detail printed after "ok N <name>:". Where the
# document can be read two ways, the comment at the spot says which reading
# this script takes (always the stricter one).

BUNDLE_FORMAT = "countersign-evidence/1"
# "Every member below is always present (null or empty when it does not
# apply)": the members and the JSON types each may have.
BUNDLE_MEMBERS = {
    "format": (str,), "issuer": (str,), "tenant_id": (str,), "proposal_id": (str,),
    "status": (str,), "exported_at": (str,), "request": (dict,), "request_hash": (str,),
    "commitments": (dict,), "disclosed": (dict,), "policy": (dict,), "approvals": (list,),
    "approval_token": (str, type(None)), "mandate": (str, type(None)),
    "operation": (dict, type(None)), "log": (dict,), "keys": (dict,),
}
RECEIPT_TYP = "countersign-receipt+jws"
TOKEN_TYP = "countersign-approval+jwt"
MANDATE_TYP = "countersign-mandate+jwt"
RECEIPT_CLAIMS = {"iss", "iat", "kind", "action", "actor", "tid", "pid", "rh", "prev", "data"}
MANDATE_CLAIMS = {"iss", "sub", "tid", "rh", "jti", "iat", "exp", "approvers", "delegations",
                  "amr", "authorization_details"}
MANDATE_DETAIL_MEMBERS = {
    "type", "actions", "locations", "instructedAmount", "creditorName", "creditorAccount",
    "debtorAccount", "remittanceInformationUnstructured", "purpose",
}
PASSKEY_MEMBERS = {
    "kind", "nonce", "listed", "passkey_id", "public_key", "fingerprint", "rp_id", "origin",
    "credential_id", "authenticator_data", "client_data_json", "signature",
}
# The two accounts, named alike in commitments and disclosed.
ACCOUNTS = ("source_account", "destination")
# Which receipt kinds record which action. The receipts' table lists the
# kinds and the actions as two parallel lists; this reads them in order
# (operation.<status> being the rail's answer, a reconciliation or a
# resolution). A leaf whose action is not here gets no receipt.
RECEIPT_KINDS_BY_ACTION = {
    "proposal.approval_given": {"approval"},
    "proposal.rejected": {"rejection"},
    "proposal.approved": {"approval_token"},
    "operation.created": {"authorization"},
    "proposal.reversed": {"reversal"},
}
OPERATION_STATUS_KINDS = {"rail_answer", "reconciliation", "resolution"}
# ISO 4217 minor units; every currency not listed here has 2.
CURRENCY_DECIMALS = {
    "BHD": 3, "KWD": 3, "OMR": 3, "JOD": 3, "TND": 3, "IQD": 3, "LYD": 3,
    "CLP": 0, "ISK": 0, "UGX": 0, "XAF": 0, "XOF": 0, "PYG": 0, "KRW": 0, "JPY": 0, "VND": 0,
}
CURRENCY_RE = re.compile(r"[A-Z]{3}")
B64URL_RE = re.compile(r"[A-Za-z0-9_-]*")
SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://(.+)")


class BundleFail(Exception):
    """Check `number` (`name`) failed for `reason`."""

    def __init__(self, number, name, reason):
        super().__init__(f"check {number} ({name}): {reason}")
        self.number = number


class Usage(Exception):
    """Bad usage or an unreadable file: exit 2."""


class Leaf:
    """One entry of log.leaves, opened: its index, parsed body and chain hash."""

    def __init__(self, index, entry, prev_hash, chain_hash):
        self.index = index
        self.entry = entry
        self.prev_hash = prev_hash
        self.chain_hash = chain_hash
        self.action = entry["action"]
        self.data = entry["data"]


class Context:
    """The bundle being verified and what the checks so far established."""

    def __init__(self, text, key_option, checkpoint_option):
        self.text = text                        # the bundle file's text
        self.key_option = key_option            # --key, or None
        self.checkpoint_option = checkpoint_option  # --checkpoint's text, or None
        self.doc = None                         # check 1: the parsed bundle
        self.log_key = None                     # check 2: (name, key id, public key)
        self.size = None                        # check 3: the checkpoint's size...
        self.root = None                        # ...and root hash
        self.leaves = []                        # check 5: every Leaf
        self.own = []                           # check 5: the leaves of this proposal
        self.created = None                     # check 5: the proposal.created Leaf
        self.receipt_keys = None                # check 6: kid -> public key
        self.token_claims = None                # check 10: the approval token's claims


# -------------------------------------------------- bundle: small helpers


def member(obj, name, what, kinds=None):
    """obj[name], which must be present (and of one of `kinds`, if given)."""
    check(isinstance(obj, dict), f"{what}: not a JSON object")
    check(name in obj, f"{what}: no member {name!r}")
    if kinds is not None:
        value = obj[name]
        check(isinstance(value, kinds) and not isinstance(value, bool),
              f"{what}.{name}: {type(value).__name__}, expected "
              + " or ".join(k.__name__ for k in kinds))
    return obj[name]


def json_equal(a, b):
    """Equal JSON values. Like ==, except that true and false are not 1 and 0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def as_json(value):
    return json.dumps(value, ensure_ascii=False)


def check_equal(actual, expected, what):
    check(json_equal(actual, expected),
          f"{what} is {as_json(actual)}, expected {as_json(expected)}")


def check_chain_hash(value, what):
    check(isinstance(value, str) and CHAIN_HASH_RE.fullmatch(value),
          f"{what} {value!r} is not sha256:<64 lowercase hex>")


def sha256_text(raw):
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def b64url(raw):
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def b64url_decode(text, what, length=None):
    """base64url without padding, canonical (re-encodes to the same text)."""
    check(isinstance(text, str) and B64URL_RE.fullmatch(text),
          f"{what}: not base64url without padding")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as e:
        raise Fail(f"{what}: not base64url ({e})") from None
    check(b64url(raw) == text, f"{what}: base64url is not canonical")
    if length is not None:
        check(len(raw) == length, f"{what}: {len(raw)} bytes, expected {length}")
    return raw


def parse_json_bytes(raw, what):
    """UTF-8 JSON with unique keys and integer numbers only."""
    try:
        return parse_leaf_json(raw)
    except Fail as e:
        raise Fail(f"{what}: {e}") from None


def length_prefixed(raw):
    """field(x) of the challenges: x's length as 8 bytes big-endian, then x."""
    return len(raw).to_bytes(8, "big") + raw


def origin_of(issuer):
    """The log origin for a public URL: without its scheme, '/log' appended."""
    match = SCHEME_RE.fullmatch(issuer)
    check(match, f"issuer {issuer!r} is not a URL with a scheme")
    rest = match.group(1)
    # https://pay.example.com/ -> pay.example.com/log: the URL's trailing
    # slash is not doubled.
    if rest.endswith("/"):
        rest = rest[:-1]
    return rest + "/log"


def format_amount(amount_minor, currency):
    """amount_minor written with the currency's ISO 4217 decimals."""
    check(isinstance(amount_minor, int) and not isinstance(amount_minor, bool),
          f"amount_minor {amount_minor!r} is not an integer")
    # Not written in EVIDENCE.md; a payment's amount is never negative.
    check(amount_minor >= 0, f"amount_minor {amount_minor} is negative")
    decimals = CURRENCY_DECIMALS.get(currency, 2)
    if decimals == 0:
        return str(amount_minor)
    whole, fraction = divmod(amount_minor, 10 ** decimals)
    return f"{whole}.{fraction:0{decimals}d}"


# ----------------------------------------------- bundle: ES256 JWS and JWKs


def load_jwk_set(jwk_set, what):
    """A JWK set of P-256 signing keys -> {kid: public key}."""
    keys = member(jwk_set, "keys", what, (list,))
    by_kid = {}
    for i, jwk in enumerate(keys):
        where = f"{what}.keys[{i}]"
        check(isinstance(jwk, dict), f"{where}: not a JSON object")
        check(jwk.get("kty") == "EC", f"{where}: kty {jwk.get('kty')!r}, expected EC")
        check(jwk.get("crv") == "P-256", f"{where}: crv {jwk.get('crv')!r}, expected P-256")
        check("d" not in jwk, f"{where}: holds a private key")
        # EVIDENCE.md: `use: "sig"`. Stricter reading: `use` and `alg`, when
        # present, must say a signing key for ES256.
        check(jwk.get("use", "sig") == "sig", f"{where}: use {jwk.get('use')!r}, expected sig")
        check(jwk.get("alg", "ES256") == "ES256",
              f"{where}: alg {jwk.get('alg')!r}, expected ES256")
        kid = member(jwk, "kid", where, (str,))
        check(kid not in by_kid, f"{where}: kid {kid!r} appears twice")
        x = b64url_decode(member(jwk, "x", where), f"{where}.x", 32)
        y = b64url_decode(member(jwk, "y", where), f"{where}.y", 32)
        numbers = ec.EllipticCurvePublicNumbers(
            int.from_bytes(x, "big"), int.from_bytes(y, "big"), ec.SECP256R1())
        try:
            by_kid[kid] = numbers.public_key()
        except ValueError:
            raise Fail(f"{where}: x, y is not a point on P-256") from None
    return by_kid


def point_bytes(public_key):
    return public_key.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


def open_jws(token, typ, keys, set_name, what):
    """Verify an ES256 compact JWS by a key of `keys`; return (header, claims)."""
    check(isinstance(token, str), f"{what}: not a string")
    parts = token.split(".")
    check(len(parts) == 3, f"{what}: not a compact JWS (three parts)")
    header = parse_json_bytes(b64url_decode(parts[0], f"{what} header"), f"{what} header")
    check(isinstance(header, dict), f"{what}: header is not a JSON object")
    check(header.get("alg") == "ES256", f"{what}: alg {header.get('alg')!r}, expected ES256")
    check(header.get("typ") == typ, f"{what}: typ {header.get('typ')!r}, expected {typ}")
    # RFC 7515 4.1.11: extensions named in `crit` must be understood; none is.
    if "crit" in header:
        raise Fail(f"{what}: header has crit {header['crit']!r}")
    kid = header.get("kid")
    check(isinstance(kid, str), f"{what}: header has no kid")
    check(kid in keys, f"{what}: kid {kid!r} is not a key of {set_name}")
    signature = b64url_decode(parts[2], f"{what} signature", 64)
    # JWS ES256 is R || S (RFC 7518 3.4); `cryptography` wants ASN.1 DER.
    der = encode_dss_signature(int.from_bytes(signature[:32], "big"),
                               int.from_bytes(signature[32:], "big"))
    try:
        keys[kid].verify(der, f"{parts[0]}.{parts[1]}".encode("ascii"), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise Fail(f"{what}: ES256 signature does not verify "
                   f"under {set_name} kid {kid!r}") from None
    claims = parse_json_bytes(b64url_decode(parts[1], f"{what} payload"), f"{what} payload")
    check(isinstance(claims, dict), f"{what}: payload is not a JSON object")
    return header, claims


def receipt_kinds(action):
    """The receipt kinds that may record `action`; empty if it gets none."""
    if action in RECEIPT_KINDS_BY_ACTION:
        return RECEIPT_KINDS_BY_ACTION[action]
    if action.startswith("operation."):
        return OPERATION_STATUS_KINDS
    return set()


def own_leaves_with(ctx, action):
    return [leaf for leaf in ctx.own if leaf.action == action]


def at_most_one(ctx, action):
    """`the <action> leaf`: the definite article is read as "at most one"."""
    found = own_leaves_with(ctx, action)
    check(len(found) <= 1,
          f"{len(found)} {action} leaves (indexes {[leaf.index for leaf in found]}), expected one")
    return found[0] if found else None


# ------------------------------------------------------ bundle: the checks


def check_format(ctx):
    """1. `format` is countersign-evidence/1."""
    # Re-parse strictly: duplicate keys and non-integer numbers are refused
    # ("Numbers anywhere are integers"; the bundle repeats the leaves' values).
    try:
        doc = json.loads(ctx.text, object_pairs_hook=reject_duplicate_keys,
                         parse_float=reject_float, parse_constant=reject_float)
    except json.JSONDecodeError as e:
        raise Fail(f"not JSON ({e})") from None
    check(isinstance(doc, dict), "the bundle is not a JSON object")
    check(doc.get("format") == BUNDLE_FORMAT,
          f"format {doc.get('format')!r}, expected {BUNDLE_FORMAT!r}")
    # Stricter reading of "Every member below is always present": all of
    # them, each of its type, and no other (nothing unverified rides along).
    for name, kinds in BUNDLE_MEMBERS.items():
        member(doc, name, "bundle", kinds)
    extra = sorted(set(doc) - set(BUNDLE_MEMBERS))
    check(not extra, f"unknown members {extra}")
    ctx.doc = doc
    return f"{BUNDLE_FORMAT}, proposal {doc['proposal_id']} of tenant {doc['tenant_id']}"


def check_log_key(ctx):
    """2. keys.log parses; with --key, it is that key."""
    text = member(ctx.doc["keys"], "log", "keys", (str,))
    ctx.log_key = parse_verifier_key(text)
    if ctx.key_option is None:
        return f"{ctx.log_key[0]} (key id {ctx.log_key[1].hex()}), not pinned (no --key)"
    # Both parse canonically, so the same key is the same text.
    check(text == ctx.key_option, f"keys.log {text!r} is not the --key {ctx.key_option!r}")
    return f"{ctx.log_key[0]} (key id {ctx.log_key[1].hex()}) = --key"


def check_checkpoint(ctx):
    """3. log.checkpoint is a note signed by keys.log, origin its name, size log.tree_size."""
    log = ctx.doc["log"]
    note = member(log, "checkpoint", "log", (str,))
    tree_size = as_int(member(log, "tree_size", "log", (int,)), "log.tree_size")
    size, root = open_checkpoint(note, ctx.log_key)   # also checks origin == key name
    check(size == tree_size, f"checkpoint size {size} is not log.tree_size {tree_size}")
    # "No checkpoint of size 0 is ever signed."
    check(size > 0, "checkpoint of size 0")
    # Stricter reading: the origin is the console's public URL (the issuer)
    # without its scheme, with /log appended ("Checkpoints", line 1).
    expected = origin_of(ctx.doc["issuer"])
    check(ctx.log_key[0] == expected,
          f"origin {ctx.log_key[0]!r} is not the issuer's {expected!r}")
    ctx.size, ctx.root = size, root
    return f"size {size}, root {b64(root)}, signed by {ctx.log_key[0]}"


def check_trusted_checkpoint(ctx):
    """4. With --checkpoint: same key, same size, same root as log.checkpoint."""
    if ctx.checkpoint_option is None:
        return None
    size, root = open_checkpoint(ctx.checkpoint_option, ctx.log_key)
    check(size == ctx.size, f"trusted checkpoint has size {size}, the bundle's {ctx.size}"
          f" (export with tree_size={size} to prove against it)")
    check(root == ctx.root, f"trusted checkpoint of size {size} has another root: "
          f"{b64(root)}, the bundle's {b64(ctx.root)} (a fork)")
    return f"--checkpoint has the same size {size} and root"


def open_bundle_leaf(n, item, ctx):
    """log.leaves[n] -> Leaf, its inclusion proof verified."""
    what = f"log.leaves[{n}]"
    index = as_int(member(item, "index", what, (int,)), f"{what}.index")
    check(index < ctx.size, f"{what}: index {index} is not below the tree size {ctx.size}")
    body = b64decode_strict(member(item, "body", what), f"{what}.body")
    proof = [b64decode_strict(h, f"{what}.proof[{j}]", 32)
             for j, h in enumerate(member(item, "proof", what, (list,)))]
    try:
        verify_inclusion(index, ctx.size, leaf_hash(body), proof, ctx.root)
    except Fail as e:
        raise Fail(f"{what} (index {index}): {e}") from None
    # The nine members, seq = index + 1, JCS bytes, the members' types.
    prev_hash, chain_hash = check_leaf_entry(index, body)
    return Leaf(index, parse_leaf_json(body), prev_hash, chain_hash)


def check_leaves(ctx):
    """5. Indexes, inclusion proofs, the bodies' members; the first is proposal.created."""
    doc = ctx.doc
    items = member(doc["log"], "leaves", "log", (list,))
    check(items, "log.leaves is empty")
    for n, item in enumerate(items):
        leaf = open_bundle_leaf(n, item, ctx)
        where = f"leaf {leaf.index} ({leaf.action})"
        if ctx.leaves:
            before = ctx.leaves[-1]
            check(leaf.index > before.index,
                  f"log.leaves[{n}]: index {leaf.index} does not follow {before.index}")
            # Not in check 5's text, but implied by "The leaves": adjacent
            # entries are chained.
            if leaf.index == before.index + 1:
                check(leaf.prev_hash == before.chain_hash,
                      f"{where}: prev_hash is not leaf {before.index}'s hash")
        if leaf.index == 0:
            check(leaf.prev_hash == ZERO_HASH, f"{where}: the first entry's prev_hash is not zeros")
        check_equal(leaf.entry["tenant_id"], doc["tenant_id"], f"{where}: tenant_id")
        if leaf.entry["proposal_id"] is None:
            check(leaf.action == "passkey.registered",
                  f"{where}: proposal_id is null but it is not a passkey.registered entry")
        else:
            check_equal(leaf.entry["proposal_id"], doc["proposal_id"], f"{where}: proposal_id")
        request_hash = leaf.entry["request_hash"]
        check(request_hash is None or request_hash == doc["request_hash"],
              f"{where}: request_hash {request_hash!r} is neither null "
              f"nor {doc['request_hash']!r}")
        ctx.leaves.append(leaf)
    # "The first leaf is the proposal.created entry." A passkey.registered
    # leaf (proposal_id null) usually precedes it in log order, and indexes
    # must increase, so this reads "the first leaf of this proposal" -- and,
    # stricter, that proposal.created appears once.
    ctx.own = [leaf for leaf in ctx.leaves if leaf.entry["proposal_id"] is not None]
    check(ctx.own, "no leaf of this proposal")
    check(ctx.own[0].action == "proposal.created",
          f"the first leaf of the proposal (index {ctx.own[0].index}) is {ctx.own[0].action}, "
          "not proposal.created")
    ctx.created = at_most_one(ctx, "proposal.created")
    return f"{len(ctx.leaves)} leaves included under size {ctx.size}"


def check_one_receipt(ctx, leaf, previous):
    """One leaf's data.receipt; `previous` is the receipt before it, or None."""
    what = f"leaf {leaf.index} ({leaf.action}): receipt"
    receipt = leaf.data["receipt"]
    header, claims = open_jws(receipt, RECEIPT_TYP, ctx.receipt_keys, "keys.receipts", what)
    # Stricter reading: the header and the claims are exactly the ones listed.
    check(set(header) == {"alg", "typ", "kid"}, f"{what}: header members {sorted(header)}")
    check(set(claims) == RECEIPT_CLAIMS,
          f"{what}: claims {sorted(claims)}, expected {sorted(RECEIPT_CLAIMS)}")
    check_equal(claims["iss"], ctx.doc["issuer"], f"{what}: iss")
    as_int(claims["iat"], f"{what}: iat")
    kinds = receipt_kinds(leaf.action)
    check(claims["kind"] in kinds,
          f"{what}: kind {claims['kind']!r} does not record {leaf.action} "
          f"(expected {' or '.join(sorted(kinds)) or 'no receipt at all'})")
    for claim, name in (("tid", "tenant_id"), ("pid", "proposal_id"), ("rh", "request_hash"),
                        ("action", "action"), ("actor", "actor")):
        check_equal(claims[claim], leaf.entry[name], f"{what}: {claim}")
    data = {k: v for k, v in leaf.data.items() if k != "receipt"}
    check(json_equal(claims["data"], data), f"{what}: data is not the leaf's data")
    expected_prev = None if previous is None else sha256_text(previous.encode("ascii"))
    check_equal(claims["prev"], expected_prev, f"{what}: prev")


def check_receipts(ctx):
    """6. The receipts of this proposal's leaves: signed, matching, chained."""
    ctx.receipt_keys = load_jwk_set(member(ctx.doc["keys"], "receipts", "keys"), "keys.receipts")
    previous = None
    for leaf in ctx.own:
        # A data.receipt of null is read as no receipt (and then fails below
        # if the action gets one).
        if leaf.data.get("receipt") is None:
            check(not receipt_kinds(leaf.action),
                  f"leaf {leaf.index} ({leaf.action}) carries no receipt")
            continue
        check_one_receipt(ctx, leaf, previous)
        previous = leaf.data["receipt"]
    count = sum(1 for leaf in ctx.own if leaf.data.get("receipt") is not None)
    return f"{count} receipts verified and chained"


def check_disclosed(ctx):
    """Check 7's disclosures: each commitment recomputes from its salt and value."""
    disclosed = ctx.doc["disclosed"]
    commitments = ctx.doc["commitments"]
    for name, entry in disclosed.items():
        what = f"disclosed.{name}"
        check(name in ACCOUNTS, f"{what}: not source_account or destination")
        check(isinstance(entry, dict) and set(entry) == {"value", "salt"},
              f"{what}: not {{value, salt}}")
        value = member(entry, "value", what, (str,))
        # "salt is 32 random bytes"; base64url like the bundle's other binary values.
        salt = b64url_decode(entry["salt"], f"{what}.salt", 32)
        computed = sha256_text(salt + value.encode("utf-8"))
        check(computed == commitments[name],
              f"{what}: sha256(salt || value) is {computed}, not commitments.{name}")


def check_request(ctx):
    """7. The request against the proposal.created leaf, the commitments, the disclosures."""
    doc = ctx.doc
    request, created = doc["request"], ctx.created.data
    check_chain_hash(doc["request_hash"], "request_hash")
    check_equal(member(request, "tenant_id", "request"), doc["tenant_id"], "request.tenant_id")
    for name in ("kind", "amount_minor", "currency"):
        check_equal(member(request, name, "request"),
                    member(created, name, "proposal.created data"), f"request.{name}")
    check_equal(ctx.created.entry["request_hash"], doc["request_hash"],
                "the proposal.created leaf's request_hash")
    commitments = doc["commitments"]
    check(set(commitments) == set(ACCOUNTS), f"commitments: members {sorted(commitments)}")
    for name in ACCOUNTS:
        check_chain_hash(commitments[name], f"commitments.{name}")
    destination = member(request, "destination", "request", (dict,))
    check_equal(member(request, "source_account", "request"), commitments["source_account"],
                "request.source_account")
    check_equal(member(destination, "id", "request.destination"), commitments["destination"],
                "request.destination.id")
    # "the operation.created leaf's ... commitments, when present, equal them":
    # read as "when the leaf is present" -- it must then carry both.
    operation = at_most_one(ctx, "operation.created")
    if operation is not None:
        for data_name, name in (("source_account_commitment", "source_account"),
                                ("destination_commitment", "destination")):
            where = f"leaf {operation.index} (operation.created)"
            check_equal(member(operation.data, data_name, f"{where} data"),
                        commitments[name], f"{where}: {data_name}")
    check_disclosed(ctx)
    if set(doc["disclosed"]) != set(ACCOUNTS):
        return f"matches the proposal.created leaf; {len(doc['disclosed'])} of 2 accounts disclosed"
    full = copy.deepcopy(request)
    full["source_account"] = doc["disclosed"]["source_account"]["value"]
    full["destination"]["id"] = doc["disclosed"]["destination"]["value"]
    computed = sha256_text(jcs(full).encode("utf-8"))
    check(computed == doc["request_hash"],
          f"the request with both accounts put back hashes to {computed}, not request_hash")
    return ("matches the proposal.created leaf; both accounts disclosed and "
            "the request hash recomputes")


def check_policy(ctx):
    """8. policy equals the proposal.created leaf's data.policy."""
    expected = member(ctx.created.data, "policy", f"leaf {ctx.created.index} data")
    check(json_equal(ctx.doc["policy"], expected),
          "policy is not the proposal.created leaf's data.policy")
    return "equals the proposal.created leaf's data.policy"


def passkey_challenge(ctx, approval, passkey, what):
    """The challenge of check 9 for a step_up or bulk_step_up assertion."""
    doc = ctx.doc
    nonce = b64url_decode(passkey["nonce"], f"{what}.nonce")
    approver = approval["approver_id"].encode("utf-8")
    if passkey["kind"] == "step_up":
        # Stricter reading: a step-up lists nothing.
        check(passkey["listed"] is None, f"{what}: a step_up with listed {passkey['listed']!r}")
        parts = [b"countersign/step-up/v1", doc["request_hash"].encode("utf-8"),
                 doc["proposal_id"].encode("utf-8"), approver, nonce]
        return sha256(b"".join(length_prefixed(p) for p in parts))
    check(passkey["kind"] == "bulk_step_up",
          f"{what}: kind {passkey['kind']!r}, expected step_up or bulk_step_up")
    check(isinstance(passkey["listed"], str), f"{what}: bulk_step_up without listed")
    listed = parse_json_bytes(passkey["listed"].encode("utf-8"), f"{what}.listed")
    check(isinstance(listed, list) and all(
        isinstance(pair, list) and len(pair) == 2 and all(isinstance(s, str) for s in pair)
        for pair in listed), f"{what}.listed: not [[proposal id, request hash], ...]")
    check([doc["proposal_id"], doc["request_hash"]] in listed,
          f"{what}.listed does not contain [proposal_id, request_hash]")
    # Stricter reading: a set, so no pair twice.
    check(len({tuple(pair) for pair in listed}) == len(listed), f"{what}.listed repeats a pair")
    out = length_prefixed(b"countersign/bulk-step-up/v1") + len(listed).to_bytes(8, "big")
    for proposal_id, request_hash in listed:
        out += length_prefixed(proposal_id.encode("utf-8"))
        out += length_prefixed(request_hash.encode("utf-8"))
    out += length_prefixed(approver) + length_prefixed(nonce)
    return sha256(out)


def check_passkey(ctx, approval, passkey, receipt_leaf, what):
    """Check 9 for one approval's passkey assertion; return its registered Leaf."""
    check(isinstance(passkey, dict) and set(passkey) == PASSKEY_MEMBERS,
          f"{what}: members {sorted(passkey) if isinstance(passkey, dict) else passkey!r}, "
          f"expected {sorted(PASSKEY_MEMBERS)}")
    for name in PASSKEY_MEMBERS - {"listed"}:
        member(passkey, name, what, (str,))
    # "the SEC1 uncompressed P-256 point": 0x04 || x || y.
    point = b64url_decode(passkey["public_key"], f"{what}.public_key", 65)
    check(point[0] == 0x04, f"{what}.public_key: not an uncompressed point")
    try:
        public_key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
    except ValueError:
        raise Fail(f"{what}.public_key: not a point on P-256") from None
    fingerprint = sha256_text(point)
    check(passkey["fingerprint"] == fingerprint,
          f"{what}.fingerprint is not sha256 of public_key ({fingerprint})")
    # Stricter reading: exactly one passkey.registered leaf for the id.
    registered = [leaf for leaf in ctx.leaves if leaf.action == "passkey.registered"
                  and json_equal(leaf.data.get("passkey_id"), passkey["passkey_id"])]
    check(len(registered) == 1,
          f"{what}: {len(registered)} passkey.registered leaves for passkey_id "
          f"{passkey['passkey_id']!r}, expected one")
    registration = registered[0]
    check_equal(registration.data.get("fingerprint"), fingerprint,
                f"{what}: leaf {registration.index} (passkey.registered) data.fingerprint")
    check_equal(registration.data.get("holder"), approval["approver_id"],
                f"{what}: leaf {registration.index} (passkey.registered) data.holder")
    # The digest over the three values as they appear here (base64url),
    # joined by '.'.
    digest = sha256_text(".".join([passkey["authenticator_data"], passkey["client_data_json"],
                                   passkey["signature"]]).encode("ascii"))
    check_equal(receipt_leaf.data.get("assertion_sha256"), digest,
                f"{what}: the receipt's data.assertion_sha256")
    challenge = passkey_challenge(ctx, approval, passkey, what)
    client_data_raw = b64url_decode(passkey["client_data_json"], f"{what}.client_data_json")
    client_data = parse_json_bytes(client_data_raw, f"{what}.client_data_json")
    check(isinstance(client_data, dict), f"{what}.client_data_json: not a JSON object")
    check_equal(client_data.get("type"), "webauthn.get", f"{what}: client data type")
    check_equal(client_data.get("challenge"), b64url(challenge), f"{what}: client data challenge")
    check_equal(client_data.get("origin"), passkey["origin"], f"{what}: client data origin")
    # WebAuthn 7.2: not in EVIDENCE.md; Countersign never expects an assertion
    # made inside a cross-origin iframe.
    check(client_data.get("crossOrigin") is not True, f"{what}: client data crossOrigin is true")
    auth_data = b64url_decode(passkey["authenticator_data"], f"{what}.authenticator_data")
    check(len(auth_data) >= 37, f"{what}.authenticator_data: {len(auth_data)} bytes, fewer than 37")
    check(auth_data[:32] == sha256(passkey["rp_id"].encode("utf-8")),
          f"{what}.authenticator_data does not start with SHA-256 of rp_id {passkey['rp_id']!r}")
    check(auth_data[32] & 0x01, f"{what}.authenticator_data: user-present flag not set")
    signature = b64url_decode(passkey["signature"], f"{what}.signature")
    try:
        public_key.verify(signature, auth_data + sha256(client_data_raw), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise Fail(f"{what}: the assertion signature does not verify under public_key") from None
    return registration


def is_policy_approval(leaf):
    """A proposal.approved entry written by a policy (actor `policy:<rule>`)."""
    return leaf.action == "proposal.approved" and str(leaf.entry["actor"]).startswith("policy:")


def check_approval_receipt(approval, leaf, what):
    """Stricter reading of check 9: an approval says what its receipt's leaf says."""
    where = f"{what}: leaf {leaf.index} ({leaf.action})"
    # Only "approve" is spelt out in EVIDENCE.md; any other decision is read
    # as a rejection.
    decision = member(approval, "decision", what, (str,))
    if is_policy_approval(leaf):
        # "an approval by policy: its receipt is the proposal.approved one";
        # its approver_id is the policy actor itself and its channel "policy".
        check(decision == "approve", f"{what}: decision {as_json(decision)} but the receipt is a policy's approval")
        check_equal(leaf.entry["actor"], approval["approver_id"], f"{where}: actor")
        check_equal(member(approval, "via", what), "policy", f"{what}.via")
        # The grant's data.amr is the token's: a list of methods.
        amr = leaf.data.get("amr")
        check(isinstance(amr, list) and member(approval, "amr", what) in amr,
              f"{what}.amr is not among the receipt's {as_json(amr)}")
        check(approval.get("passkey") is None, f"{what}: a policy's approval carries no passkey")
        return
    expected_action = "proposal.approval_given" if decision == "approve" else "proposal.rejected"
    check(leaf.action == expected_action,
          f"{what}: decision {as_json(decision)} but the receipt's leaf is "
          f"{leaf.action}")
    # actor `user:<id>`, and approver_id is that id (as passkey.registered's
    # data.holder is).
    check_equal(leaf.entry["actor"], "user:" + approval["approver_id"], f"{where}: actor")
    check_equal(member(approval, "via", what), leaf.data.get("via"), f"{what}.via (the receipt's)")
    # An approval's receipt names its round ("round" in data).
    if leaf.action == "proposal.approval_given":
        check_equal(member(approval, "round", what), leaf.data.get("round"), f"{what}.round (the receipt's)")
    # A rejection's data holds its channel and reason, no amr.
    if leaf.action == "proposal.approval_given":
        check_equal(member(approval, "amr", what), leaf.data.get("amr"),
                    f"{what}.amr (the receipt's)")
    # "when a passkey signed it, passkey": the receipt says whether one did.
    signed = "assertion_sha256" in leaf.data
    check(signed == (approval.get("passkey") is not None),
          f"{what}: passkey is {'missing' if signed else 'given'} but the receipt "
          f"{'has' if signed else 'has no'} assertion_sha256")
    # The receipt names the passkey that signed ("passkey_id" in data).
    if signed:
        check_equal(approval["passkey"].get("passkey_id"), leaf.data.get("passkey_id"),
                    f"{what}.passkey.passkey_id (the receipt's)")


def check_approvals(ctx):
    """9. Each approval's receipt is a leaf's; each passkey assertion verifies."""
    # "every approval and rejection of every round, oldest first, with its
    # receipt": stricter reading, the approvals are exactly the approval and
    # rejection leaves of this proposal, in log order, receipt for receipt.
    # (A decision without a receipt has already failed check 6.)
    decisions = [leaf for leaf in ctx.own
                 if leaf.action in ("proposal.approval_given", "proposal.rejected")
                 or is_policy_approval(leaf)]
    approvals = ctx.doc["approvals"]
    check(len(approvals) == len(decisions),
          f"{len(approvals)} approvals, but {len(decisions)} approval and rejection leaves")
    used_registrations = set()
    for n, (approval, leaf) in enumerate(zip(approvals, decisions)):
        what = f"approvals[{n}]"
        member(approval, "approver_id", what, (str,))
        receipt = member(approval, "receipt", what, (str, type(None)))
        check(receipt == leaf.data.get("receipt"),
              f"{what}: the receipt is not the data.receipt of leaf {leaf.index} ({leaf.action}), "
              "the next approval or rejection")
        check_approval_receipt(approval, leaf, what)
        passkey = approval.get("passkey")
        if passkey is not None:
            registration = check_passkey(ctx, approval, passkey, leaf, f"{what}.passkey")
            used_registrations.add(registration.index)
    # "plus the passkey.registered entry of each passkey that signed an
    # approval": stricter reading, no other passkey.registered leaf.
    for leaf in ctx.leaves:
        if leaf.action == "passkey.registered":
            check(leaf.index in used_registrations, f"leaf {leaf.index} (passkey.registered) "
                  "is of no passkey that signed an approval")
    return f"{len(approvals)} approvals, {len(used_registrations)} passkey assertions verified"


def check_approval_token(ctx):
    """10. The approval token: signed by a token key, this proposal's, its jti logged."""
    token_keys = load_jwk_set(member(ctx.doc["keys"], "tokens", "keys"), "keys.tokens")
    # A receipt key must never verify a token, nor a token key a receipt.
    shared = set(token_keys) & set(ctx.receipt_keys)
    check(not shared, f"kid {sorted(shared)} in both keys.receipts and keys.tokens")
    receipt_points = {point_bytes(k) for k in ctx.receipt_keys.values()}
    for kid, key in token_keys.items():
        check(point_bytes(key) not in receipt_points,
              f"keys.tokens kid {kid!r} is also a key of keys.receipts")
    approved = own_leaves_with(ctx, "proposal.approved")
    operation = at_most_one(ctx, "operation.created")
    token = ctx.doc["approval_token"]
    if token is None:
        # "null if none was [minted]": then nothing may record one.
        if approved:
            raise Fail(f"approval_token is null but leaf {approved[0].index} is proposal.approved")
        check(operation is None, "approval_token is null but there is an operation.created leaf")
        return "none minted (no proposal.approved leaf)"
    _, claims = open_jws(token, TOKEN_TYP, token_keys, "keys.tokens", "approval_token")
    for claim, name in (("pid", "proposal_id"), ("tid", "tenant_id"), ("rh", "request_hash")):
        check_equal(claims.get(claim), ctx.doc[name], f"approval_token: {claim}")
    jti = claims.get("jti")
    check(isinstance(jti, str), "approval_token: no jti")
    check(approved, "there is no proposal.approved leaf")
    # "the proposal.approved leaf": a token may be minted again, so read as:
    # the operation's token was minted by one of them; without an operation,
    # the bundle's token is the newest, the last one's.
    if operation is not None:
        check_equal(operation.data.get("jti"), jti,
                    f"leaf {operation.index} (operation.created): data.jti")
        check(any(json_equal(leaf.data.get("jti"), jti) for leaf in approved),
              f"no proposal.approved leaf has data.jti {jti!r}")
    else:
        check_equal(approved[-1].data.get("jti"), jti,
                    f"leaf {approved[-1].index} (proposal.approved): data.jti")
    ctx.token_claims = claims
    return f"jti {jti} verified under keys.tokens"


def check_operation(ctx):
    """11. operation against the operation.created leaf and the last operation.* after it."""
    operation = ctx.doc["operation"]
    created = at_most_one(ctx, "operation.created")
    if created is None:
        # Stricter reading of "null ... when it does not apply".
        check(operation is None, "operation is given but there is no operation.created leaf")
        return "none (no operation.created leaf)"
    check(operation is not None, f"operation is null but leaf {created.index} is operation.created")
    check(set(operation) == {"id", "status", "rail_reference"},
          f"operation: members {sorted(operation)}, expected id, status, rail_reference")
    check_equal(operation["id"], member(created.data, "operation_id", f"leaf {created.index} data"),
                "operation.id")
    later = [leaf for leaf in ctx.own
             if leaf.index > created.index and leaf.action.startswith("operation.")]
    if not later:
        check_equal(operation["status"], "pending", "operation.status")
        check_equal(operation["rail_reference"], None, "operation.rail_reference")
        return f"{operation['id']} pending (no operation.* leaf after operation.created)"
    last = later[-1]
    where = f"leaf {last.index} ({last.action}) data"
    check_equal(operation["status"], member(last.data, "operation_to", where), "operation.status")
    check_equal(operation["rail_reference"], member(last.data, "rail_reference", where),
                "operation.rail_reference")
    return f"{operation['id']} {operation['status']} as of leaf {last.index}"


def check_mandate_details(ctx, details):
    """Check 12's one authorization_details entry."""
    doc, request = ctx.doc, ctx.doc["request"]
    check(isinstance(details, list) and len(details) == 1 and isinstance(details[0], dict),
          "mandate: authorization_details is not a list of one object")
    detail = details[0]
    what = "mandate: authorization_details[0]"
    check(set(detail) == MANDATE_DETAIL_MEMBERS,
          f"{what}: members {sorted(detail)}, expected {sorted(MANDATE_DETAIL_MEMBERS)}")
    # Stricter reading: type, actions and locations as in the example.
    check_equal(detail["type"], "payment_initiation", f"{what}.type")
    check_equal(detail["actions"], ["initiate"], f"{what}.actions")
    check_equal(detail["locations"], [doc["issuer"]], f"{what}.locations")
    currency = member(request, "currency", "request", (str,))
    check(CURRENCY_RE.fullmatch(currency), f"request.currency {currency!r} is not an ISO 4217 code")
    amount = format_amount(member(request, "amount_minor", "request"), currency)
    check_equal(detail["instructedAmount"], {"currency": currency, "amount": amount},
                f"{what}.instructedAmount")
    check_equal(detail["creditorName"], member(request["destination"], "legal_name",
                                               "request.destination"), f"{what}.creditorName")
    check_equal(detail["creditorAccount"], {"commitment": doc["commitments"]["destination"]},
                f"{what}.creditorAccount")
    check_equal(detail["debtorAccount"], {"commitment": doc["commitments"]["source_account"]},
                f"{what}.debtorAccount")
    # "`reference` (`null` if none)"; `purpose` is the request's `purpose_code`.
    check_equal(detail["remittanceInformationUnstructured"], request.get("reference"),
                f"{what}.remittanceInformationUnstructured")
    check_equal(detail["purpose"], request.get("purpose_code"), f"{what}.purpose")
    return amount, currency


def check_mandate(ctx):
    """12. The mandate: signed by a receipt key, the token's claims, the request's payment."""
    mandate = ctx.doc["mandate"]
    if ctx.token_claims is None:
        check(mandate is None, "a mandate but no approval token")
        return "none (no approval token)"
    check(mandate is not None, "mandate is null but an approval token was minted")
    _, claims = open_jws(mandate, MANDATE_TYP, ctx.receipt_keys, "keys.receipts", "mandate")
    check(set(claims) == MANDATE_CLAIMS,
          f"mandate: claims {sorted(claims)}, expected {sorted(MANDATE_CLAIMS)}")
    for name in ("jti", "iat", "exp", "approvers", "amr", "tid", "rh"):
        check(name in ctx.token_claims, f"approval_token: no {name} claim for the mandate to equal")
        check_equal(claims[name], ctx.token_claims[name], f"mandate: {name} (the token's)")
    check_equal(claims["delegations"], ctx.token_claims.get("delegations", []),
                "mandate: delegations (the token's, or [] when it has none)")
    check_equal(claims["sub"], ctx.doc["proposal_id"], "mandate: sub")
    check_equal(claims["iss"], ctx.doc["issuer"], "mandate: iss")
    amount, currency = check_mandate_details(ctx, claims["authorization_details"])
    return f"{amount} {currency} for jti {claims['jti']}, verified under keys.receipts"


BUNDLE_CHECKS = [
    (1, "format", check_format),
    (2, "log key", check_log_key),
    (3, "checkpoint", check_checkpoint),
    (4, "trusted checkpoint", check_trusted_checkpoint),
    (5, "leaves", check_leaves),
    (6, "receipts", check_receipts),
    (7, "request", check_request),
    (8, "policy", check_policy),
    (9, "approvals", check_approvals),
    (10, "approval token", check_approval_token),
    (11, "operation", check_operation),
    (12, "mandate", check_mandate),
]


def verify_bundle(text, key_option=None, checkpoint_option=None, say=print):
    """Checks 1-12 in order; raises BundleFail naming the first that fails."""
    ctx = Context(text, key_option, checkpoint_option)
    for number, name, run in BUNDLE_CHECKS:
        try:
            detail = run(ctx)
        except Fail as e:
            raise BundleFail(number, name, str(e)) from None
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            # A member of the wrong shape that no explicit test caught: still
            # a failure of this check, never a traceback.
            raise BundleFail(number, name, f"malformed ({type(e).__name__}: {e})") from None
        if detail is None:
            say(f"skip {number} {name}: no --checkpoint given")
        else:
            say(f"ok {number} {name}: {detail}")


# ------------------------------------------------- bundle: --tampered


def jws_payload(token):
    return json.loads(b64url_decode(token.split(".")[1], "payload"))


def with_payload(token, claims):
    """The same header and signature around another payload."""
    header, _, signature = token.split(".")
    return f"{header}.{b64url(json.dumps(claims).encode())}.{signature}"


def bundle_leaves(doc):
    """(log.leaves item, parsed body) for each leaf of the (verified) bundle."""
    return [(item, json.loads(base64.b64decode(item["body"]))) for item in doc["log"]["leaves"]]


def btamper_amount(doc):
    """(a) request.amount_minor + 1"""
    doc["request"]["amount_minor"] += 1
    return "(a) request.amount_minor + 1"


def btamper_drop_receipt_leaf(doc):
    """(b) a leaf carrying a receipt dropped"""
    carrying = [item for item, body in bundle_leaves(doc)
                if body["proposal_id"] is not None and body["data"].get("receipt") is not None
                and body["action"] != "proposal.created"]
    check(len(carrying) >= 2, "fewer than two leaves carry a receipt")
    # Not the first receipt's leaf; the second, so a later receipt's prev breaks.
    dropped = carrying[1]
    doc["log"]["leaves"].remove(dropped)
    return f"(b) leaf {dropped['index']} (carrying a receipt) dropped"


def btamper_swap_bodies(doc):
    """(c) the bodies of two leaves swapped"""
    items = doc["log"]["leaves"]
    check(len(items) >= 2, "fewer than two leaves")
    items[0]["body"], items[1]["body"] = items[1]["body"], items[0]["body"]
    return f"(c) the bodies of leaves {items[0]['index']} and {items[1]['index']} swapped"


def btamper_swap_order(doc):
    """(c') two leaves swapped in the list"""
    items = doc["log"]["leaves"]
    check(len(items) >= 2, "fewer than two leaves")
    items[0], items[1] = items[1], items[0]
    return f"(c') leaves {items[1]['index']} and {items[0]['index']} swapped in the list"


def btamper_forged_checkpoint(doc):
    """(d) a forged checkpoint under a fresh key of the same name"""
    text, _ = split_note(doc["log"]["checkpoint"])
    origin, size, root = text[:-1].split("\n")
    forged_root = flip_byte(base64.b64decode(root), 0)
    doc["log"]["checkpoint"] = sign_checkpoint(
        origin, int(size), forged_root, Ed25519PrivateKey.generate())
    return "(d) checkpoint root changed and re-signed by a fresh key of the same name"


def btamper_other_tenant(doc):
    """(e) the bundle claimed for another tenant"""
    doc["tenant_id"] = "other-tenant"
    doc["request"]["tenant_id"] = "other-tenant"
    return "(e) tenant_id and request.tenant_id changed to other-tenant"


def btamper_disclosed_value(doc):
    """(f) a disclosed value changed"""
    check(doc["disclosed"], "nothing is disclosed")
    name = sorted(doc["disclosed"])[0]
    value = doc["disclosed"][name]["value"]
    check(value, f"disclosed.{name}.value is empty")
    doc["disclosed"][name]["value"] = value[:-1] + ("0" if value[-1] != "0" else "1")
    return f"(f) disclosed.{name}.value changed by one character"


def btamper_token_payload(doc):
    """(g) the approval token's payload changed"""
    check(doc["approval_token"] is not None, "no approval token")
    claims = jws_payload(doc["approval_token"])
    claims["pid"] = str(claims.get("pid")) + "x"
    doc["approval_token"] = with_payload(doc["approval_token"], claims)
    return "(g) approval token's pid changed, signature kept"


def btamper_mandate_is_token(doc):
    """(h) the mandate swapped for the approval token"""
    check(doc["approval_token"] is not None, "no approval token")
    doc["mandate"] = doc["approval_token"]
    return "(h) mandate replaced by the approval token"


def btamper_token_is_mandate(doc):
    """(h') the approval token swapped for the mandate"""
    check(doc["mandate"] is not None, "no mandate")
    doc["approval_token"] = doc["mandate"]
    return "(h') approval token replaced by the mandate"


def btamper_token_key_as_receipt_key(doc):
    """(i) a token key published as a receipt key"""
    token_keys = doc["keys"]["tokens"]["keys"]
    check(token_keys, "no token key")
    doc["keys"]["receipts"]["keys"].append(copy.deepcopy(token_keys[0]))
    return "(i) a token key also published as a receipt key"


def btamper_policy(doc):
    """(j) the policy changed"""
    doc["policy"]["tampered"] = 1
    return "(j) a member added to policy"


BUNDLE_TAMPERS = [
    btamper_amount, btamper_drop_receipt_leaf, btamper_swap_bodies, btamper_swap_order,
    btamper_forged_checkpoint, btamper_other_tenant, btamper_disclosed_value,
    btamper_token_payload, btamper_mandate_is_token, btamper_token_is_mandate,
    btamper_token_key_as_receipt_key, btamper_policy,
]


def bundle_self_test(text, key_option, checkpoint_option):
    """The untouched bundle must pass; every tampered copy must be refused."""
    verify_bundle(text, key_option, checkpoint_option, say=lambda line: None)
    print("ok: the untouched bundle verifies")
    original = json.loads(text)
    accepted, refused, skipped = [], 0, 0
    for tamper in BUNDLE_TAMPERS:
        doc = copy.deepcopy(original)
        try:
            what = tamper(doc)
        except Fail as e:
            skipped += 1
            print(f"not applicable: {tamper.__doc__}: {e}")
            continue
        try:
            verify_bundle(json.dumps(doc, ensure_ascii=False), key_option, checkpoint_option,
                          say=lambda line: None)
        except BundleFail as e:
            refused += 1
            print(f"refused: {what} -- by {e}")
            continue
        accepted.append(what)
        print(f"ACCEPTED: {what}", file=sys.stderr)
    if accepted:
        raise Fail(f"{len(accepted)} tampered copies accepted: {'; '.join(accepted)}")
    print(f"ok: all {refused} tampered copies refused ({skipped} not applicable)")


# ---------------------------------------------------------------- commands


def command_log(args):
    fixture = load_fixture(args.fixture)
    if args.tampered:
        self_test(fixture)
    else:
        verify_log(fixture)


def read_text(path, what):
    """A file's text, or Usage (exit 2) if it cannot be read."""
    try:
        # newline="": a note's newlines are part of what is signed.
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise Usage(f"cannot read {what} {path}: {e}") from None


def command_bundle(args):
    text = read_text(args.bundle, "bundle")
    checkpoint = None if args.checkpoint is None else read_text(args.checkpoint, "checkpoint")
    if args.key is not None:
        try:
            parse_verifier_key(args.key)
        except Fail as e:
            raise Usage(f"--key: {e}") from None
    if args.tampered:
        bundle_self_test(text, args.key, checkpoint)
    else:
        verify_bundle(text, args.key, checkpoint)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Verify Countersign evidence independently (docs/EVIDENCE.md).")
    commands = parser.add_subparsers(dest="command", required=True)
    log = commands.add_parser("log", help="verify a transparency-log fixture")
    log.add_argument("fixture", help="the fixture JSON file")
    log.add_argument("--tampered", action="store_true",
                     help="self-test: tampered copies of the fixture must all be refused")
    log.set_defaults(run=command_log)
    bundle = commands.add_parser(
        "bundle", help="verify a payment's proof bundle (checks 1-12 of EVIDENCE.md)",
        description="Verify a proof bundle (GET /api/v1/proposals/{id}/evidence): checks 1-12 "
                    "of docs/EVIDENCE.md, 'What a verifier checks', in order.")
    bundle.add_argument("bundle", metavar="FILE", help="the proof bundle JSON file")
    bundle.add_argument("--checkpoint", metavar="FILE",
                        help="a trusted signed checkpoint note (kept by `log monitor` or fetched "
                             "independently); check 4 requires the bundle's to match it")
    bundle.add_argument("--key", metavar="KEY",
                        help="the pinned log verifier key, <name>+<hex key id>+<base64>; "
                             "check 2 requires keys.log to be it")
    bundle.add_argument("--tampered", action="store_true",
                        help="self-test: the bundle must pass and tampered copies of it must "
                             "all be refused")
    bundle.set_defaults(run=command_bundle)
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except Usage as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (Fail, BundleFail) as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
