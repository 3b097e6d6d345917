/** Keys: find any account's key by the visible start of it; disable or enable it, change its budget or expiry. */
import { useState } from 'preact/hooks';
import { Alert, Button, Card, Empty, Field, Link, Loading, Modal, PageHeader } from '../../../src/components/ui';
import { ago, date, usd } from '../../../src/format';
import { useRoute } from '../../../src/router';
import { api } from '../api';
import { useCan } from '../auth';
import { KeyStatus } from './Accounts';
import { OutcomeAlert, useAction, usePaged, type Outcome } from '../parts';
import type { AdminKey } from '../types';

/** "2026-12-31T23:59" in the browser's time zone, as a datetime-local field shows it. */
function localInput(iso: string | null): string {
  if (!iso) return '';
  const d = new Date(iso);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

function EditKey({ k, onClose, onDone }: { k: AdminKey; onClose: () => void; onDone: (o: Outcome) => void }) {
  const [budget, setBudget] = useState(k.budget ? String(Number(k.budget.usd)) : '');
  const [period, setPeriod] = useState<'day' | 'week' | 'month'>(k.budget?.period ?? 'month');
  const [expires, setExpires] = useState(localInput(k.expires_at));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await api.updateKey(k.id, {
        budget: budget.trim() ? { usd: budget.trim(), period } : null,
        expires_at: expires ? new Date(expires).toISOString() : null,
      });
      onDone({ kind: 'success', text: `Key ${k.prefix}… saved.` });
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };
  return (
    <Modal
      title={`Budget and expiry of ${k.prefix}…`}
      onClose={onClose}
      footer={
        <>
          <Button variant="ghost" onClick={onClose}>
            Cancel
          </Button>
          <Button variant="primary" loading={busy} onClick={save}>
            Save
          </Button>
        </>
      }
    >
      {error && <Alert>{error}</Alert>}
      <form class="form" onSubmit={save}>
        <div class="form-row">
          <Field label="Budget (USD)" htmlFor="key-budget" hint="Empty for no budget.">
            <input
              id="key-budget"
              class="input"
              inputMode="decimal"
              value={budget}
              onInput={(e) => setBudget(e.currentTarget.value)}
            />
          </Field>
          <Field label="Per" htmlFor="key-period">
            <select
              id="key-period"
              class="input"
              value={period}
              onChange={(e) => setPeriod(e.currentTarget.value as typeof period)}
            >
              <option value="day">UTC day</option>
              <option value="week">Week</option>
              <option value="month">Month</option>
            </select>
          </Field>
        </div>
        <Field label="Expires" htmlFor="key-expires" hint="Empty for never. After it the key is refused.">
          <input
            id="key-expires"
            class="input"
            type="datetime-local"
            value={expires}
            onInput={(e) => setExpires(e.currentTarget.value)}
          />
        </Field>
      </form>
    </Modal>
  );
}

export function Keys() {
  const { query } = useRoute();
  const can = useCan();
  const [input, setInput] = useState(query.get('prefix') ?? '');
  const [prefix, setPrefix] = useState(query.get('prefix') ?? '');
  const [editing, setEditing] = useState<AdminKey | null>(null);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const act = useAction(setOutcome);
  const list = usePaged((cursor) => api.keys({ prefix, cursor, limit: 50 }), [prefix]);
  const toggle = async (k: AdminKey) => {
    await act.run(
      `toggle-${k.id}`,
      () => api.updateKey(k.id, { enabled: !k.enabled }),
      (r) => `Key ${r.prefix}… is ${r.enabled ? 'enabled' : 'disabled'}.`,
    );
    void list.reload();
  };
  return (
    <>
      <PageHeader
        title="Keys"
        description="Find a key by the start of it (sk-…), as its owner sees it in their console."
      />
      <form
        class="toolbar"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          list.reset();
          setPrefix(input.trim());
        }}
      >
        <input
          class="input mono"
          aria-label="Key prefix"
          placeholder="sk-Ab3dE9"
          value={input}
          onInput={(e) => setInput(e.currentTarget.value)}
        />
        <Button type="submit" icon="search">
          Find
        </Button>
      </form>
      <OutcomeAlert outcome={outcome} onClose={() => setOutcome(null)} />
      {list.error && <Alert>{list.error}</Alert>}
      <Card pad={false}>
        {list.loading && !list.data ? (
          <Loading />
        ) : list.rows.length === 0 ? (
          <Empty icon="key" title={prefix ? `No key starts with “${prefix}”` : 'No keys yet'} />
        ) : (
          <div class="table-wrap">
            <table class="table" data-testid="keys-table">
              <thead>
                <tr>
                  <th>Key</th>
                  <th>Account</th>
                  <th>Status</th>
                  <th class="num">Used</th>
                  <th>Budget</th>
                  <th>Expires</th>
                  <th>Last used</th>
                  <th class="th-actions" />
                </tr>
              </thead>
              <tbody>
                {list.rows.map((k) => (
                  <tr key={k.id}>
                    <td>
                      <code>{k.prefix}…</code> {k.name && <span class="muted">{k.name}</span>}
                    </td>
                    <td>
                      <Link href={`/accounts/${k.account_id}`}>{k.email}</Link>
                    </td>
                    <td>
                      <KeyStatus k={k} />
                    </td>
                    <td class="num">{usd(k.used_usd, { precise: true })}</td>
                    <td>{k.budget ? `${usd(k.budget.usd)} / ${k.budget.period}` : <span class="muted">None</span>}</td>
                    <td>{k.expires_at ? date(k.expires_at) : <span class="muted">Never</span>}</td>
                    <td>{ago(k.last_used_at)}</td>
                    <td class="td-actions">
                      {can('adminUpdateKey') && (
                        <>
                          <Button size="sm" loading={act.busy === `toggle-${k.id}`} onClick={() => void toggle(k)}>
                            {k.enabled ? 'Disable' : 'Enable'}
                          </Button>
                          <Button size="sm" variant="ghost" icon="edit" onClick={() => setEditing(k)}>
                            Budget / expiry
                          </Button>
                        </>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {list.pager}
      </Card>
      {editing && (
        <EditKey
          k={editing}
          onClose={() => setEditing(null)}
          onDone={(o) => {
            setEditing(null);
            setOutcome(o);
            void list.reload();
          }}
        />
      )}
    </>
  );
}
