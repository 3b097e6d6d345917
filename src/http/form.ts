/**
 * multipart/form-data requests (audio to transcribe, images to edit), read with busboy as they arrive: each file's
 * bytes are kept as the chunks that came (never joined, never held twice) and the whole body is bounded by
 * `server.max_body_bytes`, as a JSON body is. Text fields are typed as the contract's schema says (`n=2` → 2); a
 * field sent as `name[]` or several times is a list. The result is the body handlers get, files as Uploads.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type busboy from 'busboy';
import type { Upload } from '../contract';
import { errors } from '../errors';
import type { BodyProfile } from '../gateway/bound';

/** Per field of a form's schema: how its text is read, and whether it is a file. */
export type FieldKinds = Record<string, 'integer' | 'number' | 'boolean' | 'array' | 'file' | 'files' | 'string'>;

/** More parts than any of OpenAI's forms has (16 images, a mask, a dozen fields): a body of tiny parts costs work. */
const MAX_PARTS = 64;
const MAX_FIELD_BYTES = 256 * 1024;

export interface Form {
  body: Record<string, unknown>;
  profile: BodyProfile;
  /** Every upload, for validation to see as a string (the contract's `format: binary`). */
  uploads: Set<unknown>;
}

export const isForm = (type: string | undefined): boolean =>
  !!type && type.split(';')[0].trim().toLowerCase() === 'multipart/form-data';

/** Reads a multipart body of at most `max` bytes (413 beyond), its fields typed by `kinds`. */
export function readForm(req: IncomingMessage, res: ServerResponse, max: number, kinds: FieldKinds): Promise<Form> {
  if (req.destroyed) throw errors.clientClosed();
  if (Number(req.headers['content-length'] ?? 0) > max) throw errors.tooLarge(max);
  let parser: busboy.Busboy;
  try {
    // Loaded at the first form, not at start-up: only transcriptions and image edits send one.
    parser = (require('busboy') as typeof busboy)({
      headers: req.headers,
      limits: { fieldSize: MAX_FIELD_BYTES, parts: MAX_PARTS, fileSize: max },
    });
  } catch (e) {
    throw errors.invalidRequest(`The multipart body cannot be read: ${(e as Error).message}`, null);
  }
  if (req.headers.expect?.toLowerCase() === '100-continue' && !res.headersSent) res.writeContinue();
  return new Promise((resolve, reject) => {
    let size = 0;
    let failed = false;
    const fail = (e: unknown) => {
      if (failed) return;
      failed = true;
      req.unpipe(parser);
      req.resume(); // the rest is read and dropped: the answer can still be read by the client
      reject(e);
    };
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) fail(errors.tooLarge(max));
    });
    const form = parts(parser, new FormBuilder(kinds), fail);
    parser.on('close', () => {
      if (failed) return;
      try {
        resolve(form.done());
      } catch (e) {
        reject(e);
      }
    });
    req.once('error', () => fail(errors.clientClosed()));
    req.once('close', () => {
      if (!req.complete) fail(errors.clientClosed());
    });
    req.pipe(parser);
  });
}

/** Hands each part the parser reads to the form: a field's text, a file's chunks as they come; a bad one fails. */
function parts(parser: busboy.Busboy, form: FormBuilder, fail: (e: unknown) => void): FormBuilder {
  parser.on('field', (name, value, info) => {
    if (info.valueTruncated) return fail(errors.invalidRequest(`The field ${name} is too long`, name));
    try {
      form.text(name, value);
    } catch (e) {
      fail(e);
    }
  });
  parser.on('file', (name, stream, info) => {
    try {
      const upload = form.file(name, info.filename, info.mimeType);
      const chunks = upload.chunks as Uint8Array[];
      stream.on('data', (c: Buffer) => {
        chunks.push(c);
        upload.size += c.length;
      });
    } catch (e) {
      stream.resume();
      fail(e);
    }
  });
  parser.on('partsLimit', () => fail(errors.invalidRequest(`A form may have at most ${MAX_PARTS} parts`, null)));
  parser.on('error', (e: Error) =>
    fail(errors.invalidRequest(`The multipart body cannot be read: ${e.message}`, null)),
  );
  return form;
}

class FormBuilder {
  private readonly body: Record<string, unknown> = {};
  private readonly uploads = new Set<unknown>();
  private textBytes = 0;
  private images = 0;

  constructor(private readonly kinds: FieldKinds) {}

  text(raw: string, value: string): void {
    const name = raw.endsWith('[]') ? raw.slice(0, -2) : raw;
    const kind = this.kinds[name] ?? 'string';
    if (kind === 'file' || kind === 'files') throw errors.invalidRequest(`${name} must be a file, not text`, name);
    this.textBytes += Buffer.byteLength(name) + Buffer.byteLength(value);
    if (kind === 'array' || raw.endsWith('[]')) {
      const had = this.body[name];
      this.body[name] = [...(Array.isArray(had) ? had : had === undefined ? [] : [had]), value];
    } else this.body[name] = typed(kind, value);
  }

  file(raw: string, filename: string | undefined, type: string | undefined): Upload {
    const name = raw.endsWith('[]') ? raw.slice(0, -2) : raw;
    const kind = this.kinds[name];
    if (kind !== 'file' && kind !== 'files')
      throw errors.invalidRequest(`${name} is not a file field of this operation`, name);
    const upload: Upload = {
      upload: true,
      filename: filename || name,
      type: type || 'application/octet-stream',
      size: 0,
      chunks: [],
    };
    this.uploads.add(upload);
    if (upload.type.startsWith('image/') || name === 'image' || name === 'mask') this.images++;
    const had = this.body[name];
    if (kind === 'file') {
      if (had !== undefined) throw errors.invalidRequest(`${name} may be given once`, name);
      this.body[name] = upload;
    } else this.body[name] = had === undefined ? upload : [...(Array.isArray(had) ? had : [had]), upload];
    return upload;
  }

  done(): Form {
    const profile: BodyProfile = {
      textBytes: this.textBytes,
      images: this.images,
      audio: 0,
      audioBytes: 0,
      files: 0,
      fileRefs: 0,
      tools: false,
    };
    return { body: this.body, profile, uploads: this.uploads };
  }
}

/** A text field as its schema types it; what does not read as that type stays text, for validation to refuse. */
function typed(kind: FieldKinds[string], value: string): unknown {
  if (kind === 'integer' || kind === 'number') {
    const n = value.trim() === '' ? NaN : Number(value);
    return Number.isFinite(n) ? n : value;
  }
  if (kind === 'boolean') return value === 'true' ? true : value === 'false' ? false : value;
  return value;
}

/** The body as validation sees it: each upload as a string (the contract's `type: string, format: binary`). */
export function forValidation(form: Form): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(form.body)) {
    if (Array.isArray(v)) out[k] = v.map((x) => (form.uploads.has(x) ? 'file' : x));
    else out[k] = form.uploads.has(v) ? 'file' : v;
  }
  return out;
}

/** The kind of each field of a form's (dereferenced) schema. */
export function fieldKinds(schema: unknown): FieldKinds {
  const out: FieldKinds = {};
  const props = (schema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
  for (const [name, p] of Object.entries(props)) {
    const options = (p as { anyOf?: unknown[] }).anyOf ?? [p];
    const of = (o: unknown) => o as { type?: unknown; format?: unknown; items?: { format?: unknown } };
    if (options.some((o) => of(o).type === 'array' && of(o).items?.format === 'binary')) out[name] = 'files';
    else if (options.some((o) => of(o).format === 'binary')) out[name] = 'file';
    else {
      const types = options.flatMap((o) => [of(o).type].flat());
      out[name] = (['integer', 'number', 'boolean', 'array'] as const).find((t) => types.includes(t)) ?? 'string';
    }
  }
  return out;
}
