/**
 * Usage: every request, filtered by account, key, model, provider, status and time, exported as CSV with the same
 * filters; and any request's receipt (how its tokens were counted, its hold, its charge).
 */
import { useState } from 'preact/hooks';
import {
  Alert,
  Badge,
  Button,
  Card,
  Empty,
  Field,
  Link,
  Loading,
  PageHeader,
  useLoader,
} from '../../../src/components/ui';
import { dateTime, int, usd } from '../../../src/format';
import { navigate, useRoute } from '../../../src/router';
import { api, csvUrl } from '../api';
import { Json, usePaged } from '../parts';

const FILTERS = [
  ['account_id', 'Account id', '42'],
  ['key_id', 'Key id', '7'],
  ['model', 'Model', 'gpt-4o-mini'],
  ['provider', 'Provider', 'openai'],
  ['status', 'Status', '200'],
] as const;

type Filter = Record<string, string>;

/** A datetime-local value as an ISO time for the API (the browser's time zone), or nothing. */
const iso = (v: string) => (v ? new Date(v).toISOString() : '');

export function Usage() {
  const { query } = useRoute();
  const initial: Filter = Object.fromEntries(
    [...FILTERS.map(([k]) => k), 'from', 'to'].map((k) => [k, query.get(k) ?? '']),
  );
  const [form, setForm] = useState<Filter>(initial);
  const [filter, setFilter] = useState<Filter>(initial);
  const list = usePaged((cursor) => api.usage({ ...filter, cursor, limit: 50 }), [filter]);
  const apply = (e: Event) => {
    e.preventDefault();
    list.reset();
    setFilter(Object.fromEntries(Object.entries(form).map(([k, v]) => [k, v.trim()])));
  };
  const apiFilter = { ...filter, from: iso(filter.from), to: iso(filter.to) };
  return (
    <>
      <PageHeader
        title="Usage"
        description="Every request through the gateway, newest first. Open one for its receipt."
        actions={
          <a class="btn btn-secondary btn-md" href={csvUrl('/usage', apiFilter)} download="switchyard-usage.csv">
            Export CSV
          </a>
        }
      />
      <Card class="filters-card">
        <form class="filters-grid" onSubmit={apply}>
          {FILTERS.map(([k, label, placeholder]) => (
            <Field key={k} label={label} htmlFor={`usage-${k}`}>
              <input
                id={`usage-${k}`}
                class="input"
                placeholder={placeholder}
                value={form[k]}
                onInput={(e) => setForm({ ...form, [k]: e.currentTarget.value })}
              />
            </Field>
          ))}
          {(['from', 'to'] as const).map((k) => (
            <Field key={k} label={k === 'from' ? 'From' : 'To'} htmlFor={`usage-${k}`}>
              <input
                id={`usage-${k}`}
                class="input"
                type="datetime-local"
                value={form[k]}
                onInput={(e) => setForm({ ...form, [k]: e.currentTarget.value })}
              />
            </Field>
          ))}
          <div class="filters-actions">
            <Button type="submit" variant="primary" icon="filter">
              Apply
            </Button>
          </div>
        </form>
      </Card>
      {list.error && <Alert>{list.error}</Alert>}
      <Card pad={false}>
        {list.loading && !list.data ? (
          <Loading />
        ) : list.rows.length === 0 ? (
          <Empty icon="activity" title="No requests match" />
        ) : (
          <div class="table-wrap">
            <table class="table" data-testid="usage-table">
              <thead>
                <tr>
                  <th>Time</th>
                  <th>Account</th>
                  <th>Key</th>
                  <th>Model</th>
                  <th>Provider</th>
                  <th>Status</th>
                  <th class="num">Tokens in / out</th>
                  <th class="num">Latency</th>
                  <th class="num">Cost</th>
                </tr>
              </thead>
              <tbody>
                {list.rows.map((r) => {
                  const ok = r.status >= 200 && r.status < 300;
                  return (
                    <tr
                      key={r.request_id}
                      class="clickable"
                      onClick={() => navigate(`/usage/${encodeURIComponent(r.request_id)}`)}
                    >
                      <td class="nowrap">
                        <Link href={`/usage/${encodeURIComponent(r.request_id)}`}>{dateTime(r.created_at)}</Link>
                      </td>
                      <td>{r.email ?? r.account_id ?? '—'}</td>
                      <td class="muted">{r.key_id ?? '—'}</td>
                      <td>
                        <code>{r.model}</code>
                      </td>
                      <td>{r.provider ?? <span class="muted">—</span>}</td>
                      <td>
                        <Badge tone={ok ? 'green' : r.status >= 500 ? 'red' : 'amber'}>{r.status}</Badge>
                      </td>
                      <td class="num">
                        {int(r.prompt_tokens)} / {int(r.completion_tokens)}
                      </td>
                      <td class="num muted">
                        {r.latency_ms === null || r.latency_ms === undefined ? '—' : `${int(r.latency_ms)} ms`}
                      </td>
                      <td class="num">{usd(r.cost_usd, { precise: true })}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
        {list.pager}
      </Card>
    </>
  );
}

/** A value of a receipt as text: amounts and counts as they are, objects as JSON. */
function Value({ v }: { v: unknown }) {
  if (v === null || v === undefined) return <span class="muted">—</span>;
  if (typeof v === 'object') return <Json value={v} />;
  return <span>{String(v)}</span>;
}

export function ReceiptPage({ id }: { id: string }) {
  const r = useLoader(() => api.receipt(id), [id]);
  return (
    <>
      <div class="crumbs">
        <Link href="/usage">Usage</Link> / {id}
      </div>
      <PageHeader title="Receipt" description={<code>{id}</code>} />
      {r.error && <Alert>{r.error}</Alert>}
      {!r.data ? (
        !r.error && <Loading />
      ) : (
        <Card pad={false}>
          <table class="table kv" data-testid="receipt">
            <tbody>
              {Object.entries(r.data).map(([k, v]) => (
                <tr key={k}>
                  <th>{k.replace(/_/g, ' ')}</th>
                  <td>
                    <Value v={v} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </Card>
      )}
    </>
  );
}
