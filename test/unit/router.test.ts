/** The router's choices, with a fake clock and a fake random source. */
import { parseConfig } from '../../src/services/app';
import { Router } from '../../src/gateway/router';
import type { Provider } from '../../src/gateway/providers';
import { UpstreamError } from '../../src/gateway/types';

const config = parseConfig(`
routing: { breaker_failures: 2, breaker_cooldown_ms: 1000 }
providers: { p: { type: mock }, q: { type: mock }, r: { type: mock } }
models:
  - id: m
    kind: chat
    routes:
      - { provider: p, priority: 1, weight: 3 }
      - { provider: q, priority: 1, weight: 1 }
      - { provider: r, priority: 0 }
  - { id: plain, kind: chat, routes: [ { provider: q }, { provider: p }, { provider: r } ] }
`);
const model = config.models[0];
const providers = new Map<string, Provider>(['p', 'q', 'r'].map((n) => [n, { name: n } as unknown as Provider]));

test('without priorities, routes are tried in the order written', () => {
  const router = new Router(
    providers,
    config.routing,
    () => 0,
    () => 0.99,
  );
  expect(router.order(config.models[1]).map((r) => r.provider)).toEqual(['q', 'p', 'r']);
});

test('priorities first, then a weighted order within a priority', () => {
  const draws = (x: number) =>
    new Router(
      providers,
      config.routing,
      () => 0,
      () => x,
    )
      .order(model)
      .map((r) => r.provider);
  // r has the lowest priority number; p holds 3/4 of the weight of priority 1
  expect(draws(0.0)).toEqual(['r', 'p', 'q']);
  expect(draws(0.74)).toEqual(['r', 'p', 'q']);
  expect(draws(0.76)).toEqual(['r', 'q', 'p']);
});

test('the breaker: open after N consecutive failures, one probe after the cool-down, closed after a success', async () => {
  let now = 0;
  const router = new Router(
    providers,
    config.routing,
    () => now,
    () => 0,
  );
  const single = { ...model, routes: [model.routes[2]] };
  const calls: string[] = [];
  const fail = async (p: Provider) => {
    calls.push((p as unknown as { name: string }).name);
    throw new UpstreamError('status', 'down', 500);
  };
  const ok = async (p: Provider) => {
    calls.push((p as unknown as { name: string }).name);
    return 'ok';
  };
  const signal = new AbortController().signal;
  await expect(router.run(single, signal, fail)).rejects.toMatchObject({ status: 502 });
  await expect(router.run(single, signal, fail)).rejects.toMatchObject({ status: 502 });
  await expect(router.run(single, signal, ok)).rejects.toMatchObject({ status: 503 });
  expect(calls).toEqual(['r', 'r']);
  expect(router.breakerStates()).toEqual([{ route: 'r/m', state: 'open' }]);
  now = 1001; // cool-down over: one probe goes through
  expect(router.breakerStates()).toEqual([{ route: 'r/m', state: 'half_open' }]);
  const probe = await router.run(single, signal, ok);
  probe.finish();
  expect(probe.value).toBe('ok');
  expect(calls).toEqual(['r', 'r', 'r']);
  expect(router.breakerStates()).toEqual([{ route: 'r/m', state: 'closed' }]);
});

test('a process that is draining still calls upstream for a request that came in before (the door refuses new ones)', async () => {
  const router = new Router(providers, config.routing);
  router.draining = true;
  const routed = await router.run(model, new AbortController().signal, async () => 'x');
  routed.finish();
  expect(routed.value).toBe('x');
});

test('a probe that ends without news of the route (the caller was at fault, or left) does not leave the breaker stuck', async () => {
  let now = 0;
  const router = new Router(
    providers,
    config.routing,
    () => now,
    () => 0,
  );
  const single = { ...model, routes: [model.routes[2]] };
  const signal = new AbortController().signal;
  const down = async () => {
    throw new UpstreamError('status', 'down', 500);
  };
  await expect(router.run(single, signal, down)).rejects.toMatchObject({ status: 502 });
  await expect(router.run(single, signal, down)).rejects.toMatchObject({ status: 502 });
  now = 1001;
  // the probe is refused as the caller's fault: the upstream is alive, so the breaker closes
  await expect(
    router.run(single, signal, async () => {
      throw new UpstreamError('status', 'bad n', 400, 'n must be 1');
    }),
  ).rejects.toMatchObject({ status: 400 });
  const ok = await router.run(single, signal, async () => 'ok');
  ok.finish();
  expect(ok.value).toBe('ok');

  // open again; this time the probe's client leaves: the next request may probe
  await expect(router.run(single, signal, down)).rejects.toBeDefined();
  await expect(router.run(single, signal, down)).rejects.toBeDefined();
  now = 3000;
  await expect(
    router.run(single, signal, async () => {
      throw new UpstreamError('aborted', 'gone');
    }),
  ).rejects.toMatchObject({ status: 499 });
  const again = await router.run(single, signal, async () => 'ok');
  again.finish();
  expect(again.value).toBe('ok');
});

test("a route's health for the overview: attempts and failures over the last 24 hours, its last 5 failures", async () => {
  let now = 0;
  const router = new Router(
    providers,
    { ...config.routing, breaker_failures: 100 },
    () => now,
    () => 0,
  );
  const single = { ...model, routes: [model.routes[2]] };
  const route = single.routes[0];
  const fail = async () => {
    throw new UpstreamError('status', `the upstream answered HTTP 500 at ${now}`, 500);
  };
  for (let i = 0; i < 7; i++) {
    now = i * 1000;
    await expect(router.run(single, undefined, fail)).rejects.toThrow();
  }
  (await router.run(single, undefined, async () => 'ok')).finish();
  const h = router.routeHealth(route);
  expect(h).toMatchObject({ breaker: 'closed', tried: 8, failed: 7 });
  expect(h.failures.map((f) => [f.at, f.status, f.message])).toEqual(
    [6, 5, 4, 3, 2].map((s) => [s * 1000, 500, `the upstream answered HTTP 500 at ${s * 1000}`]),
  );
  now += 25 * 3_600_000; // a day later, the old hours no longer count; the last failures stay until new ones come
  (await router.run(single, undefined, async () => 'ok')).finish();
  expect(router.routeHealth(route)).toMatchObject({ tried: 1, failed: 0 });
  expect(router.routeHealth(route).failures).toHaveLength(5);
});
