/**
 * POST /v1/messages and /v1/messages/count_tokens (Anthropic's Messages API) with the official @anthropic-ai/sdk:
 * natively to a fake Anthropic upstream (the request as written, betas and cache_control through), and translated
 * to a fake OpenAI upstream. Texts, streams, two parallel tool calls and their results, thinking blocks, token
 * counts, Anthropic's error shape, and prices that know prompt caching. On the database in DATABASE_URL.
 */
import Anthropic from '@anthropic-ai/sdk';
import { API_KEY, FakeAnthropic, message, streamEvents } from '../fakes/anthropicUpstream';
import { FakeGemini, geminiResponse, usageOf } from '../fakes/geminiUpstream';
import { FakeOpenAI, chatStreamEvents } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';
import { inspect, promptBound } from '../../src/gateway/bound';
import { eventFrames } from '../helpers/frames';

let claude: FakeAnthropic;
let openai: FakeOpenAI;
let gemini: FakeGemini;
let gw: TestGateway;
let client: Anthropic;
let accountId: number;
let secret: string;

beforeAll(async () => {
  claude = await new FakeAnthropic().start();
  openai = await new FakeOpenAI().start();
  gemini = await new FakeGemini().start();
  gw = await startGateway(
    `
limits: { rpm: 0, tpm: 0 }
providers:
  claude: { type: anthropic, base_url: "${claude.url}", api_key: "\${FAKE_ANTHROPIC_KEY}", headers: { anthropic-beta: "configured-beta-1" } }
  up: { type: openai, base_url: "${openai.url}" }
  g: { type: gemini, base_url: "${gemini.url}" }
  dead: { type: anthropic, base_url: "http://127.0.0.1:9/v1", api_key: "x", timeouts: { connect_ms: 1000 } }
models:
  - id: claude-test
    kind: chat
    price: { input: 3, output: 15, cached_input: 0.3, cache_write: 3.75 }
    max_output_tokens: 2048
    routes: [ { provider: claude, model: claude-sonnet-4-5 } ]
  - { id: claude-web, kind: chat, price: { input: 3, output: 15 }, allow: [web_search], routes: [ { provider: claude, model: claude-sonnet-4-5 } ] }
  - { id: claude-tools, kind: chat, price: { input: 3, output: 15 }, allow: [web_search, server_tools], routes: [ { provider: claude, model: claude-sonnet-4-5 } ] }
  - { id: claude-long, kind: chat, price: { input: 6, output: 22.5 }, allow: [long_context, priority], routes: [ { provider: claude, model: claude-sonnet-4-5 } ] }
  - { id: gpt-behind, kind: chat, price: { input: 0.15, output: 0.6 }, routes: [ { provider: up, model: gpt-4o-mini } ] }
  - { id: falls-back, kind: chat, price: { input: 3, output: 15 }, routes: [ { provider: dead, model: claude-sonnet-4-5 }, { provider: up, model: gpt-4o-mini } ] }
  - { id: gemini-behind, kind: chat, price: { input: 0.3, output: 2.5, cached_input: 0.03 }, routes: [ { provider: g, model: gemini-2.5-flash } ] }
`,
    { ...process.env, FAKE_ANTHROPIC_KEY: API_KEY },
  );
  const k = await gw.newKey({}, 10_000_000);
  accountId = k.accountId;
  secret = k.secret;
  client = new Anthropic({ apiKey: secret, baseURL: gw.url, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.close();
  await claude?.close();
  await openai?.close();
  await gemini?.close();
});

const tools: Anthropic.Tool[] = [
  {
    name: 'get_weather',
    description: 'Weather now',
    input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
  { name: 'get_time', input_schema: { type: 'object', properties: {} } },
];

async function lastRecord() {
  await gw.settled();
  return gw.app.db('usage_records').where('account_id', accountId).orderBy('id', 'desc').first();
}

describe('to an anthropic route, natively', () => {
  test('a text answer: the request goes as written (cache_control, thinking, betas), the answer comes back as Anthropic sent it', async () => {
    const res = await client.messages.create(
      {
        model: 'claude-test',
        max_tokens: 300,
        system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
        thinking: { type: 'enabled', budget_tokens: 200 },
        messages: [{ role: 'user', content: 'hello' }],
      },
      { headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14' } },
    );
    expect(res).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-test',
      content: [{ type: 'text', text: 'Echo: hello' }],
      stop_reason: 'end_turn',
    });
    const r = claude.last();
    expect(r.path).toBe('/v1/messages');
    expect(r.body).toMatchObject({
      model: 'claude-sonnet-4-5',
      max_tokens: 300,
      thinking: { type: 'enabled', budget_tokens: 200 },
      service_tier: 'standard_only',
    });
    expect(r.body.system[0].cache_control).toEqual({ type: 'ephemeral' });
    expect(r.headers['anthropic-beta']).toBe('configured-beta-1,interleaved-thinking-2025-05-14');
    expect(r.headers['x-api-key']).toBe(API_KEY); // the upstream's key, not the client's
  });

  test("Claude Code's mid-conversation `system` messages (a model id it does not know): their text ends the system prompt", async () => {
    const messages = [
      { role: 'user', content: 'hi' },
      { role: 'system', content: [{ type: 'text', text: '# Environment' }] },
      { role: 'system', content: 'Working directory: /tmp' },
    ];
    const post = (model: string) =>
      fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': secret, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model, max_tokens: 50, system: 'You are Claude Code.', messages }),
      });
    expect((await post('claude-test')).status).toBe(200);
    expect(claude.last().body).toMatchObject({
      system: [
        { type: 'text', text: 'You are Claude Code.' },
        { type: 'text', text: '# Environment' },
        { type: 'text', text: 'Working directory: /tmp' },
      ],
      messages: [{ role: 'user', content: 'hi' }],
    });
    // translated to chat, the same words as the system message
    expect((await post('gpt-behind')).status).toBe(200);
    expect(openai.last().body.messages).toEqual([
      { role: 'system', content: 'You are Claude Code.\n# Environment\nWorking directory: /tmp' },
      { role: 'user', content: 'hi' },
    ]);
  });

  test("adaptive thinking (the model decides how much to think) is Anthropic's too: it goes through", async () => {
    const res = await client.messages.create({
      model: 'claude-test',
      max_tokens: 300,
      thinking: { type: 'adaptive' } as never,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(res.type).toBe('message');
    expect(claude.last().body.thinking).toEqual({ type: 'adaptive' });
  });

  test('prompt caching is priced by class: cache reads, cache writes, fresh input, output', async () => {
    claude.plan({
      kind: 'json',
      body: message([{ type: 'text', text: 'cached' }], {
        usage: { input_tokens: 5, cache_creation_input_tokens: 100, cache_read_input_tokens: 2000, output_tokens: 12 },
      }),
    });
    const res = await client.messages.create({
      model: 'claude-test',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(res.usage).toMatchObject({
      input_tokens: 5,
      cache_creation_input_tokens: 100,
      cache_read_input_tokens: 2000,
      output_tokens: 12,
    });
    // 5 × 3 + 2000 × 0.3 + 100 × 3.75 + 12 × 15 = 15 + 600 + 375 + 180 = 1170 µUSD
    expect(await lastRecord()).toMatchObject({
      endpoint: 'messages',
      counted: 'upstream',
      prompt_tokens: 2105,
      cached_tokens: 2000,
      cache_write_tokens: 100,
      completion_tokens: 12,
      cost_micros: 1170,
    });
  });

  test('a stream: the events as Anthropic sent them, the model the client asked for, usage from message_start and message_delta', async () => {
    claude.plan({
      kind: 'sse',
      events: streamEvents(
        message([{ type: 'text', text: 'Hello there friend' }], {
          usage: { input_tokens: 40, cache_read_input_tokens: 1000, output_tokens: 7 },
        }),
      ),
    });
    const stream = client.messages.stream({
      model: 'claude-test',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const types: string[] = [];
    stream.on('streamEvent', (e) => types.push(e.type));
    const final = await stream.finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'Hello there friend' }]);
    expect(final.model).toBe('claude-test');
    expect(types[0]).toBe('message_start');
    expect(types.slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect(await lastRecord()).toMatchObject({
      counted: 'upstream',
      prompt_tokens: 1040,
      cached_tokens: 1000,
      completion_tokens: 7,
    });
  });

  test('two parallel tool calls, then their results sent back', async () => {
    const calls = message([
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'toolu_2', name: 'get_time', input: {} },
    ]);
    claude.plan({ kind: 'sse', events: streamEvents(calls) });
    const final = await client.messages
      .stream({
        model: 'claude-test',
        max_tokens: 200,
        tools,
        messages: [{ role: 'user', content: 'weather and time?' }],
      })
      .finalMessage();
    const uses = final.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    expect(uses.map((u) => [u.id, u.name, u.input])).toEqual([
      ['toolu_1', 'get_weather', { city: 'Paris' }],
      ['toolu_2', 'get_time', {}],
    ]);
    expect(final.stop_reason).toBe('tool_use');
    const res = await client.messages.create({
      model: 'claude-test',
      max_tokens: 200,
      tools,
      messages: [
        { role: 'user', content: 'weather and time?' },
        { role: 'assistant', content: final.content },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: '18°C' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: '10:00' },
          ],
        },
      ],
    });
    expect(res.type).toBe('message');
    expect(claude.last().body.messages[2].content.map((b: { tool_use_id: string }) => b.tool_use_id)).toEqual([
      'toolu_1',
      'toolu_2',
    ]);
  });

  test('thinking blocks stream through, signature included', async () => {
    const events = [
      {
        type: 'message_start',
        message: {
          id: 'msg_t',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-5',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 20, output_tokens: 1 },
        },
      },
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Let me think.' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig123' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: '42' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 30 } },
      { type: 'message_stop' },
    ];
    claude.plan({ kind: 'sse', events });
    const final = await client.messages
      .stream({
        model: 'claude-test',
        max_tokens: 500,
        thinking: { type: 'enabled', budget_tokens: 256 },
        messages: [{ role: 'user', content: 'meaning?' }],
      })
      .finalMessage();
    expect(final.content).toEqual([
      { type: 'thinking', thinking: 'Let me think.', signature: 'sig123' },
      { type: 'text', text: '42' },
    ]);
    expect(await lastRecord()).toMatchObject({ completion_tokens: 30, prompt_tokens: 20 });
  });

  test('count_tokens: Anthropic counts, free of charge', async () => {
    const before = await gw.app.db('usage_records').where('account_id', accountId).count({ n: '*' }).first();
    const res = await client.messages.countTokens({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'one two three' }],
    });
    expect(res.input_tokens).toBeGreaterThan(3);
    expect(claude.last().path).toBe('/v1/messages/count_tokens');
    expect(claude.last().body.model).toBe('claude-sonnet-4-5');
    await gw.settled();
    expect(await gw.app.db('usage_records').where('account_id', accountId).count({ n: '*' }).first()).toEqual(before);
  });
});

describe('to an OpenAI route, translated', () => {
  test('a text answer, non-streaming and streaming', async () => {
    const res = await client.messages.create({
      model: 'gpt-behind',
      max_tokens: 100,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(res).toMatchObject({
      type: 'message',
      model: 'gpt-behind',
      content: [{ type: 'text', text: 'Echo: hello' }],
      stop_reason: 'end_turn',
    });
    expect(res.usage).toMatchObject({ input_tokens: 10, output_tokens: 2 });
    expect(openai.last().body).toMatchObject({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hello' },
      ],
      max_tokens: 100,
    });
    const final = await client.messages
      .stream({ model: 'gpt-behind', max_tokens: 100, messages: [{ role: 'user', content: 'stream please' }] })
      .finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'Echo: stream please' }]);
    expect(final.usage.output_tokens).toBeGreaterThan(0);
  });

  test('tool calls become tool_use blocks, and tool_result blocks become tool messages', async () => {
    const base = { id: 'chatcmpl-t', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini' };
    openai.plan({
      kind: 'sse',
      events: [
        { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: null }, finish_reason: null }] },
        {
          ...base,
          choices: [
            {
              index: 0,
              delta: {
                tool_calls: [
                  { index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } },
                ],
              },
              finish_reason: null,
            },
          ],
        },
        {
          ...base,
          choices: [
            {
              index: 0,
              delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] },
              finish_reason: null,
            },
          ],
        },
        {
          ...base,
          choices: [
            {
              index: 0,
              delta: { tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] },
              finish_reason: null,
            },
          ],
        },
        {
          ...base,
          choices: [
            {
              index: 0,
              delta: {
                tool_calls: [
                  { index: 1, id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{}' } },
                ],
              },
              finish_reason: null,
            },
          ],
        },
        { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
        { ...base, choices: [], usage: { prompt_tokens: 50, completion_tokens: 20, total_tokens: 70 } },
      ],
    });
    const final = await client.messages
      .stream({
        model: 'gpt-behind',
        max_tokens: 100,
        tools,
        messages: [{ role: 'user', content: 'weather and time?' }],
      })
      .finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content).toEqual([
      { type: 'tool_use', id: 'call_a', name: 'get_weather', input: { city: 'Oslo' } },
      { type: 'tool_use', id: 'call_b', name: 'get_time', input: {} },
    ]);
    expect(openai.last().body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual([
      'get_weather',
      'get_time',
    ]);
    await client.messages.create({
      model: 'gpt-behind',
      max_tokens: 100,
      tools,
      messages: [
        { role: 'user', content: 'weather and time?' },
        { role: 'assistant', content: final.content },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_a', content: '3°C' },
            { type: 'tool_result', tool_use_id: 'call_b', content: [{ type: 'text', text: '12:00' }] },
          ],
        },
      ],
    });
    const sent = openai.last().body.messages;
    expect(sent[1]).toMatchObject({
      role: 'assistant',
      tool_calls: [{ id: 'call_a', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }, { id: 'call_b' }],
    });
    expect(sent.slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'call_a', content: '3°C' },
      { role: 'tool', tool_call_id: 'call_b', content: '12:00' },
    ]);
  });

  test('count_tokens: the tokenizer estimates', async () => {
    const res = await client.messages.countTokens({
      model: 'gpt-behind',
      messages: [{ role: 'user', content: 'one two three four' }],
    });
    expect(res.input_tokens).toBeGreaterThanOrEqual(4);
  });
});

describe("errors in Anthropic's shape", () => {
  const raw = (body: object, headers: Record<string, string>) =>
    fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers },
      body: JSON.stringify(body),
    });

  test('the key as x-api-key or as a bearer token; a bad key is authentication_error', async () => {
    const body = { model: 'claude-test', max_tokens: 10, messages: [{ role: 'user' as const, content: 'hi' }] };
    expect((await raw(body, { 'x-api-key': secret })).status).toBe(200);
    expect((await raw(body, { authorization: `Bearer ${secret}` })).status).toBe(200);
    const bad = await raw(body, { 'x-api-key': 'sk-nope-nope-nope-nope-nope-nope-nope-nope' });
    expect(bad.status).toBe(401);
    expect(await bad.json()).toEqual({
      type: 'error',
      error: { type: 'authentication_error', message: 'Invalid API key' },
    });
    await expect(
      new Anthropic({
        apiKey: 'sk-bad-bad-bad-bad-bad-bad-bad-bad-bad',
        baseURL: gw.url,
        maxRetries: 0,
      }).messages.create(body),
    ).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
  });

  test("an unknown path or method under /v1/messages answers in Anthropic's shape; every answer carries request-id", async () => {
    const wrongMethod = await fetch(`${gw.url}/v1/messages`, { headers: { 'x-api-key': secret } });
    expect(wrongMethod.status).toBe(405);
    expect(await wrongMethod.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'Method GET is not allowed for /v1/messages' },
    });
    const unknown = await fetch(`${gw.url}/v1/messages/batches`, { method: 'POST', headers: { 'x-api-key': secret } });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({
      type: 'error',
      error: { type: 'not_found_error', message: 'Unknown request URL: /v1/messages/batches' },
    });
    const ok = await raw(
      { model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
      { 'x-api-key': secret },
    );
    expect(ok.headers.get('request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    expect(ok.headers.get('request-id')).toBe(ok.headers.get('x-request-id'));
    expect(unknown.headers.get('request-id')).toMatch(/^req_/);
  });

  test('bad input, an unknown model, a missing scope, no money', async () => {
    const e = await client.messages
      .create({ model: 'claude-test', messages: [{ role: 'user', content: 'hi' }] } as never)
      .catch((x) => x);
    expect(e).toBeInstanceOf(Anthropic.BadRequestError);
    expect(e.error).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: "Missing required parameter: 'max_tokens'." },
    });
    const unknown = await client.messages
      .create({ model: 'nope', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] })
      .catch((x) => x);
    expect(unknown.error).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'Model not found: nope' },
    });
    const chatOnly = await gw.newKey({ scopes: ['chat'] });
    const scope = await raw(
      { model: 'claude-test', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
      { 'x-api-key': chatOnly.secret },
    );
    expect(scope.status).toBe(403);
    expect(((await scope.json()) as any).error.type).toBe('permission_error');
    const broke = await gw.newKey({}, 0);
    const poor = await raw(
      { model: 'claude-test', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
      { 'x-api-key': broke.secret },
    );
    expect(poor.status).toBe(402);
    expect(poor.headers.get('x-should-retry')).toBe('false');
    expect(await poor.json()).toEqual({
      type: 'error',
      error: { type: 'billing_error', message: 'Insufficient quota' },
    });
  });

  test('count_tokens is free but not unlimited: a key without money or over its requests per minute is refused before anything is counted or sent', async () => {
    const count = (key: string) =>
      fetch(`${gw.url}/v1/messages/count_tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify({ model: 'claude-test', messages: [{ role: 'user', content: 'x'.repeat(100_000) }] }),
      });
    const upstreamCalls = claude.requests.length;
    const broke = await gw.newKey({}, 0);
    const poor = await count(broke.secret);
    expect(poor.status).toBe(402);
    expect(((await poor.json()) as any).error.type).toBe('billing_error');
    const limited = await gw.newKey({ rpmLimit: 1 });
    expect((await count(limited.secret)).status).toBe(200);
    const over = await count(limited.secret);
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(((await over.json()) as any).error.type).toBe('rate_limit_error');
    expect(claude.requests.length).toBe(upstreamCalls + 1); // only the one allowed count reached Anthropic
  });

  test('an upstream error mid-stream ends the stream with an error event', async () => {
    const events = streamEvents(message([{ type: 'text', text: 'partial answer' }])).slice(0, 4);
    claude.plan({
      kind: 'sse',
      events: [...events, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }],
    });
    const res = await raw(
      { model: 'claude-test', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] },
      { 'x-api-key': secret },
    );
    const text = await res.text();
    expect(text).toContain('event: message_start');
    expect(text.trim().split('\n\n').pop()).toMatch(
      /^event: error\ndata: \{"type":"error","error":\{"type":"api_error","message":"The upstream provider failed during the stream: Overloaded"\}\}$/,
    );
  });
});

/** A Messages request as Claude Code sends it: `?beta=true`, the key as a bearer token. */
const post = (body: object, key = secret, headers: Record<string, string> = {}) =>
  fetch(`${gw.url}/v1/messages?beta=true`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
      authorization: `Bearer ${key}`,
      ...headers,
    },
    body: JSON.stringify(body),
  });

const frames = eventFrames;

describe('translated streams, event by event', () => {
  test("Anthropic's sequence: message_start, ping, one block per text run or tool call, message_delta with the usage, message_stop", async () => {
    const base = { id: 'chatcmpl-seq', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini' };
    const chunk = (delta: object, finish: string | null = null) => ({
      ...base,
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
    openai.plan({
      kind: 'sse',
      events: [
        chunk({ role: 'assistant', content: '' }),
        chunk({ content: 'Let me ' }),
        chunk({ content: 'check.' }),
        // this server repeats the call's id on every fragment: still one call
        chunk({
          tool_calls: [
            { index: 0, id: 'call_x', type: 'function', function: { name: 'get_weather', arguments: '{"city":' } },
          ],
        }),
        chunk({ tool_calls: [{ index: 0, id: 'call_x', type: 'function', function: { arguments: '"Oslo"}' } }] }),
        chunk({}, 'tool_calls'),
        {
          ...base,
          choices: [],
          usage: {
            prompt_tokens: 40,
            completion_tokens: 9,
            total_tokens: 49,
            prompt_tokens_details: { cached_tokens: 30 },
          },
        },
      ],
    });
    const res = await post({
      model: 'gpt-behind',
      max_tokens: 100,
      stream: true,
      tools,
      messages: [{ role: 'user', content: 'weather?' }],
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const ev = frames(await res.text());
    expect(ev.every((e) => e.event === e.data.type)).toBe(true);
    expect(ev.map((e) => e.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(ev[0].data.message).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'gpt-behind',
      content: [],
      stop_reason: null,
    });
    expect(ev[3].data).toEqual({
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text: 'Let me ' },
    });
    expect(ev[6].data).toEqual({
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'tool_use', id: 'call_x', name: 'get_weather', input: {} },
    });
    expect(ev[8].data).toEqual({
      type: 'content_block_delta',
      index: 1,
      delta: { type: 'input_json_delta', partial_json: '"Oslo"}' },
    });
    expect(ev[10].data).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { input_tokens: 10, output_tokens: 9, cache_read_input_tokens: 30, cache_creation_input_tokens: 0 },
    });
  });

  test('system blocks stay separate paragraphs in the system message', async () => {
    await client.messages.create({
      model: 'gpt-behind',
      max_tokens: 50,
      system: [
        { type: 'text', text: 'Header line.' },
        { type: 'text', text: 'You are terse.' },
      ],
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(openai.last().body.messages[0]).toEqual({ role: 'system', content: 'Header line.\nYou are terse.' });
  });
});

describe('fallback', () => {
  test('an anthropic route that cannot be reached hands the request to the next route, translated there', async () => {
    const res = await client.messages.create({
      model: 'falls-back',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'anyone there?' }],
    });
    expect(res.content).toEqual([{ type: 'text', text: 'Echo: anyone there?' }]);
    expect(openai.last().body.model).toBe('gpt-4o-mini');
    const final = await client.messages
      .stream({ model: 'falls-back', max_tokens: 50, messages: [{ role: 'user', content: 'and now?' }] })
      .finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'Echo: and now?' }]);
    expect(await lastRecord()).toMatchObject({
      endpoint: 'messages',
      model: 'falls-back',
      provider: 'up',
      status: 200,
    });
  });
});

describe('to a Gemini route, translated', () => {
  test("a tool call and its result, Gemini's cached tokens billed as cache reads, a stream", async () => {
    gemini.plan({
      kind: 'json',
      body: geminiResponse(
        [{ functionCall: { name: 'get_weather', args: { city: 'Rome' } } }],
        'STOP',
        usageOf(30, 5, { cachedContentTokenCount: 20 }),
      ),
    });
    const res = await client.messages.create({
      model: 'gemini-behind',
      max_tokens: 100,
      tools,
      messages: [{ role: 'user', content: 'weather in Rome?' }],
    });
    expect(res.stop_reason).toBe('tool_use');
    const use = res.content[0] as Anthropic.ToolUseBlock;
    expect(use).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Rome' } });
    expect(res.usage).toMatchObject({ input_tokens: 10, cache_read_input_tokens: 20, output_tokens: 5 });
    // 10 fresh × 0.3 + 20 cached × 0.03 + 5 × 2.5 = 3 + 0.6 + 12.5 = 16.1 → 17 µUSD
    expect(await lastRecord()).toMatchObject({
      endpoint: 'messages',
      model: 'gemini-behind',
      prompt_tokens: 30,
      cached_tokens: 20,
      completion_tokens: 5,
      cost_micros: 17,
    });
    expect(gemini.last().body.generationConfig.maxOutputTokens).toBe(100);
    await client.messages.create({
      model: 'gemini-behind',
      max_tokens: 100,
      tools,
      messages: [
        { role: 'user', content: 'weather in Rome?' },
        { role: 'assistant', content: res.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '19°C' }] },
      ],
    });
    const parts = gemini.last().body.contents.flatMap((c: { parts: object[] }) => c.parts);
    expect(parts).toContainEqual(
      expect.objectContaining({ functionCall: { name: 'get_weather', args: { city: 'Rome' } } }),
    );
    expect(parts).toContainEqual(
      expect.objectContaining({ functionResponse: expect.objectContaining({ name: 'get_weather' }) }),
    );
    expect(JSON.stringify(parts)).toContain('19°C');
    const final = await client.messages
      .stream({ model: 'gemini-behind', max_tokens: 50, messages: [{ role: 'user', content: 'stream it' }] })
      .finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'Echo: stream it' }]);
    expect(gemini.last().path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
  });
});

describe('money', () => {
  const base = { model: 'claude-test', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };
  const MODEL = { image_tokens: 4_800, file_tokens: 300_000 };

  test('the hold covers everything forwarded: system blocks, tools, context_management, metadata, documents', async () => {
    // 20 kB in any of them may be 20,000 prompt tokens: 75,000 µUSD at the highest input price (cache writes, 3.75)
    const big = 'x'.repeat(20_000);
    const fields: Record<string, unknown>[] = [
      {
        system: [
          { type: 'text', text: 'Header.' },
          { type: 'text', text: big, cache_control: { type: 'ephemeral' } },
        ],
      },
      { tools: [{ name: 'f', description: big, input_schema: { type: 'object', properties: {} } }] },
      { context_management: { edits: [{ type: 'clear_thinking_20251015', keep: big }] } },
      { metadata: { user_id: big } },
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'document', source: { type: 'text', media_type: 'text/plain', data: big } },
              { type: 'text', text: 'hi' },
            ],
          },
        ],
      },
    ];
    for (const f of fields) {
      const k = await gw.newKey({}, 50_000);
      const before = claude.requests.length;
      const res = await post({ ...base, ...f }, k.secret);
      expect({ field: Object.keys(f)[0], status: res.status }).toEqual({ field: Object.keys(f)[0], status: 402 });
      expect(claude.requests.length).toBe(before);
      expect((await post(base, k.secret)).status).toBe(200);
    }
  });

  test('the output allowance is max_tokens, lowered to what the money covers, and the thinking budget inside it with it', async () => {
    const body = {
      model: 'claude-test',
      max_tokens: 32_000,
      thinking: { type: 'enabled', budget_tokens: 31_999 },
      messages: [{ role: 'user', content: 'think hard' }],
    };
    const rich = await gw.newKey({}, 10_000_000);
    expect((await post(body, rich.secret)).status).toBe(200);
    expect(claude.last().body).toMatchObject({
      max_tokens: 32_000,
      thinking: { type: 'enabled', budget_tokens: 31_999 },
    });
    const poor = await gw.newKey({}, 20_000);
    expect((await post(body, poor.secret)).status).toBe(200);
    // the prompt at the highest input price (3.75 µUSD a token), the rest at 15 µUSD an output token
    const allowance = Math.floor((20_000 * 1_000_000 - promptBound(inspect(body), MODEL) * 3_750_000) / 15_000_000);
    expect(allowance).toBeGreaterThan(1_100);
    expect(allowance).toBeLessThan(31_999);
    expect(claude.last().body).toMatchObject({
      max_tokens: allowance,
      thinking: { type: 'enabled', budget_tokens: allowance - 1 },
    });
  });

  test("features that raise Anthropic's prices are served at the standard ones unless the model allows them: the 1M context beta, fast mode, priority capacity", async () => {
    const betas = { 'anthropic-beta': 'context-1m-2025-08-07, interleaved-thinking-2025-05-14' };
    expect((await post({ ...base, speed: 'fast', service_tier: 'auto' }, secret, betas)).status).toBe(200);
    expect(claude.last().headers['anthropic-beta']).toBe('configured-beta-1,interleaved-thinking-2025-05-14');
    expect(claude.last().body.speed).toBeUndefined();
    expect(claude.last().body.service_tier).toBe('standard_only');
    expect((await post(base, secret, { 'anthropic-beta': 'context-1m-2025-08-07' })).status).toBe(200);
    expect(claude.last().headers['anthropic-beta']).toBe('configured-beta-1');
    // a model whose prices cover them (allow: [long_context, priority]) passes them on
    expect(
      (await post({ ...base, model: 'claude-long', speed: 'fast', service_tier: 'auto' }, secret, betas)).status,
    ).toBe(200);
    expect(claude.last().headers['anthropic-beta']).toBe(
      'configured-beta-1,context-1m-2025-08-07,interleaved-thinking-2025-05-14',
    );
    expect(claude.last().body).toMatchObject({ speed: 'fast', service_tier: 'auto' });
  });

  test('server tools are dropped unless the model allows them (web search and fetch: web_search; code execution, MCP toolsets and servers: server_tools); client tools stay', async () => {
    const server = [
      { type: 'web_search_20250305', name: 'web_search', max_uses: 5 },
      { type: 'web_fetch_20250910', name: 'web_fetch' },
      { type: 'code_execution_20250825', name: 'code_execution' },
      { type: 'mcp_toolset', mcp_server_name: 'remote' },
    ];
    const mcp_servers = [{ type: 'url', url: 'https://mcp.example.com/sse', name: 'remote' }];
    expect((await post({ ...base, tools: [...tools, ...server], mcp_servers })).status).toBe(200);
    expect(claude.last().body.tools.map((t: { name: string }) => t.name)).toEqual(['get_weather', 'get_time']);
    expect(claude.last().body.mcp_servers).toBeUndefined();
    expect((await post({ ...base, model: 'claude-web', tools: [...tools, ...server], mcp_servers })).status).toBe(200);
    expect(claude.last().body.tools.map((t: { name: string }) => t.name)).toEqual([
      'get_weather',
      'get_time',
      'web_search',
      'web_fetch',
    ]);
    expect(claude.last().body.mcp_servers).toBeUndefined();
    expect((await post({ ...base, model: 'claude-tools', tools: [...tools, ...server], mcp_servers })).status).toBe(
      200,
    );
    expect(claude.last().body.tools).toHaveLength(6);
    expect(claude.last().body.mcp_servers).toEqual(mcp_servers);
  });
});
