/**
 * JSON passed along as bytes rather than rebuilt. A request whose wire is the upstream's (a chat request to an
 * OpenAI-compatible upstream, a Messages request to Anthropic) and the answer that comes back are mostly what the
 * other side sent: only a few top-level fields change (the model, the output limit, what the policy strips, the
 * usage shown). Serialising the whole object again, and encoding the text as UTF-8 once more, cost about as much CPU
 * as everything else the gateway does for a request (README, Performance); a large body decoded to a two-byte string
 * (one character outside Latin-1 is enough) costs several times its size in copies. So the bytes an object was parsed
 * from are kept beside it (`keepSource`), objects made from it by replacing top-level fields say so (`derived`), and
 * `serialized` writes such an object as the original bytes with only the top-level fields that differ written anew.
 * Exact by construction: a field is kept as written only when its value is the very value JSON.parse made of those
 * bytes (the same reference, or a number written as JSON writes it), so the other side parses exactly what
 * `JSON.stringify` would have sent.
 *
 * What the bytes say must be what we parsed. JSON.parse keeps the last of duplicate keys; some parsers keep the first
 * or refuse the body. So a top-level key that occurs more than once is written once, with the value we read, and a
 * key we change or drop loses every occurrence; a nested key (a tool's `model` property) is never touched. Duplicates
 * deeper down cannot be fixed by splicing: when the caller gives the number of keys it parsed (`keys`: bound.ts
 * counts them while measuring a request) and the bytes have more (every key is followed by a colon outside strings,
 * and nothing else is), the object is serialised whole, as before. Requests always give it; an upstream's answer is
 * passed on as the upstream wrote it below the top level.
 */

/** The bytes of a JSON object and what JSON.parse made of them (not changed since: see `derived`). */
interface Source {
  bytes: Buffer;
  parsed: Record<string, unknown>;
  /** Keys (at every depth) of `parsed`, when counted: bytes with more have duplicates. */
  keys?: number;
  /** A client's request (sent upstream) or an upstream's answer (sent to the client): each is written only as such. */
  side: Side;
}

export type Side = 'request' | 'answer';

/**
 * Where an object's source is kept: a property of its own, under a symbol (not enumerable: spread, Object.keys,
 * JSON.stringify and the validators do not see it), so it lives and dies with the object. Not a WeakMap: V8's young
 * generation collector keeps a WeakMap's values alive whatever becomes of their keys (only a full collection clears
 * them), and a source refers to its key (`parsed`), so every body it held (the parsed request, its bytes) outlived
 * the request, was promoted to the old generation and waited there for a full collection: ~90 KB per 87 KB agent
 * request, the third of the CPU that request cost going to the collector (measured with --trace-gc-nvp).
 */
const SOURCE = Symbol('source');

type Sourced = { [SOURCE]?: Source };

const sourceOf = (value: object): Source | undefined => (value as Sourced)[SOURCE];

function setSource(value: object, s: Source): void {
  if (Object.isExtensible(value))
    Object.defineProperty(value, SOURCE, { value: s, configurable: true, writable: true });
}

/** Below this size JSON.stringify is cheaper than finding the members (a stream's chunks, small answers). */
const SMALL = 1024;

/**
 * Remembers the bytes `value` was parsed from (the caller parsed them whole: a valid JSON text). Only for objects
 * nothing changes in place afterwards: `serialized` trusts that every field still holds what those bytes say.
 */
export function keepSource(value: unknown, bytes: Buffer, side: Side, keys?: number): void {
  if (bytes.length >= SMALL && value && typeof value === 'object' && !Array.isArray(value))
    setSource(value, { bytes, parsed: value as Record<string, unknown>, keys, side });
}

/**
 * `value` was made from `from` by replacing, adding or removing top-level fields (object spread, rest): it is written
 * from `from`'s bytes too. Nothing happens if `from` has none (it was built, not parsed).
 */
export function derived(value: unknown, from: unknown): void {
  if (value === from || !value || typeof value !== 'object' || !from || typeof from !== 'object') return;
  const s = sourceOf(from);
  if (s) setSource(value, s);
}

/**
 * The JSON of a value going to `side`'s destination: from its source's bytes when it has one of that side (see the
 * module comment), else JSON.stringify. A request body some other handler echoes back is not an answer: it is written
 * whole, whatever was done to it.
 */
export function serialized(value: unknown, side: Side): string | Buffer {
  const s = value && typeof value === 'object' ? sourceOf(value) : undefined;
  return s?.side === side ? splice(s, value as Record<string, unknown>) : JSON.stringify(value);
}

/** One top-level member: from its key's opening quote to the end of its value (byte offsets). */
interface Member {
  key: string;
  start: number;
  valueStart: number;
  end: number;
}

const COMMA = Buffer.from(',');
const OPEN = Buffer.from('{');
const CLOSE = Buffer.from('}');

/** `value` written from `s`: see the module comment. */
export function splice(s: Source, value: Record<string, unknown>): string | Buffer {
  const scan = members(s.bytes);
  if (!scan || (s.keys !== undefined && scan.colons !== s.keys)) return JSON.stringify(value);
  const { list } = scan;
  const times = new Map<string, number>(); // key → occurrences
  for (const m of list) times.set(m.key, (times.get(m.key) ?? 0) + 1);
  const left = times.size === list.length ? null : new Map(times);
  const { bytes, parsed } = s;
  const out: Buffer[] = [OPEN];
  for (const m of list) {
    const k = m.key;
    if (left) {
      const n = left.get(k)!;
      left.set(k, n - 1);
      if (n > 1) continue; // an earlier duplicate: JSON.parse kept the last
    }
    if (!Object.prototype.hasOwnProperty.call(value, k)) continue;
    const v = value[k];
    if (!writable(v)) continue;
    if (out.length > 1) out.push(COMMA);
    const kept = v === parsed[k] && times.get(k) === 1 && asWritten(bytes, m, v);
    out.push(kept ? bytes.subarray(m.start, m.end) : member(k, v));
  }
  for (const k of Object.keys(value)) {
    if (times.has(k) || !writable(value[k])) continue;
    if (out.length > 1) out.push(COMMA);
    out.push(member(k, value[k]));
  }
  out.push(CLOSE);
  return Buffer.concat(out);
}

const writable = (v: unknown) => v !== undefined && typeof v !== 'function' && typeof v !== 'symbol';

const member = (k: string, v: unknown) => Buffer.from(`${JSON.stringify(k)}:${JSON.stringify(v)}`);

/** A number is kept as written only if it is written as JSON writes it (`1.0`, `1e2`, `-0` are written anew). */
function asWritten(bytes: Buffer, m: Member, v: unknown): boolean {
  if (typeof v !== 'number') return true;
  return bytes.toString('latin1', m.valueStart, m.end) === JSON.stringify(v);
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA_ = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/**
 * The offset just past the string whose opening quote is at `i`; -1 if it does not end. The next quote is found
 * natively (memchr): long strings cost next to nothing; a quote after an odd run of backslashes is escaped.
 */
function skipString(b: Buffer, i: number): number {
  let j = b.indexOf(QUOTE, i + 1);
  while (j !== -1) {
    let k = j - 1;
    while (b[k] === BACKSLASH) k--;
    if ((j - k) % 2 === 1) return j + 1; // j - k - 1 backslashes before it: an even number escapes nothing
    j = b.indexOf(QUOTE, j + 1);
  }
  return -1;
}

/**
 * The top-level members of the bytes of a JSON object, and the colons outside strings in all of it (one per key, at
 * any depth); null if it is not an object. The bytes were accepted by JSON.parse already: this only finds where
 * things are (UTF-8 needs no care: every byte of a multi-byte character is above 0x7f).
 */
export function members(b: Buffer): { list: Member[]; colons: number } | null {
  const n = b.length;
  let i = 0;
  while (i < n && isSpace(b[i])) i++;
  if (b[i] !== OPEN_BRACE) return null;
  i++;
  const list: Member[] = [];
  let colons = 0;
  for (;;) {
    while (i < n && (isSpace(b[i]) || b[i] === COMMA_)) i++;
    if (b[i] === CLOSE_BRACE) return { list, colons };
    if (b[i] !== QUOTE) return null;
    const start = i;
    const keyEnd = skipString(b, i);
    if (keyEnd < 0) return null;
    const key = escaped(b, start, keyEnd)
      ? (JSON.parse(b.toString('utf8', start, keyEnd)) as string)
      : b.toString('utf8', start + 1, keyEnd - 1);
    i = keyEnd;
    while (i < n && b[i] !== COLON) i++;
    colons++;
    i++;
    while (i < n && isSpace(b[i])) i++;
    const valueStart = i;
    const end = skipValue(b, i);
    if (end < 0) return null;
    colons += nested;
    i = end;
    list.push({ key, start, valueStart, end });
  }
}

/** Whether the string between `start` and `end` has an escape (`"mod\\u0065l"` is the key `model`). */
function escaped(b: Buffer, start: number, end: number): boolean {
  for (let j = start + 1; j < end; j++) if (b[j] === BACKSLASH) return true;
  return false;
}

let nested = 0; // the colons skipValue passed (a module variable: no object per call)

/** The end of the value starting at `i`; the colons (keys) inside it in `nested`. */
function skipValue(b: Buffer, i: number): number {
  nested = 0;
  const c = b[i];
  if (c === QUOTE) return skipString(b, i);
  const n = b.length;
  if (c !== OPEN_BRACE && c !== OPEN_BRACKET) {
    let j = i; // a number, true, false or null: up to what ends it
    while (j < n && b[j] !== COMMA_ && b[j] !== CLOSE_BRACE && b[j] !== CLOSE_BRACKET && !isSpace(b[j])) j++;
    return j;
  }
  let depth = 0;
  let colons = 0;
  for (let j = i; j < n; j++) {
    const d = b[j];
    if (d === QUOTE) {
      j = skipString(b, j) - 1;
      if (j < 0) return -1;
    } else if (d === OPEN_BRACE || d === OPEN_BRACKET) depth++;
    else if (d === CLOSE_BRACE || d === CLOSE_BRACKET) {
      if (--depth === 0) {
        nested = colons;
        return j + 1;
      }
    } else if (d === COLON) colons++;
  }
  return -1;
}
