import pino from 'pino';
import { connect, migrate } from './src/db';
import { createAccount } from './src/accounts/accounts';
import { createKey } from './src/accounts/keys';
import { createApp, parseConfig, startApp, stopApp } from './src/services/app';
import { chat } from './src/gateway/operations';
import { inspect } from './src/gateway/bound';
import fs from 'node:fs';
(async () => {
  const file = '/tmp/proto/logic.db'; for (const f of [file, file + '-wal', file + '-shm']) fs.rmSync(f, { force: true });
  const db = connect(`sqlite:${file}`); await migrate(db);
  const config = parseConfig(`
providers: { local: { type: mock } }
limits: { rpm: 0, tpm: 0 }
models: [ { id: m, kind: chat, price: { input: 0.15, output: 0.6 }, routes: [ { provider: local } ] } ]
`, 'x.yaml');
  const app = createApp({ config, db, log: pino({ level: 'warn' }) });
  await startApp(app);
  const acct = await createAccount(db, 'a@example.com', 1_000_000_000);
  const { secret } = await createKey(db, { accountId: acct.id });
  const body = { model: 'm', messages: [{ role: 'system', content: 'You are a concise assistant.' }, { role: 'user', content: 'Say hello in one short sentence.' }] };
  const run = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const principal = (await app.keys.authenticate(`Bearer ${secret}`))!;
      const grant = await app.metered.precheck(principal);
      const b = JSON.parse(JSON.stringify(body));
      const profile = inspect(b);
      const out = await app.metered.serve(chat, { principal, grant, requestId: `req_${i}_${Math.random()}`, body: b, profile, signal: new AbortController().signal, headers: {} });
      JSON.stringify((out as any).body);
    }
  };
  await run(5000);
  await app.billing.settled();
  const N = 30000;
  const c0 = process.cpuUsage(); const t0 = Date.now();
  await run(N);
  await app.billing.settled();
  const c = process.cpuUsage(c0);
  console.log('logic µs/req', ((c.user + c.system) / N).toFixed(1), 'wall', ((Date.now() - t0) * 1000 / N).toFixed(1));
  await stopApp(app); await db.destroy();
})();
