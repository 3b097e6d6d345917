/**
 * What a client may not make the operator pay for: the fields, tools and headers that raise what an upstream
 * charges above a model's token prices, or make it bill tokens the request does not show (a tool's results read
 * back into the prompt, a server-side loop, a stored prompt). Each is served only when the model `allow`s the
 * feature — its prices then cover it, the operator says — and is otherwise stripped (the request is served at the
 * standard price, as it would have been without it) or refused with a 400 when serving it without would change the
 * answer's meaning. The operations' `features` apply these; README, Money, lists them.
 */
import type { Feature, ModelConfig } from '../../config';

export const allows = (model: Pick<ModelConfig, 'allow'>, f: Feature) => model.allow.includes(f);

/**
 * OpenAI's service tiers that cost no more than the standard price. `priority`, `scale`, `fast` (priority
 * processing by another name) and `ultrafast` — and whatever tier comes next — are served at the standard tier
 * unless the model allows `priority`.
 */
const STANDARD_TIERS = new Set(['auto', 'default', 'flex']);

/** The body without a pricier service tier (unless the model allows `priority`). */
export function standardTier<T extends { service_tier?: unknown }>(body: T, model: Pick<ModelConfig, 'allow'>): T {
  const tier = body.service_tier;
  if (tier == null || (typeof tier === 'string' && STANDARD_TIERS.has(tier)) || allows(model, 'priority')) return body;
  const { service_tier: _stripped, ...rest } = body;
  return rest as T;
}

/** Keeps the tools `keep` accepts; the same array when it keeps them all (no copy on the usual path). */
export function keepTools<T>(tools: T[] | null | undefined, keep: (t: T) => boolean): T[] | null | undefined {
  if (!Array.isArray(tools) || tools.every(keep)) return tools;
  return tools.filter(keep);
}

/**
 * A chat body without what runs at the provider unless allowed (`server_tools`): Azure OpenAI's "on your data"
 * (`data_sources`, `dataSources` in older versions: documents a search retrieves are put into the prompt, billed as
 * input, and the search is run by whatever endpoint the client names) and its vision `enhancements`.
 */
export function withoutChatExtensions<T extends object>(body: T, model: Pick<ModelConfig, 'allow'>): T {
  const b = body as Record<string, unknown>;
  if (allows(model, 'server_tools') || (b.data_sources == null && b.dataSources == null && b.enhancements == null))
    return body;
  const { data_sources: _a, dataSources: _b, enhancements: _c, ...rest } = b;
  return rest as T;
}

const typeOf = (t: unknown): string | undefined =>
  t && typeof t === 'object' && typeof (t as { type?: unknown }).type === 'string'
    ? (t as { type: string }).type
    : undefined;

// -------------------------------------------------------------------------------------------------------------
// Anthropic's Messages, sent natively

/** Anthropic's tools that the client runs (priced as tokens; their overhead is in the prompt bound). */
const ANTHROPIC_CLIENT_TOOL = /^(bash|text_editor|computer|memory)_/;

/**
 * Whether a Messages tool may go upstream: client tools always; web search and fetch (billed per use, their
 * results read back as input) when the model allows `web_search`; every other server tool — code execution, tool
 * search, MCP toolsets, and the next one Anthropic adds — when it allows `server_tools`.
 */
export function anthropicTool(model: Pick<ModelConfig, 'allow'>) {
  return (t: unknown): boolean => {
    const type = typeOf(t);
    if (type === undefined || type === 'custom' || ANTHROPIC_CLIENT_TOOL.test(type)) return true;
    if (/^web_(search|fetch)_/.test(type)) return allows(model, 'web_search');
    return allows(model, 'server_tools');
  };
}

/** Betas that raise the price, by the feature that allows them (others — interleaved thinking, 128k output... — pass). */
const PRICED_BETAS: [RegExp, Feature][] = [
  [/^context-1m-/, 'long_context'], // prompts above 200k tokens at 2× input and 1.5× output
  [/^fast-mode-/, 'priority'],
  [/^extended-cache-ttl-/, 'cache_1h'],
  [/^(mcp-client|code-execution|skills|compact|web-fetch|files-api)-/, 'server_tools'],
];

/** The `anthropic-beta` list without the betas the model does not allow. */
export function anthropicBetas(
  headers: Record<string, string>,
  model: Pick<ModelConfig, 'allow'>,
): Record<string, string> {
  const list = headers['anthropic-beta'];
  if (!list) return headers;
  const kept = list
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b && PRICED_BETAS.every(([re, f]) => !re.test(b) || allows(model, f)));
  const { 'anthropic-beta': _all, ...rest } = headers;
  return kept.length ? { ...rest, 'anthropic-beta': kept.join(',') } : rest;
}

type Loose = Record<string, unknown>;

/**
 * A Messages body as it may go to Anthropic: standard tier (not `auto`, which uses priority capacity at priority
 * prices), no fast mode, inference anywhere (`inference_geo: "us"` costs 1.1×), no server tools, MCP servers,
 * containers or server-side compaction, and 5-minute cache writes only — unless the model allows each.
 */
export function anthropicBody<T extends object>(body: T, model: Pick<ModelConfig, 'allow'>, longCache: boolean): T {
  const out: Loose = { ...(body as Loose) };
  if (!allows(model, 'priority')) {
    out.service_tier = 'standard_only';
    delete out.speed;
  }
  if (!allows(model, 'data_residency') && out.inference_geo != null && out.inference_geo !== 'global')
    delete out.inference_geo;
  const tools = keepTools(out.tools as unknown[] | undefined, anthropicTool(model));
  if (tools !== out.tools) out.tools = tools;
  if (!allows(model, 'server_tools')) withoutServerSide(out);
  if (longCache && !allows(model, 'cache_1h')) fiveMinuteCache(out);
  return out as T;
}

/** MCP servers, containers (skills, code execution) and compaction (a summarising pass the top-level usage leaves out). */
function withoutServerSide(out: Loose): void {
  delete out.mcp_servers;
  delete out.container;
  delete out.compaction;
  const cm = out.context_management as { edits?: unknown } | null | undefined;
  if (cm && typeof cm === 'object' && Array.isArray(cm.edits)) {
    const edits = cm.edits.filter((e) => !typeOf(e)?.startsWith('compact'));
    if (edits.length !== cm.edits.length) out.context_management = edits.length ? { ...cm, edits } : undefined;
  }
}

/**
 * Every cache breakpoint at the default 5-minute life (1-hour writes cost 2× input, 5-minute ones 1.25×): one walk
 * over the whole body, so that a `cache_control` anywhere — top level (automatic caching), system, tools, messages,
 * tool results, documents and the blocks inside them, and wherever Anthropic puts one next — loses its `ttl`.
 * Copies only the objects on the way to a change; a body without one comes back as it was.
 */
function fiveMinuteCache(out: Loose): void {
  Object.assign(out, withoutLongTtl(out));
}

function withoutLongTtl(v: unknown): unknown {
  if (!v || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    let copy: unknown[] | null = null;
    v.forEach((x, i) => {
      const y = withoutLongTtl(x);
      if (y !== x) (copy ??= v.slice())[i] = y;
    });
    return copy ?? v;
  }
  const o = v as Loose;
  let copy: Loose | null = null;
  for (const k of Object.keys(o)) {
    const x = o[k];
    const y = k === 'cache_control' ? fiveMinutes(x) : withoutLongTtl(x);
    if (y !== x) (copy ??= { ...o })[k] = y;
  }
  return copy ?? o;
}

/** A cache_control without a `ttl` other than the default's. */
function fiveMinutes(cc: unknown): unknown {
  if (!cc || typeof cc !== 'object' || Array.isArray(cc) || !('ttl' in cc) || (cc as Loose).ttl === '5m') return cc;
  const { ttl: _ttl, ...rest } = cc as Loose;
  return rest;
}

// -------------------------------------------------------------------------------------------------------------
// OpenAI's Responses, sent natively

/**
 * Whether a Responses tool may go upstream: tools the client runs (functions, custom tools, namespaces of them,
 * local shells, apply_patch, computer, a shell without a hosted environment, client-side tool search) always; web
 * search when the model allows `web_search`; everything OpenAI runs itself — file search, code interpreter, image
 * generation, remote MCP, hosted shells and tool search, programmatic tool calling, computer use preview, and the
 * next hosted tool — when it allows `server_tools`.
 */
export function responsesTool(model: Pick<ModelConfig, 'allow'>) {
  return (t: unknown): boolean => {
    const type = typeOf(t);
    const o = (t ?? {}) as { environment?: { type?: unknown } | null; execution?: unknown };
    switch (type) {
      case 'function':
      case 'custom':
      case 'namespace':
      case 'local_shell':
      case 'apply_patch':
      case 'computer':
        return true;
      case 'shell':
        return o.environment == null || o.environment.type === 'local' || allows(model, 'server_tools');
      case 'tool_search':
        return o.execution === 'client' || allows(model, 'server_tools');
      default:
        if (type?.startsWith('web_search')) return allows(model, 'web_search');
        return allows(model, 'server_tools');
    }
  };
}
