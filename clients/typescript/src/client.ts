// The Countersign agent client: propose, wait for the human decision (SSE,
// else long-poll), verify the approval token, commit, settle — all under
// one deadline, never committing after it and never committing twice.
import { CountersignError, DeadlineExceeded, TokenRejected } from "./errors.js";
import { parseEventStream } from "./sse.js";
import { checkClaims, decodeToken, verifySignature } from "./token.js";
import type {
  ApprovalClaims,
  Deadline,
  ErrorBody,
  Jwk,
  Jwks,
  Proposal,
  ProposalList,
  ProposalRequest,
  ProposalStatus,
} from "./types.js";

type Fetch = typeof globalThis.fetch;

export interface CountersignOptions {
  /** The server, e.g. `http://127.0.0.1:8080` (the API is under `/api/v1`). */
  baseUrl: string;
  /** The agent's bearer key. */
  agentKey: string;
  /** A `fetch` to use instead of the global one (tests, proxies, tracing). */
  fetch?: Fetch;
  /** Wait with Server-Sent Events (default), else long-poll only. */
  useSse?: boolean;
  /** Where the token keys are published (default `${baseUrl}/.well-known/jwks.json`). */
  jwksUrl?: string;
  /** The expected token `iss` (the console's public URL); checked when given. */
  issuer?: string;
  /** Clock leeway for the token's `nbf` and `exp`, in seconds (default 10; the server allows 30). */
  clockLeewaySeconds?: number;
  /** Bound of a single request that no deadline bounds, in ms (default 30 000). */
  requestTimeoutMs?: number;
}

export interface WaitOptions {
  /** Absolute time at which waiting stops (keepalives never extend it). */
  deadline: Deadline;
  /** Overrides the client's `useSse` for this wait. */
  useSse?: boolean;
}

export interface PayOptions {
  /** Absolute time by which the payment must be approved and committed.
   * Past it, the proposal is cancelled and `DeadlineExceeded` thrown. */
  deadline: Deadline;
  /** The proposal's Idempotency-Key (default: a fresh random one, reused by
   * the client's own retries of this propose). */
  idempotencyKey?: string;
  /** Once committed, how long to follow the payment to a final status, in
   * ms (default 60 000). Past it `pay` returns the proposal as it stands
   * (`executing` or `unknown`): the money may have moved, never pay again. */
  settleTimeoutMs?: number;
}

interface Answer<T> {
  status: number;
  headers: Headers;
  body: T;
}

const DECIDING: ReadonlySet<ProposalStatus> = new Set(["pending_approval", "approval_expired"]);
const SETTLING: ReadonlySet<ProposalStatus> = new Set(["executing", "unknown"]);
const PROPOSE_ATTEMPTS = 4;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));
function toMillis(deadline: Deadline): number {
  const at = deadline instanceof Date ? deadline.getTime() : deadline;
  if (typeof at !== "number" || !Number.isFinite(at)) throw new TypeError("deadline must be a Date or epoch milliseconds");
  return at;
}

/** An AbortSignal that fires at `at` (epoch ms); `dispose` clears its timer. */
function abortAt(at: number): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException("deadline", "TimeoutError")), Math.max(0, at - Date.now()));
  return { signal: controller.signal, dispose: () => clearTimeout(timer) };
}

function isAbort(err: unknown): boolean {
  return err instanceof DOMException && (err.name === "AbortError" || err.name === "TimeoutError");
}

/** Errors worth the same request again (with the same Idempotency-Key). */
function isTransient(err: unknown): boolean {
  if (err instanceof CountersignError) {
    return err.code === "idempotency_key_in_use" || err.code === "rate_limited" || [500, 502, 503, 504].includes(err.status);
  }
  return err instanceof TypeError; // fetch's network failure
}

export class Countersign {
  private readonly baseUrl: string;
  private readonly agentKey: string;
  private readonly fetchImpl: Fetch;
  private readonly useSse: boolean;
  private readonly jwksUrl: string;
  private readonly issuer: string | undefined;
  private readonly leeway: number;
  private readonly requestTimeoutMs: number;
  private jwks: { keys: Jwk[]; at: number } | undefined;

  constructor(options: CountersignOptions) {
    if (!options.baseUrl) throw new TypeError("baseUrl is required");
    if (!options.agentKey) throw new TypeError("agentKey is required");
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.agentKey = options.agentKey;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.useSse = options.useSse ?? true;
    this.jwksUrl = options.jwksUrl ?? `${this.baseUrl}/.well-known/jwks.json`;
    this.issuer = options.issuer;
    this.leeway = options.clockLeewaySeconds ?? 10;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  }

  // ------------------------------------------------------------ HTTP

  private async request<T>(
    method: string,
    path: string,
    init: { body?: unknown; headers?: Record<string, string>; signal?: AbortSignal; allow304?: boolean; timeoutMs?: number } = {},
  ): Promise<Answer<T>> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.agentKey}`, accept: "application/json", ...init.headers };
    if (init.body !== undefined) headers["content-type"] = "application/json";
    const own = abortAt(Date.now() + (init.timeoutMs ?? this.requestTimeoutMs));
    const signal = init.signal ? AbortSignal.any([init.signal, own.signal]) : own.signal;
    try {
      const response = await this.fetchImpl(this.url(path), {
        method,
        headers,
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
        signal,
      });
      if (response.status === 304 && init.allow304) {
        await response.body?.cancel();
        return { status: 304, headers: response.headers, body: undefined as T };
      }
      const text = await response.text();
      if (response.ok) return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : undefined) as T };
      throw errorFrom(response, text);
    } finally {
      own.dispose();
    }
  }

  private url(path: string): string {
    return this.baseUrl + path;
  }

  private proposalPath(id: string, rest = ""): string {
    if (typeof id !== "string" || id === "") throw new TypeError("a proposal id is required");
    return `/api/v1/proposals/${encodeURIComponent(id)}${rest}`;
  }

  // ------------------------------------------------------------ the API

  /**
   * Proposes a payment. A retried request (network failure, 5xx, 429, 409
   * `idempotency_key_in_use`) is sent again with the same Idempotency-Key,
   * so it cannot create a second proposal. 201 new, 200 an existing
   * duplicate: both resolve to the proposal.
   */
  async propose(body: ProposalRequest, options: { idempotencyKey?: string; deadline?: Deadline } = {}): Promise<Proposal> {
    const key = options.idempotencyKey ?? `cs-ts-${crypto.randomUUID()}`;
    const until = options.deadline === undefined ? undefined : toMillis(options.deadline);
    const bound = until === undefined ? undefined : abortAt(until);
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          const answer = await this.request<Proposal>("POST", "/api/v1/proposals", {
            body,
            headers: { "idempotency-key": key },
            ...(bound ? { signal: bound.signal } : {}),
          });
          return answer.body;
        } catch (err) {
          if (attempt >= PROPOSE_ATTEMPTS || !isTransient(err) || bound?.signal.aborted) throw err;
          const retryAfter = err instanceof CountersignError && err.code === "rate_limited" ? 1000 : 0;
          const pause = Math.max(retryAfter, 250 * 2 ** (attempt - 1));
          if (until !== undefined && Date.now() + pause >= until) throw err;
          await sleep(pause);
        }
      }
    } finally {
      bound?.dispose();
    }
  }

  /** The proposal as it is now. */
  async get(id: string): Promise<Proposal> {
    return (await this.request<Proposal>("GET", this.proposalPath(id))).body;
  }

  /** The agent's own proposals, newest first; pass `next_cursor` back as `cursor`. */
  async list(query: { status?: ProposalStatus; limit?: number; cursor?: string } = {}): Promise<ProposalList> {
    const params = new URLSearchParams();
    if (query.status !== undefined) params.set("status", query.status);
    if (query.limit !== undefined) params.set("limit", String(query.limit));
    if (query.cursor !== undefined) params.set("cursor", query.cursor);
    const qs = params.toString();
    return (await this.request<ProposalList>("GET", `/api/v1/proposals${qs ? `?${qs}` : ""}`)).body;
  }

  /** Withdraws a proposal (`pending_approval`, `approved` or `approval_expired`);
   * 409 `invalid_state` otherwise. */
  async cancel(id: string): Promise<Proposal> {
    return (await this.request<Proposal>("POST", this.proposalPath(id, "/cancel"))).body;
  }

  /**
   * Redeems the approval token: the only call that moves money. The answer
   * carries the operation (`succeeded`, `accepted` with the proposal
   * `executing`, `failed`, or `unknown`). Follow a non-final one with
   * `settle`, never with a second commit.
   */
  async commit(id: string, token: string): Promise<Proposal> {
    // The rail call happens inside this request: give it time, never cut it
    // at a deadline (aborting cannot undo a payment, only hide its outcome).
    return (await this.request<Proposal>("POST", this.proposalPath(id, "/commit"), { body: { approval_token: token }, timeoutMs: 120_000 }))
      .body;
  }

  /**
   * Waits for the human decision: resolves with the proposal once it is no
   * longer `pending_approval` (or `approval_expired`). Throws
   * `DeadlineExceeded` at the deadline (nothing is cancelled for you).
   */
  async wait(id: string, options: WaitOptions): Promise<Proposal> {
    return this.waitWhile(id, (p) => DECIDING.has(p.status), toMillis(options.deadline), options.useSse ?? this.useSse, "a decision");
  }

  /**
   * Follows a committed proposal until its payment is settled: `succeeded`,
   * `failed` (or `needs_review`, where an admin decides). It never commits
   * again: `unknown` is settled by the server's reconciliation. Throws
   * `DeadlineExceeded` (with `committed: true`) when still unsettled at the deadline.
   */
  async settle(id: string, options: WaitOptions): Promise<Proposal> {
    return this.waitWhile(id, (p) => SETTLING.has(p.status), toMillis(options.deadline), options.useSse ?? this.useSse, "settlement", true);
  }

  /**
   * Verifies an approval token before it is redeemed: a compact JWS, `alg`
   * exactly ES256, `typ` `countersign-approval+jwt`, signed by the published
   * key named by its `kid`, `aud` `countersign:commit`, within `nbf`/`exp`,
   * and bound to `proposal` (its id, tenant, agent and request hash, the hash
   * recomputed from the canonical request). Throws `TokenRejected` otherwise.
   */
  async verifyToken(token: string, proposal: Proposal, options: { deadline?: Deadline } = {}): Promise<ApprovalClaims> {
    const decoded = decodeToken(token);
    const kid = decoded.header.kid as string;
    const key = await this.publishedKey(kid, options.deadline);
    await verifySignature(decoded, key);
    return checkClaims(decoded.claims, { proposal, issuer: this.issuer, leewaySeconds: this.leeway, now: Date.now() });
  }

  /**
   * The safe flow: propose → wait for the decision → verify the token →
   * commit → settle. If no approval is in hand by the deadline, the proposal
   * is cancelled and `DeadlineExceeded` thrown: it never commits after the
   * deadline. A token that does not verify, or a proposal that is not the
   * request asked for, is never redeemed: the proposal is cancelled and
   * `TokenRejected` thrown. Otherwise resolves with the proposal: `succeeded`,
   * or `rejected`, `expired`, `cancelled`, `failed`, `needs_review` (check `status`).
   */
  async pay(body: ProposalRequest, options: PayOptions): Promise<Proposal> {
    const deadline = toMillis(options.deadline);
    const settleTimeout = options.settleTimeoutMs ?? 60_000;
    const idempotencyKey = options.idempotencyKey ?? `cs-ts-${crypto.randomUUID()}`;
    let proposal: Proposal;
    try {
      proposal = await this.propose(body, { deadline, idempotencyKey });
    } catch (err) {
      if (isAbort(err) || Date.now() >= deadline) {
        // The proposal may exist: the same key replays it, so it can be withdrawn.
        const replayed = await this.request<Proposal>("POST", "/api/v1/proposals", {
          body,
          headers: { "idempotency-key": idempotencyKey },
          timeoutMs: 5_000,
        }).catch(() => undefined);
        const left = replayed ? await this.cancelQuietly(replayed.body.id) : undefined;
        throw new DeadlineExceeded("the deadline passed while proposing; nothing was committed", {
          deadline: new Date(deadline),
          proposal: left,
        });
      }
      throw err;
    }

    if (DECIDING.has(proposal.status)) {
      try {
        proposal = await this.wait(proposal.id, { deadline });
      } catch (err) {
        if (err instanceof DeadlineExceeded) throw await this.giveUp(proposal.id, deadline, "no approval arrived by the deadline");
        throw err;
      }
    }
    if (proposal.status === "approved") {
      if (Date.now() >= deadline) throw await this.giveUp(proposal.id, deadline, "approved after the deadline");
      try {
        assertAsked(body, proposal);
        await this.verifyToken(proposal.approval_token ?? "", proposal, { deadline });
      } catch (err) {
        if (err instanceof TokenRejected) {
          err.proposal = await this.cancelQuietly(proposal.id);
          throw err;
        }
        if (Date.now() >= deadline) throw await this.giveUp(proposal.id, deadline, "the deadline passed while checking the token");
        throw err;
      }
      // The last moment to decide: never commit after the deadline.
      if (Date.now() >= deadline) throw await this.giveUp(proposal.id, deadline, "the deadline passed while checking the token");
      proposal = await this.commitOnce(proposal, deadline);
    }
    if (SETTLING.has(proposal.status)) {
      try {
        proposal = await this.settle(proposal.id, { deadline: Date.now() + settleTimeout });
      } catch (err) {
        if (err instanceof DeadlineExceeded && err.proposal) return err.proposal;
        throw err;
      }
    }
    return proposal;
  }

  // ------------------------------------------------------------ internals

  /**
   * Commits. When the answer is lost (network, timeout) the commit may or may
   * not have happened: read the proposal until it shows, and commit again
   * only if it never arrived and the deadline has not passed (the server
   * answers a repeated commit with the same operation, never a second payment).
   */
  private async commitOnce(proposal: Proposal, deadline: number): Promise<Proposal> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.commit(proposal.id, proposal.approval_token ?? "");
      } catch (err) {
        if (err instanceof CountersignError || attempt >= 2) throw err;
        let seen: Proposal | undefined;
        for (let i = 0; i < 6 && (seen === undefined || (seen.status === "approved" && seen.operation === null)); i++) {
          await sleep(500 * i);
          seen = await this.get(proposal.id).catch(() => seen);
        }
        if (seen === undefined) throw err;
        if (seen.status !== "approved" || seen.operation !== null) return seen;
        if (Date.now() >= deadline) throw await this.giveUp(proposal.id, deadline, "the commit never reached the server before the deadline");
      }
    }
  }

  /** Cancels after a missed deadline and builds the error to throw. */
  private async giveUp(id: string, deadline: number, why: string): Promise<DeadlineExceeded> {
    const proposal = await this.cancelQuietly(id);
    return new DeadlineExceeded(`${why}: ${proposal ? `the proposal is ${proposal.status}` : "it could not be read"}; nothing was committed`, {
      deadline: new Date(deadline),
      proposal,
    });
  }

  /** Withdraws a proposal; if it was decided meanwhile, reads what it is now. */
  private async cancelQuietly(id: string): Promise<Proposal | undefined> {
    try {
      return await this.request<Proposal>("POST", this.proposalPath(id, "/cancel"), { timeoutMs: 10_000 }).then((a) => a.body);
    } catch {
      try {
        return await this.request<Proposal>("GET", this.proposalPath(id), { timeoutMs: 10_000 }).then((a) => a.body);
      } catch {
        return undefined;
      }
    }
  }

  /** The published key `kid`, from the cached JWKS or a fresh read of it. */
  private async publishedKey(kid: string, deadline: Deadline | undefined): Promise<Jwk> {
    const find = () => this.jwks?.keys.filter((k) => k.kid === kid) ?? [];
    let found = this.jwks && Date.now() - this.jwks.at < 60_000 ? find() : [];
    if (found.length === 0) {
      const bound = deadline === undefined ? undefined : abortAt(toMillis(deadline));
      try {
        const response = await this.fetchImpl(this.jwksUrl, {
          headers: { accept: "application/json" },
          signal: bound ? AbortSignal.any([bound.signal, AbortSignal.timeout(this.requestTimeoutMs)]) : AbortSignal.timeout(this.requestTimeoutMs),
        });
        const text = await response.text();
        if (!response.ok) throw errorFrom(response, text);
        const jwks = JSON.parse(text) as Jwks;
        if (!jwks || !Array.isArray(jwks.keys)) throw new TokenRejected("unknown_kid", "the key set has no keys");
        this.jwks = { keys: jwks.keys, at: Date.now() };
      } finally {
        bound?.dispose();
      }
      found = find();
    }
    if (found.length !== 1) throw new TokenRejected("unknown_kid", `no single published key has kid ${JSON.stringify(kid)}`);
    return found[0] as Jwk;
  }

  /**
   * The proposal once `still(proposal)` is false: from the event stream
   * while it is available, else by long-polling, all before `deadline`.
   */
  private async waitWhile(
    id: string,
    still: (p: Proposal) => boolean,
    deadline: number,
    useSse: boolean,
    what: string,
    committed = false,
  ): Promise<Proposal> {
    const late = (proposal: Proposal | undefined) =>
      new DeadlineExceeded(`no ${what} by the deadline (${new Date(deadline).toISOString()})`, { deadline: new Date(deadline), proposal, committed });
    let last: Proposal | undefined;
    if (useSse && Date.now() < deadline) {
      const streamed = await this.streamUntil(id, still, deadline);
      last = streamed.proposal ?? last;
      if (last && !still(last)) return last;
      if (Date.now() >= deadline) throw late(last);
    }
    return this.longPollUntil(id, still, deadline, last, late);
  }

  /** Follows the proposal's event stream. `proposal` is the last state
   * seen; the stream may have ended early (fall back) or at the deadline. */
  private async streamUntil(id: string, still: (p: Proposal) => boolean, deadline: number): Promise<{ proposal: Proposal | undefined }> {
    // One AbortController ends the stream at the deadline, whatever arrives.
    const bound = abortAt(deadline);
    let proposal: Proposal | undefined;
    try {
      const response = await this.fetchImpl(this.url(this.proposalPath(id, "/events")), {
        headers: { authorization: `Bearer ${this.agentKey}`, accept: "text/event-stream" },
        signal: bound.signal,
      });
      const type = response.headers.get("content-type") ?? "";
      if (!response.ok || !response.body || !type.startsWith("text/event-stream")) {
        // Unavailable (a proxy, an older server, an error): the long-poll
        // reports a real error (404, 401) as such.
        await response.body?.cancel().catch(() => undefined);
        return { proposal };
      }
      for await (const event of parseEventStream(response.body)) {
        if (event.event !== "proposal") continue;
        proposal = JSON.parse(event.data) as Proposal;
        if (!still(proposal)) break;
      }
    } catch {
      // Aborted at the deadline, or the stream broke (network, bad data):
      // the caller goes on by long-polling, or stops at the deadline.
    } finally {
      bound.dispose();
    }
    return { proposal };
  }

  /** `GET …?wait=N` with `If-None-Match` until the proposal changes out of
   * `still`, or the deadline passes. */
  private async longPollUntil(
    id: string,
    still: (p: Proposal) => boolean,
    deadline: number,
    last: Proposal | undefined,
    late: (p: Proposal | undefined) => DeadlineExceeded,
  ): Promise<Proposal> {
    let etag: string | undefined;
    let failures = 0;
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw late(last);
      // The first read has no ETag yet and answers at once; then each
      // request is held until the proposal changes or `wait` seconds pass.
      const wait = etag === undefined ? 0 : Math.min(25, Math.floor(remaining / 1000));
      if (etag !== undefined && wait < 1) {
        await sleep(remaining); // under a second left: the server waits in whole seconds
        throw late(last);
      }
      const bound = abortAt(deadline);
      try {
        const answer = await this.request<Proposal>("GET", this.proposalPath(id, wait > 0 ? `?wait=${wait}` : ""), {
          headers: etag === undefined ? {} : { "if-none-match": etag },
          signal: bound.signal,
          allow304: true,
          timeoutMs: (wait + 15) * 1000,
        });
        failures = 0;
        if (answer.status === 200) {
          last = answer.body;
          etag = answer.headers.get("etag") ?? undefined;
          if (!still(last)) return last;
          if (etag === undefined) await sleep(Math.min(1000, deadline - Date.now())); // no ETag: plain polling
        }
      } catch (err) {
        if (bound.signal.aborted) throw late(last);
        if (!isTransient(err) && !isAbort(err)) throw err;
        failures++;
        await sleep(Math.min(500 * failures, deadline - Date.now()));
      } finally {
        bound.dispose();
      }
    }
  }
}

/** A typed error from an error answer (the envelope, or a bare status). */
function errorFrom(response: Response, text: string): CountersignError {
  const requestId = response.headers.get("x-request-id") ?? undefined;
  try {
    const parsed = JSON.parse(text) as { error?: ErrorBody };
    const e = parsed.error;
    if (e && typeof e.code === "string") {
      return new CountersignError({
        status: response.status,
        code: e.code,
        message: e.message ?? "",
        requestId: e.request_id ?? requestId,
        details: e.details,
        reason: e.reason ?? null,
        currentStatus: e.current_status ?? null,
      });
    }
  } catch {
    // not JSON: fall through
  }
  return new CountersignError({ status: response.status, code: "unexpected_response", message: `HTTP ${response.status} without an error envelope`, requestId });
}

/** The approved proposal must be the request this agent asked for. */
function assertAsked(body: ProposalRequest, proposal: Proposal): void {
  const asked = body as Record<string, unknown>;
  const canonical = proposal.canonical_request;
  const differs = (what: string) => {
    throw new TokenRejected("request_mismatch", `the approved ${what} is not what was asked`);
  };
  if (proposal.run_id !== asked.run_id) differs("run_id");
  if ((asked.kind ?? "transfer") !== canonical.kind) differs("kind");
  if (canonical.kind === "transfer") {
    if (canonical.amount_minor !== asked.amount_minor) differs("amount");
    if (canonical.currency !== String(asked.currency).toUpperCase()) differs("currency");
    if (canonical.source_account !== asked.source_account) differs("source account");
    if (canonical.destination.id !== asked.destination) differs("payee");
    if (canonical.purpose_code !== asked.purpose_code) differs("purpose");
    if ((canonical.invoice_id ?? null) !== (asked.invoice_id ?? null)) differs("invoice");
  } else if (asked.amount_minor != null && canonical.amount_minor !== asked.amount_minor) {
    differs("amount");
  }
}
