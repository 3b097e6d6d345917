/**
 * The coding agents' request bodies of the benchmark, shaped like what the real clients send (see
 * /work/shared/notes/measurements.md, "Real agent clients"): the cost of a gateway on these is mostly reading, checking
 * and re-writing large JSON, which a two-message chat body does not show.
 *
 *   messagesBody: ~87 KB `POST /v1/messages` like Claude Code 2.1's: three system blocks (cache_control on the
 *                 last), 12 tools with JSON schemas and long descriptions, `thinking` {type: enabled, budget_tokens},
 *                 `metadata.user_id`, max_tokens 32000, several user/assistant turns with tool_use and tool_result
 *                 blocks (and a thinking block with its signature, as a replayed conversation carries).
 *   responsesBody: ~60 KB `POST /v1/responses` like Codex 0.169's: a `developer` message first, then the
 *                 environment and the task as user messages, function_call / function_call_output items, function
 *                 tools, tool_choice auto, parallel_tool_calls false, reasoning {summary: auto}, store false,
 *                 include [reasoning.encrypted_content], prompt_cache_key.
 *
 * Deterministic (no randomness, no clock), so every run sends the same bytes.
 */

const WORDS = (
  'the tool reads a file from the local filesystem and returns its contents with line numbers starting at one ' +
  'use it when you need to inspect source code configuration or logs before you change anything and prefer ' +
  'reading whole files over guessing what they contain when a path is relative resolve it against the working ' +
  'directory never read secrets such as private keys or tokens unless the user asks for them explicitly'
).split(' ');

/** `n` bytes (about) of English-looking text, different for each seed. */
function prose(n, seed = 0) {
  const out = [];
  let len = 0;
  for (let i = 0; len < n; i++) {
    const w = WORDS[(i * 7 + seed * 13) % WORDS.length];
    out.push(w);
    len += w.length + 1;
  }
  return out.join(' ').slice(0, n);
}

const CLAUDE_TOOLS = [
  ['Task', 4200, { description: 'string', prompt: 'string', subagent_type: 'string' }],
  ['Bash', 9800, { command: 'string', timeout: 'number', description: 'string', run_in_background: 'boolean' }],
  ['Glob', 900, { pattern: 'string', path: 'string' }],
  ['Grep', 2600, { pattern: 'string', path: 'string', glob: 'string', output_mode: 'string', '-i': 'boolean' }],
  ['ExitPlanMode', 1200, { plan: 'string' }],
  ['Read', 1900, { file_path: 'string', offset: 'number', limit: 'number' }],
  ['Edit', 1500, { file_path: 'string', old_string: 'string', new_string: 'string', replace_all: 'boolean' }],
  ['MultiEdit', 2400, { file_path: 'string', edits: 'array' }],
  ['Write', 1000, { file_path: 'string', content: 'string' }],
  ['NotebookEdit', 900, { notebook_path: 'string', cell_id: 'string', new_source: 'string', edit_mode: 'string' }],
  ['WebFetch', 1400, { url: 'string', prompt: 'string' }],
  ['TodoWrite', 8600, { todos: 'array' }],
];

/** A JSON schema for `props` (name → type), every property described, as Claude Code's tools are. */
function schema(props, seed) {
  const properties = {};
  for (const [i, [k, type]] of Object.entries(props).entries()) {
    properties[k] = { type, description: prose(120, seed + i) };
    if (type === 'array')
      properties[k].items = {
        type: 'object',
        properties: {
          content: { type: 'string', minLength: 1 },
          status: { type: 'string', enum: ['pending', 'done'] },
        },
        required: ['content', 'status'],
        additionalProperties: false,
      };
  }
  return {
    type: 'object',
    properties,
    required: [Object.keys(props)[0]],
    additionalProperties: false,
    $schema: 'http://json-schema.org/draft-07/schema#',
  };
}

/** The turns of a short session: read a file, run the tests, answer; then the user's next question. */
function claudeTurns() {
  const toolUse = (id, name, input) => ({ type: 'tool_use', id, name, input });
  const toolResult = (id, size, seed) => ({ type: 'tool_result', tool_use_id: id, content: prose(size, seed) });
  return [
    {
      role: 'user',
      content: [
        { type: 'text', text: `<system-reminder>\n${prose(1800, 1)}\n</system-reminder>` },
        { type: 'text', text: 'The tests in test/unit fail since the last change; find out why and fix it.' },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: prose(600, 2), signature: 'EqQBCkYIBxgCKkB'.padEnd(344, 'x') },
        { type: 'text', text: 'Let me look at the failing test first.' },
        toolUse('toolu_01A', 'Read', { file_path: '/repo/test/unit/money.test.ts' }),
      ],
    },
    { role: 'user', content: [toolResult('toolu_01A', 9000, 3)] },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Now the test run itself.' },
        toolUse('toolu_01B', 'Bash', { command: 'npx jest test/unit/money.test.ts', description: 'Run the test' }),
      ],
    },
    { role: 'user', content: [toolResult('toolu_01B', 6000, 4)] },
    { role: 'assistant', content: [{ type: 'text', text: prose(500, 5) }] },
    {
      role: 'user',
      content: [{ type: 'text', text: 'Good. Now make the rounding explicit and run the tests again.' }],
    },
  ];
}

/** About 87 KB, as Claude Code sends; `model` is the caller's name for the model. */
export function messagesBody(model, stream) {
  const body = {
    model,
    max_tokens: 32000,
    stream,
    system: [
      { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude." },
      { type: 'text', text: prose(16000, 6) },
      { type: 'text', text: prose(2500, 7), cache_control: { type: 'ephemeral' } },
    ],
    tools: CLAUDE_TOOLS.map(([name, size, props], i) => ({
      name,
      description: prose(size, 10 + i),
      input_schema: schema(props, 20 + i),
    })),
    messages: claudeTurns(),
    thinking: { type: 'enabled', budget_tokens: 31999 },
    metadata: { user_id: 'user_bench_account__session_00000000-0000-4000-8000-000000000000' },
  };
  return padTo(body, 87_000, (b, pad) => (b.system[1].text += pad));
}

const CODEX_TOOLS = [
  ['shell', 2600, { command: 'array', workdir: 'string', timeout_ms: 'number' }],
  ['apply_patch', 5200, { input: 'string' }],
  ['update_plan', 1800, { explanation: 'string', plan: 'array' }],
  ['view_image', 400, { path: 'string' }],
  ['list_mcp_resources', 700, { server: 'string', cursor: 'string' }],
  ['read_mcp_resource', 600, { server: 'string', uri: 'string' }],
];

/** About 60 KB, as Codex sends; `model` is the caller's name for the model. */
export function responsesBody(model, stream) {
  const msg = (role, text) => ({
    type: 'message',
    role,
    content: [{ type: role === 'assistant' ? 'output_text' : 'input_text', text }],
  });
  const body = {
    model,
    instructions: prose(1200, 30),
    input: [
      msg('developer', prose(20000, 31)),
      msg(
        'user',
        `<environment_context>\n  <cwd>/repo</cwd>\n  <shell>bash</shell>\n${prose(600, 32)}\n</environment_context>`,
      ),
      msg('user', 'The build fails on the CI; look at the last change and fix it.'),
      { type: 'function_call', name: 'shell', arguments: '{"command":["git","show","--stat"]}', call_id: 'call_1' },
      { type: 'function_call_output', call_id: 'call_1', output: prose(7000, 33) },
      { type: 'function_call', name: 'shell', arguments: '{"command":["make","build"]}', call_id: 'call_2' },
      { type: 'function_call_output', call_id: 'call_2', output: prose(5000, 34) },
      msg('assistant', prose(400, 35)),
      msg('user', 'Go ahead and apply the fix.'),
    ],
    tools: CODEX_TOOLS.map(([name, size, props], i) => ({
      type: 'function',
      name,
      description: prose(size, 40 + i),
      strict: false,
      parameters: schema(props, 50 + i),
    })),
    tool_choice: 'auto',
    parallel_tool_calls: false,
    reasoning: { summary: 'auto' },
    store: false,
    stream,
    include: ['reasoning.encrypted_content'],
    prompt_cache_key: '00000000-0000-4000-8000-00000000c0de',
  };
  return padTo(body, 60_000, (b, pad) => (b.input[0].content[0].text += pad));
}

/** The body as JSON, grown to `bytes` (about: within a few bytes) by appending prose where `grow` puts it. */
function padTo(body, bytes, grow) {
  const short = bytes - Buffer.byteLength(JSON.stringify(body));
  if (short > 0) grow(body, ` ${prose(short - 1, 99)}`);
  return JSON.stringify(body);
}
