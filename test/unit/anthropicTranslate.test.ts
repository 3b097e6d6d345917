/** The pure OpenAI ⇄ Anthropic translation of the anthropic provider: requests, answers and stream events. */
import {
  StreamTranslator,
  finishReason,
  fromAnthropicResponse,
  toAnthropicRequest,
  toUsage,
  type AnthropicResponse,
  type StreamEvent,
} from '../../src/gateway/providers/anthropic/translate';
import { parseDataUrl } from '../../src/gateway/providers/shared';
import { UpstreamError, type ChatChunk, type ChatRequest } from '../../src/gateway/types';

const req = (patch: Partial<ChatRequest> & Record<string, unknown>): ChatRequest =>
  ({ model: 'claude-client-id', messages: [{ role: 'user', content: 'hi' }], ...patch }) as ChatRequest;

const translate = (patch: Partial<ChatRequest> & Record<string, unknown>, stream = false) =>
  toAnthropicRequest(req(patch), 'claude-upstream', 4096, stream);

function refusal(f: () => unknown): UpstreamError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(UpstreamError);
    expect(e).toMatchObject({ reason: 'invalid', status: 400 });
    return e as UpstreamError;
  }
  throw new Error('expected a refusal');
}

const fn = (name: string, args: string, id = `call_${name}`) => ({
  id,
  type: 'function' as const,
  function: { name, arguments: args },
});

describe('toAnthropicRequest', () => {
  test('the smallest request: the upstream model, max_tokens from the model allowance, a user text block', () => {
    expect(translate({})).toEqual({
      model: 'claude-upstream',
      max_tokens: 4096,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    });
    expect(translate({}, true).stream).toBe(true);
  });

  test('max_tokens: the output allowance the gateway sends (what the hold covers), whatever the request asked', () => {
    expect(translate({ max_completion_tokens: 10, max_tokens: 20 }).max_tokens).toBe(4096);
    expect(translate({ max_tokens: null, max_completion_tokens: null }).max_tokens).toBe(4096);
    expect(toAnthropicRequest(req({ max_tokens: 20 }), 'claude-upstream', 17, false).max_tokens).toBe(17);
  });

  test('system and developer messages become one system prompt, wherever they are', () => {
    const out = translate({
      messages: [
        { role: 'system', content: 'one' },
        { role: 'user', content: 'hi' },
        {
          role: 'developer',
          content: [
            { type: 'text', text: 'two' },
            { type: 'text', text: 'three' },
          ],
        },
        { role: 'system', content: '' },
      ],
    });
    expect(out.system).toBe('one\n\ntwo\n\nthree');
    expect(out.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
  });

  test('consecutive messages of one role are merged; tool results go into one user message before the next user text', () => {
    const out = translate({
      messages: [
        { role: 'user', content: 'a' },
        { role: 'user', content: [{ type: 'text', text: 'b' }] },
        { role: 'assistant', content: 'thinking', tool_calls: [fn('f', '{"x":1}'), fn('g', '')] },
        { role: 'tool', tool_call_id: 'call_f', content: 'F' },
        { role: 'tool', tool_call_id: 'call_g', content: [{ type: 'text', text: 'G' }] },
        { role: 'user', content: 'and?' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Done' },
            { type: 'text', text: '.' },
          ],
        },
        { role: 'assistant', content: null, refusal: null },
      ],
    });
    expect(out.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'thinking' },
          { type: 'tool_use', id: 'call_f', name: 'f', input: { x: 1 } },
          { type: 'tool_use', id: 'call_g', name: 'g', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_f', content: 'F' },
          { type: 'tool_result', tool_use_id: 'call_g', content: [{ type: 'text', text: 'G' }] },
          { type: 'text', text: 'and?' },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'Done.' }] },
    ]);
  });

  test('an assistant turn that only calls tools has no empty text block', () => {
    const out = translate({
      messages: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: '', tool_calls: [fn('f', '{}')] },
      ],
    });
    expect(out.messages[1].content).toEqual([{ type: 'tool_use', id: 'call_f', name: 'f', input: {} }]);
  });

  test('tool-call arguments that are not a JSON object are refused (400), not replaced', () => {
    for (const args of ['{"a":', '[1,2]', '42', 'null', '"text"']) {
      const e = refusal(() =>
        translate({
          messages: [
            { role: 'user', content: 'x' },
            { role: 'assistant', tool_calls: [fn('f', args)] },
          ],
        }),
      );
      expect(e.upstreamMessage).toMatch(
        /^messages\[1\]\.tool_calls\[0\]\.function\.arguments (is not valid JSON|must be a JSON object)$/,
      );
    }
  });

  test('images: data URLs become base64 sources, other URLs url sources; a PDF file becomes a document', () => {
    const out = translate({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: 'data:image/JPEG;base64,/9j/4AAQ' } },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } },
            { type: 'file', file: { filename: 'spec.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } },
          ],
        },
      ],
    });
    expect(out.messages[0].content).toEqual([
      { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQ' } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
      {
        type: 'document',
        source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' },
        title: 'spec.pdf',
      },
    ]);
  });

  test('content Anthropic cannot take is refused with a 400 naming the part', () => {
    const user = (part: unknown) => ({ messages: [{ role: 'user', content: [part] }] }) as Partial<ChatRequest>;
    expect(
      refusal(() => translate(user({ type: 'image_url', image_url: { url: 'data:image/png;base64' } })))
        .upstreamMessage,
    ).toContain('messages[0].content[0].image_url.url');
    expect(
      refusal(() => translate(user({ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } })))
        .upstreamMessage,
    ).toContain("'input_audio'");
    expect(refusal(() => translate(user({ type: 'file', file: { file_id: 'file-1' } }))).upstreamMessage).toContain(
      'messages[0].content[0].file',
    );
  });

  test('parseDataUrl (shared by the translating providers)', () => {
    expect(parseDataUrl('data:image/png;base64,AAA=')).toEqual({ mediaType: 'image/png', data: 'AAA=' });
    expect(parseDataUrl('data:image/png;name=a.png;base64,AAA=')).toEqual({ mediaType: 'image/png', data: 'AAA=' });
    expect(parseDataUrl('data:text/plain;charset=utf-8,hi%20there')).toEqual({
      mediaType: 'text/plain',
      data: Buffer.from('hi there').toString('base64'),
    });
    expect(parseDataUrl('data:image/png;base64')).toBeNull();
    expect(parseDataUrl('https://x/y.png')).toBeNull();
  });

  test('tools and tool_choice', () => {
    const tools: ChatRequest['tools'] = [
      {
        type: 'function',
        function: {
          name: 'f',
          description: 'does f',
          parameters: { type: 'object', properties: { a: { type: 'number' } } },
          strict: true,
        },
      },
      { type: 'function', function: { name: 'g' } },
    ];
    expect(translate({ tools }).tools).toEqual([
      { name: 'f', description: 'does f', input_schema: { type: 'object', properties: { a: { type: 'number' } } } },
      { name: 'g', input_schema: { type: 'object', properties: {} } },
    ]);
    const cases: [ChatRequest['tool_choice'] | undefined, boolean | undefined, unknown][] = [
      [undefined, undefined, undefined],
      ['auto', undefined, { type: 'auto' }],
      ['required', undefined, { type: 'any' }],
      ['none', undefined, { type: 'none' }],
      [{ type: 'function', function: { name: 'g' } }, undefined, { type: 'tool', name: 'g' }],
      [undefined, false, { type: 'auto', disable_parallel_tool_use: true }],
      ['required', false, { type: 'any', disable_parallel_tool_use: true }],
      [
        { type: 'function', function: { name: 'g' } },
        false,
        { type: 'tool', name: 'g', disable_parallel_tool_use: true },
      ],
      ['none', false, { type: 'none' }],
      ['auto', true, { type: 'auto' }],
    ];
    for (const [tool_choice, parallel_tool_calls, expected] of cases) {
      expect(translate({ tools, tool_choice, parallel_tool_calls }).tool_choice).toEqual(expected);
    }
    // without tools there is nothing to choose from
    expect(translate({ tool_choice: 'required' })).not.toHaveProperty('tool_choice');
  });

  test('sampling and the rest: stop, temperature (clamped to 1), top_p, top_k, user; OpenAI-only fields dropped', () => {
    const out = translate({
      stop: 'END',
      temperature: 1.7,
      top_p: 0.5,
      top_k: 40,
      user: 'u-1',
      n: 1,
      seed: 3,
      frequency_penalty: 1,
      presence_penalty: 1,
      logprobs: true,
      top_logprobs: 2,
      response_format: { type: 'json_object' },
      stream_options: { include_usage: true },
      logit_bias: { '1': 5 },
      store: true,
      reasoning_effort: 'low',
    });
    expect(out).toEqual({
      model: 'claude-upstream',
      max_tokens: 4096,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      stop_sequences: ['END'],
      temperature: 1,
      top_p: 0.5,
      top_k: 40,
      metadata: { user_id: 'u-1' },
    });
    expect(translate({ stop: ['a', 'b'], temperature: 0.3 })).toMatchObject({
      stop_sequences: ['a', 'b'],
      temperature: 0.3,
    });
    expect(translate({ stop: null, temperature: null })).not.toHaveProperty('stop_sequences');
    expect(translate({ safety_identifier: 'hash-9' }).metadata).toEqual({ user_id: 'hash-9' });
  });

  test('n > 1 and the deprecated functions are refused as the caller’s fault', () => {
    expect(refusal(() => translate({ n: 3 })).upstreamMessage).toMatch(/'n' must be 1/);
    expect(refusal(() => translate({ functions: [{ name: 'f' }] })).upstreamMessage).toMatch(/use 'tools'/);
  });
});

describe('answers', () => {
  const msg = (patch: Partial<AnthropicResponse>): AnthropicResponse => ({
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-x',
    content: [],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 3, output_tokens: 4 },
    ...patch,
  });

  test('text blocks are joined, thinking is not shown, tool_use becomes tool_calls', () => {
    const res = fromAnthropicResponse(
      msg({
        content: [
          { type: 'thinking', thinking: 'hmm', signature: 'sig' },
          { type: 'text', text: 'Hello ' },
          { type: 'text', text: 'world' },
          { type: 'tool_use', id: 'toolu_1', name: 'f', input: { a: [1, 'b'] } },
        ],
        stop_reason: 'tool_use',
      }),
      1_700_000_000,
    );
    expect(res).toEqual({
      id: 'chatcmpl-msg_1',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: 'claude-x',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Hello world',
            refusal: null,
            tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'f', arguments: '{"a":[1,"b"]}' } }],
          },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    });
  });

  test('content is null when there are only tool calls, "" when there is nothing', () => {
    expect(
      fromAnthropicResponse(msg({ content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }] }), 0).choices[0]
        .message.content,
    ).toBeNull();
    expect(fromAnthropicResponse(msg({ content: [] }), 0).choices[0].message).toEqual({
      role: 'assistant',
      content: '',
      refusal: null,
    });
  });

  test('an answer that is not a message is a protocol error', () => {
    expect(() => fromAnthropicResponse({ type: 'error' } as unknown as AnthropicResponse, 0)).toThrow(
      expect.objectContaining({ reason: 'protocol' }),
    );
  });

  test('finish reasons', () => {
    expect(
      [
        'end_turn',
        'stop_sequence',
        'pause_turn',
        'max_tokens',
        'model_context_window_exceeded',
        'tool_use',
        'refusal',
        null,
        'brand_new',
      ].map(finishReason),
    ).toEqual(['stop', 'stop', 'stop', 'length', 'length', 'tool_calls', 'content_filter', 'stop', 'stop']);
  });

  test('usage: cache writes and reads are prompt tokens; cached_tokens (and writes) only when Anthropic reported the cache', () => {
    expect(
      toUsage({ input_tokens: 5, cache_creation_input_tokens: 10, cache_read_input_tokens: 100, output_tokens: 7 }),
    ).toEqual({
      prompt_tokens: 115,
      completion_tokens: 7,
      total_tokens: 122,
      prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 10 },
    });
    expect(
      toUsage({ input_tokens: 5, cache_creation_input_tokens: null, cache_read_input_tokens: null, output_tokens: 7 }),
    ).toEqual({
      prompt_tokens: 5,
      completion_tokens: 7,
      total_tokens: 12,
    });
    expect(toUsage({ input_tokens: 5, cache_read_input_tokens: 0, output_tokens: 0 }).prompt_tokens_details).toEqual({
      cached_tokens: 0,
    });
  });
});

describe('StreamTranslator', () => {
  const run = (events: StreamEvent[]) => {
    const t = new StreamTranslator(1234, 'claude-fallback-name');
    const chunks: ChatChunk[] = [];
    for (const e of events) chunks.push(...t.push(e));
    return { t, chunks };
  };
  const start: StreamEvent = {
    type: 'message_start',
    message: {
      id: 'msg_s',
      model: 'claude-x',
      content: [],
      usage: { input_tokens: 20, cache_read_input_tokens: 5, output_tokens: 1 },
    },
  };
  const deltas = (chunks: ChatChunk[]) => chunks.filter((c) => c.choices.length).map((c) => c.choices[0].delta);

  test('text, then two tools: tool indexes count tool blocks only, id and name on the first fragment only', () => {
    const { t, chunks } = run([
      start,
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'ping' },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Checking.' } },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'tool_use', id: 'toolu_a', name: 'f', input: {} },
      },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"x":' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '1}' } },
      { type: 'content_block_stop', index: 1 },
      {
        type: 'content_block_start',
        index: 2,
        content_block: { type: 'tool_use', id: 'toolu_b', name: 'g', input: {} },
      },
      { type: 'content_block_stop', index: 2 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 30 } },
      { type: 'message_stop' },
    ]);
    expect(t.done).toBe(true);
    expect(deltas(chunks)).toEqual([
      { role: 'assistant', content: '' },
      { content: 'Checking.' },
      { tool_calls: [{ index: 0, id: 'toolu_a', type: 'function', function: { name: 'f', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"x":' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '1}' } }] },
      { tool_calls: [{ index: 1, id: 'toolu_b', type: 'function', function: { name: 'g', arguments: '' } }] },
      { tool_calls: [{ index: 1, function: { arguments: '{}' } }] }, // a tool called without arguments
      {},
    ]);
    expect(chunks.map((c) => (c.choices.length ? c.choices[0].finish_reason : 'none'))).toEqual([
      null,
      null,
      null,
      null,
      null,
      null,
      null,
      'tool_calls',
      'none',
    ]);
    expect(
      chunks.every(
        (c) =>
          c.id === 'chatcmpl-msg_s' &&
          c.created === 1234 &&
          c.model === 'claude-x' &&
          c.object === 'chat.completion.chunk',
      ),
    ).toBe(true);
    expect(chunks.slice(0, -1).every((c) => c.choices[0].index === 0 && c.choices[0].logprobs === null)).toBe(true);
    // the role chunk carries the usage so far (the prompt as Anthropic counted it: a stream cut early pays it); the others none
    expect(chunks[0].usage).toEqual({
      prompt_tokens: 25,
      completion_tokens: 1,
      total_tokens: 26,
      prompt_tokens_details: { cached_tokens: 5 },
    });
    expect(chunks.slice(1, -1).every((c) => c.usage === null)).toBe(true);
    expect(chunks[chunks.length - 1]).toEqual({
      id: 'chatcmpl-msg_s',
      object: 'chat.completion.chunk',
      created: 1234,
      model: 'claude-x',
      choices: [],
      usage: {
        prompt_tokens: 25,
        completion_tokens: 30,
        total_tokens: 55,
        prompt_tokens_details: { cached_tokens: 5 },
      },
    });
  });

  test("message_delta's usage is cumulative and may restate input tokens; nulls keep earlier values", () => {
    const { chunks } = run([
      start,
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn' },
        usage: { input_tokens: 22, output_tokens: 9, cache_read_input_tokens: null },
      },
      { type: 'message_stop' },
    ]);
    expect(chunks[chunks.length - 1].usage).toEqual({
      prompt_tokens: 27,
      completion_tokens: 9,
      total_tokens: 36,
      prompt_tokens_details: { cached_tokens: 5 },
    });
  });

  test('message_stop without a stop reason still finishes the choice; unknown events and deltas are ignored', () => {
    const { chunks } = run([
      start,
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta' } },
      { type: 'brand_new_event' } as unknown as StreamEvent,
      { type: 'message_stop' },
    ]);
    expect(chunks.map((c) => (c.choices.length ? c.choices[0].finish_reason : 'usage'))).toEqual([
      null,
      'stop',
      'usage',
    ]);
  });

  test('an error event throws a protocol UpstreamError carrying Anthropic’s message', () => {
    const t = new StreamTranslator(1, 'm');
    t.push(start);
    let err: unknown;
    try {
      t.push({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({ reason: 'protocol', upstreamMessage: 'Overloaded' });
    expect(t.done).toBe(false);
  });
});
