// Marks dist/cjs as CommonJS: the package is "type": "module", so without
// this node would read dist/cjs/*.js as ES modules.
import fs from "node:fs";

fs.writeFileSync(new URL("../dist/cjs/package.json", import.meta.url), JSON.stringify({ type: "commonjs" }) + "\n");
