/**
 * Dredd hooks. Dredd sends each documented request and checks status and headers, but in OpenAPI 3 it does not
 * check response bodies against their schemas, so these hooks do it with the contract's own validator
 * (openapi-backend + Ajv 2020-12 against openapi/openapi.yaml), SSE bodies included, event by event.
 * Each documented error status is provoked for real: a bad key (401), a key without the scope (403), a bad
 * body (400), an unknown model (404), an oversized body (413), a model whose upstream is down (502).
 *
 * Console and admin operations (see consoleTransaction below) run for real too: beforeAll registers accounts
 * through the API and the transactions use their session cookie and CSRF token, or the admin token (ADMIN_TOKEN
 * from run.sh); card payments go to the fake Stripe API run.sh starts, and webhook events are signed with the
 * `stripe` library's own test helper. Skipped, with the reason beside them: the 404s that only a gateway
 * without Stripe keys or without ADMIN_TOKEN gives (this run has both; test/integration covers them), and 500s.
 *
 * Operators (run.sh makes them with the CLI) sign in with real TOTP codes (otplib): an owner, a viewer (refused the
 * operations that need more: 403), one that has not enrolled TOTP (its session may only enrol: 403 elsewhere), and
 * one whose enrolment a transaction confirms.
 *
 * Anthropic's Messages operations answer in Anthropic's shapes: errors `{type:"error",error:{type,message}}`, an
 * insufficient balance as 402 `billing_error`, the rate limit as 429 (provoked with a key allowed one request a
 * minute), streams as `event:`/`data:` pairs with no `[DONE]`, each event checked against AnthropicStreamEvent.
 * Responses streams are checked the same way against ResponseStreamEvent. Stored responses are made in beforeAll.
 */
const path = require('node:path');
const hooks = require('hooks');
const { default: OpenAPIBackend } = require('openapi-backend');
const Ajv2020 = require('ajv/dist/2020').default;
const addFormats = require('ajv-formats');
const crypto = require('node:crypto');
const fs = require('node:fs');
const Stripe = require('stripe');
const { authenticator } = require('otplib');
const { ENDPOINTS } = require('../../dist/contract'); // run.sh builds dist/ first

const KEY = process.env.CONTRACT_KEY;
const LIMITED_KEY = process.env.CONTRACT_LIMITED_KEY; // scope: embeddings only
const BROKE_KEY = process.env.CONTRACT_BROKE_KEY; // an account with no credits: 429 insufficient_quota (402 on /v1/messages)
const RPM_KEY = process.env.CONTRACT_RPM_KEY; // one request a minute
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
const NOT_PROVOKED = new Set(['500', '503', '529']);
// Models whose only upstream refuses connections (test/contract/switchyard.contract.yaml).
// (count_tokens goes upstream on an anthropic route only.)
const UNREACHABLE = {
  createChatCompletion: 'unreachable-chat',
  createCompletion: 'unreachable-completion',
  createEmbedding: 'unreachable-embedding',
  createImage: 'unreachable-image',
  createSpeech: 'unreachable-speech',
  createTranscription: 'unreachable-transcribe',
  createTranslation: 'unreachable-transcribe',
  createImageEdit: 'unreachable-image',
  createModeration: 'unreachable-moderation',
  createRerank: 'unreachable-rerank',
  createMessage: 'unreachable-chat',
  countMessageTokens: 'unreachable-claude',
  createResponse: 'unreachable-chat',
};
// Free operations: not rate-limited, so no x-ratelimit-* headers.
const FREE = new Set(['countMessageTokens']);
// Stored responses (beforeAll): one to read, one to delete; the documented id is nobody's (404).
const STORED = {};
// Operations whose streams are typed events (`event:` + `data:`), with the schema of each event's data.
const TYPED_STREAMS = { createMessage: 'AnthropicStreamEvent', createResponse: 'ResponseStreamEvent' };

/**
 * A WAV of 0.48 s (8 kHz, 8-bit mono, near silence) whose every byte is ASCII: Dredd sends a request's body as text.
 * An "image" of ASCII bytes: the mock provider edits any file.
 */
const WAV = (() => {
  const b = Buffer.alloc(44 + 3840, 0x7f);
  b.write('RIFF', 0);
  b.writeUInt32LE(36 + 3840, 4);
  b.write('WAVEfmt ', 8);
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20);
  b.writeUInt16LE(1, 22);
  b.writeUInt32LE(8000, 24);
  b.writeUInt32LE(8000, 28);
  b.writeUInt16LE(1, 32);
  b.writeUInt16LE(8, 34);
  b.write('data', 36);
  b.writeUInt32LE(3840, 40);
  return b.toString('latin1');
})();
const audio = { filename: 'hello.wav', type: 'audio/wav', data: WAV };
const image = { filename: 'otter.png', type: 'image/png', data: 'not really a png' };
/** The multipart operations' bodies (the contract gives no examples of forms), and what each status changes in them. */
const FORMS = {
  createTranscription: { fields: { model: 'whisper-1', file: audio }, bad: { temperature: '7' } },
  createTranslation: { fields: { model: 'whisper-1', file: audio }, bad: { temperature: '7' } },
  createImageEdit: { fields: { model: 'dall-e-3', prompt: 'Add a hat', image, size: '1024x1024' }, bad: { n: '11' } },
};
const BOUNDARY = 'dredd-contract-boundary';

/** A multipart/form-data body: text fields, and files ({filename, type, data}). */
function multipart(fields) {
  const parts = Object.entries(fields).map(([name, v]) =>
    typeof v === 'object'
      ? `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"; filename="${v.filename}"\r\nContent-Type: ${v.type}\r\n\r\n${v.data}\r\n`
      : `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${v}\r\n`,
  );
  return `${parts.join('')}--${BOUNDARY}--\r\n`;
}

/** A multipart operation's request for the documented status. */
function formRequest(t, op, status) {
  const { fields, bad } = FORMS[op];
  const asked = String(t.expected.headers['Content-Type'] || '').startsWith('text/plain')
    ? { response_format: 'text' }
    : {};
  const more = {
    400: bad,
    413: { padding: { filename: 'big.bin', type: 'application/octet-stream', data: 'x'.repeat(11 * 1024 * 1024) } },
    502: { model: UNREACHABLE[op] },
  }[status];
  t.request.headers['Content-Type'] = `multipart/form-data; boundary=${BOUNDARY}`;
  t.request.body = multipart({ ...fields, ...asked, ...more });
}

hooks.beforeAll((_t, done) => {
  api
    .init()
    .then(setUpConsole)
    .then(storeResponses)
    .then(() => done(), done);
});

hooks.beforeEach((t, done) => {
  const status = String(t.expected.statusCode);
  const op = operationOf(t);
  t.request.headers.Authorization = `Bearer ${KEY}`;
  // Dredd treats every documented header as required; the optional ones (retry-after, x-ratelimit-*) are
  // checked below where they must be present.
  for (const h of Object.keys(t.expected.headers))
    if (!['content-type', 'x-request-id'].includes(h.toLowerCase())) delete t.expected.headers[h];
  if (NOT_PROVOKED.has(status)) t.skip = true;
  if (FORMS[op]) {
    if (status === '429') t.request.headers.Authorization = `Bearer ${BROKE_KEY}`;
    if (status === '401') t.request.headers.Authorization = 'Bearer sk-not-a-real-key-000000000000000000000000';
    if (status === '403') t.request.headers.Authorization = `Bearer ${LIMITED_KEY}`;
    formRequest(t, op, status);
    return done();
  }
  const body = t.request.body ? JSON.parse(t.request.body) : undefined;
  if (isConsole(t)) {
    consoleTransaction(t, op, status).then(() => done(), done);
    return;
  }
  if (status === '429' || status === '402') t.request.headers.Authorization = `Bearer ${BROKE_KEY}`;
  if (status === '401') t.request.headers.Authorization = 'Bearer sk-not-a-real-key-000000000000000000000000';
  if (status === '403') {
    if (op === 'createEmbedding') t.skip = true; // the limited key may embed
    t.request.headers.Authorization = `Bearer ${LIMITED_KEY}`;
  }
  if (status === '400' && body) t.request.body = JSON.stringify({ ...body, temperature: 7 });
  if (status === '400' && op === 'createEmbedding')
    t.request.body = JSON.stringify({ ...body, encoding_format: 'hex' });
  if (status === '400' && op === 'createImage') t.request.body = JSON.stringify({ ...body, n: 11 });
  if (status === '400' && op === 'createSpeech') t.request.body = JSON.stringify({ ...body, speed: 7 });
  if (status === '404')
    t.fullPath = t.request.uri = t.request.uri.replace(/\/v1\/models\/[^/?]+/, '/v1/models/no-such-model');
  if (status === '413') t.request.body = JSON.stringify({ ...body, padding: 'x'.repeat(11 * 1024 * 1024) });
  if (status === '502') t.request.body = JSON.stringify({ ...body, model: UNREACHABLE[op] });
  if (String(t.expected.headers['Content-Type']).startsWith('text/event-stream') && body) {
    t.request.body = JSON.stringify(
      op === 'createSpeech' ? { ...body, stream_format: 'sse' } : { ...body, stream: true },
    );
  }
  if (op === 'createMessage' && status === '400') t.request.body = JSON.stringify({ ...body, max_tokens: 0 });
  if (op === 'countMessageTokens' && status === '400')
    t.request.body = JSON.stringify({ ...body, messages: 'not a list' });
  // (neither reads temperature: it would pass through as an unknown field)
  if (op === 'createModeration' && status === '400') t.request.body = JSON.stringify({ ...body, input: 42 });
  if (op === 'createRerank' && status === '400') t.request.body = JSON.stringify({ ...body, documents: [] });
  if (op === 'retrieveResponse' || op === 'deleteResponse') {
    const id = status === '404' ? 'resp_nobodys0000000000000000000000' : STORED[op];
    t.fullPath = t.request.uri = t.request.uri.replace(/\/v1\/responses\/[^/?]+/, `/v1/responses/${id}`);
  }
  if (['createMessage', 'countMessageTokens', 'retrieveResponse', 'deleteResponse'].includes(op) && status === '429') {
    // the key's one request this minute, then the documented request is over the limit
    t.request.headers.Authorization = `Bearer ${RPM_KEY}`;
    const first = { model: 'claude-sonnet', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };
    fetch(`${BASE}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': RPM_KEY },
      body: JSON.stringify(first),
    })
      .then((r) => r.text())
      .then(() => done(), done);
    return;
  }
  done();
});

hooks.beforeEachValidation((t, done) => {
  const expected = t.expected.headers['Content-Type'];
  const real = t.real.headers['content-type'] || '';
  if (expected && real.split(';')[0].trim() === expected) t.real.headers['content-type'] = expected; // hapi adds "; charset=utf-8"
  const op = api.router.matchOperation({ method: t.request.method, path: t.request.uri.split('?')[0], headers: {} });
  const status = Number(t.real.statusCode);
  const v1 = !isConsole(t);
  if (!t.real.headers['x-request-id']) t.fail = 'no x-request-id header';
  else if (
    v1 &&
    status === 429 &&
    /insufficient_quota/.test(t.real.body) &&
    t.real.headers['x-should-retry'] !== 'false'
  )
    t.fail = 'insufficient quota without x-should-retry: false';
  else if (
    v1 &&
    status === 429 &&
    !/insufficient_quota/.test(t.real.body) &&
    !/^\d+$/.test(t.real.headers['retry-after'] || '')
  )
    t.fail = 'a rate limit without retry-after';
  else if (
    v1 &&
    status === 200 &&
    t.request.method === 'POST' &&
    !FREE.has(op && op.operationId) &&
    !t.real.headers['x-ratelimit-limit-requests']
  )
    t.fail = 'no x-ratelimit-* headers';
  else if (!v1 && status === 429 && !/^\d+$/.test(t.real.headers['retry-after'] || ''))
    t.fail = 'a console 429 without retry-after';
  else if (
    !v1 &&
    [200, 201].includes(status) &&
    ['register', 'login'].includes(operationOf(t)) &&
    !/^sy_session=[\w-]{43};.*HttpOnly; SameSite=Lax/.test(String(t.real.headers['set-cookie']))
  ) {
    t.fail = 'no HttpOnly SameSite session cookie';
  } else if (
    status === 200 &&
    operationOf(t) === 'signInOperator' &&
    !/^sy_admin=[\w-]{43};.*Path=\/admin; HttpOnly; SameSite=Strict/.test(String(t.real.headers['set-cookie']))
  ) {
    t.fail = 'no HttpOnly SameSite operator cookie';
  } else if (op && real.startsWith('application/json')) {
    const errors = check(JSON.parse(t.real.body), op, status);
    if (errors) t.fail = errors;
    // Checked above with Ajv 2020-12. Where the contract gives no example, Dredd makes one up from the schema and
    // compares keys with it, taking the first branch of a union (an output item is a message OR a function call).
    if (!hasExample(op, status)) t.expected.body = t.real.body;
  } else if (op && real.startsWith('text/csv') && CSV_HEADS[op.operationId]) {
    if (!t.real.body.startsWith(CSV_HEADS[op.operationId])) t.fail = 'no CSV head';
    t.real.headers['content-type'] = expected;
    t.expected.body = t.real.body;
  } else if (op && real.startsWith('text/plain') && FORMS[op.operationId]) {
    if (status === 200 && !/^A mock transcript/.test(t.real.body)) t.fail = 'no transcript as text';
    t.expected.body = t.real.body;
  } else if (op && /^audio\//.test(real) && expected === 'audio/*') {
    // Speech: the audio itself, in the media type of its response_format (audio/mpeg for the default mp3).
    if (status === 200 && !t.real.body) t.fail = 'no audio';
    t.real.headers['content-type'] = expected;
    t.expected.body = t.real.body;
  } else if (op && real.startsWith('text/event-stream') && op.operationId === 'createSpeech') {
    t.fail = speechStream(t.real.body) || t.fail;
    t.expected.body = t.real.body;
  } else if (op && real.startsWith('text/event-stream') && TYPED_STREAMS[op.operationId]) {
    t.fail = typedStream(t.real.body, TYPED_STREAMS[op.operationId], op.operationId) || t.fail;
    t.expected.body = t.real.body;
  } else if (op && real.startsWith('text/event-stream')) {
    const frames = t.real.body.split('\n\n').filter(Boolean);
    if (frames[frames.length - 1] !== 'data: [DONE]') t.fail = 'the stream does not end with data: [DONE]';
    const schema =
      op.operationId === 'createChatCompletion' ? 'CreateChatCompletionStreamResponse' : 'CreateCompletionResponse';
    for (const frame of frames.slice(0, -1)) {
      const errors = checkSchema(JSON.parse(frame.replace(/^data: /, '')), schema);
      if (errors) t.fail = `chunk: ${errors}`;
    }
    t.expected.body = t.real.body; // the example is illustrative; the chunks were checked above
  }
  done();
});

/** Speech's events (`stream_format: sse`): `data:` frames of audio, the last `speech.audio.done` with the usage. */
function speechStream(text) {
  const frames = text.split('\n\n').filter(Boolean);
  for (const frame of frames) {
    const errors = checkSchema(JSON.parse(frame.replace(/^data: /, '')), 'CreateSpeechResponseStreamEvent');
    if (errors) return `event: ${errors}`;
  }
  const last = JSON.parse(frames[frames.length - 1].replace(/^data: /, ''));
  return last.type === 'speech.audio.done' ? null : `the stream ends with ${last.type}, not speech.audio.done`;
}

/** A stream of typed events: each frame an `event:` line naming the type of its `data:` line, no `[DONE]`. */
function typedStream(text, schema, op) {
  const frames = text.split('\n\n').filter(Boolean);
  const types = [];
  for (const frame of frames) {
    const m = /^event: ([\w.]+)\ndata: (.*)$/s.exec(frame);
    if (!m) return `not an event/data frame: ${frame.slice(0, 80)}`;
    const data = JSON.parse(m[2]);
    if (data.type !== m[1]) return `event ${m[1]} carries data of type ${data.type}`;
    const errors = checkSchema(data, schema);
    if (errors) return `${m[1]}: ${errors}`;
    types.push(m[1]);
  }
  const [first, last] =
    op === 'createMessage' ? ['message_start', 'message_stop'] : ['response.created', 'response.completed'];
  if (types[0] !== first || types[types.length - 1] !== last)
    return `the stream runs ${types[0]} … ${types[types.length - 1]}, not ${first} … ${last}`;
  const events = frames.map((f) => JSON.parse(f.slice(f.indexOf('\ndata: ') + 7)));
  return op === 'createMessage' ? anthropicOrder(events) : responsesOrder(events);
}

/** Anthropic's order: blocks numbered from 0, each started, filled and stopped before the next; message_delta last but one. */
function anthropicOrder(events) {
  let open = -1;
  let next = 0;
  for (const e of events) {
    if (e.type === 'content_block_start') {
      if (open !== -1 || e.index !== next)
        return `content_block_start ${e.index} while block ${open} is open or ${next} is next`;
      open = next++;
    } else if ((e.type === 'content_block_delta' || e.type === 'content_block_stop') && e.index !== open)
      return `${e.type} for block ${e.index}, but block ${open} is open`;
    if (e.type === 'content_block_stop') open = -1;
  }
  if (events[events.length - 2].type !== 'message_delta') return 'no message_delta before message_stop';
  return null;
}

/** OpenAI's order: sequence numbers 0, 1, 2...; output items numbered from 0 as they are added. */
function responsesOrder(events) {
  let items = 0;
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    if (e.sequence_number !== i) return `${e.type} has sequence_number ${e.sequence_number}, not ${i}`;
    if (e.type === 'response.output_item.added' && e.output_index !== items++)
      return `output item ${e.output_index} added as item ${items - 1}`;
    if (e.output_index !== undefined && e.output_index >= items)
      return `${e.type} for output item ${e.output_index}, not yet added`;
  }
  return null;
}

/** Two stored responses of the contract key: one for retrieveResponse, one for deleteResponse. */
async function storeResponses() {
  for (const op of ['retrieveResponse', 'deleteResponse']) {
    const r = await fetch(`${BASE}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ model: 'gpt-4o-mini', input: 'Hello!', store: true }),
    });
    if (r.status !== 200) throw new Error(`contract set-up: responses ${r.status} ${await r.text()}`);
    STORED[op] = (await r.json()).id;
  }
}

function hasExample(op, status) {
  const media = ((op.responses || {})[String(status)] || {}).content || {};
  return Object.values(media).some((m) => m.example !== undefined || m.examples !== undefined);
}

function operationOf(t) {
  const op = api.router.matchOperation({ method: t.request.method, path: t.request.uri.split('?')[0], headers: {} });
  return op && op.operationId;
}

function check(body, op, status) {
  const r = api.validator.validateResponse(body, op, status);
  return r.errors && r.errors.length
    ? `schema: ${r.errors.map((e) => `${e.instancePath} ${e.message}`).join('; ')}`
    : null;
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

// ------------------------------------------------------------------------------------------- console and admin

const BASE = process.env.CONTRACT_URL;
const ADMIN_TOKEN = process.env.ADMIN_TOKEN;
const WEBHOOK_SECRET = process.env.STRIPE_WEBHOOK_SECRET;
const PASSWORD = 'contract password 1';
const NO_SUCH_ID = 987654321;
/** The first line of each CSV answer. */
const CSV_HEADS = {
  adminListAudit: 'id,created_at,actor,address,action,target,before,after\r\n',
  adminListRedemptionCodes:
    'id,batch,code,amount_usd,note,created_at,created_by,redeemed_at,redeemed_by_account_id,redeemed_by_email\r\n',
  adminCreateRedemptionCodes: 'id,batch,code,amount_usd\r\n',
  adminListUsage:
    '"id","request_id","created_at","account_id","key_id","model","provider","endpoint","status","counted",',
};
/** The operators run.sh made with the CLI, all with this password. */
const OPERATOR_PASSWORD = process.env.SWITCHYARD_OPERATOR_PASSWORD;
const OPERATORS = {
  owner: process.env.CONTRACT_OPERATOR_OWNER,
  viewer: process.env.CONTRACT_OPERATOR_VIEWER,
  pending: process.env.CONTRACT_OPERATOR_PENDING,
  confirm: process.env.CONTRACT_OPERATOR_CONFIRM,
};
const S = {}; // accounts, keys and codes made in setUpConsole

function isConsole(t) {
  const p = t.request.uri.split('?')[0];
  return p.startsWith('/console/') || p.startsWith('/admin/');
}

const uniqueEmail = (tag) => `contract-${tag}-${crypto.randomUUID()}@example.com`;

async function call(method, path, { body, cookie, csrf, token } = {}) {
  const headers = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (cookie) headers.cookie = cookie;
  if (csrf) headers['x-csrf-token'] = csrf;
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(`${BASE}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const set = res.headers.getSetCookie()[0];
  return { status: res.status, body: text ? JSON.parse(text) : null, cookie: set ? set.split(';')[0] : null };
}

async function must(status, promise) {
  const r = await promise;
  if (r.status !== status)
    throw new Error(`contract set-up: expected ${status}, got ${r.status} ${JSON.stringify(r.body)}`);
  return r;
}

/**
 * The token of the newest link to `path` mailed to `to`. This gateway has no SMTP server, so its mail goes to its log
 * (run.sh passes the log's path), one JSON line per message, as an operator without a mail server would read it.
 * pino writes the log asynchronously: the answer can arrive before the line, so look again for up to 5 s.
 */
async function mailedToken(to, path) {
  for (let tries = 0; tries < 50; tries++) {
    const lines = fs.readFileSync(process.env.CONTRACT_SERVER_LOG, 'utf8').split('\n').reverse();
    for (const line of lines) {
      if (!line.includes('"to":')) continue;
      const m = JSON.parse(line);
      const found = m.to === to && new RegExp(`${path}\\?token=([A-Za-z0-9_-]+)`).exec(m.text);
      if (found) return found[1];
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`contract set-up: no ${path} link mailed to ${to}`);
}

/** A logged-in account; its address confirmed (sign-up credits paid) unless `confirm` is false. */
async function registerUser(tag, confirm = true) {
  const email = uniqueEmail(tag);
  const r = await must(201, call('POST', '/console/api/register', { body: { email, password: PASSWORD } }));
  if (confirm)
    await must(
      200,
      call('POST', '/console/api/verify-email', { body: { token: await mailedToken(email, '/console/verify') } }),
    );
  return { email, id: r.body.account.id, cookie: r.cookie, csrf: r.body.csrf_token };
}

/** The accounts, keys and codes the console and admin transactions work on. */
async function setUpConsole() {
  S.a = await registerUser('a'); // the logged-in user of the console transactions
  const as = (u) => ({ cookie: u.cookie, csrf: u.csrf });
  // Keys shaped like the examples (a model list: Dredd compares the types of the example's arrays and objects).
  const key = async (name) =>
    (await must(201, call('POST', '/console/api/keys', { body: { name, models: ['gpt-4o-mini'] }, ...as(S.a) }))).body;
  S.keyPatch = (await key('patch me')).key.id;
  S.keyDelete = (await key('delete me')).key.id;
  // One request with a key of the account, so that usage and ledger have rows of every shape.
  const { secret } = await key('used');
  const chat = await fetch(`${BASE}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
  });
  if (chat.status !== 200) throw new Error(`contract set-up: chat ${chat.status}`);
  S.requestId = chat.headers.get('x-request-id'); // its receipt (adminGetUsage)
  // An account to disable and enable, and a disabled one to log in to (403).
  S.b = await registerUser('b');
  S.disabled = await registerUser('disabled');
  await must(200, call('POST', `/admin/api/accounts/${S.disabled.id}/disable`, { token: ADMIN_TOKEN }));
  // Codes: one to redeem, one redeemed already (409).
  const codes = (
    await must(201, call('POST', '/admin/api/redemption-codes', { body: { count: 2, usd: '5' }, token: ADMIN_TOKEN }))
  ).body.codes;
  S.code = codes[0].code;
  S.usedCode = codes[1].code;
  await must(200, call('POST', '/console/api/topup/redeem', { body: { code: S.usedCode }, ...as(S.a) }));
  // Mail: an unconfirmed account to send its link again, one whose resends are used up (429), and one whose
  // password-reset mails are used up (429).
  S.unconfirmed = await registerUser('unconfirmed', false);
  S.toVerify = await registerUser('verify', false); // made here: the register transactions use up this address's registrations
  S.toReset = await registerUser('reset');
  S.resentOut = await registerUser('resent', false);
  S.adminResend = await registerUser('admin-resend', false); // an operator mails its link again
  for (let i = 0; i < 3; i++) await must(202, call('POST', '/console/api/verify-email/resend', { ...as(S.resentOut) }));
  S.resetOutEmail = S.b.email;
  for (let i = 0; i < 3; i++)
    await must(202, call('POST', '/console/api/password-reset', { body: { email: S.resetOutEmail } }));
  await setUpOperators();
  // An email whose failed log-ins are used up (429).
  S.lockedEmail = uniqueEmail('locked');
  for (let i = 0; i < 30; i++) {
    const r = await call('POST', '/console/api/login', {
      body: { email: S.lockedEmail, password: 'wrong password 1' },
    });
    if (r.status === 429) break;
  }
}

/**
 * Operators' TOTP codes: one time step after the last used (each code is good once), within a step of drift; the
 * step before only while the current one has 15 s left (its code is refused the moment the current step ends).
 */
function totpCode(who) {
  const t = Date.now();
  const now = Math.floor(t / 30_000);
  const step = Math.max((who.lastStep ?? -Infinity) + 1, 30_000 - (t % 30_000) > 15_000 ? now - 1 : now);
  who.lastStep = step;
  return authenticator.clone({ epoch: step * 30_000 + 1000 }).generate(who.secret);
}

/** Signs an operator in (with a code once enrolled): its cookie and CSRF token. */
async function signIn(who) {
  const body = { email: who.email, password: OPERATOR_PASSWORD, ...(who.secret && { code: totpCode(who) }) };
  const r = await must(200, call('POST', '/admin/api/session', { body }));
  return { ...who, cookie: r.cookie, csrf: r.body.csrf_token };
}

/** Signs in and enrols TOTP: a session past the second factor. */
async function enrolled(email) {
  const who = await signIn({ email });
  const uri = (await must(200, call('POST', '/admin/api/session/totp', who))).body.otpauth_uri;
  who.secret = new URL(uri).searchParams.get('secret');
  await must(200, call('POST', '/admin/api/session/totp/confirm', { ...who, body: { code: totpCode(who) } }));
  return who;
}

/** The operators run.sh made: an owner and a viewer, enrolled; one that only started enrolment; an email locked out. */
async function setUpOperators() {
  S.owner = await enrolled(OPERATORS.owner);
  S.viewer = await enrolled(OPERATORS.viewer);
  S.pending = await signIn({ email: OPERATORS.pending });
  await must(200, call('POST', '/admin/api/session/totp', S.pending));
  S.lockedOperator = uniqueEmail('locked-operator');
  for (let i = 0; i < 30; i++) {
    const r = await call('POST', '/admin/api/session', {
      body: { email: S.lockedOperator, password: 'wrong password 1', code: '123456' },
    });
    if (r.status === 429) break;
  }
}

/** The operations an operator calls as itself (its session, whatever its role). */
const OPERATOR_OPS = new Set(Object.keys(ENDPOINTS).filter((op) => ENDPOINTS[op].caller === 'operator'));

/**
 * An operator's own operation: its session (none for the 401, no CSRF header for the 403), and who provokes the
 * other statuses: a fresh session to sign out, the owner (enrolled already: 409), the one that started enrolment.
 */
async function operatorTransaction(t, op, status) {
  const who = { 409: S.owner }[status] || (op === 'getOperatorSession' ? S.owner : S.pending);
  let session = who;
  if (op === 'signOutOperator' && status === '204') session = await signIn({ email: OPERATORS.pending });
  if (op === 'confirmTotpEnrolment' && status === '200') {
    session = await signIn({ email: OPERATORS.confirm });
    const uri = (await must(200, call('POST', '/admin/api/session/totp', session))).body.otpauth_uri;
    session.secret = new URL(uri).searchParams.get('secret');
    setBody(t, { code: totpCode(session) });
    S.confirmed = session; // past its second factor once this transaction ran: its password is changed below
  }
  if (op === 'changeOperatorPassword') {
    // 204: the operator enrolled by confirmTotpEnrolment (no other transaction signs in as it); 400: a wrong
    // current password. 429 needs an operator's failed sign-ins used up at this address, which would lock out the
    // operators the other transactions sign in as: skipped (adminPages.test.ts counts a wrong one as a failure).
    if (status === '204' && S.confirmed) session = S.confirmed;
    if (status === '204') setBody(t, { current_password: OPERATOR_PASSWORD, new_password: 'contract password 9' });
    if (status === '400') setBody(t, { current_password: 'not the password 1', new_password: 'contract password 9' });
    if (status === '429' || (status === '204' && !S.confirmed)) t.skip = true;
  }
  if (op === 'confirmTotpEnrolment' && status === '400') setBody(t, { code: '12' });
  if (status !== '401') t.request.headers.Cookie = session.cookie;
  if (t.request.method !== 'GET' && status !== '403') t.request.headers['x-csrf-token'] = session.csrf;
}

/** Signing in: the owner with its password and a fresh code; a body without a password; a wrong one; a locked email. */
async function signInTransaction(t, status) {
  if (status === '200') setBody(t, { email: S.owner.email, password: OPERATOR_PASSWORD, code: totpCode(S.owner) });
  if (status === '400') setBody(t, { email: S.owner.email });
  if (status === '401') setBody(t, { email: S.owner.email, password: 'not the password 1', code: '123456' });
  if (status === '429') setBody(t, { email: S.lockedOperator, password: OPERATOR_PASSWORD, code: '123456' });
}

// The operations of a console session (the contract's cookieSession security), derived, not listed.
const SESSION_OPS = new Set(Object.keys(ENDPOINTS).filter((op) => ENDPOINTS[op].caller === 'session'));
const ADMIN_OPS = new Set(Object.keys(ENDPOINTS).filter((op) => ENDPOINTS[op].caller === 'admin'));

function setBody(t, body) {
  t.request.body = typeof body === 'string' ? body : JSON.stringify(body);
}

function setUri(t, uri) {
  t.fullPath = t.request.uri = uri;
}

/** Credentials and request changes that provoke the documented status of a console or admin transaction. */
async function consoleTransaction(t, op, status) {
  delete t.request.headers.Authorization;
  if (t.skip) return;
  const path = t.request.uri.split('?')[0];
  if (SESSION_OPS.has(op)) {
    if (status !== '401') t.request.headers.Cookie = S.a.cookie;
    if (t.request.method !== 'GET' && status !== '403') t.request.headers['x-csrf-token'] = S.a.csrf;
  }
  if (ADMIN_OPS.has(op)) {
    // The documented example key would make every transaction after the first a retry of it: one key each.
    for (const h of Object.keys(t.request.headers))
      if (h.toLowerCase() === 'idempotency-key') t.request.headers[h] = `contract-${crypto.randomUUID()}`;
    t.request.headers.Authorization = `Bearer ${status === '401' ? 'not-the-admin-token' : ADMIN_TOKEN}`;
    if (status === '403') {
      // An operator refused: the viewer where the operation needs more, else one that has not enrolled TOTP.
      const who = ENDPOINTS[op].role === 'viewer' ? S.pending : S.viewer;
      delete t.request.headers.Authorization;
      t.request.headers.Cookie = who.cookie;
      if (t.request.method !== 'GET') t.request.headers['x-csrf-token'] = who.csrf;
    }
    // 404 for every admin path comes only from a gateway started without ADMIN_TOKEN; this one has it. The
    // operations that take an account id give 404 for an unknown one, provoked below.
    if (status === '404' && !/\/accounts\/\d+\//.test(path)) t.skip = true;
  }
  if (OPERATOR_OPS.has(op)) await operatorTransaction(t, op, status);
  switch (op) {
    case 'signInOperator':
      await signInTransaction(t, status);
      break;
    case 'verifyEmail':
      if (status === '200') setBody(t, { token: await mailedToken(S.toVerify.email, '/console/verify') });
      if (status === '400') setBody(t, { token: 'not-a-token-that-was-ever-mailed' });
      break;
    case 'resendVerification': {
      const who = { 202: S.unconfirmed, 409: S.a, 429: S.resentOut }[status];
      if (who) {
        t.request.headers.Cookie = who.cookie;
        t.request.headers['x-csrf-token'] = who.csrf;
      }
      break;
    }
    case 'requestPasswordReset':
      if (status === '202') setBody(t, { email: S.a.email });
      if (status === '400') setBody(t, { mail: S.a.email });
      if (status === '429') setBody(t, { email: S.resetOutEmail });
      break;
    // Operators made and disabled through the API are the run's own: the example's id 2 is the viewer the 403s of
    // the later operations sign in as.
    case 'adminCreateOperator':
      if (status === '201') setBody(t, { email: uniqueEmail('operator'), role: 'support' });
      if (status === '400') setBody(t, { email: uniqueEmail('operator'), role: 'emperor' });
      if (status === '409') setBody(t, { email: process.env.CONTRACT_OPERATOR_VIEWER, role: 'support' });
      break;
    case 'adminDisableOperator':
      if (status === '200') {
        const body = { email: uniqueEmail('disabled'), role: 'viewer' };
        const made = await must(201, call('POST', '/admin/api/operators', { body, token: ADMIN_TOKEN }));
        setUri(t, `/admin/api/operators/${made.body.operator?.id ?? made.body.id}/disable`);
      }
      if (status === '404') setUri(t, `/admin/api/operators/${NO_SUCH_ID}/disable`);
      break;
    case 'checkPasswordReset':
      if (status === '200') {
        await must(202, call('POST', '/console/api/password-reset', { body: { email: S.toReset.email } }));
        setBody(t, { token: await mailedToken(S.toReset.email, '/console/reset') });
      }
      if (status === '400') setBody(t, { token: 'not-a-token-that-was-ever-mailed' });
      break;
    case 'checkPasswordStrength':
      if (status === '400') setBody(t, { password: 'x'.repeat(201) });
      if (status === '429') t.skip = true; // 120 a minute from one address: signup.test.ts sends them
      break;
    case 'getOperatorSignInMethods':
      // Dredd's OpenAPI 3.0 conversion loses the null of `oidc` (an object, or null when OpenID Connect is off) and
      // refuses the answer of this run, which has none: oidc.test.ts checks both answers against the contract's types.
      if (status === '200') t.skip = true;
      break;
    case 'listRefusedCalls':
      if (status === '400') setUri(t, '/console/api/usage/refused?by=hour');
      break;
    case 'confirmPasswordReset':
      if (status === '200') {
        await must(202, call('POST', '/console/api/password-reset', { body: { email: S.toReset.email } }));
        setBody(t, { token: await mailedToken(S.toReset.email, '/console/reset'), password: 'contract password 2' });
      }
      if (status === '400') setBody(t, { token: 'not-a-token-that-was-ever-mailed', password: 'contract password 2' });
      break;
    case 'register':
      if (status === '201') setBody(t, { email: uniqueEmail('register'), password: PASSWORD });
      if (status === '400') setBody(t, { email: uniqueEmail('weak'), password: 'short' });
      if (status === '409') setBody(t, { email: S.a.email, password: PASSWORD });
      if (status === '429') {
        // Use up this address's registrations (the limit is per hour), then the documented request is refused.
        for (let i = 0; i < 100; i++) {
          const r = await call('POST', '/console/api/register', {
            body: { email: uniqueEmail('flood'), password: PASSWORD },
          });
          if (r.status === 429) break;
        }
        setBody(t, { email: uniqueEmail('refused'), password: PASSWORD });
      }
      break;
    case 'login':
      if (status === '200') setBody(t, { email: S.a.email, password: PASSWORD });
      if (status === '400') setBody(t, { email: S.a.email });
      if (status === '401') setBody(t, { email: S.b.email, password: 'not the password 1' });
      if (status === '403') setBody(t, { email: S.disabled.email, password: PASSWORD });
      if (status === '429') setBody(t, { email: S.lockedEmail, password: PASSWORD });
      break;
    case 'logout':
      if (status === '204') {
        // A session of its own, so that the other transactions keep theirs.
        const r = await must(
          200,
          call('POST', '/console/api/login', { body: { email: S.a.email, password: PASSWORD } }),
        );
        t.request.headers.Cookie = r.cookie;
        t.request.headers['x-csrf-token'] = r.body.csrf_token;
      }
      break;
    case 'updateAccount':
      if (status === '400') setBody(t, { low_balance_usd: 'ten' });
      break;
    case 'createConsoleKey':
      if (status === '400') setBody(t, { scopes: [] });
      break;
    case 'updateConsoleKey':
      setUri(t, `/console/api/keys/${status === '404' ? NO_SUCH_ID : S.keyPatch}`);
      if (status === '400') setBody(t, { enabled: 'no' });
      break;
    case 'deleteConsoleKey':
      setUri(t, `/console/api/keys/${status === '404' ? NO_SUCH_ID : S.keyDelete}`);
      break;
    case 'redeemCode':
      if (status === '200') setBody(t, { code: S.code });
      if (status === '400') setBody(t, { code: 'SY-AAAAA-AAAAA-AAAAA-AAAAA' });
      if (status === '409') setBody(t, { code: S.usedCode });
      break;
    case 'createCheckout':
      if (status === '400') setBody(t, { amount_usd: '1' });
      if (status === '404') t.skip = true; // card payments not configured: this run has Stripe keys
      if (status === '502') await fetch(`${process.env.STRIPE_API_BASE}/_test/fail-next?n=2`, { method: 'POST' }); // the library retries once
      break;
    case 'stripeWebhook': {
      if (status === '404') {
        t.skip = true; // card payments not configured: this run has Stripe keys
        break;
      }
      const payload = JSON.stringify({
        id: `evt_contract_${crypto.randomBytes(8).toString('hex')}`,
        object: 'event',
        type: 'checkout.session.completed',
        data: {
          object: {
            id: `cs_test_contract_${crypto.randomBytes(8).toString('hex')}`,
            object: 'checkout.session',
            amount_total: 2500,
            currency: 'usd',
            payment_status: 'paid',
            metadata: { account_id: String(S.a.id) },
          },
        },
      });
      setBody(t, payload);
      t.request.headers['stripe-signature'] =
        status === '400'
          ? 't=1,v1=0000'
          : Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET });
      break;
    }
    case 'listUsage':
    case 'listLedger':
    case 'adminListAccounts':
      setUri(t, `${path}?limit=${status === '400' ? 0 : 50}`);
      break;
    case 'adminListAudit': {
      // the CSV answer when its media type is the one documented; the contract run's own grants are in it
      const csv = String(t.expected.headers['Content-Type'] || '').startsWith('text/csv');
      setUri(t, `${path}?limit=${status === '400' ? 0 : 50}${csv ? '&format=csv' : ''}`);
      break;
    }
    case 'getDailyUsage':
      setUri(t, `${path}?days=${status === '400' ? 0 : 14}`);
      break;
    case 'adminGrantCredits':
      setUri(t, `/admin/api/accounts/${status === '404' ? NO_SUCH_ID : S.a.id}/credits`);
      if (status === '400') setBody(t, { usd: '0' });
      break;
    case 'adminUpdateKey':
      setUri(t, `/admin/api/keys/${status === '404' ? NO_SUCH_ID : S.keyPatch}`);
      if (status === '400') setBody(t, { expires_at: '2001-01-01T00:00:00Z' });
      break;
    case 'adminSetLowBalanceAlert':
      if (status === '400') setBody(t, { low_balance_usd: 'ten' });
    // falls through: the account
    case 'adminRevokeFreeCredits':
    case 'adminDisableAccount':
    case 'adminEnableAccount':
      setUri(t, path.replace(/\/accounts\/\d+\//, `/accounts/${status === '404' ? NO_SUCH_ID : S.b.id}/`));
      break;
    case 'adminCreateRedemptionCodes':
      if (status === '400') setBody(t, { count: 0, usd: '5' });
      if (String(t.expected.headers['Content-Type'] || '').startsWith('text/csv')) setUri(t, `${path}?format=csv`);
      break;
    // The contract run has no OpenID provider (admin.oidc is off): its 404 oidc_not_configured is what can be
    // provoked here; the redirects and the provider's answers are test/integration/oidc.test.ts's, against a real one.
    case 'startOperatorOidcSignIn':
    case 'finishOperatorOidcSignIn':
      if (status !== '404') t.skip = true;
      break;
    // The run keeps its catalog in the database: a provider and a model of its own are added, changed and removed;
    // the 409 catalog_busy of two changes at once and the DELETEs' 400 (a removal leaving an invalid catalog) are
    // catalog.test.ts's.
    case 'adminPutCatalogProvider':
      setUri(t, '/admin/api/catalog/providers/contract-extra');
      if (status === '400') setBody(t, { type: 'openai', max_connections: -1 });
      if (status === '409') t.skip = true;
      break;
    case 'adminDeleteCatalogProvider':
      setUri(t, `/admin/api/catalog/providers/${status === '409' ? 'mock' : 'contract-extra'}`);
      if (status === '400') t.skip = true;
      break;
    case 'adminPutCatalogModel': {
      setUri(t, '/admin/api/catalog/models/contract-extra-model');
      const price = { input: status === '400' ? -1 : 0.15, output: 0.6 };
      setBody(t, { kind: 'chat', price, routes: [{ provider: 'mock' }] });
      if (status === '409') t.skip = true;
      break;
    }
    case 'adminDeleteCatalogModel':
      setUri(t, '/admin/api/catalog/models/contract-extra-model');
      if (status === '400' || status === '409') t.skip = true;
      break;
    case 'adminTestCatalogRoute':
      setUri(t, `/admin/api/catalog/models/gpt-4o-mini/routes/${status === '400' ? 'first' : 0}/test`);
      break;
    case 'adminListKeys':
    case 'adminListRedemptionCodes':
    case 'adminListUsage': {
      const csv = String(t.expected.headers['Content-Type'] || '').startsWith('text/csv');
      setUri(t, `${path}?limit=${status === '400' ? 0 : 50}${csv ? '&format=csv' : ''}`);
      break;
    }
    case 'adminGetAccount':
      setUri(t, `/admin/api/accounts/${status === '400' ? 0 : S.a.id}`);
      break;
    case 'adminGetUsage':
      setUri(t, `/admin/api/usage/${S.requestId}`);
      break;
    case 'adminSettleDebt':
      // 409: an account that owes nothing. 200 needs an account in debt — card money taken back after it was
      // spent — which no API call makes by itself: skipped (adminPages.test.ts settles and forgives real debts).
      setUri(t, `/admin/api/accounts/${status === '404' ? NO_SUCH_ID : S.b.id}/settle-debt`);
      if (status === '400') setBody(t, { from: 'forgive' });
      if (status === '409') setBody(t, {});
      if (status === '200') t.skip = true;
      break;
    case 'adminResendConfirmation': {
      const who = { 202: S.adminResend, 409: S.a, 429: S.resentOut }[status];
      setUri(t, `/admin/api/accounts/${status === '404' ? NO_SUCH_ID : (who ?? S.a).id}/resend-confirmation`);
      break;
    }
  }
}
