/** The tokenizer's worker thread: counts what it is sent, one job at a time, off the event loop of the server. */
import { parentPort } from 'node:worker_threads';
import { count, type CountJob } from './count';

parentPort!.on('message', ({ id, job }: { id: number; job: CountJob }) => {
  try {
    parentPort!.postMessage({ id, n: count(job) });
  } catch (e) {
    parentPort!.postMessage({ id, error: (e as Error).message });
  }
});
