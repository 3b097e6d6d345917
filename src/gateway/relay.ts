/**
 * A started stream, relayed to the client: each upstream chunk is read for usage and generated text, shaped for the
 * client, and passed on; the usage the upstream reported is kept (or what went by is counted, if it reports none or
 * the stream is cut); a chunk that ends generation is held back until the usage that may follow it arrives (a client
 * that leaves right after the last words still pays for all of them); the idle limit is enforced between chunks,
 * and a failure after the start counts against the route.
 */
import type { Usage } from '../usage';
import { NO_USAGE } from '../usage';
import type { Operation } from './operations';
import type { Presented, Reader, StreamUsage } from './operations/types';
import { fail, finishReasons } from '../tracing';
import { explain, IdleLimit, type Routed, type Router } from './router';
import type { Meter } from './types';

export interface Progress {
  /** The usage the upstream reported so far (some send it only at the end). */
  usage: Usage | null;
  /** UTF-8 bytes of everything generated so far. */
  generatedBytes: number;
}

/** A started stream: its first chunk has arrived (so the route is settled) and the rest follows. */
export interface Streamed<T> {
  chunks: AsyncIterable<T>;
  progress(): Progress;
  /** The request's usage once the stream has ended, however it ended. */
  meter: Promise<Meter>;
}

interface RelayOptions<Chunk> {
  op: Operation<any, unknown, Chunk>;
  /** The model id the client asked for. */
  model: string;
  requestId: string;
  includeUsage: boolean;
  routed: Routed<unknown>;
  router: Router;
  /** Reads the upstream operation's chunks (for a bridged call, the operation it went through). */
  reader: Reader<any, any, any>;
  /** An upstream chunk as the client gets it (none, one or several chunks). */
  present(chunk: unknown): Chunk[];
  /** What the bridge the stream went through sends after the last chunk, if any. */
  end(p: Presented): Chunk[];
  /** Counts the prompt and `text` with the tokenizer. */
  count(text: string): Promise<Usage>;
  /**
   * Tracing on: told, when the stream completes, of the usage the upstream reported, why it stopped and the model
   * its chunks named (for the attempt's span).
   */
  answered?: (reported: Usage | null, reasons: string[], model: unknown) => void;
}

export class Relay<Chunk> {
  private reported: StreamUsage | null = null;
  private raw: unknown;
  private readonly text: string[] = [];
  private bytes = 0;
  private settled = false;
  /** Tracing on: the finish reasons and the model the chunks named. */
  private reasons: string[] = [];
  private upstreamModel: unknown;
  private resolve!: (m: Meter) => void;
  private readonly meter = new Promise<Meter>((r) => (this.resolve = r));

  constructor(private readonly o: RelayOptions<Chunk>) {}

  start(it: AsyncIterator<unknown>, first: IteratorResult<unknown>): Streamed<Chunk> {
    return {
      chunks: this.chunks(it, first),
      meter: this.meter,
      progress: () => ({ usage: this.reported?.final ? this.reported.usage : null, generatedBytes: this.bytes }),
    };
  }

  private async *chunks(it: AsyncIterator<unknown>, first: IteratorResult<unknown>): AsyncGenerator<Chunk> {
    const { route, controller, finish } = this.o.routed;
    let last: Chunk | undefined;
    let held: unknown; // a chunk that ends generation, sent once the next one (or the end) comes
    const idle = new IdleLimit(route.timeouts.idle_ms, controller, 'chunk');
    try {
      for (let r = first; !r.done; r = await idle.next(it.next())) {
        this.read(r.value);
        if (held !== undefined) {
          for (const out of this.o.present(held)) yield (last = out);
          held = undefined;
        }
        if (this.o.reader.final?.(r.value) && !this.reported?.final) {
          held = r.value;
          continue;
        }
        for (const out of this.o.present(r.value)) yield (last = out);
      }
      if (held !== undefined) for (const out of this.o.present(held)) yield (last = out);
      const m = await this.measure();
      this.settle(m);
      this.o.answered?.(m.counted === 'upstream' ? m.usage : null, this.reasons, this.upstreamModel);
      const p: Presented = {
        model: this.o.model,
        requestId: this.o.requestId,
        usage: m.usage,
        reported: m.counted === 'upstream',
        raw: this.raw,
      };
      for (const out of this.o.end(p)) yield (last = out);
      yield* this.o.op.tail(last, p, this.o.includeUsage);
    } catch (e) {
      const failure = explain(e, controller);
      if (failure && failure.reason !== 'aborted') this.o.router.failed(route, `stream_${failure.reason}`);
      if (this.o.routed.span) fail(this.o.routed.span, failure ? `stream_${failure.reason}` : 'error');
      throw failure ?? e;
    } finally {
      idle.end();
      finish();
      const closing = it.return?.(undefined);
      if (!this.settled)
        this.settle(
          await this.measure().catch(() => ({
            provider: route.provider,
            usage: this.reported?.usage ?? NO_USAGE,
            counted: 'tokenizer' as const,
          })),
        );
      await closing;
    }
  }

  /** What a chunk tells: usage, and the text it carried. */
  private read(chunk: unknown): void {
    const reported = this.o.reader.chunkUsage(chunk, this.reported);
    if (reported && reported !== this.reported)
      [this.reported, this.raw] = [reported, (chunk as { usage?: unknown }).usage];
    if (this.o.answered) {
      finishReasons(chunk, this.reasons);
      const c = chunk as { model?: unknown; message?: { model?: unknown } }; // OpenAI's chunks, Anthropic's message_start
      this.upstreamModel ??= c.model ?? c.message?.model;
    }
    const text = this.o.reader.chunkText(chunk);
    if (text) {
      this.text.push(text);
      this.bytes += Buffer.byteLength(text);
    }
  }

  /**
   * What the stream used: what the upstream reported for the whole request; or, for a stream cut before that, the
   * prompt it reported (if any) and every delta that went by, counted.
   */
  private async measure(): Promise<Meter> {
    const provider = this.o.routed.route.provider;
    const r = this.reported;
    if (r?.final) return { provider, usage: r.usage, counted: 'upstream' };
    const counted = await this.o.count(this.text.join(''));
    if (!r) return { provider, usage: counted, counted: 'tokenizer' };
    return {
      provider,
      usage: { ...r.usage, completion: Math.max(r.usage.completion, counted.completion) },
      counted: 'tokenizer',
    };
  }

  private settle(m: Meter): void {
    this.settled = true;
    this.resolve(m);
  }
}
