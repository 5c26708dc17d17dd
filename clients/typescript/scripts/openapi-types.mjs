// Turns Countersign's OpenAPI document into `src/schema.d.ts` with
// openapi-typescript's programmatic API. `npm run generate` writes the file;
// the drift test (test/schema-drift.test.ts) runs the same function on the
// document a live server serves and compares, so the committed types cannot
// fall behind the server unnoticed.
import openapiTS, { astToString } from "openapi-typescript";

export const HEADER = `/**
 * Generated from Countersign's OpenAPI document (GET /openapi.json) by
 * openapi-typescript: \`npm run generate\` with COUNTERSIGN_URL set.
 * Do not edit by hand; test/schema-drift.test.ts checks it against the server.
 */

`;

/** The `schema.d.ts` text for an OpenAPI document (a parsed object). */
export async function schemaTypes(document) {
  // The server names itself (`servers`), which differs per deployment and
  // does not shape any type: leave it out so the output is the same everywhere.
  const { servers: _servers, ...doc } = document;
  const ast = await openapiTS(structuredClone(doc), { silent: true });
  return HEADER + astToString(ast);
}

/** Fetches `${baseUrl}/openapi.json` and parses it. */
export async function fetchDocument(baseUrl) {
  const url = new URL("/openapi.json", baseUrl);
  const response = await fetch(url, { headers: { accept: "application/json" } });
  if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}`);
  return response.json();
}
