#!/usr/bin/env python3
"""Check Countersign's transparency-log evidence without trusting the server.

This is an independent implementation written from docs/EVIDENCE.md alone
(sections "The leaves", "The tree", "Checkpoints") and the specifications it
cites: RFC 9162 section 2.1 for the Merkle tree and its proofs, C2SP
signed-note and tlog-checkpoint for the signed roots, RFC 8785 (JCS) for the
leaf bytes. It deliberately shares no code with the Rust implementation, so
the two can disagree if either one is wrong. It needs only the Python
standard library and the `cryptography` package (for Ed25519).

    python3 examples/verify_evidence.py log FIXTURE.json
    python3 examples/verify_evidence.py log FIXTURE.json --tampered

`log` verifies a log fixture: a JSON object with "verifier_key",
"checkpoints" (signed notes, oldest first, the last the newest), "leaves"
(base64 of each leaf's bytes, all N of the newest checkpoint), "inclusion"
({"leaf_index", "tree_size", "hashes"}) and "consistency" ({"first",
"tree_size", "hashes"}) proofs. It prints one line per check and exits 0, or
exits 1 with "FAIL: <the first failure>" on stderr.

`--tampered` is a self-test of this script: the untouched fixture must pass,
then tampered copies built in memory (a leaf's byte flipped, two leaves
swapped, a checkpoint's size edited, a checkpoint re-signed by another key,
a proof hash flipped, a leaf dropped) must each be refused, both by the full
verification and by the specific check that should catch it. Exit 1 if any
copy is accepted.

Exit status: 0 everything verified; 1 a check failed; 2 bad usage.
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
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

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


# ---------------------------------------------------------------- commands


def command_log(args):
    fixture = load_fixture(args.fixture)
    if args.tampered:
        self_test(fixture)
    else:
        verify_log(fixture)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Verify Countersign evidence independently (docs/EVIDENCE.md).")
    commands = parser.add_subparsers(dest="command", required=True)
    log = commands.add_parser("log", help="verify a transparency-log fixture")
    log.add_argument("fixture", help="the fixture JSON file")
    log.add_argument("--tampered", action="store_true",
                     help="self-test: tampered copies of the fixture must all be refused")
    log.set_defaults(run=command_log)
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except Fail as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
