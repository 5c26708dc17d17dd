// Shared by the suites. They run against a real server and rail simulator
// (server/tests/api/clients.rs starts them and plays the human approver by
// run_id prefix: `approve-`, `reject-`, `unknown-`; anything else stays
// pending).
import { randomUUID, type webcrypto } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

import { Countersign, type CountersignOptions, type Jwk, type TransferProposalRequest } from "@countersign/client";

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run this suite through server/tests/api/clients.rs`);
  return value;
}

export const URL_ = env("COUNTERSIGN_URL");
export const KEY = env("COUNTERSIGN_AGENT_KEY");
export const SOURCE = env("COUNTERSIGN_SOURCE_ACCOUNT");
export const DESTINATION = env("COUNTERSIGN_DESTINATION");

export function client(options: Partial<CountersignOptions> = {}): Countersign {
  return new Countersign({ baseUrl: URL_, agentKey: KEY, ...options });
}

/** A run id no other test uses, with the prefix the approver acts on. */
export function runId(prefix: "approve" | "reject" | "unknown" | "hold"): string {
  return `${prefix}-ts-${Date.now().toString(36)}-${randomUUID().slice(0, 8)}`;
}

/** A small USD vendor transfer to the test payee. */
export function transfer(run: string, amountMinor = 1000 + Math.floor(Math.random() * 9000)): TransferProposalRequest {
  return {
    run_id: run,
    amount_minor: amountMinor,
    currency: "usd",
    source_account: SOURCE,
    destination: DESTINATION,
    purpose_code: "vendor",
    reference: `ts client test ${run}`,
  };
}

export const inSeconds = (s: number) => Date.now() + s * 1000;

// ------------------------------------------------------------ recording fetch

export interface Call {
  method: string;
  url: URL;
  headers: Headers;
  body: string | undefined;
  status: number | undefined;
  responseHeaders: Headers | undefined;
  /** The JSON answer, for calls whose answer the test wants to read. */
  answer: unknown;
  at: number;
}

/**
 * A `fetch` that records every call. `intercept` may answer instead of the
 * network (a Response) or fail after the real request (throw).
 */
export function recorder(intercept?: (call: Call, real: () => Promise<Response>) => Promise<Response> | undefined) {
  const calls: Call[] = [];
  const fetchImpl: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const call: Call = {
      method: request.method,
      url: new URL(request.url),
      headers: request.headers,
      body: typeof init?.body === "string" ? init.body : undefined,
      status: undefined,
      responseHeaders: undefined,
      answer: undefined,
      at: Date.now(),
    };
    calls.push(call);
    const real = () => globalThis.fetch(input, init);
    const response = await (intercept?.(call, real) ?? real());
    call.status = response.status;
    call.responseHeaders = response.headers;
    if (call.method === "POST" && response.headers.get("content-type")?.startsWith("application/json")) {
      call.answer = await response.clone().json();
    }
    return response;
  };
  const where = (method: string, suffix: string) => calls.filter((c) => c.method === method && c.url.pathname.endsWith(suffix));
  return { fetch: fetchImpl, calls, where };
}

// ------------------------------------------------------------ fake servers

/** A local HTTP server for the duration of a test. */
export async function localServer(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; server: Server; close: () => Promise<void> }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Serves `keys` as a JWKS at `/jwks.json`. */
export async function fakeJwks(keys: Jwk[]) {
  const srv = await localServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ keys }));
  });
  return { ...srv, jwksUrl: `${srv.url}/jwks.json` };
}

// ------------------------------------------------------------ tokens of our own

const P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;

export const b64url = (bytes: Uint8Array | string) =>
  Buffer.from(typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes).toString("base64url");

/** A fresh P-256 key pair; `jwk` is its public half as a JWKS entry under `kid`. */
export async function signingKey(kid: string) {
  const pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]);
  const pub = await crypto.subtle.exportKey("jwk", pair.publicKey);
  const jwk: Jwk = { kty: "EC", crv: "P-256", x: pub.x!, y: pub.y!, kid, alg: "ES256", use: "sig" };
  return { privateKey: pair.privateKey, jwk };
}

/** A compact ES256 JWS over `header` and `claims`, in low-s form. */
export async function signToken(privateKey: webcrypto.CryptoKey, header: object, claims: object): Promise<string> {
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  const sig = new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, privateKey, new TextEncoder().encode(input)));
  let s = BigInt("0x" + Buffer.from(sig.subarray(32)).toString("hex"));
  if (s > P256_N / 2n) {
    s = P256_N - s;
    sig.set(Buffer.from(s.toString(16).padStart(64, "0"), "hex"), 32);
  }
  return `${input}.${b64url(sig)}`;
}

export function decodePart(token: string, index: 0 | 1): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split(".")[index]!, "base64url").toString("utf8"));
}
