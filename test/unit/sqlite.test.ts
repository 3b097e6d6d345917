/**
 * The embedded database's driver on each Node (src/db/sqlite.ts): better-sqlite3 12 on Node 20, 13 (Node-API) from
 * 22 on, where 12 aborts the process once a garbage-collected statement is freed (Node 24.19 and later). `make test`
 * runs this file on Node 20, 22 and 24 (scripts/other-node.sh).
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { connect } from '../../src/db';
import { sqlitePackage } from '../../src/db/sqlite';

test('Node 20 loads better-sqlite3 12; Node 22 and 24 load 13', () => {
  expect(['20.20.2', '21.7.3', '22.0.0', '22.22.0', '24.21.0', '26.1.0'].map((v) => sqlitePackage(v))).toEqual([
    'better-sqlite3',
    'better-sqlite3',
    'better-sqlite3-napi',
    'better-sqlite3-napi',
    'better-sqlite3-napi',
    'better-sqlite3-napi',
  ]);
  const major = Number(process.versions.node.split('.')[0]);
  const version = require(`${sqlitePackage()}/package.json`).version as string;
  expect(version.split('.')[0]).toBe(major >= 22 ? '13' : '12');
});

test('statements freed by the garbage collector while work goes on leave the process running', () => {
  // 12 on Node 24.21 aborts here ("Assertion failed: (env) != nullptr", exit status 134): the collections that
  // allocation starts free the statements no longer referenced (an explicit gc() from a script does not trip it)
  const script = `
    const Database = require(${JSON.stringify(sqlitePackage())});
    const db = new Database(':memory:');
    let kept = [];
    for (let i = 0; i < 100000; i++) {
      db.prepare('SELECT ' + (i % 50)).get();
      kept.push(new Array(10));
      if (kept.length > 1000) kept = [];
    }
    process.stdout.write(String(db.prepare('SELECT 7 AS n').get().n));`;
  const out = execFileSync(process.execPath, ['-e', script], {
    cwd: path.join(__dirname, '..', '..'),
    env: { PATH: process.env.PATH },
  });
  expect(out.toString()).toBe('7');
});

test("knex's SQLite dialect is loaded by a SQLite configuration, not by the database module", () => {
  const loaded = execFileSync(
    process.execPath,
    [
      '--require',
      'tsx/cjs',
      '-e',
      `const sqlite = () => Object.keys(require.cache).filter((m) => /knex.lib.dialects.(better-)?sqlite3/.test(m)).length;
       const db = require('./src/db');
       db.knexConfig('mysql://root@127.0.0.1:3306/test');
       const before = sqlite();
       db.knexConfig('sqlite::memory:');
       process.stdout.write(JSON.stringify([before, sqlite()]));`,
    ],
    { cwd: path.join(__dirname, '..', '..'), env: { PATH: process.env.PATH } },
  );
  const [before, after] = JSON.parse(loaded.toString());
  expect(before).toBe(0); // a gateway on MySQL or PostgreSQL never needs it
  expect(after).toBeGreaterThan(0);
});

test('the gateway reads and writes its embedded database through the driver this Node runs', async () => {
  const db = connect('sqlite::memory:');
  try {
    await db.schema.createTable('t', (t) => t.integer('n'));
    await db('t').insert([{ n: 1 }, { n: 2 }]);
    expect(await db('t').sum({ s: 'n' })).toEqual([{ s: 3 }]);
  } finally {
    await db.destroy();
  }
});
