#!/usr/bin/env node
// Regenerates src/schema.d.ts from a server's OpenAPI document:
//   COUNTERSIGN_URL=http://127.0.0.1:8080 npm run generate
// or from a file holding the document: npm run generate -- path/to/openapi.json
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { fetchDocument, schemaTypes } from "./openapi-types.mjs";

const source = process.argv[2];
const base = process.env.COUNTERSIGN_URL;
if (!source && !base) {
  console.error("usage: COUNTERSIGN_URL=http://host:port npm run generate  (or: npm run generate -- openapi.json)");
  process.exit(2);
}
const document = source ? JSON.parse(await readFile(source, "utf8")) : await fetchDocument(base);
const out = fileURLToPath(new URL("../src/schema.d.ts", import.meta.url));
await writeFile(out, await schemaTypes(document));
console.log(`wrote ${out} from ${source ?? base + "/openapi.json"}`);
