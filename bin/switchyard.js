#!/usr/bin/env node
// The `switchyard` command. In a checkout (src/ and tsx present) it runs the TypeScript sources, so it is never
// stale; in an installed package it runs the compiled dist/ (make build). V8's default young generation is kept
// under load (a 2 MB semi-space saved ~30 MB idle but cost a third more CPU per request and 1 s p99s at 128
// connections: README, Performance); only while the modules load is it kept from growing (src/heap.ts).
const path = require('node:path');
const fs = require('node:fs');
const root = path.join(__dirname, '..');
const source = path.join(root, 'src', 'cli.ts');
let useSource = fs.existsSync(source);
if (useSource) {
  try {
    require.resolve('tsx/cjs');
  } catch {
    useSource = false;
  }
}
if (useSource) {
  require('tsx/cjs');
  require(source).main(process.argv.slice(2));
} else {
  require(path.join(root, 'dist', 'cli.js')).main(process.argv.slice(2));
}
