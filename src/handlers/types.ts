/**
 * The shape of an operation handler. Handlers never touch Hapi: they get the validated request and return a Reply,
 * which src/server.ts writes out. Types of bodies come from the generated contract types.
 */
import type { App } from '../app';
import type { KeyPrincipal } from '../accounts/keys';
import type { operations } from '../../generated/openapi';
import type { Meter } from '../gateway/gateway';

export type OperationId = keyof operations;

type JsonBody<Op extends OperationId> = operations[Op] extends { requestBody: { content: { 'application/json': infer B } } } ? B : undefined;
type PathParams<Op extends OperationId> = operations[Op] extends { parameters: { path: infer P } } ? P : Record<string, never>;

export interface HandlerInput<Op extends OperationId> {
  body: JsonBody<Op>;
  params: PathParams<Op>;
  principal: KeyPrincipal;
  app: App;
  requestId: string;
  /** Aborted when the client goes away: cancels the upstream request. */
  signal: AbortSignal;
}

export type Reply = (
  | { status?: number; body: unknown }
  /** Server-sent events: each item is one frame, already framed (`data: ...\n\n`). */
  | { sse: AsyncIterable<string> }
) & {
  headers?: Record<string, string>;
  /** What the request used at an upstream; for a stream, read once the stream has ended. */
  meter?: () => Meter;
};

export type Handler<Op extends OperationId> = (input: HandlerInput<Op>) => Promise<Reply>;
