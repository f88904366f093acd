import type { Actor } from './actor.js';
import { ExecutorError } from './errors.js';
import { EVENT_KINDS } from './event-kinds.js';

// The list lives in the domain, so the window can suggest these names as audit filters.
export { EVENT_KINDS };

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
  /**
   * The event is about a step that writes a path matching the secret patterns: its content, and every
   * hash of it, are recorded only as salted digests (docs/audit.md, "Secrets").
   */
  secretContent?: boolean;
  /** Where the event's step runs: recorded as executorEnv.sandbox (null: the event has no step). */
  sandbox?: SandboxOfRecord | null;
}

/** The sandbox a record's step runs in: `worker` (light), `docker` (with the image digest), or `host` (applied by Executor itself). */
export interface SandboxOfRecord {
  kind: 'worker' | 'docker' | 'host';
  imageDigest: string | null;
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
    throw new ExecutorError(
      'INVALID_INPUT',
      `"${String(kind)}" is not a known audit event kind; add it to EVENT_KINDS in src/domain/audit-event.ts.`,
      {
        kind: String(kind),
      },
    );
  }
}
