#!/usr/bin/env node
/**
 * Adds to package-lock.json the platform binaries that a package lists in `optionalDependencies` but that the
 * registry does not serve at that version, so that `npm ci` accepts the lockfile.
 *
 * Why: @swc/core 1.16.22 and unrs-resolver 1.13.0 (via jest) list binaries for every platform, but the registry has
 * those versions for Linux x64/arm64 only (`npm view @swc/core-darwin-arm64 versions` stops at 1.16.18). npm 11.16+
 * leaves such a 404 out of the lockfile and then `npm ci` rejects the same lockfile ("Missing:
 * @swc/core-darwin-arm64@ from lock file"; npm/cli#9846, not fixed in npm 11.19). An entry with the version and the
 * platform (os/cpu/libc) lets `npm ci` match it, skip it on every other platform, and `npm install` keeps it.
 * The platform fields are read from the newest version the registry has of the same package.
 *
 * Run after anything that rewrites the lockfile from scratch: `npm install --package-lock-only && node scripts/lock-missing-optionals.mjs`.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

const FILE = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(fs.readFileSync(FILE, 'utf8'));
const pkgs = lock.packages;
const npm = (...args) => execFileSync('npm', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });

/** Where Node would find `name` from the package at `loc` (its own node_modules, then each parent's). */
function resolves(loc, name) {
  for (let dir = loc; ;) {
    if (pkgs[`${dir ? `${dir}/` : ''}node_modules/${name}`]) return true;
    if (!dir) return false;
    const i = dir.lastIndexOf('/node_modules/');
    dir = i < 0 ? '' : dir.slice(0, i);
  }
}

let added = 0;
for (const [loc, entry] of Object.entries(pkgs)) {
  for (const [name, spec] of Object.entries(entry.optionalDependencies ?? {})) {
    if (resolves(loc, name)) continue;
    if (!/^\d+\.\d+\.\d+$/.test(spec)) {
      console.error(`${loc}: optional ${name}@${spec} is missing and not an exact version; left alone`);
      continue;
    }
    let exists = true;
    try {
      npm('view', `${name}@${spec}`, 'version');
    } catch {
      exists = false;
    }
    if (exists) {
      console.error(
        `${loc}: optional ${name}@${spec} exists on the registry: regenerate the lockfile with npm instead`,
      );
      process.exitCode = 1;
      continue;
    }
    const meta = JSON.parse(npm('view', name, 'os', 'cpu', 'libc', '--json') || '{}');
    if (!meta.os || !meta.cpu) {
      console.error(`${loc}: no platform fields for ${name}; left alone`);
      continue;
    }
    pkgs[`node_modules/${name}`] = {
      version: spec,
      cpu: meta.cpu,
      ...(entry.dev && { dev: true }),
      ...(meta.libc && { libc: meta.libc }),
      optional: true,
      os: meta.os,
    };
    console.log(
      `added ${name}@${spec} (${meta.os}/${meta.cpu}${meta.libc ? `/${meta.libc}` : ''}), not on the registry`,
    );
    added++;
  }
}
fs.writeFileSync(FILE, `${JSON.stringify(lock, null, 2)}\n`);
// Let npm sort and format the file as it would have.
if (added)
  execFileSync('npm', ['install', '--package-lock-only', '--no-audit', '--no-fund'], {
    cwd: new URL('..', import.meta.url),
    stdio: 'inherit',
  });
console.log(`${added} entries added`);
