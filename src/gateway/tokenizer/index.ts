/**
 * Counting tokens off the event loop. The tokenizer is only needed when an upstream reports no usage or a stream is
 * cut, so its worker thread (and the o200k tables it loads, tens of MB) starts on the first count and stops after a
 * minute without work: a gateway whose upstreams report usage never loads it.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { CountJob } from './count';

export type { CountJob };

const IDLE_MS = 60_000;

/**
 * Text waiting to be counted, at most, for a count nobody pays for (Anthropic's count_tokens on another provider):
 * about half a second of the worker's time. Beyond it such a count is refused (TokenizerBusy) rather than queued,
 * so a free endpoint cannot pile up work (and memory) in front of the counts that settle paid requests.
 */
export const OPTIONAL_PENDING_BYTES = 4 * 1024 * 1024;

export class TokenizerBusy extends Error {
  override name = 'TokenizerBusy';
}

/** About how much text a job is (what the worker will read), for the queue's bound. */
const sizeOf = (job: CountJob) => (job.kind === 'text' ? job.text.length : 0);

export class Tokenizer {
  private worker: Worker | null = null;
  private next = 1;
  private readonly pending = new Map<
    number,
    { resolve: (n: number) => void; reject: (e: Error) => void; size: number }
  >();
  private idle: NodeJS.Timeout | null = null;
  /** Text queued or being counted (see OPTIONAL_PENDING_BYTES). */
  private pendingBytes = 0;

  /** `optional`: a count nobody pays for, refused with TokenizerBusy when the queue is already long. */
  count(job: CountJob, o: { optional?: boolean } = {}): Promise<number> {
    if (job.kind === 'text' && !job.text) return Promise.resolve(0);
    const size = sizeOf(job);
    if (o.optional && this.pendingBytes + size > OPTIONAL_PENDING_BYTES)
      return Promise.reject(new TokenizerBusy('the tokenizer is busy'));
    const worker = this.start();
    const id = this.next++;
    if (this.idle) clearTimeout(this.idle);
    this.pendingBytes += size;
    return new Promise<number>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, size });
      worker.postMessage({ id, job });
    });
  }

  async close(): Promise<void> {
    if (this.idle) clearTimeout(this.idle);
    const w = this.worker;
    this.worker = null;
    await w?.terminate();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = spawn();
    w.unref();
    w.on('message', (m: { id: number; n?: number; error?: string }) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      this.pendingBytes -= p?.size ?? 0;
      if (m.error !== undefined) p?.reject(new Error(`tokenizer: ${m.error}`));
      else p?.resolve(m.n!);
      if (!this.pending.size) this.idle = setTimeout(() => void this.close(), IDLE_MS).unref();
    });
    const fail = (e: Error) => {
      for (const p of this.pending.values()) p.reject(e);
      this.pending.clear();
      this.pendingBytes = 0;
      if (this.worker === w) this.worker = null;
    };
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`tokenizer worker exited (${code})`)));
    return (this.worker = w);
  }
}

/** The compiled worker; under ts sources (tests, tsx) it is loaded through tsx's require hook. */
function spawn(): Worker {
  const js = path.join(__dirname, 'worker.js');
  if (__filename.endsWith('.js')) return new Worker(js);
  const ts = path.join(__dirname, 'worker.ts');
  return new Worker(`require(${JSON.stringify(require.resolve('tsx/cjs'))}); require(${JSON.stringify(ts)});`, {
    eval: true,
  });
}
