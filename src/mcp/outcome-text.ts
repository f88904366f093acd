import { contentLostWords } from '../domain/content-lost.js';
import type { Channel } from '../domain/actor.js';
import { editDetailText } from '../domain/person-edit.js';
import { AGENT_CANCEL_REASON, noPreviewWhy, type StepRecord } from '../domain/step-record.js';
import { commandResultText } from '../domain/command-result-text.js';

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
  return cut([Object.keys(scalars).length ? JSON.stringify(scalars) : '', ...texts].filter(Boolean).join('\n'), maxChars);
}

/** Cut at `maxChars`, saying so and where the rest is kept. */
function cut(full: string, maxChars: number): string {
  if (full.length <= maxChars) return full;
  return `${full.slice(0, maxChars)}\n… (output cut at ${maxChars} of ${full.length} characters; the full result is kept in Executor's record of the step)`;
}

/**
 * A result as the model reads it: a command's in the few words a run's model is told (how it ended and the
 * files it changed, then its output; not the image digest, sandbox run id or oomKilled flag, which stay in
 * the step record and the structured content), any other result as outputText.
 */
function resultParts(record: StepRecord, maxChars: number): { ending: string | null; body: string } {
  const words = record.step.action === 'runCommand' ? commandResultText(record.result) : null;
  if (words === null) return { ending: null, body: outputText(record.result, maxChars) };
  const [ending, ...output] = words.split('\n');
  return { ending: ending!, body: cut(output.join('\n'), maxChars) };
}

/** The stop switch, when the person has stopped all agents: a step still open is held, not refused. */
export interface HeldByPause {
  pausedAt: string;
}

/** The sentence a model reads about one step: the verdict first, then what it needs to act on it. */
export function stepOutcomeText(record: StepRecord, maxChars = MAX_OUTPUT_CHARS, held?: HeldByPause): string {
  const verdict = verdictText(record, maxChars, held);
  // Said on the line after the verdict (which stays what models parse): the step can never be approved, so waiting is pointless.
  const sentence = record.contentLost
    ? verdict.replace(
        /^[^\n]*/,
        (first) =>
          `${first}\nCONTENT LOST: ${contentLostWords(record.contentLost!, record.status)} Propose the write again if it is still wanted.`,
      )
    : verdict;
  // The person's change goes after the verdict's first line, which stays what models parse.
  if (!record.edit) return sentence;
  const [first, ...rest] = sentence.split('\n');
  // "Approved" only for a version the person approved: the step holds their approval (it is kept once it ran).
  return [first, editDetailText(record.edit, undefined, record.approval !== null), ...rest].join('\n');
}

/**
 * Every way a step can stand or end, as an agent is told it: who did what. One name per path, so a
 * test can walk each through the real MCP surface and nothing is said by a branch nobody checked.
 */
export const OUTCOME_PATHS = [
  'preparing',
  'waiting for the user',
  'approved, waiting its turn',
  'running',
  'ran',
  'failed before any change',
  'failed while running',
  'interrupted by a stop of Executor',
  'rejected by the user',
  'withdrawn by the user',
  'withdrawn by Executor',
  'withdrawn by the agent',
  'denied by policy',
  'expired',
  'dry run stopped by the user',
  'run stopped before anything was applied',
  'run stopped while applying',
  'reverted by the user',
] as const;
export type OutcomePath = (typeof OUTCOME_PATHS)[number];

/** The channel named in Executor's own words for a cancel ("cancelled from the cli channel", "Cancelled from the window channel 2.0 s into…"). */
function cancelChannel(text: string | null | undefined): Channel | null {
  const match = /^cancelled from the (\w+) channel/i.exec(text ?? '');
  return match ? (match[1] as Channel) : null;
}

/** Who a channel's actor is, to an agent: the person at the window, web page or CLI; Executor itself otherwise. */
function whoActedThrough(channel: Channel | null): 'the user' | 'Executor' | 'the policy' {
  if (channel === 'policy') return 'the policy';
  return channel === 'system' ? 'Executor' : 'the user';
}

/** Which path a record is on (OUTCOME_PATHS). */
export function outcomePathOf(record: StepRecord): OutcomePath {
  switch (record.status) {
    case 'proposed':
    case 'evaluated':
      return 'preparing';
    case 'awaiting_consent':
      return 'waiting for the user';
    case 'approved':
      return 'approved, waiting its turn';
    case 'running':
      return 'running';
    case 'executed':
      return 'ran';
    case 'failed':
      // failBeforeStart marks a failure that came before the run changed anything.
      return record.error?.details?.beforeAnyEffect === true ? 'failed before any change' : 'failed while running';
    case 'interrupted':
      return 'interrupted by a stop of Executor';
    case 'rejected':
      if (record.rejectedReason === AGENT_CANCEL_REASON) return 'withdrawn by the agent';
      if (cancelChannel(record.rejectedReason) !== null)
        return whoActedThrough(cancelChannel(record.rejectedReason)) === 'Executor' ? 'withdrawn by Executor' : 'withdrawn by the user';
      return 'rejected by the user';
    case 'denied':
      return 'denied by policy';
    case 'expired':
      return 'expired';
    case 'cancelled':
      if (record.approval === null) return 'dry run stopped by the user';
      return record.error?.message.includes('before anything was applied') || record.startedAt === null
        ? 'run stopped before anything was applied'
        : 'run stopped while applying';
    case 'reverted':
      return 'reverted by the user';
  }
}

/** Who said yes to a step: the person, a remembered rule, or the policy on its own. */
function approverText(record: StepRecord): string {
  const by = record.approval?.by;
  if (!by) return 'Approved.';
  const skill = record.evaluation?.approvedBySkill;
  if (by.channel === 'policy' && skill)
    return `Approved without asking by the user's approval of skill ${skill.name} v${skill.version} (code sha256 ${skill.codeHash}).`;
  if (by.channel === 'policy') {
    const rules = record.evaluation?.approvedByRules ?? [];
    return rules.length > 0
      ? `Approved without asking by the user's remembered rule${rules.length === 1 ? '' : 's'} ${rules.join(', ')}.`
      : "Approved without asking by the user's policy (its risk is under the auto-approve level).";
  }
  return by.channel === 'system' ? 'Approved by Executor.' : 'Approved by the user.';
}

function errorText(record: StepRecord): string {
  return record.error ? `${record.error.code}: ${record.error.message}` : `step ${record.step.id} is ${record.status}.`;
}

/** A step put before the user with no dry run: why (its first line: a build's log stays in the record), so the agent can fix the cause. */
function noPreviewLine(record: StepRecord): string {
  const why = noPreviewWhy(record);
  return why ? `\nNo dry run could be made, so the user decides without a preview: ${why.slice(0, 500)}` : '';
}

function verdictText(record: StepRecord, maxChars: number, held?: HeldByPause): string {
  const id = record.step.id;
  const path = outcomePathOf(record);
  // The stop switch holds every step still open: the agent is told it waits, never that it was refused.
  if (held && (path === 'preparing' || path === 'waiting for the user' || path === 'approved, waiting its turn'))
    return `PENDING: held: the user stopped all agents at ${held.pausedAt}. Step ${id} is neither approved nor rejected; it waits until the user resumes. Propose nothing new meanwhile (it is refused with HOST_PAUSED); call step_status with ${id} later.`;
  switch (path) {
    case 'ran': {
      const { ending, body } = resultParts(record, maxChars);
      return `EXECUTED: step ${id} ran${ending ? `: ${ending}` : '.'}\n${approverText(record)}\n${body}`;
    }
    case 'failed before any change':
      return `FAILED: ${errorText(record)}\n${approverText(record)} It failed before it changed anything.`;
    case 'failed while running': {
      const result = record.result ? resultParts(record, maxChars) : null;
      return `FAILED: ${errorText(record)}\n${approverText(record)} It ran and failed; any file it changed is backed up, and the user can revert it.${
        result ? `\n${result.ending ? `${result.ending}\n` : ''}${result.body}` : ''
      }`;
    }
    case 'interrupted by a stop of Executor':
      return `FAILED: ${errorText(record)}\n${approverText(record)} Executor stopped (shut down or crashed) while step ${id} ran; what it changed so far is backed up, and the user can revert it.`;
    case 'rejected by the user':
      return `REJECTED by the user: ${record.rejectedReason?.trim() || '(no reason given)'}`;
    case 'withdrawn by the user':
      return `REJECTED by the user: they withdrew step ${id} (${record.rejectedReason}) before it ran; it did not run.`;
    case 'withdrawn by Executor':
      return `REJECTED by Executor: step ${id} was withdrawn before it ran (${record.rejectedReason}); it did not run.`;
    case 'withdrawn by the agent':
      return `CANCELLED: you withdrew step ${id}${record.approval ? ' (the user had approved it, but it had not started)' : ' before the user decided'}; it did not run.`;
    case 'denied by policy':
      return `DENIED by policy: ${record.evaluation?.reasons.join(' ') || record.error?.message || 'the policy forbids this step.'}`;
    case 'expired':
      return `EXPIRED: step ${id} ${record.error?.message ?? 'was not decided in time.'} It did not run; propose it again if you still need it.`;
    case 'dry run stopped by the user':
    case 'run stopped before anything was applied':
    case 'run stopped while applying': {
      const who = whoActedThrough(cancelChannel(record.error?.message));
      const what =
        path === 'dry run stopped by the user'
          ? `stopped the dry run of step ${id} before anyone decided on it; it never ran for real`
          : path === 'run stopped before anything was applied'
            ? `stopped the run of step ${id} after it was approved, before anything was applied; nothing changed`
            : `stopped step ${id} while it ran; what it changed before it stopped is backed up, and the user can revert it`;
      return `CANCELLED by ${who}: ${who === 'the user' ? 'they' : 'it'} ${what}.${record.error ? `\n${record.error.message}` : ''}`;
    }
    case 'reverted by the user':
      return `REVERTED: step ${id} ran, then the user reverted it${record.revertedAt ? ` at ${record.revertedAt}` : ''}; its changes are undone.`;
    case 'preparing':
      return `PENDING: step ${id} is being prepared (weighed and dry-run); then it waits for the user. Call step_status with ${id}.`;
    case 'waiting for the user':
      // A step before it that holds it back goes on a line of its own: the first line stays what models parse.
      return `PENDING: waiting for the user; call step_status with ${id}${record.blockedBy ? `\n${record.blockedBy.reason}` : ''}${noPreviewLine(record)}`;
    case 'approved, waiting its turn':
      return `PENDING: approved, waiting its turn; call step_status with ${id}\n${approverText(record)}${record.blockedBy ? ` It waits: ${record.blockedBy.reason}` : ' It runs once the steps before it in its plan have.'}`;
    case 'running':
      return `PENDING: running now; call step_status with ${id}\n${approverText(record)}`;
  }
}

/** One line (or block) per step; a single step is just its sentence. */
export function planOutcomeText(records: StepRecord[], maxChars = MAX_OUTPUT_CHARS, held?: HeldByPause): string {
  if (records.length === 1) return stepOutcomeText(records[0]!, maxChars, held);
  const share = Math.max(500, Math.floor(maxChars / records.length));
  return records.map((record) => `${record.step.id} (${record.step.action}): ${stepOutcomeText(record, share, held)}`).join('\n');
}
