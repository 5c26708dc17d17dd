#!/usr/bin/env python3
"""A LangGraph run that pays only with a human's countersignature.

The graph has three steps:

    propose ──> await_decision ──(approved)──> commit ──> END
                       └───────(anything else)──> not_paid ──> END

- ``propose`` proposes the payment to Countersign (nothing moves yet);
- ``await_decision`` pauses the run with LangGraph's ``interrupt(...)``,
  carrying the proposal id. The run is checkpointed (``InMemorySaver`` here;
  a database checkpointer in production) and this process could even exit;
- the driver (``main``) waits for the human's decision with the Countersign
  client (Server-Sent Events, long-poll fallback, one deadline) and resumes
  the run with ``Command(resume=decision)``;
- ``commit`` re-reads the proposal, verifies the approval token against the
  server's published keys and the request this run made, commits, and
  follows the payment to its final status (an ``unknown`` outcome is
  reconciled, never committed again). A rejection ends the run unpaid.

There is no LLM and no network beyond Countersign. The human approves in the
console (or Slack); the deadline withdraws the proposal if nobody does.

    COUNTERSIGN_URL=http://localhost:8080 COUNTERSIGN_AGENT_KEY=cs_test_... \\
    python3 examples/langgraph_approval.py --run-id run-42 --amount-minor 25000 \\
        --source acct_0123456789abcdef --destination ba_northwind0007

stdout: one JSON line ``{"event": "interrupted", "proposal_id": ...}`` when
the run pauses, and the result as the last JSON line. Exit status: 0 paid;
1 not paid (rejected, cancelled, expired, failed, or the deadline passed:
then the proposal was withdrawn); 2 refused (a request the server refused,
a token that does not verify — never committed —, or a payment still not
final after --settle-timeout).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import uuid
from pathlib import Path
from typing import Any, Literal, TypedDict

try:
    import countersign
except ImportError:  # run from a checkout: use the client next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "clients" / "python" / "src"))
    import countersign

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from countersign import (
    UNSETTLED_STATUSES,
    Client,
    CountersignError,
    Deadline,
    DeadlineExceeded,
    NotSettled,
    Proposal,
    TokenVerificationError,
)

log = logging.getLogger("langgraph_approval")


class Decision(TypedDict, total=False):
    """What the driver resumes the run with."""

    status: str  # the proposal's status after the wait: approved, rejected, cancelled, expired...
    reason: str | None  # the approver's reason for a rejection, or "deadline"


class Result(TypedDict, total=False):
    proposal_id: str | None
    status: str
    paid: bool
    rail_reference: str | None
    reason: str | None
    refused: str | None  # set when this run refused or was refused (exit 2)


class PaymentState(TypedDict, total=False):
    request: dict[str, Any]  # the body proposed (what the agent asked for)
    proposal_id: str
    approval_url: str | None
    decision: Decision
    result: Result


def result_of(p: Proposal, **extra: Any) -> Result:
    op = p.operation
    result: Result = {
        "proposal_id": p.id,
        "status": p.status,
        "paid": p.status == "succeeded",
        "rail_reference": op.rail_reference if op else None,
        "reason": p.rejection_reason or (op.error.code if op and op.error else None),
    }
    result.update(extra)  # type: ignore[typeddict-item]
    return result


def build_graph(client: Client, deadline: Deadline, settle_timeout: float) -> Any:
    """The compiled graph; its nodes use ``client`` under one ``deadline``."""

    def propose(state: PaymentState) -> PaymentState:
        request = state["request"]
        # The same run proposing the same payment again (a retried node, a
        # restarted worker) replays the first answer instead of proposing twice.
        key = "langgraph-" + str(uuid.uuid5(uuid.NAMESPACE_URL, json.dumps(request, sort_keys=True)))
        p = client.propose(**request, idempotency_key=key)
        log.info("proposed %s: %s (no money moves until commit)", p.id, p.status)
        return {"proposal_id": p.id, "approval_url": p.approval_url}

    def await_decision(state: PaymentState) -> PaymentState:
        # Pauses the run here; `Command(resume=...)` makes interrupt() return it.
        decision: Decision = interrupt(
            {"kind": "countersign_approval", "proposal_id": state["proposal_id"],
             "approval_url": state.get("approval_url")}
        )
        return {"decision": decision}

    def route(state: PaymentState) -> Literal["commit", "not_paid"]:
        status = state["decision"].get("status")
        return "commit" if status == "approved" or status in UNSETTLED_STATUSES else "not_paid"

    def commit(state: PaymentState) -> PaymentState:
        pid = state["proposal_id"]
        p = client.get(pid)  # the token as it is now, never one kept in a checkpoint
        if p.status in UNSETTLED_STATUSES:
            return {"result": result_of(client.settle(p, deadline=settle_timeout))}
        if p.status != "approved":
            return {"result": result_of(p)}
        try:
            claims = client.verify_token(p.approval_token or "", p, expected=state["request"])
        except TokenVerificationError as err:
            log.error("not committed: %s", err)
            after = client.cancel(pid)
            return {"result": result_of(after, refused=f"token_verification_failed:{err.reason}")}
        log.info("token verified: kid %s, approvers %s", claims.kid, list(claims.approvers))
        if deadline.expired():
            after = client.cancel(pid)
            return {"result": result_of(after, reason="deadline")}
        committed = client.commit(pid, p.approval_token or "")
        log.info("committed: %s", committed.status)
        if committed.status in UNSETTLED_STATUSES:
            # `unknown`: the bank is being asked. Wait for reconciliation; never commit again.
            committed = client.settle(committed, deadline=settle_timeout)
        return {"result": result_of(committed)}

    def not_paid(state: PaymentState) -> PaymentState:
        decision = state["decision"]
        return {"result": {"proposal_id": state["proposal_id"], "status": decision.get("status", "unknown"),
                           "paid": False, "rail_reference": None, "reason": decision.get("reason")}}

    graph = StateGraph(PaymentState)
    graph.add_node("propose", propose)
    graph.add_node("await_decision", await_decision)
    graph.add_node("commit", commit)
    graph.add_node("not_paid", not_paid)
    graph.add_edge(START, "propose")
    graph.add_edge("propose", "await_decision")
    graph.add_conditional_edges("await_decision", route)
    graph.add_edge("commit", END)
    graph.add_edge("not_paid", END)
    return graph.compile(checkpointer=InMemorySaver())


def decide(client: Client, proposal_id: str, deadline: Deadline) -> Decision:
    """The driver's part: wait for the human, or withdraw at the deadline."""
    try:
        p = client.wait(proposal_id, deadline=deadline)
    except DeadlineExceeded:
        try:
            after = client.cancel(proposal_id)
        except CountersignError:
            after = client.get(proposal_id)
        log.warning("no decision before the deadline: the proposal is %s", after.status)
        return {"status": after.status, "reason": "deadline"}
    return {"status": p.status, "reason": p.rejection_reason}


def emit(obj: dict[str, Any]) -> None:
    print(json.dumps(obj), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default=os.environ.get("COUNTERSIGN_URL", "http://localhost:8080"))
    parser.add_argument("--run-id", default=None, help="the agent run (default: a new one)")
    parser.add_argument("--amount-minor", type=int, default=2500)
    parser.add_argument("--currency", default="USD")
    parser.add_argument("--source", default=os.environ.get("COUNTERSIGN_SOURCE_ACCOUNT"))
    parser.add_argument("--destination", default=os.environ.get("COUNTERSIGN_DESTINATION"))
    parser.add_argument("--purpose", default="vendor")
    parser.add_argument("--reference", default=None)
    parser.add_argument("--invoice", default=None)
    parser.add_argument("--timeout", type=float, default=300,
                        help="seconds from now by which the payment must be approved and committed")
    parser.add_argument("--settle-timeout", type=float, default=120,
                        help="once committed, how long to follow the payment to its final status")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    key = os.environ.get("COUNTERSIGN_AGENT_KEY")
    if not key or not args.source or not args.destination:
        log.error("set COUNTERSIGN_AGENT_KEY, and --source/--destination "
                  "(or COUNTERSIGN_SOURCE_ACCOUNT/COUNTERSIGN_DESTINATION)")
        return 2
    run_id = args.run_id or f"langgraph-{uuid.uuid4().hex[:12]}"
    deadline = Deadline.after(args.timeout)
    request = countersign.payment_request(
        run_id=run_id, amount_minor=args.amount_minor, currency=args.currency, source_account=args.source,
        destination=args.destination, purpose_code=args.purpose, reference=args.reference,
        invoice_id=args.invoice,
    )
    with Client(args.url, key) as client:
        app = build_graph(client, deadline, args.settle_timeout)
        config = {"configurable": {"thread_id": run_id}}
        try:
            out = app.invoke({"request": request}, config)
            while out.get("__interrupt__"):
                pause = out["__interrupt__"][0].value
                emit({"event": "interrupted", "run_id": run_id, "proposal_id": pause["proposal_id"],
                      "approval_url": pause.get("approval_url")})
                decision = decide(client, pause["proposal_id"], deadline)
                log.info("resuming with the decision: %s", decision)
                out = app.invoke(Command(resume=decision), config)
        except NotSettled as err:
            emit({"event": "result", "run_id": run_id, "status": err.proposal.status if err.proposal else None,
                  "paid": False, "refused": "not_settled"})
            return 2
        except CountersignError as err:
            log.error("refused: %s", err)
            emit({"event": "result", "run_id": run_id, "status": None, "paid": False, "refused": err.code})
            return 2
    result: Result = out["result"]
    emit({"event": "result", "run_id": run_id, **result})
    if result.get("paid"):
        return 0
    return 2 if result.get("refused") else 1


if __name__ == "__main__":
    sys.exit(main())
