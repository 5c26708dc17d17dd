// verifyToken() against the server's real tokens and keys, and against
// forgeries: tampered, another proposal's, unknown kid, wrong key, another
// algorithm, expired. A token that does not verify is never redeemed.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { after, before, test } from "node:test";

import { TokenRejected, type Countersign, type Jwk, type Proposal } from "@countersign/client";

import { b64url, client, decodePart, fakeJwks, inSeconds, recorder, runId, signingKey, signToken, transfer } from "./helpers.js";

const cs: Countersign = client();
let first: Proposal;
let second: Proposal;
let realKeys: Jwk[];

async function rejects(promise: Promise<unknown>, reason: string) {
  const err = await promise.then(
    () => assert.fail(`the token was accepted; expected ${reason}`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof TokenRejected, `TokenRejected, got ${String(err)}`);
  assert.equal(err.reason, reason, err.message);
}

before(async () => {
  // Two approved proposals, decided together.
  const [a, b] = await Promise.all([cs.propose(transfer(runId("approve"))), cs.propose(transfer(runId("approve")))]);
  [first, second] = await Promise.all([cs.wait(a.id, { deadline: inSeconds(15) }), cs.wait(b.id, { deadline: inSeconds(15) })]);
  assert.equal(first.status, "approved");
  assert.equal(second.status, "approved");
  realKeys = ((await (await fetch(new URL("/.well-known/jwks.json", process.env.COUNTERSIGN_URL))).json()) as { keys: Jwk[] }).keys;
});

after(async () => {
  // Never redeemed here: withdraw them.
  for (const p of [first, second]) if (p) await cs.cancel(p.id).catch(() => undefined);
});

test("a real approval token verifies and its claims are bound to the proposal", async () => {
  const claims = await cs.verifyToken(first.approval_token!, first);
  assert.equal(claims.pid, first.id);
  assert.equal(claims.rh, first.request_hash);
  assert.equal(claims.aud, "countersign:commit");
  assert.equal(claims.tid, first.canonical_request.tenant_id);
  assert.equal(claims.azp, first.canonical_request.agent_id);
  assert.deepEqual(claims.approvers, [first.approvals[0]!.approver_id]);
  assert.ok(claims.exp > Date.now() / 1000);
});

test("a tampered token is refused (payload changed, signature kept)", async () => {
  const [h, , s] = first.approval_token!.split(".");
  const claims = { ...decodePart(first.approval_token!, 1), amr: ["passkey"] };
  await rejects(cs.verifyToken(`${h}.${b64url(JSON.stringify(claims))}.${s}`, first), "bad_signature");
  // One flipped bit of the signature.
  const sig = Buffer.from(s!, "base64url");
  sig[10]! ^= 1;
  await rejects(cs.verifyToken(`${h}.${first.approval_token!.split(".")[1]}.${b64url(sig)}`, first), "bad_signature");
});

test("another proposal's token is refused", async () => {
  await rejects(cs.verifyToken(first.approval_token!, second), "wrong_proposal");
  await rejects(cs.verifyToken(second.approval_token!, first), "wrong_proposal");
});

test("a proposal whose canonical request does not hash to rh is refused", async () => {
  const altered: Proposal = { ...first, canonical_request: { ...first.canonical_request, amount_minor: first.canonical_request.amount_minor + 1 } };
  await rejects(cs.verifyToken(first.approval_token!, altered), "request_hash_mismatch");
});

test("an unknown kid and a wrong key (a fake JWKS) are refused", async () => {
  const kid = decodePart(first.approval_token!, 0).kid as string;
  const other = await signingKey("some-other-kid");
  const impostor = await signingKey(kid); // the server's kid, another key
  const onlyOthers = await fakeJwks([other.jwk]);
  const wrongKey = await fakeJwks([impostor.jwk]);
  try {
    await rejects(client({ jwksUrl: onlyOthers.jwksUrl }).verifyToken(first.approval_token!, first), "unknown_kid");
    await rejects(client({ jwksUrl: wrongKey.jwksUrl }).verifyToken(first.approval_token!, first), "bad_signature");
    // And the real keys do not know a kid of our own.
    const ours = await signToken(other.privateKey, { alg: "ES256", typ: "countersign-approval+jwt", kid: "some-other-kid" }, decodePart(first.approval_token!, 1));
    await rejects(cs.verifyToken(ours, first), "unknown_kid");
    assert.ok(!realKeys.some((k) => k.kid === "some-other-kid"));
  } finally {
    await onlyOthers.close();
    await wrongKey.close();
  }
});

test("alg other than ES256 is refused: HS256 key confusion and none", async () => {
  const kid = decodePart(first.approval_token!, 0).kid as string;
  const payload = first.approval_token!.split(".")[1];
  const secret = JSON.stringify(realKeys.find((k) => k.kid === kid));
  const head = b64url(JSON.stringify({ alg: "HS256", typ: "countersign-approval+jwt", kid }));
  const mac = createHmac("sha256", secret).update(`${head}.${payload}`).digest("base64url");
  await rejects(cs.verifyToken(`${head}.${payload}.${mac}`, first), "wrong_alg");
  const none = b64url(JSON.stringify({ alg: "none", typ: "countersign-approval+jwt", kid }));
  await rejects(cs.verifyToken(`${none}.${payload}.`, first), "wrong_alg");
  const wrongTyp = b64url(JSON.stringify({ alg: "ES256", typ: "JWT", kid }));
  await rejects(cs.verifyToken(`${wrongTyp}.${payload}.${first.approval_token!.split(".")[2]}`, first), "wrong_typ");
  await rejects(cs.verifyToken("not-a-token", first), "malformed");
});

test("a correctly signed token of our own verifies only while valid and bound", async () => {
  const own = await signingKey("test-kid");
  const jwks = await fakeJwks([own.jwk]);
  try {
    const verifier = client({ jwksUrl: jwks.jwksUrl });
    const header = { alg: "ES256", typ: "countersign-approval+jwt", kid: "test-kid" };
    const claims = decodePart(first.approval_token!, 1);
    const now = Math.floor(Date.now() / 1000);
    // The harness is right: the same claims under our key verify here...
    const ok = await verifier.verifyToken(await signToken(own.privateKey, header, claims), first);
    assert.equal(ok.pid, first.id);
    // ...but not once expired, not before nbf, not for another audience or request.
    await rejects(verifier.verifyToken(await signToken(own.privateKey, header, { ...claims, exp: now - 120 }), first), "expired");
    await rejects(verifier.verifyToken(await signToken(own.privateKey, header, { ...claims, nbf: now + 120 }), first), "not_yet_valid");
    await rejects(verifier.verifyToken(await signToken(own.privateKey, header, { ...claims, aud: "someone-else" }), first), "wrong_audience");
    await rejects(verifier.verifyToken(await signToken(own.privateKey, header, { ...claims, rh: second.request_hash }), first), "request_hash_mismatch");
    await rejects(verifier.verifyToken(await signToken(own.privateKey, header, { ...claims, azp: "other-bot" }), first), "wrong_agent");
    await rejects(verifier.verifyToken(await signToken(own.privateKey, header, { ...claims, tid: "globex" }), first), "wrong_tenant");
  } finally {
    await jwks.close();
  }
});

test("pay() never redeems a token that does not verify: it cancels and throws TokenRejected", async () => {
  const stranger = await signingKey("stranger");
  const jwks = await fakeJwks([stranger.jwk]);
  try {
    const rec = recorder();
    const cs2 = client({ fetch: rec.fetch, jwksUrl: jwks.jwksUrl });
    const err = await cs2.pay(transfer(runId("approve")), { deadline: inSeconds(15) }).catch((e: unknown) => e);
    assert.ok(err instanceof TokenRejected, String(err));
    assert.equal(err.reason, "unknown_kid");
    assert.equal(rec.where("POST", "/commit").length, 0, "no commit");
    assert.equal(err.proposal?.status, "cancelled");
  } finally {
    await jwks.close();
  }
});
