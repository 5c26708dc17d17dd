"""examples/langgraph_approval.py, run as a program: pause at interrupt(), resume with the decision."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from countersign import Client
from support import Env, run_id

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "langgraph_approval.py"


def run_example(env: Env, run: str, *extra: str) -> tuple[int, list[dict[str, Any]], str]:
    pytest.importorskip("langgraph")
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), "--run-id", run, "--amount-minor", "3100", "--reference", "LangGraph test",
         "--timeout", "30", "--settle-timeout", "30", *extra],
        env={**os.environ, "COUNTERSIGN_URL": env.url, "COUNTERSIGN_AGENT_KEY": env.key,
             "COUNTERSIGN_SOURCE_ACCOUNT": env.source, "COUNTERSIGN_DESTINATION": env.destination},
        capture_output=True, text=True, timeout=90,
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc.returncode, lines, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"


def test_the_example_pauses_for_the_human_then_pays(env: Env, client: Client) -> None:
    run = run_id("approve")
    code, lines, output = run_example(env, run)

    assert code == 0, output
    assert [line["event"] for line in lines] == ["interrupted", "result"], output
    paused, result = lines
    assert paused["proposal_id"].startswith("prop_") and paused["run_id"] == run
    assert result["proposal_id"] == paused["proposal_id"]
    assert result["status"] == "succeeded" and result["paid"] is True and result["rail_reference"], output
    # The server agrees, and the run paid exactly what it asked for.
    p = client.get(paused["proposal_id"])
    assert p.status == "succeeded" and p.run_id == run and p.amount_minor == 3100
    assert p.operation is not None and p.operation.rail_reference == result["rail_reference"]
    assert "token verified" in output


def test_the_example_ends_unpaid_when_rejected(env: Env, client: Client) -> None:
    code, lines, output = run_example(env, run_id("reject"))

    assert code == 1, output
    assert [line["event"] for line in lines] == ["interrupted", "result"], output
    paused, result = lines
    assert result["status"] == "rejected" and result["paid"] is False, output
    assert result["reason"] == "declined by the test approver"
    p = client.get(paused["proposal_id"])
    assert p.status == "rejected" and p.operation is None
