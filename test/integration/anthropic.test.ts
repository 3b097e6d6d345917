/**
 * The anthropic provider end to end: the official openai SDK → the gateway → a fake Anthropic Messages API on
 * loopback. Runs on the database in DATABASE_URL (SQLite by default, MariaDB in `make test`'s second pass).
 */
import OpenAI from 'openai';
import { API_KEY, FakeAnthropic, errorBody, message, sse, streamEvents, type Block } from '../fakes/anthropicUpstream';
import { startGateway, type TestGateway } from '../helpers/app';

let upstream: FakeAnthropic;
let gw: TestGateway;
let client: OpenAI;

// The breaker is not under test here: the error tests fail the same route many times in a row.
const config = (url: string) => `
routing: { breaker_failures: 1000 }
providers:
  claude: { type: anthropic, base_url: "${url}", api_key: "\${FAKE_ANTHROPIC_KEY}", headers: { anthropic-beta: "test-beta-2025-01-01" } }
  slow: { type: anthropic, base_url: "${url}", api_key: "\${FAKE_ANTHROPIC_KEY}", timeouts: { first_byte_ms: 300 } }
  local: { type: mock }
models:
  - { id: claude-test, kind: chat, owned_by: anthropic, max_output_tokens: 1234, routes: [ { provider: claude, model: claude-sonnet-4-5 } ] }
  - { id: claude-fallback, kind: chat, routes: [ { provider: claude, model: claude-haiku-4-5 }, { provider: local, priority: 1 } ] }
  - { id: claude-slow, kind: chat, routes: [ { provider: slow, model: claude-haiku-4-5 } ] }
`;

beforeAll(async () => {
  upstream = await new FakeAnthropic().start();
  gw = await startGateway(config(upstream.url), { ...process.env, FAKE_ANTHROPIC_KEY: API_KEY });
  client = new OpenAI({ apiKey: (await gw.newKey()).secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

const tools: OpenAI.Chat.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather now',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
  { type: 'function', function: { name: 'get_time' } },
];

async function collect(stream: AsyncIterable<OpenAI.Chat.ChatCompletionChunk>) {
  const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
  for await (const c of stream) chunks.push(c);
  return chunks;
}

describe('text answers', () => {
  test('non-streaming: the request is translated to a Messages request and the answer back', async () => {
    const res = await client.chat.completions.create({
      model: 'claude-test',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'developer', content: [{ type: 'text', text: 'Answer in English.' }] },
        { role: 'user', content: 'hello' },
        { role: 'user', content: [{ type: 'text', text: 'there' }] },
      ],
      stop: 'END',
      temperature: 1.5,
      top_p: 0.9,
      user: 'user-42',
      seed: 7,
      frequency_penalty: 0.5,
      response_format: { type: 'json_object' },
    });
    expect(res).toMatchObject({
      id: expect.stringMatching(/^chatcmpl-msg_fake\d+$/),
      object: 'chat.completion',
      model: 'claude-test',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Echo: hello there', refusal: null },
          logprobs: null,
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 },
    });
    expect(Math.abs(res.created - Date.now() / 1000)).toBeLessThan(60);
    const sent = upstream.last();
    expect(sent.path).toBe('/v1/messages');
    expect(sent.headers).toMatchObject({
      'x-api-key': API_KEY,
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'test-beta-2025-01-01',
    });
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.body).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 1234, // the model's max_output_tokens: the client set none
      system: 'You are terse.\n\nAnswer in English.',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'hello' },
            { type: 'text', text: 'there' },
          ],
        },
      ],
      stop_sequences: ['END'],
      temperature: 1, // Anthropic's range is 0..1
      top_p: 0.9,
      metadata: { user_id: 'user-42' },
    });
  });

  test('streaming: role first, the text in pieces, one id, finish_reason last, no usage chunk unless asked', async () => {
    const chunks = await collect(
      await client.chat.completions.create({
        model: 'claude-test',
        messages: [{ role: 'user', content: 'one two three' }],
        stream: true,
        max_completion_tokens: 50,
        stop: ['x', 'y'],
      }),
    );
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Echo: one two three');
    expect(chunks.length).toBeGreaterThan(4);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(new Set(chunks.map((c) => c.created)).size).toBe(1);
    expect(chunks[0].id).toMatch(/^chatcmpl-msg_fake/);
    expect(
      chunks.every(
        (c) =>
          c.object === 'chat.completion.chunk' &&
          c.model === 'claude-test' &&
          c.choices.length === 1 &&
          !('usage' in c),
      ),
    ).toBe(true);
    expect(chunks[chunks.length - 1].choices[0]).toEqual({
      index: 0,
      delta: {},
      logprobs: null,
      finish_reason: 'stop',
    });
    expect(chunks.slice(0, -1).every((c) => c.choices[0].finish_reason === null)).toBe(true);
    expect(upstream.last().body).toMatchObject({ stream: true, max_tokens: 50, stop_sequences: ['x', 'y'] });
    expect(upstream.last().body.stream_options).toBeUndefined();
  });

  test('streaming is forwarded as it arrives, not buffered; a client that leaves aborts the upstream request', async () => {
    const events = streamEvents(message([{ type: 'text', text: 'early bird and the rest' }]));
    upstream.plan({ kind: 'stall', events: events.slice(0, 5) }); // message_start, block start, ping, "early", " bird"
    const before = upstream.clientAborts;
    const stream = await client.chat.completions.create({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    let got = '';
    for await (const c of stream) {
      got += c.choices[0]?.delta.content ?? '';
      if (got === 'early bird') break;
    }
    expect(got).toBe('early bird');
    await waitFor(() => upstream.clientAborts > before);
    expect(upstream.clientAborts).toBe(before + 1);
  });

  test('legacy completions on a Claude model go through the chat translation', async () => {
    const res = await client.completions.create({ model: 'claude-test', prompt: 'Say hi', max_tokens: 20 });
    expect(res).toMatchObject({
      object: 'text_completion',
      model: 'claude-test',
      choices: [{ text: 'Echo: Say hi', finish_reason: 'stop' }],
    });
    expect(upstream.last().body).toMatchObject({
      max_tokens: 20,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hi' }] }],
    });
  });
});

describe('tools', () => {
  const answer = (): Block[] => [
    { type: 'text', text: 'Let me check both.' },
    { type: 'tool_use', id: 'toolu_01A', name: 'get_weather', input: { city: 'Paris', units: { temp: 'C' } } },
    { type: 'tool_use', id: 'toolu_01B', name: 'get_time', input: {} },
  ];

  test('two tool calls streamed after a text block, reassembled by the SDK; then the tool results sent back', async () => {
    upstream.plan({
      kind: 'sse',
      events: streamEvents(message(answer(), { usage: { input_tokens: 30, output_tokens: 40 } })),
    });
    const runner = client.chat.completions.stream({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'Weather and time in Paris?' }],
      tools,
      tool_choice: 'auto',
      parallel_tool_calls: false,
    });
    const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
    runner.on('chunk', (c) => chunks.push(c));
    const final = await runner.finalChatCompletion();
    const msg = final.choices[0].message;
    expect(final.choices[0].finish_reason).toBe('tool_calls');
    expect(msg.content).toBe('Let me check both.');
    expect(msg.tool_calls).toEqual([
      {
        id: 'toolu_01A',
        type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"Paris","units":{"temp":"C"}}' },
      },
      { id: 'toolu_01B', type: 'function', function: { name: 'get_time', arguments: '{}' } },
    ]);
    // Indexes count tool calls only (the text block is Anthropic's block 0); id and name on the first fragment only.
    const fragments = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(new Set(fragments.map((f) => f.index))).toEqual(new Set([0, 1]));
    expect(fragments.filter((f) => f.id)).toEqual([
      { index: 0, id: 'toolu_01A', type: 'function', function: { name: 'get_weather', arguments: '' } },
      { index: 1, id: 'toolu_01B', type: 'function', function: { name: 'get_time', arguments: '' } },
    ]);
    expect(fragments.filter((f) => !f.id).every((f) => f.function?.name === undefined && f.type === undefined)).toBe(
      true,
    );

    const sent = upstream.last().body;
    expect(sent.tools).toEqual([
      {
        name: 'get_weather',
        description: 'Weather now',
        input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
      { name: 'get_time', input_schema: { type: 'object', properties: {} } },
    ]);
    expect(sent.tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });

    const next = await client.chat.completions.create({
      model: 'claude-test',
      messages: [
        { role: 'user', content: 'Weather and time in Paris?' },
        msg as OpenAI.Chat.ChatCompletionAssistantMessageParam,
        { role: 'tool', tool_call_id: 'toolu_01A', content: '{"temp_c":21}' },
        { role: 'tool', tool_call_id: 'toolu_01B', content: [{ type: 'text', text: '14:05' }] },
        { role: 'user', content: 'Thanks!' },
      ],
      tools,
      tool_choice: 'required',
    });
    expect(next.choices[0].message.content).toBe('Echo: Thanks!');
    const back = upstream.last().body;
    expect(back.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather and time in Paris?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me check both.' },
          { type: 'tool_use', id: 'toolu_01A', name: 'get_weather', input: { city: 'Paris', units: { temp: 'C' } } },
          { type: 'tool_use', id: 'toolu_01B', name: 'get_time', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_01A', content: '{"temp_c":21}' },
          { type: 'tool_result', tool_use_id: 'toolu_01B', content: [{ type: 'text', text: '14:05' }] },
          { type: 'text', text: 'Thanks!' },
        ],
      },
    ]);
    expect(back.tool_choice).toEqual({ type: 'any' });
  });

  test('non-streaming tool calls: content null, arguments as JSON; tool_choice none and a named tool', async () => {
    upstream.plan({ kind: 'json', body: message(answer().slice(1)) });
    const res = await client.chat.completions.create({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'Weather?' }],
      tools,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    expect(res.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: {
        content: null,
        tool_calls: [
          {
            id: 'toolu_01A',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Paris","units":{"temp":"C"}}' },
          },
          { id: 'toolu_01B', type: 'function', function: { name: 'get_time', arguments: '{}' } },
        ],
      },
    });
    expect(upstream.last().body.tool_choice).toEqual({ type: 'tool', name: 'get_weather' });
    await client.chat.completions.create({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'x' }],
      tools,
      tool_choice: 'none',
    });
    expect(upstream.last().body.tool_choice).toEqual({ type: 'none' });
  });

  test('tool-call arguments that are not a JSON object are refused with a 400, before anything is sent', async () => {
    const count = upstream.requests.length;
    const e = await client.chat.completions
      .create({
        model: 'claude-test',
        messages: [
          { role: 'user', content: 'x' },
          {
            role: 'assistant',
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_time', arguments: '{"broken' } }],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'ok' },
        ],
      })
      .catch((err) => err);
    expect(e).toBeInstanceOf(OpenAI.BadRequestError);
    expect(e.message).toContain('messages[1].tool_calls[0].function.arguments is not valid JSON');
    expect(upstream.requests.length).toBe(count);
  });
});

describe('finish reasons and usage', () => {
  const cases: [string, string][] = [
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['max_tokens', 'length'],
    ['tool_use', 'tool_calls'],
    ['refusal', 'content_filter'],
    ['pause_turn', 'stop'],
  ];

  test.each(cases)('stop_reason %s → finish_reason %s (non-streaming and streaming)', async (stop, finish) => {
    const content: Block[] =
      stop === 'tool_use'
        ? [{ type: 'tool_use', id: 'toolu_x', name: 'get_time', input: {} }]
        : [{ type: 'text', text: 'some words' }];
    const msg = message(content, { stop_reason: stop, stop_sequence: stop === 'stop_sequence' ? 'END' : null });
    upstream.plan({ kind: 'json', body: msg }, { kind: 'sse', events: streamEvents(msg) });
    const res = await client.chat.completions.create({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'x' }],
      tools,
    });
    expect(res.choices[0].finish_reason).toBe(finish);
    const chunks = await collect(
      await client.chat.completions.create({
        model: 'claude-test',
        messages: [{ role: 'user', content: 'x' }],
        tools,
        stream: true,
      }),
    );
    expect(chunks.map((c) => c.choices[0].finish_reason).filter(Boolean)).toEqual([finish]);
  });

  test('usage counts cache writes and reads as prompt tokens; cached_tokens = cache reads', async () => {
    const usage = {
      input_tokens: 7,
      cache_creation_input_tokens: 100,
      cache_read_input_tokens: 2000,
      output_tokens: 12,
    };
    const expected = {
      prompt_tokens: 2107,
      completion_tokens: 12,
      total_tokens: 2119,
      prompt_tokens_details: { cached_tokens: 2000 },
    };
    const msg = message([{ type: 'text', text: 'cached answer' }], { usage });
    upstream.plan(
      { kind: 'json', body: msg },
      { kind: 'sse', events: streamEvents(msg) },
      { kind: 'sse', events: streamEvents(msg) },
    );

    const res = await client.chat.completions.create({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(res.usage).toEqual(expected);

    const withUsage = await collect(
      await client.chat.completions.create({
        model: 'claude-test',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    const last = withUsage[withUsage.length - 1];
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual(expected);
    expect(last.id).toBe(withUsage[0].id);
    expect(withUsage.slice(0, -1).every((c) => c.usage === null && c.choices.length === 1)).toBe(true);
    expect(withUsage[withUsage.length - 2].choices[0].finish_reason).toBe('stop');

    const without = await collect(
      await client.chat.completions.create({
        model: 'claude-test',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
      }),
    );
    expect(without.every((c) => c.choices.length === 1 && !('usage' in c))).toBe(true);
    expect(without.map((c) => c.choices[0].delta.content ?? '').join('')).toBe('cached answer');
  });
});

describe('errors', () => {
  const ask = (model = 'claude-test') =>
    client.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);

  test('an error event mid-stream: the text before it was delivered, then the SDK raises', async () => {
    const events = streamEvents(message([{ type: 'text', text: 'partial answer that never ends' }])).slice(0, 5);
    upstream.plan({
      kind: 'sse',
      events: [...events, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }],
    });
    const stream = await client.chat.completions.create({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    const got: string[] = [];
    await expect(
      (async () => {
        for await (const c of stream) got.push(c.choices[0]?.delta.content ?? '');
      })(),
    ).rejects.toThrow(/upstream/i);
    expect(got.join('')).toBe('partial answer');
  });

  test('a stream that ends without message_stop is an error, not a silent success', async () => {
    const events = streamEvents(message([{ type: 'text', text: 'cut short' }])).slice(0, -1);
    upstream.plan({ kind: 'sse', events });
    const stream = await client.chat.completions.create({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    await expect(collect(stream)).rejects.toThrow(/upstream/i);
  });

  test('529 overloaded and 500 are a 502; with a second route, the next route answers', async () => {
    for (const [status, type] of [
      [529, 'overloaded_error'],
      [500, 'api_error'],
    ] as const) {
      upstream.plan({ kind: 'json', status, body: errorBody(type, 'Overloaded at internal-host-7') });
      const e = await ask();
      expect(e).toBeInstanceOf(OpenAI.InternalServerError);
      expect(e.status).toBe(502);
      expect(e.error).toMatchObject({
        type: 'upstream_error',
        message: `The upstream provider is unavailable (HTTP ${status})`,
      });
      expect(JSON.stringify(e.error)).not.toContain('internal-host');
    }
    upstream.plan({ kind: 'json', status: 529, body: errorBody('overloaded_error', 'Overloaded') });
    const res = await client.chat.completions.create({
      model: 'claude-fallback',
      messages: [{ role: 'user', content: 'ping' }],
    });
    expect(res.choices[0].message.content).toBe('This is a mock answer. You said: ping');
    expect(upstream.last().body.model).toBe('claude-haiku-4-5');
  });

  test("400 invalid_request_error is a 400 with Anthropic's message; 429 is a 429", async () => {
    upstream.plan({
      kind: 'json',
      status: 400,
      body: errorBody('invalid_request_error', 'prompt is too long: 250000 tokens > 200000 maximum'),
    });
    const bad = await ask('claude-fallback'); // not retried on the next route: the request is at fault
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect(bad.error).toMatchObject({
      type: 'invalid_request_error',
      message: 'prompt is too long: 250000 tokens > 200000 maximum',
    });
    upstream.plan({
      kind: 'json',
      status: 429,
      body: errorBody('rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit'),
    });
    const limited = await ask();
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect(limited.status).toBe(429);
  });

  test('an upstream that stalls before the first byte is a 502 timed out; a reset is a 502', async () => {
    upstream.plan({ kind: 'hang' });
    const slow = await ask('claude-slow');
    expect(slow.status).toBe(502);
    expect(slow.error.message).toBe('The upstream provider is unavailable (timed out)');
    upstream.plan({ kind: 'reset' });
    expect((await ask()).status).toBe(502);
  });

  test('n > 1 is refused with a 400 naming n, without calling the upstream', async () => {
    const count = upstream.requests.length;
    const e = await client.chat.completions
      .create({ model: 'claude-test', messages: [{ role: 'user', content: 'x' }], n: 2 })
      .catch((err) => err);
    expect(e).toBeInstanceOf(OpenAI.BadRequestError);
    expect(e.message).toMatch(/'n' must be 1/);
    const streamed = await client.chat.completions
      .create({ model: 'claude-test', messages: [{ role: 'user', content: 'x' }], n: 2, stream: true })
      .catch((err) => err);
    expect(streamed).toBeInstanceOf(OpenAI.BadRequestError);
    expect(upstream.requests.length).toBe(count);
  });
});

describe('images', () => {
  test('a data URL becomes a base64 image block, another URL a url image block', async () => {
    const png = Buffer.from('89504e470d0a1a0a', 'hex').toString('base64');
    await client.chat.completions.create({
      model: 'claude-test',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${png}`, detail: 'high' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          ],
        },
      ],
    });
    expect(upstream.last().body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
        ],
      },
    ]);
  });
});

test('the fake frames events exactly as Anthropic does', () => {
  expect(sse({ type: 'ping' })).toBe('event: ping\ndata: {"type":"ping"}\n\n');
});

async function waitFor(cond: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
}
