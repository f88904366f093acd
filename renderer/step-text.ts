import type { RunSpan, StepRecord } from '../src/domain/step-record.js';
import { placeInRoots } from '../src/domain/remembered-rule.js';
import { capabilityAsks, codeLanguageName, codeSandboxOf, durationText, SANDBOX_WORDS } from '../src/domain/run-step-facts.js';
import { commandLineOf } from '../src/domain/shell-quote.js';
import type { StepStatus } from '../src/domain/state-machine.js';
import type { Step } from '../src/domain/step.js';

/** A path as short as it can be said: relative to its workspace root when it is inside one. */
export function displayPath(requested: string, roots: readonly string[]): string {
  if (!requested.startsWith('/')) return requested;
  return placeInRoots(requested, roots)?.relativePath ?? requested;
}

/** The path a file step touches, if it is one. */
export function targetPath(step: Step): string | null {
  const args = step.args as Record<string, unknown>;
  return typeof args.path === 'string' ? args.path : null;
}

/** Longest command line a title carries; the detail shows all of it, in a box that scrolls. */
const TITLE_MAX_CHARACTERS = 300;

/**
 * A command line as a title: one line. A multi-line shell script shows its first non-blank line and
 * says how many more there are (the detail shows them all), so a second line is never out of sight
 * without a word about it; a very long line is cut the same way, saying how much more there is.
 */
export function commandTitle(commandLine: string): string {
  const lines = commandLine.split('\n');
  const first = lines.findIndex((line) => line.trim() !== '');
  const others = lines.length - 1;
  const shown = lines.length === 1 || first === -1 ? commandLine : lines[first]!.trim();
  const notes: string[] = [];
  let title = shown;
  const characters = [...shown];
  if (characters.length > TITLE_MAX_CHARACTERS) {
    title = characters.slice(0, TITLE_MAX_CHARACTERS).join('');
    notes.push(`+${characters.length - TITLE_MAX_CHARACTERS} more characters`);
  }
  if (shown !== commandLine) notes.push(`+${others} more line${others === 1 ? '' : 's'}`);
  return notes.length ? `${title} … (${notes.join(', ')})` : title;
}

const CAPABILITY_TITLE_WORDS = { fetch: 'may use the network', readFile: 'may read files', kbSearch: 'may search the knowledge base' } as const;

/**
 * One line per step for lists, in words, with paths relative to their root (the full path is in
 * the detail). The renderer cannot load the action modules (they read files), so it says it here.
 * A command is titled by its command line, code by its language, sandbox and what it asks for:
 * never by a bare action name.
 */
export function summarizeStep(step: Step, roots: readonly string[] = []): string {
  switch (step.action) {
    case 'writeFile':
      return `Write ${displayPath(step.args.path, roots)}`;
    case 'deleteFile':
      return `Delete ${displayPath(step.args.path, roots)}`;
    case 'createKBEntry':
      return `Add knowledge-base entry “${step.args.title}”`;
    case 'openURL':
      return `Open ${step.args.url}`;
    case 'runCommand':
      return `Run ${commandTitle(commandLineOf(step.args))}`;
    case 'runCode': {
      const asks = capabilityAsks(step.args.capabilities).map((ask) => CAPABILITY_TITLE_WORDS[ask.capability]);
      return `Run ${codeLanguageName(step.args)} in the ${SANDBOX_WORDS[codeSandboxOf(step.args)].name}${asks.length ? `; ${asks.join(', ')}` : ''}`;
    }
    default: {
      // A record from a newer host may name an action this window does not know: say its name rather than nothing.
      const unknown = step as { action: string };
      return unknown.action;
    }
  }
}

export const STATUS_LABEL: Record<StepStatus, string> = {
  proposed: 'Proposed',
  evaluated: 'Evaluated',
  awaiting_consent: 'Waiting for you',
  approved: 'Approved',
  rejected: 'Rejected',
  running: 'Running',
  executed: 'Executed',
  failed: 'Failed',
  interrupted: 'Interrupted',
  reverted: 'Reverted',
  denied: 'Denied by policy',
  expired: 'Expired',
  cancelled: 'Cancelled',
};

/**
 * Where a step stands, as the end of a sentence about it ("“Write a.txt” is now …"). Every status
 * has words (the unit test walks STEP_STATUSES), so no message shows a raw state name.
 */
export const STATUS_SENTENCE: Record<StepStatus, string> = {
  proposed: 'is being prepared',
  evaluated: 'is being prepared (its preview is under way)',
  awaiting_consent: 'waits for your decision',
  approved: 'is approved and waits its turn',
  rejected: 'was rejected',
  running: 'is running',
  executed: 'ran',
  failed: 'failed',
  interrupted: 'was interrupted before it finished',
  reverted: 'was reverted',
  denied: 'was denied by the policy',
  expired: 'expired before anyone decided',
  cancelled: 'was cancelled',
};

/** A step named in a message: its title in quotes, never its id. */
export function quotedStep(step: Step, roots: readonly string[] = []): string {
  return `“${summarizeStep(step, roots)}”`;
}

/**
 * What became of an approval, in words: ran, waits its turn, failed (and why), or needs the
 * person again because what it touches changed since they looked.
 */
export function approvalOutcomeText(step: Step, result: Pick<StepRecord, 'status' | 'error'>, roots: readonly string[] = []): string {
  const title = quotedStep(step, roots);
  switch (result.status) {
    case 'executed':
      return `${title} was approved and ran.`;
    case 'approved':
      return `${title} was approved; it runs after the earlier steps of its plan.`;
    case 'running':
      return `${title} was approved and is running.`;
    case 'awaiting_consent':
      // The drift path: the host refreshed the preview because the target changed after the person saw it.
      return `${title} needs your decision again: ${step.action === 'runCommand' || step.action === 'runCode' ? 'what it works on' : 'the file'} changed since you saw it. Look at the new preview.`;
    case 'failed':
      return `${title} was approved but failed${result.error ? `: ${result.error.message}` : '.'}`;
    default:
      return `${title} was approved; it ${STATUS_SENTENCE[result.status]}.`;
  }
}

export { formatShortTime, formatTime } from './time-format.js';

/** How long a timed run took, and how it ended when that was not simply finishing: "23.4 s", "2.1 s, cancelled". */
export function runSpanText(span: RunSpan): string {
  return `${durationText(span.durationMs)}${span.ended === 'finished' ? '' : `, ${span.ended}`}`;
}

export function formatDuration(record: StepRecord): string {
  // The host's own timing of the real run (a command's sandbox run included), where it has one.
  if (record.runTimes?.realRun) return runSpanText(record.runTimes.realRun);
  if (!record.startedAt || !record.finishedAt) return '—';
  const ms = new Date(record.finishedAt).getTime() - new Date(record.startedAt).getTime();
  if (!Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function shortHash(hash: string | null | undefined): string {
  return hash ? `${hash.slice(0, 12)}…` : '—';
}

/** Who approved, in words: a remembered rule (named), the policy's auto-approve level, or a person through a channel. */
export function approverText(record: StepRecord): string {
  const by = record.approval?.by;
  if (!by) return '—';
  const rules = record.evaluation?.approvedByRules ?? [];
  if (by.channel === 'policy' && rules.length > 0) return `your remembered rule${rules.length === 1 ? '' : 's'} ${rules.join(', ')} (without asking)`;
  if (by.channel === 'policy') return 'policy (auto-approved)';
  return `${by.user} via ${by.channel}`;
}
