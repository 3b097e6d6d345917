/**
 * Operational endpoints, for load balancers, orchestrators and Prometheus — outside the API contract (no key,
 * no error shape of the API; plain answers): `GET /healthz` (the process answers), `GET /readyz` (it should get
 * traffic: the database answers, the configuration is loaded, it is not shutting down) and `GET /metrics`
 * (Prometheus text; with METRICS_TOKEN set, only with `Authorization: Bearer $METRICS_TOKEN`).
 */
import type { Plugin } from '@hapi/hapi';
import type { App } from '../services/app';
import { readiness } from '../services/app';
import { bearerMatches } from '../services/consoleLimits';

export const opsPlugin: Plugin<{ app: App }> = {
  name: 'switchyard-ops',
  register(server, { app }) {
    const options = { state: { parse: false, failAction: 'ignore' as const } };
    server.route({
      method: 'GET',
      path: '/healthz',
      options,
      handler: (_r, h) => h.response({ status: 'ok' }).header('cache-control', 'no-store'),
    });
    server.route({
      method: 'GET',
      path: '/readyz',
      options,
      handler: async (_r, h) => {
        const r = await readiness(app);
        return h
          .response(r)
          .code(r.ready ? 200 : 503)
          .header('cache-control', 'no-store');
      },
    });
    server.route({
      method: 'GET',
      path: '/metrics',
      options,
      handler: async (request, h) => {
        if (app.metricsTokenHash && !bearerMatches(app.metricsTokenHash, request.headers.authorization)) {
          return h
            .response({ error: 'metrics need Authorization: Bearer $METRICS_TOKEN' })
            .code(401)
            .header('www-authenticate', 'Bearer');
        }
        return h
          .response(await app.metrics.text())
          .type(app.metrics.contentType)
          .header('cache-control', 'no-store');
      },
    });
  },
};
