/**
 * An upstream attempt's cancellation: what an AbortController and its AbortSignal do for the call (the route's time
 * limits and a client that leaves abort it; the HTTP exchange listens), without making them. Node's AbortSignal is
 * an EventTarget: making one per paid request, adding and removing its listener were the largest piece of the
 * gateway's own JavaScript in a profile of paid chat at 2,000 req/s (`createAbortSignal` 2.3 % of all samples; with
 * the rest of abort_controller and event_target, 4 %). A real signal is made only for what needs one (the mock
 * provider's timers), on first use, and follows this one.
 */

/** The side of a cancellation a call listens to: an AbortSignal, or a Cancel. */
export interface Abortable {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export class Cancel implements Abortable {
  aborted = false;
  reason: unknown = undefined;
  /** Most calls have one listener (the HTTP exchange): kept without an array. */
  private one: (() => void) | null = null;
  private more: (() => void)[] | null = null;
  private real: AbortController | null = null;

  /** Aborts once: the listeners are called (each once), and the real signal, if one was made, is aborted too. */
  abort(reason: unknown = new DOMException('This operation was aborted', 'AbortError')): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const [one, more] = [this.one, this.more];
    this.one = this.more = null;
    one?.();
    if (more) for (const f of more) f();
    this.real?.abort(reason);
  }

  /** Listeners are called once, when aborted ('abort' is the only event; `once` is what they always are). */
  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return; // as an AbortSignal: an abort that happened before is not told again
    if (!this.one && !this.more) this.one = listener;
    else (this.more ??= []).push(listener); // after those added before: called in the order they were added
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    if (this.one === listener) this.one = null;
    else if (this.more) this.more = this.more.filter((f) => f !== listener);
  }

  /** An AbortSignal that follows this cancellation, for an API that needs a real one (timers, SDKs). */
  get signal(): AbortSignal {
    if (!this.real) {
      this.real = new AbortController();
      if (this.aborted) this.real.abort(this.reason);
    }
    return this.real.signal;
  }
}

/** A real AbortSignal for what a call was given: itself, or a Cancel's. */
export const abortSignal = (s: Abortable): AbortSignal => (s instanceof Cancel ? s.signal : (s as AbortSignal));
