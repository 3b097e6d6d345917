/** The tables derived from the contract (scripts/contract.ts): its rules, and that the generated files are current. */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { ContractError, derive, generate, GENERATED } from '../../scripts/contract';
import { checkTables } from '../../src/http/api';

const ROOT = path.join(__dirname, '..', '..');

const json = (schema: string) => ({
  content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } },
});
const chat = (x: Record<string, unknown> = {}) => ({
  operationId: 'createChat',
  security: [{ bearerAuth: ['chat'] }],
  'x-switchyard': { meter: 'paid', wire: 'chat', kinds: ['chat'], stream: 'Chunk', ...x },
  requestBody: json('Req'),
  responses: { '200': json('Res') },
});

/** A small contract that keeps every rule; `paths` are added to (or replace) its own. */
function spec(paths: Record<string, unknown> = {}) {
  return {
    paths: {
      '/v1/chat': { post: chat() },
      '/v1/models': {
        get: { operationId: 'listModels', security: [{ bearerAuth: ['models'] }], 'x-switchyard': { meter: 'none' } },
      },
      '/console/keys': {
        get: { operationId: 'listKeys', security: [{ cookieSession: [] }] },
        post: { operationId: 'createKey', security: [{ cookieSession: [], csrfToken: [] }] },
      },
      '/admin/accounts': {
        get: {
          operationId: 'adminList',
          security: [{ adminToken: [] }, { operatorSession: [] }],
          'x-switchyard': { role: 'viewer' },
        },
      },
      '/admin/session': { get: { operationId: 'whoAmI', security: [{ operatorSession: [] }] } },
      '/login': { post: { operationId: 'login', security: [] } },
      ...paths,
    },
    components: {
      schemas: {
        KeyScope: {
          type: 'string',
          enum: ['chat', 'models'],
          'x-enumDescriptions': { chat: 'Chat', models: "Models' list" },
        },
        ModelKind: { type: 'string', enum: ['chat'] },
        OperatorRole: { type: 'string', enum: ['owner', 'viewer'] },
        Req: { type: 'object' },
        Res: { type: 'object' },
        Chunk: { type: 'object' },
      },
    },
  };
}

function problems(s: Record<string, unknown>): string[] {
  try {
    derive(s);
  } catch (e) {
    expect(e).toBeInstanceOf(ContractError);
    return (e as ContractError).problems;
  }
  throw new Error('the contract was accepted');
}

test('who may call each operation follows its security; what is checked of a key and its wire, its x-switchyard', () => {
  expect(derive(spec())).toEqual({
    scopes: ['chat', 'models'],
    scopeLabels: { chat: 'Chat', models: "Models' list" },
    kinds: ['chat'],
    roles: ['owner', 'viewer'],
    endpoints: {
      createChat: { caller: 'key', scope: 'chat', anthropicKey: false, meter: 'paid', wire: 'chat' },
      listModels: { caller: 'key', scope: 'models', anthropicKey: false, meter: 'none' },
      listKeys: { caller: 'session', csrf: false },
      createKey: { caller: 'session', csrf: true },
      adminList: { caller: 'admin', role: 'viewer', csrf: false },
      whoAmI: { caller: 'operator', csrf: false },
      login: { caller: 'public' },
    },
    wires: { chat: { operationId: 'createChat', kinds: ['chat'], stream: 'Chunk', paid: true, binary: false } },
  });
  const anthropic = { ...chat(), security: [{ bearerAuth: ['chat'] }, { anthropicApiKey: ['chat'] }] };
  expect(derive(spec({ '/v1/chat': { post: anthropic } })).endpoints.createChat).toMatchObject({
    caller: 'key',
    anthropicKey: true,
  });
});

test('a session operation that changes state without the CSRF header is refused', () => {
  const unsafe = { operationId: 'createKey', security: [{ cookieSession: [] }] };
  expect(problems(spec({ '/console/keys': { post: unsafe } }))).toEqual([
    'createKey (POST /console/keys) changes state and must require csrfToken with cookieSession',
  ]);
});

test('security the gateway cannot enforce is refused: no security at all, mixed schemes, a key without one scope', () => {
  const ops = {
    '/a': { get: { operationId: 'a' } },
    '/b': { get: { operationId: 'b', security: [{ cookieSession: [] }, { adminToken: [] }] } },
    '/c': { get: { operationId: 'c', security: [{ bearerAuth: [] }], 'x-switchyard': { meter: 'none' } } },
    '/d': {
      get: {
        operationId: 'd',
        security: [{ bearerAuth: ['chat'] }, { anthropicApiKey: ['models'] }],
        'x-switchyard': { meter: 'none' },
      },
    },
  };
  expect(problems(spec(ops))).toEqual([
    'a (GET /a) must state its security (`security: []` when public)',
    ...['b (GET /b)', 'c (GET /c)', 'd (GET /d)'].map(
      (o) =>
        `${o} must require bearerAuth (or anthropicApiKey besides) with one scope, cookieSession, adminToken with operatorSession, operatorSession, or nothing`,
    ),
  ]);
});

test('an operation called with a key must say its meter, and a paid one its wire; only they have x-switchyard', () => {
  const { 'x-switchyard': _, ...bare } = chat();
  expect(problems(spec({ '/v1/chat': { post: bare } }))[0]).toBe(
    'createChat (POST /v1/chat) must say in x-switchyard.meter what is checked before its body is read: paid, metered, counted, none',
  );
  expect(problems(spec({ '/v1/chat': { post: chat({ meter: 'free' }) } }))[0]).toMatch(
    /must say in x-switchyard.meter/,
  );
  const noWire = { ...chat(), 'x-switchyard': { meter: 'paid' } };
  expect(problems(spec({ '/v1/chat': { post: noWire } }))).toContain(
    'createChat (POST /v1/chat) is paid and must name its wire (x-switchyard.wire)',
  );
  const session = { operationId: 'listKeys', security: [{ cookieSession: [] }], 'x-switchyard': { meter: 'none' } };
  expect(problems(spec({ '/console/keys': { get: session } }))).toEqual([
    'listKeys (GET /console/keys) has x-switchyard, which only operations called with an API key or as an operator have',
  ]);
  expect(problems(spec({ '/v1/chat': { post: chat({ price: 1 }) } }))).toEqual([
    'createChat (POST /v1/chat) has x-switchyard.price, which is not one of meter, wire, kinds, stream',
  ]);
});

test('an admin operation: the token or an operator, its least role named, the CSRF header when it changes state', () => {
  const admin = (x: Record<string, unknown>) => ({
    '/admin/accounts': {
      post: {
        operationId: 'adminList',
        security: [{ adminToken: [] }, { operatorSession: [], csrfToken: [] }],
        'x-switchyard': { role: 'owner' },
        ...x,
      },
    },
  });
  expect(derive(spec(admin({}))).endpoints.adminList).toEqual({ caller: 'admin', role: 'owner', csrf: true });
  expect(problems(spec(admin({ 'x-switchyard': { role: 'root' } })))).toEqual([
    'adminList (POST /admin/accounts) must name in x-switchyard.role the least role of OperatorRole that may call it',
  ]);
  expect(problems(spec(admin({ security: [{ adminToken: [] }, { operatorSession: [] }] })))).toEqual([
    'adminList (POST /admin/accounts) changes state and must require csrfToken with operatorSession',
  ]);
  expect(problems(spec(admin({ security: [{ adminToken: [] }] })))[0]).toMatch(/must require bearerAuth/);
});

test("scopes, kinds and stream events must be the contract's own; a wire is one operation; every scope and kind is used", () => {
  const other = { ...chat(), operationId: 'createOther' };
  expect(problems(spec({ '/v1/other': { post: other } }))).toEqual([
    "createOther (POST /v1/other) goes through the wire 'chat' of createChat: a wire is one operation's",
  ]);
  expect(problems(spec({ '/v1/chat': { post: chat({ kinds: ['image'] }) } }))).toEqual([
    'createChat (POST /v1/chat) must list in x-switchyard.kinds the kinds of ModelKind its wire serves',
    "the kind 'chat' of ModelKind is served by no wire",
  ]);
  expect(problems(spec({ '/v1/chat': { post: chat({ stream: 'Nope' }) } }))).toEqual([
    'createChat (POST /v1/chat) names in x-switchyard.stream no schema of components.schemas',
  ]);
  const images = { ...chat(), security: [{ bearerAuth: ['images'] }] };
  expect(problems(spec({ '/v1/chat': { post: images } }))).toEqual([
    "createChat (POST /v1/chat) requires the scope 'images', which KeyScope does not list",
    "the scope 'chat' of KeyScope is required by no operation",
  ]);
});

test('a wire takes JSON and answers JSON or bytes (audio: a binary answer, streamed, typed as its chunks)', () => {
  const bytes = { content: { 'audio/*': { schema: { type: 'string', format: 'binary' } } } };
  const speech = { ...chat(), responses: { '200': bytes } };
  expect(derive(spec({ '/v1/chat': { post: speech } })).wires.chat).toMatchObject({ binary: true });
  const wire = generate(YAML.stringify(spec({ '/v1/chat': { post: speech } })))['src/contract.ts'];
  expect(wire).toContain("    res: never;\n    chunk: components['schemas']['Chunk'] | Uint8Array;");
  const text = { content: { 'text/plain': { schema: { type: 'string' } } } };
  expect(problems(spec({ '/v1/chat': { post: { ...chat(), responses: { '200': text } } } }))).toEqual([
    'createChat (POST /v1/chat) has a wire, so it must take application/json (or multipart/form-data with files) and answer (200) application/json or bytes (format: binary)',
  ]);
  expect(problems(spec({ '/v1/chat': { post: { ...chat(), requestBody: bytes } } }))).toEqual([
    'createChat (POST /v1/chat) has a wire, so it must take application/json (or multipart/form-data with files) and answer (200) application/json or bytes (format: binary)',
  ]);
});

test('every scope is described for people, and only the scopes', () => {
  const described = (d: Record<string, string>) => {
    const s = spec();
    s.components.schemas.KeyScope['x-enumDescriptions'] = d as never;
    return s;
  };
  const problem = 'components.schemas.KeyScope must describe each of its values, and only them, in x-enumDescriptions';
  expect(problems(described({ chat: 'Chat' }))).toEqual([problem]);
  expect(problems(described({ chat: 'Chat', models: '' }))).toEqual([problem]);
  expect(problems(described({ chat: 'Chat', models: 'Models', images: 'Images' }))).toEqual([problem]);
  expect(generate(YAML.stringify(spec()))['src/contract.ts']).toContain(`models: 'Models\\' list',`);
});

test('the generated files are what openapi/openapi.yaml makes (npm run generate)', () => {
  const files = generate(fs.readFileSync(path.join(ROOT, 'openapi', 'openapi.yaml'), 'utf8'));
  expect(Object.keys(files)).toEqual([...GENERATED]);
  for (const f of GENERATED) expect([f, fs.readFileSync(path.join(ROOT, f), 'utf8')]).toEqual([f, files[f]]);
});

test('the server refuses to start on a contract edited since the tables were generated', () => {
  const text = fs.readFileSync(path.join(ROOT, 'openapi', 'openapi.yaml'), 'utf8');
  expect(() => checkTables(text)).not.toThrow();
  expect(() => checkTables(text.replace(/\n/g, '\r\n'))).not.toThrow();
  expect(() => checkTables(text.replace('security: []', 'security:\n        - cookieSession: []'))).toThrow(
    /openapi.yaml changed since src\/contract.ts was generated from it: run npm run generate/,
  );
});
