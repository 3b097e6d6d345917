/**
 * A multipart/form-data body for an upstream (audio to transcribe, images to edit): the request's text fields and its
 * files, each file's bytes the very chunks the client sent (never copied), written as they are read. A route that
 * fails over to another provider makes its body again (`stream()` starts over).
 */
import crypto from 'node:crypto';
import { Readable } from 'node:stream';
import type { Upload } from '../../contract';

export const isUpload = (v: unknown): v is Upload => !!v && typeof v === 'object' && (v as Upload).upload === true;

/** A header's quoted value: quotes and line breaks cannot end it early (what browsers send in their place). */
const quoted = (s: string) => `"${s.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A')}"`;

export class FormBody {
  private readonly boundary = `----switchyard${crypto.randomBytes(12).toString('hex')}`;
  private readonly parts: Uint8Array[] = [];
  readonly length: number;

  /** `fields`: text (numbers and booleans as text; lists as `name[]`), uploads, or lists of uploads (`name[]`). */
  constructor(fields: Record<string, unknown>) {
    for (const [name, value] of Object.entries(fields)) {
      if (value === undefined || value === null) continue;
      if (Array.isArray(value)) for (const v of value) this.part(`${name}[]`, v);
      else this.part(name, value);
    }
    this.parts.push(Buffer.from(`--${this.boundary}--\r\n`));
    this.length = this.parts.reduce((n, p) => n + p.length, 0);
  }

  get contentType(): string {
    return `multipart/form-data; boundary=${this.boundary}`;
  }

  /** The body's bytes, from the start. */
  stream(): Readable {
    return Readable.from(this.parts, { objectMode: false });
  }

  private part(name: string, value: unknown): void {
    const head = `--${this.boundary}\r\nContent-Disposition: form-data; name=${quoted(name)}`;
    if (isUpload(value)) {
      const type = value.type.replace(/[\r\n]/g, '');
      this.parts.push(Buffer.from(`${head}; filename=${quoted(value.filename)}\r\nContent-Type: ${type}\r\n\r\n`));
      this.parts.push(...value.chunks);
    } else {
      const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
      this.parts.push(Buffer.from(`${head}\r\n\r\n${text}`));
    }
    this.parts.push(Buffer.from('\r\n'));
  }
}
