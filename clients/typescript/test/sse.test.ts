// The hand-written event-stream parser, fed awkward chunking.
import assert from "node:assert/strict";
import { test } from "node:test";

import { parseEventStream, type SseEvent } from "@countersign/client";

async function parse(chunks: string[]): Promise<SseEvent[]> {
  const encoder = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(encoder.encode(c));
      controller.close();
    },
  });
  const out: SseEvent[] = [];
  for await (const e of parseEventStream(stream)) out.push(e);
  return out;
}

test("events split across chunks, CRLF and CR line ends, comments and multi-line data", async () => {
  const events = await parse([
    "\uFEFF: keepalive\r",
    "\n\r\nevent: prop",
    "osal\r\nid: \"e1\"\r\ndata: {\"a\":\r\ndata: 1}\r\n\r",
    "\n: another keepalive\n\ndata:plain\rretry: 10\r\r",
    "event: proposal\ndata: never finished",
  ]);
  assert.deepEqual(events, [
    { event: "proposal", data: '{"a":\n1}', id: '"e1"' },
    { event: "message", data: "plain", id: '"e1"' },
  ]);
});
