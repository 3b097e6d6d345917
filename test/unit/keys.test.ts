/** API keys: format, hashing, storage without the secret, and who gets authenticated. Runs on a private SQLite file. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { createAccount } from '../../src/accounts/accounts';
import {
  KeyError,
  authenticate,
  createKey,
  generateKey,
  hashKey,
  keyAllowsModel,
  setKeyEnabled,
} from '../../src/accounts/keys';
import { SCOPES, type Scope } from '../../src/contract';
import { connect, migrate } from '../../src/db';

let dir: string;
let db: Knex;
let n = 0;
const newAccount = (credits = 0) => createAccount(db, `keys-${++n}@example.com`, credits);

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-keys-'));
  db = connect(`sqlite:${path.join(dir, 'keys.db')}`);
  await migrate(db);
});

afterAll(async () => {
  await db?.destroy();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('generateKey', () => {
  test('is sk- followed by 48 base62 characters', () => {
    for (let i = 0; i < 200; i++) expect(generateKey()).toMatch(/^sk-[A-Za-z0-9]{48}$/);
  });

  test('never repeats, and uses the whole alphabet', () => {
    const keys = Array.from({ length: 5000 }, generateKey);
    expect(new Set(keys).size).toBe(keys.length);
    const seen = new Set(keys.join('').replace(/sk-/g, ''));
    expect(seen.size).toBe(62);
  });
});

describe('hashKey', () => {
  test('is the SHA-256 of the key in hex', () => {
    expect(hashKey('sk-abc')).toBe(crypto.createHash('sha256').update('sk-abc').digest('hex'));
    expect(hashKey('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(hashKey('sk-abc')).toMatch(/^[0-9a-f]{64}$/);
    // a string is hashed as UTF-8, as createHash().update(string) did: hashes stored before stay valid
    expect(hashKey('clé-ü')).toBe(crypto.createHash('sha256').update(Buffer.from('clé-ü', 'utf8')).digest('hex'));
  });
});

describe('createKey', () => {
  test('returns the secret once; the database holds only its hash and a short prefix', async () => {
    const account = await newAccount();
    const { key, secret } = await createKey(db, { accountId: account.id, name: 'ci' });
    expect(secret).toMatch(/^sk-[A-Za-z0-9]{48}$/);
    expect(key).toMatchObject({
      account_id: account.id,
      name: 'ci',
      prefix: secret.slice(0, 9),
      enabled: true,
      quota_micros: null,
      used_micros: 0,
      models: null,
      scopes: [...SCOPES], // every scope the contract lists
      last_used_at: null,
    });
    expect(JSON.stringify(key)).not.toContain(secret);
    const row = await db('api_keys').where('id', key.id).first();
    expect(row.hash).toBe(hashKey(secret));
    expect(Object.values(row).some((v) => typeof v === 'string' && v.includes(secret.slice(9)))).toBe(false);
  });

  test('stores models, scopes, quota and the disabled flag', async () => {
    const account = await newAccount();
    const { key } = await createKey(db, {
      accountId: account.id,
      models: ['gpt-4o-mini', 'mock-chat'],
      scopes: ['chat'],
      quotaMicros: 5_000_000,
      enabled: false,
    });
    expect(key).toMatchObject({
      models: ['gpt-4o-mini', 'mock-chat'],
      scopes: ['chat'],
      quota_micros: 5_000_000,
      enabled: false,
    });
    expect(keyAllowsModel(key, 'mock-chat')).toBe(true);
    expect(keyAllowsModel(key, 'gpt-4o')).toBe(false);
  });

  test('refuses bad scopes, quotas, model lists and unknown accounts', async () => {
    const account = await newAccount();
    await expect(createKey(db, { accountId: account.id, scopes: ['admin' as never] })).rejects.toThrow(KeyError);
    await expect(createKey(db, { accountId: account.id, scopes: [] })).rejects.toThrow(KeyError);
    await expect(createKey(db, { accountId: account.id, quotaMicros: -1 })).rejects.toThrow('quota must be >= 0');
    await expect(createKey(db, { accountId: account.id, models: [] })).rejects.toThrow(KeyError);
    await expect(createKey(db, { accountId: 987654321 })).rejects.toThrow('no account 987654321');
  });
});

describe('authenticate', () => {
  let accountId: number;
  let secret: string;
  let keyId: number;

  beforeAll(async () => {
    accountId = (await newAccount(1_000_000)).id;
    ({
      secret,
      key: { id: keyId },
    } = await createKey(db, { accountId, scopes: ['chat', 'models'] }));
  });

  test('a good key gives its principal', async () => {
    const p = await authenticate(db, `Bearer ${secret}`);
    expect(p).not.toBeNull();
    expect(p!.accountId).toBe(accountId);
    expect(p!.key).toMatchObject({ id: keyId, account_id: accountId, enabled: true, scopes: ['chat', 'models'] });
  });

  test('the scheme is case-insensitive and surrounding spaces are tolerated', async () => {
    expect((await authenticate(db, `bearer ${secret}`))?.key.id).toBe(keyId);
    expect((await authenticate(db, `Bearer   ${secret}  `))?.key.id).toBe(keyId);
  });

  test.each([
    ['no header', undefined],
    ['an empty header', ''],
    ['a bare key without Bearer', 'SECRET'],
    ['another scheme', 'Basic SECRET'],
    ['Bearer without a key', 'Bearer '],
    ['a key followed by junk', 'Bearer SECRET extra'],
    ['a key that is too short', 'Bearer sk-abc'],
    ['a key without the sk- prefix', 'Bearer PLAIN'],
  ])('null for %s', async (_what, header) => {
    const h = header?.replace('SECRET', secret).replace('PLAIN', secret.slice(3));
    expect(await authenticate(db, h)).toBeNull();
  });

  test('null for a well-formed key nobody issued', async () => {
    expect(await authenticate(db, `Bearer ${generateKey()}`)).toBeNull();
    expect(await authenticate(db, `Bearer ${secret.slice(0, -1)}${secret.endsWith('a') ? 'b' : 'a'}`)).toBeNull();
  });

  test('null for a disabled key, and the principal again once it is enabled', async () => {
    await setKeyEnabled(db, keyId, false);
    expect(await authenticate(db, `Bearer ${secret}`)).toBeNull();
    await setKeyEnabled(db, keyId, true);
    expect((await authenticate(db, `Bearer ${secret}`))?.key.id).toBe(keyId);
  });

  test('null for an enabled key of a disabled account', async () => {
    const other = await newAccount();
    const { secret: s } = await createKey(db, { accountId: other.id });
    expect(await authenticate(db, `Bearer ${s}`)).not.toBeNull();
    await db('accounts').where('id', other.id).update({ status: 'disabled' });
    expect(await authenticate(db, `Bearer ${s}`)).toBeNull();
    // The other account's key is unaffected.
    expect((await authenticate(db, `Bearer ${secret}`))?.accountId).toBe(accountId);
  });

  test('setKeyEnabled on an unknown key fails', async () => {
    await expect(setKeyEnabled(db, 987654321, false)).rejects.toThrow('no key 987654321');
  });
});

describe('scopes added after keys were made (images, migration 015; audio, 016; moderations and rerank, 017)', () => {
  test('a key that had every scope there was gets them; a key whose scopes were chosen keeps them', async () => {
    const old = connect(`sqlite:${path.join(dir, 'before-audio.db')}`);
    try {
      while ((await old.migrate.currentVersion()) !== '014') await old.migrate.up();
      const owner = await createAccount(old, 'before-audio@example.com', 0);
      const before = ['chat', 'completions', 'embeddings', 'models', 'messages', 'responses'] as Scope[];
      const every = await createKey(old, { accountId: owner.id, scopes: before });
      const chosen = await createKey(old, { accountId: owner.id, scopes: ['chat', 'models'] });
      await old.migrate.up(); // 015: images
      expect(await old.migrate.currentVersion()).toBe('015');
      // made once images existed, with every scope but images: chosen, so it gets neither audio nor what came after
      const noImages = await createKey(old, { accountId: owner.id, scopes: before });
      const withImages = await createKey(old, { accountId: owner.id, scopes: [...before, 'images'] });
      await old.migrate.up(); // 016: audio
      expect(await old.migrate.currentVersion()).toBe('016');
      // made once audio existed: without audio it was chosen; with every scope there was, it gets the ones after
      const noAudio = await createKey(old, { accountId: owner.id, scopes: [...before, 'images'] });
      const withAudio = await createKey(old, { accountId: owner.id, scopes: [...before, 'images', 'audio'] });
      await migrate(old);
      const scopes = async (id: number) => (await old('api_keys').where('id', id).first()).scopes;
      const all = [...before, 'images', 'audio', 'moderations', 'rerank'].join(',');
      expect(await scopes(every.key.id)).toBe(all);
      expect(await scopes(chosen.key.id)).toBe('chat,models');
      expect(await scopes(noImages.key.id)).toBe(before.join(','));
      expect(await scopes(withImages.key.id)).toBe(all);
      expect(await scopes(noAudio.key.id)).toBe([...before, 'images'].join(','));
      expect(await scopes(withAudio.key.id)).toBe(all);
      // every scope the contract lists: a key that had them all before has them all now
      expect([...SCOPES].sort()).toEqual(all.split(',').sort());
    } finally {
      await old.destroy();
    }
  });
});
