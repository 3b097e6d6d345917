/** Dashboard: balance and totals, spend over the last 14 days, the referral link, and how to make a first call. */
import { useMemo, useState } from 'preact/hooks';
import { api } from '../api';
import { useAuth } from '../auth';
import { BarChart, type Bar } from '../components/Chart';
import { Icon } from '../components/icons';
import { Alert, Button, Card, CopyButton, Link, PageHeader, Skeleton, useLoader } from '../components/ui';
import { heading, int, num, quantity, quotedPrice, unitName, unitPrice, usd } from '../format';
import { navigate } from '../router';
import type { DailyUsage, Model, ModelList, UsageClass } from '../types';

const DAYS = 14;

/** The last `days` calendar days (UTC, as the API counts them), oldest first, with zeros where nothing was used. */
function fillDays(rows: DailyUsage[], days: number): DailyUsage[] {
  const byDate = new Map(rows.map((r) => [r.date.slice(0, 10), r]));
  const out: DailyUsage[] = [];
  const today = new Date();
  for (let i = days - 1; i >= 0; i--) {
    const d = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - i))
      .toISOString()
      .slice(0, 10);
    out.push(byDate.get(d) ?? { date: d, requests: 0, cost_usd: '0.000000', usage: {}, refused: 0 });
  }
  return out;
}

/** One price of a model's, or several of one unit ("$0.15 / $0.60" per 1M tokens: input / output). */
interface PriceGroup {
  amounts: string[];
  labels: string[];
  /** What the amounts buy: "1M tokens", "1K requests", "image". */
  per: string;
}

/** "$0.04–$0.12": the cheapest to the dearest of a price by grade. */
function range(prices: number[]): string {
  const [low, high] = [Math.min(...prices), Math.max(...prices)];
  return `${unitPrice(low)}${high > low ? `–${unitPrice(high)}` : ''}`;
}

/**
 * A model's prices of the classes at the top of a family (what a request is billed for; the parts, such as cache
 * reads, are finer print), in the API's order, those of one unit together. A class priced by grade (images) shows
 * the range of its grades; a class the model does not price is left out, so a model that prices none is free.
 */
function priceGroups(m: Model, classes: UsageClass[]): PriceGroup[] {
  const out: PriceGroup[] = [];
  for (const c of classes.filter((k) => k.part_of === null)) {
    const grades = m.grade_prices[c.name];
    let amount: string, per: string;
    if (grades) [amount, per] = [range(Object.values(grades).map(num)), unitName(c.unit, 1)];
    else if (m.prices[c.name]) [amount, per] = quotedPrice(m.prices[c.name], c.unit);
    else continue;
    const same = out.find((g) => g.per === per);
    if (!same) out.push({ amounts: [amount], labels: [c.label], per });
    else {
      same.amounts.push(amount);
      same.labels.push(c.label);
    }
  }
  return out;
}

/** "$15 / 1M characters", "$0.15 / $0.60 per 1M tokens", "$0.02 / 1M tokens + $2 / 1K search units", "Free". */
function ModelPrice({ model, classes }: { model: Model; classes: UsageClass[] }) {
  const groups = priceGroups(model, classes);
  return (
    <span class="model-price" data-testid={`price-${model.id}`}>
      {groups.length === 0
        ? 'Free'
        : groups.map((g, i) => (
            <span key={g.per} class="nowrap" title={`${g.labels.join(' / ')}, USD per ${g.per}`}>
              {i > 0 && ' + '}
              {g.amounts.join(' / ')}
              <span class="muted">
                {g.amounts.length > 1 ? ' per ' : ' / '}
                {g.per}
              </span>
            </span>
          ))}
    </span>
  );
}

/**
 * What the days used, by class at the top of a family, those used at all: "1,234 input tokens", "3 images". The
 * label is said when another class counts in the same unit (input and output tokens), the heading is the tooltip.
 */
function PeriodUsage({ days, classes }: { days: DailyUsage[]; classes: UsageClass[] }) {
  const tops = classes.filter((c) => c.part_of === null);
  const used = tops.flatMap((c) => {
    const n = days.reduce((s, d) => s + (d.usage[c.name] ?? 0), 0);
    if (!n) return [];
    const shared = tops.some((k) => k !== c && k.unit === c.unit);
    return [{ c, text: shared ? `${int(n)} ${c.label} ${unitName(c.unit, n)}` : quantity(n, c.unit) }];
  });
  if (!used.length) return null;
  return (
    <span data-testid="period-usage">
      {used.map(({ c, text }) => (
        <span key={c.name} title={heading(c)}>
          {' · '}
          <span class="nowrap">{text}</span>
        </span>
      ))}
    </span>
  );
}

function greeting(): string {
  const h = new Date().getHours();
  return h < 12 ? 'Good morning' : h < 18 ? 'Good afternoon' : 'Good evening';
}

export function Dashboard() {
  const { details } = useAuth();
  const daily = useLoader(() => api.daily(DAYS));
  const models = useLoader(() => api.models());
  const [metric, setMetric] = useState<'usd' | 'count'>('usd');

  const days = useMemo(() => fillDays(daily.data?.data ?? [], DAYS), [daily.data]);
  const bars: Bar[] = days.map((d) => ({
    date: d.date,
    value: metric === 'usd' ? num(d.cost_usd) : d.requests,
    label: `${int(d.requests)} request${d.requests === 1 ? '' : 's'}`,
  }));
  const periodCost = days.reduce((s, d) => s + num(d.cost_usd), 0);
  const periodRequests = days.reduce((s, d) => s + d.requests, 0);
  const base = `${location.origin}/v1`;
  const example = models.data?.data.find((m) => m.kind === 'chat')?.id ?? 'model-id';

  return (
    <>
      <PageHeader
        title={greeting()}
        description="Your balance, spend and referral rewards at a glance."
        actions={
          <>
            <Button variant="secondary" icon="key" onClick={() => navigate('/keys')}>
              Create key
            </Button>
            <Button variant="primary" icon="plus" onClick={() => navigate('/topup')}>
              Add credits
            </Button>
          </>
        }
      />

      <div class="stats">
        <div class="stat stat-hero">
          <div class="stat-label">
            <Icon name="wallet" size={16} /> Available balance
          </div>
          <div class="stat-value" data-testid="balance">
            {details ? usd(details.balance_usd) : <Skeleton w="140px" h={34} />}
          </div>
          <div class="stat-foot">Prepaid credits, spent as you call models</div>
        </div>
        <div class="stat">
          <div class="stat-label">
            <Icon name="activity" size={16} /> Spent, all time
          </div>
          <div class="stat-value">
            {details ? usd(details.totals.spent_usd, { precise: true }) : <Skeleton w="110px" h={30} />}
          </div>
          <div class="stat-foot">{details ? `${int(details.totals.requests)} requests` : '\u00a0'}</div>
        </div>
        <div class="stat">
          <div class="stat-label">
            <Icon name="gift" size={16} /> Credits added
          </div>
          <div class="stat-value" data-testid="credits-added">
            {details ? usd(details.totals.credited_usd) : <Skeleton w="110px" h={30} />}
          </div>
          <div class="stat-foot">
            {details
              ? `${usd(details.totals.topped_up_usd)} topped up · ${usd(details.totals.referral_usd)} from referrals · ${usd(
                  Math.max(
                    0,
                    num(details.totals.credited_usd) -
                      num(details.totals.topped_up_usd) -
                      num(details.totals.referral_usd),
                  ),
                )} sign-up and other credits`
              : '\u00a0'}
          </div>
        </div>
      </div>

      <div class="grid-2-1">
        <Card
          title="Usage, last 14 days"
          subtitle={
            daily.data ? (
              <>
                {`${usd(periodCost, { precise: true })} across ${int(periodRequests)} requests`}
                <PeriodUsage days={days} classes={daily.data.classes} />
              </>
            ) : (
              'Daily spend'
            )
          }
          actions={
            <div class="segmented" role="group" aria-label="Chart metric">
              <button type="button" class={metric === 'usd' ? 'is-active' : ''} onClick={() => setMetric('usd')}>
                Spend
              </button>
              <button type="button" class={metric === 'count' ? 'is-active' : ''} onClick={() => setMetric('count')}>
                Requests
              </button>
            </div>
          }
        >
          {daily.error ? (
            <Alert>{daily.error}</Alert>
          ) : daily.loading && !daily.data ? (
            <div class="chart-skeleton">
              <Skeleton h={200} />
            </div>
          ) : (
            <div class="chart-wrap">
              <BarChart bars={bars} format={metric} height={290} />
              {periodRequests === 0 && (
                <div class="chart-empty">
                  <strong>No requests yet</strong>
                  <span>
                    <Link href="/keys">Create a key</Link> and make your first call: it shows up here.
                  </span>
                </div>
              )}
            </div>
          )}
        </Card>

        <div class="stack">
          <Card
            title="Invite friends, both get credits"
            subtitle="When someone registers with your link, you each receive referral credits."
          >
            {details ? (
              <div class="referral">
                <label class="field-label" for="ref-link">
                  Your referral link
                </label>
                <div class="copy-row">
                  <input
                    id="ref-link"
                    class="input mono"
                    readOnly
                    value={details.referral_link}
                    onFocus={(e) => e.currentTarget.select()}
                    data-testid="referral-link"
                  />
                  <CopyButton text={details.referral_link} size="md" />
                </div>
                <div class="referral-meta">
                  <span>
                    Code <code data-testid="referral-code">{details.referral_code}</code>
                  </span>
                  <span>{usd(details.totals.referral_usd)} earned</span>
                </div>
              </div>
            ) : (
              <Skeleton h={40} />
            )}
          </Card>
          <ModelsCard models={models} />
        </div>
      </div>

      <Card
        title={details && details.totals.requests > 0 ? 'Call the API' : 'Make your first call'}
        subtitle="Any OpenAI client works: point it at Switchyard and use one of your keys."
      >
        <div class="quickstart">
          <div class="quickstart-base">
            <span class="field-label">Base URL</span>
            <div class="copy-row">
              <code class="code-inline">{base}</code>
              <CopyButton text={base} />
            </div>
          </div>
          <pre class="code-block">
            <span class="c-k">import</span> OpenAI <span class="c-k">from</span> <span class="c-s">'openai'</span>;
            {'\n\n'}
            <span class="c-k">const</span> client = <span class="c-k">new</span> OpenAI({'{'} baseURL:{' '}
            <span class="c-s">'{base}'</span>, apiKey: process.env.SWITCHYARD_API_KEY {'}'});{'\n'}
            <span class="c-k">const</span> res = <span class="c-k">await</span> client.chat.completions.create({'{'}
            {'\n'} model: <span class="c-s">'{example}'</span>, messages: [{'{'} role: <span class="c-s">'user'</span>,
            content: <span class="c-s">'Hello'</span> {'}'}],{'\n'}
            {'}'});
          </pre>
        </div>
      </Card>
    </>
  );
}

/** The first models and their prices, each in its own unit. */
function ModelsCard({ models }: { models: { data: ModelList | null; error: string | null } }) {
  return (
    <Card title="Models" subtitle="USD, in each model's units; tokens: input / output" pad={false}>
      {models.error ? (
        <div class="card-body">
          <Alert>{models.error}</Alert>
        </div>
      ) : !models.data ? (
        <div class="card-body">
          <Skeleton h={60} />
        </div>
      ) : models.data.data.length === 0 ? (
        <p class="card-body muted">No models are configured yet.</p>
      ) : (
        <ul class="model-list">
          {/* every model: this is where a user finds what each costs */}
          {models.data.data.map((m) => (
            <li key={m.id}>
              <span class="model-id">
                <code>{m.id}</code>
                <span class="muted">{m.kind}</span>
              </span>
              <ModelPrice model={m} classes={models.data!.classes} />
            </li>
          ))}
        </ul>
      )}
    </Card>
  );
}
