export { Countersign } from "./client.js";
export type { CountersignOptions, PayOptions, WaitOptions } from "./client.js";
export { CountersignError, DeadlineExceeded, TokenRejected } from "./errors.js";
export { canonicalJson, requestHash } from "./token.js";
export { parseEventStream } from "./sse.js";
export type { SseEvent } from "./sse.js";
export type * from "./types.js";
export type { components, paths, operations } from "./schema.js";
