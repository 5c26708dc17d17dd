// Approval-token verification: ES256 (ECDSA P-256 / SHA-256) with WebCrypto,
// against the server's published keys, and the claims bound to one proposal.
import { TokenRejected } from "./errors.js";
import type { ApprovalClaims, CanonicalRequest, Jwk, Proposal } from "./types.js";

export const TOKEN_TYPE = "countersign-approval+jwt";
export const AUDIENCE = "countersign:commit";

const B64URL = /^[A-Za-z0-9_-]+$/;
// The order of the P-256 group, to refuse a high-s signature as the server does.
const P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;

export function base64UrlDecode(text: string): Uint8Array {
  if (!B64URL.test(text)) throw new TypeError("not base64url");
  const b64 = text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4);
  const binary = atob(b64);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

export function base64UrlEncode(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** RFC 8785 (JCS) for JSON values: sorted member names (UTF-16 order),
 * ECMAScript number and string serialization. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) throw new TypeError("JCS: not a finite number");
    const out = JSON.stringify(value);
    if (out === undefined) throw new TypeError(`JCS: ${typeof value} is not JSON`);
    return out;
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

/** `sha256:` + lowercase hex SHA-256 of the canonical request's JCS form. */
export async function requestHash(canonical: CanonicalRequest): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(canonicalJson(canonical)));
  return "sha256:" + Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

function decodeJson(part: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(base64UrlDecode(part)));
  } catch {
    throw new TokenRejected("malformed", `the ${what} is not base64url JSON`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new TokenRejected("malformed", `the ${what} is not a JSON object`);
  }
  return value as Record<string, unknown>;
}

export interface DecodedToken {
  header: Record<string, unknown>;
  claims: Record<string, unknown>;
  signingInput: Uint8Array;
  signature: Uint8Array;
}

/** Splits and decodes a compact JWS, refusing anything but ES256 with our `typ`. */
export function decodeToken(token: string): DecodedToken {
  if (typeof token !== "string" || token.length === 0) throw new TokenRejected("missing", "no approval token");
  if (token.length > 8192) throw new TokenRejected("malformed", "the token is over 8 KiB");
  const parts = token.split(".");
  if (parts.length !== 3) throw new TokenRejected("malformed", "not a compact JWS (three parts)");
  const [head, body, sig] = parts as [string, string, string];
  const header = decodeJson(head, "header");
  // The algorithm is fixed here, never taken from the token: no `none`, no HS256.
  if (header.alg !== "ES256") throw new TokenRejected("wrong_alg", `alg is ${JSON.stringify(header.alg)}, not ES256`);
  if (header.typ !== TOKEN_TYPE) throw new TokenRejected("wrong_typ", `typ is ${JSON.stringify(header.typ)}`);
  if (typeof header.kid !== "string" || header.kid === "") throw new TokenRejected("unknown_kid", "the header names no kid");
  if (header.crit !== undefined) throw new TokenRejected("malformed", "critical header parameters are not understood");
  if (!B64URL.test(sig)) throw new TokenRejected("malformed", "the signature is not base64url");
  const claims = decodeJson(body, "payload");
  return {
    header,
    claims,
    signingInput: new TextEncoder().encode(`${head}.${body}`),
    signature: base64UrlDecode(sig),
  };
}

/** Checks the ES256 signature under `jwk` (a published P-256 key). */
export async function verifySignature(decoded: DecodedToken, jwk: Jwk): Promise<void> {
  if (jwk.kty !== "EC" || jwk.crv !== "P-256" || (jwk.alg !== undefined && jwk.alg !== "ES256") || (jwk.use !== undefined && jwk.use !== "sig")) {
    throw new TokenRejected("unknown_kid", `key ${jwk.kid} is not a P-256 ES256 signing key`);
  }
  const { signature } = decoded;
  // JWS ES256 signatures are r || s, 32 bytes each (what WebCrypto verifies).
  if (signature.length !== 64) throw new TokenRejected("bad_signature", "an ES256 signature is 64 bytes");
  const s = BigInt("0x" + Array.from(signature.subarray(32), (b) => b.toString(16).padStart(2, "0")).join(""));
  if (s > P256_N / 2n) throw new TokenRejected("bad_signature", "the signature is not in low-s form");
  let key: Awaited<ReturnType<typeof crypto.subtle.importKey>>;
  try {
    key = await crypto.subtle.importKey(
      "jwk",
      { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y, ext: true },
      { name: "ECDSA", namedCurve: "P-256" },
      false,
      ["verify"],
    );
  } catch {
    throw new TokenRejected("unknown_kid", `key ${jwk.kid} is not a valid P-256 public key`);
  }
  const ok = await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key, signature, decoded.signingInput);
  if (!ok) throw new TokenRejected("bad_signature", "the signature does not verify under the published key");
}

export interface ClaimChecks {
  proposal: Proposal;
  /** The expected `iss` (the console's public URL); unchecked beyond its type when undefined. */
  issuer: string | undefined;
  leewaySeconds: number;
  now: number;
}

/** Checks the claims against the proposal they must be bound to. */
export async function checkClaims(claims: Record<string, unknown>, checks: ClaimChecks): Promise<ApprovalClaims> {
  const { proposal, leewaySeconds } = checks;
  const now = checks.now / 1000;
  const str = (name: string) => {
    const v = claims[name];
    if (typeof v !== "string" || v === "") throw new TokenRejected("malformed", `claim ${name} is missing`);
    return v;
  };
  const num = (name: string) => {
    const v = claims[name];
    if (typeof v !== "number" || !Number.isFinite(v)) throw new TokenRejected("malformed", `claim ${name} is missing`);
    return v;
  };
  const list = (name: string) => {
    const v = claims[name];
    if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) throw new TokenRejected("malformed", `claim ${name} is not a list of strings`);
    return v as string[];
  };
  const iss = str("iss");
  if (checks.issuer !== undefined && iss !== checks.issuer) throw new TokenRejected("wrong_issuer", `iss is ${iss}`);
  if (claims.aud !== AUDIENCE) throw new TokenRejected("wrong_audience", `aud is ${JSON.stringify(claims.aud)}`);
  const nbf = num("nbf");
  const exp = num("exp");
  const iat = num("iat");
  if (now + leewaySeconds < nbf) throw new TokenRejected("not_yet_valid", `nbf is ${nbf}, now ${Math.floor(now)}`);
  if (now - leewaySeconds > exp) throw new TokenRejected("expired", `exp was ${exp}, now ${Math.floor(now)}`);
  const pid = str("pid");
  if (pid !== proposal.id) throw new TokenRejected("wrong_proposal", `the token is for ${pid}, not ${proposal.id}`);
  const canonical = proposal.canonical_request;
  const tid = str("tid");
  if (tid !== canonical.tenant_id) throw new TokenRejected("wrong_tenant", `tid is ${tid}`);
  const azp = str("azp");
  if (azp !== canonical.agent_id) throw new TokenRejected("wrong_agent", `the token is for agent ${azp}`);
  const rh = str("rh");
  if (rh !== proposal.request_hash) throw new TokenRejected("request_hash_mismatch", "rh is not the proposal's request hash");
  // The hash must also be the one of the canonical request shown to us.
  if ((await requestHash(canonical)) !== rh) {
    throw new TokenRejected("request_hash_mismatch", "the canonical request does not hash to rh");
  }
  return {
    iss,
    aud: AUDIENCE,
    sub: str("sub"),
    approvers: list("approvers"),
    tid,
    pid,
    rh,
    azp,
    amr: list("amr"),
    iat,
    nbf,
    exp,
    jti: str("jti"),
  };
}
