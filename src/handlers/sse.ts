/** Frames a started chunk stream as SSE: one `data:` frame per chunk, `[DONE]` at the end, an error frame on failure. */
import { streamErrorBody } from '../gateway/router';
import { SSE_DONE, sseData } from '../gateway/sse';

export async function* sseFrames(chunks: AsyncIterable<unknown>): AsyncGenerator<string> {
  try {
    for await (const chunk of chunks) yield sseData(chunk);
  } catch (e) {
    yield sseData(streamErrorBody(e));
    return;
  }
  yield SSE_DONE;
}
