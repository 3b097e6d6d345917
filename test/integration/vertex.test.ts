/**
 * The vertex provider end to end: the official openai and anthropic SDKs → the gateway → a fake Vertex AI on
 * loopback, whose token endpoint checks each JWT assertion against the service account's key (made here) and whose
 * data plane checks each Bearer token. Gemini and Claude models behind one provider; service-account tokens cached,
 * shared and renewed; credentials that fail are a 502 in the caller's error shape that names the credential in the
 * log line, never a secret anywhere.
 * Runs on the database in DATABASE_URL (SQLite by default, MariaDB in `make test`'s second pass).
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import pino from 'pino';
import { message, streamEvents } from '../fakes/anthropicUpstream';
import { geminiResponse, usageOf } from '../fakes/geminiUpstream';
import {
  FakeGoogleAuth,
  FakeVertex,
  LOCATION,
  PROJECT,
  vertexError,
  type Received,
  type ServiceAccountKey,
} from '../fakes/vertexUpstream';
import { startGateway, type TestGateway } from '../helpers/app';

const GEMINI = 'gemini-2.5-flash';
/** A key cut short: not JSON, with a secret in it that no message may quote. */
const NOT_JSON = '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\nTRUNCATED-SECRET-MATERIAL';
const CLAUDE = 'claude-sonnet-4@20250514';

let auth: FakeGoogleAuth;
let upstream: FakeVertex;
let gw: TestGateway;
let client: OpenAI;
let accountId: number;
let secret: string;
const lines: Record<string, unknown>[] = [];
const keys: Record<string, ServiceAccountKey> = {};
let dir: string;

const config = (url: string, keyFile: string) => {
  const vertex = (credentials: string) =>
    `{ type: vertex, project: ${PROJECT}, location: ${LOCATION}, base_url: "${url}", credentials: "${credentials}" }`;
  return `
routing: { breaker_failures: 1000 }
limits: { rpm: 0, tpm: 0 }
providers:
  vx: ${vertex(keyFile)}
  cold: ${vertex('${VX_COLD}')}
  short: ${vertex('${VX_SHORT}')}
  revoked: ${vertex('${VX_REVOKED}')}
  offline: ${vertex('${VX_OFFLINE}')}
  nofile: ${vertex('/nonexistent/vertex-key.json')}
  notjson: ${vertex('${VX_NOT_JSON}')}
  local: { type: mock }
models:
  - { id: gemini, kind: chat, price: { input: 0.3, output: 2.5 }, routes: [ { provider: vx, model: ${GEMINI} } ] }
  - { id: claude, kind: chat, price: { input: 3, output: 15 }, routes: [ { provider: vx, model: "${CLAUDE}" } ] }
  - { id: embed, kind: embedding, price: { input: 0.15 }, routes: [ { provider: vx, model: text-embedding-005 } ] }
  - { id: cold, kind: chat, routes: [ { provider: cold, model: ${GEMINI} } ] }
  - { id: short, kind: chat, routes: [ { provider: short, model: "${CLAUDE}" } ] }
  - { id: revoked, kind: chat, routes: [ { provider: revoked, model: ${GEMINI} } ] }
  - { id: offline, kind: chat, routes: [ { provider: offline, model: "${CLAUDE}" } ] }
  - { id: nofile, kind: chat, routes: [ { provider: nofile, model: ${GEMINI} } ] }
  - { id: notjson, kind: chat, routes: [ { provider: notjson, model: ${GEMINI} } ] }
  - { id: claude-or-local, kind: chat, routes: [ { provider: vx, model: "${CLAUDE}" }, { provider: local, model: mock-chat } ] }
  - { id: revoked-or-vx, kind: chat, routes: [ { provider: revoked, model: ${GEMINI} }, { provider: vx, model: ${GEMINI} } ] }
`;
};

beforeAll(async () => {
  auth = await new FakeGoogleAuth().start();
  upstream = await new FakeVertex(auth).start();
  for (const name of ['main', 'cold', 'revoked']) keys[name] = auth.newServiceAccount(name);
  keys.short = auth.newServiceAccount('short', { lifetime: 4 });
  // A token endpoint nothing listens on: a port that was free a moment ago.
  keys.offline = auth.newServiceAccount('offline', { tokenUri: `http://127.0.0.1:${await closedPort()}/token` });
  auth.revoke(keys.revoked.client_email);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vertex-'));
  const keyFile = path.join(dir, 'main.json');
  fs.writeFileSync(keyFile, JSON.stringify(keys.main));
  gw = await startGateway(config(upstream.url, keyFile), {
    ...process.env,
    VX_COLD: JSON.stringify(keys.cold),
    VX_SHORT: JSON.stringify(keys.short),
    VX_REVOKED: JSON.stringify(keys.revoked),
    VX_OFFLINE: JSON.stringify(keys.offline),
    VX_NOT_JSON: NOT_JSON,
  });
  gw.app.log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  const k = await gw.newKey();
  accountId = k.accountId;
  secret = k.secret;
  client = new OpenAI({ apiKey: k.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
  await auth?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const base = `/v1/projects/${PROJECT}/locations/${LOCATION}/publishers`;

async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const c of stream) out.push(c);
  return out;
}

/** Streams `body` on chat, leaves once `marker` went by, and returns the request's usage record. */
async function cut(body: object, marker: string) {
  const k = await gw.newKey();
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${k.secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  const reader = res.body!.getReader();
  let text = '';
  while (!text.includes(marker)) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`the stream ended before ${marker}: ${text}`);
    text += new TextDecoder().decode(value);
  }
  await reader.cancel();
  for (let i = 0; i < 100; i++) {
    await gw.settled();
    const record = await gw.app.db('usage_records').where('account_id', k.accountId).first();
    if (record) return record;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('no usage record');
}

async function lastRecord() {
  await gw.settled();
  return gw.app.db('usage_records').where('account_id', accountId).orderBy('id', 'desc').first();
}

const ask = (model: string, extra: Partial<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming> = {}) =>
  client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hello there' }], ...extra });

describe('Gemini on Vertex', () => {
  test('chat: generateContent under the project and location, the Gemini translation, a Bearer token', async () => {
    const res = await ask('gemini', { max_completion_tokens: 50, temperature: 0.2 });
    expect(res.choices[0].message.content).toBe('Echo: hello there');
    expect(res.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 3 });
    const sent = upstream.last();
    expect(sent.path).toBe(`${base}/google/models/${GEMINI}:generateContent`);
    expect(sent.headers.authorization).toMatch(/^Bearer ya29\.fake-/);
    expect(sent.headers['x-goog-api-key']).toBeUndefined();
    expect(sent.body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'hello there' }] }],
      generationConfig: { temperature: 0.2, maxOutputTokens: 50 },
    });
  });

  test('a stream: streamGenerateContent?alt=sse, the text as it comes, usage with reasoning and cache reads', async () => {
    upstream.plan({
      kind: 'sse',
      events: [
        geminiResponse([{ text: 'Hel' }], undefined, { promptTokenCount: 40, totalTokenCount: 40 }),
        geminiResponse(
          [{ text: 'lo' }],
          'STOP',
          usageOf(40, 2, { thoughtsTokenCount: 5, cachedContentTokenCount: 30 }),
        ),
      ],
    });
    const chunks = await collect(
      await client.chat.completions.create({
        model: 'gemini',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    expect(upstream.last().path).toBe(`${base}/google/models/${GEMINI}:streamGenerateContent?alt=sse`);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Hello');
    expect(chunks[chunks.length - 1].usage).toEqual({
      prompt_tokens: 40,
      completion_tokens: 7,
      total_tokens: 47,
      prompt_tokens_details: { cached_tokens: 30 },
      completion_tokens_details: { reasoning_tokens: 5 },
    });
    // 10 fresh × 0.3 + 30 cached × 0.3 (no cached price set: input) + 7 × 2.5 = 3 + 9 + 17.5 → 30 µUSD
    expect(await lastRecord()).toMatchObject({
      prompt_tokens: 40,
      cached_tokens: 30,
      completion_tokens: 7,
      cost_micros: 30,
    });
  });

  test('two parallel tool calls, streamed, reassembled by the SDK', async () => {
    upstream.plan({
      kind: 'sse',
      events: [
        geminiResponse(
          [
            { functionCall: { name: 'get_weather', args: { city: 'Paris' } } },
            { functionCall: { name: 'get_time', args: { tz: 'Europe/Paris' } } },
          ],
          'STOP',
          usageOf(30, 12),
        ),
      ],
    });
    const final = await client.chat.completions
      .stream({
        model: 'gemini',
        messages: [{ role: 'user', content: 'weather and time?' }],
        tools: [
          { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } },
          { type: 'function', function: { name: 'get_time' } },
        ],
      })
      .finalChatCompletion();
    const calls = final.choices[0].message.tool_calls as OpenAI.Chat.ChatCompletionMessageFunctionToolCall[];
    expect(final.choices[0].finish_reason).toBe('tool_calls');
    expect(calls.map((c) => [c.function.name, c.function.arguments])).toEqual([
      ['get_weather', '{"city":"Paris"}'],
      ['get_time', '{"tz":"Europe/Paris"}'],
    ]);
    expect(upstream.last().body.tools[0].functionDeclarations.map((f: { name: string }) => f.name)).toEqual([
      'get_weather',
      'get_time',
    ]);
  });

  test('an image as a data URL becomes inline data', async () => {
    await client.chat.completions.create({
      model: 'gemini',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          ],
        },
      ],
    });
    expect(upstream.last().body.contents[0].parts).toEqual([
      { text: 'what is this?' },
      { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } },
    ]);
  });

  test('embeddings through :predict, with the tokens Vertex counted as usage', async () => {
    const res = await client.embeddings.create({
      model: 'embed',
      input: ['one two', 'three'],
      dimensions: 3,
      encoding_format: 'float',
    });
    const sent = upstream.last();
    expect(sent.path).toBe(`${base}/google/models/text-embedding-005:predict`);
    expect(sent.body).toEqual({
      instances: [{ content: 'one two' }, { content: 'three' }],
      parameters: { outputDimensionality: 3 },
    });
    expect(res.data.map((d) => d.embedding.length)).toEqual([3, 3]);
    expect(res.usage).toEqual({ prompt_tokens: 3, total_tokens: 3 });
    expect(await lastRecord()).toMatchObject({ counted: 'upstream', prompt_tokens: 3 });
  });

  test('/v1/messages on a Gemini model goes through chat (Vertex serves Messages for Claude only)', async () => {
    const anthropic = new Anthropic({ apiKey: secret, baseURL: gw.url, maxRetries: 0 });
    const res = await anthropic.messages.create({
      model: 'gemini',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'bridge me' }],
    });
    expect(res.content).toEqual([{ type: 'text', text: 'Echo: bridge me' }]);
    expect(upstream.last().path).toBe(`${base}/google/models/${GEMINI}:generateContent`);
  });
});

describe('Claude on Vertex', () => {
  test('chat: rawPredict, the model in the URL and not in the body, anthropic_version, the Anthropic translation', async () => {
    const res = await ask('claude', { max_completion_tokens: 64, temperature: 1.5 });
    expect(res.choices[0].message.content).toBe('Echo: hello there');
    const sent = upstream.last();
    expect(sent.path).toBe(`${base}/anthropic/models/${CLAUDE}:rawPredict`);
    expect(sent.headers.authorization).toMatch(/^Bearer /);
    expect(sent.headers['x-api-key']).toBeUndefined();
    expect(sent.body).toEqual({
      anthropic_version: 'vertex-2023-10-16',
      max_tokens: 64,
      temperature: 1,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hello there' }] }],
    });
  });

  test('a chat stream: streamRawPredict; two parallel tool calls; usage with cache reads and writes, priced as Anthropic bills', async () => {
    const msg = message(
      [
        { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'toolu_2', name: 'get_time', input: { tz: 'Europe/Paris' } },
      ],
      {
        usage: {
          input_tokens: 100,
          cache_read_input_tokens: 1000,
          cache_creation_input_tokens: 200,
          output_tokens: 20,
        },
      },
    );
    upstream.plan({ kind: 'sse', events: streamEvents(msg) });
    const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
    const runner = client.chat.completions.stream({
      model: 'claude',
      messages: [{ role: 'user', content: 'weather and time?' }],
      tools: [
        { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } },
        { type: 'function', function: { name: 'get_time' } },
      ],
      stream_options: { include_usage: true },
    });
    runner.on('chunk', (c) => chunks.push(c));
    const final = await runner.finalChatCompletion();
    expect(upstream.last().path).toBe(`${base}/anthropic/models/${CLAUDE}:streamRawPredict`);
    expect(upstream.last().body).toMatchObject({ stream: true, anthropic_version: 'vertex-2023-10-16' });
    const calls = final.choices[0].message.tool_calls as OpenAI.Chat.ChatCompletionMessageFunctionToolCall[];
    expect(calls.map((c) => [c.id, c.function.name, c.function.arguments])).toEqual([
      ['toolu_1', 'get_weather', '{"city":"Paris"}'],
      ['toolu_2', 'get_time', '{"tz":"Europe/Paris"}'],
    ]);
    expect(chunks[chunks.length - 1].usage).toMatchObject({
      prompt_tokens: 1300,
      completion_tokens: 20,
      prompt_tokens_details: { cached_tokens: 1000 },
    });
    // No cache prices configured: reads at input (vertex's catalogue), writes at 1.25× input as Anthropic bills them.
    // 100 × 3 + 1000 × 3 + 200 × 3.75 + 20 × 15 = 300 + 3000 + 750 + 300 = 4350 µUSD
    expect(await lastRecord()).toMatchObject({
      prompt_tokens: 1300,
      cached_tokens: 1000,
      cache_write_tokens: 200,
      completion_tokens: 20,
      cost_micros: 4350,
    });
  });

  test('an image as a data URL becomes a base64 image block', async () => {
    await client.chat.completions.create({
      model: 'claude',
      messages: [
        { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQ' } }] },
      ],
    });
    expect(upstream.last().body.messages[0].content).toEqual([
      { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQ' } },
    ]);
  });

  test('/v1/messages natively, streamed and not; betas pass as the header; the model the client asked for comes back', async () => {
    const anthropic = new Anthropic({ apiKey: secret, baseURL: gw.url, maxRetries: 0 });
    const res = await anthropic.messages.create(
      {
        model: 'claude',
        max_tokens: 100,
        system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
        messages: [{ role: 'user', content: 'hi' }],
      },
      { headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14' } },
    );
    expect(res.content).toEqual([{ type: 'text', text: 'Echo: hi' }]);
    expect(res.model).toBe('claude');
    let sent = upstream.last();
    expect(sent.path).toBe(`${base}/anthropic/models/${CLAUDE}:rawPredict`);
    expect(sent.headers['anthropic-beta']).toBe('interleaved-thinking-2025-05-14');
    expect(sent.body).toEqual({
      anthropic_version: 'vertex-2023-10-16',
      max_tokens: 100,
      stream: false,
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'hi' }],
    });
    const events = await collect(
      await anthropic.messages.create({
        model: 'claude',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'stream it' }],
        stream: true,
      }),
    );
    sent = upstream.last();
    expect(sent.path).toBe(`${base}/anthropic/models/${CLAUDE}:streamRawPredict`);
    expect(events[0].type).toBe('message_start');
    expect(events[events.length - 1].type).toBe('message_stop');
  });
});

describe('errors and fallback', () => {
  test("Vertex's 400 is the caller's 400 with its message; 429 is a 429; 500 and 503 are 502s", async () => {
    upstream.plan({
      kind: 'json',
      status: 400,
      body: vertexError(400, 'INVALID_ARGUMENT', 'Unable to submit request'),
    });
    let e = await ask('gemini').catch((x) => x);
    expect(e).toBeInstanceOf(OpenAI.BadRequestError);
    expect(e.message).toContain('Unable to submit request');
    upstream.plan({ kind: 'json', status: 429, body: vertexError(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded') });
    e = await ask('claude').catch((x) => x);
    expect(e).toBeInstanceOf(OpenAI.RateLimitError);
    for (const [status, code] of [
      [500, 'INTERNAL'],
      [503, 'UNAVAILABLE'],
    ] as const) {
      upstream.plan({ kind: 'json', status, body: vertexError(status, code, 'try later') });
      e = await ask('gemini').catch((x) => x);
      expect(e.status).toBe(502);
      expect(e.error).toMatchObject({ type: 'upstream_error', code: 'upstream_unavailable' });
    }
  });

  test('an overloaded Claude on Vertex hands the request to the next route', async () => {
    upstream.plan({
      kind: 'json',
      status: 529,
      body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
    });
    const res = await ask('claude-or-local');
    expect(res.choices[0].message.content).toBeTruthy();
    expect((await lastRecord()).provider).toBe('local');
  });

  test('a Claude stream cut by the client is billed the prompt Claude reported in message_start', async () => {
    const msg = message([{ type: 'text', text: 'Hello there friend' }], {
      usage: { input_tokens: 5000, cache_read_input_tokens: 2000, output_tokens: 9 },
    });
    upstream.plan({ kind: 'stall', events: streamEvents(msg).slice(0, 4) });
    const record = await cut({ model: 'claude', messages: [{ role: 'user', content: 'hi' }] }, 'Hello');
    expect(record).toMatchObject({ status: 499, prompt_tokens: 7000, cached_tokens: 2000 });
    expect(Number(record.completion_tokens)).toBeGreaterThanOrEqual(1);
  });

  test('a Gemini stream cut by the client is billed the usage reported so far, thinking included', async () => {
    const first = geminiResponse([{ text: 'Hi' }], undefined, {
      promptTokenCount: 1200,
      candidatesTokenCount: 1,
      thoughtsTokenCount: 3000,
      totalTokenCount: 4201,
    });
    upstream.plan({ kind: 'stall', events: [first] });
    const record = await cut({ model: 'gemini', messages: [{ role: 'user', content: 'think hard' }] }, 'Hi');
    expect(record).toMatchObject({ status: 499, prompt_tokens: 1200, completion_tokens: 3001 });
  });

  test('token arrays for embeddings are a 400 that never reaches Vertex', async () => {
    const before = upstream.requests.length;
    const e = await client.embeddings
      .create({ model: 'embed', input: [1, 2, 3], encoding_format: 'float' })
      .catch((x) => x);
    expect(e).toBeInstanceOf(OpenAI.BadRequestError);
    expect(e.message).toContain('token arrays are not supported by this model');
    expect(upstream.requests.length).toBe(before);
  });

  test('a stream that breaks off after it started ends with an error the SDK raises', async () => {
    upstream.plan({ kind: 'sse', events: [geminiResponse([{ text: 'partial' }])] });
    const stream = await client.chat.completions.create({
      model: 'gemini',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    const got: string[] = [];
    await expect(
      (async () => {
        for await (const c of stream) got.push(c.choices[0]?.delta.content ?? '');
      })(),
    ).rejects.toThrow(/upstream/i);
    expect(got.join('')).toBe('partial');
  });
});

describe('holds cover the bill', () => {
  test('Claude on Vertex billing every prompt token as a cache write and the whole allowance: charged in full, no shortfall', async () => {
    const k = await gw.newKey({}, 20_000);
    let billed = 0;
    upstream.plan({
      kind: 'answer',
      with: (r: Received) => {
        const input = Math.ceil(Buffer.byteLength(JSON.stringify(r.body.messages)) / 4);
        const output = r.body.max_tokens;
        billed = Math.ceil(input * 3.75 + output * 15);
        return {
          kind: 'json',
          body: message([{ type: 'text', text: 'ok' }], {
            usage: { input_tokens: 0, cache_creation_input_tokens: input, output_tokens: output },
          }),
        };
      },
    });
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${k.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'claude',
        messages: [{ role: 'user', content: 'tell me everything '.repeat(50) }],
      }),
    });
    expect(res.status).toBe(200);
    await gw.settled();
    const rows = await gw.app.db('ledger').where('account_id', k.accountId);
    const charged = -rows.filter((r) => r.kind === 'usage').reduce((n, r) => n + Number(r.amount_micros), 0);
    expect(billed).toBeGreaterThan(0);
    expect(charged).toBe(billed);
    expect(rows.filter((r) => r.kind === 'shortfall')).toHaveLength(0);
  });
});

describe('service account tokens', () => {
  test('one token serves many calls, on both publishers', async () => {
    const before = auth.requestsOf(keys.main.client_email).length;
    await Promise.all([ask('gemini'), ask('claude')]);
    for (let i = 0; i < 5; i++) await ask(i % 2 ? 'gemini' : 'claude');
    expect(auth.requestsOf(keys.main.client_email).length - before).toBe(0); // the first tests took the one token
    expect(auth.requestsOf(keys.main.client_email)).toEqual([{ email: keys.main.client_email, granted: true }]);
  });

  test('calls that find no token share one exchange', async () => {
    auth.delayMs = 200;
    try {
      const answers = await Promise.all(Array.from({ length: 6 }, () => ask('cold')));
      expect(answers.every((a) => a.choices[0].message.content === 'Echo: hello there')).toBe(true);
    } finally {
      auth.delayMs = 0;
    }
    expect(auth.requestsOf(keys.cold.client_email)).toEqual([{ email: keys.cold.client_email, granted: true }]);
  });

  test('a token is renewed before it expires: no call ever carries an expired one', async () => {
    const email = keys.short.client_email;
    await ask('short'); // a token that lives 4 s: renewed from 3 s on, used until 3.75 s
    expect(auth.requestsOf(email)).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 3200));
    await ask('short'); // still valid: sent, while the renewal runs
    for (let i = 0; i < 50 && auth.requestsOf(email).length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect(auth.requestsOf(email)).toHaveLength(2);
    await new Promise((r) => setTimeout(r, 1000)); // past the first token's expiry
    await ask('short');
    expect(auth.requestsOf(email)).toHaveLength(2);
    expect(auth.expiredSeen).toBe(0);
  });
});

describe('credentials that fail', () => {
  const logOf = (status: number) => lines.filter((l) => l.status === status).pop() as Record<string, string>;

  test("a revoked service account: a 502 in the caller's shape naming no secret; the log line names the account", async () => {
    const e = await ask('revoked').catch((x) => x);
    expect(e).toBeInstanceOf(OpenAI.InternalServerError);
    expect(e.status).toBe(502);
    expect(e.error).toMatchObject({ type: 'upstream_error', code: 'upstream_unavailable' });
    expect(JSON.stringify(e.error)).not.toContain(keys.revoked.client_email);
    const line = logOf(502);
    expect(line.route).toBe(`revoked/${GEMINI}`);
    expect(line.upstream).toContain(`service account ${keys.revoked.client_email}`);
    expect(line.upstream).toContain(`key ${keys.revoked.private_key_id.slice(0, 8)}`);
    expect(line.upstream).toContain('invalid_grant');
    expect(upstream.requests.some((r) => r.path.includes('revoked'))).toBe(false);
  });

  test("in Anthropic's shape on /v1/messages", async () => {
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': secret, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'offline', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'api_error' } });
  });

  test('an unreachable token endpoint: a 502, streaming or not; the log line names the account and the failure', async () => {
    for (const stream of [false, true]) {
      const e = await client.chat.completions
        .create({ model: 'offline', messages: [{ role: 'user', content: 'x' }], stream })
        .catch((x) => x);
      expect(e.status).toBe(502);
      expect(e.error).toMatchObject({ type: 'upstream_error' });
      const line = logOf(502);
      expect(line.upstream).toContain(`service account ${keys.offline.client_email}`);
      expect(line.upstream).toMatch(/cannot reach its token endpoint \(ECONNREFUSED\)/);
    }
  });

  test('a key file that cannot be read, and inline credentials that are not JSON: a 502 saying which, quoting nothing', async () => {
    let e = await ask('nofile').catch((x) => x);
    expect(e.status).toBe(502);
    expect(logOf(502).upstream).toBe(
      "vertex provider 'nofile': its credentials file /nonexistent/vertex-key.json cannot be read (ENOENT)",
    );
    e = await ask('notjson').catch((x) => x);
    expect(e.status).toBe(502);
    expect(logOf(502).upstream).toBe("vertex provider 'notjson': its credentials are not JSON");
    expect(JSON.stringify(lines)).not.toContain('TRUNCATED-SECRET-MATERIAL');
  });

  test("a token Vertex refuses (401 UNAUTHENTICATED) is our fault, not the caller's: a 502, and a new token next time", async () => {
    upstream.plan({
      kind: 'json',
      status: 401,
      body: vertexError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.'),
    });
    const before = auth.requestsOf(keys.main.client_email).length;
    const e = await ask('gemini').catch((x) => x);
    expect(e.status).toBe(502);
    expect(JSON.stringify(e.error)).not.toMatch(/ya29|Bearer/);
    // The refused token is dropped: the next call exchanges the key again, and is served.
    expect((await ask('gemini')).choices[0].message.content).toBe('Echo: hello there');
    expect(auth.requestsOf(keys.main.client_email).length).toBe(before + 1);
  });

  test('a failed exchange falls back to the next route', async () => {
    const res = await ask('revoked-or-vx');
    expect(res.choices[0].message.content).toBe('Echo: hello there');
    expect((await lastRecord()).provider).toBe('vx');
  });

  test('no private key, assertion or access token in any log line, error or metric', async () => {
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    const seen = JSON.stringify(lines) + metrics;
    for (const k of Object.values(keys)) {
      const body = k.private_key.split('\n')[5]; // a line of the key's base64
      expect(seen).not.toContain(body);
    }
    expect(seen).not.toMatch(/ya29\.|eyJhbGciOi|BEGIN PRIVATE KEY/);
    expect(metrics).toContain('switchyard_upstream_errors_total');
  });
});
