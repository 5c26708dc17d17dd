#!/usr/bin/env bash
# Makes the upgrade test's fixture (server/tests/api/upgrade.rs,
# docs/DEPLOY.md "Upgrades"): a database filled through the API of a
# previous release, on SQLite and on PostgreSQL, with its keys directory.
#
#   scripts/upgrade-fixture.sh OLD_COUNTERSIGN_BINARY COMMIT
#
# OLD_COUNTERSIGN_BINARY is `countersign` built from COMMIT (a release);
# the fixture lands in server/tests/fixtures/upgrade/COMMIT/: countersign.db
# (SQLite, copied with SQLite's online backup), postgres.sql (pg_dump of the
# same traffic on a throwaway PostgreSQL) and keys/. Each run serves the
# demo tenant with its bundled rail simulator and, as an agent and a
# reviewer would: pays one proposal approved on the console, pays one that
# policy approved, rejects one, cancels one.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: $0 OLD_COUNTERSIGN_BINARY COMMIT" >&2; exit 2; }
bin=$(realpath "$1")
commit=$2
out=server/tests/fixtures/upgrade/$commit
# The origin the transparency log's checkpoints name; the test serves the
# migrated database under the same public URL.
public_url=http://localhost:3999
agent=cs_test_demo0payout0bot0key000000000000
work=$(mktemp -d)
pg_dir=""
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  [ -n "$pg_dir" ] && scripts/pg.sh stop "$pg_dir" >/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# $1 data dir, $2 database URL (empty: SQLite). Fills it through the API.
fill() {
  local data=$1 url=$2 port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  local base=http://127.0.0.1:$port
  env COUNTERSIGN_PUBLIC_URL=$public_url COUNTERSIGN_LOG=warn ${url:+COUNTERSIGN_DATABASE__URL=$url} \
    "$bin" --data-dir "$data" serve --demo --listen "127.0.0.1:$port" >"$data.log" 2>&1 &
  server=$!
  for _ in $(seq 1 100); do curl -sf "$base/readyz" >/dev/null && break; sleep 0.2; done
  propose() {
    curl -sf -X POST "$base/api/v1/proposals" -H "Authorization: Bearer $agent" -H 'content-type: application/json' \
      -d "{\"run_id\":\"upgrade-$1\",\"amount_minor\":$2,\"currency\":\"USD\",\"source_account\":\"acct_demo000000001234\",\"destination\":\"$3\",\"reference\":\"Upgrade fixture $1\",\"purpose_code\":\"vendor\"}" |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'
  }
  field() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
  commit() {
    local token
    token=$(curl -sf "$base/api/v1/proposals/$1" -H "Authorization: Bearer $agent" | field '["approval_token"]')
    curl -sf -X POST "$base/api/v1/proposals/$1/commit" -H "Authorization: Bearer $agent" \
      -H 'content-type: application/json' -d "{\"approval_token\":\"$token\"}" >/dev/null
  }
  local jar=$work/jar csrf
  csrf=$(curl -sf -c "$jar" -X POST "$base/api/v1/session" -H "Origin: $public_url" -H 'content-type: application/json' \
    -d '{"username":"ana","password":"countersign-demo"}' | field '["csrf_token"]')
  decide() {
    curl -sf -b "$jar" -X POST "$base/api/v1/proposals/$1/approvals" -H "Origin: $public_url" -H "X-CSRF-Token: $csrf" \
      -H 'content-type: application/json' -d "$2" >/dev/null
  }
  local paid auto rejected cancelled
  paid=$(propose paid 125000 ba_northwind0007)
  decide "$paid" '{"decision":"approve"}'
  commit "$paid"
  auto=$(propose auto 4200 acct_acme0000000001)
  commit "$auto"
  rejected=$(propose rejected 98000 ba_northwind0007)
  decide "$rejected" '{"decision":"reject","reason":"Duplicate of an invoice paid last week"}'
  cancelled=$(propose cancelled 51000 ba_northwind0007)
  curl -sf -X POST "$base/api/v1/proposals/$cancelled/cancel" -H "Authorization: Bearer $agent" >/dev/null
  # The rail settles and the log signs what was written.
  sleep 4
  kill -TERM "$server"
  wait "$server" || true
  server=""
}

mkdir -p "$work/sqlite" && chmod 700 "$work/sqlite"
fill "$work/sqlite" ""
rm -rf "$out" && mkdir -p "$out"
python3 -c 'import sqlite3,sys; s=sqlite3.connect(sys.argv[1]); d=sqlite3.connect(sys.argv[2]); s.backup(d); d.close()' \
  "$work/sqlite/countersign.db" "$out/countersign.db"
cp -r "$work/sqlite/keys" "$out/keys"

pg_dir=$(mktemp -d -p /dev/shm)
pg_url=$(scripts/pg.sh start "$pg_dir")
mkdir -p "$work/pg" && chmod 700 "$work/pg"
cp -r "$out/keys" "$work/pg/keys"
fill "$work/pg" "$pg_url"
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
"$pg_bin/pg_dump" --no-owner --no-privileges --format=plain "$pg_url" >"$out/postgres.sql"
echo "fixture written to $out"
