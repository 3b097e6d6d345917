import { Deadlines } from '../../src/gateway/router';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('one timer expires each limit once, when it is due, and never one that was removed', async () => {
  const d = new Deadlines();
  const fired: string[] = [];
  const started = Date.now();
  const at: Record<string, number> = {};
  const add = (name: string, ms: number) => d.add(ms, () => ((at[name] = Date.now() - started), fired.push(name)));
  add('late', 300);
  const removed = add('removed', 50);
  add('soon', 100); // sooner than the armed limit: the timer moves
  add('sooner', 60);
  d.remove(removed);
  expect(d.size).toBe(3);
  await sleep(150);
  expect(fired).toEqual(['sooner', 'soon']);
  expect(at.sooner).toBeGreaterThanOrEqual(59);
  expect(at.soon).toBeGreaterThanOrEqual(99);
  await sleep(250);
  expect(fired).toEqual(['sooner', 'soon', 'late']);
  expect(at.late).toBeGreaterThanOrEqual(299);
  expect(d.size).toBe(0);
});

test('a limit added by an expiry (the next route of a fallback) is kept and expires in its turn', async () => {
  const d = new Deadlines();
  const fired: string[] = [];
  d.add(30, () => {
    fired.push('first');
    d.add(40, () => fired.push('second'));
  });
  d.add(200, () => fired.push('third'));
  await sleep(120);
  expect(fired).toEqual(['first', 'second']);
  await sleep(130);
  expect(fired).toEqual(['first', 'second', 'third']);
});
