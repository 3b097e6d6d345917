/**
 * Usage: every request, filtered by key and dates, paged with next_cursor, with totals per model. The columns are the
 * usage classes the API describes (`classes`): one per class at the top that the range used (input tokens, generated
 * images, characters...), in its unit, its parts beneath the count. Calls refused before they reached a model (401,
 * 429) are not requests of the list: they are counted per minute and reason apart, in the server's words.
 */
import { useMemo, useState } from 'preact/hooks';
import { api } from '../api';
import { Alert, Badge, Button, Card, Empty, Field, Loading, PageHeader, useLoader } from '../components/ui';
import { dateTime, heading, int, num, quantity, shortDay, usd } from '../format';
import { REASON_WORDS } from '../components/reasons';
import type { ApiKey, ModelTotal, RefusedCalls, UsageClass, UsageCounts } from '../types';

const PAGE = 25;

const COUNTED: Record<string, string> = {
  upstream: 'Tokens as reported by the provider',
  tokenizer: 'Tokens counted by Switchyard',
  checkpoint: 'Settled after an interrupted request',
  none: 'No answer from the provider',
};

interface Filters {
  key_id: string;
  from: string;
  to: string;
}

function localDay(d: Date): string {
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

/** A local calendar day as an instant: its start, or (end) the start of the next day. */
function dayToIso(day: string, end = false): string | undefined {
  if (!day) return undefined;
  const [y, m, d] = day.split('-').map(Number);
  return new Date(y, m - 1, d + (end ? 1 : 0)).toISOString();
}

export function Usage() {
  const keys = useLoader(() => api.keys().catch(() => ({ data: [] as ApiKey[] })));
  const [draft, setDraft] = useState<Filters>({ key_id: '', from: '', to: '' });
  const [filters, setFilters] = useState<Filters>(draft);
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [error, setError] = useState<string | null>(null);
  const cursor = cursors[cursors.length - 1];

  const page = useLoader(
    () =>
      api.usage({
        key_id: filters.key_id || undefined,
        from: dayToIso(filters.from),
        to: dayToIso(filters.to, true),
        limit: PAGE,
        cursor: cursor ?? undefined,
      }),
    [filters, cursor],
  );

  const refused = useLoader(
    () =>
      api.refused({
        key_id: filters.key_id || undefined,
        from: dayToIso(filters.from),
        to: dayToIso(filters.to, true),
        limit: PAGE,
      }),
    [filters],
  );

  const keyNames = useMemo(() => {
    const m = new Map<string, ApiKey>();
    for (const k of keys.data?.data ?? []) m.set(String(k.id), k);
    return m;
  }, [keys.data]);

  const apply = (e: Event) => {
    e.preventDefault();
    if (draft.from && draft.to && draft.from > draft.to) return setError('The start date must be before the end date.');
    setError(null);
    setFilters({ ...draft });
    setCursors([null]);
  };
  const reset = () => {
    const empty = { key_id: '', from: '', to: '' };
    setDraft(empty);
    setFilters(empty);
    setCursors([null]);
    setError(null);
  };
  const quick = (days: number) => {
    const to = new Date();
    const from = new Date();
    from.setDate(from.getDate() - (days - 1));
    const f = { ...draft, from: localDay(from), to: localDay(to) };
    setDraft(f);
    setFilters(f);
    setCursors([null]);
    setError(null);
  };

  const rows = page.data?.data ?? [];
  const totals = page.data?.totals ?? [];
  const classes = page.data?.classes ?? [];
  const tops = columns(classes, totals);
  const filtered = !!(filters.key_id || filters.from || filters.to);

  return (
    <>
      <PageHeader title="Usage" description="Every request made with your keys, what it used and what it cost." />

      <Card class="filters-card">
        <form class="filters" onSubmit={apply}>
          <Field label="Key" htmlFor="f-key">
            <select
              id="f-key"
              name="key_id"
              class="input"
              value={draft.key_id}
              onChange={(e) => setDraft({ ...draft, key_id: e.currentTarget.value })}
            >
              <option value="">All keys</option>
              {(keys.data?.data ?? []).map((k) => (
                <option key={k.id} value={String(k.id)}>
                  {k.name ? `${k.name} (${k.prefix}…)` : `${k.prefix}…`}
                </option>
              ))}
            </select>
          </Field>
          <Field label="From" htmlFor="f-from">
            <input
              id="f-from"
              name="from"
              type="date"
              class="input"
              value={draft.from}
              max={draft.to || undefined}
              onInput={(e) => setDraft({ ...draft, from: e.currentTarget.value })}
            />
          </Field>
          <Field label="To" htmlFor="f-to">
            <input
              id="f-to"
              name="to"
              type="date"
              class="input"
              value={draft.to}
              min={draft.from || undefined}
              onInput={(e) => setDraft({ ...draft, to: e.currentTarget.value })}
            />
          </Field>
          <div class="filters-actions">
            <Button type="submit" variant="primary" icon="filter">
              Apply
            </Button>
            {filtered && (
              <Button variant="ghost" onClick={reset}>
                Clear
              </Button>
            )}
          </div>
          <div class="filters-quick">
            <span class="muted">Quick range:</span>
            <button type="button" class="link-btn" onClick={() => quick(1)}>
              Today
            </button>
            <button type="button" class="link-btn" onClick={() => quick(7)}>
              7 days
            </button>
            <button type="button" class="link-btn" onClick={() => quick(30)}>
              30 days
            </button>
          </div>
        </form>
        {error && <Alert>{error}</Alert>}
      </Card>

      {page.error ? (
        <Alert>{page.error}</Alert>
      ) : (
        <>
          <Totals totals={totals} classes={classes} loading={page.loading && !page.data} />
          {refused.data && <Refused refused={refused.data} keyNames={keyNames} />}
          <Daily />
          <Card
            title="Requests"
            subtitle={filtered ? 'Matching the filters above, newest first' : 'Newest first'}
            pad={false}
          >
            {page.loading && !page.data ? (
              <Loading label="Loading requests…" />
            ) : rows.length === 0 ? (
              <Empty icon="activity" title={filtered ? 'No requests match these filters' : 'No requests yet'}>
                {filtered
                  ? 'Try another key or a wider date range.'
                  : 'Requests made with your API keys appear here within seconds.'}
              </Empty>
            ) : (
              <div class={`table-wrap${page.loading ? ' is-refreshing' : ''}`}>
                <table class="table table-stack" data-testid="usage-table">
                  <thead>
                    <tr>
                      <th>Time</th>
                      <th>Key</th>
                      <th>Model</th>
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
                    {rows.map((r) => {
                      const k =
                        r.key_id === null || r.key_id === undefined ? undefined : keyNames.get(String(r.key_id));
                      const ok = r.status >= 200 && r.status < 300;
                      return (
                        <tr key={r.request_id} title={r.request_id}>
                          <td class="nowrap" data-label="Time">
                            {dateTime(r.created_at)}
                          </td>
                          <td class="nowrap" data-label="Key">
                            {k ? (
                              k.name || <code>{k.prefix}…</code>
                            ) : (
                              <span class="muted">{r.key_id === null ? 'Deleted key' : `#${r.key_id}`}</span>
                            )}
                          </td>
                          <td data-label="Model">
                            <code>{r.model}</code>
                          </td>
                          <td data-label="Status">
                            <Badge tone={ok ? 'green' : r.status >= 500 ? 'red' : 'amber'}>{r.status}</Badge>
                            {STATUS_WORDS[r.status] && (
                              <div class="muted small" data-testid="status-words">
                                {STATUS_WORDS[r.status]}
                              </div>
                            )}
                          </td>
                          {tops.map((c) => (
                            <td key={c.name} class="num" data-label={heading(c)}>
                              {amount(c, r.usage[c.name] ?? 0)}
                              <Parts of={c} classes={classes} usage={r.usage} />
                            </td>
                          ))}
                          <td class="num muted" data-label="Latency">
                            {r.latency_ms === null || r.latency_ms === undefined ? '—' : `${int(r.latency_ms)} ms`}
                          </td>
                          <td class="num" title={COUNTED[r.counted]} data-label="Cost">
                            {num(r.cost_usd) === 0 && !ok ? (
                              <span class="muted">Not charged</span>
                            ) : (
                              usd(r.cost_usd, { precise: true })
                            )}
                          </td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </div>
            )}
            {(cursors.length > 1 || page.data?.next_cursor) && (
              <div class="pager">
                <span class="muted">Page {cursors.length}</span>
                <div class="pager-btns">
                  <Button
                    size="sm"
                    disabled={cursors.length <= 1 || page.loading}
                    onClick={() => setCursors(cursors.slice(0, -1))}
                  >
                    Previous
                  </Button>
                  <Button
                    size="sm"
                    disabled={!page.data?.next_cursor || page.loading}
                    onClick={() => setCursors([...cursors, page.data!.next_cursor!])}
                  >
                    Next
                  </Button>
                </div>
              </div>
            )}
          </Card>
        </>
      )}
    </>
  );
}

/** What a status means where the number alone does not say (a cut stream above all: it was charged). */
const STATUS_WORDS: Record<number, string> = {
  499: 'Client closed the stream; charged for what was sent.',
  429: 'Refused: rate limited or out of credits.',
  401: 'Refused: the key was not accepted.',
};

/** The key a row names, by its name or prefix; a key deleted since by its id. */
function keyLabel(keyNames: Map<string, ApiKey>, id: number) {
  const k = keyNames.get(String(id));
  return k ? k.name || <code>{k.prefix}…</code> : <span class="muted">#{id}</span>;
}

/**
 * Calls refused before they reached a model (GET /console/api/usage/refused): a sentence per reason over the filtered
 * range ("12 calls refused: the account's credits are used up"), then the counts per minute, newest first.
 */
function Refused({ refused, keyNames }: { refused: RefusedCalls; keyNames: Map<string, ApiKey> }) {
  if (!refused.totals.length) return null;
  return (
    <Card title="Refused calls" subtitle="Not sent to any model and not charged; newest first" pad={false}>
      <ul class="refusal-summary" data-testid="refused-summary">
        {refused.totals.map((t) => (
          <li key={`${t.status}-${t.reason}`}>
            <Badge tone="amber">{t.status}</Badge> {int(t.count)} {t.count === 1 ? 'call' : 'calls'} refused:{' '}
            {REASON_WORDS[t.reason].why}. <span class="muted small">{REASON_WORDS[t.reason].fix}</span>
          </li>
        ))}
      </ul>
      <div class="table-wrap">
        <table class="table table-stack" data-testid="refused-table">
          <thead>
            <tr>
              <th>Minute</th>
              <th>Key</th>
              <th>Operation</th>
              <th>Why</th>
              <th class="num">Calls</th>
            </tr>
          </thead>
          <tbody>
            {refused.data.map((r) => (
              <tr key={`${r.at}-${r.key_id}-${r.endpoint}-${r.status}-${r.reason}`}>
                <td class="nowrap" data-label="Minute">
                  {dateTime(r.at)}
                </td>
                <td class="nowrap" data-label="Key">
                  {keyLabel(keyNames, r.key_id)}
                </td>
                <td data-label="Operation">
                  <code>{r.endpoint}</code>
                </td>
                <td data-label="Why">
                  <Badge tone="amber">{r.status}</Badge> {REASON_WORDS[r.reason].label}
                </td>
                <td class="num" data-label="Calls">
                  {int(r.count)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Card>
  );
}

/**
 * Requests, cost and refused calls per day over the last 30 days (GET /console/api/usage/daily), the days with either.
 */
function Daily() {
  const daily = useLoader(() => api.daily(30));
  const days = (daily.data?.data ?? []).filter((d) => d.requests > 0 || d.refused > 0).reverse();
  if (daily.loading || daily.error || !days.length) return null;
  return (
    <Card title="By day" subtitle="The last 30 days (UTC), newest first" pad={false}>
      <div class="table-wrap">
        <table class="table table-stack" data-testid="usage-daily">
          <thead>
            <tr>
              <th>Day</th>
              <th class="num">Requests</th>
              <th class="num">Refused</th>
              <th class="num">Cost</th>
            </tr>
          </thead>
          <tbody>
            {days.map((d) => (
              <tr key={d.date}>
                <td data-label="Day">{shortDay(d.date)}</td>
                <td class="num" data-label="Requests">
                  {int(d.requests)}
                </td>
                <td class="num" data-label="Refused">
                  {d.refused ? int(d.refused) : <span class="muted">—</span>}
                </td>
                <td class="num" data-label="Cost">
                  {usd(d.cost_usd, { precise: true })}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Card>
  );
}

/**
 * The columns: the classes at the top of a family that the range used (a chat-only account sees no "Generated images"
 * of zeros), else those counted in the first one's unit (input and output tokens), so an empty range keeps its shape.
 */
function columns(classes: UsageClass[], totals: ModelTotal[]): UsageClass[] {
  const tops = classes.filter((c) => c.part_of === null);
  const used = tops.filter((c) => totals.some((t) => t.usage[c.name]));
  return used.length ? used : tops.filter((c) => c.unit === tops[0]?.unit);
}

/**
 * A count of a class at the top: tokens as a number under their heading, other units with theirs ("3 images"), and
 * none of a unit the request does not count in as a dash (a chat request made no images).
 */
function amount(c: UsageClass, n: number) {
  if (c.unit === 'token') return int(n);
  return n ? quantity(n, c.unit) : <span class="muted">—</span>;
}

/** The classes within `of` (its parts, and theirs), in the API's order. */
function partsOf(of: UsageClass, classes: UsageClass[]): UsageClass[] {
  const within = (c: UsageClass): boolean =>
    c.part_of === of.name || (c.part_of !== null && within(classes.find((w) => w.name === c.part_of)!));
  return classes.filter(within);
}

/** Of a count, its parts billed or shown apart (cache reads and writes, reasoning), when there are any; in their own unit when it differs. */
function Parts({ of, classes, usage }: { of: UsageClass; classes: UsageClass[]; usage: UsageCounts }) {
  const parts = partsOf(of, classes)
    .filter((c) => usage[c.name])
    .map((c) => `${c.unit === of.unit ? int(usage[c.name]) : quantity(usage[c.name], c.unit)} ${c.label}`);
  if (!parts.length) return null;
  return (
    <div class="muted small" data-testid={`parts-${of.name}`}>
      {parts.join(' · ')}
    </div>
  );
}

function Totals({ totals, classes, loading }: { totals: ModelTotal[]; classes: UsageClass[]; loading: boolean }) {
  if (loading || !totals.length) return null;
  const tops = columns(classes, totals);
  const sum = (name: string) => totals.reduce((a, t) => a + (t.usage[name] ?? 0), 0);
  return (
    <Card title="Totals by model" pad={false}>
      <div class="table-wrap">
        <table class="table table-stack" data-testid="usage-totals">
          <thead>
            <tr>
              <th>Model</th>
              <th class="num">Requests</th>
              {tops.map((c) => (
                <th key={c.name} class="num">
                  {heading(c)}
                </th>
              ))}
              <th class="num">Cost</th>
            </tr>
          </thead>
          <tbody>
            {totals.map((t) => (
              <tr key={t.model}>
                <td>
                  <code>{t.model}</code>
                </td>
                <td class="num" data-label="Requests">
                  {int(t.requests)}
                </td>
                {tops.map((c) => (
                  <td key={c.name} class="num" data-label={heading(c)}>
                    {amount(c, t.usage[c.name] ?? 0)}
                    <Parts of={c} classes={classes} usage={t.usage} />
                  </td>
                ))}
                <td class="num" data-label="Cost">
                  {usd(t.cost_usd, { precise: true })}
                </td>
              </tr>
            ))}
          </tbody>
          {totals.length > 1 && (
            <tfoot>
              <tr>
                <td>All models</td>
                <td class="num" data-label="Requests">
                  {int(totals.reduce((a, t) => a + t.requests, 0))}
                </td>
                {tops.map((c) => (
                  <td key={c.name} class="num" data-label={heading(c)}>
                    {amount(c, sum(c.name))}
                  </td>
                ))}
                <td class="num" data-label="Cost">
                  {usd(
                    totals.reduce((a, t) => a + num(t.cost_usd), 0),
                    { precise: true },
                  )}
                </td>
              </tr>
            </tfoot>
          )}
        </table>
      </div>
    </Card>
  );
}
