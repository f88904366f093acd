import type { Actor } from '../domain/actor.js';
import { ExecutorError } from '../domain/errors.js';

/**
 * Every kind of record the audit log knows. Extending it is one line here: the type and the
 * check in isEventKind() both come from this list, so an unknown kind cannot slip into the log.
 */
export const EVENT_KINDS = [
  'app.started',
  'app.stopped',
  'policy.changed',
  'ipc.rejected',
  'ipc.denied',
  'key.created',
  'key.rotated',
  'step.proposed',
  'step.evaluated',
  'step.consent_requested',
  'step.approved',
  'step.approved_with_edits',
  'step.edited',
  'step.rejected',
  'step.cancelled',
  'agent.rate_limited',
  'step.denied',
  'step.simulated',
  'step.execution_started',
  'step.executed',
  'step.failed',
  'step.interrupted',
  'step.reconsent',
  'step.execution_deferred',
  'step.reverted',
  'step.revert_forced',
  /** Nobody decided the step (or used its approval) within the consent expiry; detail: reason, deadline. */
  'step.expired',
  /** What restart recovery does with a step a stopped host left undecided (detail: from, action). */
  'step.recovered',
  'capability.call',
  /** A remembered rule approved a step, in the transaction of that approval (detail: ruleId). */
  'rule.applied',
] as const;

export type EventKind = (typeof EVENT_KINDS)[number];

const KNOWN_KINDS: ReadonlySet<string> = new Set(EVENT_KINDS);

export function isEventKind(value: unknown): value is EventKind {
  return typeof value === 'string' && KNOWN_KINDS.has(value);
}

export interface AuditEvent {
  kind: EventKind;
  actor: Actor;
  planId?: string;
  stepId?: string;
  /** What was asked: the arguments of the action or the facts of the transition. Secrets are stored as salted HMACs. */
  detail?: Record<string, unknown>;
  /** Content hashes before and after an effect (e.g. a file's pre- and post-image), when the event has them. */
  preHash?: string;
  postHash?: string;
}

/**
 * Where every transition is recorded. append() is always called inside the transaction that makes
 * the change it describes, so a failed append rolls the change back (fail closed).
 */
export interface AuditTrail {
  append(event: AuditEvent): void;
}

export function assertEventKind(kind: unknown): asserts kind is EventKind {
  if (!isEventKind(kind)) {
    throw new ExecutorError('INVALID_INPUT', `"${String(kind)}" is not a known audit event kind; add it to EVENT_KINDS in src/audit/event-log.ts.`, {
      kind: String(kind),
    });
  }
}
