import type { Actor } from '../domain/actor.js';
import type { ErrorShape } from '../domain/errors.js';
import type { HostPause } from '../domain/host-pause.js';
import type { RevertOutcome } from '../domain/step-record.js';
import { MAX_RESERVE_PAYLOAD_BYTES } from '../store/held-records-reserve.js';

/**
 * What the host decided or learned while its database could not be written, in the form the reserve
 * keeps (held-records-reserve.ts) and the next start records (rooms/held-records-replay.ts): enough to
 * write the same record the host would have written, with the time it was really decided.
 */
export type HeldEntry =
  /** The person's no (a reject, a Cancel) of a step that had not started. */
  | {
      kind: 'withdraw';
      stepId: string;
      planId: string;
      what: 'rejection' | 'cancel';
      reason: string;
      actor: Actor;
      at: string;
      /** A Cancel that stopped a real run before it applied anything ends `cancelled` (as stopRun records it), not `rejected`. */
      to?: 'cancelled';
    }
  /** The stop switch. */
  | { kind: 'pause'; pause: HostPause }
  /** A step whose effect happened; `applied` false: it failed (what it applied was put back where it could be). */
  | {
      kind: 'outcome';
      stepId: string;
      planId: string;
      applied: boolean;
      actor: Actor;
      finishedAt: string;
      result?: Record<string, unknown>;
      error?: ErrorShape;
      /** The result or error was larger than a reserve slot: what is kept says so. */
      cut?: true;
    }
  /** A revert whose files are back. */
  | {
      kind: 'revert';
      stepId: string;
      planId: string;
      actor: Actor;
      revertedAt: string;
      force: boolean;
      revertOutcome: RevertOutcome;
      detail: Record<string, unknown>;
      cut?: true;
    };

const fits = (entry: HeldEntry) => Buffer.byteLength(JSON.stringify(entry), 'utf8') <= MAX_RESERVE_PAYLOAD_BYTES;

/**
 * The entry cut to a reserve slot: what decides the step's fate (its status, who, when) is always whole;
 * a long result, error message, reason or file list is shortened and the entry says it was cut.
 */
export function fitHeldEntry(entry: HeldEntry): HeldEntry {
  if (fits(entry)) return entry;
  switch (entry.kind) {
    case 'outcome': {
      const error = entry.error ? { code: entry.error.code, message: entry.error.message.slice(0, 600) } : undefined;
      const cut: HeldEntry = { ...entry, result: undefined, ...(error ? { error } : {}), cut: true };
      return fits(cut) ? cut : { ...cut, error: error ? { code: error.code, message: '' } : undefined };
    }
    case 'revert': {
      const files = Array.isArray(entry.detail['files']) ? entry.detail['files'].length : 0;
      return { ...entry, revertOutcome: { directories: [] }, detail: { force: entry.force, files }, cut: true };
    }
    case 'withdraw':
      return { ...entry, reason: entry.reason.slice(0, 1000) };
    case 'pause':
      return { ...entry, pause: { ...entry.pause, reason: entry.pause.reason?.slice(0, 1000) ?? null } };
  }
}
