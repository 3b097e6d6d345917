/**
 * Overview: requests, tokens, spend and top-ups over the last hour, day and 30 days; spend by model and by provider;
 * each route's error rate, latency, breaker and last errors.
 */
import { Alert, Badge, Button, Card, Empty, Loading, PageHeader, useLoader } from '../../../src/components/ui';
import { compact, dateTime, int, num, usd } from '../../../src/format';
import { api } from '../api';
import type { RouteHealth, SpendRow, Window } from '../types';

const WINDOWS = [
  ['hour', 'Last hour'],
  ['day', 'Last 24 hours'],
  ['month', 'Last 30 days'],
] as const;

const pct = (r: number) => `${(r * 100).toFixed(r > 0 && r < 0.01 ? 2 : 1)}%`;

function WindowCard({ label, w, hero }: { label: string; w: Window; hero?: boolean }) {
  return (
    <div class={`stat${hero ? ' stat-hero' : ''}`} data-testid={`window-${label}`}>
      <div class="stat-label">{label}</div>
      <div class="stat-value">{usd(w.spend_usd, { precise: true })}</div>
      <div class="stat-foot">spent · {usd(w.topups_usd)} topped up</div>
      <dl class="facts">
        <div>
          <dt>Requests</dt>
          <dd>{int(w.requests)}</dd>
        </div>
        <div>
          <dt>Errors</dt>
          <dd>
            {int(w.errors)} <span class="muted">({pct(w.error_rate)})</span>
          </dd>
        </div>
        <div>
          <dt>Tokens in / out</dt>
          <dd>
            {compact(w.prompt_tokens)} / {compact(w.completion_tokens)}
          </dd>
        </div>
      </dl>
    </div>
  );
}

function SpendTable({ rows, by, testId }: { rows: SpendRow[]; by: 'model' | 'provider'; testId: string }) {
  if (!rows.length) return <Empty icon="chart" title="Nothing spent in 30 days" />;
  const top = Math.max(...rows.map((r) => num(r.spend_usd)), 0);
  return (
    <div class="table-wrap">
      <table class="table" data-testid={testId}>
        <thead>
          <tr>
            <th>{by === 'model' ? 'Model' : 'Provider'}</th>
            <th class="num">Requests</th>
            <th class="num">Tokens</th>
            <th class="num">Spend</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r[by]}>
              <td>
                <code>{r[by]}</code>
                <div class="meter bar-share">
                  <span style={{ width: `${top ? (num(r.spend_usd) / top) * 100 : 0}%` }} />
                </div>
              </td>
              <td class="num">{int(r.requests)}</td>
              <td class="num">{compact(r.tokens)}</td>
              <td class="num">{usd(r.spend_usd, { precise: true })}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

const BREAKER = {
  closed: ['green', 'Closed'],
  half_open: ['amber', 'Half-open'],
  open: ['red', 'Open'],
} as const;

function Routes({ routes }: { routes: RouteHealth[] }) {
  if (!routes.length) return <Empty icon="box" title="No routes" />;
  return (
    <div class="table-wrap">
      <table class="table" data-testid="routes">
        <thead>
          <tr>
            <th>Model</th>
            <th>Route</th>
            <th class="num">Requests (24 h)</th>
            <th class="num">Error rate</th>
            <th class="num">p50</th>
            <th class="num">p99</th>
            <th>Breaker</th>
            <th>Last errors</th>
          </tr>
        </thead>
        <tbody>
          {routes.map((r) => {
            const [tone, label] = BREAKER[r.breaker] ?? ['neutral', r.breaker];
            return (
              <tr key={`${r.model}/${r.index}`}>
                <td class="nowrap">
                  <code>{r.model}</code>
                </td>
                <td class="nowrap" title={r.upstream_model}>
                  <span class="muted">#{r.index}</span> {r.provider}
                </td>
                <td class="num">{int(r.requests)}</td>
                <td class="num">{pct(r.error_rate)}</td>
                <td class="num">{r.p50_ms === null ? '—' : `${int(r.p50_ms)} ms`}</td>
                <td class="num">{r.p99_ms === null ? '—' : `${int(r.p99_ms)} ms`}</td>
                <td>
                  <Badge tone={tone}>{label}</Badge>
                </td>
                <td class="last-errors">
                  {r.last_errors.length === 0 ? (
                    <span class="muted">None</span>
                  ) : (
                    r.last_errors.slice(0, 3).map((e) => (
                      <div key={e.at} title={e.message}>
                        <span class="muted">{dateTime(e.at)}</span> {e.status ?? '—'} {e.message}
                      </div>
                    ))
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

export function Overview() {
  const o = useLoader(() => api.overview());
  return (
    <>
      <PageHeader
        title="Overview"
        description={o.data ? `As of ${dateTime(o.data.generated_at)} UTC.` : 'Traffic, money and routes.'}
        actions={
          <Button icon="refresh" onClick={() => void o.reload()} loading={o.loading && !!o.data}>
            Refresh
          </Button>
        }
      />
      {o.error && <Alert>{o.error}</Alert>}
      {!o.data ? (
        !o.error && <Loading label="Loading the overview…" />
      ) : (
        <>
          <div class="stats">
            {WINDOWS.map(([k, label], i) => (
              <WindowCard key={k} label={label} w={o.data!.windows[k]} hero={i === 2} />
            ))}
          </div>
          <div class="grid-2">
            <Card title="Spend by model" subtitle="Last 30 days" pad={false}>
              <SpendTable rows={o.data.by_model} by="model" testId="by-model" />
            </Card>
            <Card title="Spend by provider" subtitle="Last 30 days" pad={false}>
              <SpendTable rows={o.data.by_provider} by="provider" testId="by-provider" />
            </Card>
          </div>
          <Card
            title="Routes"
            subtitle="Error rate and latency over 24 hours; breakers as this process sees them"
            pad={false}
          >
            <Routes routes={o.data.routes} />
          </Card>
        </>
      )}
    </>
  );
}
