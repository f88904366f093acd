import fs from 'node:fs';
import path from 'node:path';
import { BLOB_NAME } from '../fs/blob-path.js';
import type { NamedBlobs } from '../store/blob-references.js';
import type { BlobStore } from './blob-store.js';

/*
 * Orphan blobs: a large write's content is written (and fsynced) as a blob before the row that names it commits
 * (step-contents.ts), a backup before its step's record, a dry run's changeset before its preview. A host killed in
 * between leaves a blob no row names, which nothing would ever read or remove. The collector takes those, and only
 * those: a blob goes when no row names it (one consistent read of the database, blob-references.ts), this process
 * neither holds it (a proposal's lease until its commit settles) nor put it within the grace or since the sweep
 * began, and it is older than the grace or than this host (written by a process that is gone: the data directory's
 * lock lets one writer at a time). Whatever cannot be read or decided is kept.
 */

export interface OrphanSweepOptions {
  /** A blob younger than this (by its mtime, and by this process's own puts) is kept even when no row names it. */
  graceMs: number;
  /** When this process began to write blobs: an older blob was written by a process that is gone. */
  hostStartedAtMs: number;
}

export interface OrphanSweepOutcome {
  /** The blobs taken, by hash. */
  removed: string[];
  /** Temporary files of blob writes a killed process left, taken too. */
  removedTemporary: number;
  /** Blobs looked at and kept. */
  kept: number;
}

/** A blob write's temporary sibling (atomic-write.ts: `.NAME.executor-XXXX.tmp`). */
const TEMPORARY = /^\.[0-9a-f]{62}\.executor-[0-9a-f]+\.tmp$/;
/** A temporary file is another process's only when it is older than this host by more than this (coarse file clocks). */
const TEMPORARY_MARGIN_MS = 2000;
/** Files looked at between turns of the event loop: a sweep never holds the host. */
const FILES_PER_TURN = 200;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

async function listed(dir: string): Promise<string[]> {
  try {
    return await fs.promises.readdir(dir);
  } catch {
    return [];
  }
}

function mtimeOf(file: string): number | null {
  try {
    return fs.statSync(file).mtimeMs;
  } catch {
    return null;
  }
}

/** The hashes a dry run's record names (its changeset's contents); none when it cannot be read. */
function namedInRecord(blobs: BlobStore, hash: string): string[] {
  try {
    return (
      blobs
        .get(hash)
        .toString('utf8')
        .match(/[0-9a-f]{64}/g) ?? []
    );
  } catch {
    return [];
  }
}

/**
 * One sweep of the backups folder. `readNamed` reads what rows name (after the listing, so a blob listed and named
 * by a row committed meanwhile is either named there or was put by this process since the sweep began), and the
 * dry-run records among them that it has not read itself;
 * `stillOpen` stops the sweep when the host closes.
 */
export async function collectOrphanBlobs(
  blobs: BlobStore,
  readNamed: () => NamedBlobs | Promise<NamedBlobs>,
  options: OrphanSweepOptions & { stillOpen?: () => boolean },
): Promise<OrphanSweepOutcome> {
  const stillOpen = options.stillOpen ?? (() => true);
  const sweepStart = Date.now();
  const protectedSince = sweepStart - options.graceMs;
  blobs.forgetPutsBefore(protectedSince);
  const outcome: OrphanSweepOutcome = { removed: [], removedTemporary: 0, kept: 0 };
  const candidates: { hash: string; file: string }[] = [];
  const temporaries: string[] = [];
  for (const folder of await listed(blobs.folder)) {
    if (!/^[0-9a-f]{2}$/.test(folder)) continue;
    for (const name of await listed(path.join(blobs.folder, folder))) {
      const file = path.join(blobs.folder, folder, name);
      if (BLOB_NAME.test(folder + name)) candidates.push({ hash: folder + name, file });
      else if (TEMPORARY.test(name)) temporaries.push(file);
    }
  }
  if (!stillOpen()) return outcome;
  // Read on a thread of its own by the host (orphan-sweeps.ts): megabytes of previews' JSON walked, records read.
  const { named, dryRunRecords } = await readNamed();
  if (!stillOpen()) return outcome;
  for (const record of dryRunRecords) for (const hash of namedInRecord(blobs, record)) named.add(hash);
  let looked = 0;
  for (const { hash, file } of candidates) {
    if (++looked % FILES_PER_TURN === 0) await nextTurn();
    if (!stillOpen()) return outcome;
    // Checked, then removed, in one stretch of this thread: no put or lease of this process comes in between.
    const mtime = mtimeOf(file);
    const old = mtime !== null && (mtime < options.hostStartedAtMs || Date.now() - mtime > options.graceMs);
    if (named.has(hash) || blobs.heldSince(hash, protectedSince) || !old) {
      outcome.kept += 1;
      continue;
    }
    try {
      fs.unlinkSync(file);
      outcome.removed.push(hash);
    } catch {
      outcome.kept += 1;
    }
  }
  for (const file of temporaries) {
    const mtime = mtimeOf(file);
    if (mtime === null || mtime >= options.hostStartedAtMs - TEMPORARY_MARGIN_MS) continue;
    try {
      fs.unlinkSync(file);
      outcome.removedTemporary += 1;
    } catch {
      // Gone already, or not ours to remove: kept.
    }
  }
  return outcome;
}
