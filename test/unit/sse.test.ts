/** The SSE parser used on upstream streams: events come out whole however the bytes were chunked. */
import { SSE_DONE, parseSse, sseData, type SseEvent } from '../../src/gateway/sse';

async function parse(chunks: (string | Buffer)[]): Promise<SseEvent[]> {
  async function* source() {
    for (const c of chunks) yield c;
  }
  const out: SseEvent[] = [];
  for await (const e of parseSse(source())) out.push(e);
  return out;
}

/** Every way of cutting `text` into two chunks, plus one byte at a time. */
function splits(text: string): string[][] {
  const out = [[text], text.split('')];
  for (let i = 1; i < text.length; i++) out.push([text.slice(0, i), text.slice(i)]);
  return out;
}

describe('parseSse', () => {
  const stream = 'data: {"a":1}\n\nevent: ping\ndata: x\n\ndata: [DONE]\n\n';
  const expected = [
    { event: 'message', data: '{"a":1}' },
    { event: 'ping', data: 'x' },
    { event: 'message', data: '[DONE]' },
  ];

  test('whole stream in one chunk', async () => {
    expect(await parse([stream])).toEqual(expected);
  });

  test('the same events whichever place the stream is split at, including inside `data:`', async () => {
    for (const chunks of splits(stream)) expect(await parse(chunks)).toEqual(expected);
  });

  test('CRLF line endings, split between \\r and \\n', async () => {
    const crlf = 'data: one\r\n\r\ndata: two\r\n\r\n';
    for (const chunks of splits(crlf)) {
      expect(await parse(chunks)).toEqual([
        { event: 'message', data: 'one' },
        { event: 'message', data: 'two' },
      ]);
    }
  });

  test('bare CR line endings, even when a chunk ends on the \\r', async () => {
    for (const chunks of [
      ['data: a\r\rdata: b\r\r'],
      ['data: a\r', '\rdata: b\r', '\r'],
      ['data: a\r\r', 'data: b\r'],
    ]) {
      expect(await parse(chunks)).toEqual([
        { event: 'message', data: 'a' },
        { event: 'message', data: 'b' },
      ]);
    }
  });

  test('a stream that ends on a CR-terminated [DONE] line still yields [DONE] exactly', async () => {
    expect(await parse(['data: {"x":1}\r\r', 'data: [DONE]\r'])).toEqual([
      { event: 'message', data: '{"x":1}' },
      { event: 'message', data: '[DONE]' },
    ]);
  });

  test('several data lines are joined by \\n', async () => {
    for (const chunks of splits('data: first\ndata:second\ndata\ndata:  indented\n\n')) {
      expect(await parse(chunks)).toEqual([{ event: 'message', data: 'first\nsecond\n\n indented' }]);
    }
  });

  test('comments, unknown fields, id and retry are ignored; an event without data is not dispatched', async () => {
    const text =
      ': keep-alive\n\nid: 7\nretry: 1000\nfoo: bar\ndata: real\n\nevent: empty\n\n:another comment\ndata: after\n\n';
    expect(await parse([text])).toEqual([
      { event: 'message', data: 'real' },
      { event: 'message', data: 'after' },
    ]);
  });

  test('an event name applies to one event only', async () => {
    expect(await parse(['event: delta\ndata: 1\n\ndata: 2\n\n'])).toEqual([
      { event: 'delta', data: '1' },
      { event: 'message', data: '2' },
    ]);
  });

  test('a final event without the trailing blank line is still delivered', async () => {
    expect(await parse(['data: a\n\n', 'data: last'])).toEqual([
      { event: 'message', data: 'a' },
      { event: 'message', data: 'last' },
    ]);
    expect(await parse(['data: a\n\nevent: end\ndata: last\n'])).toEqual([
      { event: 'message', data: 'a' },
      { event: 'end', data: 'last' },
    ]);
  });

  test('an empty stream yields nothing', async () => {
    expect(await parse([])).toEqual([]);
    expect(await parse(['\n\n', ': only a comment\n\n'])).toEqual([]);
  });

  test('a UTF-8 character split across Buffer chunks arrives intact', async () => {
    const bytes = Buffer.from('data: {"text":"héllo 🚀"}\n\n');
    const cut = bytes.indexOf(Buffer.from('🚀')) + 2; // inside the four-byte rocket
    const events = await parse([bytes.subarray(0, cut), bytes.subarray(cut)]);
    expect(events).toEqual([{ event: 'message', data: '{"text":"héllo 🚀"}' }]);
    for (let i = 1; i < bytes.length; i++) {
      expect(await parse([bytes.subarray(0, i), bytes.subarray(i)])).toEqual(events);
    }
  });

  test('what we write parses back to the same data', async () => {
    const value = { id: 'chatcmpl-1', choices: [{ delta: { content: 'line one\nline two' } }] };
    const events = await parse([sseData(value), SSE_DONE]);
    expect(events).toHaveLength(2);
    expect(JSON.parse(events[0].data)).toEqual(value);
    expect(events[1].data).toBe('[DONE]');
  });
});
