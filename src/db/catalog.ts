/**
 * The catalog's revisions (migration 021): append-only rows, the newest is the catalog. This module stores and reads
 * documents as text; what is in them is services/catalog.ts's business.
 */
import type { Knex } from 'knex';
import { isUniqueViolation } from './index';
import { insertId } from './dialect';

export interface Revision {
  id: number;
  document: string;
  actor: string;
  created_at: number;
}

/** The newest revision's id, 0 when there is none: the cheap query every process polls. */
export async function newestRevisionId(db: Knex): Promise<number> {
  const row = await db('catalog_revisions').max({ id: 'id' }).first();
  return Number(row?.id ?? 0);
}

export async function readRevision(db: Knex, id?: number): Promise<Revision | null> {
  const q = db('catalog_revisions');
  const row = await (id === undefined ? q.orderBy('id', 'desc') : q.where({ id })).first();
  return row
    ? {
        id: Number(row.id),
        document: String(row.document),
        actor: String(row.actor),
        created_at: Number(row.created_at),
      }
    : null;
}

/** Another change was written on top of the same revision first. */
export class StaleRevision extends Error {
  override name = 'StaleRevision';
}

/**
 * Writes a document as the revision after `parent` (0: the first), in one insert: `parent` is unique, so of two
 * changes based on the same revision the second throws StaleRevision and nothing of it is written. `also` runs in the
 * same transaction (the change's audit record): the revision is written with it or not at all, so no change is ever
 * live without its record, and no record tells of a change that was not made.
 */
export async function writeRevision(
  db: Knex,
  parent: number,
  document: string,
  actor: string,
  also?: (trx: Knex.Transaction, id: number) => Promise<void>,
): Promise<number> {
  try {
    return await db.transaction(async (trx) => {
      const id = await insertId(trx, 'catalog_revisions', {
        parent,
        document,
        actor: actor.slice(0, 200),
        created_at: Date.now(),
      });
      await also?.(trx, Number(id));
      return Number(id);
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw new StaleRevision(`the catalog changed after revision ${parent}`);
    throw e;
  }
}

/**
 * Rewrites every revision's document with `rewrite` in one transaction (re-encrypting the credentials under a new
 * key): all of them or, on any failure, none; `also` (the audit record) in the same transaction. Returns how many were
 * rewritten.
 */
export async function rewriteRevisions(
  db: Knex,
  rewrite: (document: string) => string,
  also?: (trx: Knex.Transaction, rewritten: number) => Promise<void>,
): Promise<number> {
  return db.transaction(async (trx) => {
    const rows = await trx('catalog_revisions').select('id', 'document').orderBy('id').forUpdate();
    for (const r of rows)
      await trx('catalog_revisions')
        .where({ id: r.id })
        .update({ document: rewrite(r.document) });
    await also?.(trx, rows.length);
    return rows.length;
  });
}
