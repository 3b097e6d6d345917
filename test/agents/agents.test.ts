/**
 * The real coding-agent CLIs, offline, through Switchyard (`make agents`, which installs them into test/agents):
 * Claude Code (`@anthropic-ai/claude-code`) completes a turn with one tool round trip through /v1/messages, to a
 * fake Anthropic upstream (natively) and to a fake OpenAI upstream (translated); Codex (`@openai/codex`) completes
 * a turn through /v1/responses, natively to a fake OpenAI upstream and translated to a fake Anthropic one. Each CLI
 * runs with a fresh HOME / CODEX_HOME in a temporary folder.
 */
import fs from 'node:fs';
import path from 'node:path';
import { API_KEY, FakeAnthropic, message, streamEvents } from '../fakes/anthropicUpstream';
import { FakeOpenAI } from '../fakes/openaiUpstream';
import { BIN, claudeCode as agentClaudeCode, run, temp } from './cli';
import { startGateway, type TestGateway } from '../helpers/app';

jest.setTimeout(120_000);

let claude: FakeAnthropic;
let openai: FakeOpenAI;
let gw: TestGateway;
let secret: string;
let accountId: number;

beforeAll(async () => {
  for (const cli of ['claude', 'codex']) {
    if (!fs.existsSync(path.join(BIN, cli)))
      throw new Error(`${cli} is not installed: run \`make agents\` (it installs test/agents/package.json)`);
  }
  claude = await new FakeAnthropic().start();
  openai = await new FakeOpenAI().start();
  gw = await startGateway(
    `
limits: { rpm: 0, tpm: 0 }
providers:
  claude: { type: anthropic, base_url: "${claude.url}", api_key: "\${FAKE_ANTHROPIC_KEY}" }
  up: { type: openai, base_url: "${openai.url}" }
models:
  - { id: claude-sonnet-4-5, kind: chat, price: { input: 3, output: 15, cached_input: 0.3, cache_write: 3.75 }, max_output_tokens: 32000, routes: [ { provider: claude, model: claude-sonnet-4-5 } ] }
  - { id: claude-haiku-4-5, kind: chat, price: { input: 1.25, output: 10 }, max_output_tokens: 32000, routes: [ { provider: up, model: gpt-5 } ] }
  - { id: gpt-5, kind: chat, price: { input: 1.25, output: 10, cached_input: 0.125 }, max_output_tokens: 32000, routes: [ { provider: up, model: gpt-5-2025-08-07 } ] }
  - { id: claude-for-codex, kind: chat, price: { input: 3, output: 15 }, max_output_tokens: 32000, routes: [ { provider: claude, model: claude-sonnet-4-5 } ] }
`,
    { ...process.env, FAKE_ANTHROPIC_KEY: API_KEY },
  );
  const k = await gw.newKey({}, 50_000_000);
  secret = k.secret;
  accountId = k.accountId;
});

afterAll(async () => {
  await gw?.close();
  await claude?.close();
  await openai?.close();
});

const claudeCode = (model: string, prompt: string, dir: string) => agentClaudeCode(gw.url, secret, model, prompt, dir);

describe('Claude Code', () => {
  test('a turn with one tool round trip, natively to Anthropic', async () => {
    const dir = temp('switchyard-claude-work-');
    fs.writeFileSync(path.join(dir, 'note.txt'), 'The password is swordfish.\n');
    const before = claude.requests.length;
    claude.plan(
      {
        kind: 'sse',
        events: streamEvents(
          message([
            { type: 'tool_use', id: 'toolu_read1', name: 'Read', input: { file_path: path.join(dir, 'note.txt') } },
          ]),
        ),
      },
      {
        kind: 'sse',
        events: streamEvents(message([{ type: 'text', text: 'The note says the password is swordfish.' }])),
      },
    );
    const r = await claudeCode('claude-sonnet-4-5', 'What does note.txt say?', dir);
    if (r.code !== 0) console.log(r.stdout, r.stderr);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('The note says the password is swordfish.');
    const sent = claude.requests.slice(before).filter((q) => q.path === '/v1/messages');
    // the first request is Claude Code's own, as it wrote it: its tools, system blocks and thinking
    expect(sent[0].body.tools.length).toBeGreaterThan(3);
    expect(sent[0].body.model).toBe('claude-sonnet-4-5');
    // the tool ran on this machine and its result went back upstream
    const results = sent
      .flatMap((q) => q.body.messages.flatMap((m: any) => (Array.isArray(m.content) ? m.content : [])))
      .filter((b: any) => b.type === 'tool_result');
    expect(JSON.stringify(results)).toContain('swordfish');
    await gw.settled();
    const records = await gw.app
      .db('usage_records')
      .where({ account_id: accountId, endpoint: 'messages', model: 'claude-sonnet-4-5' });
    expect(records.length).toBeGreaterThanOrEqual(2);
  });

  test('a turn with one tool round trip, translated to an OpenAI upstream', async () => {
    const dir = temp('switchyard-claude-work-');
    fs.writeFileSync(path.join(dir, 'todo.txt'), 'Buy milk.\n');
    const base = { id: 'chatcmpl-cc', object: 'chat.completion.chunk', created: 1, model: 'gpt-5' };
    const args = JSON.stringify({ file_path: path.join(dir, 'todo.txt') });
    openai.plan(
      {
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
                    { index: 0, id: 'call_read', type: 'function', function: { name: 'Read', arguments: args } },
                  ],
                },
                finish_reason: null,
              },
            ],
          },
          { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
          { ...base, choices: [], usage: { prompt_tokens: 900, completion_tokens: 20, total_tokens: 920 } },
        ],
      },
      {
        kind: 'sse',
        events: [
          {
            ...base,
            choices: [
              { index: 0, delta: { role: 'assistant', content: 'The list says: buy milk.' }, finish_reason: null },
            ],
          },
          { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
          { ...base, choices: [], usage: { prompt_tokens: 950, completion_tokens: 8, total_tokens: 958 } },
        ],
      },
    );
    const before = openai.requests.length;
    const r = await claudeCode('claude-haiku-4-5', 'What does todo.txt say?', dir);
    if (r.code !== 0) console.log(r.stdout, r.stderr);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('The list says: buy milk.');
    const sent = openai.requests.slice(before).filter((q) => q.path === '/v1/chat/completions');
    const toolMessages = sent.flatMap((q) => q.body.messages).filter((m: any) => m.role === 'tool');
    expect(toolMessages[0]).toMatchObject({ tool_call_id: 'call_read' });
    expect(toolMessages[0].content).toContain('Buy milk.');
  });
});

/** `codex exec` in a fresh CODEX_HOME whose config.toml names the gateway as a Responses provider. */
function codex(model: string, prompt: string) {
  const home = temp('switchyard-codex-home-');
  fs.writeFileSync(
    path.join(home, 'config.toml'),
    `model = "${model}"\nmodel_provider = "switchyard"\n\n[model_providers.switchyard]\nname = "switchyard"\nbase_url = "${gw.url}/v1"\nenv_key = "SWITCHYARD_KEY"\nwire_api = "responses"\n`,
  );
  return run(
    'codex',
    ['exec', '--skip-git-repo-check', prompt],
    { PATH: process.env.PATH, HOME: home, CODEX_HOME: home, SWITCHYARD_KEY: secret },
    temp('switchyard-codex-work-'),
  );
}

describe('Codex', () => {
  test('a turn through the Responses API', async () => {
    const before = openai.requests.length;
    const r = await codex('gpt-5', 'say hi');
    if (r.code !== 0) console.log(r.stdout, r.stderr, JSON.stringify(openai.requests.slice(before).map((q) => q.path)));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Echo: say hi');
    const sent = openai.requests.slice(before).filter((q) => q.path === '/v1/responses');
    expect(sent[0].body).toMatchObject({ model: 'gpt-5-2025-08-07', stream: true, store: false });
    expect(sent[0].body.tools.some((t: { type: string }) => t.type === 'web_search')).toBe(false); // dropped: it bills per search
  });

  test('a turn through the Responses API translated to an Anthropic upstream: namespaced tools become functions', async () => {
    const before = claude.requests.length;
    claude.plan({ kind: 'sse', events: streamEvents(message([{ type: 'text', text: 'Hi from Claude.' }])) });
    const r = await codex('claude-for-codex', 'say hi');
    if (r.code !== 0) console.log(r.stdout, r.stderr);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Hi from Claude.');
    const sent = claude.requests.slice(before).filter((q) => q.path === '/v1/messages');
    expect(sent[0].body.model).toBe('claude-sonnet-4-5');
    const names: string[] = sent[0].body.tools.map((t: { name: string }) => t.name);
    expect(names).toContain('exec_command');
    // Codex groups its sub-agent tools in a namespace: through chat they are functions named <namespace>__<name>
    expect(names.some((n) => /^\w+__\w+$/.test(n))).toBe(true);
    expect(JSON.stringify(sent[0].body.messages)).toContain('say hi');
  });
});
