import type { Actor } from '../../domain/actor.js';
import { ExecutorError, toErrorShape } from '../../domain/errors.js';
import type { StepRecord } from '../../domain/step-record.js';
import { SYSTEM_ACTOR, type StepDesk } from '../step-desk.js';

/** The expiry timer looks again at least this often, so a policy that shortens the expiry takes hold. */
const EXPIRY_RECHECK_MS = 60 * 60 * 1000;

/** "24 hours", "90 seconds": an expiry as the person and the agent read it. */
function describeSeconds(seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600} hour${seconds === 3600 ? '' : 's'}`;
  if (seconds % 60 === 0) return `${seconds / 60} minute${seconds === 60 ? '' : 's'}`;
  return `${seconds} second${seconds === 1 ? '' : 's'}`;
}

/** What the expiry room sets off elsewhere: the plans whose steps it expired are previewed and run forward again. */
export interface ExpiryPort {
  schedulePreview(planId: string, actor: Actor): void;
}

/**
 * Consent that does not come in time: a step waiting for a decision (or holding an approval it did
 * not use) past its deadline ends `expired`, so no step waits where nobody will move it.
 */
export class ExpiryRoom {
  private timer: NodeJS.Timeout | null = null;
  /** When the armed timer fires (Infinity: none armed). */
  private nextExpiryAt = Infinity;

  constructor(
    private readonly desk: StepDesk,
    private readonly port: ExpiryPort,
  ) {}

  /**
   * Ends a step that waited for consent (or held an approval it did not use) past its expiry: `expired`,
   * audited with the reason, announced to every surface (the agent hears it through its step events).
   * Null when the step moved on meanwhile.
   */
  expire(record: StepRecord): StepRecord | null {
    const { desk } = this;
    const within = describeSeconds(desk.expirySecondsFor(record));
    const reason =
      record.status === 'approved'
        ? `was approved but did not start within ${within} of its approval (an earlier step of its plan was still undecided); the approval is spent.`
        : `waited ${within} for a decision that did not come; it expired.`;
    try {
      return desk.emitStep(
        desk.steps.transition(
          record.step.id,
          'expired',
          SYSTEM_ACTOR,
          {
            error: { code: 'CONSENT_EXPIRED', message: `${reason}` },
            finishedAt: new Date().toISOString(),
          },
          {
            detail: { reason, deadline: record.consentExpiresAt, expirySeconds: desk.expirySecondsFor(record) },
            expectFrom: [record.status],
          },
        ),
      );
    } catch (error) {
      if (error instanceof ExecutorError && error.code === 'ILLEGAL_TRANSITION') return null;
      throw error;
    }
  }

  /**
   * Expires every step past its deadline, then arms the timer for the next one. Runs at open, from the
   * timer while the host runs, and after a policy change; approve and execute check their own step too.
   */
  sweepExpired(): void {
    const { desk } = this;
    // While the person has stopped all agents nothing expires (the clocks stand still); resume sweeps and arms again.
    if (desk.closed || desk.paused) return;
    try {
      const now = Date.now();
      let next = Infinity;
      const plans = new Set<string>();
      const unreadable = (stepId: string, error: ExecutorError) =>
        process.stderr.write(`executor: step ${stepId} cannot expire: ${error.message}\n`);
      for (const record of desk.steps.expiring(unreadable)) {
        if (desk.overdue(record, now)) {
          if (this.expire(record)) plans.add(record.step.planId);
        } else if (record.consentExpiresAt) {
          next = Math.min(next, Date.parse(record.consentExpiresAt));
        }
      }
      this.nextExpiryAt = Infinity;
      this.armExpiry(next);
      // Later approved steps of those plans go back to the person (advancePlan).
      for (const planId of plans) void this.port.schedulePreview(planId, SYSTEM_ACTOR);
    } catch (error) {
      if (!desk.closed) process.stderr.write(`executor: the consent expiry sweep failed: ${toErrorShape(error).message}\n`);
    }
  }

  /** Arms the expiry timer for `at` unless it fires sooner already; never keeps a process alive by itself. */
  armExpiry(at: number): void {
    if (this.desk.closed || this.desk.paused || !Number.isFinite(at) || at >= this.nextExpiryAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.nextExpiryAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.nextExpiryAt = Infinity;
        this.sweepExpired();
      },
      Math.min(Math.max(0, at - Date.now()), EXPIRY_RECHECK_MS),
    );
    this.timer.unref();
  }

  /** The host is closing: no sweep runs after it. */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
  }
}
