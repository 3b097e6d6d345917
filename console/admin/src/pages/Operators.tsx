/** Operators (owners only): who may use this app and with which role; add one (its first password shown once), disable one. */
import { useState } from 'preact/hooks';
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
  useLoader,
} from '../../../src/components/ui';
import { date } from '../../../src/format';
import { OPERATOR_ROLES } from '../../../../src/contract';
import { api } from '../api';
import { useAuth, useCan } from '../auth';
import { Confirm, OutcomeAlert, useAction, type Outcome } from '../parts';
import type { NewOperator, Operator, OperatorRole } from '../types';

function AddOperator({ onClose, onMade }: { onClose: () => void; onMade: () => void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<OperatorRole>('viewer');
  const [made, setMade] = useState<NewOperator | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const create = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      setMade(await api.createOperator({ email: email.trim(), role }));
      onMade();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  if (made) {
    return (
      <Modal
        title="Operator added"
        onClose={onClose}
        footer={
          <Button variant="primary" onClick={onClose}>
            Done
          </Button>
        }
      >
        <p class="modal-text">
          Give <strong>{made.operator.email}</strong> this first password by a safe channel. It is shown only now; they
          set up their authenticator when they first sign in.
        </p>
        <div class="secret">
          <code data-testid="new-operator-password">{made.password}</code>
          <CopyButton text={made.password} />
        </div>
      </Modal>
    );
  }
  return (
    <Modal
      title="Add an operator"
      onClose={onClose}
      footer={
        <>
          <Button variant="ghost" onClick={onClose}>
            Cancel
          </Button>
          <Button variant="primary" loading={busy} onClick={create}>
            Add operator
          </Button>
        </>
      }
    >
      {error && <Alert>{error}</Alert>}
      <form class="form" onSubmit={create}>
        <Field label="Email" htmlFor="op-email">
          <input
            id="op-email"
            class="input"
            type="email"
            required
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
        </Field>
        <Field label="Role" htmlFor="op-role">
          <select
            id="op-role"
            class="input"
            value={role}
            onChange={(e) => setRole(e.currentTarget.value as OperatorRole)}
          >
            {OPERATOR_ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </Field>
      </form>
    </Modal>
  );
}

export function Operators() {
  const can = useCan();
  const { operator: me } = useAuth();
  const list = useLoader(() => api.operators());
  const [adding, setAdding] = useState(false);
  const [disabling, setDisabling] = useState<Operator | null>(null);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const act = useAction(setOutcome);
  const disable = async () => {
    const o = disabling!;
    await act.run(
      'disable',
      () => api.disableOperator(o.id),
      () => `${o.email} is disabled and signed out.`,
    );
    setDisabling(null);
    void list.reload();
  };
  return (
    <>
      <PageHeader
        title="Operators"
        description="People who may use this app. Owners may do everything; admins all but this page; support accounts, keys, codes and usage; viewers read."
        actions={
          can('adminCreateOperator') && (
            <Button variant="primary" icon="plus" onClick={() => setAdding(true)}>
              Add operator
            </Button>
          )
        }
      />
      <OutcomeAlert outcome={outcome} onClose={() => setOutcome(null)} />
      {list.error && <Alert>{list.error}</Alert>}
      <Card pad={false}>
        {!list.data ? (
          !list.error && <Loading />
        ) : list.data.data.length === 0 ? (
          <Empty icon="users" title="No operators" />
        ) : (
          <div class="table-wrap">
            <table class="table" data-testid="operators-table">
              <thead>
                <tr>
                  <th>Email</th>
                  <th>Role</th>
                  <th>Two-factor</th>
                  <th>Status</th>
                  <th>Added</th>
                  <th class="th-actions" />
                </tr>
              </thead>
              <tbody>
                {list.data.data.map((o) => (
                  <tr key={o.id} class={o.disabled ? 'is-muted' : undefined}>
                    <td>{o.email}</td>
                    <td>
                      <code>{o.role}</code>
                    </td>
                    <td>{o.totp_enabled ? <Badge tone="green">On</Badge> : <Badge tone="amber">Not set up</Badge>}</td>
                    <td>{o.disabled ? <Badge tone="red">Disabled</Badge> : <Badge tone="green">Active</Badge>}</td>
                    <td>{date(o.created_at)}</td>
                    <td class="td-actions">
                      {!o.disabled && o.id !== me.id && can('adminDisableOperator') && (
                        <Button size="sm" onClick={() => setDisabling(o)}>
                          Disable
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
      {adding && <AddOperator onClose={() => setAdding(false)} onMade={() => void list.reload()} />}
      {disabling && (
        <Confirm
          title={`Disable ${disabling.email}?`}
          action="Disable"
          danger
          busy={act.busy === 'disable'}
          onConfirm={() => void disable()}
          onClose={() => setDisabling(null)}
        >
          They are signed out everywhere and can no longer sign in.
        </Confirm>
      )}
    </>
  );
}
