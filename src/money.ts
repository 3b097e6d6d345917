/** Money is integer micro-USD (1 USD = 1_000_000). Conversions parse decimal text exactly, never through a float. */
export const MICROS_PER_USD = 1_000_000;
const MAX_MICROS = Number.MAX_SAFE_INTEGER;

/** "20", "0.5", "-3.000001" → micro-USD. Throws on anything else, or on more than 6 decimals. */
export function parseUsd(text: string | number): number {
  const s = String(text).trim();
  const m = /^(-)?(\d+)(?:\.(\d{1,6}))?$/.exec(s);
  if (!m) throw new RangeError(`not a USD amount with at most 6 decimals: ${JSON.stringify(s)}`);
  const micros = Number(m[2]) * MICROS_PER_USD + Number((m[3] ?? '').padEnd(6, '0'));
  if (!Number.isSafeInteger(micros) || micros > MAX_MICROS) throw new RangeError(`USD amount too large: ${s}`);
  return m[1] ? -micros : micros;
}

/** micro-USD → "12.345678" (exact, six decimals). */
export function formatUsd(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(micros);
  return `${sign}${Math.floor(abs / MICROS_PER_USD)}.${String(abs % MICROS_PER_USD).padStart(6, '0')}`;
}
