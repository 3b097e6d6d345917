/** Display helpers: money, numbers and dates in the browser's locale. */
import type { UsageClass, Usd } from './types';

export function num(v: Usd | null | undefined): number {
  const n = typeof v === 'number' ? v : Number(v ?? 0);
  return Number.isFinite(n) ? n : 0;
}

/** "$21.00"; small non-zero amounts keep enough decimals to be seen ("$0.000042"). */
export function usd(v: Usd | null | undefined, opts: { precise?: boolean } = {}): string {
  const n = num(v);
  const abs = Math.abs(n);
  let digits = 2;
  if (opts.precise && abs > 0 && abs < 0.01) digits = Math.min(6, Math.max(4, -Math.floor(Math.log10(abs)) + 2));
  return new Intl.NumberFormat('en-US', {
    style: 'currency',
    currency: 'USD',
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  }).format(n);
}

/**
 * A limit or threshold: whole cents when it has no more ("$0.50", "$25.00"), else every digit it has ("$0.00003"),
 * so a small limit never reads as "$0.00".
 */
export function limitUsd(v: Usd | null | undefined): string {
  const n = num(v);
  if (Math.round(n * 100) === n * 100) return usd(n);
  return `${n < 0 ? '-' : ''}$${Math.abs(n).toFixed(6).replace(/0+$/, '')}`;
}

/** Exact to the micro-dollar, without trailing zeros past the cents: "$20.999989", "$21.00". */
export function usdExact(v: Usd | null | undefined): string {
  const n = num(v);
  const six = Math.abs(n)
    .toFixed(6)
    .replace(/0{1,4}$/, '');
  const [whole, frac = '00'] = six.split('.');
  return `${n < 0 ? '-' : ''}$${new Intl.NumberFormat('en-US').format(Number(whole))}.${frac.padEnd(2, '0')}`;
}

export function int(v: number | null | undefined): string {
  return new Intl.NumberFormat('en-US').format(v ?? 0);
}

export function compact(v: number): string {
  return new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 }).format(v);
}

function toDate(v: string | number | null | undefined): Date | null {
  if (v === null || v === undefined || v === '') return null;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? null : d;
}

export function date(v: string | number | null | undefined): string {
  const d = toDate(v);
  return d ? d.toLocaleDateString('en-US', { year: 'numeric', month: 'short', day: 'numeric' }) : '—';
}

export function dateTime(v: string | number | null | undefined): string {
  const d = toDate(v);
  return d
    ? d.toLocaleString('en-US', {
        month: 'short',
        day: 'numeric',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
        hour12: false,
      })
    : '—';
}

/** "3 minutes ago", "yesterday", or a date past a week. */
export function ago(v: string | number | null | undefined): string {
  const d = toDate(v);
  if (!d) return 'Never';
  const s = Math.round((Date.now() - d.getTime()) / 1000);
  if (s < 45) return 'Just now';
  const rtf = new Intl.RelativeTimeFormat('en-US', { numeric: 'auto' });
  if (s < 3600) return rtf.format(-Math.round(s / 60), 'minute');
  if (s < 86400) return rtf.format(-Math.round(s / 3600), 'hour');
  if (s < 7 * 86400) return rtf.format(-Math.round(s / 86400), 'day');
  return date(v);
}

/** "Jun 3" for a YYYY-MM-DD day, read as a calendar day (no time zone shift). */
export function shortDay(day: string): string {
  const [y, m, d] = day.split('-').map(Number);
  return new Date(Date.UTC(y, (m ?? 1) - 1, d ?? 1)).toLocaleDateString('en-US', {
    month: 'short',
    day: 'numeric',
    timeZone: 'UTC',
  });
}

/** Each unit a usage class is counted in, one and many ("42 s"). */
const UNITS: Record<UsageClass['unit'], [string, string]> = {
  token: ['token', 'tokens'],
  image: ['image', 'images'],
  second: ['s', 's'],
  character: ['character', 'characters'],
  request: ['request', 'requests'],
  search_unit: ['search unit', 'search units'],
};

/** The name of a unit, for a count of `n` (plural by default: a column heading). */
export function unitName(unit: UsageClass['unit'], n = 2): string {
  return UNITS[unit][n === 1 ? 0 : 1];
}

/** "3 images", "42 s", "1,024 tokens". */
export function quantity(n: number, unit: UsageClass['unit']): string {
  return `${int(n)} ${unitName(unit, n)}`;
}

/** A unit's name in a heading where a count's is an abbreviation ("Audio seconds", but "42 s"). */
const HEADED: Partial<Record<UsageClass['unit'], string>> = { second: 'seconds' };

/** "Input tokens", "Generated images", "Audio seconds": a class at the top of a family, as a column or total is headed. */
export function heading(c: UsageClass): string {
  return `${c.label.charAt(0).toUpperCase()}${c.label.slice(1)} ${HEADED[c.unit] ?? unitName(c.unit)}`;
}

/**
 * How many units a price is quoted for, as providers quote them: tokens and characters by the million, requests and
 * search units by the thousand (their prices per unit are fractions of a cent), images one by one, audio by the minute.
 */
const QUOTED: Record<UsageClass['unit'], [number, string]> = {
  token: [1_000_000, '1M tokens'],
  image: [1, 'image'],
  second: [60, 'minute'],
  character: [1_000_000, '1M characters'],
  request: [1_000, '1K requests'],
  search_unit: [1_000, '1K search units'],
};

/** "$15", "$0.60", "$0.075", "$0.00012": whole dollars bare, otherwise cents and the digits a small price needs. */
export function unitPrice(n: number): string {
  if (Number.isInteger(n)) return `$${int(n)}`;
  if (n < 0.01) return `$${n.toPrecision(2).replace(/(\.\d*?[1-9])0+$/, '$1')}`; // 0.0060 → 0.006
  return `$${new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 4 }).format(n)}`;
}

/** A price in USD per million units as quoted for its unit: [amount, what it buys] ("$2", "1K search units"). */
export function quotedPrice(usdPerMillion: Usd, unit: UsageClass['unit']): [string, string] {
  const [per, what] = QUOTED[unit];
  // The API's six decimals make the price of `per` units a whole number of 10^-12 USD: rounding to it drops float noise.
  return [unitPrice(Math.round(num(usdPerMillion) * per * 1e6) / 1e12), what];
}
