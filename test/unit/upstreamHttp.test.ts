/** The HTTP client the providers share, against a local server: headers, error statuses, failures, SSE streams. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ProviderConfig } from '../../src/config';
import { UpstreamHttp, eventObject, eventObjects } from '../../src/gateway/providers/http';
import type { SseEvent } from '../../src/gateway/sse';
import { UpstreamError } from '../../src/gateway/types';

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

let server: Server;
let url: string;
let handler: Handler;
const closed: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => handler(req, res, body));
    res.on('close', () => closed.push(req.url ?? ''));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

function config(over: Partial<ProviderConfig['timeouts']> = {}, base_url = url): ProviderConfig {
  const timeouts = { connect_ms: 1000, first_byte_ms: 1000, idle_ms: 1000, total_ms: 5000, ...over };
  return {
    name: 'p',
    type: 'openai',
    base_url,
    headers: {},
    max_connections: 2,
    timeouts,
    latency_ms: 0,
    settings: {},
  };
}

const clients: UpstreamHttp[] = [];
function client(...args: Partial<ConstructorParameters<typeof UpstreamHttp>>): UpstreamHttp {
  const c = new UpstreamHttp(args[0] ?? config(), args[1]);
  clients.push(c);
  return c;
}
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

const signal = () => new AbortController().signal;
/** A request as a provider builds it (see provider.ts): URL, headers and the body already serialised. */
const req = (path: string, body: unknown, headers: Record<string, string> = {}, base = url) => ({
  method: 'POST' as const,
  url: `${base}${path}`,
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});
const answer =
  (status: number, body: string): Handler =>
  (_req, res) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(body);

async function failure(p: Promise<unknown>): Promise<UpstreamError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(UpstreamError);
  return e as UpstreamError;
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe('json', () => {
  test('POSTs the body with the headers given, and returns the JSON answer', async () => {
    let seen: { method?: string; path?: string; headers?: IncomingMessage['headers']; body?: string } = {};
    handler = (req, res, body) => {
      seen = { method: req.method, path: req.url, headers: req.headers, body };
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    };
    expect(
      await client().json(req('/chat', { a: 1 }, { authorization: 'Bearer k', accept: 'application/json' }), signal()),
    ).toEqual({ ok: true });
    expect(seen).toMatchObject({ method: 'POST', path: '/chat', body: '{"a":1}' });
    expect(seen.headers).toMatchObject({
      'content-type': 'application/json',
      accept: 'application/json',
      authorization: 'Bearer k',
    });
  });

  test('an error status: by default the message of {"error":{"message"}}', async () => {
    handler = answer(429, '{"error":{"message":"slow down"}}');
    const e = await failure(client().json(req('/x', {}), signal()));
    expect(e).toMatchObject({
      reason: 'status',
      status: 429,
      upstreamMessage: 'slow down',
      message: 'the upstream answered HTTP 429',
    });
  });

  test('an error status read by the provider: its status, message and code', async () => {
    handler = answer(400, '[{"error":{"message":"bad key","status":"INVALID_ARGUMENT"}}]');
    const reader = jest.fn((body: unknown) => ({
      status: 401,
      message: (body as { error: { message: string } }[])[0]!.error.message,
      code: 'INVALID_ARGUMENT',
    }));
    const e = await failure(client(config(), reader).json(req('/x', {}), signal()));
    // the headers too, lower-cased (AWS names the error's type in x-amzn-errortype)
    const headers = expect.objectContaining({ 'content-type': 'application/json' });
    expect(reader).toHaveBeenCalledWith([{ error: { message: 'bad key', status: 'INVALID_ARGUMENT' } }], 400, headers);
    expect(e).toMatchObject({
      reason: 'status',
      status: 401,
      upstreamMessage: 'bad key',
      message: 'the upstream answered HTTP 400 INVALID_ARGUMENT',
    });
    // a stream's error answer is read the same way
    reader.mockClear();
    await failure(collect(client(config(), reader).stream(req('/s', {}), signal(), eventObjects)));
    expect(reader).toHaveBeenCalledWith([{ error: { message: 'bad key', status: 'INVALID_ARGUMENT' } }], 400, headers);
  });

  test('an error status whose body is not JSON, or not the expected shape, keeps its status and no message', async () => {
    for (const body of ['<html>oops</html>', 'null', '{"error":"text"}']) {
      handler = answer(503, body);
      const e = await failure(client().json(req('/x', {}), signal()));
      expect(e).toMatchObject({ reason: 'status', status: 503, upstreamMessage: undefined });
    }
  });

  test('a success whose body is not JSON is a protocol error', async () => {
    handler = answer(200, 'not json');
    expect(await failure(client().json(req('/x', {}), signal()))).toMatchObject({ reason: 'protocol' });
  });

  test('an upstream nobody listens on cannot be reached', async () => {
    const dead = createServer();
    await new Promise<void>((resolve) => dead.listen(0, '127.0.0.1', resolve));
    const port = (dead.address() as AddressInfo).port;
    await new Promise((resolve) => dead.close(resolve));
    const e = await failure(
      client(config({}, `http://127.0.0.1:${port}`)).json(req('/x', {}, {}, `http://127.0.0.1:${port}`), signal()),
    );
    expect(e).toMatchObject({ reason: 'connect', message: 'cannot reach the upstream (ECONNREFUSED)' });
  });

  test('no headers within first_byte_ms is a timeout', async () => {
    // undici checks its header and body timers about every half second.
    handler = (_req, res) => setTimeout(() => res.end('{}'), 3000).unref();
    const e = await failure(client(config({ first_byte_ms: 50 })).json(req('/x', {}), signal()));
    expect(e.reason).toBe('timeout');
    expect(e.message).toMatch(/^the upstream timed out/);
  });

  test('a signal aborted with an UpstreamError (the router: the route took longer than total_ms) fails with that error', async () => {
    handler = (_req, res) => setTimeout(() => res.end('{}'), 500);
    const controller = new AbortController();
    setTimeout(() => controller.abort(new UpstreamError('timeout', 'the route took longer than 50 ms')), 30);
    const e = await failure(client().json(req('/x', {}), controller.signal));
    expect(e).toMatchObject({ reason: 'timeout', message: 'the route took longer than 50 ms' });
  });

  test("the caller's signal cancels the request", async () => {
    handler = (_req, res) => setTimeout(() => res.end('{}'), 500);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    expect(await failure(client().json(req('/x', {}), controller.signal))).toMatchObject({ reason: 'aborted' });
  });
});

describe('stream', () => {
  const sse =
    (...events: string[]): Handler =>
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(events.join(''));
    };

  test('eventObjects: the JSON object of each event until the stream closes', async () => {
    handler = sse('data: {"a":1}\n\n', 'event: x\ndata: {"b":2}\n\n');
    expect(await collect(client().stream(req('/s', {}), signal(), eventObjects))).toEqual([{ a: 1 }, { b: 2 }]);
  });

  test('events that are not JSON objects are protocol errors', async () => {
    for (const [data, message] of [
      ['nope', 'the upstream sent an event that is not JSON'],
      ['3', 'the upstream sent an event that is not an object'],
      ['null', 'the upstream sent an event that is not an object'],
    ]) {
      handler = sse(`data: ${data}\n\n`);
      expect(await failure(collect(client().stream(req('/s', {}), signal(), eventObjects)))).toMatchObject({
        reason: 'protocol',
        message,
      });
    }
    expect(eventObject('[]')).toEqual([]);
  });

  test("the provider's reader sees the raw events; what it throws is mapped like any failure", async () => {
    handler = sse('event: one\ndata: x\n\n', 'data: y\n\n');
    async function* raw(events: AsyncIterable<SseEvent>) {
      yield* events;
    }
    expect(await collect(client().stream(req('/s', {}), signal(), raw))).toEqual([
      { event: 'one', data: 'x' },
      { event: 'message', data: 'y' },
    ]);
    async function* ended(events: AsyncIterable<SseEvent>): AsyncGenerator<never> {
      for await (const _ of events);
      throw new UpstreamError('protocol', 'ended early');
    }
    expect(await failure(collect(client().stream(req('/s', {}), signal(), ended)))).toMatchObject({
      reason: 'protocol',
      message: 'ended early',
    });
    async function* broken(): AsyncGenerator<never> {
      throw new TypeError('bug'); // before reading the body, which is then destroyed unread
    }
    expect(await failure(collect(client().stream(req('/s', {}), signal(), broken)))).toMatchObject({
      reason: 'connect',
    });
  });

  test('an error status fails before the first event', async () => {
    handler = answer(500, '{"error":{"message":"down"}}');
    const e = await failure(client().stream(req('/s', {}), signal(), eventObjects)[Symbol.asyncIterator]().next());
    expect(e).toMatchObject({ reason: 'status', status: 500, upstreamMessage: 'down' });
  });

  test('a consumer that stops early closes the upstream connection', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n'); // and never ends
    };
    for await (const ev of client().stream(req('/early', {}), signal(), eventObjects)) {
      expect(ev).toEqual({ n: 1 });
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(closed).toContain('/early');
  });

  test('a long stream read slowly arrives whole and in order (the upstream is paused, then resumed)', async () => {
    const n = 3000;
    const pad = 'x'.repeat(1000);
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let i = 0;
      const more = () => {
        while (i < n) if (!res.write(`data: {"n":${i++},"pad":"${pad}"}\n\n`)) return void res.once('drain', more);
        res.end();
      };
      more();
    };
    const seen: number[] = [];
    for await (const ev of client().stream(req('/slow', {}), signal(), eventObjects)) {
      seen.push((ev as { n: number }).n);
      if (seen.length % 500 === 0) await new Promise((resolve) => setTimeout(resolve, 20)); // 3 MB: beyond any buffer
    }
    expect(seen).toEqual(Array.from({ length: n }, (_, i) => i));
  });

  test("the caller's signal ends a stream under way: aborted, and the upstream connection closed", async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n'); // and never ends
    };
    const c = new AbortController();
    const it = client().stream(req('/aborted', {}), c.signal, eventObjects)[Symbol.asyncIterator]();
    expect((await it.next()).value).toEqual({ n: 1 });
    const next = it.next();
    c.abort();
    expect(await failure(next)).toMatchObject({ reason: 'aborted' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(closed).toContain('/aborted');
  });

  test('a stream that stalls longer than idle_ms is a timeout', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n');
    };
    const e = await failure(collect(client(config({ idle_ms: 50 })).stream(req('/s', {}), signal(), eventObjects)));
    expect(e.reason).toBe('timeout');
  });
});
