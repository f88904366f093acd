import type { RunSpan, StepRecord } from '../src/domain/step-record.js';
import { durationText } from '../src/domain/run-step-facts.js';
import type { StepStatus } from '../src/domain/state-machine.js';
import type { Step } from '../src/domain/step.js';
import { summarizeStep } from '../src/domain/step-title.js';
import { STATUS_SENTENCE_WORDS, STATUS_WORDS } from '../src/domain/status-words.js';
export { commandTitle, displayPath, summarizeStep, targetPath } from '../src/domain/step-title.js';

/** Where a step stands, as a label: the same words the CLI prints (one table, src/domain/status-words.ts). */
export const STATUS_LABEL: Record<StepStatus, string> = STATUS_WORDS;

/**
 * Where a step stands, as the end of a sentence about it ("“Write a.txt” is now …"). Every status
 * has words (the unit test walks STEP_STATUSES), so no message shows a raw state name.
 */
export const STATUS_SENTENCE: Record<StepStatus, string> = STATUS_SENTENCE_WORDS;

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

/** Who approved, in words: a remembered rule (named), the policy's auto-approve level, or a person through a channel. */
export function approverText(record: StepRecord): string {
  const by = record.approval?.by;
  if (!by) return '—';
  const rules = record.evaluation?.approvedByRules ?? [];
  if (by.channel === 'policy' && rules.length > 0)
    return `your remembered rule${rules.length === 1 ? '' : 's'} ${rules.join(', ')} (without asking)`;
  const skill = record.evaluation?.approvedBySkill;
  if (by.channel === 'policy' && skill)
    return `skill ${skill.name} v${skill.version}: its code (sha256 ${skill.codeHash.slice(0, 12)}…) as you approved it (without asking)`;
  if (by.channel === 'policy') return 'policy (auto-approved)';
  return `${by.user} via ${by.channel}`;
}
