/**
 * What the contract says that the code needs as values and exact types: the key scopes (KeyScope), the model kinds
 * (ModelKind), who may call each operation (its `security`), what the gateway does for it (`x-switchyard`, described
 * above `paths:` in openapi/openapi.yaml) and the handler of each operationId. Pure: the contract's text in, the
 * generated files out (scripts/generate.ts writes or checks them); a contract that breaks a rule here is refused
 * with every problem it has, so that the code never meets an operation it cannot tell how to serve.
 */
import crypto from 'node:crypto';
import YAML from 'yaml';

/** The files written, relative to the repository (the architecture test lets them list what the contract lists). */
export const GENERATED = ['src/contract.ts', 'src/handlers/index.ts', 'src/gateway/operations/index.ts'] as const;

const HEADER = '// Generated from openapi/openapi.yaml by scripts/generate.ts (`npm run generate`): do not edit.';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const METERS = ['paid', 'metered', 'counted', 'none'];
const SWITCHYARD_FIELDS = ['meter', 'wire', 'kinds', 'stream'];
/** Names that become identifiers and file names: handlers' and descriptors'. */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

export type Endpoint =
  | { caller: 'key'; scope: string; anthropicKey: boolean; meter: string; wire?: string }
  | { caller: 'session'; csrf: boolean }
  | { caller: 'admin'; role: string; csrf: boolean }
  | { caller: 'operator'; csrf: boolean }
  | { caller: 'public' };

/** An upstream operation: the contract operation whose request and answer it carries, its kinds, its stream event. */
export interface WireUse {
  operationId: string;
  kinds: string[];
  stream?: string;
  paid: boolean;
  /** Its answer is bytes (audio), streamed as they come, rather than JSON: its chunks are those bytes (or events). */
  binary: boolean;
  /**
   * Its request is multipart/form-data: the names of the fields that are files (format: binary), and whether each may
   * be given several times (an array of them: `image[]`).
   */
  files?: Record<string, 'one' | 'many'>;
}

export interface Tables {
  scopes: string[];
  /** What each scope lets a key call (KeyScope's x-enumDescriptions), for people. */
  scopeLabels: Record<string, string>;
  kinds: string[];
  /** The operators' roles (OperatorRole), most powerful first. */
  roles: string[];
  endpoints: Record<string, Endpoint>;
  wires: Record<string, WireUse>;
}

export class ContractError extends Error {
  constructor(readonly problems: string[]) {
    super(`openapi/openapi.yaml breaks the rules of scripts/contract.ts:\n- ${problems.join('\n- ')}`);
  }
}

type Json = Record<string, unknown>;
interface Op {
  id: string;
  method: string;
  path: string;
  def: Json;
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

/** The tables, from the parsed contract; throws a ContractError listing every problem. */
export function derive(spec: Json): Tables {
  const problems: string[] = [];
  const schemas = isObject(spec.components) && isObject(spec.components.schemas) ? spec.components.schemas : {};
  const scopes = enumOf(schemas, 'KeyScope', problems);
  const scopeLabels = labelsOf(schemas, 'KeyScope', scopes, problems);
  const kinds = enumOf(schemas, 'ModelKind', problems);
  const roles = enumOf(schemas, 'OperatorRole', problems);
  const endpoints: Record<string, Endpoint> = {};
  const wires: Record<string, WireUse> = {};
  for (const op of operations(spec, problems)) {
    const fail = (problem: string) => problems.push(`${op.id} (${op.method.toUpperCase()} ${op.path}) ${problem}`);
    const endpoint = callerOf(op, fail);
    if (!endpoint) continue;
    endpoints[op.id] = endpoint;
    if (endpoint.caller === 'key') {
      if (!scopes.includes(endpoint.scope))
        fail(`requires the scope '${endpoint.scope}', which KeyScope does not list`);
      switchyard(op, endpoint, { kinds, schemas, wires }, fail);
    } else if (endpoint.caller === 'admin') {
      endpoint.role = roleOf(op, roles, fail);
    } else if (op.def['x-switchyard'] !== undefined) {
      fail('has x-switchyard, which only operations called with an API key or as an operator have');
    }
  }
  const required = new Set(Object.values(endpoints).map((e) => (e.caller === 'key' ? e.scope : '')));
  for (const s of scopes)
    if (!required.has(s)) problems.push(`the scope '${s}' of KeyScope is required by no operation`);
  const served = new Set(Object.values(wires).flatMap((w) => w.kinds));
  for (const k of kinds) if (!served.has(k)) problems.push(`the kind '${k}' of ModelKind is served by no wire`);
  if (problems.length) throw new ContractError(problems);
  return { scopes, scopeLabels, kinds, roles, endpoints, wires };
}

function enumOf(schemas: Json, name: string, problems: string[]): string[] {
  const s = schemas[name];
  const values = isObject(s) ? s.enum : undefined;
  if (strings(values) && values.length && values.every((v) => IDENTIFIER.test(v))) return values;
  problems.push(`components.schemas.${name} must be an enum of names (letters, digits, _)`);
  return [];
}

function labelsOf(schemas: Json, name: string, values: string[], problems: string[]): Record<string, string> {
  const s = schemas[name];
  const labels = isObject(s) && isObject(s['x-enumDescriptions']) ? s['x-enumDescriptions'] : {};
  const keys = Object.keys(labels);
  const ok = keys.length === values.length && values.every((v) => typeof labels[v] === 'string' && labels[v]);
  if (!ok) {
    problems.push(`components.schemas.${name} must describe each of its values, and only them, in x-enumDescriptions`);
  }
  return labels as Record<string, string>;
}

function operations(spec: Json, problems: string[]): Op[] {
  const ops: Op[] = [];
  for (const [path, item] of Object.entries(isObject(spec.paths) ? spec.paths : {})) {
    for (const method of METHODS) {
      const def = isObject(item) ? item[method] : undefined;
      if (!isObject(def)) continue;
      const id = def.operationId;
      if (typeof id !== 'string' || !IDENTIFIER.test(id)) {
        problems.push(`${method.toUpperCase()} ${path} needs an operationId that is an identifier`);
      } else if (ops.some((o) => o.id === id)) problems.push(`the operationId ${id} is used twice`);
      else ops.push({ id, method, path, def });
    }
  }
  return ops;
}

/** Who may call the operation, from its `security` (see the comment above `paths:`). */
function callerOf(op: Op, fail: (problem: string) => void): Endpoint | null {
  const security = op.def.security;
  if (!Array.isArray(security) || !security.every(isObject)) {
    fail('must state its security (`security: []` when public)');
    return null;
  }
  if (!security.length) return { caller: 'public' };
  const schemes = security.map((r) => Object.keys(r).sort().join('+'));
  const safe = op.method === 'get' || op.method === 'head';
  /** A session scheme alone or with csrfToken: whether with it (required when the method changes state). */
  const session = (name: string, s: string | undefined): boolean | null => {
    if (s !== name && s !== [name, 'csrfToken'].sort().join('+')) return null;
    if (s === name && !safe) fail(`changes state and must require csrfToken with ${name}`);
    return s !== name;
  };
  const [one, two] = [...schemes].sort();
  const console = schemes.length === 1 ? session('cookieSession', one) : null;
  if (console !== null) return { caller: 'session', csrf: console };
  const operator = schemes.length === 1 ? session('operatorSession', one) : null;
  if (operator !== null) return { caller: 'operator', csrf: operator };
  // The admin API: the admin token (an owner), or an operator's session with the role its x-switchyard.role names.
  const admin = schemes.length === 2 && one === 'adminToken' ? session('operatorSession', two) : null;
  if (admin !== null) return { caller: 'admin', role: '', csrf: admin };
  return keyed(security, schemes, fail);
}

/** The role an admin operation needs (x-switchyard.role, one of OperatorRole); its only x-switchyard field. */
function roleOf(op: Op, roles: string[], fail: (problem: string) => void): string {
  const x = op.def['x-switchyard'];
  const role = isObject(x) && typeof x.role === 'string' && roles.includes(x.role) ? x.role : null;
  if (!role) fail(`must name in x-switchyard.role the least role of OperatorRole that may call it`);
  else if (Object.keys(x as Json).length > 1) fail('has x-switchyard fields other than role');
  return role ?? '';
}

/** An operation called with an API key: bearerAuth with one scope, and optionally Anthropic's x-api-key with it. */
function keyed(security: Json[], schemes: string[], fail: (problem: string) => void): Endpoint | null {
  const scopes = new Set(
    security.flatMap((r) => Object.values(r).map((s) => (strings(s) && s.length === 1 ? s[0] : ''))),
  );
  const [scope] = scopes;
  const known = schemes.every((s) => s === 'bearerAuth' || s === 'anthropicApiKey');
  if (!schemes.includes('bearerAuth') || !known || scopes.size !== 1 || !scope) {
    fail(
      'must require bearerAuth (or anthropicApiKey besides) with one scope, cookieSession, adminToken with operatorSession, operatorSession, or nothing',
    );
    return null;
  }
  return { caller: 'key', scope, anthropicKey: schemes.includes('anthropicApiKey'), meter: 'none' };
}

interface Known {
  kinds: string[];
  schemas: Json;
  wires: Record<string, WireUse>;
}

/** The operation's `x-switchyard`: its meter, and the wire it goes through with that wire's kinds and stream. */
function switchyard(op: Op, endpoint: Endpoint & { caller: 'key' }, known: Known, fail: (problem: string) => void) {
  const x = op.def['x-switchyard'];
  if (!isObject(x) || typeof x.meter !== 'string' || !METERS.includes(x.meter)) {
    fail(`must say in x-switchyard.meter what is checked before its body is read: ${METERS.join(', ')}`);
    return;
  }
  for (const k of Object.keys(x)) {
    if (!SWITCHYARD_FIELDS.includes(k))
      fail(`has x-switchyard.${k}, which is not one of ${SWITCHYARD_FIELDS.join(', ')}`);
  }
  endpoint.meter = x.meter;
  if (x.wire === undefined) {
    if (x.meter === 'paid') fail('is paid and must name its wire (x-switchyard.wire)');
    if (x.kinds !== undefined || x.stream !== undefined) fail('has x-switchyard.kinds or stream without a wire');
    return;
  }
  if (typeof x.wire !== 'string' || !IDENTIFIER.test(x.wire)) return fail('must name its wire with an identifier');
  const taken = known.wires[x.wire];
  if (taken) return fail(`goes through the wire '${x.wire}' of ${taken.operationId}: a wire is one operation's`);
  const kinds = strings(x.kinds) && x.kinds.length && x.kinds.every((k) => known.kinds.includes(k)) ? x.kinds : null;
  if (!kinds) fail('must list in x-switchyard.kinds the kinds of ModelKind its wire serves');
  const stream = typeof x.stream === 'string' && isObject(known.schemas[x.stream]) ? x.stream : undefined;
  if (x.stream !== undefined && !stream) fail('names in x-switchyard.stream no schema of components.schemas');
  const answer = isObject(op.def.responses) ? op.def.responses['200'] : undefined;
  const binary = !json(answer) && bytes(answer);
  const files = form(op.def.requestBody, known.schemas as Record<string, Json>);
  if (!(json(op.def.requestBody) || files) || !(json(answer) || binary))
    fail(
      'has a wire, so it must take application/json (or multipart/form-data with files) and answer (200) application/json or bytes (format: binary)',
    );
  endpoint.wire = x.wire;
  known.wires[x.wire] = { operationId: op.id, kinds: kinds ?? [], stream, paid: x.meter === 'paid', binary };
  if (files) known.wires[x.wire].files = files;
}

/** A multipart/form-data request's file fields (a string of format binary, or an array of them), or null. */
function form(body: unknown, schemas: Record<string, Json>): Record<string, 'one' | 'many'> | null {
  if (!isObject(body) || !isObject(body.content)) return null;
  const media = body.content['multipart/form-data'];
  if (!isObject(media) || !isObject(media.schema)) return null;
  const ref = media.schema.$ref;
  const schema = typeof ref === 'string' ? schemas[ref.replace('#/components/schemas/', '')] : media.schema;
  if (!isObject(schema) || !isObject(schema.properties)) return null;
  const binary = (s: unknown) => isObject(s) && s.format === 'binary';
  const out: Record<string, 'one' | 'many'> = {};
  for (const [name, p] of Object.entries(schema.properties)) {
    const options = isObject(p) && Array.isArray(p.anyOf) ? p.anyOf : [p];
    if (options.some((o) => isObject(o) && o.type === 'array' && binary(o.items))) out[name] = 'many';
    else if (options.some(binary)) out[name] = 'one';
  }
  return Object.keys(out).length ? out : null;
}

const json = (body: unknown) => isObject(body) && isObject(body.content) && isObject(body.content['application/json']);
/** An answer whose body is bytes: a media type (audio/*) whose schema is a string of format binary. */
const bytes = (body: unknown) =>
  isObject(body) &&
  isObject(body.content) &&
  Object.values(body.content).some((c) => isObject(c) && isObject(c.schema) && c.schema.format === 'binary');

/** The generated files, by path, from the contract's text. */
export function generate(text: string): Record<(typeof GENERATED)[number], string> {
  const t = derive(YAML.parse(text) as Json);
  const sha = crypto.createHash('sha256').update(text.replace(/\r\n/g, '\n')).digest('hex');
  return {
    'src/contract.ts': contractFile(t, sha),
    'src/handlers/index.ts': handlersFile(t),
    'src/gateway/operations/index.ts': operationsFile(t),
  };
}

/** A string literal in single quotes. */
const q = (s: string) => `'${s.replace(/[\\']/g, (c) => `\\${c}`)}'`;
const list = (xs: string[]) => `[${xs.map(q).join(', ')}]`;
const union = (xs: string[]) => xs.map(q).join(' | ') || 'never';
const paidWires = (t: Tables) => Object.keys(t.wires).filter((w) => t.wires[w].paid);

function endpointLiteral(e: Endpoint): string {
  const fields = Object.entries(e).map(([k, v]) => `${k}: ${typeof v === 'string' ? q(v) : String(v)}`);
  return `{ ${fields.join(', ')} }`;
}

function contractFile(t: Tables, sha: string): string {
  return [vocabulary(t, sha), endpoints(t), wires(t)].join('\n');
}

function vocabulary(t: Tables, sha: string): string {
  return `${HEADER}
/**
 * What the contract says that the code needs as values, with exact types: the key scopes, the model kinds, who may
 * call each operation and what is checked before its body is read (its \`security\` and \`x-switchyard\`), and the
 * upstream operations (wires) that operations go through. See the comment above \`paths:\` in openapi/openapi.yaml.
 */
import type { components, operations } from '../generated/openapi';

/** The sha-256 of the contract these tables come from: the server refuses to start on another (http/api.ts). */
export const CONTRACT_SHA256 = ${q(sha)};

/** The scopes an API key may have (KeyScope). */
export const SCOPES = ${list(t.scopes)} as const;
export type Scope = (typeof SCOPES)[number];

/** What each scope lets a key call, as people read it (KeyScope's x-enumDescriptions). */
export const SCOPE_LABELS: { readonly [S in Scope]: string } = {
${t.scopes.map((s) => `  ${s}: ${q(t.scopeLabels[s] ?? '')},`).join('\n')}
};

/** The kinds of model (ModelKind). */
export const MODEL_KINDS = ${list(t.kinds)} as const;
export type ModelKind = (typeof MODEL_KINDS)[number];

/** The operators' roles (OperatorRole), most powerful first: a role may do what any role after it may. */
export const OPERATOR_ROLES = ${list(t.roles)} as const;
export type OperatorRole = (typeof OPERATOR_ROLES)[number];
`;
}

function endpoints(t: Tables): string {
  return `/**
 * What is checked of an API key before the body is read, besides its scope: \`paid\` and \`metered\`, its requests per
 * minute and money (a paid call is then held for and charged); \`counted\`, its requests per minute; \`none\`, nothing.
 */
export type Meter = ${union(METERS)};

/**
 * Who may call an operation: an API key with a scope (\`anthropicKey\`: also sent as x-api-key), a console session
 * (\`csrf\`: with the CSRF header too), the admin token or an operator's session of at least \`role\` (\`csrf\`: the
 * session with the CSRF header), an operator's session whatever its role, or anyone.
 */
export type Endpoint =
  | { caller: 'key'; scope: Scope; anthropicKey: boolean; meter: Meter; wire?: UpstreamOp }
  | { caller: 'session'; csrf: boolean }
  | { caller: 'admin'; role: OperatorRole; csrf: boolean }
  | { caller: 'operator'; csrf: boolean }
  | { caller: 'public' };

/** Every operation of the contract, by operationId. */
export const ENDPOINTS = {
${Object.entries(t.endpoints)
  .map(([id, e]) => `  ${id}: ${endpointLiteral(e)},`)
  .join('\n')}
} as const satisfies { [Op in keyof operations]: Endpoint };
export type OperationId = keyof typeof ENDPOINTS;
`;
}

function wires(t: Tables): string {
  const wire = (w: string, u: WireUse) => {
    // A binary answer has no JSON: it is streamed, its chunks its bytes (Uint8Array: the console reads this file too).
    const events = u.stream ? [`components['schemas'][${q(u.stream)}]`] : [];
    const chunk = [...events, ...(u.binary ? ['Uint8Array'] : [])].join(' | ') || 'never';
    const res = u.binary ? 'never' : `JsonAnswer<${q(u.operationId)}>`;
    const req = u.files ? `FormBodies[${q(u.operationId)}]` : `JsonRequest<${q(u.operationId)}>`;
    return `  ${w}: {\n    req: ${req};\n    res: ${res};\n    chunk: ${chunk};\n  };`;
  };
  return `/** The kinds of model each wire serves: a provider with an adapter for the wire serves them. */
export const WIRES = {
${Object.entries(t.wires)
  .map(([w, u]) => `  ${w}: ${list(u.kinds)},`)
  .join('\n')}
} as const satisfies { [W in keyof Wire]: readonly ModelKind[] };
export type UpstreamOp = keyof typeof WIRES;

/** The wires of paid operations: each is described by src/gateway/operations/<name>.ts. */
export type OperationName = ${union(paidWires(t))};

type Json<T> = { content: { 'application/json': T } };
type JsonRequest<Op extends keyof operations> = operations[Op] extends { requestBody?: Json<infer B> } ? B : never;
type Form<T> = { content: { 'multipart/form-data': T } };
/** A file of a multipart/form-data request, as the gateway read it: its bytes as they came, never joined. */
export interface Upload {
  readonly upload: true;
  filename: string;
  /** Its media type, as the client said it (application/octet-stream when it said none). */
  type: string;
  size: number;
  chunks: readonly Uint8Array[];
}
/** A multipart request: its text fields as the contract types them, its files (\`One\`, and \`Many\`: one or several) as uploads. */
type FormRequest<Op extends keyof operations, One extends string, Many extends string> =
  operations[Op] extends { requestBody?: Form<infer B> }
    ? { [K in keyof B as K extends One | Many ? never : K]: B[K] } & { [F in One]: Upload } & { [F in Many]: Upload | Upload[] }
    : never;
type JsonAnswer<Op extends keyof operations> = operations[Op] extends { responses: { 200: Json<infer R> } } ? R : never;

/** The bodies of the multipart operations, their files as uploads (the handlers' bodies, and their wires' requests). */
export interface FormBodies {
${Object.values(t.wires)
  .filter((u) => u.files)
  .map((u) => {
    const of = (n: 'one' | 'many') => union(Object.keys(u.files!).filter((f) => u.files![f] === n));
    return `  ${u.operationId}: FormRequest<${q(u.operationId)}, ${of('one')}, ${of('many')}>;`;
  })
  .join('\n')}
}

/**
 * The request, answer and stream event of each wire: those of the operation that goes through it. A wire whose answer
 * is bytes (audio) has no JSON answer (\`never\`): its chunks are the bytes as they come, or its stream events.
 */
export interface Wire {
${Object.entries(t.wires)
  .map(([w, u]) => wire(w, u))
  .join('\n')}
}
`;
}

function handlersFile(t: Tables): string {
  const ids = Object.keys(t.endpoints);
  return `${HEADER}
/** The handler of every operation of the contract, by operationId: src/handlers/<operationId>.ts. */
${[...ids]
  .sort()
  .map((id) => `import { ${id} } from './${id}';`)
  .join('\n')}
import type { Handler, OperationId } from './types';

export const handlers: { [Op in OperationId]: Handler<Op> } = {
${ids.map((id) => `  ${id},`).join('\n')}
};
`;
}

function operationsFile(t: Tables): string {
  const names = paidWires(t);
  return `${HEADER}
/** The descriptor of every wire a paid operation goes through, by name: src/gateway/operations/<name>.ts. */
import type { OperationName } from '../../contract';
${[...names]
  .sort()
  .map((n) => `import { ${n} } from './${n}';`)
  .join('\n')}
import type { Operation } from './types';

export const OPERATIONS: { [Name in OperationName]: Operation } = { ${names.join(', ')} };

export { ${names.join(', ')} };
export type { Operation, OperationName };
`;
}
