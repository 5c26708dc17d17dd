"""The compose smoke test: docker-compose.yml's services run, and a payment
goes through them (propose, approve, commit, paid on the rail; /healthz).

With a container runtime (`docker info` succeeds) it builds the image and
runs `docker compose up`. Without one (the project's machines), it reads
docker-compose.yml and the Dockerfile's final stage and starts each service
as a local process with exactly the environment and command they give it,
doing only what the runtime would: a service's host name and port become
the local address its process listens on, a volume's path a directory of
its own. PostgreSQL is Debian's, a throwaway cluster started as `make test`
starts its own (scripts/pg.sh): the role and database the postgres
service's variables name are made on it, as the image's entrypoint would.
The health check is the image's own command (`countersign probe …`).

    python3 e2e/compose_smoke.py --binary target/debug/countersign
"""

import argparse
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
AGENT_KEY = "cs_test_demo0payout0bot0key000000000000"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(method, url, body=None, headers=None, jar=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if jar:
        req.add_header("Cookie", jar)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers, parse(r.read())
    except urllib.error.HTTPError as e:
        return e.code, e.headers, parse(e.read())


def parse(body):
    try:
        return json.loads(body or b"null")
    except ValueError:
        return body.decode(errors="replace")


def wait_until(what, check, secs=60):
    deadline = time.time() + secs
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.25)
    raise SystemExit(f"compose smoke: {what} within {secs} s")


def mounted(value, mounts):
    """A container path under a mount, as the local directory standing for it."""
    for inside, outside in mounts.items():
        if value == inside or value.startswith(inside + "/"):
            return outside + value[len(inside):]
    return value


def final_stage_env(dockerfile):
    """ENV of the Dockerfile's last stage, as KEY -> value."""
    text = dockerfile.read_text().replace("\\\n", " ")
    stage = text[text.rindex("\nFROM "):]
    env = {}
    for line in stage.splitlines():
        if line.startswith("ENV "):
            for pair in shlex.split(line[4:]):
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def flow(base, public_url, rail_url):
    """Propose, approve, commit; the rail has the transfer."""
    status, _, _ = request("GET", f"{base}/healthz")
    assert status == 200, f"/healthz: {status}"
    agent = {"Authorization": f"Bearer {AGENT_KEY}"}
    run = f"compose-{int(time.time() * 1000)}"
    status, _, p = request("POST", f"{base}/api/v1/proposals", {
        "run_id": run, "amount_minor": 25000, "currency": "USD", "source_account": "acct_demo000000001234",
        "destination": "ba_northwind0007", "reference": "Compose smoke test", "purpose_code": "vendor",
        "invoice_id": run}, agent)
    assert status == 201 and p["status"] == "pending_approval", (status, p)
    origin = {"Origin": public_url}
    status, headers, session = request(
        "POST", f"{base}/api/v1/session", {"username": "ana", "password": "countersign-demo"}, origin)
    assert status == 200, (status, session)
    jar = "; ".join(c.split(";")[0] for c in headers.get_all("Set-Cookie"))
    status, _, decided = request("POST", f"{base}/api/v1/proposals/{p['id']}/approvals", {"decision": "approve"},
                                 {**origin, "X-CSRF-Token": session["csrf_token"]}, jar)
    assert status == 200 and decided["status"] == "approved", (status, decided)
    status, _, view = request("GET", f"{base}/api/v1/proposals/{p['id']}", headers=agent)
    token = view["approval_token"]
    status, _, committed = request("POST", f"{base}/api/v1/proposals/{p['id']}/commit", {"approval_token": token},
                                   agent)
    assert status == 200 and committed["status"] in ("executing", "succeeded"), (status, committed)
    key = committed["operation"]["idempotency_key"]
    query = urllib.parse.urlencode({"transfer_group": key})
    status, _, listed = request("GET", f"{rail_url}/v1/transfers?{query}")
    assert status == 200 and len(listed["data"]) == 1, (status, listed)
    assert listed["data"][0]["amount"] == 25000, listed
    print(f"compose smoke: {p['id']} proposed, approved by ana, committed: transfer {listed['data'][0]['id']}")


def with_runtime():
    compose = ["docker", "compose", "-f", str(ROOT / "docker-compose.yml")]
    subprocess.run(compose + ["up", "--build", "--detach", "--wait"], check=True, cwd=ROOT)
    try:
        rail = subprocess.run(compose + ["port", "rail-sim", "12111"], capture_output=True, text=True)
        rail_url = f"http://{rail.stdout.strip()}" if rail.returncode == 0 and rail.stdout.strip() else None
        if rail_url is None:
            print("compose smoke: the rail simulator is not published; checking the payment on the console only")
        flow("http://127.0.0.1:8080", "http://localhost:8080", rail_url or "http://127.0.0.1:12111")
    finally:
        subprocess.run(compose + ["down", "--volumes"], check=False, cwd=ROOT)


def without_runtime(binary):
    scratch = Path(tempfile.mkdtemp(prefix="compose-smoke-"))
    pg_dir = Path(tempfile.mkdtemp(prefix="compose-smoke-pg-"))  # pg.sh hands it to the postgres user
    cluster = subprocess.run([str(ROOT / "scripts/pg.sh"), "start", str(pg_dir)], check=True, capture_output=True,
                             text=True).stdout.strip()
    try:
        run_services(binary, scratch, cluster.rsplit("/", 1)[0] + "/postgres")
    finally:
        subprocess.run([str(ROOT / "scripts/pg.sh"), "stop", str(pg_dir)], check=False)


def run_services(binary, scratch, admin_url):
    spec = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = spec["services"]
    image_env = final_stage_env(ROOT / "Dockerfile")
    pg = urllib.parse.urlsplit(admin_url)
    procs = []
    # Where each service is reachable: "host:port" in the network -> local address.
    addresses = {"postgres:5432": f"{pg.hostname}:{pg.port or 5432}"}
    ports = {}
    for name in services:
        if name != "postgres":
            ports[name] = free_port()
    listen_of = {"rail-sim": 12111, "countersign": int(image_env["COUNTERSIGN_LISTEN"].rsplit(":", 1)[1])}
    for name, port in ports.items():
        addresses[f"{name}:{listen_of[name]}"] = f"127.0.0.1:{port}"

    def resolve(value):
        value = str(value)
        for inside, outside in addresses.items():
            value = value.replace(f"@{inside}/", f"@{outside}/").replace(f"//{inside}", f"//{outside}")
        return value

    def volumes(service):
        dirs = {}
        for mount in service.get("volumes", []):
            volume, _, path = mount.partition(":")
            local = scratch / volume
            local.mkdir(mode=0o700, exist_ok=True)
            dirs[path] = str(local)
        for path in service.get("tmpfs", []):
            dirs[path] = str(scratch / "tmp")
        return dirs

    # The postgres service: its role and database, as its entrypoint makes them.
    pg_env = services["postgres"]["environment"]
    user, password, database = pg_env["POSTGRES_USER"], pg_env["POSTGRES_PASSWORD"], pg_env["POSTGRES_DB"]
    psql = ["psql", "-v", "ON_ERROR_STOP=1", "-q", admin_url, "-c"]
    subprocess.run(psql + [f"DROP DATABASE IF EXISTS {database} WITH (FORCE)"], check=True)
    subprocess.run(psql + [f"DROP ROLE IF EXISTS {user}"], check=True)
    subprocess.run(psql + [f"CREATE ROLE {user} LOGIN PASSWORD '{password}'"], check=True)
    subprocess.run(psql + [f"CREATE DATABASE {database} OWNER {user} TEMPLATE template0 LOCALE 'C' ENCODING 'UTF8'"],
                   check=True)
    try:
        for name in ("rail-sim", "countersign"):
            service = services[name]
            mounts = volumes(service)
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(scratch)}
            env.update(image_env)
            env.update({k: str(v) for k, v in (service.get("environment") or {}).items()})
            for key, value in list(env.items()):
                env[key] = mounted(resolve(value), mounts)
            env["COUNTERSIGN_LISTEN"] = f"127.0.0.1:{ports['countersign']}"
            args = [str(a) for a in service["command"]]
            args = [mounted(resolve(a), mounts) for a in args]
            args = [f"127.0.0.1:{ports[name]}" if a.startswith("0.0.0.0:") else a for a in args]
            log = open(scratch / f"{name}.log", "w")
            procs.append(subprocess.Popen([binary] + args, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=scratch))
            # The service's own health check command, with its address resolved.
            check = service.get("healthcheck", {}).get("test")
            if check is None:
                check = ["CMD", "/app/countersign", "probe", "http://127.0.0.1:8080/healthz"]
            probe = [binary] + [resolve(a) for a in check[2:]]
            probe = [f"http://127.0.0.1:{ports[name]}" + urllib.parse.urlsplit(a).path
                     if a.startswith("http://127.0.0.1:") else a for a in probe]
            wait_until(f"{name} healthy ({' '.join(probe[1:])})",
                       lambda: subprocess.run(probe, env=env, capture_output=True).returncode == 0)
            print(f"compose smoke: {name} healthy on 127.0.0.1:{ports[name]}")
        public_url = services["countersign"]["environment"]["COUNTERSIGN_PUBLIC_URL"]
        flow(f"http://127.0.0.1:{ports['countersign']}", public_url, f"http://127.0.0.1:{ports['rail-sim']}")
    except BaseException:
        for log in sorted(scratch.glob("*.log")):
            print(f"--- {log.name}\n{log.read_text()[-4000:]}", file=sys.stderr)
        raise
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True, help="the countersign binary (without a container runtime)")
    args = parser.parse_args()
    runtime = shutil.which("docker") and subprocess.run(["docker", "info"], capture_output=True).returncode == 0
    if runtime:
        print("compose smoke: a container runtime answers; building the image and running docker compose")
        with_runtime()
    else:
        print("compose smoke: no container runtime; each service as a local process (e2e/compose_smoke.py)")
        without_runtime(os.path.abspath(args.binary))


if __name__ == "__main__":
    main()
