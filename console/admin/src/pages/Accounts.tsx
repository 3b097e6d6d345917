/**
 * Accounts: search by email or id; an account's page with its balance, debt, keys, ledger, usage and sign-ins, and
 * what support may do to it (grant or remove credits with a reason, suspend or enable, settle its debt, take back
 * unspent free credits, send the confirmation mail again). Buttons the role may not use are not shown.
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
  Modal,
  PageHeader,
  useLoader,
} from '../../../src/components/ui';
import { ago, date, dateTime, int, usd, usdExact } from '../../../src/format';
import { navigate } from '../../../src/router';
import { api, idempotencyKey } from '../api';
import { useCan } from '../auth';
import { Confirm, OutcomeAlert, useAction, usePaged, type Outcome } from '../parts';
import type { AdminAccount } from '../types';

/** A key's state as the gateway treats it: enabled, disabled, expired... (the API's `status`). */
export function KeyStatus({ k }: { k: { status?: string; enabled: boolean } }) {
  const status = k.status ?? (k.enabled ? 'active' : 'disabled');
  return <Badge tone={status === 'active' ? 'green' : status === 'disabled' ? 'neutral' : 'amber'}>{status}</Badge>;
}

export function StatusBadge({ status }: { status: string }) {
  return <Badge tone={status === 'active' ? 'green' : 'red'}>{status === 'active' ? 'Active' : 'Suspended'}</Badge>;
}

export function Accounts() {
  const [input, setInput] = useState('');
  const [email, setEmail] = useState('');
  const list = usePaged((cursor) => api.accounts({ email, cursor, limit: 25 }), [email]);
  const search = (e: Event) => {
    e.preventDefault();
    const q = input.trim();
    // An id opens the account; anything else is part of an email address.
    if (/^\d+$/.test(q)) navigate(`/accounts/${q}`);
    else {
      list.reset();
      setEmail(q);
    }
  };
  return (
    <>
      <PageHeader title="Accounts" description="Find an account by part of its email address, or open one by its id." />
      <form class="toolbar" onSubmit={search} role="search">
        <input
          class="input"
          aria-label="Email or account id"
          placeholder="Email or account id"
          value={input}
          onInput={(e) => setInput(e.currentTarget.value)}
        />
        <Button type="submit" icon="search">
          Search
        </Button>
      </form>
      {list.error && <Alert>{list.error}</Alert>}
      <Card pad={false}>
        {list.loading && !list.data ? (
          <Loading />
        ) : list.rows.length === 0 ? (
          <Empty icon="users" title={email ? `No account matches “${email}”` : 'No accounts yet'} />
        ) : (
          <div class="table-wrap">
            <table class="table" data-testid="accounts-table">
              <thead>
                <tr>
                  <th>Id</th>
                  <th>Email</th>
                  <th>Status</th>
                  <th class="num">Balance</th>
                  <th class="num">Debt</th>
                  <th>Created</th>
                </tr>
              </thead>
              <tbody>
                {list.rows.map((a) => (
                  <tr key={a.id}>
                    <td class="muted">{a.id}</td>
                    <td>
                      <Link href={`/accounts/${a.id}`}>{a.email}</Link>
                    </td>
                    <td>
                      <StatusBadge status={a.status} />
                    </td>
                    <td class="num">{usd(a.balance_usd)}</td>
                    <td class="num">{Number(a.debt_usd) ? usd(a.debt_usd) : <span class="muted">—</span>}</td>
                    <td class="nowrap">{date(a.created_at)}</td>
                  </tr>
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

/** Grant (or, with "Remove", take away) credits, with the reason the audit log and the ledger keep. */
function GrantDialog({
  account,
  onClose,
  onDone,
}: {
  account: AdminAccount;
  onClose: () => void;
  onDone: (o: Outcome) => void;
}) {
  const [mode, setMode] = useState<'grant' | 'remove'>('grant');
  const [amount, setAmount] = useState('');
  const [note, setNote] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // One key per dialog: a double submit (or a retry after a lost answer) credits once.
  const [key] = useState(idempotencyKey);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const usdAmount = `${mode === 'remove' ? '-' : ''}${amount.trim()}`;
      const r = await api.grant(account.id, { usd: usdAmount, note: note.trim() || null }, key);
      onDone({
        kind: 'success',
        text: `${r.kind === 'grant' ? 'Granted' : 'Removed'} ${usdExact(r.amount_usd.replace('-', ''))}; the balance is ${usdExact(r.balance_usd)}.`,
      });
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };
  return (
    <Modal
      title="Grant or remove credits"
      onClose={onClose}
      footer={
        <>
          <Button variant="ghost" onClick={onClose}>
            Cancel
          </Button>
          <Button type="submit" variant="primary" loading={busy} onClick={submit}>
            {mode === 'grant' ? 'Grant credits' : 'Remove credits'}
          </Button>
        </>
      }
    >
      {error && <Alert>{error}</Alert>}
      <form class="form" onSubmit={submit}>
        <div class="segmented" role="group" aria-label="Grant or remove">
          <button type="button" class={mode === 'grant' ? 'is-active' : ''} onClick={() => setMode('grant')}>
            Grant
          </button>
          <button type="button" class={mode === 'remove' ? 'is-active' : ''} onClick={() => setMode('remove')}>
            Remove
          </button>
        </div>
        <Field label="Amount (USD)" htmlFor="grant-usd" hint={`${account.email} has ${usdExact(account.balance_usd)}.`}>
          <input
            id="grant-usd"
            class="input"
            inputMode="decimal"
            placeholder="10.00"
            required
            pattern="\d+(\.\d{1,6})?"
            value={amount}
            onInput={(e) => setAmount(e.currentTarget.value)}
          />
        </Field>
        <Field label="Reason" htmlFor="grant-note" hint="Kept in the ledger and the audit log.">
          <input
            id="grant-note"
            class="input"
            maxLength={500}
            required
            value={note}
            onInput={(e) => setNote(e.currentTarget.value)}
          />
        </Field>
      </form>
    </Modal>
  );
}

/** Settle what the account owes: paid from its balance, or forgiven with the reason the ledger keeps. */
function SettleDialog({ a, onClose, onDone }: { a: AdminAccount; onClose: () => void; onDone: (o: Outcome) => void }) {
  const [from, setFrom] = useState<'balance' | 'forgive'>('balance');
  const [note, setNote] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const r = await api.settleDebt(a.id, { from, note: note.trim() || null });
      const what = Number(r.forgiven_usd) ? `Forgave ${usdExact(r.forgiven_usd)}` : `Paid ${usdExact(r.paid_usd)}`;
      onDone({ kind: 'success', text: `${what} of the debt; ${usdExact(r.debt_usd)} is still owed.` });
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };
  return (
    <Modal
      title="Settle the debt"
      onClose={onClose}
      footer={
        <>
          <Button variant="ghost" onClick={onClose}>
            Cancel
          </Button>
          <Button variant="primary" loading={busy} onClick={submit}>
            Settle debt
          </Button>
        </>
      }
    >
      {error && <Alert>{error}</Alert>}
      <p class="modal-text">
        {a.email} owes {usdExact(a.debt_usd)} and has {usdExact(a.balance_usd)}.
      </p>
      <form class="form" onSubmit={submit}>
        <div class="segmented" role="group" aria-label="How">
          <button type="button" class={from === 'balance' ? 'is-active' : ''} onClick={() => setFrom('balance')}>
            Pay from the balance
          </button>
          <button type="button" class={from === 'forgive' ? 'is-active' : ''} onClick={() => setFrom('forgive')}>
            Forgive
          </button>
        </div>
        <Field
          label="Reason"
          htmlFor="settle-note"
          hint={from === 'forgive' ? 'Required to forgive a debt.' : 'Optional.'}
        >
          <input
            id="settle-note"
            class="input"
            maxLength={500}
            required={from === 'forgive'}
            value={note}
            onInput={(e) => setNote(e.currentTarget.value)}
          />
        </Field>
      </form>
    </Modal>
  );
}

type Pending = 'disable' | 'enable' | 'revoke' | 'resend' | null;

const ACTIONS: Record<Exclude<Pending, null>, { op: string; label: string; ask: string; danger?: boolean }> = {
  disable: {
    op: 'adminDisableAccount',
    label: 'Suspend',
    ask: 'Its API keys are refused from their next request on, and its console sessions end.',
    danger: true,
  },
  enable: { op: 'adminEnableAccount', label: 'Enable', ask: 'Its keys and log-in work again.' },
  revoke: {
    op: 'adminRevokeFreeCredits',
    label: 'Revoke free credits',
    ask: 'The sign-up and referral credits it has not spent are taken back; paid money is never taken.',
    danger: true,
  },
  resend: {
    op: 'adminResendConfirmation',
    label: 'Resend confirmation',
    ask: 'The confirmation link is mailed to the address again.',
  },
};

function AccountActions({
  a,
  verified,
  onChanged,
}: {
  a: AdminAccount;
  verified: boolean;
  onChanged: (o: Outcome) => void;
}) {
  const can = useCan();
  const [pending, setPending] = useState<Pending>(null);
  const [granting, setGranting] = useState(false);
  const [settling, setSettling] = useState(false);
  const act = useAction(onChanged);
  const run = async (p: Exclude<Pending, null>) => {
    const calls = {
      disable: () => api.disable(a.id).then(() => `${a.email} is suspended.`),
      enable: () => api.enable(a.id).then(() => `${a.email} is active again.`),
      revoke: () => api.revokeFreeCredits(a.id).then((r) => `Took back ${usdExact(r.revoked_usd)} of free credits.`),
      resend: () => api.resendConfirmation(a.id).then(() => `The confirmation link was sent to ${a.email} again.`),
    };
    await act.run(p, calls[p], (t) => t);
    setPending(null);
  };
  /** Each action where it applies: suspend an active account, enable a suspended one, resend to an unconfirmed one. */
  const applies: Record<Exclude<Pending, null>, boolean> = {
    disable: a.status === 'active',
    enable: a.status !== 'active',
    revoke: true,
    resend: !verified,
  };
  const shown = (p: Exclude<Pending, null>) => can(ACTIONS[p].op) && applies[p];
  const buttons = (Object.keys(ACTIONS) as Exclude<Pending, null>[]).filter(shown);
  return (
    <div class="page-actions">
      {can('adminGrantCredits') && (
        <Button variant="primary" icon="wallet" onClick={() => setGranting(true)}>
          Grant or remove credits
        </Button>
      )}
      {can('adminSettleDebt') && Number(a.debt_usd) > 0 && (
        <Button onClick={() => setSettling(true)}>Settle debt</Button>
      )}
      {buttons.map((p) => (
        <Button key={p} variant={ACTIONS[p].danger ? 'secondary' : 'secondary'} onClick={() => setPending(p)}>
          {ACTIONS[p].label}
        </Button>
      ))}
      {granting && (
        <GrantDialog
          account={a}
          onClose={() => setGranting(false)}
          onDone={(o) => {
            setGranting(false);
            onChanged(o);
          }}
        />
      )}
      {settling && (
        <SettleDialog
          a={a}
          onClose={() => setSettling(false)}
          onDone={(o) => {
            setSettling(false);
            onChanged(o);
          }}
        />
      )}
      {pending && (
        <Confirm
          title={`${ACTIONS[pending].label}: ${a.email}?`}
          action={ACTIONS[pending].label}
          danger={ACTIONS[pending].danger}
          busy={act.busy === pending}
          onConfirm={() => void run(pending)}
          onClose={() => setPending(null)}
        >
          {ACTIONS[pending].ask}
        </Confirm>
      )}
    </div>
  );
}

export function AccountPage({ id }: { id: string }) {
  const d = useLoader(() => api.account(id), [id]);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const changed = (o: Outcome) => {
    setOutcome(o);
    void d.reload();
  };
  if (d.error && !d.data) {
    return (
      <>
        <PageHeader title={`Account ${id}`} />
        <Alert>{d.error}</Alert>
      </>
    );
  }
  if (!d.data) return <Loading label="Loading the account…" />;
  const { account: a, email_verified: verified, keys, ledger, usage, sign_ins } = d.data;
  return (
    <>
      <div class="crumbs">
        <Link href="/accounts">Accounts</Link> / {a.id}
      </div>
      <PageHeader
        title={a.email}
        description={
          <>
            <StatusBadge status={a.status} /> Account {a.id} · created {date(a.created_at)} · referral code{' '}
            <code>{a.referral_code}</code>
            {!verified && ' · address not confirmed'}
          </>
        }
        actions={<AccountActions a={a} verified={verified} onChanged={changed} />}
      />
      <OutcomeAlert outcome={outcome} onClose={() => setOutcome(null)} />
      <div class="stats">
        <div class="stat stat-hero">
          <div class="stat-label">Balance</div>
          <div class="stat-value" data-testid="account-balance">
            {usdExact(a.balance_usd)}
          </div>
          <div class="stat-foot">Debt: {usdExact(a.debt_usd)}</div>
        </div>
        <div class="stat">
          <div class="stat-label">Last 24 hours</div>
          <div class="stat-value">{usd(usage.day.spend_usd, { precise: true })}</div>
          <div class="stat-foot">{int(usage.day.requests)} requests</div>
        </div>
        <div class="stat">
          <div class="stat-label">Last 30 days</div>
          <div class="stat-value">{usd(usage.month.spend_usd, { precise: true })}</div>
          <div class="stat-foot">
            {int(usage.month.requests)} requests · <Link href={`/usage?account_id=${a.id}`}>Usage</Link>
          </div>
        </div>
      </div>
      <Card title="Keys" pad={false}>
        {keys.length === 0 ? (
          <Empty icon="key" title="No keys" />
        ) : (
          <div class="table-wrap">
            <table class="table" data-testid="account-keys">
              <thead>
                <tr>
                  <th>Key</th>
                  <th>Name</th>
                  <th>Status</th>
                  <th class="num">Used</th>
                  <th>Budget</th>
                  <th>Expires</th>
                  <th>Last used</th>
                </tr>
              </thead>
              <tbody>
                {keys.map((k) => (
                  <tr key={k.id}>
                    <td>
                      <Link href={`/keys?prefix=${encodeURIComponent(k.prefix)}`}>
                        <code>{k.prefix}…</code>
                      </Link>
                    </td>
                    <td>{k.name ?? <span class="muted">—</span>}</td>
                    <td>
                      <KeyStatus k={k} />
                    </td>
                    <td class="num">{usd(k.used_usd, { precise: true })}</td>
                    <td>{k.budget ? `${usd(k.budget.usd)} / ${k.budget.period}` : <span class="muted">None</span>}</td>
                    <td>{k.expires_at ? date(k.expires_at) : <span class="muted">Never</span>}</td>
                    <td>{ago(k.last_used_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Card>
      <div class="grid-2-1">
        <Card title="Ledger" subtitle="Newest first" pad={false}>
          {ledger.length === 0 ? (
            <Empty icon="wallet" title="No ledger rows" />
          ) : (
            <div class="table-wrap">
              <table class="table" data-testid="account-ledger">
                <thead>
                  <tr>
                    <th>Time</th>
                    <th>Kind</th>
                    <th>For</th>
                    <th class="num">Amount</th>
                    <th class="num">Balance after</th>
                  </tr>
                </thead>
                <tbody>
                  {ledger.map((l) => (
                    <tr key={l.id}>
                      <td class="nowrap">{dateTime(l.created_at)}</td>
                      <td>
                        <code>{l.kind}</code>
                      </td>
                      <td class="ellipsis" title={l.note ?? l.ref ?? undefined}>
                        {l.note ?? l.model ?? l.ref ?? <span class="muted">—</span>}
                      </td>
                      <td class={`num${Number(l.amount_usd) > 0 ? ' pos' : ''}`}>{usdExact(l.amount_usd)}</td>
                      <td class="num">{usdExact(l.balance_after_usd)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </Card>
        <Card title="Sign-ins" subtitle="Console log-ins" pad={false}>
          {sign_ins.length === 0 ? (
            <Empty icon="lock" title="No sign-ins" />
          ) : (
            <ul class="model-list" data-testid="account-sign-ins">
              {sign_ins.map((s) => (
                <li key={`${s.at}${s.address}`}>
                  <code>{s.address}</code>
                  <span class="muted">{dateTime(s.at)}</span>
                </li>
              ))}
            </ul>
          )}
        </Card>
      </div>
    </>
  );
}
