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
