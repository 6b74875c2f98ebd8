// Renders OpenAPI documents to static HTML with Redoc, server-side, so each
// page holds its operations as text and needs no network: the page hydrates
// from redoc.standalone.js copied beside it.
//
//   node render.mjs IN_DIR OUT_DIR
//
// IN_DIR holds NAME.json documents; OUT_DIR gets NAME.html for each, an
// index.html linking them, and redoc.standalone.js.
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync, readdirSync, mkdirSync, copyFileSync } from 'node:fs';
import { join, basename } from 'node:path';

const require = createRequire(import.meta.url);
const React = require('react');
const { renderToString } = require('react-dom/server');
const { ServerStyleSheet } = require('styled-components');
const { createStore, Redoc } = require('redoc');

const [inDir, outDir] = process.argv.slice(2);
if (!inDir || !outDir) {
  console.error('usage: node render.mjs IN_DIR OUT_DIR');
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
copyFileSync(require.resolve('redoc/bundles/redoc.standalone.js'), join(outDir, 'redoc.standalone.js'));

const escape = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
// The state is put in a <script>: "<" is escaped so no text of a document
// can close the element.
const scriptJSON = (v) => JSON.stringify(v).replace(/</g, '\\u003c');

const options = { hideDownloadButton: false, expandResponses: '200,201', jsonSampleExpandLevel: 3, sortPropsAlphabetically: false };
const pages = [];
for (const file of readdirSync(inDir).filter((f) => f.endsWith('.json')).sort()) {
  const name = basename(file, '.json');
  const spec = JSON.parse(readFileSync(join(inDir, file), 'utf8'));
  const store = await createStore(spec, name + '.json', options);
  const sheet = new ServerStyleSheet();
  const body = renderToString(sheet.collectStyles(React.createElement(Redoc, { store })));
  const css = sheet.getStyleTags();
  sheet.seal();
  const state = await store.toJS();
  const title = (spec.info && spec.info.title) || name;
  writeFileSync(join(outDir, name + '.html'), `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)}</title>
<style>body{margin:0;padding:0}</style>
${css}
</head>
<body>
<div id="redoc">${body}</div>
<script>const __redoc_state = ${scriptJSON(state)};</script>
<script src="redoc.standalone.js"></script>
<script>Redoc.hydrate(__redoc_state, document.getElementById('redoc'));</script>
</body>
</html>
`);
  pages.push({ name, title, version: (spec.info && spec.info.version) || '' });
  console.log(`${name}.html: ${title}`);
}
writeFileSync(join(outDir, 'index.html'), `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>deckhand API reference</title>
<style>body{font:16px/1.5 sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem}</style></head>
<body>
<h1>deckhand API reference</h1>
<p>The control plane's and each container service's OpenAPI document, rendered with Redoc.</p>
<ul>
${pages.map((p) => `<li><a href="${escape(p.name)}.html">${escape(p.title)}</a> <small>${escape(p.version)}</small></li>`).join('\n')}
</ul>
</body>
</html>
`);
