import { editDetailText } from '../domain/person-edit.js';
import { AGENT_CANCEL_REASON, type StepRecord } from '../domain/step-record.js';

/** How much of a step's output goes back to the model; the full result stays in the step record. */
export const MAX_OUTPUT_CHARS = 8_000;

/** The first word of every result line: what a model branches on. */
export type Verdict = 'EXECUTED' | 'REJECTED' | 'CANCELLED' | 'DENIED' | 'FAILED' | 'REVERTED' | 'EXPIRED' | 'PENDING';

export function verdictOf(record: StepRecord): Verdict {
  switch (record.status) {
    case 'executed':
      return 'EXECUTED';
    case 'rejected':
      return record.rejectedReason === AGENT_CANCEL_REASON ? 'CANCELLED' : 'REJECTED';
    case 'denied':
      return 'DENIED';
    case 'failed':
    case 'interrupted':
      return 'FAILED';
    case 'reverted':
      return 'REVERTED';
    case 'expired':
      return 'EXPIRED';
    // The person stopped its run: it did not complete (a real run may have left partial changes, kept revertible).
    case 'cancelled':
      return 'CANCELLED';
    default:
      return 'PENDING';
  }
}

/** Verdicts the model should treat as "it did not happen". */
export function isRefusal(verdict: Verdict): boolean {
  return verdict === 'REJECTED' || verdict === 'DENIED' || verdict === 'FAILED' || verdict === 'EXPIRED';
}

/** Output-like values a model should read as lines: long strings, lists of lines (runCode's logs), and {text} excerpts (runCommand's stdout). */
function asLines(value: unknown): string | null {
  if (typeof value === 'string') return value.includes('\n') || value.length > 200 ? value : null;
  if (Array.isArray(value) && value.length > 0 && value.every((line) => typeof line === 'string')) return value.join('\n');
  if (value && typeof value === 'object' && typeof (value as { text?: unknown }).text === 'string') {
    const excerpt = value as { text: string; truncated?: unknown };
    return excerpt.truncated === true ? `${excerpt.text}\n… (cut by the sandbox)` : excerpt.text;
  }
  return null;
}

/**
 * A step's output as text: output streams as their lines, so a model reads them rather than
 * escaped JSON; everything else as compact JSON. Cut at `maxChars`, saying so.
 */
export function outputText(result: Record<string, unknown> | null, maxChars = MAX_OUTPUT_CHARS): string {
  if (!result) return '(no output)';
  const scalars: Record<string, unknown> = {};
  const texts: string[] = [];
  for (const [key, value] of Object.entries(result)) {
    const lines = asLines(value);
    if (lines !== null) texts.push(`${key}:\n${lines}`);
    else scalars[key] = value;
  }
  const full = [Object.keys(scalars).length ? JSON.stringify(scalars) : '', ...texts].filter(Boolean).join('\n');
  if (full.length <= maxChars) return full;
  return `${full.slice(0, maxChars)}\n… (output cut at ${maxChars} of ${full.length} characters; the full result is kept in Executor's record of the step)`;
}

/** The stop switch, when the person has stopped all agents: a step still open is held, not refused. */
export interface HeldByPause {
  pausedAt: string;
}

/** The sentence a model reads about one step: the verdict first, then what it needs to act on it. */
export function stepOutcomeText(record: StepRecord, maxChars = MAX_OUTPUT_CHARS, held?: HeldByPause): string {
  const sentence = verdictText(record, maxChars, held);
  // The person's change goes after the verdict's first line, which stays what models parse.
  if (!record.edit) return sentence;
  const [first, ...rest] = sentence.split('\n');
  // "Approved" only for a version the person approved: the step holds their approval (it is kept once it ran).
  return [first, editDetailText(record.edit, undefined, record.approval !== null), ...rest].join('\n');
}

function verdictText(record: StepRecord, maxChars: number, held?: HeldByPause): string {
  const id = record.step.id;
  switch (verdictOf(record)) {
    case 'EXECUTED':
      return `EXECUTED: step ${id} ran.\n${outputText(record.result, maxChars)}`;
    case 'REJECTED':
      return `REJECTED by the user: ${record.rejectedReason ?? '(no reason given)'}`;
    case 'CANCELLED':
      // A stopped run (the person's Cancel, or their stop switch) says what stopped it; an agent's own withdrawal is said as such.
      return record.status === 'cancelled'
        ? `CANCELLED: step ${id} did not complete: ${record.error?.message ?? 'its run was stopped.'}`
        : `CANCELLED: you withdrew step ${id} before the user decided; it did not run.`;
    case 'DENIED':
      return `DENIED by policy: ${record.evaluation?.reasons.join(' ') || 'the policy forbids this step.'}`;
    case 'FAILED':
      return `FAILED: ${record.error ? `${record.error.code}: ${record.error.message}` : `step ${id} is ${record.status}.`}`;
    case 'REVERTED':
      return `REVERTED: step ${id} ran, then the user reverted it${record.revertedAt ? ` at ${record.revertedAt}` : ''}; its changes are undone.`;
    case 'EXPIRED':
      return `EXPIRED: step ${id} ${record.error?.message ?? 'was not decided in time.'} It did not run; propose it again if you still need it.`;
    case 'PENDING':
      if (held)
        return `PENDING: held: the user stopped all agents at ${held.pausedAt}. Step ${id} is neither approved nor rejected; it waits until the user resumes. Propose nothing new meanwhile (it is refused with HOST_PAUSED); call step_status with ${id} later.`;
      // A step before it that holds it back goes on a line of its own: the first line stays what models parse.
      return `PENDING: waiting for the user; call step_status with ${id}${record.blockedBy ? `\n${record.blockedBy.reason}` : ''}`;
  }
}

/** One line (or block) per step; a single step is just its sentence. */
export function planOutcomeText(records: StepRecord[], maxChars = MAX_OUTPUT_CHARS, held?: HeldByPause): string {
  if (records.length === 1) return stepOutcomeText(records[0]!, maxChars, held);
  const share = Math.max(500, Math.floor(maxChars / records.length));
  return records.map((record) => `${record.step.id} (${record.step.action}): ${stepOutcomeText(record, share, held)}`).join('\n');
}
