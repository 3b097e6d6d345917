/**
 * Dredd hooks. Dredd sends each documented request and checks status and headers, but in OpenAPI 3 it does not
 * check response bodies against their schemas, so these hooks do it with the contract's own validator
 * (openapi-backend + Ajv 2020-12 against openapi/openapi.yaml), SSE bodies included, event by event.
 * Each documented error status is provoked for real: a bad key (401), a key without the scope (403), a bad
 * body (400), an unknown model (404), an oversized body (413), a model whose upstream is down (502).
 */
const path = require('node:path');
const hooks = require('hooks');
const { default: OpenAPIBackend } = require('openapi-backend');
const Ajv2020 = require('ajv/dist/2020').default;
const addFormats = require('ajv-formats');

const KEY = process.env.CONTRACT_KEY;
const LIMITED_KEY = process.env.CONTRACT_LIMITED_KEY; // scope: embeddings only
const BROKE_KEY = process.env.CONTRACT_BROKE_KEY; // an account with no credits: 429 insufficient_quota
const api = new OpenAPIBackend({
  definition: path.join(__dirname, '..', '..', 'openapi', 'openapi.yaml'),
  quick: true,
  customizeAjv: (_a, o) => {
    const ajv = new Ajv2020({ ...o, strict: false, discriminator: true });
    addFormats(ajv);
    return ajv;
  },
});

// Statuses that cannot be provoked from outside a healthy process: a bug (500), an outage or shutdown (503).
const NOT_PROVOKED = new Set(['500', '503']);
// Models whose only upstream refuses connections (test/contract/switchyard.contract.yaml).
const UNREACHABLE = { createChatCompletion: 'unreachable-chat', createCompletion: 'unreachable-completion', createEmbedding: 'unreachable-embedding' };

hooks.beforeAll((_t, done) => {
  api.init().then(() => done(), done);
});

hooks.beforeEach((t, done) => {
  const status = String(t.expected.statusCode);
  const op = operationOf(t);
  t.request.headers.Authorization = `Bearer ${KEY}`;
  // Dredd treats every documented header as required; the optional ones (retry-after, x-ratelimit-*) are
  // checked below where they must be present.
  for (const h of Object.keys(t.expected.headers)) if (!['content-type', 'x-request-id'].includes(h.toLowerCase())) delete t.expected.headers[h];
  const body = t.request.body ? JSON.parse(t.request.body) : undefined;
  if (NOT_PROVOKED.has(status)) t.skip = true;
  if (status === '429') t.request.headers.Authorization = `Bearer ${BROKE_KEY}`;
  if (status === '401') t.request.headers.Authorization = 'Bearer sk-not-a-real-key-000000000000000000000000';
  if (status === '403') {
    if (op === 'createEmbedding') t.skip = true; // the limited key may embed
    t.request.headers.Authorization = `Bearer ${LIMITED_KEY}`;
  }
  if (status === '400' && body) t.request.body = JSON.stringify({ ...body, temperature: 7 });
  if (status === '400' && op === 'createEmbedding') t.request.body = JSON.stringify({ ...body, encoding_format: 'hex' });
  if (status === '404') t.fullPath = t.request.uri = t.request.uri.replace(/\/v1\/models\/[^/?]+/, '/v1/models/no-such-model');
  if (status === '413') t.request.body = JSON.stringify({ ...body, padding: 'x'.repeat(11 * 1024 * 1024) });
  if (status === '502') t.request.body = JSON.stringify({ ...body, model: UNREACHABLE[op] });
  if (String(t.expected.headers['Content-Type']).startsWith('text/event-stream') && body) {
    t.request.body = JSON.stringify({ ...body, stream: true });
  }
  done();
});

hooks.beforeEachValidation((t, done) => {
  const expected = t.expected.headers['Content-Type'];
  const real = t.real.headers['content-type'] || '';
  if (expected && real.split(';')[0].trim() === expected) t.real.headers['content-type'] = expected; // hapi adds "; charset=utf-8"
  const op = api.router.matchOperation({ method: t.request.method, path: t.request.uri.split('?')[0], headers: {} });
  const status = Number(t.real.statusCode);
  if (!t.real.headers['x-request-id']) t.fail = 'no x-request-id header';
  else if (status === 429 && t.real.headers['x-should-retry'] !== 'false') t.fail = 'insufficient quota without x-should-retry: false';
  else if (status === 200 && t.request.method === 'POST' && !t.real.headers['x-ratelimit-limit-requests']) t.fail = 'no x-ratelimit-* headers';
  else if (op && real.startsWith('application/json')) {
    const errors = check(JSON.parse(t.real.body), op, status);
    if (errors) t.fail = errors;
  } else if (op && real.startsWith('text/event-stream')) {
    const frames = t.real.body.split('\n\n').filter(Boolean);
    if (frames[frames.length - 1] !== 'data: [DONE]') t.fail = 'the stream does not end with data: [DONE]';
    const schema = op.operationId === 'createChatCompletion' ? 'CreateChatCompletionStreamResponse' : 'CreateCompletionResponse';
    for (const frame of frames.slice(0, -1)) {
      const errors = checkSchema(JSON.parse(frame.replace(/^data: /, '')), schema);
      if (errors) t.fail = `chunk: ${errors}`;
    }
    t.expected.body = t.real.body; // the example is illustrative; the chunks were checked above
  }
  done();
});

function operationOf(t) {
  const op = api.router.matchOperation({ method: t.request.method, path: t.request.uri.split('?')[0], headers: {} });
  return op && op.operationId;
}

function check(body, op, status) {
  const r = api.validator.validateResponse(body, op, status);
  return r.errors && r.errors.length ? `schema: ${r.errors.map((e) => `${e.instancePath} ${e.message}`).join('; ')}` : null;
}

const ajv = new Ajv2020({ strict: false, discriminator: true });
addFormats(ajv);
let added = false;
function checkSchema(value, name) {
  if (!added) {
    ajv.addSchema({ $id: 'contract', components: api.definition.components });
    added = true;
  }
  const validate = ajv.getSchema(`contract#/components/schemas/${name}`);
  return validate(value) ? null : validate.errors.map((e) => `${e.instancePath} ${e.message}`).join('; ');
}
