/** The gemini provider's translation functions (no I/O), and what it refuses to serve. */
import { gemini } from '../../src/gateway/providers/gemini';
import { Provider } from '../../src/gateway/providers/provider';
import {
  ChatStreamTranslator,
  SKIP_THOUGHT_SIGNATURE,
  finishReason,
  fromEmbedResponse,
  fromGeminiResponse,
  resourceName,
  toEmbedCall,
  toGeminiRequest,
  toUsage,
  toolResponse,
} from '../../src/gateway/providers/gemini/translate';
import { UpstreamError, type ChatRequest, type EmbeddingRequest } from '../../src/gateway/types';

const chat = (messages: unknown[], extra: Record<string, unknown> = {}) =>
  ({ model: 'm', messages, ...extra }) as ChatRequest;

function rejection(f: () => unknown): UpstreamError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(UpstreamError);
    return e as UpstreamError;
  }
  throw new Error('expected an UpstreamError');
}

describe('toGeminiRequest: messages', () => {
  test('system and developer messages become systemInstruction; roles map to user and model; same roles merge', () => {
    const req = toGeminiRequest(
      chat([
        { role: 'system', content: 'a' },
        { role: 'user', content: 'q1' },
        {
          role: 'developer',
          content: [
            { type: 'text', text: 'b' },
            { type: 'text', text: 'c' },
          ],
        },
        { role: 'user', content: 'q2' },
        { role: 'assistant', content: 'r1' },
        { role: 'assistant', content: [{ type: 'text', text: 'r2' }] },
        { role: 'user', content: '' },
      ]),
    );
    expect(req).toEqual({
      systemInstruction: { parts: [{ text: 'a' }, { text: 'bc' }] },
      contents: [
        { role: 'user', parts: [{ text: 'q1' }, { text: 'q2' }] },
        { role: 'model', parts: [{ text: 'r1' }, { text: 'r2' }] },
      ],
    });
  });

  test('images: a data URL is inlineData, a URL that names an image is fileData of that type; other URLs (a video, a stored file) are a 400', () => {
    const req = toGeminiRequest(
      chat([
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.JPG?size=large', detail: 'high' } },
            { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
            { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } },
          ],
        },
      ]),
    );
    expect(req.contents[0].parts).toEqual([
      { text: 'what is this?' },
      { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } },
      { fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/cat.JPG?size=large' } },
      { inlineData: { mimeType: 'audio/wav', data: 'UklGRg==' } },
      { inlineData: { mimeType: 'application/pdf', data: 'JVBERi0=' } },
    ]);
  });

  test('parts Gemini cannot take are a 400', () => {
    const e = rejection(() =>
      toGeminiRequest(chat([{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-1' } }] }])),
    );
    expect(e).toMatchObject({ reason: 'invalid', status: 400 });
    expect(e.upstreamMessage).toMatch(/^messages\[0\]\.content\[0\]: file_id inputs are not supported/);
    expect(
      rejection(() => toGeminiRequest(chat([{ role: 'user', content: [{ type: 'video', video: {} }] }])))
        .upstreamMessage,
    ).toContain("type 'video'");
    // Gemini reads a URL as whatever it finds there: a video or a stored file would be billed as such
    for (const url of [
      'https://www.youtube.com/watch?v=abc',
      'https://generativelanguage.googleapis.com/v1beta/files/abc123',
    ]) {
      const img = rejection(() =>
        toGeminiRequest(chat([{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }])),
      );
      expect(img.upstreamMessage).toContain('messages[0].content[0].image_url.url: send images as data URLs');
    }
  });

  test('assistant tool calls become functionCall parts; the first carries the remembered signature or the skip value', () => {
    const messages = [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"x":1}' } },
          { id: 'call_b', type: 'function', function: { name: 'g', arguments: '' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '{"ok":true}' },
      { role: 'tool', tool_call_id: 'call_b', content: [{ type: 'text', text: '[1,2]' }] },
      { role: 'user', content: 'and?' },
    ];
    const unknown = toGeminiRequest(chat(messages));
    expect(unknown.contents).toEqual([
      { role: 'user', parts: [{ text: 'go' }] },
      {
        role: 'model',
        parts: [
          { functionCall: { name: 'f', args: { x: 1 } }, thoughtSignature: SKIP_THOUGHT_SIGNATURE },
          { functionCall: { name: 'g', args: {} } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'f', response: { ok: true } } },
          { functionResponse: { name: 'g', response: { content: '[1,2]' } } },
          { text: 'and?' },
        ],
      },
    ]);
    const known = toGeminiRequest(chat(messages), { get: (id) => ({ call_a: 'c2lnQQ==', call_b: 'c2lnQg==' })[id] });
    expect(known.contents[1].parts.map((p) => p.thoughtSignature)).toEqual(['c2lnQQ==', 'c2lnQg==']);
  });

  test('broken tool call arguments and orphan tool messages are 400s', () => {
    const bad = (args: string) =>
      chat([
        { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: args } }] },
      ]);
    expect(rejection(() => toGeminiRequest(bad('{nope'))).upstreamMessage).toBe(
      'messages[0].tool_calls[0].function.arguments is not valid JSON',
    );
    expect(rejection(() => toGeminiRequest(bad('[1]'))).upstreamMessage).toBe(
      'messages[0].tool_calls[0].function.arguments must be a JSON object',
    );
    const orphan = rejection(() => toGeminiRequest(chat([{ role: 'tool', tool_call_id: 'x', content: 'y' }])));
    expect(orphan).toMatchObject({ reason: 'invalid', status: 400 });
  });

  test('the deprecated function_call and function role', () => {
    const req = toGeminiRequest(
      chat([
        { role: 'user', content: 'go' },
        { role: 'assistant', content: null, function_call: { name: 'f', arguments: '{}' } },
        { role: 'function', name: 'f', content: 'done' },
      ]),
    );
    expect(req.contents.slice(1)).toEqual([
      { role: 'model', parts: [{ functionCall: { name: 'f', args: {} }, thoughtSignature: SKIP_THOUGHT_SIGNATURE }] },
      { role: 'user', parts: [{ functionResponse: { name: 'f', response: { content: 'done' } } }] },
    ]);
  });

  test('tool results: a JSON object as it is, anything else as text under content', () => {
    expect(toolResponse('{"a":{"b":1}}')).toEqual({ a: { b: 1 } });
    expect(toolResponse('[1]')).toEqual({ content: '[1]' });
    expect(toolResponse('null')).toEqual({ content: 'null' });
    expect(toolResponse('42')).toEqual({ content: '42' });
    expect(toolResponse('plain')).toEqual({ content: 'plain' });
  });

  test('data URLs: the media type is read (lower case; text/plain when left out), text that is not base64 is encoded; a file without one is sent as it came, typed by its name', () => {
    const req = toGeminiRequest(
      chat([
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: 'data:Image/PNG;base64,iVBORw0KGgo=' } },
            { type: 'image_url', image_url: { url: 'data:image/svg+xml;charset=utf-8,%3Csvg%2F%3E' } },
            { type: 'file', file: { file_data: 'data:,caf%C3%A9', filename: 'a.txt' } },
            { type: 'file', file: { file_data: 'R0lGODlh', filename: 'b.GIF' } },
            { type: 'file', file: { file_data: 'JVBERi0=' } },
          ],
        },
      ]),
    );
    expect(req.contents[0].parts).toEqual([
      { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } },
      { inlineData: { mimeType: 'image/svg+xml', data: Buffer.from('<svg/>').toString('base64') } },
      { inlineData: { mimeType: 'text/plain', data: Buffer.from('café').toString('base64') } },
      { inlineData: { mimeType: 'image/gif', data: 'R0lGODlh' } },
      { inlineData: { mimeType: 'application/pdf', data: 'JVBERi0=' } },
    ]);
    // A data URL whose percent-encoding is broken is not one: as an image it is a 400, like any other URL.
    const broken = rejection(() =>
      toGeminiRequest(
        chat([{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png,%E0%A4%A' } }] }]),
      ),
    );
    expect(broken.upstreamMessage).toContain('send images as data URLs');
  });
});

describe('toGeminiRequest: tools and options', () => {
  test('tools → functionDeclarations with the JSON Schema as parametersJsonSchema ($schema removed, the rest kept)', () => {
    const parameters = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: {
        q: { type: ['string', 'null'] },
        opts: { type: 'object', additionalProperties: { type: 'number' } },
      },
      additionalProperties: false,
    };
    const req = toGeminiRequest(
      chat([{ role: 'user', content: 'x' }], {
        tools: [{ type: 'function', function: { name: 'search', description: 'Search', parameters, strict: true } }],
        functions: [{ name: 'legacy' }],
      }),
    );
    const { $schema: _s, ...rest } = parameters;
    expect(req.tools).toEqual([
      {
        functionDeclarations: [
          { name: 'search', description: 'Search', parametersJsonSchema: rest },
          { name: 'legacy' },
        ],
      },
    ]);
    expect(req.toolConfig).toBeUndefined();
  });

  test('tool_choice without tools sends no toolConfig; function_call maps like tool_choice', () => {
    expect(toGeminiRequest(chat([{ role: 'user', content: 'x' }], { tool_choice: 'none' })).toolConfig).toBeUndefined();
    const req = toGeminiRequest(
      chat([{ role: 'user', content: 'x' }], { functions: [{ name: 'f' }], function_call: { name: 'f' } }),
    );
    expect(req.toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['f'] } });
  });

  test('generationConfig: only what was set; json_object → JSON MIME type; nulls are skipped', () => {
    const req = toGeminiRequest(
      chat([{ role: 'user', content: 'x' }], {
        response_format: { type: 'json_object' },
        temperature: null,
        n: 2,
        top_k: 40,
        max_tokens: 10,
        max_completion_tokens: 20,
        stop: [],
      }),
    );
    expect(req.generationConfig).toEqual({
      responseMimeType: 'application/json',
      candidateCount: 2,
      topK: 40,
      maxOutputTokens: 20,
    });
    expect(
      toGeminiRequest(chat([{ role: 'user', content: 'x' }], { response_format: { type: 'text' } })).generationConfig,
    ).toBeUndefined();
  });
});

describe('responses', () => {
  test('finish reasons', () => {
    expect(finishReason('STOP', false)).toBe('stop');
    expect(finishReason('STOP', true)).toBe('tool_calls');
    expect(finishReason('MAX_TOKENS', true)).toBe('length');
    for (const r of ['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY'])
      expect(finishReason(r, false)).toBe('content_filter');
    for (const r of ['MALFORMED_FUNCTION_CALL', 'OTHER', 'LANGUAGE', 'FINISH_REASON_UNSPECIFIED'])
      expect(finishReason(r, false)).toBe('stop');
  });

  test('usage: thinking tokens are completion tokens; details only when Gemini reports them', () => {
    expect(toUsage({ promptTokenCount: 5, candidatesTokenCount: 2, totalTokenCount: 7 })).toEqual({
      prompt_tokens: 5,
      completion_tokens: 2,
      total_tokens: 7,
    });
    expect(
      toUsage({
        promptTokenCount: 5,
        candidatesTokenCount: 2,
        thoughtsTokenCount: 10,
        cachedContentTokenCount: 4,
        toolUsePromptTokenCount: 3,
      }),
    ).toEqual({
      prompt_tokens: 8,
      completion_tokens: 12,
      total_tokens: 20,
      prompt_tokens_details: { cached_tokens: 4 },
      completion_tokens_details: { reasoning_tokens: 10 },
    });
    expect(toUsage({ promptTokenCount: 5 })).toEqual({ prompt_tokens: 5, completion_tokens: 0, total_tokens: 5 });
  });

  test('one choice per candidate; thoughts skipped; content null when there are only calls; signatures remembered', () => {
    const remembered: Record<string, string> = {};
    const res = fromGeminiResponse(
      {
        candidates: [
          {
            index: 0,
            finishReason: 'STOP',
            content: {
              role: 'model',
              parts: [{ text: 'thinking...', thought: true }, { text: 'Hel' }, { text: 'lo' }],
            },
          },
          {
            index: 1,
            finishReason: 'STOP',
            content: {
              role: 'model',
              parts: [
                { functionCall: { name: 'f', args: { a: [1] } }, thoughtSignature: 'U0lH' },
                { functionCall: { name: 'g' } },
              ],
            },
          },
        ],
        usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 2, totalTokenCount: 3 },
      },
      'gemini-x',
      { set: (id, s) => (remembered[id] = s) },
    );
    expect(res).toMatchObject({
      object: 'chat.completion',
      model: 'gemini-x',
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
    });
    expect(res.id).toMatch(/^chatcmpl-[A-Za-z0-9_-]+$/);
    expect(res.choices[0]).toEqual({
      index: 0,
      message: { role: 'assistant', content: 'Hello', refusal: null },
      logprobs: null,
      finish_reason: 'stop',
    });
    const calls = res.choices[1].message.tool_calls!;
    expect(res.choices[1]).toMatchObject({ index: 1, message: { content: null }, finish_reason: 'tool_calls' });
    expect(calls.map((c) => c.function)).toEqual([
      { name: 'f', arguments: '{"a":[1]}' },
      { name: 'g', arguments: '{}' },
    ]);
    expect(remembered).toEqual({ [calls[0].id]: 'U0lH' });
  });

  test('a blocked prompt is one empty content_filter choice; no candidates without a block is a protocol error', () => {
    const res = fromGeminiResponse({ promptFeedback: { blockReason: 'SAFETY' } }, 'm');
    expect(res.choices).toEqual([
      {
        index: 0,
        message: { role: 'assistant', content: '', refusal: null },
        logprobs: null,
        finish_reason: 'content_filter',
      },
    ]);
    expect(res.usage).toBeUndefined();
    expect(rejection(() => fromGeminiResponse({ usageMetadata: {} }, 'm')).reason).toBe('protocol');
  });
});

describe('ChatStreamTranslator', () => {
  test('role chunk once per candidate, deltas, tool call indexes across events, finish, then usage', () => {
    const t = new ChatStreamTranslator('m');
    const out = [
      ...t.push({
        responseId: 'r1',
        candidates: [{ content: { parts: [{ text: 'Hi' }] } }],
        usageMetadata: { promptTokenCount: 4 },
      }),
      ...t.push({
        responseId: 'r1',
        candidates: [{ content: { parts: [{ functionCall: { name: 'a', args: {} } }] } }],
      }),
      ...t.push({
        responseId: 'r1',
        candidates: [
          {
            content: { parts: [{ text: '!' }, { functionCall: { name: 'b', args: { x: 'y' } } }] },
            finishReason: 'STOP',
          },
        ],
        usageMetadata: { promptTokenCount: 4, candidatesTokenCount: 6, totalTokenCount: 10 },
      }),
      ...t.end(),
    ];
    expect(out.map((c) => [c.choices[0]?.delta, c.choices[0]?.finish_reason])).toEqual([
      [{ role: 'assistant', content: '' }, null],
      [{ content: 'Hi' }, null],
      [
        {
          tool_calls: [
            {
              index: 0,
              id: expect.stringMatching(/^call_/),
              type: 'function',
              function: { name: 'a', arguments: '{}' },
            },
          ],
        },
        null,
      ],
      [
        {
          content: '!',
          tool_calls: [
            {
              index: 1,
              id: expect.stringMatching(/^call_/),
              type: 'function',
              function: { name: 'b', arguments: '{"x":"y"}' },
            },
          ],
        },
        null,
      ],
      [{}, 'tool_calls'],
      [undefined, undefined],
    ]);
    expect(out[out.length - 1]).toEqual({
      id: 'chatcmpl-r1',
      object: 'chat.completion.chunk',
      created: out[0].created,
      model: 'm',
      choices: [],
      usage: { prompt_tokens: 4, completion_tokens: 6, total_tokens: 10 },
    });
    expect(new Set(out.map((c) => c.id))).toEqual(new Set(['chatcmpl-r1']));
  });

  test('several candidates keep their own index and tool call numbering', () => {
    const t = new ChatStreamTranslator('m');
    const out = [
      ...t.push({
        candidates: [
          { index: 0, content: { parts: [{ text: 'a' }] } },
          { index: 1, content: { parts: [{ functionCall: { name: 'f' } }] } },
        ],
      }),
      ...t.push({
        candidates: [{ index: 1, content: { parts: [{ functionCall: { name: 'g' } }] }, finishReason: 'STOP' }],
      }),
      ...t.push({ candidates: [{ index: 0, content: { parts: [] }, finishReason: 'MAX_TOKENS' }] }),
      ...t.end(),
    ];
    const byChoice = (i: number) => out.flatMap((c) => c.choices).filter((c) => c.index === i);
    expect(
      byChoice(0)
        .map((c) => c.finish_reason)
        .filter(Boolean),
    ).toEqual(['length']);
    expect(
      byChoice(1)
        .map((c) => c.finish_reason)
        .filter(Boolean),
    ).toEqual(['tool_calls']);
    expect(
      byChoice(1)
        .flatMap((c) => c.delta.tool_calls ?? [])
        .map((d) => [d.index, d.function?.name]),
    ).toEqual([
      [0, 'f'],
      [1, 'g'],
    ]);
    expect(out).toHaveLength(7); // two role chunks, a text, two tool calls, two finishes; one choice per chunk
  });

  test('no usage chunk when Gemini sent no usageMetadata', () => {
    const t = new ChatStreamTranslator('m');
    t.push({ candidates: [{ content: { parts: [{ text: 'x' }] }, finishReason: 'STOP' }] });
    expect(t.end()).toEqual([]);
  });

  test('a blocked prompt finishes with content_filter', () => {
    const t = new ChatStreamTranslator('m');
    const out = [
      ...t.push({ promptFeedback: { blockReason: 'BLOCKLIST' }, usageMetadata: { promptTokenCount: 2 } }),
      ...t.end(),
    ];
    expect(out.map((c) => (c.choices.length ? c.choices[0].finish_reason : 'usage'))).toEqual([
      null,
      'content_filter',
      'usage',
    ]);
  });

  test('an error event throws a protocol error carrying its message; a stream cut before a finish reason too', () => {
    const t = new ChatStreamTranslator('m');
    t.push({ candidates: [{ content: { parts: [{ text: 'x' }] } }] });
    expect(
      rejection(() => t.push({ error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL' } })),
    ).toMatchObject({
      reason: 'protocol',
      upstreamMessage: 'Internal error encountered.',
    });
    expect(rejection(() => t.end()).reason).toBe('protocol');
    expect(rejection(() => new ChatStreamTranslator('m').end()).reason).toBe('protocol');
  });

  test('signatures of streamed calls are remembered by tool call id', () => {
    const remembered = new Map<string, string>();
    const t = new ChatStreamTranslator('m', { set: (id, s) => remembered.set(id, s) });
    const [, call] = t.push({
      candidates: [
        { content: { parts: [{ functionCall: { name: 'f' }, thoughtSignature: 'QUJD' }] }, finishReason: 'STOP' },
      ],
    });
    expect(remembered.get(call.choices[0].delta.tool_calls![0].id!)).toBe('QUJD');
  });
});

describe('embeddings', () => {
  const emb = (input: unknown, extra: object = {}) => ({ model: 'e', input, ...extra }) as EmbeddingRequest;

  test('a string → embedContent, a list → batchEmbedContents, dimensions → outputDimensionality', () => {
    expect(toEmbedCall(emb('hi', { dimensions: 8 }), 'text-embedding-004')).toEqual({
      method: 'embedContent',
      body: { model: 'models/text-embedding-004', content: { parts: [{ text: 'hi' }] }, outputDimensionality: 8 },
      texts: ['hi'],
    });
    expect(toEmbedCall(emb(['a', 'b']), 'tunedModels/mine')).toEqual({
      method: 'batchEmbedContents',
      body: {
        requests: [
          { model: 'tunedModels/mine', content: { parts: [{ text: 'a' }] } },
          { model: 'tunedModels/mine', content: { parts: [{ text: 'b' }] } },
        ],
      },
      texts: ['a', 'b'],
    });
  });

  test('token arrays are a 400', () => {
    for (const input of [
      [1, 2],
      [[1], [2]],
    ]) {
      expect(rejection(() => toEmbedCall(emb(input), 'x'))).toMatchObject({
        reason: 'invalid',
        status: 400,
        upstreamMessage: 'token arrays are not supported by this model',
      });
    }
  });

  test('answers: vectors in order, without usage (Gemini reports none: the gateway counts); a wrong count is a protocol error', () => {
    const call = toEmbedCall(emb(['hello world', 'x']), 'x');
    expect(fromEmbedResponse(call, { embeddings: [{ values: [1, 2] }, { values: [3, 4] }] }, 'x')).toEqual({
      object: 'list',
      model: 'x',
      data: [
        { object: 'embedding', index: 0, embedding: [1, 2] },
        { object: 'embedding', index: 1, embedding: [3, 4] },
      ],
    });
    expect(rejection(() => fromEmbedResponse(call, { embeddings: [{ values: [1] }] }, 'x')).reason).toBe('protocol');
    expect(rejection(() => fromEmbedResponse(toEmbedCall(emb('a'), 'x'), {}, 'x')).reason).toBe('protocol');
  });

  test('resource names', () => {
    expect(resourceName('gemini-2.5-pro')).toBe('models/gemini-2.5-pro');
    expect(resourceName('models/gemini-2.5-pro')).toBe('models/gemini-2.5-pro');
  });
});

describe('the gemini provider', () => {
  const provider = new Provider(gemini, {
    name: 'g',
    type: 'gemini',
    base_url: 'http://127.0.0.1:9',
    headers: {},
    max_connections: 1,
    timeouts: { connect_ms: 100, first_byte_ms: 100, idle_ms: 100, total_ms: 100 },
    latency_ms: 0,
    settings: {},
  });
  afterAll(() => provider.close());
  const call = { model: 'x', maxOutputTokens: 10, signal: new AbortController().signal };

  test('serves chat and embeddings; legacy completions (served through chat by the gateway) are refused with a 400 if asked directly', async () => {
    expect([provider.serves('chat'), provider.serves('embeddings'), provider.serves('completions')]).toEqual([
      true,
      true,
      false,
    ]);
    const expected = { reason: 'invalid', status: 400 };
    await expect(provider.send('completions', { model: 'x', prompt: 'hi' }, call)).rejects.toMatchObject(expected);
  });
});
