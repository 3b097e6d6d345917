/**
 * Usage: every request, filtered by account, key, model, provider, status and time, exported as CSV with the same
 * filters; and any request's receipt (how its counts were made, what was held for it, what it was charged).
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
import { dateTime, heading, int, quantity, usd, usdExact } from '../../../src/format';
import { useRoute } from '../../../src/router';
import { api, csvUrl } from '../api';
import { usePaged } from '../parts';
import type { Receipt, UsageClass, UsageRow } from '../types';

const TEXT_FILTERS = [
  ['account_id', 'Account id', '42'],
  ['key_id', 'Key id', '7'],
  ['model', 'Model', 'gpt-4o-mini'],
  ['provider', 'Provider', 'openai'],
] as const;

const KEYS = ['account_id', 'key_id', 'model', 'provider', 'status', 'from', 'to'];

type Filter = Record<string, string>;

/** A datetime-local value (the browser's time zone) as an ISO time for the API, or nothing. */
const iso = (v: string) => (v ? new Date(v).toISOString() : '');

function StatusBadge({ status }: { status: number }) {
  return <Badge tone={status < 400 ? 'green' : status >= 500 ? 'red' : 'amber'}>{status}</Badge>;
}

function Filters({ initial, onApply }: { initial: Filter; onApply: (f: Filter) => void }) {
  const [form, setForm] = useState<Filter>(initial);
  const set = (k: string, v: string) => setForm({ ...form, [k]: v });
  return (
    <Card class="filters-card">
      <form
        class="filters-grid"
        onSubmit={(e) => {
          e.preventDefault();
          onApply(Object.fromEntries(Object.entries(form).map(([k, v]) => [k, v.trim()])));
        }}
      >
        {TEXT_FILTERS.map(([k, label, placeholder]) => (
          <Field key={k} label={label} htmlFor={`usage-${k}`}>
            <input
              id={`usage-${k}`}
              class="input"
              placeholder={placeholder}
              value={form[k]}
              onInput={(e) => set(k, e.currentTarget.value)}
            />
          </Field>
        ))}
        <Field label="Status" htmlFor="usage-status">
          <select
            id="usage-status"
            class="input"
            value={form.status}
            onChange={(e) => set('status', e.currentTarget.value)}
          >
            <option value="">Any</option>
            <option value="ok">Succeeded</option>
            <option value="error">Failed</option>
          </select>
        </Field>
        <Field label="From" htmlFor="usage-from">
          <input
            id="usage-from"
            class="input"
            type="datetime-local"
            value={form.from}
            onInput={(e) => set('from', e.currentTarget.value)}
          />
        </Field>
        <Field label="To" htmlFor="usage-to">
          <input
            id="usage-to"
            class="input"
            type="datetime-local"
            value={form.to}
            onInput={(e) => set('to', e.currentTarget.value)}
          />
        </Field>
        <div class="filters-actions">
          <Button type="submit" variant="primary" icon="filter">
            Apply
          </Button>
        </div>
      </form>
    </Card>
  );
}

function Rows({ rows, classes }: { rows: UsageRow[]; classes: UsageClass[] }) {
  const tops = classes.filter((c) => c.part_of === null && rows.some((r) => r.usage[c.name]));
  return (
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
            {tops.map((c) => (
              <th key={c.name} class="num">
                {heading(c)}
              </th>
            ))}
            <th class="num">Latency</th>
            <th class="num">Cost</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.id}>
              <td class="nowrap">
                <Link href={`/usage/${encodeURIComponent(r.request_id)}`} title="Open the receipt">
                  {dateTime(r.created_at)}
                </Link>
              </td>
              <td>
                <Link href={`/accounts/${r.account_id}`}>{r.account_id}</Link>
              </td>
              <td class="muted">{r.key_id ?? '—'}</td>
              <td>
                <code>{r.model}</code>
              </td>
              <td>{r.provider ?? <span class="muted">—</span>}</td>
              <td>
                <StatusBadge status={r.status} />
              </td>
              {tops.map((c) => (
                <td key={c.name} class="num">
                  {int(r.usage[c.name] ?? 0)}
                </td>
              ))}
              <td class="num muted">{r.latency_ms === null ? '—' : `${int(r.latency_ms)} ms`}</td>
              <td class="num">{usd(r.cost_usd, { precise: true })}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function Usage() {
  const { query } = useRoute();
  const initial: Filter = Object.fromEntries(KEYS.map((k) => [k, query.get(k) ?? '']));
  const [filter, setFilter] = useState<Filter>(initial);
  const apiFilter = { ...filter, from: iso(filter.from), to: iso(filter.to) };
  const list = usePaged((cursor) => api.usage({ ...apiFilter, cursor, limit: 50 }), [filter]);
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
      <Filters
        initial={initial}
        onApply={(f) => {
          list.reset();
          setFilter(f);
        }}
      />
      {list.error && <Alert>{list.error}</Alert>}
      <Card pad={false}>
        {list.loading && !list.data ? (
          <Loading />
        ) : list.rows.length === 0 ? (
          <Empty icon="activity" title="No requests match" />
        ) : (
          <Rows rows={list.rows} classes={list.data?.classes ?? []} />
        )}
        {list.pager}
      </Card>
    </>
  );
}

function ReceiptBody({ r }: { r: Receipt }) {
  const { record } = r;
  const used = r.classes.filter((c) => record.usage[c.name]);
  return (
    <>
      <div class="stats">
        <div class="stat stat-hero">
          <div class="stat-label">Charged</div>
          <div class="stat-value" data-testid="receipt-charge">
            {usdExact(r.charge.usd)}
          </div>
          <div class="stat-foot">
            {Number(r.charge.uncovered_usd) > 0 ? `${usdExact(r.charge.uncovered_usd)} not covered` : 'Fully covered'}
          </div>
        </div>
        <div class="stat">
          <div class="stat-label">Held before it went upstream</div>
          <div class="stat-value">{r.hold ? usdExact(r.hold.usd) : '—'}</div>
          <div class="stat-foot">
            {r.hold
              ? `for ${int(r.hold.prompt_tokens)} prompt and ${int(r.hold.output_tokens)} output tokens`
              : 'Nothing held'}
          </div>
        </div>
        <div class="stat">
          <div class="stat-label">Counted by</div>
          <div class="stat-value">{r.counted.by}</div>
          <div class="stat-foot">{r.counted.explanation}</div>
        </div>
      </div>
      <Card title="The request" pad={false}>
        <table class="table kv" data-testid="receipt">
          <tbody>
            <tr>
              <th>Time</th>
              <td>{dateTime(record.created_at)}</td>
            </tr>
            <tr>
              <th>Account / key</th>
              <td>
                <Link href={`/accounts/${record.account_id}`}>{record.account_id}</Link> / {record.key_id ?? '—'}
              </td>
            </tr>
            <tr>
              <th>Model</th>
              <td>
                <code>{record.model}</code> via {record.provider ?? '—'} ({record.endpoint})
              </td>
            </tr>
            <tr>
              <th>Status</th>
              <td>
                <StatusBadge status={record.status} /> in {record.latency_ms ?? '—'} ms
              </td>
            </tr>
            {used.map((c) => (
              <tr key={c.name}>
                <th>{heading(c)}</th>
                <td>{quantity(record.usage[c.name], c.unit)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Card>
      <Card title="Ledger" pad={false}>
        {r.ledger.length === 0 ? (
          <Empty icon="wallet" title="No ledger rows" />
        ) : (
          <table class="table">
            <tbody>
              {r.ledger.map((l) => (
                <tr key={l.id}>
                  <td>{dateTime(l.created_at)}</td>
                  <td>
                    <code>{l.kind}</code>
                  </td>
                  <td class="num">{usdExact(l.amount_usd)}</td>
                  <td class="num muted">{usdExact(l.balance_after_usd)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Card>
    </>
  );
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
      {!r.data ? !r.error && <Loading /> : <ReceiptBody r={r.data} />}
    </>
  );
}
