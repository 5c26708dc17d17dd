// A Server-Sent Events parser over a fetch body stream (the WHATWG
// "event stream interpretation", enough of it for Countersign's streams),
// so the client needs no EventSource.

export interface SseEvent {
  /** `event:`, or "message" when the event named none. */
  event: string;
  /** Every `data:` line of the event, joined with "\n". */
  data: string;
  /** The last `id:` seen on the stream so far (for `Last-Event-ID`). */
  id: string | undefined;
}

/**
 * Yields each event of `body` until the stream ends. Comment lines (the
 * server's keepalives) and unknown fields are skipped. Aborting the fetch
 * that produced `body` makes the pending read reject, and so this generator.
 */
export async function* parseEventStream(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");
  let buffer = "";
  let data: string[] = [];
  let event = "";
  let lastId: string | undefined;
  let first = true;

  const line = (text: string): SseEvent | undefined => {
    if (text === "") {
      const out = data.length > 0 ? { event: event || "message", data: data.join("\n"), id: lastId } : undefined;
      data = [];
      event = "";
      return out;
    }
    if (text.startsWith(":")) return undefined; // a comment: keepalive
    const colon = text.indexOf(":");
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? "" : text.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data.push(value);
    else if (field === "event") event = value;
    else if (field === "id" && !value.includes("\0")) lastId = value;
    return undefined; // `retry` and unknown fields are ignored
  };

  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      if (first) {
        if (buffer.startsWith("\uFEFF")) buffer = buffer.slice(1);
        first = false;
      }
      let start = 0;
      for (let i = 0; i < buffer.length; i++) {
        const c = buffer[i];
        if (c !== "\n" && c !== "\r") continue;
        // A CR at the very end may be the first half of a CRLF: wait for more.
        if (c === "\r" && i === buffer.length - 1) break;
        const out = line(buffer.slice(start, i));
        if (c === "\r" && buffer[i + 1] === "\n") i++;
        start = i + 1;
        if (out) yield out;
      }
      buffer = buffer.slice(start);
    }
    // An event not followed by a blank line when the stream ends is dropped,
    // as the specification says.
  } finally {
    reader.cancel().catch(() => undefined);
  }
}
