import type { AuditEvent } from '../domain/audit-event.js';
import type { Actor } from '../domain/actor.js';
import type { ExecutorError } from '../domain/errors.js';
import type { HostPause } from '../domain/host-pause.js';
import type { StepRecord } from '../domain/step-record.js';
import type { PlanRevertPreview, PlanRevertStepPreview } from '../executor/rooms/reverts.js';
import type { Policy } from '../policy/policy-file.js';
import type { Db } from '../store/database.js';
import type { RunSkillsPort } from './skill-tools.js';

/** A revert preview of steps taken as one (a run's), newest first. */
export type StepsRevertPreview = Omit<PlanRevertPreview, 'planId'>;

/**
 * What agent runs use of the Executor, and all they may: a run's steps go through the one door
 * (submitAndSchedule, cancel), the loop waits on their step events, a run is reverted as its steps
 * taken together, and the runs tables are written in one transaction with their audit records. The
 * Executor satisfies it as it is; a run never reaches the rest of the class.
 */
export interface RunsExecutorPort extends RunSkillsPort {
  readonly dataDir: string;
  /** Whether the executor was closed (background work checks it after every wait). */
  readonly isClosed: boolean;
  /** The stop switch: while set, no run starts and no loop drives; the hostPause event says when it changes. */
  readonly paused: HostPause | null;
  getPolicy(): Policy;
  getStep(stepId: string): StepRecord;
  submitAndSchedule(planInput: unknown, actor: Actor): Promise<StepRecord[]>;
  cancel(stepId: string, actor: Actor): Promise<StepRecord>;
  previewRevertSteps(stepIds: readonly string[], leave?: readonly string[]): StepsRevertPreview;
  revertSteps(
    label: string,
    stepIds: readonly string[],
    actor: Actor,
    options: {
      force?: boolean;
      leave?: readonly string[];
      refusal: (steps: PlanRevertStepPreview[], force: boolean) => ExecutorError | null;
    },
  ): Promise<{ reverted: string[]; preview: StepsRevertPreview }>;
  transactWithAudit<T>(work: (db: Db, append: (event: AuditEvent) => number) => T): T;
  on(event: 'step', listener: (record: StepRecord) => void): unknown;
  off(event: 'step', listener: (record: StepRecord) => void): unknown;
  on(event: 'hostPause', listener: (pause: HostPause | null) => void): unknown;
  off(event: 'hostPause', listener: (pause: HostPause | null) => void): unknown;
}
