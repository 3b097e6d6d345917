/** The signed-in operator's own account: who they are, and changing their password. */
import { useState } from 'preact/hooks';
import { Alert, Badge, Button, Card, Field, PageHeader } from '../../../src/components/ui';
import { date } from '../../../src/format';
import { api } from '../api';
import { useAuth } from '../auth';

export function Me() {
  const { operator } = useAuth();
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [outcome, setOutcome] = useState<{ kind: 'success' | 'error'; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const change = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setOutcome(null);
    try {
      await api.changePassword({ current_password: current, new_password: next });
      setOutcome({ kind: 'success', text: 'Your password is changed.' });
      setCurrent('');
      setNext('');
    } catch (err) {
      setOutcome({ kind: 'error', text: (err as Error).message });
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <PageHeader
        title="Your account"
        description={
          <>
            {operator.email} · <Badge>{operator.role}</Badge> · since {date(operator.created_at)} · two-factor{' '}
            {operator.totp_enabled ? 'on' : 'off'}
          </>
        }
      />
      <Card title="Change your password">
        {outcome && <Alert kind={outcome.kind}>{outcome.text}</Alert>}
        <form class="form narrow" onSubmit={change}>
          <Field label="Current password" htmlFor="me-current">
            <input
              id="me-current"
              class="input"
              type="password"
              autocomplete="current-password"
              required
              value={current}
              onInput={(e) => setCurrent(e.currentTarget.value)}
            />
          </Field>
          <Field label="New password" htmlFor="me-new" hint="At least 10 characters, not letters or digits only.">
            <input
              id="me-new"
              class="input"
              type="password"
              autocomplete="new-password"
              required
              value={next}
              onInput={(e) => setNext(e.currentTarget.value)}
            />
          </Field>
          <Button type="submit" variant="primary" loading={busy}>
            Change password
          </Button>
        </form>
      </Card>
    </>
  );
}
