#!/usr/bin/env node
// The `switchyard` command: runs the compiled CLI (make build), or the TypeScript sources through tsx in a checkout.
const path = require('node:path');
const fs = require('node:fs');
const compiled = path.join(__dirname, '..', 'dist', 'cli.js');
if (fs.existsSync(compiled)) {
  require(compiled).main(process.argv.slice(2));
} else {
  require('tsx/cjs');
  require(path.join(__dirname, '..', 'src', 'cli.ts')).main(process.argv.slice(2));
}
