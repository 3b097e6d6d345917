/** The password strength worker thread (see passwords.ts): scores what it is sent, one password at a time. */
import { parentPort } from 'node:worker_threads';
import { estimator } from './strength';

const check = estimator();

parentPort!.on('message', ({ id, password, inputs }: { id: number; password: string; inputs: string[] }) => {
  try {
    parentPort!.postMessage({ id, strength: check(password, inputs) });
  } catch (e) {
    parentPort!.postMessage({ id, error: (e as Error).message });
  }
});
