// The safe flow end to end against the real server: pay() with a human
// approving, rejecting, never answering (deadline), and a rail whose answer
// is lost (unknown → reconciled), plus the ways of waiting.
import assert from "node:assert/strict";
import { test } from "node:test";

import { DeadlineExceeded, type Proposal } from "@countersign/client";

import { client, decodePart, inSeconds, localServer, recorder, runId, transfer } from "./helpers.js";

test("pay() proposes, waits, verifies the token, commits once and ends succeeded", async () => {
  const rec = recorder();
  const cs = client({ fetch: rec.fetch });
  const body = transfer(runId("approve"), 2500);
  const paid = await cs.pay(body, { deadline: inSeconds(20) });

  assert.equal(paid.status, "succeeded");
  assert.equal(paid.operation?.status, "succeeded");
  assert.match(paid.operation?.rail_reference ?? "", /^tr_/);
  assert.equal(paid.canonical_request.amount_minor, 2500);
  assert.equal(paid.approvals[0]?.decision, "approve");

  // The keys were read before the one and only commit, and the commit
  // carried the proposal's own token.
  const commits = rec.where("POST", "/commit");
  assert.equal(commits.length, 1, "exactly one commit");
  const jwks = rec.calls.filter((c) => c.url.pathname === "/.well-known/jwks.json");
  assert.ok(jwks.length >= 1 && jwks[0]!.at <= commits[0]!.at, "the token was verified before the commit");
  const token = JSON.parse(commits[0]!.body!).approval_token as string;
  assert.equal(decodePart(token, 1).pid, paid.id);
  assert.equal(decodePart(token, 1).rh, paid.request_hash);
  // It waited on the event stream, not by polling.
  assert.ok(rec.where("GET", "/events").length >= 1);
});

test("pay() on a rejected proposal returns it rejected and commits nothing", async () => {
  const rec = recorder();
  const cs = client({ fetch: rec.fetch });
  const rejected = await cs.pay(transfer(runId("reject")), { deadline: inSeconds(20) });

  assert.equal(rejected.status, "rejected");
  assert.equal(rejected.operation, null);
  assert.equal(rejected.approval_token, null);
  assert.equal(rejected.approvals[0]?.decision, "reject");
  assert.equal(rejected.approvals[0]?.reason, "declined by the test approver");
  assert.equal(rec.where("POST", "/commit").length, 0, "no commit");
  assert.equal((await cs.get(rejected.id)).status, "rejected");
});

test("pay() past its deadline cancels the proposal, throws DeadlineExceeded and never commits", async () => {
  const rec = recorder();
  const cs = client({ fetch: rec.fetch });
  const started = Date.now();
  const deadline = started + 3000;
  const err = await cs.pay(transfer(runId("hold")), { deadline }).then(
    () => assert.fail("pay() resolved although nobody approved"),
    (e: unknown) => e,
  );
  const elapsed = Date.now() - started;

  assert.ok(err instanceof DeadlineExceeded, `DeadlineExceeded, got ${String(err)}`);
  assert.equal(err.committed, false);
  assert.equal(err.deadline.getTime(), deadline);
  assert.ok(elapsed >= 2900, `it waited until the deadline (${elapsed} ms)`);
  assert.ok(elapsed <= 5000, `it gave up within deadline + 2 s (${elapsed} ms)`);
  assert.equal(err.proposal?.status, "cancelled");
  assert.equal((await cs.get(err.proposal!.id)).status, "cancelled");
  assert.equal(rec.where("POST", "/commit").length, 0, "no commit");
  assert.equal(rec.where("POST", "/cancel").length, 1);
});

test("an unknown commit outcome is settled by reconciliation, never by a second commit", async () => {
  const rec = recorder();
  const cs = client({ fetch: rec.fetch });
  const paid = await cs.pay(transfer(runId("unknown"), 4200), { deadline: inSeconds(20), settleTimeoutMs: 30_000 });

  const commits = rec.where("POST", "/commit");
  assert.equal(commits.length, 1, "exactly one commit");
  const answered = commits[0]!.answer as Proposal;
  assert.equal(answered.status, "unknown", "the rail's answer was lost: the commit said unknown");
  assert.equal(answered.operation?.status, "unknown");
  assert.equal(paid.status, "succeeded");
  assert.equal(paid.operation?.status, "succeeded");
  assert.equal(paid.operation?.id, answered.operation?.id, "the same operation, settled");
  assert.match(paid.operation?.rail_reference ?? "", /^tr_/);
});

test("a commit whose answer is lost is followed by reading the proposal, not by a second commit", async () => {
  let dropped = false;
  const rec = recorder(async (call, real) => {
    const response = await real();
    if (call.url.pathname.endsWith("/commit") && !dropped) {
      dropped = true; // the server committed; its answer never arrives
      await response.body?.cancel();
      throw new TypeError("fetch failed");
    }
    return response;
  });
  const paid = await client({ fetch: rec.fetch }).pay(transfer(runId("approve")), { deadline: inSeconds(20) });
  assert.equal(dropped, true);
  assert.equal(rec.where("POST", "/commit").length, 1, "exactly one commit");
  assert.equal(paid.status, "succeeded");
  assert.match(paid.operation?.rail_reference ?? "", /^tr_/);
});

test("settle() returns a settled payment at once and never commits", async () => {
  const cs = client();
  const paid = await cs.pay(transfer(runId("approve")), { deadline: inSeconds(20) });
  assert.equal(paid.status, "succeeded");
  const rec = recorder();
  const again = await client({ fetch: rec.fetch }).settle(paid.id, { deadline: inSeconds(5) });
  assert.equal(again.status, "succeeded");
  assert.equal(rec.where("POST", "/commit").length, 0);
});

test("wait() long-polls with ?wait= and If-None-Match when SSE is off (useSse: false)", async () => {
  const rec = recorder();
  const cs = client({ fetch: rec.fetch, useSse: false });
  const proposed = await cs.propose(transfer(runId("approve")));
  assert.equal(proposed.status, "pending_approval");
  const decided = await cs.wait(proposed.id, { deadline: inSeconds(15) });

  assert.equal(decided.status, "approved");
  assert.ok(decided.approval_token);
  assert.equal(rec.where("GET", "/events").length, 0, "no event stream");
  const held = rec.calls.filter((c) => c.method === "GET" && c.url.searchParams.has("wait") && c.headers.get("if-none-match"));
  assert.ok(held.length >= 1, "a held request with the last ETag");
  assert.equal(held.at(-1)!.status, 200, "answered when the decision came");
  await cs.cancel(decided.id); // leave no approved proposal behind
});

test("long-poll: an unchanged proposal answers 304 and the deadline still ends the wait", async () => {
  const rec = recorder();
  const cs = client({ fetch: rec.fetch });
  const proposed = await cs.propose(transfer(runId("hold")));
  const started = Date.now();
  const err = await cs.wait(proposed.id, { deadline: started + 2600, useSse: false }).catch((e: unknown) => e);
  const elapsed = Date.now() - started;

  assert.ok(err instanceof DeadlineExceeded, String(err));
  assert.equal(err.proposal?.status, "pending_approval");
  assert.ok(elapsed >= 2500 && elapsed < 4000, `${elapsed} ms`);
  assert.ok(rec.calls.some((c) => c.status === 304 && c.url.searchParams.get("wait") === "2"), "a 304 after ?wait=2");
  assert.equal((await cs.cancel(proposed.id)).status, "cancelled");
});

test("wait() falls back to long-polling when the event stream is unavailable", async () => {
  // A proxy in the way answers the stream with an HTML 502.
  const rec = recorder((call) =>
    call.url.pathname.endsWith("/events") ? Promise.resolve(new Response("<html>bad gateway</html>", { status: 502, headers: { "content-type": "text/html" } })) : undefined,
  );
  const cs = client({ fetch: rec.fetch });
  const proposed = await cs.propose(transfer(runId("approve")));
  const decided = await cs.wait(proposed.id, { deadline: inSeconds(15) });

  assert.equal(decided.status, "approved");
  assert.equal(rec.where("GET", "/events").length, 1, "the stream was tried once");
  assert.ok(rec.calls.some((c) => c.url.searchParams.has("wait") && c.status === 200), "the decision came by long-poll");
  await cs.cancel(decided.id);
});

test("keepalives do not extend the deadline: the stream is aborted at it", async () => {
  // A fake server whose stream never decides, with a keepalive every 100 ms.
  let closedAt = 0;
  let polled = 0;
  const fake = await localServer((req, res) => {
    if (!req.url?.endsWith("/events")) {
      polled++;
      res.writeHead(500).end();
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(`event: proposal\nid: "1"\ndata: {"id":"prop_fake","status":"pending_approval"}\n\n`);
    const beat = setInterval(() => res.write(": keepalive\n\n"), 100);
    res.on("close", () => {
      clearInterval(beat);
      closedAt = Date.now();
    });
  });
  try {
    const cs = client({ baseUrl: fake.url });
    const started = Date.now();
    const err = await cs.wait("prop_fake", { deadline: started + 1500 }).catch((e: unknown) => e);
    const elapsed = Date.now() - started;
    assert.ok(err instanceof DeadlineExceeded, String(err));
    assert.equal(err.proposal?.status, "pending_approval", "the streamed state is kept");
    assert.ok(elapsed >= 1450 && elapsed < 2300, `ended at the deadline (${elapsed} ms)`);
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(closedAt > 0 && closedAt - started < 2500, "the client closed the stream");
    assert.equal(polled, 0, "nothing after the deadline");
  } finally {
    await fake.close();
  }
});
