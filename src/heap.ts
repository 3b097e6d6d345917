/**
 * The young generation while the process starts. Loading the modules and compiling the contract's validators keeps
 * most of what it allocates, and V8 grows its young generation (semi-spaces) after every scavenge that sees much
 * survive: by the time `serve` listens it has grown to its maximum (34 MB on Node 20, 67 MB on Node 24) while holding
 * ~2 MB, and it stays that size until V8's memory reducer runs, about 30 s after the last activity. So the growth
 * factor is held at 1 (no growth) while modules load, and given back to V8's default (2) once `serve` listens or
 * another command starts its work: under traffic the young generation grows as before (a small one costs a third
 * more CPU per request and 1 s p99s at 128 connections: README, Performance), but an idle gateway does not carry
 * one sized by its start-up. Measured (`serve`, SQLite, Node 20): RSS one second after listening 154 → 118 MB.
 *
 * V8 reads the flag each time it considers growing the young generation, so setting it at run time takes effect;
 * the flag exists, with the same default, in the V8 of Node 20, 22 and 24. Node 24's V8 (13.6) sometimes grows it
 * anyway when the machine is loaded, around a full collection (to 13.75 MB, a fifth of its 64 MB maximum, measured).
 */
import v8 from 'node:v8';
import vm from 'node:vm';

/** V8's default growth factor of the young generation (flag-definitions.h). */
const V8_DEFAULT = 2;

let held = false;

/** Keeps the young generation at its initial size (cli.ts imports this module first, before any other). */
export function holdYoungGeneration(): void {
  v8.setFlagsFromString('--semi-space-growth-factor=1');
  held = true;
}

/** Lets the young generation grow again as V8 sizes it for the work (idempotent). */
export function releaseYoungGeneration(): void {
  if (!held) return;
  held = false;
  v8.setFlagsFromString(`--semi-space-growth-factor=${V8_DEFAULT}`);
}

/**
 * Collects and compacts what start-up left behind, once: `serve` calls it when it listens. Start-up parses the
 * contract and the configuration and compiles the validators: most of what it allocated is garbage by then, spread
 * over pages that also hold what lives on, and the old generation keeps those pages (40 MB of them holding 31 MB of
 * live objects, measured on Node 20) until V8's memory reducer compacts the heap, about 8 s after the last collection
 * and only if no traffic came meanwhile. One full collection that compacts every page gives them back at once: RSS
 * one second after the first request 112–115 → 94–97 MB (Node 20, SQLite; README, Performance), for 40–50 ms of CPU
 * at start. Node 22 and 24 compact too but keep the freed pages pooled until their memory reducer runs.
 *
 * V8's `gc` function exists only with --expose-gc; the flag, set at run time, installs it in contexts made after it
 * (a new vm context), not in this one, so nothing else sees it. Where it cannot be had, nothing is done.
 */
export function compactAfterStart(): void {
  let gc: unknown;
  try {
    v8.setFlagsFromString('--expose-gc');
    gc = vm.runInNewContext("typeof gc === 'function' ? gc : undefined");
  } finally {
    v8.setFlagsFromString('--no-expose-gc');
  }
  if (typeof gc !== 'function') return;
  v8.setFlagsFromString('--compact-on-every-full-gc');
  try {
    gc();
  } finally {
    v8.setFlagsFromString('--no-compact-on-every-full-gc');
  }
}

/** How far the old generation may grow past what the last full collection kept before the next one: 2× (see below). */
const OLD_GENERATION_GROWTH_PERCENT = 100;

/**
 * Lets the old generation grow to twice what the last full collection kept before the next one starts, whatever the
 * traffic. V8 sizes that headroom from how fast the process allocates: after a burst it allows up to four times
 * (the 128-connection peak), and little at a low rate once its memory reducer has shrunk an idle heap (measured:
 * full collections starting at 34–43 MB of heap, young generation included, and keeping 29–32 MB). That is less
 * than its young generation, which grows to 16 MB under traffic (34 MB with both semi-spaces), and V8 starts marking
 * whenever the headroom left is smaller than the young generation could promote: so a gateway that had been idle
 * for 20 s ran a full collection every half second at 100 req/s (up to 19 in 10 s) and spent about twice the CPU
 * per 87 KB request (medians of an A/B: 2,020 against 1,110 µs; README, Performance). Twice the kept size leaves
 * room for a whole young generation; a fixed factor also stops the fourfold growth after bursts.
 *
 * V8 reads the flag whenever it sets the limits (after each full collection), so setting it at run time takes
 * effect; it exists, off by default (0), in the V8 of Node 20, 22 and 24.
 */
export function steadyOldGeneration(): void {
  v8.setFlagsFromString(`--heap-growing-percent=${OLD_GENERATION_GROWTH_PERCENT}`);
}
