/**
 * The prompt bound's measure of a request (src/gateway/bound.ts) taken from the bytes it was parsed from: the escapes
 * JSON writes are counted from the text's escape sequences instead of by scanning every string, and the measure is
 * never below the scan's (the hold must cover the bill) and equal to it unless surrogate pairs were written escaped.
 */
import { escapes, inspect } from '../../src/gateway/bound';
import { rng } from '../helpers/rng';

/** Every kind of character JSON treats apart: quotes, backslashes, each control character, surrogates, the rest. */
const CHARS = [
  'a',
  ' ',
  '/',
  '"',
  '\\',
  'é',
  '日',
  '\u007f',
  '\u2028',
  '\ud83d\ude00', // a pair
  '\ud800', // lone halves
  '\udfff',
  ...Array.from({ length: 32 }, (_, c) => String.fromCharCode(c)),
];

/** JSON text of `v` as a client may write it: any character as a \u escape, `/` as `\/`, whitespace anywhere. */
function write(v: unknown, r: () => number, pairs: { escaped: boolean }): string {
  const ws = () => (r() < 0.3 ? ' \n\t'[Math.floor(r() * 3)] : '');
  if (typeof v === 'string') {
    let out = '"';
    for (let i = 0; i < v.length; i++) {
      const c = v.charCodeAt(i);
      const paired = c >= 0xd800 && c <= 0xdbff && i + 1 < v.length && v.charCodeAt(i + 1) >= 0xdc00;
      if (paired && r() < 0.5) {
        out += v.slice(i, i + 2); // written as UTF-8
        i++;
      } else if (r() < 0.2 || c < 0x20 || (c >= 0xd800 && c <= 0xdfff)) {
        if (paired) pairs.escaped = true;
        const hex = c.toString(16).padStart(4, '0');
        out += `\\u${r() < 0.5 ? hex : hex.toUpperCase()}`;
      } else if (v[i] === '"' || v[i] === '\\') out += `\\${v[i]}`;
      else if (v[i] === '/' && r() < 0.5) out += '\\/';
      else out += v[i];
    }
    return `${out}"`;
  }
  if (Array.isArray(v)) return `[${ws()}${v.map((x) => write(x, r, pairs)).join(`${ws()},${ws()}`)}${ws()}]`;
  if (v && typeof v === 'object')
    return `{${Object.entries(v)
      .map(([k, x]) => `${ws()}${write(k, r, pairs)}${ws()}:${ws()}${write(x, r, pairs)}`)
      .join(',')}${ws()}}`;
  return JSON.stringify(v);
}

function body(r: () => number) {
  const str = () => Array.from({ length: Math.floor(r() * 20) }, () => CHARS[Math.floor(r() * CHARS.length)]).join('');
  return {
    model: 'm',
    [str()]: str(),
    messages: Array.from({ length: 1 + Math.floor(r() * 3) }, () => ({ role: 'user', content: str(), n: 1.5 })),
    tools: [{ name: 'f', description: str(), input_schema: { type: 'object', properties: { [str()]: {} } } }],
  };
}

describe('the measure of a request from its bytes', () => {
  test('fuzzed: never below the scan of every string, and equal to it without escaped surrogate pairs', () => {
    let equal = 0;
    for (let seed = 1; seed <= 3000; seed++) {
      const r = rng(seed);
      const pairs = { escaped: false };
      const text = write(body(r), r, pairs);
      const parsed = JSON.parse(text);
      const scanned = inspect(parsed).textBytes;
      const fromBytes = inspect(parsed, Buffer.from(text)).textBytes;
      expect(fromBytes).toBeGreaterThanOrEqual(scanned);
      if (!pairs.escaped) {
        expect(fromBytes).toBe(scanned);
        equal++;
      }
    }
    expect(equal).toBeGreaterThan(1000); // most bodies were compared exactly
  });

  test('each escape adds what JSON.stringify writing its character adds', () => {
    const add = (json: string) => escapes(Buffer.from(json));
    expect(add('"plain é 日本"')).toBe(0);
    expect(add('"\\"\\\\\\n\\t\\b\\f\\r"')).toBe(7); // two-byte escapes: one byte more than the character
    expect(add('"\\/"')).toBe(0); // JSON.stringify writes "/"
    expect(add('"\\u0001\\u001F"')).toBe(10); // six bytes where UTF-8 has one
    expect(add('"\\u000a\\u0022\\u005C"')).toBe(3); // written in short form by JSON.stringify
    expect(add('"\\u00e9\\u65e5"')).toBe(0); // written as UTF-8
    expect(add('"\\ud800"')).toBe(3); // a lone surrogate: \ud800 (6) against U+FFFD (3)
    expect(add('"\\\\u0001"')).toBe(1); // a backslash and the text u0001, not an escape of its own
    // 40,000 control characters in a tool's description: held at the six bytes each they are rendered as
    const many = JSON.stringify({ description: '\u0001'.repeat(40_000) });
    expect(inspect(JSON.parse(many), Buffer.from(many)).textBytes).toBe('description'.length + 6 * 40_000);
  });
});
