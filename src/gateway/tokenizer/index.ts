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

export class Tokenizer {
  private worker: Worker | null = null;
  private next = 1;
  private readonly pending = new Map<number, { resolve: (n: number) => void; reject: (e: Error) => void }>();
  private idle: NodeJS.Timeout | null = null;

  count(job: CountJob): Promise<number> {
    if (job.kind === 'text' && !job.text) return Promise.resolve(0);
    const worker = this.start();
    const id = this.next++;
    if (this.idle) clearTimeout(this.idle);
    return new Promise<number>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
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
      if (m.error !== undefined) p?.reject(new Error(`tokenizer: ${m.error}`));
      else p?.resolve(m.n!);
      if (!this.pending.size) this.idle = setTimeout(() => void this.close(), IDLE_MS).unref();
    });
    const fail = (e: Error) => {
      for (const p of this.pending.values()) p.reject(e);
      this.pending.clear();
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
  return new Worker(`require(${JSON.stringify(require.resolve('tsx/cjs'))}); require(${JSON.stringify(ts)});`, { eval: true });
}
