/** Daily bars drawn as inline SVG at the container's pixel width, with a hover read-out. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { compact, shortDay, usd } from '../format';

export interface Bar {
  date: string;
  value: number;
  label: string;
}

/** A round step for about four gridlines: 1, 2, 2.5 or 5 × 10^n. */
function niceStep(max: number): number {
  if (max <= 0) return 0.25;
  const raw = max / 4;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/** How many decimals a step needs to be printed exactly (0.25 → 2). */
function decimalsOf(v: number): number {
  for (let d = 0; d < 6; d++) if (Math.abs(Math.round(v * 10 ** d) - v * 10 ** d) < 1e-9) return d;
  return 6;
}

export function BarChart({
  bars,
  format,
  height: maxHeight = 220,
}: {
  bars: Bar[];
  format: 'usd' | 'count';
  height?: number;
}) {
  const box = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(640);
  const [hover, setHover] = useState<number | null>(null);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setWidth(Math.max(280, el.clientWidth)));
    ro.observe(el);
    setWidth(Math.max(280, el.clientWidth));
    return () => ro.disconnect();
  }, []);

  const height = Math.min(maxHeight, Math.round(width * 0.62));
  const top0 = Math.max(0, ...bars.map((b) => b.value));
  const stepV = format === 'count' ? Math.max(1, Math.round(niceStep(top0))) : niceStep(top0);
  const max = Math.max(stepV, Math.ceil(top0 / stepV - 1e-9) * stepV);
  const ticks = Array.from({ length: Math.round(max / stepV) + 1 }, (_, i) => i * stepV);
  const decimals = format === 'usd' ? Math.max(decimalsOf(stepV), stepV < 1 ? 2 : 0) : 0;
  const fmtAxis = (v: number) =>
    format === 'usd' ? (v >= 1000 ? `$${compact(v)}` : `$${v.toFixed(v === 0 ? 0 : decimals)}`) : compact(v);
  // Room for the longest axis label (11px digits are about 6.5px wide).
  const left = Math.max(36, Math.ceil(Math.max(...ticks.map((t) => fmtAxis(t).length)) * 6.6) + 14);
  const right = 16;
  const top = 12;
  const bottom = 28;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const step = plotW / Math.max(1, bars.length);
  const barW = Math.max(4, Math.min(36, step * 0.62));
  const labelEvery = width < 520 ? 3 : width < 760 ? 2 : 1;
  const hb = hover === null ? null : bars[hover];

  return (
    <div class="chart" ref={box} onMouseLeave={() => setHover(null)}>
      <svg
        width={width}
        height={height}
        role="img"
        aria-label={`Daily ${format === 'usd' ? 'spend' : 'requests'}, last ${bars.length} days`}
      >
        <defs>
          <linearGradient id="barFill" x1="0" y1="0" x2="0" y2="1">
            <stop offset="0%" stop-color="var(--accent)" stop-opacity="0.95" />
            <stop offset="100%" stop-color="var(--accent)" stop-opacity="0.7" />
          </linearGradient>
        </defs>
        {ticks.map((t) => {
          const y = top + plotH - (t / max) * plotH;
          return (
            <g key={t}>
              <line x1={left} x2={width - right} y1={y} y2={y} class={t === 0 ? 'chart-axis' : 'chart-grid'} />
              <text x={left - 8} y={y + 4} class="chart-tick" text-anchor="end">
                {fmtAxis(t)}
              </text>
            </g>
          );
        })}
        {bars.map((b, i) => {
          const h = b.value > 0 ? Math.max(2, (b.value / max) * plotH) : 0;
          const cx = left + step * i + step / 2;
          return (
            <g key={b.date} onMouseEnter={() => setHover(i)}>
              <rect x={left + step * i} y={top} width={step} height={plotH} fill="transparent" />
              {hover === i && (
                <rect x={left + step * i + 2} y={top} width={step - 4} height={plotH} class="chart-hover" rx="6" />
              )}
              {h > 0 ? (
                <rect
                  x={cx - barW / 2}
                  y={top + plotH - h}
                  width={barW}
                  height={h}
                  rx={Math.min(5, barW / 3)}
                  fill="url(#barFill)"
                />
              ) : (
                <rect x={cx - barW / 2} y={top + plotH - 2} width={barW} height={2} rx="1" class="chart-zero" />
              )}
              {i % labelEvery === (bars.length - 1) % labelEvery && (
                <text x={cx} y={height - 8} class="chart-tick" text-anchor="middle">
                  {shortDay(b.date)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      {hb && hover !== null && (
        <div
          class="chart-tip"
          style={{ left: `${Math.min(width - 150, Math.max(0, left + step * hover + step / 2 - 75))}px` }}
        >
          <div class="chart-tip-date">{shortDay(hb.date)}</div>
          <div class="chart-tip-value">{format === 'usd' ? usd(hb.value, { precise: true }) : hb.label}</div>
          {format === 'usd' && <div class="chart-tip-sub">{hb.label}</div>}
        </div>
      )}
    </div>
  );
}
