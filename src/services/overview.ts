/**
 * The operator's overview: what the gateway did over the last hour, day and 30 days (from the usage records and the
 * ledger, so every process and node is counted), and each route's health — its requests, errors and latency over
 * the last day from the usage records, and its breaker and last failures from this process's router (a breaker is
 * kept in memory by each process: another process may see a route otherwise).
 */
import type { Knex } from 'knex';
import type { components } from '../../generated/openapi';
import type { ModelConfig } from '../config';
import { activityBy, latencyQuantiles, usageActivity, type Activity } from '../db/queries/usage';
import type { Router } from '../gateway/router';
import { formatUsd } from '../money';

type Schemas = components['schemas'];

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const MONTH = 30 * DAY;

/**
 * Money that came in: bought (a card top-up, a redemption code) or granted by an operator. Free credits (sign-up,
 * referral) are not money in, and what card payments took back is not netted out: this is what was topped up.
 */
export const TOPUP_KINDS = ['topup', 'redemption', 'grant'] as const;

const rate = (errors: number, requests: number) => (requests ? errors / requests : 0);

async function topups(db: Knex, since: number): Promise<number> {
  const [r] = (await db('ledger')
    .whereIn('kind', TOPUP_KINDS)
    .andWhere('created_at', '>=', since)
    .sum({ total: 'amount_micros' })) as { total: unknown }[];
  return Number(r?.total ?? 0);
}

async function window(db: Knex, since: number): Promise<Schemas['OverviewWindow']> {
  const [a, topped] = await Promise.all([usageActivity(db, { from: since }), topups(db, since)]);
  return {
    requests: a.requests,
    errors: a.errors,
    error_rate: rate(a.errors, a.requests),
    prompt_tokens: a.prompt_tokens,
    completion_tokens: a.completion_tokens,
    spend_usd: formatUsd(a.cost_micros),
    spend_micros: a.cost_micros,
    topups_usd: formatUsd(topped),
    topups_micros: topped,
  };
}

const spendView = (a: Activity) => ({
  requests: a.requests,
  tokens: a.prompt_tokens + a.completion_tokens,
  spend_usd: formatUsd(a.cost_micros),
  spend_micros: a.cost_micros,
});

/**
 * Every configured route over the last day. Its attempts and failures are this process's router's: a usage record
 * names the route that answered, and a request that a route failed and another answered — or that none answered —
 * says nothing of the route that failed. Its latency is that of the requests it answered, from the usage records of
 * every process (they name the provider, not the upstream model: two routes of one model to one provider share it).
 */
async function routes(db: Knex, models: ModelConfig[], router: Router, since: number) {
  const used = await activityBy(db, { from: since }, ['model', 'provider']);
  const out: Schemas['OverviewRoute'][] = [];
  for (const m of models) {
    for (const [index, route] of m.routes.entries()) {
      const a = used.find((u) => u.model === m.id && u.provider === route.provider);
      const filter = { model: m.id, provider: route.provider, from: since };
      const [p50, p99] = a ? await latencyQuantiles(db, filter, [0.5, 0.99]) : [null, null];
      const health = router.routeHealth(route);
      out.push({
        model: m.id,
        provider: route.provider,
        upstream_model: route.model,
        index,
        requests: health.tried,
        errors: health.failed,
        error_rate: rate(health.failed, health.tried),
        answered: a?.requests ?? 0,
        p50_ms: p50,
        p99_ms: p99,
        breaker: health.breaker,
        last_errors: health.failures.map((f) => ({ ...f, at: new Date(f.at).toISOString() })),
      });
    }
  }
  return out;
}

export async function overview(
  db: Knex,
  models: ModelConfig[],
  router: Router,
  now = Date.now(),
): Promise<Schemas['AdminOverview']> {
  const [hour, day, month] = await Promise.all([
    window(db, now - HOUR),
    window(db, now - DAY),
    window(db, now - MONTH),
  ]);
  const byModel = await activityBy(db, { from: now - MONTH }, ['model']);
  const byProvider = await activityBy(db, { from: now - MONTH }, ['provider']);
  return {
    generated_at: new Date(now).toISOString(),
    windows: { hour, day, month },
    by_model: byModel.map((a) => ({ model: a.model!, ...spendView(a) })),
    by_provider: byProvider.filter((a) => a.provider).map((a) => ({ provider: a.provider!, ...spendView(a) })),
    routes: await routes(db, models, router, now - DAY),
  };
}
