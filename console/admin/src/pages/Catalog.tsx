/**
 * The catalog: providers (their credentials only as their last 4 characters; a new one is written, never read) and
 * models with their prices and routes; editing either (in the YAML's own form, checked by the server with the
 * YAML's schema), and testing one route with a 1-token request.
 */
import { useState } from 'preact/hooks';
import {
  Alert,
  Badge,
  Button,
  Card,
  Empty,
  Field,
  Loading,
  Modal,
  PageHeader,
  useLoader,
} from '../../../src/components/ui';
import { api } from '../api';
import { useAuth, useCan } from '../auth';
import { OutcomeAlert, type Outcome } from '../parts';
import type { CatalogModel, CatalogProvider, RouteTest } from '../types';

/** JSON typed into a field: the object, or what is wrong with it (the field named). */
function parseJson(label: string, text: string): Record<string, unknown> | undefined {
  if (!text.trim()) return undefined;
  try {
    const v = JSON.parse(text) as unknown;
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // said below
  }
  throw new Error(`${label}: not a JSON object`);
}

const pretty = (v: unknown) => (v === undefined || v === null ? '' : JSON.stringify(v, null, 2));

function ProviderDialog({
  p,
  secrets,
  onClose,
  onDone,
}: {
  p: CatalogProvider | null;
  /** May set credentials (owners only: the server refuses others). */
  secrets: boolean;
  onClose: () => void;
  onDone: (o: Outcome) => void;
}) {
  const [name, setName] = useState(p?.name ?? '');
  const [type, setType] = useState(p?.type ?? 'openai');
  const [baseUrl, setBaseUrl] = useState(p?.base_url ?? '');
  const [apiKey, setApiKey] = useState('');
  const [settings, setSettings] = useState(pretty(p?.settings));
  const [headers, setHeaders] = useState(pretty(p?.headers));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await api.putProvider(name.trim(), {
        type,
        base_url: baseUrl.trim() || null,
        settings: parseJson('Settings', settings) ?? {},
        headers: (parseJson('Headers', headers) as Record<string, string> | undefined) ?? {},
        // Left out, the stored credential is kept: it is never sent back to be edited.
        ...(apiKey && { credentials: { api_key: apiKey } }),
      });
      onDone({ kind: 'success', text: `Provider ${name.trim()} saved.` });
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };
  return (
    <Modal
      title={p ? `Edit provider ${p.name}` : 'Add a provider'}
      width={620}
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
          <Field label="Name" htmlFor="prov-name">
            <input
              id="prov-name"
              class="input mono"
              required
              readOnly={!!p}
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
            />
          </Field>
          <Field label="Type" htmlFor="prov-type">
            <input
              id="prov-type"
              class="input mono"
              required
              value={type}
              onInput={(e) => setType(e.currentTarget.value)}
            />
          </Field>
        </div>
        <Field label="Base URL" htmlFor="prov-url">
          <input id="prov-url" class="input mono" value={baseUrl} onInput={(e) => setBaseUrl(e.currentTarget.value)} />
        </Field>
        {secrets ? (
          <Field
            label="API key"
            htmlFor="prov-key"
            hint={
              p?.credentials.api_key
                ? `Stored: ${p.credentials.api_key}. Leave empty to keep it.`
                : 'Write-only: never shown again.'
            }
          >
            <input
              id="prov-key"
              class="input mono"
              type="password"
              autocomplete="off"
              value={apiKey}
              onInput={(e) => setApiKey(e.currentTarget.value)}
            />
          </Field>
        ) : (
          <Field label="API key" hint="Only an owner may set or change credentials.">
            <code class="code-inline">{p?.credentials.api_key ?? 'none'}</code>
          </Field>
        )}
        <Field label="Settings (JSON)" htmlFor="prov-settings">
          <textarea
            id="prov-settings"
            class="input textarea mono"
            rows={4}
            value={settings}
            onInput={(e) => setSettings(e.currentTarget.value)}
          />
        </Field>
        <Field label="Headers (JSON)" htmlFor="prov-headers">
          <textarea
            id="prov-headers"
            class="input textarea mono"
            rows={3}
            value={headers}
            onInput={(e) => setHeaders(e.currentTarget.value)}
          />
        </Field>
      </form>
    </Modal>
  );
}

function ModelDialog({
  m,
  onClose,
  onDone,
}: {
  m: CatalogModel | null;
  onClose: () => void;
  onDone: (o: Outcome) => void;
}) {
  const { id: initialId, ...rest } = m ?? { id: '', kind: 'chat', price: {}, routes: [] };
  const [id, setId] = useState(initialId ?? '');
  const [body, setBody] = useState(JSON.stringify(rest, null, 2));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await api.putModel(id.trim(), parseJson('The model', body) as CatalogModel);
      onDone({ kind: 'success', text: `Model ${id.trim()} saved.` });
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };
  return (
    <Modal
      title={m ? `Edit model ${m.id}` : 'Add a model'}
      width={680}
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
        <Field label="Id" htmlFor="model-id">
          <input
            id="model-id"
            class="input mono"
            required
            readOnly={!!m}
            value={id}
            onInput={(e) => setId(e.currentTarget.value)}
          />
        </Field>
        <Field label="Model (as in the YAML: kind, price, allow, routes…)" htmlFor="model-body">
          <textarea
            id="model-body"
            class="input textarea mono"
            rows={16}
            value={body}
            onInput={(e) => setBody(e.currentTarget.value)}
          />
        </Field>
      </form>
    </Modal>
  );
}

/** "input 0.15 · output 0.6" (USD per million units, as the YAML has them). */
function prices(price: Record<string, unknown> | undefined): string {
  if (!price || !Object.keys(price).length) return 'Free';
  return Object.entries(price)
    .map(([k, v]) => `${k} ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
    .join(' · ');
}

function TestResult({ r }: { r: RouteTest }) {
  return (
    <span class="route-test" data-testid="route-test">
      <Badge tone={r.ok ? 'green' : 'red'}>{r.ok ? 'OK' : 'Failed'}</Badge> {r.status ?? '—'} · {r.latency_ms} ms to{' '}
      <code>{r.model}</code>
      {r.error && <span class="muted"> · {r.error}</span>}
    </span>
  );
}

function Routes({ m }: { m: CatalogModel }) {
  const can = useCan();
  const [tests, setTests] = useState<Record<number, RouteTest | string | 'busy'>>({});
  const test = async (i: number) => {
    setTests((t) => ({ ...t, [i]: 'busy' }));
    try {
      const r = await api.testRoute(m.id!, i);
      setTests((t) => ({ ...t, [i]: r }));
    } catch (e) {
      setTests((t) => ({ ...t, [i]: (e as Error).message }));
    }
  };
  return (
    <ol class="routes">
      {(m.routes ?? []).map((r, i) => {
        const t = tests[i];
        return (
          <li key={i}>
            <code>{r.provider}</code>
            {r.model && <span class="muted"> → {r.model}</span>}
            {r.weight !== undefined && <span class="muted"> · weight {r.weight}</span>}
            {can('adminTestCatalogRoute') && (
              <Button size="sm" variant="ghost" loading={t === 'busy'} onClick={() => void test(i)}>
                Test route
              </Button>
            )}
            {t && t !== 'busy' && (typeof t === 'string' ? <span class="field-error">{t}</span> : <TestResult r={t} />)}
          </li>
        );
      })}
    </ol>
  );
}

export function Catalog() {
  const can = useCan();
  const { operator } = useAuth();
  const c = useLoader(() => api.catalog());
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [provider, setProvider] = useState<CatalogProvider | null | undefined>(undefined);
  const [model, setModel] = useState<CatalogModel | null | undefined>(undefined);
  const done = (o: Outcome) => {
    setProvider(undefined);
    setModel(undefined);
    setOutcome(o);
    void c.reload();
  };
  const editable = c.data?.source === 'database';
  return (
    <>
      <PageHeader
        title="Catalog"
        description={
          c.data
            ? c.data.source === 'database'
              ? `From the database, revision ${c.data.revision}.`
              : 'From the configuration file.'
            : 'Providers, models, prices and routes.'
        }
      />
      <OutcomeAlert outcome={outcome} onClose={() => setOutcome(null)} />
      {c.error && <Alert>{c.error}</Alert>}
      {c.data && !editable && (
        <Alert kind="info">
          The catalog is read from the YAML file (catalog: yaml): change it there, or import it into the database.
        </Alert>
      )}
      {!c.data ? (
        !c.error && <Loading />
      ) : (
        <>
          <Card
            title="Providers"
            pad={false}
            actions={
              editable &&
              can('adminPutCatalogProvider') && (
                <Button size="sm" icon="plus" onClick={() => setProvider(null)}>
                  Add provider
                </Button>
              )
            }
          >
            {c.data.providers.length === 0 ? (
              <Empty icon="box" title="No providers" />
            ) : (
              <div class="table-wrap">
                <table class="table" data-testid="catalog-providers">
                  <thead>
                    <tr>
                      <th>Name</th>
                      <th>Type</th>
                      <th>Base URL</th>
                      <th>API key</th>
                      <th class="th-actions" />
                    </tr>
                  </thead>
                  <tbody>
                    {c.data.providers.map((p) => (
                      <tr key={p.name}>
                        <td>
                          <code>{p.name}</code>
                        </td>
                        <td>{p.type}</td>
                        <td class="ellipsis">{p.base_url ?? <span class="muted">default</span>}</td>
                        <td>
                          <code>{p.credentials.api_key ?? '—'}</code>
                        </td>
                        <td class="td-actions">
                          {editable && can('adminPutCatalogProvider') && (
                            <Button size="sm" variant="ghost" icon="edit" onClick={() => setProvider(p)}>
                              Edit
                            </Button>
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </Card>
          <Card
            title="Models"
            pad={false}
            actions={
              editable &&
              can('adminPutCatalogModel') && (
                <Button size="sm" icon="plus" onClick={() => setModel(null)}>
                  Add model
                </Button>
              )
            }
          >
            {c.data.models.length === 0 ? (
              <Empty icon="box" title="No models" />
            ) : (
              <div class="table-wrap">
                <table class="table" data-testid="catalog-models">
                  <thead>
                    <tr>
                      <th>Model</th>
                      <th>Kind</th>
                      <th>Price (USD per 1M)</th>
                      <th>Routes</th>
                      <th class="th-actions" />
                    </tr>
                  </thead>
                  <tbody>
                    {c.data.models.map((m) => (
                      <tr key={m.id} data-model={m.id}>
                        <td>
                          <code>{m.id}</code>
                        </td>
                        <td>{m.kind}</td>
                        <td class="model-prices">{prices(m.price)}</td>
                        <td>
                          <Routes m={m} />
                        </td>
                        <td class="td-actions">
                          {editable && can('adminPutCatalogModel') && (
                            <Button size="sm" variant="ghost" icon="edit" onClick={() => setModel(m)}>
                              Edit
                            </Button>
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </Card>
        </>
      )}
      {provider !== undefined && (
        <ProviderDialog
          p={provider}
          secrets={operator.role === 'owner'}
          onClose={() => setProvider(undefined)}
          onDone={done}
        />
      )}
      {model !== undefined && <ModelDialog m={model} onClose={() => setModel(undefined)} onDone={done} />}
    </>
  );
}
