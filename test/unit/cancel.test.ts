/** An attempt's cancellation (src/gateway/cancel.ts): what the upstream call and its time limits rely on. */
import { setTimeout as sleep } from 'node:timers/promises';
import { abortSignal, Cancel } from '../../src/gateway/cancel';

test('listeners are called once, in order, when aborted; a removed one is not; the reason is kept', () => {
  const c = new Cancel();
  const calls: string[] = [];
  const a = () => calls.push('a');
  const b = () => calls.push('b');
  const d = () => calls.push('d');
  c.addEventListener('abort', a);
  c.addEventListener('abort', b);
  c.addEventListener('abort', d);
  c.removeEventListener('abort', b);
  expect(c.aborted).toBe(false);
  const why = new Error('the route took too long');
  c.abort(why);
  c.abort(new Error('a second abort changes nothing'));
  expect(calls).toEqual(['a', 'd']);
  expect(c.aborted).toBe(true);
  expect(c.reason).toBe(why);
  c.addEventListener('abort', () => calls.push('late')); // as an AbortSignal: an abort before is not told again
  expect(calls).toEqual(['a', 'd']);
});

test('the first listener removed leaves the others, and one added after them is called after them', () => {
  const c = new Cancel();
  const calls: string[] = [];
  const a = () => calls.push('a');
  c.addEventListener('abort', a);
  c.addEventListener('abort', () => calls.push('b'));
  c.removeEventListener('abort', a);
  c.addEventListener('abort', () => calls.push('c'));
  c.abort('x');
  expect(calls).toEqual(['b', 'c']);
});

test('its real signal, made on first use, follows it: before the abort and after', async () => {
  const before = new Cancel();
  const signal = abortSignal(before);
  expect(signal).toBeInstanceOf(AbortSignal);
  const slept = sleep(10_000, undefined, { signal });
  before.abort(new Error('client gone'));
  await expect(slept).rejects.toMatchObject({ name: 'AbortError' });
  expect(signal.reason).toEqual(new Error('client gone'));

  const after = new Cancel();
  after.abort(new Error('timeout'));
  expect(after.signal.aborted).toBe(true);
  expect(after.signal.reason).toEqual(new Error('timeout'));
  const real = new AbortController().signal;
  expect(abortSignal(real)).toBe(real); // a real signal is passed as it is
});
