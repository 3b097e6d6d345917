/**
 * The process's memory at start-up (src/heap.ts, README Performance): the young generation is not grown by the
 * modules loading, and grows again once released; the providers' SDKs load only with a provider that needs them.
 * Each check runs in a process of its own (V8's flags and the module cache are per process).
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

function run(script: string): any {
  const out = execFileSync(process.execPath, ['--require', 'tsx/cjs', '-e', script], {
    cwd: path.join(__dirname, '..', '..'),
    env: { PATH: process.env.PATH },
  });
  return JSON.parse(out.toString());
}

/** Keeps `n` objects alive, as loading modules does (most of what it allocates survives); the young generation's MB. */
const KEEP = `
  const kept = [];
  const newSpace = () => require('node:v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 2 ** 20;
  const keep = (n) => { for (let i = 0; i < n; i++) kept.push({ i, s: 'x' + i }); return newSpace(); };`;

test('held while modules load, the young generation stays at its first size; released, it grows with the work', () => {
  const held = run(`${KEEP}
    require('./src/startup');
    const during = keep(1e6);
    require('./src/heap').releaseYoungGeneration();
    const after = keep(1e6);
    process.stdout.write(JSON.stringify({ during, after }));`);
  const unheld = run(`${KEEP} process.stdout.write(JSON.stringify({ during: keep(1e6) }));`);
  expect(unheld.during).toBeGreaterThan(8); // the same work grows it when nothing holds it
  expect(held.during).toBeLessThanOrEqual(4);
  expect(held.after).toBeGreaterThan(8);
});

test("the AWS and Google SDKs are loaded with a Bedrock or Vertex provider's first use, not with the gateway", () => {
  const loaded = run(`
    const sdks = () => [...new Set(Object.keys(require.cache).flatMap((m) => m.match(/(@aws-sdk|@smithy|google-auth-library)(?=\\/)/g) ?? []))].sort();
    require('./src/gateway/providers');
    require('./src/gateway/providers/bedrock/eventstream');
    require('./src/gateway/providers/vertex/auth');
    const before = sdks();
    require('./src/gateway/providers/bedrock/auth').signer({ settings: { region: 'us-east-1', access_key_id: 'a', secret_access_key: 'b' } });
    process.stdout.write(JSON.stringify({ before, after: sdks() }));`);
  expect(loaded.before).toEqual([]);
  expect(loaded.after).toEqual(['@smithy']); // with keys of its own: the credential chain (@aws-sdk) is not needed either
});
