/** How a settlement batch's rows are split into INSERTs on MySQL (settlementTx.ts mysqlParts). */
import { mysqlParts } from '../../src/billing/settlementTx';

test('every row once, at most 128 a statement, a few statements, and only eight row counts whatever the batch', () => {
  const shapes = new Set<number>();
  for (let n = 0; n <= 1200; n++) {
    const parts = mysqlParts(n);
    expect(parts.reduce((a, b) => a + b, 0)).toBe(n);
    expect(Math.max(0, ...parts)).toBeLessThanOrEqual(128);
    expect(parts.length).toBeLessThanOrEqual(Math.floor(n / 128) + 7);
    for (const p of parts) shapes.add(p);
  }
  expect([...shapes].sort((a, b) => a - b)).toEqual([1, 2, 4, 8, 16, 32, 64, 128]);
  expect(mysqlParts(45)).toEqual([32, 8, 4, 1]);
  expect(mysqlParts(300, 200)).toEqual([200, 64, 32, 4]);
});
