import type { Actor } from '../../domain/actor.js';
import { ExecutorError } from '../../domain/errors.js';
import { WITHDRAWABLE_STATUSES, type StepStatus } from '../../domain/state-machine.js';
import type { HeldRecordsReserve } from '../../store/held-records-reserve.js';
import { isNoSpace } from '../../store/storage-errors.js';
import type { HeldEntry } from '../held-entries.js';
import { SYSTEM_ACTOR, type StepDesk } from '../step-desk.js';

/** What writing the held records sets off elsewhere: the stop switch disables every skill in its own transaction. */
export interface HeldRecordsReplayPort {
  disableSkills(actor: Actor): { skillId: string }[];
}

const REVERTIBLE_FROM: StepStatus[] = ['executed', 'failed', 'interrupted', 'cancelled'];

/**
 * At open, before restart recovery and before anything runs: the records a host killed while held on
 * a full disk kept in its reserve (held-records-reserve.ts) are written as that host would have
 * written them, each marked `heldOnFullDisk` with the time it was really decided. A rejected or
 * cancelled step ends rejected (never taken up as approved), a pause stops all agents again, a step
 * whose effect happened ends executed or failed as it really ended (not `interrupted`), and a revert
 * whose files are back reads reverted. A record the step has moved past meanwhile (already written
 * before the kill) changes nothing. One `storage.held_records_recorded` record lists them all; then
 * their slots are cleared. On a disk still full nothing of it is written and the open fails
 * STORAGE_FULL: the reserve keeps them for the next try.
 */
export class HeldRecordsReplay {
  constructor(
    private readonly desk: StepDesk,
    private readonly port: HeldRecordsReplayPort,
  ) {}

  replayAtOpen(reserve: HeldRecordsReserve): void {
    const entries = reserve.entries();
    if (entries.length === 0) return;
    const said: Record<string, unknown>[] = [];
    this.desk.db.transaction(() => {
      for (const { value } of entries) said.push(this.replay(value as HeldEntry));
      this.desk.audit.append({ kind: 'storage.held_records_recorded', actor: SYSTEM_ACTOR, detail: { records: said } });
    })();
    for (const { slot } of entries) reserve.clear(slot);
    this.desk.log(`executor: recorded ${entries.length} record(s) a host stopped on a full disk had kept (${reserve.file})`);
  }

  /** One held record written, in a savepoint of its own: one that cannot apply is said so and leaves the rest. */
  private replay(entry: HeldEntry): Record<string, unknown> {
    const what = { kind: entry.kind, ...('stepId' in entry ? { stepId: entry.stepId } : {}) };
    try {
      const done = this.desk.db.transaction(() => this.apply(entry))();
      return { ...what, recorded: done === null, ...(done ? { skipped: done } : {}) };
    } catch (error) {
      if (isNoSpace(error)) throw error;
      return { ...what, recorded: false, skipped: `it could not be written: ${(error as Error).message}` };
    }
  }

  /** Writes the record; answers null, or why it was not needed. */
  private apply(entry: HeldEntry): string | null {
    const marks = { heldOnFullDisk: true, recordedAtStart: true };
    switch (entry.kind) {
      case 'pause': {
        if (this.desk.paused) return 'the host was paused already';
        const disabled = this.port.disableSkills(entry.pause.by);
        this.desk.hostState.setPause(entry.pause);
        this.desk.audit.append({
          kind: 'host.paused',
          actor: entry.pause.by,
          detail: {
            reason: entry.pause.reason,
            pausedAt: entry.pause.pausedAt,
            disabledSkills: disabled.map((skill) => skill.skillId),
            ...marks,
          },
        });
        this.desk.paused = entry.pause;
        return null;
      }
      case 'withdraw': {
        const status = this.statusOf(entry.stepId);
        if (status === null) return 'the step is not in the database';
        if (!WITHDRAWABLE_STATUSES.includes(status)) return `the step is ${status}`;
        if (entry.to === 'cancelled') {
          this.desk.steps.transition(
            entry.stepId,
            'cancelled',
            entry.actor,
            { error: { code: 'STEP_CANCELLED', message: entry.reason }, finishedAt: entry.at },
            { detail: { phase: 'realRun', beforeAnyEffect: true, decidedAt: entry.at, ...marks }, expectFrom: ['approved'] },
          );
          return null;
        }
        this.desk.steps.transition(
          entry.stepId,
          'rejected',
          entry.actor,
          { rejectedReason: entry.reason },
          {
            ...(entry.what === 'cancel' ? { kind: 'step.cancelled' as const } : {}),
            detail: { reason: entry.reason, decidedAt: entry.at, ...marks },
            expectFrom: [...WITHDRAWABLE_STATUSES],
          },
        );
        return null;
      }
      case 'outcome': {
        const status = this.statusOf(entry.stepId);
        if (status !== 'running') return status === null ? 'the step is not in the database' : `the step is ${status}`;
        const outcome = entry.applied ? { result: entry.result ?? { outcomeCut: true } } : { error: entry.error };
        this.desk.steps.transition(
          entry.stepId,
          entry.applied ? 'executed' : 'failed',
          entry.actor,
          { ...outcome, finishedAt: entry.finishedAt },
          { detail: { ...outcome, ...marks, ...(entry.cut ? { cut: true } : {}) }, expectFrom: ['running'] },
        );
        return null;
      }
      case 'revert': {
        const status = this.statusOf(entry.stepId);
        if (status === null || !REVERTIBLE_FROM.includes(status))
          return status === null ? 'the step is not in the database' : `the step is ${status}`;
        this.desk.steps.transition(
          entry.stepId,
          'reverted',
          entry.actor,
          { revertedAt: entry.revertedAt, revertOutcome: entry.revertOutcome },
          {
            kind: 'step.reverted',
            detail: { ...entry.detail, ...marks, ...(entry.cut ? { cut: true } : {}) },
            expectFrom: REVERTIBLE_FROM,
          },
        );
        return null;
      }
      default:
        return `a record of a kind this version does not know (${String((entry as { kind?: unknown }).kind)})`;
    }
  }

  private statusOf(stepId: string): StepStatus | null {
    try {
      return this.desk.steps.currentStatus(stepId);
    } catch (error) {
      if (error instanceof ExecutorError && error.code === 'NOT_FOUND') return null;
      throw error;
    }
  }
}
