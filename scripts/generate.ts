/**
 * `npm run generate` (after openapi-typescript): writes the tables scripts/contract.ts derives from
 * openapi/openapi.yaml. With --check (`npm run generate:check`), writes nothing and fails if a file differs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ContractError, generate } from './contract';

const ROOT = path.join(__dirname, '..');

function main(check: boolean): number {
  let files: Record<string, string>;
  try {
    files = generate(fs.readFileSync(path.join(ROOT, 'openapi', 'openapi.yaml'), 'utf8'));
  } catch (e) {
    if (!(e instanceof ContractError)) throw e;
    console.error(e.message);
    return 1;
  }
  const current = (f: string) =>
    fs.existsSync(path.join(ROOT, f)) && fs.readFileSync(path.join(ROOT, f), 'utf8') === files[f];
  const stale = Object.keys(files).filter((f) => !current(f));
  if (check) {
    for (const f of stale) console.error(`${f} is not what openapi/openapi.yaml makes: run npm run generate`);
    return stale.length ? 1 : 0;
  }
  for (const f of stale) fs.writeFileSync(path.join(ROOT, f), files[f]);
  return 0;
}

process.exitCode = main(process.argv.includes('--check'));
