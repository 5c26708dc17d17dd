// The client's public types, derived from the types generated from the
// server's OpenAPI document (src/schema.d.ts, `npm run generate`).
import type { components } from "./schema.js";

type Schemas = components["schemas"];

export type Proposal = Schemas["Proposal"];
export type ProposalStatus = Schemas["ProposalStatus"];
export type ProposalRequest = Schemas["ProposalRequest"];
export type TransferProposalRequest = Schemas["TransferProposalRequest"];
export type ReversalProposalRequest = Schemas["ReversalProposalRequest"];
export type CanonicalRequest = Schemas["CanonicalRequest"];
export type Operation = Schemas["Operation"];
export type OperationStatus = Schemas["OpStatus"];
export type ProposalList = Schemas["ProposalList"];
export type ErrorBody = Schemas["ErrorBody"];
export type ErrorCode = Schemas["ErrorCode"];
export type ErrorDetail = Schemas["ErrorDetail"];
export type Jwk = Schemas["Jwk"];
export type Jwks = Schemas["Jwks"];

/** An absolute time: a `Date` or milliseconds since the epoch (`Date.now() + 30_000`). */
export type Deadline = Date | number;

/**
 * The claims of an approval token (SPEC §5), once `verifyToken` has checked
 * them. Not part of the OpenAPI document: the token is opaque there.
 */
export interface ApprovalClaims {
  iss: string;
  aud: string;
  sub: string;
  approvers: string[];
  tid: string;
  pid: string;
  rh: string;
  azp: string;
  amr: string[];
  iat: number;
  nbf: number;
  exp: number;
  jti: string;
}
