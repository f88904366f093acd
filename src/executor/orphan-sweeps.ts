import { collectOrphanBlobs, type OrphanSweepOutcome } from '../backup/blob-collector.js';
import { toErrorShape } from '../domain/errors.js';
import path from 'node:path';
import { blobsNamedByRows, blobsNamedByRowsOffThread, type NamedBlobs } from '../store/blob-references.js';
import { DATABASE_FILE } from '../store/database.js';
import type { StepDesk } from './step-desk.js';

/** How a host collects orphan blobs (src/backup/blob-collector.ts): once soon after it opens, then every `everyMs`. */
export interface OrphanSweepSchedule {
  everyMs: number;
  /** An unnamed blob younger than this is kept (a row about to name it may not be committed yet). */
  graceMs: number;
}

/** The host's default: a sweep at start (what a killed host left), then every six hours, keeping the last hour's blobs. */
export const HOST_ORPHAN_SWEEPS: OrphanSweepSchedule = { everyMs: 6 * 3600 * 1000, graceMs: 3600 * 1000 };

/** The sweeps of one host: never two at once, never after close, and a failed one only says so (nothing is taken). */
export class OrphanSweeps {
  private running: Promise<OrphanSweepOutcome> | null = null;
  private timers: NodeJS.Timeout[] = [];
  /** Stops a read under way on its thread when the host closes (its connection must not outlive the host's). */
  private readonly closing = new AbortController();

  constructor(
    private readonly desk: StepDesk,
    private readonly schedule: OrphanSweepSchedule,
  ) {}

  start(): void {
    const soon = setTimeout(() => void this.sweep().catch(() => undefined), 0);
    const every = setInterval(() => void this.sweep().catch(() => undefined), this.schedule.everyMs);
    soon.unref();
    every.unref();
    this.timers = [soon, every];
  }

  /** One sweep now (or the one under way); `graceMs` overrides the schedule's (tests). */
  sweep(graceMs = this.schedule.graceMs): Promise<OrphanSweepOutcome> {
    this.running ??= this.sweepOnce(graceMs).finally(() => (this.running = null));
    return this.running;
  }

  private async sweepOnce(graceMs: number): Promise<OrphanSweepOutcome> {
    const { desk } = this;
    try {
      const outcome = await collectOrphanBlobs(desk.blobs, () => this.readNamed(), {
        graceMs,
        hostStartedAtMs: desk.blobs.createdAtMs,
        stillOpen: () => !desk.closed && !desk.watchLost(),
      });
      if (outcome.removed.length > 0 || outcome.removedTemporary > 0)
        desk.log(
          `executor: removed ${outcome.removed.length} orphan blob(s) no step names (left by a host stopped between writing a blob and recording it)` +
            (outcome.removedTemporary ? ` and ${outcome.removedTemporary} unfinished blob write(s)` : ''),
        );
      return outcome;
    } catch (error) {
      desk.log(`executor: collecting orphan blobs failed, nothing was removed after the failure: ${toErrorShape(error).message}`);
      throw error;
    }
  }

  /**
   * What the rows name, read on a thread of its own over the database file the host opened (its identity, from the
   * data directory's watch); on the host's thread only where there is no watch to say which file that is.
   */
  private async readNamed(): Promise<NamedBlobs> {
    const { desk } = this;
    const identity = desk.databaseIdentity();
    if (identity === null) return blobsNamedByRows(desk.db);
    const named = await blobsNamedByRowsOffThread(
      { file: path.join(desk.dataDir, DATABASE_FILE), identity, blobsDir: desk.blobs.folder },
      this.closing.signal,
    );
    return { named, dryRunRecords: [] };
  }

  close(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers = [];
    this.closing.abort();
  }
}
