#!/usr/bin/env python3
"""Checks that the documentation says what the project is, and that its map
matches the code. Python 3 standard library only; run from anywhere in the
repository (`make test` runs it from scripts/test.sh).

1. No tracked text file names a numbered round of past work ("issue 24",
   "round 3", "session 12", "wave 2", "stop 4"): the docs and comments
   describe what a thing is, not which piece of work made it. Approval
   rounds are a product concept, so "approval round N" is allowed; numbers
   elsewhere ("HTTP status 404", "RFC 9162 section 2.1") are not matched. A
   line that must keep such text (a label a program prints, say) carries
   the marker `check-docs: allow` with the reason. This file is skipped: it
   holds the patterns.
2. docs/ARCHITECTURE.md's module tree (the code block under "## Layout") and
   the payment's path (the code block whose lines start with `core`,
   `server`, `app` or `domain`) name only paths that exist, and every Rust
   source file under crates/*/src, server/src and app/src is named there:
   as an entry of the tree, or by its file name (with or without `.rs`) in
   the description of the nearest directory the tree lists. A directory's
   `mod.rs`, a crate's `lib.rs`/`main.rs` and a module's `tests.rs` are
   named by their directory's entry.

Exits 1 listing `file:line: problem` for every failure, else 0.
"""

import os
import re
import subprocess
import sys

ROOT = subprocess.run(
    ["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True,
    cwd=os.path.dirname(os.path.abspath(__file__)),
).stdout.strip()

# Third-party text kept as it came (specifications, published descriptions),
# and the migrations: a released migration is never edited, not even its
# comments (sqlx checksums each applied one and refuses to start a database
# whose recorded checksum differs; server/tests/api/upgrade.rs).
SKIP_PREFIXES = ("e2e/rails/iso20022/", "e2e/rails/stripe/", "migrations/")
SKIP_PARTS = ("node_modules/",)
SKIP_SUFFIXES = (".lock", "-lock.json", ".snap")
ALLOW_MARKER = "check-docs: allow"

PAST_WORK = re.compile(
    r"(?<![-\w])(?:"
    r"[Ii]ssues? #?\d+"
    r"|[Rr]ounds? \d+"
    r"|[Ww]aves? \d+"
    r"|[Ss]tops? \d+"
    r"|[Ss]essions? \d+"
    r")\b"
)
# Approval rounds are the product's own ("its approval round 2").
PRODUCT_ROUND = re.compile(r"\b[Aa]pproval rounds? \d+")


def tracked_text_files():
    out = subprocess.run(["git", "ls-files", "-z"], capture_output=True, cwd=ROOT, check=True).stdout
    for raw in out.split(b"\0"):
        if not raw:
            continue
        path = raw.decode("utf-8", "replace")
        if path.startswith(SKIP_PREFIXES) or any(p in path for p in SKIP_PARTS) or path.endswith(SKIP_SUFFIXES):
            continue
        full = os.path.join(ROOT, path)
        if not os.path.isfile(full):
            continue
        with open(full, "rb") as f:
            data = f.read()
        if b"\0" in data[:8192]:
            continue  # binary
        try:
            yield path, data.decode("utf-8")
        except UnicodeDecodeError:
            continue


def check_past_work(problems):
    for path, text in tracked_text_files():
        if path == "scripts/check_docs.py":
            continue  # its own patterns and examples
        for number, line in enumerate(text.splitlines(), 1):
            if ALLOW_MARKER in line:
                continue
            for m in PAST_WORK.finditer(line):
                if PRODUCT_ROUND.search(line[max(0, m.start() - 9):m.end()]):
                    continue
                problems.append(f"{path}:{number}: names a numbered round of past work: {m.group(0)!r}")


# ---- docs/ARCHITECTURE.md ----------------------------------------------------

ENTRY = re.compile(r"^( *)([A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)*/?)(?:\s+(.*))?$")
RUST_ROOTS = ("app/src", "server/src")  # and crates/*/src


def code_blocks(lines):
    """(heading, first line number, [lines]) for each fenced block."""
    heading, block, start = None, None, 0
    for number, line in enumerate(lines, 1):
        if block is None and line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.startswith("```"):
            if block is None:
                block, start = [], number + 1
            else:
                yield heading, start, block
                block = None
        elif block is not None:
            block.append(line)


def resolve(parent, token):
    """The path `token` names under the listed directory `parent` (the tree
    leaves out crates' `src/`), or None when it does not exist."""
    for candidate in (parent + token, parent + "src/" + token):
        if os.path.exists(os.path.join(ROOT, candidate.rstrip("/"))):
            return candidate
    return None


def parse_tree(start, block, problems):
    """Entries of the layout tree: {path: description words}, dirs listed."""
    entries = {}
    stack = []  # (indent, resolved directory path)
    current = None
    for offset, line in enumerate(block):
        number = start + offset
        indent = len(line) - len(line.lstrip(" "))
        m = ENTRY.match(line)
        is_entry = (
            m is not None
            and indent % 2 == 0
            and indent <= (stack[-1][0] + 2 if stack else 0)
            and ("." in m.group(2) or m.group(2).endswith("/") or m.group(2) in ("Makefile", "Dockerfile"))
        )
        if not is_entry:
            if current is not None:
                entries[current] += " " + line.strip()
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1] if stack else ""
        token = m.group(2)
        path = resolve(parent, token)
        if path is None:
            problems.append(f"docs/ARCHITECTURE.md:{number}: names {parent + token}, which does not exist")
            path = parent + token
        entries[path] = m.group(3) or ""
        current = path
        if token.endswith("/"):
            stack.append((indent, path))
    return entries


PATH_LINE = re.compile(r"^\s+(core|server|app|domain)\s+(\S+)")
PATH_ROOTS = {"core": "crates/core/src/", "server": "server/src/", "app": "app/src/", "domain": "crates/domain/src/"}


def check_path_block(start, block, problems):
    for offset, line in enumerate(block):
        m = PATH_LINE.match(line)
        if not m:
            continue
        # A token belongs to the crate word last named before it on the line
        # ("server console/mod.rs … (core eligibility.rs").
        for t in re.finditer(r"[\w/]+\.rs|[\w]+/(?=\s|,|$)", line[m.end(1):]):
            before = line[: m.end(1) + t.start()]
            crate = re.findall(r"\b(core|server|app|domain)\b", before)[-1]
            path = PATH_ROOTS[crate] + t.group(0)
            if not os.path.exists(os.path.join(ROOT, path.rstrip("/"))):
                problems.append(f"docs/ARCHITECTURE.md:{start + offset}: names {path}, which does not exist")


def rust_sources():
    roots = [os.path.join(ROOT, r) for r in RUST_ROOTS]
    crates = os.path.join(ROOT, "crates")
    for name in sorted(os.listdir(crates)):
        if os.path.isdir(os.path.join(crates, name, "src")):
            roots.append(os.path.join(crates, name, "src"))
    for root in roots:
        for dirpath, _, files in os.walk(root):
            for f in sorted(files):
                if f.endswith(".rs"):
                    yield os.path.relpath(os.path.join(dirpath, f), ROOT)


def named(source, entries):
    if source in entries:
        return True
    directory, file = os.path.split(source)
    crate_src = re.match(r"^((?:crates/[^/]+|server|app)/)src$", directory)
    if file in ("lib.rs", "main.rs") and crate_src and crate_src.group(1) in entries:
        return True
    if file == "mod.rs" and directory + "/" in entries:
        return True
    # Unit tests beside their module (`x/tests.rs`, `x/y_tests.rs`) are named
    # by that module.
    if file == "tests.rs":
        return named(directory + ".rs", entries) or named(directory + "/mod.rs", entries) or directory + "/" in entries
    if file.endswith("_tests.rs"):
        return named(os.path.join(directory, file[: -len("_tests.rs")] + ".rs"), entries)
    stem = file[:-3]
    word = re.compile(r"(?<![\w/])" + re.escape(stem) + r"(?:\.rs)?(?![\w])")
    # The nearest listed ancestor directory's description names it.
    d = directory
    while d:
        key = d + "/"
        if key in entries:
            return bool(word.search(entries[key]))
        if d.endswith("/src"):
            crate = d[: -len("src")]
            if crate in entries:
                return bool(word.search(entries[crate]))
        d = os.path.dirname(d)
    return False


def check_architecture(problems):
    doc = os.path.join(ROOT, "docs/ARCHITECTURE.md")
    with open(doc, encoding="utf-8") as f:
        lines = f.read().splitlines()
    entries = None
    for heading, start, block in code_blocks(lines):
        if heading == "Layout":
            entries = parse_tree(start, block, problems)
        elif any(PATH_LINE.match(l) for l in block):
            check_path_block(start, block, problems)
    if entries is None:
        problems.append("docs/ARCHITECTURE.md:1: no code block under \"## Layout\" (the module tree)")
        return
    for source in rust_sources():
        if not named(source, entries):
            problems.append(f"{source}:1: not named in docs/ARCHITECTURE.md's module tree (\"## Layout\")")


def main():
    problems = []
    check_past_work(problems)
    check_architecture(problems)
    for p in problems:
        print(p)
    if problems:
        print(f"check_docs: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print("check_docs: no numbered rounds of past work; docs/ARCHITECTURE.md matches the code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
