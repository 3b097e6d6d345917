/**
 * Every state-changing call of the admin API goes into the audit log (services/audit.ts) once it succeeded: as the
 * admin token or the operator whose session made it, from the client's address, with what it acted on before and after. A call that failed changed
 * nothing and is not recorded; the error is the operator's answer. A handler whose change must not be live without its
 * record (the catalog) writes the record in the change's own transaction and says so (`audited`).
 */
import type { Reply } from '../handlers/types';
import { recordAudit, snapshot } from '../services/audit';
import type { App } from '../services/app';

/**
 * What an admin path acts on: `/admin/api/accounts/42/credits` → `account:42`, `/admin/api/keys/7` → `key:7`,
 * `/admin/api/operators/3/disable` → `operator:3`,
 * `/admin/api/catalog/providers/openai` → `provider:openai`, `/admin/api/catalog/models/gpt-4o/...` → `model:gpt-4o`.
 */
export function auditTarget(path: string): string | null {
  const m = /^\/admin\/api\/(account|key|operator)s\/(\d+)(\/|$)/.exec(path);
  if (m) return `${m[1]}:${m[2]}`;
  const c = /^\/admin\/api\/catalog\/(providers|models)\/([^/]+)(\/|$)/.exec(path);
  if (!c) return null;
  try {
    return `${c[1] === 'providers' ? 'provider' : 'model'}:${decodeURIComponent(c[2])}`;
  } catch {
    return null; // not a path the API serves (it answers 404)
  }
}

/** A target's state: a provider's or a model's from the catalog served (credentials masked), the rest from the database. */
const stateOf = async (app: App, target: string | null) =>
  target && /^(provider|model):/.test(target) ? app.catalog.snapshot(target) : snapshot(app.db, target);

/** Runs an admin call and records it, with its target's state before and after. */
export async function audited(
  app: App,
  call: { action: string; path: string; address: string; actor: string },
  run: () => Promise<Reply>,
): Promise<Reply> {
  const target = auditTarget(call.path);
  const before = await stateOf(app, target);
  const reply = await run();
  if (reply.audited) return reply; // recorded with the change itself (a catalog revision and its record: one transaction)
  const after = target ? await stateOf(app, target) : (reply.audit ?? ('body' in reply ? reply.body : null));
  await recordAudit(app.db, {
    actor: call.actor,
    address: call.address,
    action: call.action,
    target,
    before,
    after,
  });
  return reply;
}
