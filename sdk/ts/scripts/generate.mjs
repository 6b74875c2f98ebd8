// Generates TypeScript types from OpenAPI documents in one process (the
// CLI starts node once per document): node scripts/generate.mjs IN.json
// OUT.ts [IN.json OUT.ts ...]. The output is what `openapi-typescript IN
// -o OUT` writes.
import fs from "node:fs";
import { pathToFileURL } from "node:url";
import openapiTS, { astToString, COMMENT_HEADER } from "openapi-typescript";

const args = process.argv.slice(2);
if (args.length === 0 || args.length % 2 !== 0) {
  console.error("usage: node scripts/generate.mjs IN.json OUT.ts [IN.json OUT.ts ...]");
  process.exit(2);
}
for (let i = 0; i < args.length; i += 2) {
  const ast = await openapiTS(pathToFileURL(args[i]), { silent: true });
  fs.writeFileSync(args[i + 1], COMMENT_HEADER + astToString(ast));
}
