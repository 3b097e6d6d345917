/** Server-sent events: a parser for upstream streams and the framing we write to clients. */

export interface SseEvent {
  event: string;
  data: string;
}

/** Parses a byte stream into events (the WHATWG rules: `data:` lines joined by \n, dispatched on a blank line). */
export async function* parseSse(source: AsyncIterable<Buffer | string>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  let event = '';
  /** Reads a line; the event it completes, if it is the blank line after one. */
  const line = (l: string): SseEvent | null => {
    if (l === '') {
      const done = data.length
        ? { event: event || 'message', data: data.length === 1 ? data[0] : data.join('\n') }
        : null;
      data = [];
      event = '';
      return done;
    }
    if (l.startsWith(':')) return null;
    const colon = l.indexOf(':');
    const field = colon === -1 ? l : l.slice(0, colon);
    let value = colon === -1 ? '' : l.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    return null;
  };
  for await (const chunk of source) {
    buffer += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    // Lines are found with indexOf (a CR is looked for only while the buffer has one: upstreams end lines with LF),
    // and the buffer is cut once per chunk, not once per line.
    let pos = 0;
    let cr = buffer.indexOf('\r');
    for (;;) {
      const lf = buffer.indexOf('\n', pos);
      if (cr !== -1 && cr < pos) cr = buffer.indexOf('\r', pos);
      const nl = cr !== -1 && (lf === -1 || cr < lf) ? cr : lf;
      if (nl === -1) break;
      if (nl === cr && nl === buffer.length - 1) break; // maybe half of a \r\n: wait for the next chunk
      const l = buffer.slice(pos, nl);
      pos = nl + (nl === cr && buffer.charCodeAt(nl + 1) === 10 ? 2 : 1);
      const ev = line(l);
      if (ev) yield ev;
    }
    if (pos) buffer = buffer.slice(pos);
  }
  buffer += decoder.decode();
  // What is left may still end with the \r held back above; it ends a line like any other.
  const rest = buffer ? buffer.split(/\r\n|\r|\n/) : [];
  for (const l of [...rest, '']) {
    const ev = line(l);
    if (ev) yield ev;
  }
}

export const sseData = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`;
export const SSE_DONE = 'data: [DONE]\n\n';
