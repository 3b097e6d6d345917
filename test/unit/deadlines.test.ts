import { Deadlines, IdleLimit } from '../../src/gateway/router';
import { UpstreamError } from '../../src/gateway/types';

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

describe('IdleLimit: a stream whose next chunk takes longer than the limit is aborted', () => {
  const chunkAfter = (ms: number) => sleep(ms).then(() => 'chunk');

  test('chunks that each come within the limit pass, however long the stream; time not waiting does not count', async () => {
    const c = new AbortController();
    const idle = new IdleLimit(250, c, 'chunk'); // each chunk comes after 5 ms: a busy machine has 245 ms of slack
    try {
      for (let i = 0; i < 60; i++) expect(await idle.next(chunkAfter(5))).toBe('chunk'); // 300 ms and more in all
      await sleep(400); // writing to a slow client: no wait under way
      expect(await idle.next(chunkAfter(5))).toBe('chunk');
    } finally {
      idle.end();
    }
    expect(c.signal.aborted).toBe(false);
  });

  test('a wait that lasts the limit rejects with a timeout and aborts the call, not before the limit', async () => {
    const c = new AbortController();
    const idle = new IdleLimit(200, c, 'chunk');
    await idle.next(chunkAfter(5));
    await sleep(100);
    const started = Date.now();
    const e = await idle.next(new Promise(() => {})).catch((x: unknown) => x);
    const waited = Date.now() - started;
    idle.end();
    expect(e).toBeInstanceOf(UpstreamError);
    expect(e).toMatchObject({ reason: 'timeout', message: 'no chunk within 200 ms' });
    expect(c.signal.reason).toBe(e);
    expect(waited).toBeGreaterThanOrEqual(199);
    expect(waited).toBeLessThan(1_000); // the deadline moved to when the wait under way ends, not a whole limit later
  });
});
