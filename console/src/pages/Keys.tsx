/** API keys: the list, create (the secret shown once), edit name / quota / expiry / models / scopes, enable / disable, delete. */
import { useState } from 'preact/hooks';
import { api } from '../api';
import { Icon } from '../components/icons';
import {
  Alert,
  Badge,
  Button,
  Card,
  CopyButton,
  Empty,
  Field,
  Loading,
  Modal,
  PageHeader,
  Toggle,
  useLoader,
} from '../components/ui';
import { ago, date, limitUsd, num, usd } from '../format';
import { keyBlocked, REASON_WORDS } from '../components/reasons';
import { SCOPE_LABELS, SCOPES, type ApiKey, type Model, type NewKeyInput, type Scope } from '../types';

export function Keys() {
  const keys = useLoader(() => api.keys());
  const models = useLoader(() => api.models().catch(() => ({ data: [] as Model[], classes: [] })));
  const [editing, setEditing] = useState<ApiKey | 'new' | null>(null);
  const [deleting, setDeleting] = useState<ApiKey | null>(null);
  const [secret, setSecret] = useState<{ key: ApiKey; secret: string } | null>(null);
  const [rowError, setRowError] = useState<string | null>(null);
  const [pending, setPending] = useState<Set<string>>(new Set());
  const list = keys.data?.data ?? [];

  const replace = (k: ApiKey) => keys.setData({ data: list.map((x) => (x.id === k.id ? k : x)) });

  const setEnabled = async (k: ApiKey, enabled: boolean) => {
    setRowError(null);
    setPending((p) => new Set(p).add(String(k.id)));
    replace({ ...k, enabled });
    try {
      replace(await api.updateKey(k.id, { enabled }));
    } catch (e) {
      replace(k);
      setRowError(`Could not ${enabled ? 'enable' : 'disable'} ${k.name || k.prefix}: ${(e as Error).message}`);
    } finally {
      setPending((p) => {
        const n = new Set(p);
        n.delete(String(k.id));
        return n;
      });
    }
  };

  return (
    <>
      <PageHeader
        title="API keys"
        description="Keys authenticate your calls to the /v1 endpoints. Give each app its own key, with a spending limit and only the models it needs."
        actions={
          <Button variant="primary" icon="plus" onClick={() => setEditing('new')}>
            Create key
          </Button>
        }
      />
      {rowError && <Alert onClose={() => setRowError(null)}>{rowError}</Alert>}
      <Card pad={false}>
        {keys.loading && !keys.data ? (
          <Loading label="Loading keys…" />
        ) : keys.error ? (
          <div class="card-body">
            <Alert>{keys.error}</Alert>
            <Button icon="refresh" onClick={() => void keys.reload()}>
              Try again
            </Button>
          </div>
        ) : list.length === 0 ? (
          <Empty
            icon="key"
            title="No API keys yet"
            action={
              <Button variant="primary" icon="plus" onClick={() => setEditing('new')}>
                Create your first key
              </Button>
            }
          >
            Create a key to call chat and embedding models with any OpenAI-compatible client.
          </Empty>
        ) : (
          <div class="table-wrap">
            <table class="table table-stack" data-testid="keys-table">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Enabled</th>
                  <th>Spend / limit</th>
                  <th>Models</th>
                  <th>Scopes</th>
                  <th>Created</th>
                  <th>Last used</th>
                  <th class="th-actions">
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.map((k) => (
                  <KeyRow
                    key={k.id}
                    k={k}
                    busy={pending.has(String(k.id))}
                    onToggle={(v) => void setEnabled(k, v)}
                    onEdit={() => setEditing(k)}
                    onDelete={() => setDeleting(k)}
                  />
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Card>

      {editing && (
        <KeyForm
          initial={editing === 'new' ? null : editing}
          models={models.data?.data ?? []}
          onClose={() => setEditing(null)}
          onSaved={(k, s) => {
            setEditing(null);
            if (s) {
              keys.setData({ data: [...list, k] });
              setSecret({ key: k, secret: s });
            } else replace(k);
          }}
        />
      )}
      {secret && (
        <SecretModal
          secret={secret.secret}
          name={secret.key.name || secret.key.prefix}
          onClose={() => setSecret(null)}
        />
      )}
      {deleting && (
        <DeleteModal
          k={deleting}
          onClose={() => setDeleting(null)}
          onDeleted={() => {
            keys.setData({ data: list.filter((x) => x.id !== deleting.id) });
            setDeleting(null);
          }}
        />
      )}
    </>
  );
}

function KeyRow({
  k,
  busy,
  onToggle,
  onEdit,
  onDelete,
}: {
  k: ApiKey;
  busy: boolean;
  onToggle: (v: boolean) => void;
  onEdit: () => void;
  onDelete: () => void;
}) {
  const used = num(k.used_usd);
  const quota = k.quota_usd === null || k.quota_usd === undefined ? null : num(k.quota_usd);
  const pct = quota ? Math.min(100, (used / quota) * 100) : 0;
  const blocked = keyBlocked(k);
  return (
    <tr data-key-id={k.id} data-key-prefix={k.prefix} class={k.enabled ? '' : 'is-muted'}>
      <td data-label="Name">
        <div class="key-name">{k.name || <span class="muted">Untitled key</span>}</div>
        <code class="key-prefix">{k.prefix}…</code>
        {blocked && (
          <div class="key-blocked" data-testid="key-blocked" data-reason={blocked}>
            <Badge tone="red">{REASON_WORDS[blocked].label}</Badge>{' '}
            <span class="small">{REASON_WORDS[blocked].fix}</span>
          </div>
        )}
        {k.budget && (
          <div class="muted small" data-testid="key-budget">
            {usd(k.budget.spent_usd, { precise: true })} of {limitUsd(k.budget.usd)}{' '}
            {k.budget.period === 'day' ? 'today' : `this ${k.budget.period}`}
          </div>
        )}
        {k.expires_at && (
          <div class="muted small" data-testid="key-expiry">
            {Date.parse(k.expires_at) <= Date.now() ? 'Expired' : 'Expires'} {k.expires_at.slice(0, 10)}
          </div>
        )}
      </td>
      <td data-label="Enabled">
        <div class="toggle-cell">
          <Toggle
            checked={k.enabled}
            disabled={busy}
            onChange={onToggle}
            label={`${k.enabled ? 'Disable' : 'Enable'} key ${k.name || k.prefix}`}
          />
          <span class="toggle-text">{k.enabled ? 'Active' : 'Disabled'}</span>
        </div>
      </td>
      <td class="quota-cell" data-label="Spend / limit">
        <div class="quota-text">
          <span class="num">{usd(used, { precise: true })}</span>
          <span class="muted"> / {quota === null ? 'no limit' : limitUsd(quota)}</span>
        </div>
        {quota !== null && (
          <div class="meter" aria-hidden="true">
            <span class={pct >= 90 ? 'is-high' : ''} style={{ width: `${pct}%` }} />
          </div>
        )}
      </td>
      <td data-label="Models">
        {k.models && k.models.length ? (
          <div class="chips">
            {k.models.slice(0, 3).map((m) => (
              <Badge key={m}>{m}</Badge>
            ))}
            {k.models.length > 3 && <Badge>+{k.models.length - 3}</Badge>}
          </div>
        ) : (
          <span class="muted">All models</span>
        )}
      </td>
      <td data-label="Scopes">
        {k.scopes.length === SCOPES.length ? (
          <span class="muted">All</span>
        ) : (
          <div class="chips">
            {k.scopes.map((s) => (
              <Badge key={s} tone="indigo">
                {s}
              </Badge>
            ))}
          </div>
        )}
      </td>
      <td class="nowrap" data-label="Created">
        {date(k.created_at)}
      </td>
      <td class="nowrap" data-label="Last used">
        {ago(k.last_used_at)}
      </td>
      <td class="td-actions">
        <button
          type="button"
          class="icon-btn"
          title="Edit key"
          aria-label={`Edit ${k.name || k.prefix}`}
          onClick={onEdit}
        >
          <Icon name="edit" size={16} />
        </button>
        <button
          type="button"
          class="icon-btn icon-btn-danger"
          title="Delete key"
          aria-label={`Delete ${k.name || k.prefix}`}
          onClick={onDelete}
        >
          <Icon name="trash" size={16} />
        </button>
      </td>
    </tr>
  );
}

function KeyForm({
  initial,
  models,
  onClose,
  onSaved,
}: {
  initial: ApiKey | null;
  models: Model[];
  onClose: () => void;
  onSaved: (k: ApiKey, secret?: string) => void;
}) {
  const [name, setName] = useState(initial?.name ?? '');
  const [quota, setQuota] = useState(
    initial?.quota_usd === null || initial?.quota_usd === undefined ? '' : String(num(initial.quota_usd)),
  );
  const [allModels, setAllModels] = useState(!initial?.models);
  const [chosen, setChosen] = useState<string[]>(initial?.models ?? []);
  const [scopes, setScopes] = useState<Scope[]>(initial?.scopes ?? [...SCOPES]);
  // <input type="date">: a UTC calendar day; the key stops working at the start of it
  const [expires, setExpires] = useState(initial?.expires_at ? initial.expires_at.slice(0, 10) : '');
  const [budget, setBudget] = useState(initial?.budget ? String(num(initial.budget.usd)) : '');
  const [period, setPeriod] = useState<'day' | 'week' | 'month'>(initial?.budget?.period ?? 'month');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const known = new Set(models.map((m) => m.id));
  const extra = chosen.filter((m) => !known.has(m));

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    const q = quota.trim();
    if (q && !/^\d+(\.\d{1,6})?$/.test(q))
      return setError('The spending limit must be an amount in USD, such as 25 or 12.50.');
    if (!scopes.length) return setError('Choose at least one scope.');
    if (!allModels && !chosen.length) return setError('Choose at least one model, or allow all models.');
    const b = budget.trim();
    if (b && !/^\d+(\.\d{1,6})?$/.test(b)) return setError('The budget must be an amount in USD, such as 25 or 12.50.');
    const expiresAt = expires ? `${expires}T00:00:00.000Z` : null;
    if (expiresAt && Date.parse(expiresAt) <= Date.now() && expiresAt !== initial?.expires_at)
      return setError('The expiry date must be in the future.');
    const body: NewKeyInput = {
      name: name.trim() || null,
      quota_usd: q ? q : null,
      models: allModels ? null : chosen,
      scopes,
      ...(expiresAt !== (initial?.expires_at ?? null) && { expires_at: expiresAt }),
      budget: b ? { usd: b, period } : null,
    };
    setBusy(true);
    try {
      if (initial) onSaved(await api.updateKey(initial.id, body));
      else {
        const created = await api.createKey(body);
        onSaved(created.key, created.secret);
      }
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };

  const toggleIn = <T,>(list: T[], v: T) => (list.includes(v) ? list.filter((x) => x !== v) : [...list, v]);

  return (
    <Modal
      title={initial ? `Edit ${initial.name || initial.prefix}` : 'Create an API key'}
      onClose={onClose}
      width={560}
      footer={
        <>
          <Button variant="ghost" onClick={onClose}>
            Cancel
          </Button>
          <Button variant="primary" type="submit" form="key-form" loading={busy}>
            {initial ? 'Save changes' : 'Create key'}
          </Button>
        </>
      }
    >
      <form id="key-form" class="form" onSubmit={submit}>
        {error && <Alert>{error}</Alert>}
        <Field label="Name" htmlFor="key-name" hint="Something to recognise it by, such as the app or environment.">
          <input
            id="key-name"
            name="name"
            class="input"
            maxLength={100}
            placeholder="e.g. Production backend"
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </Field>
        <Field
          label="Spending limit (USD)"
          htmlFor="key-quota"
          hint="Leave empty for no limit. Requests past the limit are refused."
        >
          <div class="input-group">
            <span class="input-prefix">$</span>
            <input
              id="key-quota"
              name="quota_usd"
              class="input"
              inputMode="decimal"
              placeholder="No limit"
              value={quota}
              onInput={(e) => setQuota(e.currentTarget.value)}
            />
          </div>
        </Field>
        <Field
          label="Budget (USD)"
          htmlFor="key-budget"
          hint="Leave empty for none. At most this much per UTC day, week (from Monday) or month."
        >
          <div class="input-group">
            <span class="input-prefix">$</span>
            <input
              id="key-budget"
              name="budget_usd"
              class="input"
              inputMode="decimal"
              placeholder="No budget"
              value={budget}
              onInput={(e) => setBudget(e.currentTarget.value)}
            />
            <select
              class="input"
              aria-label="Budget period"
              value={period}
              onChange={(e) => setPeriod(e.currentTarget.value as 'day' | 'week' | 'month')}
            >
              <option value="day">per day</option>
              <option value="week">per week</option>
              <option value="month">per month</option>
            </select>
          </div>
        </Field>
        <Field
          label="Expires (UTC)"
          htmlFor="key-expires"
          hint="Leave empty for never. From this day on the key is refused."
        >
          <input
            id="key-expires"
            name="expires_at"
            type="date"
            class="input"
            value={expires}
            onInput={(e) => setExpires(e.currentTarget.value)}
          />
        </Field>
        <fieldset class="fieldset">
          <legend class="field-label">Models</legend>
          <div class="check-grid">
            <label class="check check-wide">
              <input
                type="checkbox"
                name="all_models"
                checked={allModels}
                onChange={(e) => setAllModels(e.currentTarget.checked)}
              />
              <span>All models, including ones added later</span>
            </label>
            {!allModels && (
              <>
                {models.map((m) => (
                  <label class="check" key={m.id}>
                    <input
                      type="checkbox"
                      checked={chosen.includes(m.id)}
                      onChange={() => setChosen(toggleIn(chosen, m.id))}
                    />
                    <span>
                      <code>{m.id}</code> <span class="muted">{m.kind}</span>
                    </span>
                  </label>
                ))}
                {extra.map((m) => (
                  <label class="check" key={m}>
                    <input type="checkbox" checked onChange={() => setChosen(toggleIn(chosen, m))} />
                    <span>
                      <code>{m}</code> <span class="muted">no longer offered</span>
                    </span>
                  </label>
                ))}
                {!models.length && !extra.length && <p class="field-hint">No models are available.</p>}
              </>
            )}
          </div>
        </fieldset>
        <fieldset class="fieldset">
          <legend class="field-label">Scopes</legend>
          <div class="check-grid">
            {SCOPES.map((s) => (
              <label class="check" key={s}>
                <input
                  type="checkbox"
                  name="scopes"
                  value={s}
                  checked={scopes.includes(s)}
                  onChange={() => setScopes(toggleIn(scopes, s))}
                />
                <span>
                  {SCOPE_LABELS[s]} <code class="muted">{s}</code>
                </span>
              </label>
            ))}
          </div>
        </fieldset>
      </form>
    </Modal>
  );
}

function SecretModal({ secret, name, onClose }: { secret: string; name: string; onClose: () => void }) {
  return (
    <Modal
      title="Save your new key"
      onClose={onClose}
      confirmClose="Close without saving the key? Its secret is shown only this once: once closed, it is lost for good."
      footer={
        <Button variant="primary" onClick={onClose}>
          I have saved it
        </Button>
      }
    >
      <p class="modal-text">
        This is the only time <strong>{name}</strong> is shown in full. Store it somewhere safe, such as a secret
        manager; if you lose it, create a new key.
      </p>
      <div class="secret">
        <code data-testid="new-secret">{secret}</code>
        <CopyButton text={secret} size="md" variant="primary" />
      </div>
      <Alert kind="info">
        Anyone with this key can spend your credits. Never put it in code that runs in a browser or in a public
        repository.
      </Alert>
    </Modal>
  );
}

function DeleteModal({ k, onClose, onDeleted }: { k: ApiKey; onClose: () => void; onDeleted: () => void }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const remove = async () => {
    setBusy(true);
    setError(null);
    try {
      await api.deleteKey(k.id);
      onDeleted();
    } catch (e) {
      setError((e as Error).message);
      setBusy(false);
    }
  };
  return (
    <Modal
      title="Delete this key?"
      onClose={onClose}
      width={460}
      footer={
        <>
          <Button variant="ghost" onClick={onClose}>
            Cancel
          </Button>
          <Button variant="danger" loading={busy} onClick={() => void remove()}>
            Delete key
          </Button>
        </>
      }
    >
      {error && <Alert>{error}</Alert>}
      <p class="modal-text">
        <strong>{k.name || 'Untitled key'}</strong> (<code>{k.prefix}…</code>) stops working at once, and every app that
        uses it gets 401 errors. Its past usage stays in your records. This cannot be undone.
      </p>
    </Modal>
  );
}
