import type { ErrorDetail, Proposal } from "./types.js";

/**
 * The API refused a request: the error envelope
 * `{"error": {"code", "message", "details", "request_id"}}` as a typed error.
 * Act on `code`; `message` is for people.
 */
export class CountersignError extends Error {
  override readonly name = "CountersignError";
  /** The envelope's `code` (`validation_failed`, `unauthenticated`, …), or
   * `unexpected_response` when the answer carried no envelope. */
  readonly code: string;
  /** The HTTP status. */
  readonly status: number;
  /** `error.request_id` (or the `X-Request-Id` header): quote it to the operator. */
  readonly requestId: string | undefined;
  readonly details: ErrorDetail[];
  /** Which check failed, with `approval_token_invalid` and a few others. */
  readonly reason: string | undefined;
  /** The proposal's status now, with `invalid_state`. */
  readonly currentStatus: string | undefined;

  constructor(init: {
    status: number;
    code: string;
    message: string;
    requestId?: string | undefined;
    details?: ErrorDetail[] | undefined;
    reason?: string | null | undefined;
    currentStatus?: string | null | undefined;
  }) {
    super(`${init.code} (HTTP ${init.status}): ${init.message}`);
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.details = init.details ?? [];
    this.reason = init.reason ?? undefined;
    this.currentStatus = init.currentStatus ?? undefined;
  }
}

/**
 * The deadline passed. Thrown by `wait` and `settle` (nothing is cancelled
 * for you) and by `pay`, which has then withdrawn the proposal and never
 * commits after it (`committed` is false; `proposal` is its state after
 * the cancel).
 */
export class DeadlineExceeded extends Error {
  override readonly name = "DeadlineExceeded";
  readonly deadline: Date;
  /** The proposal as last seen (after the cancel, for `pay`). */
  readonly proposal: Proposal | undefined;
  /** Whether this client committed the proposal (only `settle` can say yes). */
  readonly committed: boolean;

  constructor(message: string, init: { deadline: Date; proposal?: Proposal | undefined; committed?: boolean }) {
    super(message);
    this.deadline = init.deadline;
    this.proposal = init.proposal;
    this.committed = init.committed ?? false;
  }
}

/**
 * An approval token that this client refuses to redeem: it did not verify
 * against the published keys, or is not bound to this proposal and request.
 * `reason` names the failed check, with the server's names where they exist
 * (`malformed`, `wrong_alg`, `wrong_typ`, `unknown_kid`, `bad_signature`,
 * `wrong_issuer`, `wrong_audience`, `not_yet_valid`, `expired`,
 * `wrong_proposal`, `wrong_tenant`, `wrong_agent`, `request_hash_mismatch`),
 * plus `missing` (no token) and `request_mismatch` (the approved request is
 * not the one asked for).
 */
export class TokenRejected extends Error {
  override readonly name = "TokenRejected";
  readonly reason: string;
  /** The proposal, when `pay` refused its token (and then withdrew it). */
  proposal: Proposal | undefined;

  constructor(reason: string, message: string) {
    super(`approval token rejected (${reason}): ${message}`);
    this.reason = reason;
  }
}
