/** Per-address limits behind a reverse proxy: X-Forwarded-For counts only when the configuration trusts the proxy. */
import { ConsoleClient, PASSWORD, uniqueEmail } from '../helpers/console';
import { startGateway, type TestGateway } from '../helpers/app';

const config = (trust: boolean) => `
server: { trust_proxy: ${trust} }
console: { registrations_per_address: 2 }
providers: { local: { type: mock } }
models: [ { id: m, kind: chat, routes: [ { provider: local } ] } ]
`;

async function register(gw: TestGateway, forwardedFor: string): Promise<number> {
  const r = await new ConsoleClient(gw.url).call('POST', '/console/api/register', { email: uniqueEmail(), password: PASSWORD }, { headers: { 'x-forwarded-for': forwardedFor } });
  return r.status;
}

test('trusted proxy: each forwarded client address has its own registration allowance', async () => {
  const gw = await startGateway(config(true));
  try {
    expect([await register(gw, '203.0.113.1'), await register(gw, '203.0.113.1'), await register(gw, '203.0.113.1')]).toEqual([201, 201, 429]);
    expect(await register(gw, '203.0.113.2, 10.0.0.1')).toBe(201);
  } finally {
    await gw.close();
  }
});

test('untrusted (the default): a client cannot dodge the limit by sending X-Forwarded-For', async () => {
  const gw = await startGateway(config(false));
  try {
    expect([await register(gw, '198.51.100.1'), await register(gw, '198.51.100.2'), await register(gw, '198.51.100.3')]).toEqual([201, 201, 429]);
  } finally {
    await gw.close();
  }
});
