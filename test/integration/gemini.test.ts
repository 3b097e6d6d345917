/**
 * The gemini provider end to end: the official openai SDK → the gateway → a fake Gemini API on loopback.
 * Runs on the database in DATABASE_URL (SQLite by default, MariaDB in `make test`'s second pass).
 */
import OpenAI from 'openai';
import {
  FakeGemini,
  geminiError,
  geminiResponse,
  textStreamEvents,
  usageOf,
  fakeVector,
} from '../fakes/geminiUpstream';
import { startGateway, type TestGateway } from '../helpers/app';

const GEMINI_KEY = 'AIza-fake-gemini-secret-credential';

let upstream: FakeGemini;
let gw: TestGateway;
let client: OpenAI;

// The breaker is not under test here: the error tests fail the same route several times in a row.
const config = (url: string) => `
routing: { breaker_failures: 1000 }
providers:
  g: { type: gemini, base_url: "${url}", api_key: "\${FAKE_GEMINI_KEY}" }
  badkey: { type: gemini, base_url: "${url}", api_key: "not-the-key" }
models:
  - { id: gemini-chat, kind: chat, owned_by: google, routes: [ { provider: g, model: gemini-2.5-flash } ] }
  - { id: gemini-embed, kind: embedding, routes: [ { provider: g, model: gemini-embedding-001 } ] }
  - { id: gemini-badkey, kind: chat, routes: [ { provider: badkey, model: gemini-2.5-flash } ] }
`;

beforeAll(async () => {
  upstream = await new FakeGemini(GEMINI_KEY).start();
  gw = await startGateway(config(upstream.url), { ...process.env, FAKE_GEMINI_KEY: GEMINI_KEY });
  client = new OpenAI({ apiKey: (await gw.newKey()).secret, baseURL: `${gw.url}/v1`, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

async function collect(stream: AsyncIterable<OpenAI.Chat.ChatCompletionChunk>) {
  const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
  for await (const c of stream) chunks.push(c);
  return chunks;
}

const text = (chunks: OpenAI.Chat.ChatCompletionChunk[]) =>
  chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');

describe('text answers', () => {
  test('non-streaming: the request is translated to generateContent and the answer back', async () => {
    const res = await client.chat.completions.create({
      model: 'gemini-chat',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'developer', content: [{ type: 'text', text: 'Answer in English.' }] },
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: 'hi!' },
        { role: 'user', content: 'how are' },
        { role: 'user', content: [{ type: 'text', text: ' you' }] },
      ],
      temperature: 0.3,
      top_p: 0.9,
      max_completion_tokens: 100,
      stop: ['END'],
      n: 1,
      seed: 7,
      presence_penalty: 0.5,
      frequency_penalty: 0.25,
    });
    expect(res).toMatchObject({
      id: 'chatcmpl-fakeResp1',
      object: 'chat.completion',
      model: 'gemini-chat',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Echo: how are you', refusal: null },
          logprobs: null,
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 },
    });
    expect(res.choices[0].message.tool_calls).toBeUndefined();
    expect(Math.abs(res.created - Date.now() / 1000)).toBeLessThan(60);

    const sent = upstream.last();
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(sent.headers['x-goog-api-key']).toBe(GEMINI_KEY);
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.path).not.toContain('key=');
    expect(sent.path).not.toContain(GEMINI_KEY);
    expect(sent.body).toEqual({
      systemInstruction: { parts: [{ text: 'You are terse.' }, { text: 'Answer in English.' }] },
      contents: [
        { role: 'user', parts: [{ text: 'hello' }] },
        { role: 'model', parts: [{ text: 'hi!' }] },
        { role: 'user', parts: [{ text: 'how are' }, { text: ' you' }] }, // consecutive user turns merged
      ],
      generationConfig: {
        temperature: 0.3,
        topP: 0.9,
        maxOutputTokens: 100,
        stopSequences: ['END'],
        candidateCount: 1,
        seed: 7,
        presencePenalty: 0.5,
        frequencyPenalty: 0.25,
      },
    });
  });

  test('max_tokens is used when max_completion_tokens is absent; without either, the model allowance the hold covers', async () => {
    await client.chat.completions.create({
      model: 'gemini-chat',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 33,
      stop: 'STOP!',
    });
    expect(upstream.last().body.generationConfig).toEqual({ maxOutputTokens: 33, stopSequences: ['STOP!'] });
    await client.chat.completions.create({ model: 'gemini-chat', messages: [{ role: 'user', content: 'x' }] });
    // the gateway caps the output at what it held for the request: the model's max_output_tokens (default 4096)
    expect(upstream.last().body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'x' }] }],
      generationConfig: { maxOutputTokens: 4096 },
    });
  });

  test('response_format json_schema becomes responseMimeType and responseJsonSchema', async () => {
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { a: { type: 'integer' } },
      required: ['a'],
      additionalProperties: false,
    };
    upstream.plan({ kind: 'json', body: geminiResponse([{ text: '{"a":1}' }], 'STOP', usageOf(5, 3)) });
    const res = await client.chat.completions.create({
      model: 'gemini-chat',
      messages: [{ role: 'user', content: 'give me a' }],
      response_format: { type: 'json_schema', json_schema: { name: 'A', schema, strict: true } },
    });
    expect(res.choices[0].message.content).toBe('{"a":1}');
    const { $schema: _s, ...rest } = schema;
    expect(upstream.last().body.generationConfig).toEqual({
      responseMimeType: 'application/json',
      responseJsonSchema: rest,
      maxOutputTokens: 4096,
    });
  });

  test('streaming: a role chunk, the text as it comes, a finish chunk, one id; no usage chunk unless asked', async () => {
    const chunks = await collect(
      await client.chat.completions.create({
        model: 'gemini-chat',
        messages: [{ role: 'user', content: 'one two three' }],
        stream: true,
      }),
    );
    expect(upstream.last().path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    expect(upstream.last().headers['x-goog-api-key']).toBe(GEMINI_KEY);
    expect(chunks[0].choices[0]).toMatchObject({
      index: 0,
      delta: { role: 'assistant', content: '' },
      finish_reason: null,
    });
    expect(text(chunks)).toBe('Echo: one two three');
    expect(chunks.map((c) => c.choices[0].delta.content).slice(1, -1)).toEqual(['Echo:', ' one', ' two', ' three']);
    expect(chunks[chunks.length - 1].choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
    expect(new Set(chunks.map((c) => c.id))).toEqual(new Set(['chatcmpl-fakeResp1']));
    expect(new Set(chunks.map((c) => c.created)).size).toBe(1);
    expect(
      chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'gemini-chat' && c.choices.length === 1),
    ).toBe(true);
    expect(chunks.every((c) => !('usage' in c))).toBe(true);
  });

  test('streaming with include_usage: the usage chunk comes last, with reasoning and cached tokens', async () => {
    const events = textStreamEvents(['Thought ', 'hard.'], 'STOP');
    (events[1] as any).usageMetadata = usageOf(12, 2, { thoughtsTokenCount: 20, cachedContentTokenCount: 8 });
    upstream.plan({ kind: 'sse', events });
    const chunks = await collect(
      await client.chat.completions.create({
        model: 'gemini-chat',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    const last = chunks[chunks.length - 1];
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({
      prompt_tokens: 12,
      completion_tokens: 22,
      total_tokens: 34,
      prompt_tokens_details: { cached_tokens: 8 },
      completion_tokens_details: { reasoning_tokens: 20 },
    });
    expect(last.id).toBe(chunks[0].id);
    expect(text(chunks)).toBe('Thought hard.');
    expect(chunks.slice(0, -1).every((c) => c.usage === null || c.usage === undefined)).toBe(true);
  });

  test('non-streaming usage counts thinking tokens as completion tokens', async () => {
    upstream.plan({
      kind: 'json',
      body: geminiResponse([{ text: 'ok' }], 'STOP', usageOf(7, 1, { thoughtsTokenCount: 40 })),
    });
    const res = await client.chat.completions.create({
      model: 'gemini-chat',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(res.usage).toEqual({
      prompt_tokens: 7,
      completion_tokens: 41,
      total_tokens: 48,
      completion_tokens_details: { reasoning_tokens: 40 },
    });
  });

  test('a legacy completion on a gemini chat model goes through generateContent', async () => {
    const res = await client.completions.create({ model: 'gemini-chat', prompt: 'Say hi', max_tokens: 20 });
    expect(res).toMatchObject({
      object: 'text_completion',
      model: 'gemini-chat',
      choices: [{ text: 'Echo: Say hi', finish_reason: 'stop' }],
    });
    expect(upstream.last().body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'Say hi' }] }],
      generationConfig: { maxOutputTokens: 20 },
    });
  });

  test('a client that disconnects mid-stream closes the upstream request', async () => {
    upstream.plan({ kind: 'stall', events: [geminiResponse([{ text: 'first' }])] });
    const before = upstream.clientAborts;
    const stream = await client.chat.completions.create({
      model: 'gemini-chat',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    for await (const c of stream) {
      if (c.choices[0]?.delta.content === 'first') break;
    }
    await waitFor(() => upstream.clientAborts > before);
    expect(upstream.clientAborts).toBe(before + 1);
  });
});

describe('tools', () => {
  const tools: OpenAI.Chat.ChatCompletionTool[] = [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'Weather now',
        parameters: {
          $schema: 'http://json-schema.org/draft-07/schema#',
          type: 'object',
          properties: { city: { type: 'string' } },
          required: ['city'],
          additionalProperties: false,
        },
        strict: true,
      },
    },
    { type: 'function', function: { name: 'get_time' } },
  ];

  test('two function calls in one streamed answer, reassembled by the SDK, then the results sent back', async () => {
    upstream.plan({
      kind: 'sse',
      events: [
        geminiResponse([{ text: 'Let me check.' }], undefined, { promptTokenCount: 30, totalTokenCount: 30 }),
        geminiResponse(
          [
            { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'c2lnbmF0dXJlLTE=' },
            { functionCall: { name: 'get_time', args: { tz: 'Europe/Paris' } } },
          ],
          'STOP',
          usageOf(30, 12),
        ),
      ],
    });
    const runner = client.chat.completions.stream({
      model: 'gemini-chat',
      messages: [{ role: 'user', content: 'weather and time in Paris?' }],
      tools,
      tool_choice: 'auto',
    });
    const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
    runner.on('chunk', (c) => chunks.push(c));
    const final = await runner.finalChatCompletion();

    const sent = upstream.last().body;
    expect(sent.tools).toEqual([
      {
        functionDeclarations: [
          {
            name: 'get_weather',
            description: 'Weather now',
            parametersJsonSchema: {
              type: 'object',
              properties: { city: { type: 'string' } },
              required: ['city'],
              additionalProperties: false,
            },
          },
          { name: 'get_time' },
        ],
      },
    ]);
    expect(sent.toolConfig).toEqual({ functionCallingConfig: { mode: 'AUTO' } });

    const deltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(deltas.map((d) => d.index)).toEqual([0, 1]);
    expect(deltas.every((d) => d.type === 'function' && /^call_/.test(d.id!))).toBe(true);

    const message = final.choices[0].message;
    expect(final.choices[0].finish_reason).toBe('tool_calls');
    expect(message.content).toBe('Let me check.');
    const calls = message.tool_calls as OpenAI.Chat.ChatCompletionMessageFunctionToolCall[];
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatchObject({
      type: 'function',
      function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
    });
    expect(calls[1]).toMatchObject({
      type: 'function',
      function: { name: 'get_time', arguments: '{"tz":"Europe/Paris"}' },
    });
    expect(calls[0].id).toMatch(/^call_[A-Za-z0-9_-]+$/);
    expect(calls[0].id).not.toBe(calls[1].id);

    // The round trip: the tool results go back as functionResponse parts named after the calls they answer.
    const next = await client.chat.completions.create({
      model: 'gemini-chat',
      messages: [
        { role: 'user', content: 'weather and time in Paris?' },
        {
          role: 'assistant',
          content: message.content,
          tool_calls: calls.map(({ id, type, function: f }) => ({
            id,
            type,
            function: { name: f.name, arguments: f.arguments },
          })),
        },
        { role: 'tool', tool_call_id: calls[1].id, content: 'noon' },
        { role: 'tool', tool_call_id: calls[0].id, content: '{"temp_c":21}' },
      ],
      tools,
    });
    expect(next.choices[0].message.content).toBe('Echo: ');
    expect(upstream.last().body.contents).toEqual([
      { role: 'user', parts: [{ text: 'weather and time in Paris?' }] },
      {
        role: 'model',
        parts: [
          { text: 'Let me check.' },
          // the signature Gemini sent with the first call goes back with it
          { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'c2lnbmF0dXJlLTE=' },
          { functionCall: { name: 'get_time', args: { tz: 'Europe/Paris' } } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'get_time', response: { content: 'noon' } } },
          { functionResponse: { name: 'get_weather', response: { temp_c: 21 } } },
        ],
      },
    ]);
    expect(upstream.last().body.toolConfig).toBeUndefined();
  });

  test('tool_choice: required → ANY, a named function → ANY with allowedFunctionNames, none → NONE', async () => {
    const cases: [OpenAI.Chat.ChatCompletionToolChoiceOption, object][] = [
      ['required', { mode: 'ANY' }],
      [
        { type: 'function', function: { name: 'get_time' } },
        { mode: 'ANY', allowedFunctionNames: ['get_time'] },
      ],
      ['none', { mode: 'NONE' }],
    ];
    for (const [choice, config] of cases) {
      await client.chat.completions.create({
        model: 'gemini-chat',
        messages: [{ role: 'user', content: 'x' }],
        tools,
        tool_choice: choice,
      });
      expect(upstream.last().body.toolConfig).toEqual({ functionCallingConfig: config });
    }
  });

  test('a tool message that answers no earlier tool call is a 400', async () => {
    const before = upstream.requests.length;
    const e = await client.chat.completions
      .create({
        model: 'gemini-chat',
        messages: [
          { role: 'user', content: 'x' },
          { role: 'tool', tool_call_id: 'call_nope', content: '1' },
        ],
      })
      .catch((x) => x);
    expect(e).toBeInstanceOf(OpenAI.BadRequestError);
    expect(e.message).toContain("tool_call_id 'call_nope'");
    expect(upstream.requests.length).toBe(before);
  });
});

describe('finish reasons', () => {
  const call = { functionCall: { name: 'get_time', args: {} } };
  const cases: [string, unknown, string][] = [
    ['STOP', geminiResponse([{ text: 'done' }], 'STOP', usageOf(3, 1)), 'stop'],
    ['MAX_TOKENS', geminiResponse([{ text: 'cut sh' }], 'MAX_TOKENS', usageOf(3, 2)), 'length'],
    [
      'SAFETY',
      {
        candidates: [
          {
            finishReason: 'SAFETY',
            index: 0,
            safetyRatings: [{ category: 'HARM_CATEGORY_DANGEROUS_CONTENT', probability: 'HIGH', blocked: true }],
          },
        ],
        usageMetadata: usageOf(3, 0),
      },
      'content_filter',
    ],
    ['RECITATION', geminiResponse([{ text: 'To be' }], 'RECITATION', usageOf(3, 2)), 'content_filter'],
    ['a function call', geminiResponse([call], 'STOP', usageOf(3, 5)), 'tool_calls'],
    [
      'a blocked prompt',
      {
        promptFeedback: { blockReason: 'PROHIBITED_CONTENT' },
        usageMetadata: { promptTokenCount: 3, totalTokenCount: 3 },
      },
      'content_filter',
    ],
  ];

  test.each(cases)('%s, not streaming', async (_name, answer, expected) => {
    upstream.plan({ kind: 'json', body: answer });
    const res = await client.chat.completions.create({
      model: 'gemini-chat',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(res.choices).toHaveLength(1);
    expect(res.choices[0].finish_reason).toBe(expected);
    if (expected === 'content_filter' && _name !== 'RECITATION') expect(res.choices[0].message.content).toBe('');
    if (expected === 'tool_calls') expect(res.choices[0].message.content).toBeNull();
  });

  test.each(cases)('%s, streaming', async (_name, answer, expected) => {
    upstream.plan({ kind: 'sse', events: [answer] });
    const chunks = await collect(
      await client.chat.completions.create({
        model: 'gemini-chat',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    const finishes = chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).filter(Boolean);
    expect(finishes).toEqual([expected]);
    expect(chunks[chunks.length - 1]).toMatchObject({ choices: [], usage: { prompt_tokens: 3 } });
  });
});

describe('errors', () => {
  const ask = () =>
    client.chat.completions
      .create({ model: 'gemini-chat', messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);

  test('upstream 500 and 503 are 502s; a broken connection too', async () => {
    upstream.plan({ kind: 'json', status: 500, body: geminiError(500, 'INTERNAL', 'An internal error has occurred.') });
    let e = await ask();
    expect(e).toBeInstanceOf(OpenAI.InternalServerError);
    expect(e.status).toBe(502);
    expect(e.error).toMatchObject({ type: 'upstream_error', code: 'upstream_unavailable' });
    upstream.plan({
      kind: 'json',
      status: 503,
      body: geminiError(503, 'UNAVAILABLE', 'The model is overloaded. Please try again later.'),
    });
    e = await ask();
    expect(e.status).toBe(502);
    upstream.plan({ kind: 'reset' });
    e = await ask();
    expect(e.status).toBe(502);
  });

  test("a 400 INVALID_ARGUMENT is a 400 with Gemini's message, streaming or not", async () => {
    const message = '* GenerateContentRequest.generation_config.max_output_tokens: must be positive';
    upstream.plan({ kind: 'json', status: 400, body: geminiError(400, 'INVALID_ARGUMENT', message) });
    let e = await ask();
    expect(e).toBeInstanceOf(OpenAI.BadRequestError);
    expect(e.message).toContain(message);
    upstream.plan({ kind: 'json', status: 400, body: [geminiError(400, 'INVALID_ARGUMENT', message)] });
    e = await client.chat.completions
      .create({ model: 'gemini-chat', messages: [{ role: 'user', content: 'x' }], stream: true })
      .catch((x) => x);
    expect(e).toBeInstanceOf(OpenAI.BadRequestError);
    expect(e.message).toContain(message);
  });

  test('a 429 RESOURCE_EXHAUSTED is a 429', async () => {
    upstream.plan({
      kind: 'json',
      status: 429,
      body: geminiError(429, 'RESOURCE_EXHAUSTED', 'You exceeded your current quota.'),
    });
    const e = await ask();
    expect(e).toBeInstanceOf(OpenAI.RateLimitError);
    expect(e.error).toMatchObject({ code: 'upstream_rate_limited' });
  });

  test("a key Gemini rejects is our fault, not the caller's: 502, and the message names no key", async () => {
    const e = await client.chat.completions
      .create({ model: 'gemini-badkey', messages: [{ role: 'user', content: 'x' }] })
      .catch((x) => x);
    expect(e.status).toBe(502);
    expect(JSON.stringify(e.error)).not.toMatch(/not-the-key|API key|127\.0\.0\.1/);
  });

  test('an error event mid-stream: the SDK raises after the text before it', async () => {
    upstream.plan({
      kind: 'sse',
      events: [
        geminiResponse([{ text: 'partial' }]),
        { error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL' } },
      ],
    });
    const stream = await client.chat.completions.create({
      model: 'gemini-chat',
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

  test('a stream that ends without a finish reason is an error, not a silent end', async () => {
    upstream.plan({ kind: 'sse', events: [geminiResponse([{ text: 'cut' }])] });
    const stream = await client.chat.completions.create({
      model: 'gemini-chat',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    const got: string[] = [];
    await expect(
      (async () => {
        for await (const c of stream) got.push(c.choices[0]?.delta.content ?? '');
      })(),
    ).rejects.toThrow(/upstream/i);
    expect(got.join('')).toBe('cut');
  });
});

describe('embeddings', () => {
  test('one string → embedContent, floats', async () => {
    const res = await client.embeddings.create({
      model: 'gemini-embed',
      input: 'hello world',
      encoding_format: 'float',
    });
    expect(upstream.last().path).toBe('/v1beta/models/gemini-embedding-001:embedContent');
    expect(upstream.last().headers['x-goog-api-key']).toBe(GEMINI_KEY);
    expect(upstream.last().body).toEqual({
      model: 'models/gemini-embedding-001',
      content: { parts: [{ text: 'hello world' }] },
    });
    expect(res).toEqual({
      object: 'list',
      model: 'gemini-embed',
      data: [{ object: 'embedding', index: 0, embedding: fakeVector('hello world') }],
      usage: { prompt_tokens: 2, total_tokens: 2 }, // counted locally: Gemini reports no usage for embeddings
    });
  });

  test('a list → batchEmbedContents, base64 (the SDK default) decoded back, dimensions → outputDimensionality', async () => {
    const res = await client.embeddings.create({ model: 'gemini-embed', input: ['a', 'bb', 'ccc'], dimensions: 3 });
    const sent = upstream.last();
    expect(sent.path).toBe('/v1beta/models/gemini-embedding-001:batchEmbedContents');
    expect(sent.body).toEqual({
      requests: ['a', 'bb', 'ccc'].map((t) => ({
        model: 'models/gemini-embedding-001',
        content: { parts: [{ text: t }] },
        outputDimensionality: 3,
      })),
    });
    expect(res.data.map((d) => d.index)).toEqual([0, 1, 2]);
    res.data.forEach((d, i) => {
      expect(d.embedding).toHaveLength(3);
      d.embedding.forEach((x, j) => expect(x).toBeCloseTo(fakeVector(['a', 'bb', 'ccc'][i], 3)[j], 6));
    });
    expect(res.usage).toEqual({ prompt_tokens: 3, total_tokens: 3 });
  });

  test('token arrays are a 400 and never reach Gemini', async () => {
    const before = upstream.requests.length;
    for (const input of [
      [1, 2, 3],
      [[1, 2], [3]],
    ]) {
      const e = await client.embeddings
        .create({ model: 'gemini-embed', input, encoding_format: 'float' })
        .catch((x) => x);
      expect(e).toBeInstanceOf(OpenAI.BadRequestError);
      expect(e.message).toContain('token arrays are not supported by this model');
    }
    expect(upstream.requests.length).toBe(before);
  });
});

async function waitFor(cond: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
}
