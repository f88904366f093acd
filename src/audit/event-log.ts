import type { Actor } from '../domain/actor.js';
import type { Db } from '../store/database.js';

export type EventKind =
  | 'app.started'
  | 'app.stopped'
  | 'policy.changed'
  | 'step.proposed'
  | 'step.evaluated'
  | 'step.consent_requested'
  | 'step.approved'
  | 'step.rejected'
  | 'step.denied'
  | 'step.simulated'
  | 'step.execution_started'
  | 'step.executed'
  | 'step.failed'
  | 'step.interrupted'
  | 'step.reconsent'
  | 'step.execution_deferred'
  | 'step.reverted'
  | 'step.revert_forced';

export interface AuditEvent {
  kind: EventKind;
  actor: Actor;
  planId?: string;
  stepId?: string;
  detail?: Record<string, unknown>;
}

/**
 * Where every transition is recorded. append() is always called inside the transaction that makes
 * the change it describes, so a failed append rolls the change back (fail closed).
 */
export interface AuditTrail {
  append(event: AuditEvent): void;
}

/** The append-only events table; triggers refuse UPDATE and DELETE. */
export class EventLog implements AuditTrail {
  private readonly insert;

  constructor(db: Db) {
    this.insert = db.prepare(
      'INSERT INTO events (ts, plan_id, step_id, kind, actor_json, detail_json) VALUES (?, ?, ?, ?, ?, ?)',
    );
  }

  append(event: AuditEvent): void {
    this.insert.run(
      new Date().toISOString(),
      event.planId ?? null,
      event.stepId ?? null,
      event.kind,
      JSON.stringify(event.actor),
      JSON.stringify(event.detail ?? {}),
    );
  }
}
