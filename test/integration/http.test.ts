/**
 * The API's HTTP layer (src/http/api.ts, exchange.ts) as clients and attackers use it, on raw sockets where a client
 * library would hide what goes over the wire: media types, bodies over the limit with and without a length,
 * `Expect: 100-continue`, clients that stall or leave, pipelining, odd request lines and paths, and what every
 * answer leaves behind (x-request-id, the one log line, the metrics).
 */
import http from 'node:http';
import net from 'node:net';
import pino from 'pino';
import { FakeOpenAI } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';

const LIMIT = 4096;
let upstream: FakeOpenAI;
let gw: TestGateway;
let key: string;
let port: number;
/** The gateway's log lines (JSON), as an operator reads them. */
const lines: Record<string, any>[] = [];

beforeAll(async () => {
  upstream = await new FakeOpenAI().start();
  gw = await startGateway(
    `
server: { max_body_bytes: ${LIMIT} }
providers:
  up: { type: openai, base_url: "${upstream.url}", api_key: "sk-upstream-secret-credential" }
  local: { type: mock }
models:
  - { id: gpt-4o-mini, kind: chat, price: { input: 0.15, output: 0.6 }, routes: [ { provider: up } ] }
  - { id: mock-chat, kind: chat, routes: [ { provider: local } ] }
`,
    { ...process.env, ADMIN_TOKEN: 'http-test-admin-token-0123456789' },
  );
  gw.app.log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  key = (await gw.newKey()).secret;
  port = Number(new URL(gw.url).port);
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

const chat = (model = 'mock-chat', extra: object = {}) =>
  JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra });
const post = (path: string, body: string, headers = '') =>
  `POST ${path} HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\n${headers}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
  body: any;
}

/** One keep-alive connection, spoken to in raw HTTP/1.1; answers are read one by one (1xx interim answers too). */
class Conn {
  readonly socket: net.Socket;
  private buf = Buffer.alloc(0);
  private waiting: (() => void) | null = null;
  closed = false;

  constructor() {
    this.socket = net.connect(port, '127.0.0.1');
    this.socket.on('data', (d) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.waiting?.();
    });
    this.socket.on('error', () => undefined);
    this.socket.on('close', () => {
      this.closed = true;
      this.waiting?.();
    });
  }

  send(text: string): this {
    this.socket.write(text);
    return this;
  }

  /** The next answer; `head` for an answer to HEAD (no body whatever its length says). */
  async next(head = false): Promise<Answer> {
    for (;;) {
      const end = this.buf.indexOf('\r\n\r\n');
      if (end >= 0) {
        const [statusLine, ...rest] = this.buf.subarray(0, end).toString('latin1').split('\r\n');
        const headers = Object.fromEntries(
          rest.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
        );
        const status = Number(statusLine.split(' ')[1]);
        const size =
          status < 200 || head
            ? 0
            : headers['transfer-encoding'] === 'chunked'
              ? this.chunked(end + 4)
              : Number(headers['content-length'] ?? 0);
        if (size >= 0 && this.buf.length >= end + 4 + size) {
          let text = this.buf.subarray(end + 4, end + 4 + size).toString('utf8');
          if (headers['transfer-encoding'] === 'chunked')
            text = text.replace(/(?:^|\r\n)[0-9a-f]+\r\n/g, '').replace(/\r\n$/, '');
          this.buf = this.buf.subarray(end + 4 + size);
          let body: any = null;
          try {
            body = text ? JSON.parse(text) : null;
          } catch {
            body = text;
          }
          return { status, headers, text, body };
        }
      }
      if (this.closed) throw new Error(`the connection closed; unread: ${this.buf.toString('latin1').slice(0, 200)}`);
      await new Promise<void>((r) => (this.waiting = r));
    }
  }

  /** The length of a complete chunked body starting at `from`, or -1 while it is incomplete. */
  private chunked(from: number): number {
    let at = from;
    for (;;) {
      const eol = this.buf.indexOf('\r\n', at);
      if (eol < 0) return -1;
      const n = parseInt(this.buf.subarray(at, eol).toString('latin1'), 16);
      at = eol + 2 + n + 2;
      if (at > this.buf.length) return -1;
      if (n === 0) return at - from;
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

async function once(text: string, head = false): Promise<Answer> {
  const c = new Conn().send(text);
  try {
    return await c.next(head);
  } finally {
    c.close();
  }
}

async function waitFor(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 250; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`never happened: ${what}`);
}

const connections = () =>
  new Promise<number>((resolve, reject) => gw.server.listener.getConnections((e, n) => (e ? reject(e) : resolve(n))));

/** switchyard_http_requests_total for an operation and status, as /metrics reports it. */
async function answered(operation: string, status: number): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`switchyard_http_requests_total{operation="${operation}",status="${status}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** A POST whose client says `Expect: 100-continue`: the body goes out only when the gateway asks for it. */
function expecting(
  path: string,
  body: string,
  headers: Record<string, string | number>,
): Promise<{ continued: boolean; status: number; body: any }> {
  return new Promise((resolve, reject) => {
    let continued = false;
    let done = false;
    const req = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path,
      agent: false,
      headers: {
        expect: '100-continue',
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        ...headers,
      },
    });
    req.on('continue', () => {
      continued = true;
      req.end(body);
    });
    req.on('response', async (res) => {
      let text = '';
      for await (const c of res) text += c;
      done = true;
      resolve({ continued, status: res.statusCode!, body: text ? JSON.parse(text) : null });
      req.destroy(); // a refused body is never sent
    });
    req.on('error', (e) => done || reject(e));
    req.flushHeaders();
  });
}

describe('Expect: 100-continue', () => {
  test('the body is asked for only once the caller is known and its declared size fits', async () => {
    const body = chat();
    const refused = await expecting('/v1/chat/completions', body, { authorization: 'Bearer sk-not-a-key' });
    expect(refused).toMatchObject({ continued: false, status: 401, body: { error: { code: 'invalid_api_key' } } });
    const tooBig = await expecting('/v1/chat/completions', body, {
      authorization: `Bearer ${key}`,
      'content-length': LIMIT + 1,
    });
    expect(tooBig).toMatchObject({ continued: false, status: 413, body: { error: { code: 'request_too_large' } } });
    const ok = await expecting('/v1/chat/completions', body, { authorization: `Bearer ${key}` });
    expect(ok).toMatchObject({ continued: true, status: 200, body: { object: 'chat.completion', model: 'mock-chat' } });
  });
});

describe('request lines and paths', () => {
  test('a request line with an absolute URL is served like its path', async () => {
    const a = await once(
      post(`http://127.0.0.1:${port}/v1/chat/completions?beta=true`, chat(), 'Content-Type: application/json\r\n'),
    );
    expect(a).toMatchObject({ status: 200, body: { object: 'chat.completion' } });
    const b = await once(
      `GET http://127.0.0.1:${port}/v1/models/mock-chat HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\n\r\n`,
    );
    expect(b).toMatchObject({ status: 200, body: { id: 'mock-chat' } });
  });

  test('percent-encoded parameters are decoded, malformed ones are a 400, a trailing slash is the same path, HEAD is GET without a body', async () => {
    const auth = `Authorization: Bearer ${key}\r\n`;
    const slash = await once(`GET /v1/models/a%2Fb HTTP/1.1\r\nHost: gw\r\n${auth}\r\n`);
    expect(slash).toMatchObject({
      status: 404,
      body: { error: { message: 'Model not found: a/b', code: 'model_not_found' } },
    });
    const bad = await once(`GET /v1/models/%zz HTTP/1.1\r\nHost: gw\r\n${auth}\r\n`);
    expect(bad.status).toBe(400);
    expect(bad.body.error).toEqual(expect.objectContaining({ type: 'invalid_request_error' }));
    expect(bad.headers['x-request-id']).toMatch(/^req_/);
    expect(await once(`GET /v1/models/mock-chat/ HTTP/1.1\r\nHost: gw\r\n${auth}\r\n`)).toMatchObject({
      status: 200,
      body: { id: 'mock-chat' },
    });
    const c = new Conn()
      .send(`HEAD /v1/models HTTP/1.1\r\nHost: gw\r\n${auth}\r\n`)
      .send(`GET /v1/models HTTP/1.1\r\nHost: gw\r\n${auth}\r\n`);
    const head = await c.next(true);
    const get = await c.next(); // had HEAD's answer carried a body, this would read it as the next answer
    c.close();
    expect(head.status).toBe(200);
    expect(Number(head.headers['content-length'])).toBe(Buffer.byteLength(get.text));
    expect(get.body.data.map((m: { id: string }) => m.id)).toContain('mock-chat');
  });

  test('unknown query parameters are ignored (Claude Code sends ?beta=true); a repeated one that must be single is a 400 naming it', async () => {
    const msg = JSON.stringify({ model: 'mock-chat', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    const a = await once(
      post('/v1/messages?beta=true', msg, 'Content-Type: application/json\r\nanthropic-version: 2023-06-01\r\n'),
    );
    expect(a).toMatchObject({ status: 200, body: { type: 'message' } });
    const admin = 'Authorization: Bearer http-test-admin-token-0123456789\r\n';
    const b = await once(`GET /admin/api/accounts?limit=1&limit=2 HTTP/1.1\r\nHost: gw\r\n${admin}\r\n`);
    expect(b).toMatchObject({ status: 400, body: { error: { param: 'limit' } } });
    expect(b.headers['cache-control']).toBe('no-store');
  });
});

describe('bodies', () => {
  test('Content-Type: none or application/json (any parameters, any case) is JSON; any other type is a 415', async () => {
    for (const type of [
      null,
      'application/json',
      'application/json; charset=utf-8',
      'Application/JSON;charset=UTF-8',
    ]) {
      const a = await once(post('/v1/chat/completions', chat(), type ? `Content-Type: ${type}\r\n` : ''));
      expect([type, a.status]).toEqual([type, 200]);
    }
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/vnd.api+json',
      'multipart/form-data; boundary=x',
    ]) {
      const a = await once(post('/v1/chat/completions', chat(), `Content-Type: ${type}\r\n`));
      expect([type, a.status, a.body.error.code]).toEqual([type, 415, 'unsupported_media_type']);
    }
  });

  test('JSON that is not an object is a 400 in the error shape', async () => {
    for (const body of ['null', '[]', '5', '"text"', '']) {
      const a = await once(post('/v1/chat/completions', body, 'Content-Type: application/json\r\n'));
      expect([body, a.status, a.body.error.message]).toEqual([body, 400, 'The request body must be of type object']);
    }
  });

  test('a body over the limit is a 413 whether its length is declared or it comes chunked, and the connection goes on', async () => {
    const big = chat('mock-chat', { pad: 'x'.repeat(LIMIT) });
    const c = new Conn();
    c.send(post('/v1/chat/completions', big, 'Content-Type: application/json\r\n'));
    expect(await c.next()).toMatchObject({ status: 413, body: { error: { code: 'request_too_large' } } });
    const half = big.length >> 1;
    c.send(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\nTransfer-Encoding: chunked\r\n\r\n`,
    );
    c.send(
      `${half.toString(16)}\r\n${big.slice(0, half)}\r\n${(big.length - half).toString(16)}\r\n${big.slice(half)}\r\n0\r\n\r\n`,
    );
    expect(await c.next()).toMatchObject({ status: 413, body: { error: { code: 'request_too_large' } } });
    c.send(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\nTransfer-Encoding: chunked\r\n\r\n${Buffer.byteLength(chat()).toString(16)}\r\n${chat()}\r\n0\r\n\r\n`,
    );
    expect(await c.next()).toMatchObject({ status: 200, body: { object: 'chat.completion' } });
    c.close();
  });
});

describe('clients that stall, leave or pipeline', () => {
  test('pipelined requests on one connection are answered in order, each with its own request id', async () => {
    const c = new Conn()
      .send(post('/v1/chat/completions', chat(), 'Content-Type: application/json\r\n'))
      .send(`GET /v1/models HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\n\r\n`)
      .send(post('/v1/chat/completions', chat(), 'Content-Type: text/plain\r\n'));
    const answers = [await c.next(), await c.next(), await c.next()];
    c.close();
    expect(answers.map((a) => a.status)).toEqual([200, 200, 415]);
    expect(answers[0].body.object).toBe('chat.completion');
    expect(answers[1].body.object).toBe('list');
    expect(new Set(answers.map((a) => a.headers['x-request-id'])).size).toBe(3);
  });

  test('a client that leaves in the middle of its body: logged and counted as 499, and nothing stays in flight', async () => {
    const before = await answered('createChatCompletion', 499);
    const from = lines.length;
    const c = new Conn().send(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\nExpect: 100-continue\r\nContent-Length: 100\r\n\r\n`,
    );
    expect((await c.next()).status).toBe(100); // the gateway is reading the body now
    c.send('{"model": "mock-');
    c.close();
    await waitFor(() => lines.slice(from).some((l) => l.path === '/v1/chat/completions'), 'the log line');
    const mine = lines.slice(from).filter((l) => l.path === '/v1/chat/completions');
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ status: 499, error: 'client_closed', key: key.slice(0, 9) });
    expect(await answered('createChatCompletion', 499)).toBe(before + 1);
    await gw.server.app.api.idle(60_000); // a request still counted in flight would hold this past the test's timeout
  });

  test('a client that leaves while its JSON answer is at the upstream: its log line says 499 and what the upstream billed', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const answer = {
      id: 'chatcmpl-late',
      object: 'chat.completion',
      created: 1,
      model: 'x',
      choices: [{ index: 0, message: { role: 'assistant', content: 'late' }, logprobs: null, finish_reason: 'stop' }],
      usage: { prompt_tokens: 8, completion_tokens: 20, total_tokens: 28 },
    };
    upstream.plan({ kind: 'json', body: answer, wait: released });
    const sent = upstream.requests.length;
    const from = lines.length;
    const c = new Conn().send(post('/v1/chat/completions', chat('gpt-4o-mini'), 'Content-Type: application/json\r\n'));
    await waitFor(() => upstream.requests.length > sent, 'the upstream has the request');
    const open = await connections();
    c.close();
    await waitFor(async () => (await connections()) < open, 'the gateway saw the client leave');
    release(); // the upstream finishes the answer nobody waits for
    await waitFor(() => lines.slice(from).some((l) => l.path === '/v1/chat/completions'), 'the log line');
    await gw.server.app.api.idle(60_000);
    const mine = lines.slice(from).filter((l) => l.path === '/v1/chat/completions');
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({
      status: 499,
      model: 'gpt-4o-mini',
      provider: 'up',
      usage: { prompt: 8, completion: 20 },
      counted: 'upstream',
    });
  });

  test('pipelined streams whose client leaves: both upstream calls are cancelled, both are logged, nothing stays in flight', async () => {
    const chunk = {
      id: 'c',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'x',
      choices: [{ index: 0, delta: { role: 'assistant', content: 'Hel' }, finish_reason: null }],
    };
    upstream.plan({ kind: 'stall', events: [chunk] }, { kind: 'stall', events: [chunk] });
    const sent = upstream.requests.length;
    const aborts = upstream.clientAborts;
    const from = lines.length;
    const body = chat('gpt-4o-mini', { stream: true });
    const c = new Conn().send(
      post('/v1/chat/completions', body, 'Content-Type: application/json\r\n') +
        post('/v1/chat/completions', body, 'Content-Type: application/json\r\n'),
    );
    await waitFor(() => upstream.requests.length === sent + 2, 'the upstream has both requests');
    c.close();
    await waitFor(() => upstream.clientAborts === aborts + 2, 'both upstream calls cancelled');
    await waitFor(
      () => lines.slice(from).filter((l) => l.path === '/v1/chat/completions').length === 2,
      'both log lines',
    );
    await gw.server.app.api.idle(60_000);
  });
});

describe('what every answer leaves', () => {
  test('one log line per request: status, time, key prefix, never the key or the upstream credential', async () => {
    const from = lines.length;
    const a = await once(post('/v1/chat/completions', chat('gpt-4o-mini'), 'Content-Type: application/json\r\n'));
    const b = await once(`GET /v1/models HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}x\r\n\r\n`);
    const d = await once(`DELETE /v1/models HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    expect([a.status, b.status, d.status]).toEqual([200, 401, 405]);
    await waitFor(() => lines.length >= from + 3, 'three log lines');
    const mine = lines.slice(from);
    expect(mine.map((l) => [l.reqId, l.status])).toEqual([
      [a.headers['x-request-id'], 200],
      [b.headers['x-request-id'], 401],
      [d.headers['x-request-id'], 405],
    ]);
    expect(mine[0]).toMatchObject({
      method: 'POST',
      path: '/v1/chat/completions',
      key: key.slice(0, 9),
      model: 'gpt-4o-mini',
      provider: 'up',
      ms: expect.any(Number),
    });
    expect(mine[1]).toMatchObject({ error: 'invalid_api_key' });
    const text = JSON.stringify(mine);
    expect(text).not.toContain(key);
    expect(text).not.toContain('sk-upstream-secret-credential');
    expect(a.headers['cache-control']).toBe('no-cache');
  });

  test('an upstream failure: the log line names the model, the route that failed and how, never its URL or credential', async () => {
    const from = lines.length;
    upstream.plan({
      kind: 'json',
      status: 401,
      body: {
        error: {
          message: 'Incorrect API key provided: sk-upstream-secret-credential',
          type: 'invalid_request_error',
          code: 'invalid_api_key',
        },
      },
    });
    const a = await once(post('/v1/chat/completions', chat('gpt-4o-mini'), 'Content-Type: application/json\r\n'));
    expect(a.status).toBe(502);
    await waitFor(() => lines.length > from, 'the log line');
    expect(lines[from]).toMatchObject({
      status: 502,
      model: 'gpt-4o-mini',
      error: 'upstream_unavailable',
      route: 'up/gpt-4o-mini',
      upstream: 'the upstream answered HTTP 401',
    });
    const text = JSON.stringify(lines.slice(from)) + a.body;
    expect(text).not.toContain('sk-upstream-secret-credential');
    expect(text).not.toContain(upstream.url);
  });
});
