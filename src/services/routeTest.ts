/**
 * "Test route": the smallest request of a model's kind through exactly one of its routes, outside billing (the
 * operator pays the upstream for it), within the route's total timeout; what the upstream did, for the admin page.
 */
import type { Config, ModelConfig } from '../config';
import { PROVIDERS, Provider } from '../gateway/providers';
import type { UpstreamOp } from '../gateway/providers/types';
import { UpstreamError } from '../gateway/types';
import { last4 } from '../secrets';

export interface RouteTest {
  ok: boolean;
  status: number | null;
  latency_ms: number;
  error: string | null;
  model: string;
}

/** The upstream operation and the smallest body that tests a model of this kind, or null: not testable this way. */
function smallest(kind: string, model: string): { op: UpstreamOp; body: Record<string, unknown> } | null {
  if (kind === 'chat')
    return { op: 'chat', body: { model, messages: [{ role: 'user', content: 'Say OK' }], max_tokens: 1 } };
  if (kind === 'completion') return { op: 'completions', body: { model, prompt: 'Say OK', max_tokens: 1 } };
  if (kind === 'embedding') return { op: 'embeddings', body: { model, input: 'ok' } };
  if (kind === 'moderation') return { op: 'moderations', body: { model, input: 'ok' } };
  return null; // images, speech, transcription: no request is small enough to send without being asked
}

export async function testRoute(config: Config, model: ModelConfig, index: number): Promise<RouteTest> {
  const route = model.routes[index];
  const providerConfig = config.providers[route.provider];
  const test = smallest(model.kind, route.model);
  const answer = (ok: boolean, status: number | null, error: string | null, started: number): RouteTest => ({
    ok,
    status,
    latency_ms: Math.round(performance.now() - started),
    error: error === null ? null : scrub(error, providerConfig),
    model: route.model,
  });
  if (!test) return answer(false, null, `a ${model.kind} model's route cannot be tested with a 1-token request`, 0);
  const provider = new Provider(PROVIDERS[providerConfig.type], { ...providerConfig, timeouts: route.timeouts });
  const started = performance.now();
  try {
    await provider.send(test.op, test.body as never, {
      model: route.model,
      maxOutputTokens: 1,
      signal: AbortSignal.timeout(route.timeouts.total_ms),
    });
    return answer(true, 200, null, started);
  } catch (e) {
    if (e instanceof UpstreamError) return answer(false, e.status ?? null, e.upstreamMessage ?? e.message, started);
    return answer(false, null, (e as Error).message, started);
  } finally {
    await provider.close();
  }
}

/** An upstream's message without the provider's credentials (OpenAI's 401 repeats part of the key it was sent). */
function scrub(message: string, p: Config['providers'][string]): string {
  const secrets = [p.api_key, ...Object.values(p.headers), ...Object.values(p.settings)].filter(
    (v): v is string => typeof v === 'string' && v.length >= 8,
  );
  let out = message;
  for (const s of secrets) out = out.split(s).join(last4(s));
  return out.replace(/\b(sk|key|rk|pk)-[A-Za-z0-9_*.-]{6,}/g, (m) => last4(m));
}
