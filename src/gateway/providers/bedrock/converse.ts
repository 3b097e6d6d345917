/**
 * OpenAI chat → Bedrock's Converse API, as pure functions (no I/O): system text, same-role turns merged (Converse,
 * like Anthropic, wants user and assistant turns to alternate), images and documents as bytes, tools and tool
 * results, the sampling parameters. The answer's way back is in converseAnswer.ts.
 */
import type { ChatRequest } from '../../types';
import { badRequest as refused, parseDataUrl, textOf, textParts, toolInput } from '../shared';
import type { components } from '../../../../generated/openapi';
import type {
  ContentBlock,
  ConverseMessage,
  ConverseRequest,
  DocumentFormat,
  ImageFormat,
  ToolChoice,
  ToolSpec,
} from './wire';

type S = components['schemas'];

/** The caller's fault: refused before anything is sent, as Bedrock itself would refuse it (not retried). */
export const badRequest = (message: string) => refused('bedrock', message);

const IMAGE_FORMATS: Record<string, ImageFormat> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/jpg': 'jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
};

const DOCUMENT_FORMATS: Record<string, DocumentFormat> = {
  'application/pdf': 'pdf',
  'text/csv': 'csv',
  'application/msword': 'doc',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.ms-excel': 'xls',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
  'text/html': 'html',
  'text/plain': 'txt',
  'text/markdown': 'md',
};

/** A Claude model id, inference profile id (`us.anthropic.…`) or ARN naming one. */
export const isClaude = (model: string) => /(^|[./])anthropic\./.test(model);

/** `maxOutputTokens`: the output allowance, Converse's maxTokens. */
export function toConverseRequest(body: ChatRequest, model: string, maxOutputTokens: number): ConverseRequest {
  if (typeof body.n === 'number' && body.n > 1)
    throw badRequest(`'n' must be 1: this model returns a single choice (got ${body.n})`);
  if (body.functions?.length || body.function_call)
    throw badRequest("'functions' and 'function_call' are not supported by this model: use 'tools' and 'tool_choice'");
  const { system, messages } = conversation(body.messages);
  const out: ConverseRequest = { messages, inferenceConfig: { maxTokens: maxOutputTokens } };
  if (system.length) out.system = system.map((text) => ({ text }));
  const stop = typeof body.stop === 'string' ? [body.stop] : Array.isArray(body.stop) ? body.stop : [];
  if (stop.length) out.inferenceConfig!.stopSequences = stop;
  // Claude on Bedrock takes temperature in 0..1 (OpenAI: 0..2); other models are sent the value as written.
  if (typeof body.temperature === 'number')
    out.inferenceConfig!.temperature = isClaude(model) ? Math.min(body.temperature, 1) : body.temperature;
  if (typeof body.top_p === 'number') out.inferenceConfig!.topP = body.top_p;
  // top_k is the model's own parameter: Converse passes it on to a model that knows it.
  if (typeof body.top_k === 'number') out.additionalModelRequestFields = { top_k: body.top_k };
  const toolConfig = tools(body, messages);
  if (toolConfig) out.toolConfig = toolConfig;
  return out;
}

/** The tools and tool choice; Converse has no "none", so `none` sends no tools (when the conversation allows it). */
function tools(body: ChatRequest, messages: ConverseMessage[]): ConverseRequest['toolConfig'] {
  const specs: ToolSpec[] = (body.tools ?? [])
    .filter((t) => t.type === 'function')
    .map((t) => ({
      toolSpec: {
        name: t.function.name,
        ...(t.function.description ? { description: t.function.description } : {}),
        inputSchema: { json: t.function.parameters ?? { type: 'object', properties: {} } },
      },
    }));
  if (!specs.length) return undefined;
  const choice = body.tool_choice;
  if (choice === 'none') {
    const used = messages.some((m) => m.content.some((b) => 'toolUse' in b || 'toolResult' in b));
    // Bedrock refuses tool calls in the conversation without the tools they call: the tools must stay, so might be called.
    if (used)
      throw badRequest("tool_choice 'none' is not supported by this model once the conversation has tool calls");
    return undefined;
  }
  let toolChoice: ToolChoice | undefined;
  if (choice === 'required') toolChoice = { any: {} };
  else if (choice && typeof choice === 'object' && 'function' in choice)
    toolChoice = { tool: { name: choice.function.name } };
  else if (choice === 'auto') toolChoice = { auto: {} };
  return { tools: specs, ...(toolChoice ? { toolChoice } : {}) };
}

/** The messages as Converse's: system text apart, same-role turns merged. */
function conversation(input: ChatRequest['messages']): { system: string[]; messages: ConverseMessage[] } {
  const system: string[] = [];
  const messages: ConverseMessage[] = [];
  const push = (role: ConverseMessage['role'], content: ContentBlock[]) => {
    if (!content.length) return;
    const prev = messages[messages.length - 1];
    if (prev?.role === role) prev.content.push(...content);
    else messages.push({ role, content });
  };
  input.forEach((m, i) => {
    const where = `messages[${i}]`;
    switch (m.role) {
      case 'system':
      case 'developer': {
        const text = textParts('bedrock', m.content, where);
        if (text) system.push(text);
        return;
      }
      case 'user':
        return push('user', userBlocks(m.content as S['ChatCompletionRequestUserMessage']['content'], where));
      case 'assistant':
        return push('assistant', assistantBlocks(m as S['ChatCompletionRequestAssistantMessage'], where));
      case 'tool': {
        const t = m as S['ChatCompletionRequestToolMessage'];
        const text = typeof t.content === 'string' ? t.content : t.content.map((p) => p.text).join('');
        // Bedrock refuses a blank text block, a tool's empty output included.
        const content = [{ text: text || ' ' }];
        return push('user', [{ toolResult: { toolUseId: t.tool_call_id, content } }]);
      }
      default:
        throw badRequest(`${where}.role '${(m as { role: string }).role}' is not supported by this model`);
    }
  });
  return { system, messages };
}

function userBlocks(content: S['ChatCompletionRequestUserMessage']['content'], where: string): ContentBlock[] {
  if (typeof content === 'string') return content ? [{ text: content }] : [];
  return content.flatMap((part, j): ContentBlock[] => {
    const at = `${where}.content[${j}]`;
    const p = part as Partial<
      S['ChatCompletionRequestMessageContentPartText'] &
        Omit<S['ChatCompletionRequestMessageContentPartImage'], 'type'> &
        Omit<S['ChatCompletionRequestMessageContentPartFile'], 'type'>
    >;
    switch (part.type) {
      case 'text':
        return p.text ? [{ text: p.text }] : [];
      case 'image_url':
        return [image(p.image_url?.url ?? '', at)];
      case 'file':
        return [document(p.file ?? {}, at)];
      default:
        throw badRequest(`${at}: content parts of type '${part.type}' are not supported by this model`);
    }
  });
}

/** An image: inline bytes from a data URL, or an object in S3 (Bedrock fetches nothing else, and neither do we). */
function image(url: string, at: string): ContentBlock {
  if (url.startsWith('s3://')) {
    const format = IMAGE_FORMATS[`image/${/\.(\w+)$/.exec(url)?.[1]?.toLowerCase() ?? ''}`];
    if (!format) throw badRequest(`${at}.image_url.url: an S3 image must end in .png, .jpeg, .jpg, .gif or .webp`);
    return { image: { format, source: { s3Location: { uri: url } } } };
  }
  const data = parseDataUrl(url);
  if (!data) throw badRequest(`${at}.image_url.url: only data URLs (data:<media type>;base64,<data>) are supported`);
  const format = IMAGE_FORMATS[data.mediaType];
  if (!format) throw badRequest(`${at}.image_url.url: images must be PNG, JPEG, GIF or WebP (got ${data.mediaType})`);
  return { image: { format, source: { bytes: data.data } } };
}

/** An inline file as a document block; Bedrock requires a name of letters, digits, spaces, hyphens and brackets. */
function document(file: { file_data?: string; filename?: string }, at: string): ContentBlock {
  const data = file.file_data ? parseDataUrl(file.file_data) : null;
  if (!data)
    throw badRequest(`${at}.file: only inline files (file_data as a base64 data URL) are supported by this model`);
  const format = DOCUMENT_FORMATS[data.mediaType];
  if (!format) throw badRequest(`${at}.file: documents of type ${data.mediaType} are not supported by this model`);
  const stem = (file.filename ?? '').replace(/\.[^.]*$/, '');
  const name =
    stem
      .replace(/[^A-Za-z0-9\s\-()[\]]/g, '-')
      .replace(/\s+/g, ' ')
      .trim() || 'document';
  return { document: { format, name, source: { bytes: data.data } } };
}

function assistantBlocks(m: S['ChatCompletionRequestAssistantMessage'], where: string): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  const content = m.content;
  const text = textOf(content);
  if (text) blocks.push({ text });
  (m.tool_calls ?? []).forEach((call, k) => {
    if (call.type !== 'function') throw badRequest(`${where}.tool_calls[${k}]: only function tool calls are supported`);
    const input = toolInput('bedrock', call.function.arguments, `${where}.tool_calls[${k}]`);
    blocks.push({ toolUse: { toolUseId: call.id, name: call.function.name, input } });
  });
  return blocks;
}
