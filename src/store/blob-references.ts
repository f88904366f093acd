import fs from 'node:fs';
import type { Db } from './database.js';
import { blobPathIn } from '../fs/blob-path.js';

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
 * Every blob a row of the database names, read in one transaction (a consistent snapshot): a large write's content
 * (step_bodies), the backups of every file a step changed (file_backups), the contents a preview's changeset keeps
 * and its dry run's record (a command's preview), and what a result lists. What no row names, and this process
 * does not hold (BlobStore.heldSince), is an orphan: see blob-collector.ts. Reading fails as a whole (a damaged
 * row): the collector then takes nothing.
 */
export function blobsNamedByRows(db: Db): NamedBlobs {
  return db.transaction(() => {
    const named = new Set<string>();
    const add = (hash: unknown) => {
      if (typeof hash === 'string' && hash.length === 64) named.add(hash);
    };
    const column = (sql: string) => {
      for (const hash of rowsOr<{ hash: unknown }>(db, sql)) add(hash.hash);
    };
    column('SELECT content_blob AS hash FROM step_bodies WHERE content_blob IS NOT NULL');
    column('SELECT pre_hash AS hash FROM file_backups WHERE pre_hash IS NOT NULL');
    column('SELECT post_hash AS hash FROM file_backups WHERE post_hash IS NOT NULL');
    const dryRunRecords: string[] = [];
    for (const source of [...PREVIEW_SOURCES, 'SELECT result_json AS json FROM steps WHERE result_json IS NOT NULL']) {
      column(`SELECT json_extract(file.value, '$.preHash') AS hash FROM (${source}) AS kept, json_each(kept.json, '$.files') AS file`);
      column(`SELECT json_extract(file.value, '$.postHash') AS hash FROM (${source}) AS kept, json_each(kept.json, '$.files') AS file`);
    }
    for (const source of PREVIEW_SOURCES)
      for (const row of rowsOr<{ hash: unknown }>(db, `SELECT json_extract(kept.json, '$.dryRun.blob') AS hash FROM (${source}) AS kept`))
        if (typeof row.hash === 'string') {
          add(row.hash);
          dryRunRecords.push(row.hash);
        }
    return { named, dryRunRecords };
  })();
}
