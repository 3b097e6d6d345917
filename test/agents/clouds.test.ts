/**
 * The real Claude Code CLI, offline, through Switchyard to the clouds (`make agents`): a turn with one tool round
 * trip through /v1/messages to a Bedrock route (InvokeModelWithResponseStream, each request signed with SigV4 and
 * checked by the fake with an independent signer) and to a Vertex route (streamRawPredict, with a service account's
 * token from the fake's token endpoint). Each run has a fresh HOME in a temporary folder.
 */
import fs from 'node:fs';
import path from 'node:path';
import { message, streamEvents } from '../fakes/anthropicUpstream';
import { anthropicFrames, FakeBedrock, framesPlan, KEYS, REGION } from '../fakes/bedrockUpstream';
import { FakeGoogleAuth, FakeVertex, LOCATION, PROJECT } from '../fakes/vertexUpstream';
import { BIN, claudeCode as agentClaudeCode, run, temp } from './cli';
import { startGateway, type TestGateway } from '../helpers/app';

jest.setTimeout(120_000);

const BEDROCK_CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const VERTEX_CLAUDE = 'claude-sonnet-4-5@20250929';

let bedrock: FakeBedrock;
let auth: FakeGoogleAuth;
let vertex: FakeVertex;
let gw: TestGateway;
let secret: string;
let accountId: number;

beforeAll(async () => {
  if (!fs.existsSync(path.join(BIN, 'claude')))
    throw new Error('claude is not installed: run `make agents` (it installs test/agents/package.json)');
  bedrock = await new FakeBedrock().start();
  auth = await new FakeGoogleAuth().start();
  vertex = await new FakeVertex(auth).start();
  const key = auth.newServiceAccount('agents');
  gw = await startGateway(
    `
limits: { rpm: 0, tpm: 0 }
providers:
  aws: { type: bedrock, region: ${REGION}, base_url: "${bedrock.url}", access_key_id: "${KEYS.accessKeyId}", secret_access_key: "\${AWS_TEST_SECRET}" }
  gcp: { type: vertex, project: ${PROJECT}, location: ${LOCATION}, base_url: "${vertex.url}", credentials: "\${VERTEX_TEST_KEY}" }
models:
  - { id: claude-on-bedrock, kind: chat, price: { input: 3, output: 15 }, max_output_tokens: 32000, routes: [ { provider: aws, model: "${BEDROCK_CLAUDE}" } ] }
  - { id: claude-on-vertex, kind: chat, price: { input: 3, output: 15 }, max_output_tokens: 32000, routes: [ { provider: gcp, model: "${VERTEX_CLAUDE}" } ] }
`,
    { ...process.env, AWS_TEST_SECRET: KEYS.secretAccessKey, VERTEX_TEST_KEY: JSON.stringify(key) },
  );
  const k = await gw.newKey({}, 50_000_000);
  secret = k.secret;
  accountId = k.accountId;
});

afterAll(async () => {
  await gw?.close();
  await bedrock?.close();
  await vertex?.close();
  await auth?.close();
});

const claudeCode = (model: string, prompt: string, dir: string) => agentClaudeCode(gw.url, secret, model, prompt, dir);

/** The two answers of a turn with one Read: the tool call, then the text that quotes what it read. */
function turn(file: string, text: string, model: string) {
  return [
    streamEvents(
      message([{ type: 'tool_use', id: 'toolu_read1', name: 'Read', input: { file_path: file } }], { model }),
    ),
    streamEvents(message([{ type: 'text', text }], { model })),
  ];
}

/** Every tool result the requests carried back upstream. */
const toolResults = (bodies: any[]) =>
  JSON.stringify(
    bodies
      .flatMap((b) => (b.messages ?? []).flatMap((m: any) => (Array.isArray(m.content) ? m.content : [])))
      .filter((b: any) => b.type === 'tool_result'),
  );

async function recorded(model: string): Promise<number> {
  await gw.settled();
  return (await gw.app.db('usage_records').where({ account_id: accountId, endpoint: 'messages', model })).length;
}

test('Claude Code completes a turn through a Bedrock route (InvokeModelWithResponseStream, SigV4)', async () => {
  const dir = temp('switchyard-claude-work-');
  const file = path.join(dir, 'note.txt');
  fs.writeFileSync(file, 'The password is swordfish.\n');
  const before = bedrock.requests.length;
  bedrock.plan(
    ...turn(file, 'On Bedrock, the note says swordfish.', BEDROCK_CLAUDE).map((ev) => framesPlan(anthropicFrames(ev))),
  );
  const r = await claudeCode('claude-on-bedrock', 'What does note.txt say?', dir);
  if (r.code !== 0) console.log(r.stdout, r.stderr);
  expect(r.code).toBe(0);
  expect(r.stdout).toContain('On Bedrock, the note says swordfish.');
  const sent = bedrock.requests.slice(before);
  const streamed = sent.filter((q) => q.path.endsWith('/invoke-with-response-stream'));
  expect(streamed.length).toBeGreaterThanOrEqual(2);
  expect(streamed[0].path).toBe(`/model/${encodeURIComponent(BEDROCK_CLAUDE)}/invoke-with-response-stream`);
  expect(streamed[0].body).toMatchObject({ anthropic_version: 'bedrock-2023-05-31' });
  expect(streamed[0].body.tools.length).toBeGreaterThan(3); // Claude Code's own tools, as it wrote them
  expect(toolResults(streamed.map((q) => q.body))).toContain('swordfish');
  expect(await recorded('claude-on-bedrock')).toBeGreaterThanOrEqual(2);
});

test('Claude Code completes a turn through a Vertex route (streamRawPredict, service-account token)', async () => {
  const dir = temp('switchyard-claude-work-');
  const file = path.join(dir, 'note.txt');
  fs.writeFileSync(file, 'The password is marlin.\n');
  const before = vertex.requests.length;
  vertex.plan(
    ...turn(file, 'On Vertex, the note says marlin.', VERTEX_CLAUDE).map((events) => ({
      kind: 'sse' as const,
      events,
    })),
  );
  const r = await claudeCode('claude-on-vertex', 'What does note.txt say?', dir);
  if (r.code !== 0) console.log(r.stdout, r.stderr);
  expect(r.code).toBe(0);
  expect(r.stdout).toContain('On Vertex, the note says marlin.');
  const streamed = vertex.requests.slice(before).filter((q) => q.path.endsWith(':streamRawPredict'));
  expect(streamed.length).toBeGreaterThanOrEqual(2);
  expect(streamed[0].path).toContain(`/publishers/anthropic/models/${VERTEX_CLAUDE}:streamRawPredict`);
  expect(streamed[0].body).toMatchObject({ anthropic_version: 'vertex-2023-10-16' });
  expect(streamed[0].body).not.toHaveProperty('model');
  expect(toolResults(streamed.map((q) => q.body))).toContain('marlin');
  expect(await recorded('claude-on-vertex')).toBeGreaterThanOrEqual(2);
});
