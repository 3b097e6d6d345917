/** Top up: redeem a code, pay by card (Stripe Checkout) when the gateway offers it, and the credit history. */
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { useAuth } from '../auth';
import { Icon } from '../components/icons';
import { Alert, Badge, Button, Card, Empty, Field, Loading, PageHeader, Skeleton, useLoader } from '../components/ui';
import { dateTime, limitUsd, num, usd, usdExact } from '../format';
import { useConsoleConfig } from '../components/config';
import type { LedgerEntry, LedgerKind } from '../types';

const PRESETS = [10, 25, 50, 100];

export function TopUp() {
  const { details, refresh } = useAuth();
  const options = useLoader(() => api.topupOptions());
  const [notice, setNotice] = useState<{ kind: 'success' | 'info'; text: string } | null>(null);
  const [historyVersion, setHistoryVersion] = useState(0);

  useEffect(() => {
    const q = new URLSearchParams(location.search);
    const c = q.get('checkout') ?? q.get('status');
    if (c === 'success')
      setNotice({
        kind: 'success',
        text: 'Payment received. Your credits appear in your balance as soon as the payment is confirmed.',
      });
    else if (c === 'cancelled' || c === 'canceled')
      setNotice({ kind: 'info', text: 'The payment was cancelled. Nothing was charged.' });
  }, []);

  return (
    <>
      <PageHeader
        title="Top up"
        description="Add prepaid credits to your balance. Credits never expire and are spent only when you call models."
      />
      {notice && (
        <Alert kind={notice.kind} onClose={() => setNotice(null)}>
          {notice.text}
        </Alert>
      )}
      <div class="topup-grid">
        <div class="balance-panel">
          <div class="stat-label">
            <Icon name="wallet" size={16} /> Current balance
          </div>
          <div class="balance-big" data-testid="topup-balance">
            {details ? usd(details.balance_usd) : <Skeleton w="160px" h={40} />}
          </div>
          <p class="balance-note">Usage is charged per token, at the prices listed for each model.</p>
          {details && (
            <dl class="balance-facts">
              <div>
                <dt>Topped up</dt>
                <dd>{usd(details.totals.topped_up_usd)}</dd>
              </div>
              <div>
                <dt>Referrals</dt>
                <dd>{usd(details.totals.referral_usd)}</dd>
              </div>
              <div>
                <dt>Spent</dt>
                <dd>{usd(details.totals.spent_usd, { precise: true })}</dd>
              </div>
            </dl>
          )}
          {details && <LowBalance current={details.low_balance_usd ?? null} onSaved={() => void refresh()} />}
        </div>
        <Redeem
          onStart={() => setNotice(null)}
          onRedeemed={async (amount) => {
            setNotice({ kind: 'success', text: `${usd(amount)} added to your balance.` });
            setHistoryVersion((v) => v + 1);
            await refresh();
          }}
        />
        {options.loading && !options.data ? (
          <Card title="Pay by card">
            <Skeleton h={80} />
          </Card>
        ) : options.data?.card ? (
          <CardPayment
            min={num(options.data.min_usd)}
            max={num(options.data.max_usd)}
            currency={options.data.currency}
          />
        ) : null}
      </div>
      <History version={historyVersion} />
    </>
  );
}

function Redeem({
  onStart,
  onRedeemed,
}: {
  onStart: () => void;
  onRedeemed: (amount: string | number) => Promise<void>;
}) {
  const [code, setCode] = useState('');
  const config = useConsoleConfig();
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    onStart();
    if (!code.trim()) return setError('Enter the code you received.');
    setBusy(true);
    setError(null);
    try {
      const r = await api.redeem(code.trim());
      setCode('');
      await onRedeemed(r.amount_usd);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Card title="Redeem a code" subtitle="A code adds its credits at once. Each code works once.">
      <p class="muted small" data-testid="topup-note">
        {config?.topup_note ??
          'Codes come from the operator of this Switchyard: ask them for one, with the amount you want to add.'}
      </p>
      <form class="form" onSubmit={submit}>
        <Field label="Code" htmlFor="redeem-code" error={error}>
          <input
            id="redeem-code"
            name="code"
            class="input mono"
            autocomplete="off"
            spellcheck={false}
            placeholder="SY-XXXXX-XXXXX-XXXXX-XXXXX"
            value={code}
            onInput={(e) => setCode(e.currentTarget.value)}
            aria-invalid={error ? 'true' : undefined}
          />
        </Field>
        <Button type="submit" variant="primary" icon="gift" loading={busy}>
          Redeem code
        </Button>
      </form>
    </Card>
  );
}

function CardPayment({ min, max, currency }: { min: number; max: number; currency: string }) {
  const presets = PRESETS.filter((p) => p >= min && p <= max);
  const [amount, setAmount] = useState(String(presets[1] ?? presets[0] ?? min));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const a = amount.trim();
    const n = Number(a);
    if (!/^\d+(\.\d{1,2})?$/.test(a) || n < min || n > max)
      return setError(`Enter an amount between ${usd(min)} and ${usd(max)}.`);
    setBusy(true);
    setError(null);
    try {
      const s = await api.checkout(a);
      location.assign(s.url);
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };
  return (
    <Card
      title="Pay by card"
      subtitle={`Secure checkout by Stripe. Amounts in ${currency.toUpperCase()}, from ${usd(min)} to ${usd(max)}.`}
    >
      <form class="form" onSubmit={submit}>
        <div class="presets" role="group" aria-label="Amount">
          {presets.map((p) => (
            <button
              type="button"
              key={p}
              class={`preset${Number(amount) === p ? ' is-active' : ''}`}
              onClick={() => setAmount(String(p))}
            >
              {usd(p).replace('.00', '')}
            </button>
          ))}
        </div>
        <Field label="Amount (USD)" htmlFor="card-amount" error={error}>
          <div class="input-group">
            <span class="input-prefix">$</span>
            <input
              id="card-amount"
              name="amount_usd"
              class="input"
              inputMode="decimal"
              value={amount}
              onInput={(e) => setAmount(e.currentTarget.value)}
            />
          </div>
        </Field>
        <Button type="submit" variant="primary" icon="card" loading={busy}>
          Continue to payment
        </Button>
      </form>
    </Card>
  );
}

const KIND_LABELS: Record<LedgerKind, string> = {
  signup: 'Starter credits',
  referral: 'Referral bonus',
  topup: 'Card payment',
  redemption: 'Code redeemed',
  grant: 'Credit grant',
  adjustment: 'Adjustment',
  usage: 'Usage',
  refund: 'Refund',
  shortfall: 'Shortfall (not charged)',
  card_refund: 'Card payment refunded',
  dispute: 'Card payment disputed',
  dispute_won: 'Dispute won: returned',
  refund_failed: 'Card refund failed: returned',
  debt_payment: 'Debt paid',
  revocation: 'Free credits taken back',
};

function History({ version }: { version: number }) {
  const [rows, setRows] = useState<LedgerEntry[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const first = useLoader(() => api.ledger({ limit: 10 }), [version]);
  const [more, setMore] = useState<{ loading: boolean; error: string | null }>({ loading: false, error: null });

  useEffect(() => {
    if (first.data) {
      setRows(first.data.data);
      setCursor(first.data.next_cursor);
    }
  }, [first.data]);

  const loadMore = async () => {
    if (!cursor) return;
    setMore({ loading: true, error: null });
    try {
      const page = await api.ledger({ limit: 20, cursor });
      setRows((r) => [...r, ...page.data]);
      setCursor(page.next_cursor);
      setMore({ loading: false, error: null });
    } catch (e) {
      setMore({ loading: false, error: (e as Error).message });
    }
  };

  return (
    <Card title="Balance history" subtitle="Every credit and charge, newest first." pad={false}>
      {first.loading && !first.data ? (
        <Loading />
      ) : first.error ? (
        <div class="card-body">
          <Alert>{first.error}</Alert>
        </div>
      ) : rows.length === 0 ? (
        <Empty icon="wallet" title="No transactions yet">
          Credits you add and usage charges show up here.
        </Empty>
      ) : (
        <>
          <div class="table-wrap">
            <table class="table">
              <thead>
                <tr>
                  <th>Date</th>
                  <th>Type</th>
                  <th>Details</th>
                  <th class="num">Amount</th>
                  <th class="num">Balance after</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => {
                  const a = num(r.amount_usd);
                  return (
                    <tr key={r.id}>
                      <td class="nowrap">{dateTime(r.created_at)}</td>
                      <td>
                        <Badge tone={a > 0 ? 'green' : 'neutral'}>{KIND_LABELS[r.kind] ?? r.kind}</Badge>
                      </td>
                      <td class="muted ellipsis">
                        {r.kind === 'usage'
                          ? (r.model ?? '')
                          : r.kind === 'redemption' || r.kind === 'referral' || r.kind === 'signup'
                            ? ''
                            : (r.ref ?? '')}
                      </td>
                      <td class={`num ${a > 0 ? 'pos' : ''}`}>
                        {a > 0 ? '+' : ''}
                        {usdExact(a)}
                      </td>
                      <td class="num">{usdExact(r.balance_after_usd)}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          {(cursor || more.error) && (
            <div class="table-foot">
              {more.error && <Alert>{more.error}</Alert>}
              {cursor && (
                <Button loading={more.loading} onClick={() => void loadMore()}>
                  Load more
                </Button>
              )}
            </div>
          )}
        </>
      )}
    </Card>
  );
}

/** The low-balance alert: a threshold in USD (mailed once each time the balance falls below it), or none. */
function LowBalance({ current, onSaved }: { current: string | null; onSaved: () => void }) {
  const [value, setValue] = useState(current === null ? '' : String(Number(current)));
  const [state, setState] = useState<string | null>(null);
  const save = async (e: Event) => {
    e.preventDefault();
    const v = value.trim();
    if (v && !/^\d+(\.\d{1,6})?$/.test(v))
      return setState('The threshold must be an amount in USD, such as 5 or 2.50.');
    try {
      await api.updateAccount({ low_balance_usd: v ? v : null });
      setState(v ? `We will mail you when your balance falls below ${limitUsd(v)}.` : 'Low-balance alerts are off.');
      onSaved();
    } catch (err) {
      setState((err as Error).message);
    }
  };
  return (
    <form class="form low-balance" onSubmit={save}>
      <Field
        label="Low-balance alert (USD)"
        htmlFor="low-balance"
        hint="Leave empty for none. One mail each time the balance falls below it."
      >
        <input
          id="low-balance"
          name="low_balance_usd"
          class="input"
          inputMode="decimal"
          placeholder="No alert"
          value={value}
          onInput={(e) => setValue(e.currentTarget.value)}
        />
      </Field>
      <Button type="submit" size="sm">
        Save
      </Button>
      {state && <p class="muted small">{state}</p>}
    </form>
  );
}
