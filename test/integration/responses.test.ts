/**
 * POST /v1/responses, GET and DELETE /v1/responses/{id} (OpenAI's Responses API) with the official openai SDK:
 * natively to a fake OpenAI upstream and translated through chat to a fake Anthropic upstream. Texts, streams with
 * their typed events, tool round trips, stored responses per account (previous_response_id, another account's id
 * is a 404, store: false keeps nothing), and tools a route cannot serve. On the database in DATABASE_URL.
 */
import OpenAI from 'openai';
import { API_KEY, FakeAnthropic, message, streamEvents } from '../fakes/anthropicUpstream';
import { FakeGemini, geminiResponse, usageOf } from '../fakes/geminiUpstream';
import { FakeOpenAI, responseObject } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';
import { inspect, promptBound } from '../../src/gateway/bound';
import { eventFrames } from '../helpers/frames';

let openai: FakeOpenAI;
let claude: FakeAnthropic;
let gemini: FakeGemini;
let gw: TestGateway;
let client: OpenAI;
let accountId: number;

beforeAll(async () => {
  openai = await new FakeOpenAI().start();
  claude = await new FakeAnthropic().start();
  gemini = await new FakeGemini().start();
  gw = await startGateway(
    `
limits: { rpm: 0, tpm: 0 }
server: { max_body_bytes: 200000 }
providers:
  up: { type: openai, base_url: "${openai.url}" }
  claude: { type: anthropic, base_url: "${claude.url}", api_key: "\${FAKE_ANTHROPIC_KEY}" }
  g: { type: gemini, base_url: "${gemini.url}" }
models:
  - { id: gpt-5, kind: chat, price: { input: 1.25, output: 10, cached_input: 0.125 }, routes: [ { provider: up, model: gpt-5-2025 } ] }
  - { id: claude-behind, kind: chat, price: { input: 3, output: 15 }, routes: [ { provider: claude, model: claude-sonnet-4-5 } ] }
  - { id: gemini-behind, kind: chat, price: { input: 0.3, cached_input: 0.03, output: 2.5 }, routes: [ { provider: g, model: gemini-2.5-flash } ] }
`,
    { ...process.env, FAKE_ANTHROPIC_KEY: API_KEY },
  );
  const k = await gw.newKey();
  accountId = k.accountId;
  client = new OpenAI({ apiKey: k.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.close();
  await openai?.close();
  await claude?.close();
  await gemini?.close();
});

async function lastRecord() {
  await gw.settled();
  return gw.app.db('usage_records').where('account_id', accountId).orderBy('id', 'desc').first();
}

const weather: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Weather now',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

describe('to an openai route, natively', () => {
  test('responses.create: sent as written with the upstream model, the allowance and store false; usage with cached and reasoning tokens billed', async () => {
    const res = await client.responses.create({
      model: 'gpt-5',
      input: 'hello',
      instructions: 'Be brief.',
      max_output_tokens: 300,
      reasoning: { effort: 'low' },
    });
    expect(res.output_text).toBe('Echo: hello');
    expect(res.model).toBe('gpt-5');
    expect(openai.last().path).toBe('/v1/responses');
    expect(openai.last().body).toMatchObject({
      model: 'gpt-5-2025',
      input: [{ role: 'user', content: 'hello' }],
      instructions: 'Be brief.',
      max_output_tokens: 300,
      store: false,
      stream: false,
      reasoning: { effort: 'low' },
    });
    // 8 fresh × 1.25 + 4 cached × 0.125 + 6 × 10 = 10 + 0.5 + 60 = 70.5 → 71 µUSD
    expect(await lastRecord()).toMatchObject({
      endpoint: 'responses',
      counted: 'upstream',
      prompt_tokens: 12,
      cached_tokens: 4,
      completion_tokens: 6,
      reasoning_tokens: 2,
      cost_micros: 71,
    });
  });

  test('responses.stream: the typed events with their sequence numbers, the model the client asked for', async () => {
    const stream = client.responses.stream({ model: 'gpt-5', input: 'stream this' });
    const types: string[] = [];
    stream.on('event', (e) => types.push(e.type));
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('Echo: stream this');
    expect(final.model).toBe('gpt-5');
    expect(types[0]).toBe('response.created');
    expect(types).toContain('response.output_text.delta');
    expect(types[types.length - 1]).toBe('response.completed');
  });

  test('a tool round trip with the SDK: the function_call item out, its output back after the stored conversation', async () => {
    const call = {
      type: 'function_call',
      id: 'fc_up1',
      call_id: 'call_up1',
      name: 'get_weather',
      arguments: '{"city":"Lima"}',
      status: 'completed',
    };
    openai.plan({ kind: 'json', body: { ...responseObject({ model: 'gpt-5-2025' }, ''), output: [call] } });
    const first = await client.responses.create({ model: 'gpt-5', input: 'weather in Lima?', tools: [weather] });
    expect(first.output).toEqual([call]);
    const second = await client.responses.create({
      model: 'gpt-5',
      previous_response_id: first.id,
      tools: [weather],
      input: [{ type: 'function_call_output', call_id: 'call_up1', output: '24°C' }],
    });
    expect(second.output_text).toBeDefined();
    // sent whole, without the upstream's item ids (it stored nothing: store false)
    expect(openai.last().body.input).toEqual([
      { role: 'user', content: 'weather in Lima?' },
      { type: 'function_call', call_id: 'call_up1', name: 'get_weather', arguments: '{"city":"Lima"}' },
      { type: 'function_call_output', call_id: 'call_up1', output: '24°C' },
    ]);
    expect(openai.last().body.tools).toEqual([weather]);
  });

  test('price-raising tools are dropped unless allowed; function tools go through', async () => {
    await client.responses.create({ model: 'gpt-5', input: 'hi', tools: [weather, { type: 'web_search' } as never] });
    expect(openai.last().body.tools).toEqual([weather]);
  });
});

describe('stored responses', () => {
  test('previous_response_id continues the conversation (sent whole: no upstream stores anything); GET and DELETE', async () => {
    const first = await client.responses.create({ model: 'gpt-5', input: 'My name is Ada.' });
    const second = await client.responses.create({
      model: 'gpt-5',
      input: 'What is my name?',
      previous_response_id: first.id,
    });
    const sent = openai.last().body.input;
    expect(sent.map((i: { role?: string; type?: string }) => i.role ?? i.type)).toEqual(['user', 'assistant', 'user']);
    expect(sent[1]).toEqual({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'output_text', text: 'Echo: My name is Ada.', annotations: [] }],
    });
    expect(openai.last().body.previous_response_id).toBeUndefined();
    expect((await client.responses.retrieve(second.id)).output_text).toBe(second.output_text);
    await client.responses.delete(second.id);
    const gone = await client.responses.retrieve(second.id).catch((e) => e);
    expect(gone.status).toBe(404);
  });

  test("another account's response is a 404; store: false keeps nothing", async () => {
    const mine = await client.responses.create({ model: 'gpt-5', input: 'secret' });
    const other = new OpenAI({ apiKey: (await gw.newKey()).secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    expect((await other.responses.retrieve(mine.id).catch((e) => e)).status).toBe(404);
    const cont = await other.responses
      .create({ model: 'gpt-5', input: 'x', previous_response_id: mine.id })
      .catch((e) => e);
    expect(cont.status).toBe(400);
    expect(cont.error.code).toBe('previous_response_not_found');
    const unstored = await client.responses.create({ model: 'claude-behind', input: 'forget me', store: false });
    expect((await client.responses.retrieve(unstored.id).catch((e) => e)).status).toBe(404);
  });

  test('a stored response lives responses.keep_days (30 by default): past that it is not found, cannot be continued, and is deleted', async () => {
    const old = await client.responses.create({ model: 'gpt-5', input: 'remember this' });
    const fresh = await client.responses.create({ model: 'gpt-5', input: 'and this' });
    await gw.app
      .db('responses')
      .where('id', old.id)
      .update({ created_at: Date.now() - 31 * 86_400_000 });
    expect((await client.responses.retrieve(old.id).catch((e) => e)).status).toBe(404);
    const cont = await client.responses
      .create({ model: 'gpt-5', input: 'x', previous_response_id: old.id })
      .catch((e) => e);
    expect(cont.error.code).toBe('previous_response_not_found');
    expect(await gw.app.responses.purge()).toBeGreaterThanOrEqual(1);
    expect(await gw.app.db('responses').where('id', old.id).first()).toBeUndefined();
    expect((await client.responses.retrieve(fresh.id)).id).toBe(fresh.id);
  });
  test('GET reads only the response, never the stored conversation (as large as a request may be)', async () => {
    const first = await client.responses.create({ model: 'gpt-5', input: 'keep me' });
    await gw.app.db('responses').where('id', first.id).update({ input: '[not JSON' }); // read, it would fail the GET
    const sql: string[] = [];
    const listen = (q: { sql: string }) => sql.push(q.sql);
    gw.app.db.on('query', listen);
    try {
      expect((await client.responses.retrieve(first.id)).output_text).toBe(first.output_text);
    } finally {
      gw.app.db.off('query', listen);
    }
    const reads = sql.filter((q) => /\bresponses\b/.test(q));
    expect(reads).toHaveLength(1);
    expect(reads[0]).not.toMatch(/\binput\b/);
  });

  test('a conversation longer than one request may be is kept, but continuing it is refused before its history is read', async () => {
    const first = await client.responses.create({ model: 'gpt-5', input: 'a'.repeat(60_000) });
    const second = await client.responses.create({
      model: 'gpt-5',
      input: 'b'.repeat(60_000),
      previous_response_id: first.id,
    });
    expect(openai.last().body.input).toHaveLength(3); // sent whole; with its answer, 240 kB: more than a client may send at once
    expect((await client.responses.retrieve(second.id)).id).toBe(second.id);
    const before = openai.requests.length;
    const third = await client.responses
      .create({ model: 'gpt-5', input: 'c', previous_response_id: second.id })
      .catch((e) => e);
    expect(third.status).toBe(400);
    expect(third.error).toMatchObject({ code: 'conversation_too_long', param: 'previous_response_id' });
    expect(openai.requests.length).toBe(before);
  });

  test("GET and DELETE count against the key's requests per minute, with its headers", async () => {
    const k = await gw.newKey({ rpmLimit: 3 });
    const c = new OpenAI({ apiKey: k.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const first = await c.responses.create({ model: 'gpt-5', input: 'count me' });
    const got = await c.responses.retrieve(first.id).withResponse();
    expect(got.response.headers.get('x-ratelimit-remaining-requests')).toBe('1');
    await c.responses.delete(first.id);
    const over = await c.responses.retrieve(first.id).catch((e) => e);
    expect(over.status).toBe(429);
    expect(over.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    expect(over.headers.get('retry-after')).toBeTruthy();
  });

  test('an account without money may still read and delete what it stored (neither calls an upstream)', async () => {
    const k = await gw.newKey({ rpmLimit: 10 }, 0);
    const id = 'resp_0123456789abcdef0123456789abcdef';
    const kept = { id, object: 'response', created_at: 1, status: 'completed', model: 'gpt-5', output: [] };
    await gw.app.db('responses').insert({
      id,
      account_id: k.accountId,
      model: 'gpt-5',
      input: '[]',
      response: JSON.stringify(kept),
      created_at: Date.now(),
    });
    const c = new OpenAI({ apiKey: k.secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    expect(await c.responses.retrieve(id)).toMatchObject({ id, status: 'completed' });
    expect(await c.responses.delete(id)).toMatchObject({ id, deleted: true });
    expect(await gw.app.db('responses').where('id', id).first()).toBeUndefined();
  });

  test('the bound is in bytes, as server.max_body_bytes is: two-byte characters count twice', async () => {
    const first = await client.responses.create({ model: 'gpt-5', input: 'é'.repeat(60_000) }); // 120 kB, as much again in its answer
    const before = openai.requests.length;
    const next = await client.responses
      .create({ model: 'gpt-5', input: 'and?', previous_response_id: first.id })
      .catch((e) => e);
    expect(next.status).toBe(400);
    expect(next.error).toMatchObject({ code: 'conversation_too_long', param: 'previous_response_id' });
    expect(openai.requests.length).toBe(before);
    expect((await client.responses.retrieve(first.id)).output_text).toBe(first.output_text);
  });

  test('a continued conversation the gateway cannot forward (an upstream answer nested too deep) is a 400, not a 500', async () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 70; i++) deep = [deep];
    const res = responseObject({ model: 'gpt-5-2025' }, 'ok');
    openai.plan({
      kind: 'json',
      body: {
        ...res,
        output: [
          ...res.output,
          {
            type: 'function_call',
            id: 'fc_1',
            call_id: 'call_1',
            name: 'f',
            arguments: '{}',
            status: 'completed',
            extra: deep,
          },
        ],
      },
    });
    const first = await client.responses.create({ model: 'gpt-5', input: 'hi' });
    const cont = await client.responses
      .create({ model: 'gpt-5', input: 'and?', previous_response_id: first.id })
      .catch((e) => e);
    expect(cont.status).toBe(400);
    expect(cont.error).toMatchObject({
      type: 'invalid_request_error',
      message: 'The request body is nested deeper than 64 levels',
    });
  });
});

describe('to an anthropic route, through chat', () => {
  test('a text answer, and its stream of typed events', async () => {
    const res = await client.responses.create({
      model: 'claude-behind',
      instructions: 'Be brief.',
      input: [{ role: 'user', content: 'hello' }],
      max_output_tokens: 200,
    });
    expect(res.output_text).toBe('Echo: hello');
    expect(res.usage).toMatchObject({ input_tokens: 10, output_tokens: 2, total_tokens: 12 });
    expect(claude.last().body).toMatchObject({
      model: 'claude-sonnet-4-5',
      system: 'Be brief.',
      max_tokens: 200,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
    });
    const types: string[] = [];
    const stream = client.responses.stream({ model: 'claude-behind', input: 'stream it' });
    stream.on('event', (e) => types.push(e.type));
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('Echo: stream it');
    expect(types.slice(0, 4)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    expect(types.slice(-4)).toEqual([
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
  });

  test('a tool round trip: function_call items out, function_call_output items back; other tool types dropped', async () => {
    claude.plan({
      kind: 'sse',
      events: streamEvents(
        message([{ type: 'tool_use', id: 'toolu_9', name: 'get_weather', input: { city: 'Rome' } }]),
      ),
    });
    const first = await client.responses
      .stream({ model: 'claude-behind', input: 'weather in Rome?', tools: [weather, { type: 'web_search' } as never] })
      .finalResponse();
    const call = first.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ call_id: 'toolu_9', name: 'get_weather', arguments: '{"city":"Rome"}' });
    expect(claude.last().body.tools.map((t: { name: string }) => t.name)).toEqual(['get_weather']);
    const second = await client.responses.create({
      model: 'claude-behind',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: 'toolu_9', output: '21°C' }],
      tools: [weather],
    });
    expect(second.status).toBe('completed');
    const sent = claude.last().body.messages;
    expect(sent[1]).toMatchObject({
      role: 'assistant',
      content: [{ type: 'tool_use', id: 'toolu_9', name: 'get_weather', input: { city: 'Rome' } }],
    });
    expect(sent[2]).toMatchObject({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: '21°C' }],
    });
  });
});

/** A raw Responses request. */
const post = (body: object, key: string) =>
  fetch(`${gw.url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });

const frames = eventFrames;

describe('streams through chat, event by event', () => {
  test('every event numbered from 0 in order; a text item then a function call item, each opened, filled and closed', async () => {
    claude.plan({
      kind: 'sse',
      events: streamEvents(
        message([
          { type: 'text', text: 'Checking now' },
          { type: 'tool_use', id: 'toolu_7', name: 'get_weather', input: { city: 'Oslo' } },
        ]),
      ),
    });
    const { secret } = await gw.newKey();
    const res = await post(
      { model: 'claude-behind', input: 'weather in Oslo?', tools: [weather], stream: true },
      secret,
    );
    const ev = frames(await res.text());
    expect(ev.every((e) => e.event === e.data.type)).toBe(true);
    expect(ev.map((e) => e.data.sequence_number)).toEqual(ev.map((_e, i) => i));
    const types = ev.map((e) => e.event);
    expect(types.filter((t) => !t.endsWith('.delta'))).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const text = ev.filter((e) => e.event === 'response.output_text.delta');
    expect(text.map((e) => e.data.delta).join('')).toBe('Checking now');
    expect(
      text.every(
        (e) => e.data.output_index === 0 && e.data.content_index === 0 && e.data.item_id === ev[2].data.item.id,
      ),
    ).toBe(true);
    const args = ev.filter((e) => e.event === 'response.function_call_arguments.delta');
    expect(args.map((e) => e.data.delta).join('')).toBe('{"city":"Oslo"}');
    expect(args.every((e) => e.data.output_index === 1)).toBe(true);
    const done = ev[ev.length - 1].data.response;
    expect(done).toMatchObject({ object: 'response', status: 'completed', model: 'claude-behind', store: true });
    expect(done.output[1]).toMatchObject({
      type: 'function_call',
      call_id: 'toolu_7',
      name: 'get_weather',
      arguments: '{"city":"Oslo"}',
      status: 'completed',
    });
    expect(ev[0].data.response.id).toBe(done.id);
  });

  test('a failure after the start ends the stream with an error event and response.failed, numbered on', async () => {
    const events = streamEvents(message([{ type: 'text', text: 'partial answer here' }])).slice(0, 4);
    claude.plan({
      kind: 'sse',
      events: [...events, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }],
    });
    const { secret } = await gw.newKey();
    const ev = frames(await (await post({ model: 'claude-behind', input: 'hi', stream: true }, secret)).text());
    expect(ev.map((e) => e.data.sequence_number)).toEqual(ev.map((_e, i) => i));
    const [error, failed] = ev.slice(-2);
    expect(error.data).toEqual({
      type: 'error',
      code: 'upstream_stream_error',
      message: 'The upstream provider failed during the stream: Overloaded',
      param: null,
      sequence_number: ev.length - 2,
    });
    expect(failed.data).toMatchObject({
      type: 'response.failed',
      response: {
        id: ev[0].data.response.id,
        object: 'response',
        status: 'failed',
        model: 'claude-behind',
        error: { code: 'server_error' },
      },
    });
    // the SDK raises it
    claude.plan({
      kind: 'sse',
      events: [...events, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }],
    });
    // the SDK rejects with the error event
    await expect(
      client.responses.stream({ model: 'claude-behind', input: 'hi' }).finalResponse(),
    ).rejects.toMatchObject({ type: 'error', message: 'The upstream provider failed during the stream: Overloaded' });
  });
});

describe('natively, what the gateway answers for', () => {
  test('the response shows the request’s own store, previous_response_id and max_output_tokens (the upstream got store false, no previous id, the allowance)', async () => {
    const first = await client.responses.create({ model: 'gpt-5', input: 'one' });
    expect(first).toMatchObject({ store: true, previous_response_id: null, max_output_tokens: null });
    expect(openai.last().body).toMatchObject({ store: false, max_output_tokens: 4096 });
    const second = await client.responses.create({
      model: 'gpt-5',
      input: 'two',
      previous_response_id: first.id,
      store: false,
      max_output_tokens: 50,
    });
    expect(second).toMatchObject({ store: false, previous_response_id: first.id, max_output_tokens: 50 });
    const events: any[] = [];
    const stream = client.responses.stream({ model: 'gpt-5', input: 'three', previous_response_id: first.id });
    stream.on('event', (e) => events.push(e));
    const final = await stream.finalResponse();
    expect(final).toMatchObject({ id: events[0].response.id, store: true, previous_response_id: first.id });
    expect(events[0].response).toMatchObject({ store: true, previous_response_id: first.id });
  });

  test('what is stored at the provider is refused: a conversation, a stored prompt, an item reference (nothing is sent)', async () => {
    const { secret } = await gw.newKey();
    const before = openai.requests.length;
    for (const [param, extra] of [
      ['conversation', { conversation: 'conv_123' }],
      ['prompt', { prompt: { id: 'pmpt_123', version: '2' } }],
      [
        'input',
        {
          input: [
            { type: 'item_reference', id: 'msg_123' },
            { role: 'user', content: 'hi' },
          ],
        },
      ],
    ] as const) {
      const res = await post({ model: 'gpt-5', input: 'hi', ...extra }, secret);
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error).toMatchObject({
        type: 'invalid_request_error',
        code: 'invalid_value',
        param,
      });
    }
    expect(openai.requests.length).toBe(before);
  });

  test("an item reference without its type (the SDK's ItemReference: an id, and no role or type) is refused natively and through chat, before tokens or money are spent", async () => {
    const k = await gw.newKey({ tpmLimit: 3_000 });
    const sent = () => openai.requests.length + claude.requests.length;
    const before = sent();
    for (const model of ['gpt-5', 'claude-behind']) {
      for (const ref of [{ id: 'msg_123' }, { id: 'msg_123', content: 'hi' }]) {
        const res = await post(
          { model, max_output_tokens: 2_000, input: [{ role: 'user', content: 'hi' }, ref] },
          k.secret,
        );
        expect({ model, ref, status: res.status }).toEqual({ model, ref, status: 400 });
        expect(((await res.json()) as any).error).toMatchObject({
          type: 'invalid_request_error',
          code: 'invalid_value',
          param: 'input',
          message: expect.stringContaining('input[1]'),
        });
      }
    }
    expect(sent()).toBe(before);
    await gw.settled();
    expect(await gw.app.db('usage_records').where('account_id', k.accountId)).toEqual([]);
    // none of the key's 3,000 tokens a minute went to the refusals; and a message with an id of its own is a message
    const ok = await post(
      {
        model: 'gpt-5',
        max_output_tokens: 2_000,
        input: [
          { id: 'msg_9', role: 'assistant', content: 'earlier' },
          { role: 'user', content: 'hi' },
        ],
      },
      k.secret,
    );
    expect(ok.status).toBe(200);
  });
});

describe('money', () => {
  const MODEL = { image_tokens: 4_800, file_tokens: 300_000 };

  test('max_output_tokens (or the model’s default) is the allowance, lowered to what the money covers; reasoning tokens are output', async () => {
    const poor = await gw.newKey({}, 5_000);
    const body = { model: 'gpt-5', input: 'hello', max_output_tokens: 100_000 };
    expect((await post(body, poor.secret)).status).toBe(200);
    // gpt-5: input 1.25 µUSD a token, output 10
    const allowance = Math.floor(
      (5_000 * 1_000_000 -
        promptBound(inspect({ ...body, input: [{ role: 'user', content: 'hello' }] }), MODEL) * 1_250_000) /
        10_000_000,
    );
    expect(allowance).toBeGreaterThan(100);
    expect(openai.last().body.max_output_tokens).toBe(allowance);
  });

  test('the hold covers the instructions, the tools and a continued conversation’s earlier turns', async () => {
    const big = 'x'.repeat(20_000); // up to 20,000 prompt tokens: 25,000 µUSD at 1.25 µUSD a token
    for (const extra of [
      { instructions: big },
      { tools: [{ ...weather, description: big }] },
      { text: { format: { type: 'json_schema', name: 's', schema: { type: 'object', description: big } } } },
    ]) {
      const k = await gw.newKey({}, 20_000);
      const before = openai.requests.length;
      const res = await post({ model: 'gpt-5', input: 'hi', max_output_tokens: 16, ...extra }, k.secret);
      expect({ field: Object.keys(extra)[0], status: res.status }).toEqual({
        field: Object.keys(extra)[0],
        status: 429,
      });
      expect(openai.requests.length).toBe(before);
    }
    // an account that paid for a long first turn cannot continue it with less than the whole conversation costs
    const k = await gw.newKey({}, 30_000);
    const first = await post({ model: 'gpt-5', input: big, max_output_tokens: 16 }, k.secret);
    expect(first.status).toBe(200);
    const id = ((await first.json()) as any).id;
    const before = openai.requests.length;
    const next = await post(
      { model: 'gpt-5', input: 'and?', previous_response_id: id, max_output_tokens: 16 },
      k.secret,
    );
    expect(next.status).toBe(429);
    expect(openai.requests.length).toBe(before);
  });
});

describe('tools through chat', () => {
  test("a namespace's functions are chat functions named <namespace>__<name>; a call of one comes back with its namespace", async () => {
    const agents = {
      type: 'namespace',
      name: 'multi_agent_v1',
      description: 'Sub-agents.',
      tools: [
        {
          type: 'function',
          name: 'close_agent',
          description: 'Close one.',
          parameters: { type: 'object', properties: { target: { type: 'string' } } },
          strict: false,
        },
      ],
    };
    claude.plan({
      kind: 'json',
      body: message([
        { type: 'tool_use', id: 'toolu_ns', name: 'multi_agent_v1__close_agent', input: { target: 'a1' } },
      ]),
    });
    const res = await client.responses.create({
      model: 'claude-behind',
      input: 'close a1',
      tools: [weather, agents as never, { type: 'web_search' } as never],
    });
    expect(claude.last().body.tools.map((t: { name: string }) => t.name)).toEqual([
      'get_weather',
      'multi_agent_v1__close_agent',
    ]);
    expect(res.output[0]).toMatchObject({
      type: 'function_call',
      call_id: 'toolu_ns',
      namespace: 'multi_agent_v1',
      name: 'close_agent',
      arguments: '{"target":"a1"}',
    });
    await client.responses.create({
      model: 'claude-behind',
      tools: [agents as never],
      input: [
        { role: 'user', content: 'close a1' },
        res.output[0] as never,
        { type: 'function_call_output', call_id: 'toolu_ns', output: 'closed' },
      ],
    });
    expect(claude.last().body.messages[1].content[0]).toMatchObject({
      type: 'tool_use',
      id: 'toolu_ns',
      name: 'multi_agent_v1__close_agent',
    });
  });
});

describe('to a gemini route, through chat', () => {
  test('a function call out and its output back; cached and thinking tokens in the usage and the bill; a stream', async () => {
    gemini.plan({
      kind: 'json',
      body: geminiResponse(
        [{ functionCall: { name: 'get_weather', args: { city: 'Kyiv' } } }],
        'STOP',
        usageOf(40, 6, { cachedContentTokenCount: 30, thoughtsTokenCount: 4 }),
      ),
    });
    const first = await client.responses.create({
      model: 'gemini-behind',
      input: 'weather in Kyiv?',
      tools: [weather],
      max_output_tokens: 300,
    });
    const call = first.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Kyiv"}' });
    expect(first.usage).toMatchObject({
      input_tokens: 40,
      input_tokens_details: { cached_tokens: 30 },
      output_tokens: 10,
      output_tokens_details: { reasoning_tokens: 4 },
    });
    expect(gemini.last().body.generationConfig.maxOutputTokens).toBe(300);
    // 10 fresh × 0.3 + 30 cached × 0.03 + 10 × 2.5 = 3 + 0.9 + 25 = 28.9 → 29 µUSD
    expect(await lastRecord()).toMatchObject({
      endpoint: 'responses',
      model: 'gemini-behind',
      prompt_tokens: 40,
      cached_tokens: 30,
      completion_tokens: 10,
      reasoning_tokens: 4,
      cost_micros: 29,
    });
    await client.responses.create({
      model: 'gemini-behind',
      previous_response_id: first.id,
      tools: [weather],
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '-2°C' }],
    });
    const parts = gemini.last().body.contents.flatMap((c: { parts: object[] }) => c.parts);
    expect(parts).toContainEqual(
      expect.objectContaining({ functionCall: { name: 'get_weather', args: { city: 'Kyiv' } } }),
    );
    expect(JSON.stringify(parts)).toContain('-2°C');
    const final = await client.responses.stream({ model: 'gemini-behind', input: 'stream it' }).finalResponse();
    expect(final.output_text).toBe('Echo: stream it');
  });
});
