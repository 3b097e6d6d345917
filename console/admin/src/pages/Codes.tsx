/**
 * Codes: make a batch of single-use redemption codes (shown this once, downloadable as CSV), and list the codes
 * made, redeemed or not, and by whom.
 */
import { useState } from 'preact/hooks';
import {
  Alert,
  Badge,
  Button,
  Card,
  CopyButton,
  Empty,
  Field,
  Link,
  Loading,
  PageHeader,
} from '../../../src/components/ui';
import { dateTime, usd } from '../../../src/format';
import { api, csvUrl, idempotencyKey } from '../api';
import { useCan } from '../auth';
import { csvField, saveFile, usePaged } from '../parts';
import type { CreatedBatch } from '../types';

function NewBatch({ onMade }: { onMade: (batch: number | undefined) => void }) {
  const [count, setCount] = useState('10');
  const [amount, setAmount] = useState('');
  const [note, setNote] = useState('');
  const [made, setMade] = useState<CreatedBatch | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [key, setKey] = useState(idempotencyKey);
  const create = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const r = await api.createCodes({ count: Number(count), usd: amount.trim(), note: note.trim() || null }, key);
      setMade(r);
      setKey(idempotencyKey()); // the next batch is a new one
      onMade(r.batch);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  /** The batch as the server's CSV of it has it: id,batch,code,amount_usd (the codes whole, this once). */
  const csv = (b: CreatedBatch) =>
    [
      'id,batch,code,amount_usd',
      ...b.codes.map((c) => [c.id, b.batch ?? '', c.code, c.amount_usd].map(csvField).join(',')),
    ]
      .map((l) => `${l}\r\n`)
      .join('');
  return (
    <Card title="New batch" subtitle="Each code is worth the amount once. They are shown only now: download them.">
      {error && <Alert>{error}</Alert>}
      <form class="form-row codes-form" onSubmit={create}>
        <Field label="How many" htmlFor="codes-count">
          <input
            id="codes-count"
            class="input"
            type="number"
            min={1}
            max={1000}
            required
            value={count}
            onInput={(e) => setCount(e.currentTarget.value)}
          />
        </Field>
        <Field label="Worth (USD each)" htmlFor="codes-usd">
          <input
            id="codes-usd"
            class="input"
            inputMode="decimal"
            required
            placeholder="25"
            value={amount}
            onInput={(e) => setAmount(e.currentTarget.value)}
          />
        </Field>
        <Field label="Note" htmlFor="codes-note">
          <input
            id="codes-note"
            class="input"
            maxLength={500}
            placeholder="Conference giveaway"
            value={note}
            onInput={(e) => setNote(e.currentTarget.value)}
          />
        </Field>
        <Button type="submit" variant="primary" icon="plus" loading={busy}>
          Create codes
        </Button>
      </form>
      {made && (
        <div class="batch" data-testid="new-codes">
          <Alert kind="success">
            Batch {made.batch}: {made.codes.length} codes worth {usd(made.codes[0]?.amount_usd)} each. Save them now:
            they are not shown again.
          </Alert>
          <div class="batch-actions">
            <Button
              variant="primary"
              icon="download"
              onClick={() => saveFile(`switchyard-codes-${made.batch ?? made.codes[0]?.id}.csv`, csv(made))}
            >
              Download CSV
            </Button>
            <CopyButton text={made.codes.map((c) => c.code).join('\n')} label="Copy all" size="md" />
          </div>
          <pre class="json codes-list">{made.codes.map((c) => c.code).join('\n')}</pre>
        </div>
      )}
    </Card>
  );
}

export function Codes() {
  const can = useCan();
  const [status, setStatus] = useState('');
  const [batch, setBatch] = useState('');
  const [filter, setFilter] = useState({ status: '', batch: '' });
  const list = usePaged((cursor) => api.codes({ ...filter, cursor, limit: 50 }), [filter]);
  /** Shows one batch (a batch's number is the id of its first code). */
  const pick = (b: string) => {
    setBatch(b);
    list.reset();
    setFilter({ status, batch: b });
  };
  return (
    <>
      <PageHeader title="Codes" description="Single-use codes people redeem in the console's Top up page." />
      {can('adminCreateRedemptionCodes') && <NewBatch onMade={(b) => (b ? pick(String(b)) : void list.reload())} />}
      <Card
        title="Codes made"
        pad={false}
        actions={
          <a
            class="btn btn-secondary btn-sm"
            href={csvUrl('/redemption-codes', filter)}
            download="switchyard-codes.csv"
          >
            Export CSV
          </a>
        }
      >
        <form
          class="toolbar toolbar-in-card"
          onSubmit={(e) => {
            e.preventDefault();
            list.reset();
            setFilter({ status, batch: batch.trim() });
          }}
        >
          <select class="input" aria-label="Status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">Redeemed or not</option>
            <option value="unused">Unused</option>
            <option value="redeemed">Redeemed</option>
          </select>
          <input
            class="input"
            aria-label="Batch"
            placeholder="Batch"
            value={batch}
            onInput={(e) => setBatch(e.currentTarget.value)}
          />
          <Button type="submit" icon="filter">
            Filter
          </Button>
        </form>
        {list.error && <Alert>{list.error}</Alert>}
        {list.loading && !list.data ? (
          <Loading />
        ) : list.rows.length === 0 ? (
          <Empty icon="gift" title="No codes" />
        ) : (
          <div class="table-wrap">
            <table class="table" data-testid="codes-table">
              <thead>
                <tr>
                  <th>Code</th>
                  <th>Batch</th>
                  <th class="num">Worth</th>
                  <th>Made</th>
                  <th>By</th>
                  <th>Redeemed</th>
                </tr>
              </thead>
              <tbody>
                {list.rows.map((c) => (
                  <tr key={c.id ?? c.code}>
                    <td>
                      <code>{c.code}</code>
                    </td>
                    <td>
                      <button type="button" class="link-btn" onClick={() => pick(String(c.batch))}>
                        {c.batch}
                      </button>
                      {c.note && <div class="muted small">{c.note}</div>}
                    </td>
                    <td class="num">{usd(c.amount_usd)}</td>
                    <td class="nowrap">{dateTime(c.created_at)}</td>
                    <td class="muted">{c.created_by ?? '—'}</td>
                    <td>
                      {c.redeemed_by ? (
                        <>
                          <Link href={`/accounts/${c.redeemed_by.account_id}`}>
                            {c.redeemed_by.email ?? `account ${c.redeemed_by.account_id}`}
                          </Link>{' '}
                          <span class="muted">{dateTime(c.redeemed_at)}</span>
                        </>
                      ) : (
                        <Badge>Unused</Badge>
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
    </>
  );
}
