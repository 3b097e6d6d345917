/**
 * The /v1 API end to end: the official openai SDK → the gateway → a fake OpenAI-compatible upstream on loopback.
 * Runs on the database in DATABASE_URL (SQLite by default, MariaDB in `make test`'s second pass).
 */
import OpenAI from 'openai';
import { FakeOpenAI, chatStreamEvents } from '../fakes/openaiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';
import { setKeyState } from '../../src/services/admin';
import { setKeyEnabled } from '../../src/accounts/keys';

let upstream: FakeOpenAI;
let gw: TestGateway;
let key: string;
let client: OpenAI;

const config = (url: string) => `
routing: { breaker_failures: 1000 }   # these tests fail the upstream on purpose, often
providers:
  up: { type: openai, base_url: "${url}", api_key: "\${FAKE_UPSTREAM_KEY}" }
  slow: { type: openai, base_url: "${url}", timeouts: { first_byte_ms: 300 } }
  local: { type: mock }
models:
  - { id: gpt-4o-mini, kind: chat, owned_by: openai, price: { input: 0.15, output: 0.6 }, routes: [ { provider: up, model: upstream-chat } ] }
  - { id: davinci-002, kind: completion, routes: [ { provider: up } ] }
  - { id: text-embedding-3-small, kind: embedding, routes: [ { provider: up } ] }
  - { id: mock-chat, kind: chat, routes: [ { provider: local } ] }
  - { id: slow-chat, kind: chat, routes: [ { provider: slow } ] }
`;

beforeAll(async () => {
  upstream = await new FakeOpenAI().start();
  gw = await startGateway(config(upstream.url), { ...process.env, FAKE_UPSTREAM_KEY: 'sk-upstream-secret-credential' });
  key = (await gw.newKey()).secret;
  client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

describe('chat completions', () => {
  test('non-streaming: the answer comes back with the model id the client asked for', async () => {
    const res = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hello there' }],
    });
    expect(res.object).toBe('chat.completion');
    expect(res.model).toBe('gpt-4o-mini');
    expect(res.choices[0].message.content).toBe('Echo: hello there');
    expect(res.usage).toMatchObject({
      prompt_tokens: 10,
      total_tokens: 13,
      prompt_tokens_details: { cached_tokens: 0 },
    });
    const sent = upstream.last();
    expect(sent.body.model).toBe('upstream-chat');
    expect(sent.headers.authorization).toBe('Bearer sk-upstream-secret-credential');
  });

  test('fields the contract does not list reach the upstream untouched', async () => {
    await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'developer', content: 'be brief' },
        { role: 'user', content: 'hi' },
      ],
      temperature: 0.2,
      seed: 7,
      // @ts-expect-error a field newer than the SDK
      brand_new_option: { nested: [1, 2] },
    });
    expect(upstream.last().body).toMatchObject({ temperature: 0.2, seed: 7, brand_new_option: { nested: [1, 2] } });
  });

  test('streaming: chunks arrive in order, end with [DONE], and no usage chunk unless asked', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'one two three' }],
      stream: true,
    });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Echo: one two three');
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'gpt-4o-mini')).toBe(true);
    expect(chunks.every((c) => c.choices.length === 1 && !('usage' in c))).toBe(true);
    expect(chunks[chunks.length - 1].choices[0].finish_reason).toBe('stop');
    // the gateway always asks the upstream for usage (billing needs it)
    expect(upstream.last().body.stream_options).toEqual({ include_usage: true });
  });

  test('streaming with include_usage: the usage chunk comes last with choices []', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'count me' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    const last = chunks[chunks.length - 1];
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({ prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 });
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  test('streaming is forwarded as it arrives, not buffered', async () => {
    // The upstream sends two chunks and then goes silent: the client must get them while the upstream is still open.
    upstream.plan({ kind: 'stall', events: chatStreamEvents('x', ['early bird'], false, {}).slice(0, 2) });
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    let got = '';
    for await (const c of stream) {
      got += c.choices[0]?.delta.content ?? '';
      if (got === 'early bird') break;
    }
    expect(got).toBe('early bird');
  });

  test('a tool-call round trip: streamed tool call reassembled by the SDK, then the tool result sent back', async () => {
    const base = { id: 'chatcmpl-t', object: 'chat.completion.chunk', created: 1, model: 'x' };
    upstream.plan({
      kind: 'sse',
      events: [
        {
          ...base,
          choices: [
            {
              index: 0,
              delta: {
                role: 'assistant',
                content: null,
                tool_calls: [
                  { index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } },
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
              delta: { tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] },
              finish_reason: null,
            },
          ],
        },
        { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
      ],
    });
    const tools: OpenAI.Chat.ChatCompletionTool[] = [
      {
        type: 'function',
        function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
      },
    ];
    const runner = client.chat.completions.stream({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'weather in Paris?' }],
      tools,
      tool_choice: 'auto',
    });
    const final = await runner.finalChatCompletion();
    const call = final.choices[0].message.tool_calls![0] as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
    expect(call).toMatchObject({
      id: 'call_1',
      type: 'function',
      function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
    });
    expect(final.choices[0].finish_reason).toBe('tool_calls');
    expect(upstream.last().body.tools).toEqual(tools);

    const next = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'user', content: 'weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp_c":21}' },
      ],
      tools,
    });
    expect(next.choices[0].message.content).toBe('Echo: weather in Paris?');
    expect(upstream.last().body.messages[2]).toEqual({
      role: 'tool',
      tool_call_id: 'call_1',
      content: '{"temp_c":21}',
    });
  });

  test('an error after the stream started ends it with an error event that the SDK raises', async () => {
    const events = chatStreamEvents('x', ['partial'], false, {}).slice(0, 2);
    upstream.plan({
      kind: 'sse',
      events: [...events, { error: { message: 'upstream exploded', type: 'server_error' } }],
      done: false,
    });
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
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

  test.each([['null'], ['5'], ['{"id":"x","object":"chat.completion.chunk"}']])(
    'an upstream event that is not a chunk (%s) ends the stream with an error event, after what came before',
    async (bad) => {
      upstream.plan({
        kind: 'sse',
        events: [...chatStreamEvents('x', ['fine'], false, {}).slice(0, 2), `data: ${bad}\n\n`],
      });
      const stream = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
      });
      let text = '';
      const error = await (async () => {
        for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
      })().catch((e) => e);
      expect(text).toBe('fine');
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect(String(error.message)).toContain('The upstream provider failed during the stream');
    },
  );

  test('a client that disconnects mid-stream aborts the upstream request', async () => {
    upstream.plan({ kind: 'stall', events: chatStreamEvents('x', ['first'], false, {}).slice(0, 2) });
    const before = upstream.clientAborts;
    const ctrl = new AbortController();
    const stream = await client.chat.completions.create(
      { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], stream: true },
      { signal: ctrl.signal },
    );
    for await (const c of stream) {
      if (c.choices[0]?.delta.content === 'first') break; // breaking out of the loop aborts the HTTP request
    }
    await waitFor(() => upstream.clientAborts > before);
    expect(upstream.clientAborts).toBe(before + 1);
  });
});

describe('completions, embeddings, models', () => {
  test('legacy completions, streaming and not', async () => {
    const res = await client.completions.create({ model: 'davinci-002', prompt: 'Once upon a time' });
    expect(res).toMatchObject({
      object: 'text_completion',
      model: 'davinci-002',
      choices: [{ text: ' and then: Once upon a time', finish_reason: 'stop' }],
    });
    const stream = await client.completions.create({ model: 'davinci-002', prompt: 'Hi', stream: true });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.text ?? '';
    expect(text).toBe(' and then: Hi');
  });

  test('legacy completions on a chat model: the prompt is sent as one user message', async () => {
    const res = await client.completions.create({ model: 'gpt-4o-mini', prompt: 'Say hi', max_tokens: 20 });
    expect(res).toMatchObject({
      object: 'text_completion',
      model: 'gpt-4o-mini',
      choices: [{ index: 0, text: 'Echo: Say hi', finish_reason: 'stop' }],
    });
    expect(upstream.last()).toMatchObject({
      path: '/v1/chat/completions',
      body: { messages: [{ role: 'user', content: 'Say hi' }], max_tokens: 20 },
    });
  });

  test('embeddings as floats and as base64 (what the SDK asks for by default)', async () => {
    const floats = await client.embeddings.create({
      model: 'text-embedding-3-small',
      input: ['a', 'b'],
      encoding_format: 'float',
    });
    expect(floats.data.map((d) => d.embedding)).toEqual([
      [0.5, -0.25, 0.125],
      [0.5, -0.25, 1.125],
    ]);
    expect(floats.model).toBe('text-embedding-3-small');
    // the SDK sends base64 when no format is set, and decodes it back into numbers
    const viaBase64 = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'a' });
    expect(upstream.last().body.encoding_format).toBe('base64');
    expect(viaBase64.data[0].embedding).toEqual([0.5, -0.25, 0.125]);
  });

  test('embeddings from a provider that only gives floats are encoded to base64 when asked', async () => {
    const raw = await fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'text-embedding-3-small', input: 'x', encoding_format: 'base64' }),
    }).then((r) => r.json() as Promise<any>);
    const b = Buffer.from(raw.data[0].embedding, 'base64');
    expect([b.readFloatLE(0), b.readFloatLE(4), b.readFloatLE(8)]).toEqual([0.5, -0.25, 0.125]);
  });

  test("an upstream embeddings answer that holds no embeddings is the upstream's failure (502), not ours (500)", async () => {
    for (const body of [
      { object: 'list', data: null },
      { object: 'list', data: [null] },
      { object: 'list', data: [{ embedding: 7 }] },
    ]) {
      upstream.plan({ kind: 'json', body });
      const e = await client.embeddings
        .create({ model: 'text-embedding-3-small', input: 'x', encoding_format: 'float' })
        .catch((x) => x);
      expect(e).toMatchObject({ status: 502, code: 'upstream_unavailable' });
    }
  });

  test('the model list and one model', async () => {
    const models = [];
    for await (const m of client.models.list()) models.push(m);
    expect(models.map((m) => m.id)).toEqual([
      'gpt-4o-mini',
      'davinci-002',
      'text-embedding-3-small',
      'mock-chat',
      'slow-chat',
    ]);
    expect(models[0]).toEqual({ id: 'gpt-4o-mini', object: 'model', created: expect.any(Number), owned_by: 'openai' });
    expect(await client.models.retrieve('mock-chat')).toMatchObject({ id: 'mock-chat', object: 'model' });
  });

  test('the mock provider answers without any upstream', async () => {
    const res = await client.chat.completions.create({
      model: 'mock-chat',
      messages: [{ role: 'user', content: 'ping' }],
    });
    expect(res.choices[0].message.content).toBe('This is a mock answer. You said: ping');
    expect(res.usage!.completion_tokens).toBeGreaterThan(0);
    const again = await client.chat.completions.create({
      model: 'mock-chat',
      messages: [{ role: 'user', content: 'ping' }],
    });
    expect(again).toEqual(res);
  });
});

describe('errors, each in the OpenAI shape', () => {
  const raw = (path: string, init: RequestInit & { key?: string | null } = {}) =>
    fetch(`${gw.url}${path}`, {
      ...init,
      headers: {
        ...(init.key === null ? {} : { authorization: `Bearer ${init.key ?? key}` }),
        ...(init.body ? { 'content-type': 'application/json' } : {}),
        ...(init.headers as Record<string, string>),
      },
    });

  async function expectError(res: Response, status: number, error: Record<string, unknown>) {
    expect(res.status).toBe(status);
    expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    const body = (await res.json()) as any;
    // OpenAI's four fields, and `reason` only where the test expects one
    const fields = ['code', 'message', 'param', ...('reason' in error ? ['reason'] : []), 'type'];
    expect(Object.keys(body.error).sort()).toEqual(fields);
    expect(body.error).toMatchObject(error);
    return body.error;
  }

  test('401 Invalid API key: missing, malformed, unknown and disabled keys', async () => {
    for (const k of [null, 'not-a-key', 'sk-short', `sk-${'x'.repeat(48)}`]) {
      // no key, no cause: nothing is said of keys that do not exist
      await expectError(await raw('/v1/models', { key: k }), 401, {
        message: 'Invalid API key',
        type: 'authentication_error',
        code: 'invalid_api_key',
      });
    }
    // disabled through the gateway's own services: refused at once
    const { secret, keyId } = await gw.newKey();
    expect((await raw('/v1/models', { key: secret })).status).toBe(200);
    await setKeyState(gw.app.db, (c) => gw.app.keys.changed(c), keyId, false);
    await expectError(await raw('/v1/models', { key: secret }), 401, {
      message: 'Invalid API key',
      code: 'invalid_api_key',
      reason: 'key_disabled',
    });
    const sdk = new OpenAI({ apiKey: secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    await expect(sdk.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    // disabled by another process (here: straight in the database): refused once the key cache's 2 s are up
    // (the loop gives it 5 s, far below the 30 s an entry may live while changes are announced through Redis)
    const other = await gw.newKey();
    expect((await raw('/v1/models', { key: other.secret })).status).toBe(200);
    await setKeyEnabled(gw.app.db, other.keyId, false);
    const since = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - since < 5000) {
      status = (await raw('/v1/models', { key: other.secret })).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe(401);
  });

  test('403 when the key lacks the scope of the endpoint', async () => {
    const { secret } = await gw.newKey({ scopes: ['embeddings'] });
    const e = await expectError(
      await raw('/v1/chat/completions', {
        key: secret,
        method: 'POST',
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }),
      }),
      403,
      { type: 'permission_error', code: 'insufficient_scope' },
    );
    expect(e.message).toContain("'chat'");
    expect(
      (
        await raw('/v1/embeddings', {
          key: secret,
          method: 'POST',
          body: JSON.stringify({ model: 'text-embedding-3-small', input: 'x' }),
        })
      ).status,
    ).toBe(200);
  });

  test('400 Model not found for an unknown model and for one outside the key allow-list; the list shows only allowed models', async () => {
    await expectError(
      await raw('/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ model: 'gpt-9', messages: [{ role: 'user', content: 'x' }] }),
      }),
      400,
      { message: 'Model not found: gpt-9', type: 'invalid_request_error', code: 'model_not_found', param: 'model' },
    );
    const { secret } = await gw.newKey({ models: ['mock-chat'] });
    await expectError(
      await raw('/v1/chat/completions', {
        key: secret,
        method: 'POST',
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }),
      }),
      400,
      { message: 'Model not found: gpt-4o-mini' },
    );
    const list = (await (await raw('/v1/models', { key: secret })).json()) as any;
    expect(list.data.map((m: { id: string }) => m.id)).toEqual(['mock-chat']);
    await expectError(await raw('/v1/models/gpt-4o-mini', { key: secret }), 404, {
      message: 'Model not found: gpt-4o-mini',
      code: 'model_not_found',
    });
  });

  test('400 naming the field for values outside the bounds of the spec', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ temperature: 3 }, 'temperature'],
      [{ temperature: -0.1 }, 'temperature'],
      [{ top_p: 1.5 }, 'top_p'],
      [{ frequency_penalty: 2.5 }, 'frequency_penalty'],
      [{ presence_penalty: -1 }, 'presence_penalty'],
      [{ stream: 'yes' }, 'stream'],
      [{ messages: [] }, 'messages'],
      [{ messages: [{ role: 'bot', content: 'x' }] }, 'messages[0].role'],
    ];
    for (const [patch, param] of cases) {
      const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], ...patch };
      const e = await expectError(
        await raw('/v1/chat/completions', { method: 'POST', body: JSON.stringify(body) }),
        400,
        { type: 'invalid_request_error', param },
      );
      expect(e.message).toContain(param);
    }
    await expectError(
      await raw('/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ messages: [{ role: 'user', content: 'x' }] }),
      }),
      400,
      {
        param: 'model',
        code: 'missing_required_parameter',
      },
    );
    const sdkError = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], temperature: 5 })
      .catch((e) => e);
    expect(sdkError).toBeInstanceOf(OpenAI.BadRequestError);
    expect(sdkError.param).toBe('temperature');
  });

  test('a union (string or array) that the value matches by type reports what is wrong inside it', async () => {
    const e = await expectError(
      await raw('/v1/embeddings', {
        method: 'POST',
        body: JSON.stringify({ model: 'text-embedding-3-small', input: [] }),
      }),
      400,
      { param: 'input', code: 'invalid_value' },
    );
    expect(e.message).toBe("Invalid value for 'input': must NOT have fewer than 1 items");
  });

  test('malformed JSON 400, unknown path 404, wrong method 405, wrong media type 415, oversized body 413', async () => {
    await expectError(await raw('/v1/chat/completions', { method: 'POST', body: '{"model": ' }), 400, {
      code: 'invalid_json',
    });
    await expectError(await raw('/v1/nope'), 404, { code: 'unknown_url' });
    await expectError(await raw('/v1/models', { method: 'DELETE' }), 405, { code: 'method_not_allowed' });
    await expectError(
      await raw('/v1/chat/completions', { method: 'POST', body: 'hello', headers: { 'content-type': 'text/plain' } }),
      415,
      {},
    );
    const huge = JSON.stringify({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'x'.repeat(11 * 1024 * 1024) }],
    });
    await expectError(await raw('/v1/chat/completions', { method: 'POST', body: huge }), 413, {
      code: 'request_too_large',
    });
  });

  test('502 when the upstream is down, answers 5xx or stalls; the message names no URL or credential', async () => {
    const plans = [
      {
        kind: 'json' as const,
        status: 500,
        body: { error: { message: 'boom at http://internal:9999 with sk-upstream-secret-credential' } },
      },
      { kind: 'reset' as const },
    ];
    for (const p of plans) {
      upstream.plan(p);
      const e = await expectError(
        await raw('/v1/chat/completions', {
          method: 'POST',
          body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }),
        }),
        502,
        { type: 'upstream_error' },
      );
      expect(JSON.stringify(e)).not.toMatch(/127\.0\.0\.1|internal|sk-upstream|http:/);
    }
    // a stall before the first byte, past the route's time-to-first-byte limit
    upstream.plan({ kind: 'hang' });
    await expectError(
      await raw('/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ model: 'slow-chat', messages: [{ role: 'user', content: 'x' }] }),
      }),
      502,
      { type: 'upstream_error', message: 'The upstream provider is unavailable (timed out)' },
    );
    upstream.plan({ kind: 'json', status: 503, body: {} });
    const sdkError = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(sdkError).toBeInstanceOf(OpenAI.InternalServerError);
    expect(sdkError.status).toBe(502);
  });

  test('an upstream 429 is a 429 upstream_rate_limited; an upstream 400 is passed through as a 400', async () => {
    upstream.plan({ kind: 'json', status: 429, body: { error: { message: 'slow down' } } });
    await expectError(
      await raw('/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }),
      }),
      429,
      { code: 'upstream_rate_limited' },
    );
    upstream.plan({
      kind: 'json',
      status: 400,
      body: { error: { message: "Invalid 'logit_bias': too many entries", type: 'invalid_request_error' } },
    });
    await expectError(
      await raw('/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }),
      }),
      400,
      { message: "Invalid 'logit_bias': too many entries" },
    );
  });

  test('a model of the wrong kind for the endpoint is a 400 naming its kind', async () => {
    const e = await expectError(
      await raw('/v1/embeddings', { method: 'POST', body: JSON.stringify({ model: 'gpt-4o-mini', input: 'x' }) }),
      400,
      { code: 'model_not_supported', param: 'model' },
    );
    expect(e.message).toContain('chat model');
  });

  test('every response carries an x-request-id, successful or not, streaming or not', async () => {
    const ids = new Set<string>();
    for (const res of [
      await raw('/v1/models'),
      await raw('/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ model: 'mock-chat', messages: [{ role: 'user', content: 'x' }], stream: true }),
      }),
      await raw('/v1/nope'),
    ]) {
      ids.add(res.headers.get('x-request-id')!);
      await res.text();
    }
    expect(ids.size).toBe(3);
    const { data, response } = await client.models.list().withResponse();
    expect(data).toBeDefined();
    expect(response.headers.get('x-request-id')).toMatch(/^req_/);
  });
});

async function waitFor(cond: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
}
