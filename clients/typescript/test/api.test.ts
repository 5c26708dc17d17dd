// Typed errors from the error envelope, and proposals that a retry cannot
// duplicate (Idempotency-Key).
import assert from "node:assert/strict";
import { test } from "node:test";

import { Countersign, CountersignError, type Proposal } from "@countersign/client";

import { URL_, client, recorder, runId, transfer } from "./helpers.js";

async function refused(promise: Promise<unknown>): Promise<CountersignError> {
  const err = await promise.then(
    () => assert.fail("the request was accepted"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof CountersignError, `CountersignError, got ${String(err)}`);
  return err;
}

test("a bad request is a typed 422 validation_failed naming the field", async () => {
  const err = await refused(client().propose({ ...transfer(runId("hold")), amount_minor: 0 }));
  assert.equal(err.status, 422);
  assert.equal(err.code, "validation_failed");
  assert.match(err.requestId ?? "", /^\S+$/);
  assert.ok(
    err.details.some((d) => "field" in d && d.field === "amount_minor"),
    JSON.stringify(err.details),
  );
});

test("a wrong key is a typed 401 unauthenticated", async () => {
  const wrong = new Countersign({ baseUrl: URL_, agentKey: "cs_test_not0a0real0key000000000000000000" });
  const err = await refused(wrong.propose(transfer(runId("hold"))));
  assert.equal(err.status, 401);
  assert.equal(err.code, "unauthenticated");
  assert.ok(err.requestId);
  const read = await refused(wrong.list());
  assert.equal(read.code, "unauthenticated");
});

test("state and token refusals are typed: invalid_state with currentStatus, approval_token_invalid with reason", async () => {
  const cs = client();
  const p = await cs.propose(transfer(runId("hold")));
  const bogus = await refused(cs.commit(p.id, "eyJhbGciOiJIUzI1NiJ9.e30.c2ln"));
  assert.equal(bogus.status, 401);
  assert.equal(bogus.code, "approval_token_invalid");
  assert.ok(bogus.reason, "the failed check is named");
  assert.equal((await cs.cancel(p.id)).status, "cancelled");
  const again = await refused(cs.cancel(p.id));
  assert.equal(again.status, 409);
  assert.equal(again.code, "invalid_state");
  assert.equal(again.currentStatus, "cancelled");
  const missing = await refused(cs.get("prop_doesnotexist000000000000"));
  assert.equal(missing.code, "not_found");
});

test("propose with the same Idempotency-Key replays the same proposal; another body is refused", async () => {
  const rec = recorder();
  const cs = client({ fetch: rec.fetch });
  const body = transfer(runId("hold"));
  const key = `ts-test-${body.run_id}`;
  const a = await cs.propose(body, { idempotencyKey: key });
  const b = await cs.propose(body, { idempotencyKey: key });
  assert.equal(b.id, a.id);
  const posts = rec.where("POST", "/api/v1/proposals");
  assert.equal(posts[0]!.status, 201);
  assert.equal(posts[1]!.status, 201, "the first answer, replayed");
  assert.equal(posts[1]!.responseHeaders?.get("idempotent-replayed"), "true");
  const reused = await refused(cs.propose({ ...body, amount_minor: body.amount_minor + 1 }, { idempotencyKey: key }));
  assert.equal(reused.code, "idempotency_key_reused");
  await cs.cancel(a.id);
});

test("a propose whose answer is lost is retried with the same generated key: one proposal", async () => {
  let lost = false;
  const rec = recorder(async (call, real) => {
    const response = await real();
    if (call.method === "POST" && !lost) {
      lost = true; // the server made the proposal; its answer never arrives
      await response.body?.cancel();
      throw new TypeError("fetch failed");
    }
    return response;
  });
  const cs = client({ fetch: rec.fetch });
  const body = transfer(runId("hold"));
  const proposal: Proposal = await cs.propose(body);

  const posts = rec.where("POST", "/api/v1/proposals");
  assert.equal(posts.length, 2, "sent twice");
  const key = posts[0]!.headers.get("idempotency-key");
  assert.ok(key, "a generated Idempotency-Key");
  assert.equal(posts[1]!.headers.get("idempotency-key"), key, "the same key on the retry");
  assert.equal(posts[1]!.responseHeaders?.get("idempotent-replayed"), "true");
  const mine = (await client().list({ status: "pending_approval", limit: 100 })).data.filter((p) => p.run_id === body.run_id);
  assert.deepEqual(mine.map((p) => p.id), [proposal.id], "exactly one proposal");
  await cs.cancel(proposal.id);
  // Two calls without a key of the caller's get two different keys.
  await cs.propose(transfer(runId("hold"))).then((p) => cs.cancel(p.id));
  const keys = new Set(rec.where("POST", "/api/v1/proposals").map((c) => c.headers.get("idempotency-key")));
  assert.equal(keys.size, 2);
});
