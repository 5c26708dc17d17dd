// The committed types (src/schema.d.ts) must be what openapi-typescript
// makes of the OpenAPI document this server serves: a change to the API
// that the client has not picked up fails here. Fix: `npm run generate`.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";

import { fetchDocument, schemaTypes } from "#openapi-types";

import { URL_ } from "./helpers.js";

test("src/schema.d.ts equals openapi-typescript's output for the server's /openapi.json", async () => {
  const document = (await fetchDocument(URL_)) as { openapi?: string; paths?: Record<string, unknown> };
  assert.match(document.openapi ?? "", /^3\.1\./);
  assert.ok(document.paths?.["/api/v1/proposals/{id}/commit"], "the document describes the agent API");
  const generated = await schemaTypes(document);
  const committed = await readFile(new URL("../../src/schema.d.ts", import.meta.url), "utf8");
  if (generated !== committed) {
    const a = committed.split("\n");
    const b = generated.split("\n");
    let line = 0;
    while (line < Math.max(a.length, b.length) && a[line] === b[line]) line++;
    assert.fail(
      `src/schema.d.ts is behind the server's OpenAPI document (first difference at line ${line + 1}:\n` +
        `  committed: ${a[line] ?? "<end>"}\n  server:    ${b[line] ?? "<end>"}\n` +
        `regenerate with: COUNTERSIGN_URL=<server> npm run generate`,
    );
  }
});
