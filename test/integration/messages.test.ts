/**
 * POST /v1/messages and /v1/messages/count_tokens (Anthropic's Messages API) with the official @anthropic-ai/sdk:
 * natively to a fake Anthropic upstream (the request as written, betas and cache_control through), and translated
 * to a fake OpenAI upstream. Texts, streams, two parallel tool calls and their results, thinking blocks, token
 * counts, Anthropic's error shape, and prices that know prompt caching. On the database in DATABASE_URL.
 */
import Anthropic from '@anthropic-ai/sdk';
import { API_KEY, FakeAnthropic, message, streamEvents } from '../fakes/anthropicUpstream';
import { FakeOpenAI, chatStreamEvents } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';

let claude: FakeAnthropic;
let openai: FakeOpenAI;
let gw: TestGateway;
let client: Anthropic;
let accountId: number;
let secret: string;

beforeAll(async () => {
  claude = await new FakeAnthropic().start();
  openai = await new FakeOpenAI().start();
  gw = await startGateway(
    `
limits: { rpm: 0, tpm: 0 }
providers:
  claude: { type: anthropic, base_url: "${claude.url}", api_key: "\${FAKE_ANTHROPIC_KEY}", headers: { anthropic-beta: "configured-beta-1" } }
  up: { type: openai, base_url: "${openai.url}" }
models:
  - id: claude-test
    kind: chat
    price: { input: 3, output: 15, cached_input: 0.3, cache_write: 3.75 }
    max_output_tokens: 2048
    routes: [ { provider: claude, model: claude-sonnet-4-5 } ]
  - { id: gpt-behind, kind: chat, price: { input: 0.15, output: 0.6 }, routes: [ { provider: up, model: gpt-4o-mini } ] }
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
});

const tools: Anthropic.Tool[] = [
  { name: 'get_weather', description: 'Weather now', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
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
    expect(res).toMatchObject({ type: 'message', role: 'assistant', model: 'claude-test', content: [{ type: 'text', text: 'Echo: hello' }], stop_reason: 'end_turn' });
    const r = claude.last();
    expect(r.path).toBe('/v1/messages');
    expect(r.body).toMatchObject({ model: 'claude-sonnet-4-5', max_tokens: 300, thinking: { type: 'enabled', budget_tokens: 200 }, service_tier: 'standard_only' });
    expect(r.body.system[0].cache_control).toEqual({ type: 'ephemeral' });
    expect(r.headers['anthropic-beta']).toBe('configured-beta-1,interleaved-thinking-2025-05-14');
    expect(r.headers['x-api-key']).toBe(API_KEY); // the upstream's key, not the client's
  });

  test('prompt caching is priced by class: cache reads, cache writes, fresh input, output', async () => {
    claude.plan({ kind: 'json', body: message([{ type: 'text', text: 'cached' }], { usage: { input_tokens: 5, cache_creation_input_tokens: 100, cache_read_input_tokens: 2000, output_tokens: 12 } }) });
    const res = await client.messages.create({ model: 'claude-test', max_tokens: 100, messages: [{ role: 'user', content: 'x' }] });
    expect(res.usage).toMatchObject({ input_tokens: 5, cache_creation_input_tokens: 100, cache_read_input_tokens: 2000, output_tokens: 12 });
    // 5 × 3 + 2000 × 0.3 + 100 × 3.75 + 12 × 15 = 15 + 600 + 375 + 180 = 1170 µUSD
    expect(await lastRecord()).toMatchObject({ endpoint: 'messages', counted: 'upstream', prompt_tokens: 2105, cached_tokens: 2000, cache_write_tokens: 100, completion_tokens: 12, cost_micros: 1170 });
  });

  test('a stream: the events as Anthropic sent them, the model the client asked for, usage from message_start and message_delta', async () => {
    claude.plan({ kind: 'sse', events: streamEvents(message([{ type: 'text', text: 'Hello there friend' }], { usage: { input_tokens: 40, cache_read_input_tokens: 1000, output_tokens: 7 } })) });
    const stream = client.messages.stream({ model: 'claude-test', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    const types: string[] = [];
    stream.on('streamEvent', (e) => types.push(e.type));
    const final = await stream.finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'Hello there friend' }]);
    expect(final.model).toBe('claude-test');
    expect(types[0]).toBe('message_start');
    expect(types.slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect(await lastRecord()).toMatchObject({ counted: 'upstream', prompt_tokens: 1040, cached_tokens: 1000, completion_tokens: 7 });
  });

  test('two parallel tool calls, then their results sent back', async () => {
    const calls = message([
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'toolu_2', name: 'get_time', input: {} },
    ]);
    claude.plan({ kind: 'sse', events: streamEvents(calls) });
    const final = await client.messages.stream({ model: 'claude-test', max_tokens: 200, tools, messages: [{ role: 'user', content: 'weather and time?' }] }).finalMessage();
    const uses = final.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    expect(uses.map((u) => [u.id, u.name, u.input])).toEqual([['toolu_1', 'get_weather', { city: 'Paris' }], ['toolu_2', 'get_time', {}]]);
    expect(final.stop_reason).toBe('tool_use');
    const res = await client.messages.create({
      model: 'claude-test',
      max_tokens: 200,
      tools,
      messages: [
        { role: 'user', content: 'weather and time?' },
        { role: 'assistant', content: final.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '18°C' }, { type: 'tool_result', tool_use_id: 'toolu_2', content: '10:00' }] },
      ],
    });
    expect(res.type).toBe('message');
    expect(claude.last().body.messages[2].content.map((b: { tool_use_id: string }) => b.tool_use_id)).toEqual(['toolu_1', 'toolu_2']);
  });

  test('thinking blocks stream through, signature included', async () => {
    const events = [
      { type: 'message_start', message: { id: 'msg_t', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 20, output_tokens: 1 } } },
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
    const final = await client.messages.stream({ model: 'claude-test', max_tokens: 500, thinking: { type: 'enabled', budget_tokens: 256 }, messages: [{ role: 'user', content: 'meaning?' }] }).finalMessage();
    expect(final.content).toEqual([{ type: 'thinking', thinking: 'Let me think.', signature: 'sig123' }, { type: 'text', text: '42' }]);
    expect(await lastRecord()).toMatchObject({ completion_tokens: 30, prompt_tokens: 20 });
  });

  test('count_tokens: Anthropic counts, free of charge', async () => {
    const before = await gw.app.db('usage_records').where('account_id', accountId).count({ n: '*' }).first();
    const res = await client.messages.countTokens({ model: 'claude-test', messages: [{ role: 'user', content: 'one two three' }] });
    expect(res.input_tokens).toBeGreaterThan(3);
    expect(claude.last().path).toBe('/v1/messages/count_tokens');
    expect(claude.last().body.model).toBe('claude-sonnet-4-5');
    await gw.settled();
    expect(await gw.app.db('usage_records').where('account_id', accountId).count({ n: '*' }).first()).toEqual(before);
  });
});

describe('to an OpenAI route, translated', () => {
  test('a text answer, non-streaming and streaming', async () => {
    const res = await client.messages.create({ model: 'gpt-behind', max_tokens: 100, system: 'Be brief.', messages: [{ role: 'user', content: 'hello' }] });
    expect(res).toMatchObject({ type: 'message', model: 'gpt-behind', content: [{ type: 'text', text: 'Echo: hello' }], stop_reason: 'end_turn' });
    expect(res.usage).toMatchObject({ input_tokens: 10, output_tokens: 2 });
    expect(openai.last().body).toMatchObject({ model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello' }], max_tokens: 100 });
    const final = await client.messages.stream({ model: 'gpt-behind', max_tokens: 100, messages: [{ role: 'user', content: 'stream please' }] }).finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'Echo: stream please' }]);
    expect(final.usage.output_tokens).toBeGreaterThan(0);
  });

  test('tool calls become tool_use blocks, and tool_result blocks become tool messages', async () => {
    const base = { id: 'chatcmpl-t', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini' };
    openai.plan({
      kind: 'sse',
      events: [
        { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: null }, finish_reason: null }] },
        { ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } }] }, finish_reason: null }] },
        { ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }, finish_reason: null }] },
        { ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] }, finish_reason: null }] },
        { ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{}' } }] }, finish_reason: null }] },
        { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
        { ...base, choices: [], usage: { prompt_tokens: 50, completion_tokens: 20, total_tokens: 70 } },
      ],
    });
    const final = await client.messages.stream({ model: 'gpt-behind', max_tokens: 100, tools, messages: [{ role: 'user', content: 'weather and time?' }] }).finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content).toEqual([
      { type: 'tool_use', id: 'call_a', name: 'get_weather', input: { city: 'Oslo' } },
      { type: 'tool_use', id: 'call_b', name: 'get_time', input: {} },
    ]);
    expect(openai.last().body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(['get_weather', 'get_time']);
    await client.messages.create({
      model: 'gpt-behind',
      max_tokens: 100,
      tools,
      messages: [
        { role: 'user', content: 'weather and time?' },
        { role: 'assistant', content: final.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_a', content: '3°C' }, { type: 'tool_result', tool_use_id: 'call_b', content: [{ type: 'text', text: '12:00' }] }] },
      ],
    });
    const sent = openai.last().body.messages;
    expect(sent[1]).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'call_a', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }, { id: 'call_b' }] });
    expect(sent.slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'call_a', content: '3°C' },
      { role: 'tool', tool_call_id: 'call_b', content: '12:00' },
    ]);
  });

  test('count_tokens: the tokenizer estimates', async () => {
    const res = await client.messages.countTokens({ model: 'gpt-behind', messages: [{ role: 'user', content: 'one two three four' }] });
    expect(res.input_tokens).toBeGreaterThanOrEqual(4);
  });
});

describe("errors in Anthropic's shape", () => {
  const raw = (body: object, headers: Record<string, string>) =>
    fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers }, body: JSON.stringify(body) });

  test('the key as x-api-key or as a bearer token; a bad key is authentication_error', async () => {
    const body = { model: 'claude-test', max_tokens: 10, messages: [{ role: 'user' as const, content: 'hi' }] };
    expect((await raw(body, { 'x-api-key': secret })).status).toBe(200);
    expect((await raw(body, { authorization: `Bearer ${secret}` })).status).toBe(200);
    const bad = await raw(body, { 'x-api-key': 'sk-nope-nope-nope-nope-nope-nope-nope-nope' });
    expect(bad.status).toBe(401);
    expect(await bad.json()).toEqual({ type: 'error', error: { type: 'authentication_error', message: 'Invalid API key' } });
    await expect(new Anthropic({ apiKey: 'sk-bad-bad-bad-bad-bad-bad-bad-bad-bad', baseURL: gw.url, maxRetries: 0 }).messages.create(body)).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
  });

  test('bad input, an unknown model, a missing scope, no money', async () => {
    const e = await client.messages.create({ model: 'claude-test', messages: [{ role: 'user', content: 'hi' }] } as never).catch((x) => x);
    expect(e).toBeInstanceOf(Anthropic.BadRequestError);
    expect(e.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: "Missing required parameter: 'max_tokens'." } });
    const unknown = await client.messages.create({ model: 'nope', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }).catch((x) => x);
    expect(unknown.error).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'Model not found: nope' } });
    const chatOnly = await gw.newKey({ scopes: ['chat'] });
    const scope = await raw({ model: 'claude-test', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }, { 'x-api-key': chatOnly.secret });
    expect(scope.status).toBe(403);
    expect(((await scope.json()) as any).error.type).toBe('permission_error');
    const broke = await gw.newKey({}, 0);
    const poor = await raw({ model: 'claude-test', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }, { 'x-api-key': broke.secret });
    expect(poor.status).toBe(402);
    expect(poor.headers.get('x-should-retry')).toBe('false');
    expect(await poor.json()).toEqual({ type: 'error', error: { type: 'billing_error', message: 'Insufficient quota' } });
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
    claude.plan({ kind: 'sse', events: [...events, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }] });
    const res = await raw({ model: 'claude-test', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] }, { 'x-api-key': secret });
    const text = await res.text();
    expect(text).toContain('event: message_start');
    expect(text.trim().split('\n\n').pop()).toMatch(/^event: error\ndata: \{"type":"error","error":\{"type":"api_error","message":"The upstream provider failed during the stream: Overloaded"\}\}$/);
  });
});
