/**
 * The Responses API's stored responses, per account: `previous_response_id` continues a conversation the gateway
 * kept (the earlier turns are sent again as input: no upstream stores anything), and GET / DELETE read and forget
 * one. Another account's id is not found. `store: false` keeps nothing. Like OpenAI's, a stored response lives
 * `responses.keep_days` (30 by default): older ones are not found, and `purge()` deletes them (hourly, services/app.ts).
 */
import type { Knex } from 'knex';
import { errors } from '../errors';
import type { ResponseInputItem, ResponseObject, ResponseOutputItem, ResponsesRequest } from '../gateway/types';

interface Stored {
  /** null: the conversation was too long to keep for continuing. */
  input: ResponseInputItem[] | null;
  response: ResponseObject;
}

const notFound = (id: string) => errors.notFoundResource(`No response found with id '${id}'.`, 'response_id');

/** An answer's output items as input items for the next turn (ids dropped: the upstream stored none of them). */
function replayed(output: ResponseOutputItem[]): ResponseInputItem[] {
  return output.flatMap((item): ResponseInputItem[] => {
    const { id: _id, status: _status, ...rest } = item;
    if (item.type === 'reasoning' && !('encrypted_content' in item && item.encrypted_content)) return []; // nothing to replay
    return [rest as ResponseInputItem];
  });
}

export class StoredResponses {
  constructor(
    private readonly db: Knex,
    private readonly keepMs: number,
    /**
     * The largest conversation kept for continuing, in UTF-8 bytes, its answer included: server.max_body_bytes, what
     * a client could send whole (so a continued request is at most twice what one may send). A longer one is kept
     * without its history — GET still returns it — so that continuing it is refused before its history is read or
     * anything held: each turn would otherwise load, parse and measure all the earlier ones again, without bound,
     * before its money is checked. This bounds the `input` column; the `response` column is what the client was
     * answered.
     */
    private readonly maxBytes = Number.POSITIVE_INFINITY,
    private readonly now: () => number = Date.now,
  ) {}

  /** The request as it goes upstream: the conversation so far (if it continues one), then its own input. */
  async withHistory(
    accountId: number,
    body: ResponsesRequest,
  ): Promise<{ body: ResponsesRequest; input: ResponseInputItem[] }> {
    const own: ResponseInputItem[] =
      typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : (body.input ?? []);
    if (!body.previous_response_id) return { body: { ...body, input: own }, input: own };
    const previous = await this.load(accountId, body.previous_response_id);
    if (!previous)
      throw errors.invalidRequest(
        `Previous response with id '${body.previous_response_id}' not found.`,
        'previous_response_id',
        'previous_response_not_found',
      );
    if (!Array.isArray(previous.input)) {
      throw errors.invalidRequest(
        `Response '${body.previous_response_id}' cannot be continued: the conversation is longer than one request may be (${this.maxBytes} bytes); send the turns you need as input`,
        'previous_response_id',
        'conversation_too_long',
      );
    }
    const input = [...previous.input, ...replayed(previous.response.output), ...own];
    return { body: { ...body, input }, input };
  }

  /** Keeps a response (unless the request said `store: false`). */
  async keep(
    accountId: number,
    body: ResponsesRequest,
    input: ResponseInputItem[],
    response: ResponseObject,
  ): Promise<void> {
    if (body.store === false || !response?.id) return;
    const answer = JSON.stringify(response);
    let history = JSON.stringify(input);
    if (Buffer.byteLength(history) + Buffer.byteLength(answer) > this.maxBytes) history = 'null'; // kept, but too long to continue
    await this.db('responses').insert({
      id: response.id,
      account_id: accountId,
      model: response.model,
      previous_response_id: body.previous_response_id ?? null,
      input: history,
      response: answer,
      created_at: this.now(),
    });
  }

  /** The response alone: its conversation, as large as a request may be, is read only to continue it. */
  async find(accountId: number, id: string): Promise<ResponseObject> {
    const row = await this.live(accountId, id).first('response');
    if (!row) throw notFound(id);
    return JSON.parse(String(row.response));
  }

  async forget(accountId: number, id: string): Promise<{ id: string; object: 'response'; deleted: true }> {
    if (!(await this.live(accountId, id).del())) throw notFound(id);
    return { id, object: 'response', deleted: true };
  }

  /** Deletes the responses past their time, a thousand at a time (short transactions); returns how many. */
  async purge(): Promise<number> {
    let total = 0;
    for (;;) {
      const ids = (await this.db('responses').where('created_at', '<', this.cutoff()).limit(1000).select('id')).map(
        (r) => String(r.id),
      );
      if (!ids.length) return total;
      total += await this.db('responses').whereIn('id', ids).del();
    }
  }

  private cutoff(): number {
    return this.now() - this.keepMs;
  }

  /** The account's response `id`, unless it is past its time. */
  private live(accountId: number, id: string) {
    return this.db('responses').where({ id, account_id: accountId }).andWhere('created_at', '>=', this.cutoff());
  }

  private async load(accountId: number, id: string): Promise<Stored | null> {
    const row = await this.live(accountId, id).first('input', 'response');
    return row ? { input: JSON.parse(String(row.input)), response: JSON.parse(String(row.response)) } : null;
  }
}
