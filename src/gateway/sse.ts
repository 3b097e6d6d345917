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
  const line = function* (l: string): Generator<SseEvent> {
    if (l === '') {
      if (data.length) yield { event: event || 'message', data: data.join('\n') };
      data = [];
      event = '';
      return;
    }
    if (l.startsWith(':')) return;
    const colon = l.indexOf(':');
    const field = colon === -1 ? l : l.slice(0, colon);
    let value = colon === -1 ? '' : l.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
  };
  for await (const chunk of source) {
    buffer += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffer.search(/\r\n|\r|\n/)) !== -1) {
      if (buffer[nl] === '\r' && nl === buffer.length - 1) break; // maybe half of a \r\n: wait for the next chunk
      const l = buffer.slice(0, nl);
      buffer = buffer.slice(nl + (buffer[nl] === '\r' && buffer[nl + 1] === '\n' ? 2 : 1));
      yield* line(l);
    }
  }
  buffer += decoder.decode();
  // What is left may still end with the \r held back above; it ends a line like any other.
  if (buffer) for (const l of buffer.split(/\r\n|\r|\n/)) yield* line(l);
  yield* line('');
}

export const sseData = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`;
export const SSE_DONE = 'data: [DONE]\n\n';
