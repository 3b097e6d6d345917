/**
 * Farming: today's report of suspected farming of free credits (referrers by how many they referred, networks with
 * several accounts, accounts that never confirmed), and taking back the free credits of an account.
 */
import { useState } from 'preact/hooks';
import { Alert, Button, Card, Empty, Link, Loading, PageHeader, useLoader } from '../../../src/components/ui';
import { ago, int, usd, usdExact } from '../../../src/format';
import { api } from '../api';
import { useCan } from '../auth';
import { Confirm, OutcomeAlert, useAction, type Outcome } from '../parts';

export function Farming() {
  const can = useCan();
  const report = useLoader(() => api.farming());
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [revoking, setRevoking] = useState<{ id: number; email: string } | null>(null);
  const act = useAction(setOutcome);
  const revoke = async () => {
    const r = revoking!;
    await act.run(
      'revoke',
      () => api.revokeFreeCredits(r.id),
      (x) =>
        `Took back ${usdExact(x.revoked_usd)} of free credits from ${r.email}; the balance is ${usdExact(x.balance_usd)}.`,
    );
    setRevoking(null);
    void report.reload();
  };
  const RevokeButton = ({ id, email }: { id: number; email: string }) =>
    can('adminRevokeFreeCredits') ? (
      <Button size="sm" variant="secondary" onClick={() => setRevoking({ id, email })}>
        Revoke free credits
      </Button>
    ) : null;
  const r = report.data;
  return (
    <>
      <PageHeader title="Farming" description="Who may be farming sign-up and referral credits, as of now." />
      <OutcomeAlert outcome={outcome} onClose={() => setOutcome(null)} />
      {report.error && <Alert>{report.error}</Alert>}
      {!r ? (
        !report.error && <Loading />
      ) : (
        <>
          <Card title="Referrers" subtitle="By accounts referred" pad={false}>
            {r.referrers.length === 0 ? (
              <Empty icon="users" title="No referrals" />
            ) : (
              <div class="table-wrap">
                <table class="table" data-testid="farming-referrers">
                  <thead>
                    <tr>
                      <th>Account</th>
                      <th class="num">Referred</th>
                      <th class="num">Confirmed</th>
                      <th class="num">Earned</th>
                      <th class="th-actions" />
                    </tr>
                  </thead>
                  <tbody>
                    {r.referrers.map((x) => (
                      <tr key={x.account_id}>
                        <td>
                          <Link href={`/accounts/${x.account_id}`}>{x.email}</Link>
                        </td>
                        <td class="num">{int(x.referred)}</td>
                        <td class="num">{int(x.confirmed)}</td>
                        <td class="num">{usd(x.earned_usd)}</td>
                        <td class="td-actions">
                          <RevokeButton id={x.account_id} email={x.email} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </Card>
          <div class="grid-2">
            <Card title="Networks" subtitle="Addresses (IPv6: /64) that registered several accounts" pad={false}>
              {r.networks.length === 0 ? (
                <Empty icon="shield" title="No shared networks" />
              ) : (
                <div class="table-wrap">
                  <table class="table" data-testid="farming-networks">
                    <thead>
                      <tr>
                        <th>Network</th>
                        <th class="num">Accounts</th>
                        <th class="num">Confirmed</th>
                      </tr>
                    </thead>
                    <tbody>
                      {r.networks.map((n) => (
                        <tr key={n.network}>
                          <td>
                            <code>{n.network}</code>
                          </td>
                          <td class="num">{int(n.accounts)}</td>
                          <td class="num">{int(n.confirmed)}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            </Card>
            <Card title="Not confirmed" subtitle="Newest accounts that never opened their link" pad={false}>
              {r.unconfirmed.length === 0 ? (
                <Empty icon="check" title="Every account confirmed" />
              ) : (
                <div class="table-wrap">
                  <table class="table" data-testid="farming-unconfirmed">
                    <tbody>
                      {r.unconfirmed.map((u) => (
                        <tr key={u.account_id}>
                          <td>
                            <Link href={`/accounts/${u.account_id}`}>{u.email}</Link>
                            <div class="muted small">
                              {u.network ?? 'unknown network'} · {ago(u.created_at)}
                            </div>
                          </td>
                          <td class="td-actions">
                            <RevokeButton id={u.account_id} email={u.email} />
                          </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            </Card>
          </div>
        </>
      )}
      {revoking && (
        <Confirm
          title={`Revoke the free credits of ${revoking.email}?`}
          action="Revoke free credits"
          danger
          busy={act.busy === 'revoke'}
          onConfirm={() => void revoke()}
          onClose={() => setRevoking(null)}
        >
          The sign-up and referral credits it has not spent are taken back. Paid money is never taken.
        </Confirm>
      )}
    </>
  );
}
