#!/usr/bin/env -S node --max-semi-space-size=2
// The `switchyard` command. In a checkout (src/ and tsx present) it runs the TypeScript sources, so it is never
// stale; in an installed package it runs the compiled dist/ (make build). V8's young generation is capped at 2 MB
// semi-spaces (the shebang; `node bin/switchyard.js` or `node dist/cli.js` need the flag given): ~30 MB less
// resident memory for `serve`, idle and at peak (README, Performance).
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
