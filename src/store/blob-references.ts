import fs from 'node:fs';
import type { Db } from './database.js';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { BLOB_NAME, blobPathIn } from '../fs/blob-path.js';

/** A blob the database names that the backups folder does not hold: a large write's content, or a backup of a file. */
export interface MissingBlob {
  stepId: string;
  blob: string;
  what: 'content' | 'backup';
}

/** Rows of a table that a database made before it lacks, read as none (verify reads databases of every version). */
function rowsOr<T>(db: Db, sql: string): T[] {
  try {
    return db.prepare(sql).all() as T[];
  } catch (error) {
    if (/no such (table|column)/.test((error as Error).message)) return [];
    throw error;
  }
}

/**
 * The blobs the steps name (their content, their backups) that are not in the backups folder: a database copied without
 * blobs/, or a blob deleted. A stat each, never a read: audit verify says which steps lost what beside the log's own
 * verdict, since the log stays whole while a step's content or its backup is gone.
 */
export function missingBlobs(db: Db, blobsDir: string): MissingBlob[] {
  const missing: MissingBlob[] = [];
  const absent = (hash: string) => !fs.existsSync(blobPathIn(blobsDir, hash));
  for (const row of rowsOr<{ step_id: string; content_blob: string }>(
    db,
    'SELECT step_id, content_blob FROM step_bodies WHERE content_blob IS NOT NULL ORDER BY step_id',
  ))
    if (absent(row.content_blob)) missing.push({ stepId: row.step_id, blob: row.content_blob, what: 'content' });
  for (const row of rowsOr<{ step_id: string; hash: string }>(
    db,
    `SELECT step_id, pre_hash AS hash FROM file_backups WHERE pre_hash IS NOT NULL
     UNION SELECT step_id, post_hash AS hash FROM file_backups WHERE post_hash IS NOT NULL ORDER BY step_id`,
  ))
    if (absent(row.hash)) missing.push({ stepId: row.step_id, blob: row.hash, what: 'backup' });
  return missing;
}

/** missingBlobs in a sentence for audit verify's warnings; null when nothing is missing. */
export function missingBlobsWords(missing: readonly MissingBlob[]): string | null {
  if (missing.length === 0) return null;
  const steps = (what: MissingBlob['what']) => [...new Set(missing.filter((blob) => blob.what === what).map((blob) => blob.stepId))];
  const content = steps('content');
  const backups = steps('backup');
  const listed = (ids: string[]) => `${ids.slice(0, 10).join(', ')}${ids.length > 10 ? ` and ${ids.length - 10} more` : ''}`;
  const parts = [
    content.length
      ? `the content of ${content.length} large write(s) is lost (${listed(content)}): they show "content lost" and can never be approved or run`
      : '',
    backups.length ? `backups of ${backups.length} step(s) are missing (${listed(backups)}): a revert that needs them refuses` : '',
  ].filter(Boolean);
  return `the backups folder (blobs/) lacks ${missing.length} blob(s) the database names: ${parts.join('; ')}. The audit log itself is not affected; restore blobs/ from a backup of the data directory to get them back`;
}

/** The blobs rows name, and the dry-run records among them (whose own text names more blobs: a changeset's contents). */
export interface NamedBlobs {
  named: Set<string>;
  dryRunRecords: string[];
}

/** A preview's columns, wherever it is kept: in its row (small) or in step_previews (large). */
const PREVIEW_SOURCES = [
  'SELECT preview_json AS json FROM steps WHERE preview_json IS NOT NULL',
  'SELECT preview_json AS json FROM step_previews',
];

/**
 * The queries whose `hash` column names a blob: a large write's content (step_bodies), the backups of every file a
 * step changed (file_backups), the contents a preview's changeset keeps and what a result lists, and the dry-run
 * records of commands' previews (`records`: their own text names more blobs). Read by the host's connection or by a
 * thread of its own (blobsNamedByRowsOffThread), the same queries.
 */
const NAMED_QUERIES: readonly { sql: string; records?: true }[] = [
  { sql: 'SELECT content_blob AS hash FROM step_bodies WHERE content_blob IS NOT NULL' },
  { sql: 'SELECT pre_hash AS hash FROM file_backups WHERE pre_hash IS NOT NULL' },
  { sql: 'SELECT post_hash AS hash FROM file_backups WHERE post_hash IS NOT NULL' },
  ...[...PREVIEW_SOURCES, 'SELECT result_json AS json FROM steps WHERE result_json IS NOT NULL'].flatMap((source) => [
    { sql: `SELECT json_extract(file.value, '$.preHash') AS hash FROM (${source}) AS kept, json_each(kept.json, '$.files') AS file` },
    { sql: `SELECT json_extract(file.value, '$.postHash') AS hash FROM (${source}) AS kept, json_each(kept.json, '$.files') AS file` },
  ]),
  ...PREVIEW_SOURCES.map((source) => ({
    sql: `SELECT json_extract(kept.json, '$.dryRun.blob') AS hash FROM (${source}) AS kept`,
    records: true as const,
  })),
];

/**
 * Every blob a row of the database names, read in one transaction (a consistent snapshot). What no row names, and
 * this process does not hold (BlobStore.heldSince), is an orphan: see blob-collector.ts. Reading fails as a whole
 * (a damaged row): the collector then takes nothing. On the host's thread: blobsNamedByRowsOffThread reads the same.
 */
export function blobsNamedByRows(db: Db): NamedBlobs {
  return db.transaction(() => {
    const named = new Set<string>();
    const dryRunRecords: string[] = [];
    for (const query of NAMED_QUERIES)
      for (const row of rowsOr<{ hash: unknown }>(db, query.sql))
        if (typeof row.hash === 'string' && BLOB_NAME.test(row.hash)) {
          named.add(row.hash);
          if (query.records) dryRunRecords.push(row.hash);
        }
    return { named, dryRunRecords };
  })();
}

/*
 * blobsNamedByRows on a thread of its own, over a connection of its own, plain CommonJS (no build step, as the
 * checkpointer's). Every preview's JSON is walked (json_each over megabytes of changesets) and every dry-run record
 * read and hashed: on the host's thread a sweep over a data directory of many large previews held every request for
 * as long. The thread reads only (query_only), in one transaction (a snapshot, as before), and opens the database by
 * name only after checking that the name still leads to the very file the host opened (device and inode), and again
 * after reading: a data directory moved or replaced meanwhile makes the sweep take nothing.
 */
const READER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const path = require('node:path');
const { createHash } = require('node:crypto');
const { file, identity, driver, queries, blobsDir } = workerData;
const BLOB = /^[0-9a-f]{64}$/;
const sameFile = () => {
  const stat = fs.statSync(file);
  if (stat.dev !== identity.dev || stat.ino !== identity.ino) throw new Error(file + ' is no longer the database this host opened');
};
let db = null;
try {
  sameFile();
  const Database = require(driver);
  db = new Database(file, { fileMustExist: true });
  db.pragma('query_only = ON');
  db.pragma('busy_timeout = 5000');
  const named = new Set();
  const records = [];
  db.transaction(() => {
    for (const query of queries) {
      let rows;
      try {
        rows = db.prepare(query.sql).all();
      } catch (error) {
        if (/no such (table|column)/.test(String(error && error.message))) continue;
        throw error;
      }
      for (const row of rows)
        if (typeof row.hash === 'string' && BLOB.test(row.hash)) {
          named.add(row.hash);
          if (query.records) records.push(row.hash);
        }
    }
  })();
  sameFile();
  // A dry run's record names the contents of its changeset: read, checked by its hash, and searched for them.
  for (const hash of records) {
    let data;
    try {
      data = fs.readFileSync(path.join(blobsDir, hash.slice(0, 2), hash.slice(2)));
    } catch {
      continue;
    }
    if (createHash('sha256').update(data).digest('hex') !== hash) continue;
    for (const found of data.toString('utf8').match(/[0-9a-f]{64}/g) || []) named.add(found);
  }
  parentPort.postMessage({ named: [...named] });
} catch (error) {
  parentPort.postMessage({ failed: String((error && error.message) || error) });
} finally {
  if (db) db.close();
}
`;

/** Where the thread reads: the database file by name, the identity the host opened it with, and the backups folder. */
export interface OffThreadSource {
  file: string;
  identity: { dev: number; ino: number };
  blobsDir: string;
}

/**
 * Every blob the rows name and the dry-run records they name name (blob-collector.ts), read on a thread of its own;
 * rejects when it cannot be read whole (or `signal` aborts: the host closes), and the collector then takes nothing.
 */
export function blobsNamedByRowsOffThread(source: OffThreadSource, signal?: AbortSignal): Promise<Set<string>> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error('the host is closing'));
    const worker = new Worker(READER_SOURCE, {
      eval: true,
      workerData: { ...source, driver: createRequire(import.meta.url).resolve('better-sqlite3'), queries: NAMED_QUERIES },
    });
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', abort);
      outcome();
    };
    const abort = () => settle(() => (void worker.terminate(), reject(new Error('the host is closing'))));
    signal?.addEventListener('abort', abort, { once: true });
    worker.on('message', (message: { named?: string[]; failed?: string }) =>
      settle(() => (message.failed !== undefined ? reject(new Error(message.failed)) : resolve(new Set(message.named)))),
    );
    worker.on('error', (error) => settle(() => reject(error)));
    worker.on('exit', (code) => settle(() => reject(new Error(`the reader of blob names stopped (exit code ${code})`))));
  });
}
