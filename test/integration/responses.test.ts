/**
 * POST /v1/responses, GET and DELETE /v1/responses/{id} (OpenAI's Responses API) with the official openai SDK:
 * natively to a fake OpenAI upstream and translated through chat to a fake Anthropic upstream. Texts, streams with
 * their typed events, tool round trips, stored responses per account (previous_response_id, another account's id
 * is a 404, store: false keeps nothing), and tools a route cannot serve. On the database in DATABASE_URL.
 */
import OpenAI from 'openai';
import { API_KEY, FakeAnthropic, message, streamEvents } from '../fakes/anthropicUpstream';
import { FakeOpenAI, responseObject } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';

let openai: FakeOpenAI;
let claude: FakeAnthropic;
let gw: TestGateway;
let client: OpenAI;
let accountId: number;

beforeAll(async () => {
  openai = await new FakeOpenAI().start();
  claude = await new FakeAnthropic().start();
  gw = await startGateway(
    `
limits: { rpm: 0, tpm: 0 }
server: { max_body_bytes: 200000 }
providers:
  up: { type: openai, base_url: "${openai.url}" }
  claude: { type: anthropic, base_url: "${claude.url}", api_key: "\${FAKE_ANTHROPIC_KEY}" }
models:
  - { id: gpt-5, kind: chat, price: { input: 1.25, output: 10, cached_input: 0.125 }, routes: [ { provider: up, model: gpt-5-2025 } ] }
  - { id: claude-behind, kind: chat, price: { input: 3, output: 15 }, routes: [ { provider: claude, model: claude-sonnet-4-5 } ] }
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
});

async function lastRecord() {
  await gw.settled();
  return gw.app.db('usage_records').where('account_id', accountId).orderBy('id', 'desc').first();
}

const weather: OpenAI.Responses.FunctionTool = { type: 'function', name: 'get_weather', description: 'Weather now', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: false };

describe('to an openai route, natively', () => {
  test('responses.create: sent as written with the upstream model, the allowance and store false; usage with cached and reasoning tokens billed', async () => {
    const res = await client.responses.create({ model: 'gpt-5', input: 'hello', instructions: 'Be brief.', max_output_tokens: 300, reasoning: { effort: 'low' } });
    expect(res.output_text).toBe('Echo: hello');
    expect(res.model).toBe('gpt-5');
    expect(openai.last().path).toBe('/v1/responses');
    expect(openai.last().body).toMatchObject({ model: 'gpt-5-2025', input: [{ role: 'user', content: 'hello' }], instructions: 'Be brief.', max_output_tokens: 300, store: false, stream: false, reasoning: { effort: 'low' } });
    // 8 fresh × 1.25 + 4 cached × 0.125 + 6 × 10 = 10 + 0.5 + 60 = 70.5 → 71 µUSD
    expect(await lastRecord()).toMatchObject({ endpoint: 'responses', counted: 'upstream', prompt_tokens: 12, cached_tokens: 4, completion_tokens: 6, reasoning_tokens: 2, cost_micros: 71 });
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

  test('price-raising tools are dropped unless allowed; function tools go through', async () => {
    await client.responses.create({ model: 'gpt-5', input: 'hi', tools: [weather, { type: 'web_search' } as never] });
    expect(openai.last().body.tools).toEqual([weather]);
  });
});

describe('stored responses', () => {
  test('previous_response_id continues the conversation (sent whole: no upstream stores anything); GET and DELETE', async () => {
    const first = await client.responses.create({ model: 'gpt-5', input: 'My name is Ada.' });
    const second = await client.responses.create({ model: 'gpt-5', input: 'What is my name?', previous_response_id: first.id });
    const sent = openai.last().body.input;
    expect(sent.map((i: { role?: string; type?: string }) => i.role ?? i.type)).toEqual(['user', 'assistant', 'user']);
    expect(sent[1]).toEqual({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Echo: My name is Ada.', annotations: [] }] });
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
    const cont = await other.responses.create({ model: 'gpt-5', input: 'x', previous_response_id: mine.id }).catch((e) => e);
    expect(cont.status).toBe(400);
    expect(cont.error.code).toBe('previous_response_not_found');
    const unstored = await client.responses.create({ model: 'claude-behind', input: 'forget me', store: false });
    expect((await client.responses.retrieve(unstored.id).catch((e) => e)).status).toBe(404);
  });

  test('a stored response lives responses.keep_days (30 by default): past that it is not found, cannot be continued, and is deleted', async () => {
    const old = await client.responses.create({ model: 'gpt-5', input: 'remember this' });
    const fresh = await client.responses.create({ model: 'gpt-5', input: 'and this' });
    await gw.app.db('responses').where('id', old.id).update({ created_at: Date.now() - 31 * 86_400_000 });
    expect((await client.responses.retrieve(old.id).catch((e) => e)).status).toBe(404);
    const cont = await client.responses.create({ model: 'gpt-5', input: 'x', previous_response_id: old.id }).catch((e) => e);
    expect(cont.error.code).toBe('previous_response_not_found');
    expect(await gw.app.responses.purge()).toBeGreaterThanOrEqual(1);
    expect(await gw.app.db('responses').where('id', old.id).first()).toBeUndefined();
    expect((await client.responses.retrieve(fresh.id)).id).toBe(fresh.id);
  });
  test('a conversation longer than one request may be is kept, but continuing it is refused before its history is read', async () => {
    const first = await client.responses.create({ model: 'gpt-5', input: 'a'.repeat(60_000) });
    const second = await client.responses.create({ model: 'gpt-5', input: 'b'.repeat(60_000), previous_response_id: first.id });
    expect(openai.last().body.input).toHaveLength(3); // sent whole; with its answer, 240 kB: more than a client may send at once
    expect((await client.responses.retrieve(second.id)).id).toBe(second.id);
    const before = openai.requests.length;
    const third = await client.responses.create({ model: 'gpt-5', input: 'c', previous_response_id: second.id }).catch((e) => e);
    expect(third.status).toBe(400);
    expect(third.error).toMatchObject({ code: 'conversation_too_long', param: 'previous_response_id' });
    expect(openai.requests.length).toBe(before);
  });

  test('a continued conversation the gateway cannot forward (an upstream answer nested too deep) is a 400, not a 500', async () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 70; i++) deep = [deep];
    const res = responseObject({ model: 'gpt-5-2025' }, 'ok');
    openai.plan({ kind: 'json', body: { ...res, output: [...res.output, { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'f', arguments: '{}', status: 'completed', extra: deep }] } });
    const first = await client.responses.create({ model: 'gpt-5', input: 'hi' });
    const cont = await client.responses.create({ model: 'gpt-5', input: 'and?', previous_response_id: first.id }).catch((e) => e);
    expect(cont.status).toBe(400);
    expect(cont.error).toMatchObject({ type: 'invalid_request_error', message: 'The request body is nested deeper than 64 levels' });
  });
});

describe('to an anthropic route, through chat', () => {
  test('a text answer, and its stream of typed events', async () => {
    const res = await client.responses.create({ model: 'claude-behind', instructions: 'Be brief.', input: [{ role: 'user', content: 'hello' }], max_output_tokens: 200 });
    expect(res.output_text).toBe('Echo: hello');
    expect(res.usage).toMatchObject({ input_tokens: 10, output_tokens: 2, total_tokens: 12 });
    expect(claude.last().body).toMatchObject({ model: 'claude-sonnet-4-5', system: 'Be brief.', max_tokens: 200, messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }] });
    const types: string[] = [];
    const stream = client.responses.stream({ model: 'claude-behind', input: 'stream it' });
    stream.on('event', (e) => types.push(e.type));
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('Echo: stream it');
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(types.slice(-4)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
  });

  test('a tool round trip: function_call items out, function_call_output items back; other tool types dropped', async () => {
    claude.plan({ kind: 'sse', events: streamEvents(message([{ type: 'tool_use', id: 'toolu_9', name: 'get_weather', input: { city: 'Rome' } }])) });
    const first = await client.responses.stream({ model: 'claude-behind', input: 'weather in Rome?', tools: [weather, { type: 'web_search' } as never] }).finalResponse();
    const call = first.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ call_id: 'toolu_9', name: 'get_weather', arguments: '{"city":"Rome"}' });
    expect(claude.last().body.tools.map((t: { name: string }) => t.name)).toEqual(['get_weather']);
    const second = await client.responses.create({ model: 'claude-behind', previous_response_id: first.id, input: [{ type: 'function_call_output', call_id: 'toolu_9', output: '21°C' }], tools: [weather] });
    expect(second.status).toBe('completed');
    const sent = claude.last().body.messages;
    expect(sent[1]).toMatchObject({ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_9', name: 'get_weather', input: { city: 'Rome' } }] });
    expect(sent[2]).toMatchObject({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: '21°C' }] });
  });
});
