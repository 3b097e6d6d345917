/**
 * What moderations and rerank add below the HTTP layer: their usage classes priced and held like any family (a
 * request, a search unit), the tokenizer's count of a rerank (the query once per document), and the migration that
 * gives their scopes to the keys that had every scope there was.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createAccount } from '../../src/accounts/accounts';
import { createKey } from '../../src/accounts/keys';
import { Price } from '../../src/billing/prices';
import { connect } from '../../src/db';
import { count, countText } from '../../src/gateway/tokenizer/count';
import { familyBounds, usage } from '../../src/usage';

describe('the classes are priced and held as families of their own', () => {
  // per million units, in µUSD: 2,000 USD per million moderations (0.002 USD each), Cohere's 2 USD per 1,000 searches
  const price = new Price({ input: 1_000_000, moderation: 2_000_000_000, search_unit: 2_000_000_000 });

  test('a charge: each unit at its price, besides the tokens', () => {
    expect(price.cost({ ...usage(100, 0), moderations: 1 })).toBe(100 + 2000);
    expect(price.cost({ ...usage(0, 0), searchUnits: 3 })).toBe(6000);
  });

  test('a hold: the units an operation names, by family, besides the prompt bound', () => {
    expect(familyBounds({ moderations: 1, searchUnits: 2 })).toEqual({ moderation: 1, search_unit: 2 });
    expect(price.worstCase(100, 0, familyBounds({ moderations: 1 }))).toBe(100 + 2000);
    // a model that leaves the price out: free
    expect(new Price({ input: 1_000_000 }).worstCase(100, 0, familyBounds({ moderations: 1 }))).toBe(100);
  });
});

test("the tokenizer counts a rerank's query once with every document", () => {
  const query = 'what is the capital of France?';
  const documents = ['Paris is the capital of France.', 'Tea is a drink.', ''];
  expect(count({ kind: 'rerank', query, documents })).toBe(
    3 * countText(query) + countText(documents[0]) + countText(documents[1]),
  );
});

describe('migration 017', () => {
  let dir: string;
  beforeAll(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-017-'))));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('keys that had every scope get moderations and rerank; a key limited to some stays limited', async () => {
    const db = connect(`sqlite:${path.join(dir, 'm.db')}`);
    try {
      const next = async () => ((await db.migrate.list()) as [unknown[], string[]])[1][0];
      for (let i = 0; i < 20 && (await next()) !== '017_moderation_rerank'; i++) await db.migrate.up();
      expect(await next()).toBe('017_moderation_rerank');
      const account = await createAccount(db, 'm@example.com', 0);
      // every scope there was before 017 (images: 015, audio: 016)
      const every = [
        'chat',
        'completions',
        'embeddings',
        'models',
        'messages',
        'responses',
        'images',
        'audio',
      ] as const;
      const all = await createKey(db, { accountId: account.id, scopes: [...every] });
      const some = await createKey(db, { accountId: account.id, scopes: ['chat', 'embeddings'] });
      const noAudio = await createKey(db, { accountId: account.id, scopes: [...every.filter((s) => s !== 'audio')] });
      await db.migrate.up();
      const scopes = async (id: number) => (await db('api_keys').where('id', id).first()).scopes;
      expect(await scopes(all.key.id)).toBe([...every, 'moderations', 'rerank'].join(','));
      expect(await scopes(some.key.id)).toBe('chat,embeddings');
      expect(await scopes(noAudio.key.id)).toBe(every.filter((s) => s !== 'audio').join(','));
      expect(Object.keys(await db('usage_records').columnInfo())).toEqual(
        expect.arrayContaining(['moderation_requests', 'search_units']),
      );
    } finally {
      await db.destroy();
    }
  });
});
