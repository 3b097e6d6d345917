/**
 * Bodies passed along as bytes (src/gateway/splice.ts): what the upstream parses of the spliced bytes is exactly what
 * it parsed of the old path's JSON.stringify, for many requests (fuzzed: whitespace, escapes, unicode, duplicate keys,
 * numbers as clients write them); every spliced key occurs once; a nested `model` is never touched.
 */
import type { ModelConfig, ProviderConfig } from '../../src/config';
import { inspect } from '../../src/gateway/bound';
import { OPERATIONS } from '../../src/gateway/operations';
import { anthropic } from '../../src/gateway/providers/anthropic';
import { openai } from '../../src/gateway/providers/openai';
import type { CallContext, HttpAdapter } from '../../src/gateway/providers/types';
import { derived, keepSource, members, serialized } from '../../src/gateway/splice';
import { rng } from '../helpers/rng';

const model = (allow: string[] = []) => ({ id: 'client-model', allow }) as unknown as ModelConfig;
const ctx = (stream: boolean, output_limit?: string): CallContext =>
  ({
    config: {
      name: 'p',
      base_url: 'http://127.0.0.1:1',
      settings: output_limit ? { output_limit } : {},
    } as ProviderConfig,
    model: 'upstream-model',
    stream,
    maxOutputTokens: 77,
    headers: {},
    state: undefined,
  }) as CallContext;

type Route = { op: keyof typeof OPERATIONS; adapter: HttpAdapter<any, any, any> };
const ROUTES: Route[] = [
  { op: 'chat', adapter: openai.operations.chat as HttpAdapter<any, any, any> },
  { op: 'messages', adapter: anthropic.operations.messages as HttpAdapter<any, any, any> },
  { op: 'responses', adapter: openai.operations.responses as HttpAdapter<any, any, any> },
];

/** What the upstream was sent: by the old path (JSON.stringify) and by the new (spliced from the client's bytes). */
function bothPaths(raw: Buffer, route: Route, c: CallContext, m: ModelConfig) {
  const op = OPERATIONS[route.op];
  const run = (keep: boolean) => {
    const body = JSON.parse(raw.toString('utf8'));
    const profile = inspect(body);
    if (keep) keepSource(body, raw, 'request', profile.keys);
    const passed = op.features(body, m, profile);
    derived(passed, body);
    const upstream = route.adapter.request(passed, c);
    derived(upstream, passed);
    return keep ? serialized(upstream, 'request') : JSON.stringify(upstream);
  };
  let old: string | Buffer;
  try {
    old = run(false);
  } catch (e) {
    expect(() => run(true)).toThrow((e as Error).message); // refused alike
    return null;
  }
  const out = run(true);
  // a Buffer: written from the client's bytes; a string: serialised whole (small, or duplicates deeper down)
  return { old: String(old), spliced: out.toString(), fromBytes: Buffer.isBuffer(out) };
}

/** JSON with its keys sorted, numbers as JSON writes them: equal texts are what any upstream reads alike. */
const canonical = (v: unknown): string =>
  JSON.stringify(v, (_k, x) =>
    x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort()) : x,
  );

/** Keys of every object, as parsed. */
const keyCount = (v: unknown): number =>
  !v || typeof v !== 'object'
    ? 0
    : Array.isArray(v)
      ? v.reduce((n: number, x) => n + keyCount(x), 0)
      : Object.entries(v).reduce((n, [, x]) => n + 1 + keyCount(x), 0);

/** The upstream reads what the old path sent, and no key occurs twice anywhere in what it is sent. */
function expectSame(r: { old: string; spliced: string }) {
  const parsed = JSON.parse(r.spliced);
  expect(canonical(parsed)).toBe(canonical(JSON.parse(r.old)));
  expect(members(Buffer.from(r.spliced))!.colons).toBe(keyCount(parsed));
}

// ---------------------------------------------------------------------------------------------------------------
// A small deterministic generator of JSON texts as clients write them

const KEYS = [
  'model',
  'max_tokens',
  'max_completion_tokens',
  'stream',
  'n',
  'tools',
  'x',
  'é',
  '日本',
  'a"b',
  'c\\d',
  'e:f',
  '{',
  'service_tier',
  'stream_options',
  'store',
  'previous_response_id',
  'metadata',
  'max_output_tokens',
  'speed',
  'inference_geo',
  'cache_control',
  'ttl',
  'type',
  '__proto__',
];
const STRINGS = [
  '',
  'model',
  'hi "there"',
  'back\\slash',
  'line\nbreak',
  'tab\t',
  'ünïcödé — 日本語 🎉',
  '\u0001\u001f',
  '{"model":"x"}',
  ':,[]{}',
  '\ud83d\ude00',
  '1h',
  'standard_only',
  'priority',
];
const NUMBERS = ['0', '1', '-1', '1.0', '1e2', '-0', '0.1', '2.50', '123456789012345678901', '1E-7', '32000'];

function writer(r: () => number) {
  const pick = <T>(a: T[]) => a[Math.floor(r() * a.length)];
  const ws = () => (r() < 0.3 ? pick([' ', '\n', '\t', '\r\n', '  ']) : '');
  const str = (s: string) => {
    let out = '"';
    for (const ch of s) {
      const c = ch.codePointAt(0)!;
      if (r() < 0.15 && c < 0x10000) out += `\\u${c.toString(16).padStart(4, '0')}`;
      else if (ch === '"' || ch === '\\') out += `\\${ch}`;
      else if (c < 0x20) out += `\\u${c.toString(16).padStart(4, '0')}`;
      else out += ch;
    }
    return `${out}"`;
  };
  const value = (depth: number): string => {
    const x = r();
    if (depth > 3 || x < 0.35)
      return pick([() => str(pick(STRINGS)), () => pick(NUMBERS), () => pick(['true', 'false', 'null'])])();
    if (x < 0.6)
      return `[${ws()}${Array.from({ length: Math.floor(r() * 4) }, () => value(depth + 1)).join(`${ws()},${ws()}`)}${ws()}]`;
    return object(depth + 1, Math.floor(r() * 4), r() < 0.05);
  };
  const object = (depth: number, n: number, dup: boolean, fixed: string[] = []): string => {
    const members = [...fixed];
    const keys = KEYS.filter((k) => !fixed.some((f) => f.startsWith(`"${k}"`))).sort(() => r() - 0.5);
    for (let i = 0; i < n; i++) members.push(`${str(keys[i])}${ws()}:${ws()}${value(depth)}`);
    if (dup && members.length) members.push(members[Math.floor(r() * members.length)]);
    return `{${ws()}${members.join(`${ws()},${ws()}`)}${ws()}}`;
  };
  return { str, value, object, ws, pick };
}

/** A request the route's validation would let through, with random extra fields and values inside. */
function request(route: Route, r: () => number): Buffer {
  const w = writer(r);
  const long = () => w.str(Array.from({ length: 40 + Math.floor(r() * 80) }, () => w.pick(STRINGS)).join(' '));
  const msg = (role: string) =>
    w.object(2, Math.floor(r() * 3), r() < 0.1, [`"role":"${role}"`, `"content":${long()}`]);
  const fixed =
    route.op === 'responses'
      ? [`"model":${w.str('client-model')}`, `"input":${r() < 0.5 ? w.str('hello') : `[${msg('user')}]`}`]
      : [`"model":${w.str('client-model')}`, `"messages":[${msg('user')}${r() < 0.3 ? `,${msg('system')}` : ''}]`];
  if (route.op === 'messages') fixed.push(`"max_tokens":${w.pick(['100', '1e2', '100.0', '32000'])}`);
  if (r() < 0.3) fixed.push(`"model"${w.ws()}:${w.ws()}"smuggled"`); // a duplicate model: the last wins
  if (r() < 0.2) fixed.push(`"mod\\u0065l":"escaped"`);
  const top = w.object(
    1,
    Math.floor(r() * 5),
    r() < 0.15,
    fixed.sort(() => r() - 0.5),
  );
  return Buffer.from(`${w.ws()}${top}${w.ws()}`);
}

describe('splice', () => {
  test('fuzzed requests: the upstream reads exactly what the old path sent it, each key once', () => {
    let compared = 0;
    let fromBytes = 0;
    for (let seed = 1; seed <= 2000; seed++) {
      const r = rng(seed);
      const route = ROUTES[seed % ROUTES.length];
      const raw = request(route, r);
      try {
        JSON.parse(raw.toString('utf8'));
      } catch {
        continue; // (the generator writes valid JSON; a body that is not is refused before any of this)
      }
      const m = model(r() < 0.3 ? ['priority', 'server_tools', 'cache_1h', 'data_residency'] : []);
      const res = bothPaths(raw, route, ctx(r() < 0.5, r() < 0.5 ? 'max_tokens' : undefined), m);
      if (!res) continue;
      expectSame(res);
      compared++;
      if (res.fromBytes) fromBytes++;
    }
    expect(compared).toBeGreaterThan(1500);
    // a good part went the new way (the others had duplicate keys, which half of the bodies here are given)
    expect(fromBytes).toBeGreaterThan(compared * 0.25);
  });

  test('only the top level is spliced: a nested "model" is kept, the top-level one is the route\'s, once', () => {
    const raw = Buffer.from(
      ` { "model" : "client-model", "messages":[{"role":"user","content":"hi","model":"nested"}], "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"model":{"type":"string"}}}}}], "x": "${'y'.repeat(2000)}", "model":"client-model" } `,
    );
    const r = bothPaths(raw, ROUTES[0], ctx(false), model())!;
    expectSame(r);
    expect(r.spliced.match(/"model"/g)!.length).toBe(3); // the top-level one (once), the message's and the tool's
    expect(JSON.parse(r.spliced).model).toBe('upstream-model');
    expect(r.spliced).toContain('"content":"hi","model":"nested"'); // kept as written
    expect(r.spliced).not.toContain('client-model');
  });

  test('a key written with escapes is the same key: "mod\\u0065l" is removed with the other models', () => {
    const raw = Buffer.from(
      `{"mod\\u0065l":"a","messages":[{"role":"user","content":"${'z'.repeat(2000)}"}],"model":"client-model"}`,
    );
    const r = bothPaths(raw, ROUTES[0], ctx(false), model())!;
    expectSame(r);
    expect(r.spliced).not.toContain('mod\\u0065l');
    expect(r.spliced.match(/"model"/g)!.length).toBe(1);
  });

  test('duplicates deeper down: the body is serialised whole (no upstream can read another value than we did)', () => {
    const raw = Buffer.from(
      `{"model":"client-model","messages":[{"role":"user","content":"${'x'.repeat(2000)}","content":"short"}]}`,
    );
    const r = bothPaths(raw, ROUTES[0], ctx(false), model())!;
    expect(r.spliced).toBe(r.old);
    expect(r.spliced).not.toContain('xxxx');
  });

  test("a top-level number is kept only as JSON writes it; the limit is the hold's", () => {
    const raw = Buffer.from(
      `{"model":"client-model","n":1.0,"temperature":1e0,"top_p":0.5,"max_tokens":10,"messages":[{"role":"user","content":"${'q'.repeat(2000)}"}]}`,
    );
    const r = bothPaths(raw, ROUTES[0], ctx(false), model())!;
    expectSame(r);
    expect(r.spliced).toContain('"n":1,');
    expect(r.spliced).toContain('"temperature":1,');
    expect(r.spliced).toContain('"top_p":0.5');
    expect(JSON.parse(r.spliced)).toMatchObject({ max_tokens: 77, max_completion_tokens: 77 });
  });

  test('an answer goes back as the upstream wrote it, with only what the gateway changes spliced in', () => {
    const text = `{"id":"chatcmpl-1", "model":"upstream-model","choices":[{"index":0,"message":{"role":"assistant","content":"${'w'.repeat(2000)}","model":"kept"}}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3},"model":"upstream-model"}`;
    const res = JSON.parse(text);
    keepSource(res, Buffer.from(text), 'answer');
    const shown = { ...res, model: 'client-model', usage: res.usage };
    derived(shown, res);
    const out = serialized(shown, 'answer').toString();
    expect(serialized(shown, 'request')).toBe(JSON.stringify(shown)); // an answer is never a request's bytes
    expect(out).toBe(
      `{"id":"chatcmpl-1","choices":[{"index":0,"message":{"role":"assistant","content":"${'w'.repeat(2000)}","model":"kept"}}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3},"model":"client-model"}`,
    );
  });

  test('small or unparsed objects are written by JSON.stringify', () => {
    const small = JSON.parse('{"a": 1.0}');
    keepSource(small, Buffer.from('{"a": 1.0}'), 'answer');
    expect(serialized(small, 'answer')).toBe('{"a":1}');
    expect(serialized({ b: [1, 'x'] }, 'answer')).toBe('{"b":[1,"x"]}');
  });
});
