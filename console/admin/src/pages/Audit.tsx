/** The audit log: every state-changing operator action, newest first, filtered by action or target; as CSV. */
import { useState } from 'preact/hooks';
import { Alert, Button, Card, Empty, Loading, PageHeader } from '../../../src/components/ui';
import { dateTime } from '../../../src/format';
import { useRoute } from '../../../src/router';
import { api, csvUrl } from '../api';
import { Json, usePaged } from '../parts';
import type { AuditRecord } from '../types';

function Row({ r }: { r: AuditRecord }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <tr>
        <td class="nowrap">{dateTime(r.created_at)}</td>
        <td>{r.actor}</td>
        <td>
          <code>{r.address}</code>
        </td>
        <td>
          <code>{r.action}</code>
        </td>
        <td>{r.target ?? <span class="muted">—</span>}</td>
        <td class="td-actions">
          <Button size="sm" variant="ghost" aria-expanded={open} onClick={() => setOpen(!open)}>
            {open ? 'Hide' : 'Before / after'}
          </Button>
        </td>
      </tr>
      {open && (
        <tr class="audit-detail">
          <td colSpan={6}>
            <div class="grid-2">
              <div>
                <div class="field-label">Before</div>
                <Json value={r.before} />
              </div>
              <div>
                <div class="field-label">After</div>
                <Json value={r.after} />
              </div>
            </div>
          </td>
        </tr>
      )}
    </>
  );
}

export function Audit() {
  const { query } = useRoute();
  const [action, setAction] = useState('');
  const [target, setTarget] = useState(query.get('target') ?? '');
  const [filter, setFilter] = useState({ action: '', target: query.get('target') ?? '' });
  const list = usePaged((cursor) => api.audit({ ...filter, cursor, limit: 50 }), [filter]);
  return (
    <>
      <PageHeader
        title="Audit log"
        description="Who changed what, when and from where: through this app, the admin API or the CLI. Secrets are cut to their last 4 characters."
        actions={
          <a class="btn btn-secondary btn-md" href={csvUrl('/audit', filter)} download="switchyard-audit.csv">
            Export CSV
          </a>
        }
      />
      <form
        class="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          list.reset();
          setFilter({ action: action.trim(), target: target.trim() });
        }}
      >
        <input
          class="input"
          aria-label="Action"
          placeholder="Action (adminGrantCredits)"
          value={action}
          onInput={(e) => setAction(e.currentTarget.value)}
        />
        <input
          class="input"
          aria-label="Target"
          placeholder="Target (account:42)"
          value={target}
          onInput={(e) => setTarget(e.currentTarget.value)}
        />
        <Button type="submit" icon="filter">
          Filter
        </Button>
      </form>
      {list.error && <Alert>{list.error}</Alert>}
      <Card pad={false}>
        {list.loading && !list.data ? (
          <Loading />
        ) : list.rows.length === 0 ? (
          <Empty icon="list" title="Nothing recorded" />
        ) : (
          <div class="table-wrap">
            <table class="table" data-testid="audit-table">
              <thead>
                <tr>
                  <th>Time</th>
                  <th>Who</th>
                  <th>From</th>
                  <th>Action</th>
                  <th>Target</th>
                  <th class="th-actions" />
                </tr>
              </thead>
              <tbody>
                {list.rows.map((r) => (
                  <Row key={r.id} r={r} />
                ))}
              </tbody>
            </table>
          </div>
        )}
        {list.pager}
      </Card>
    </>
  );
}
