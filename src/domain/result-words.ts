import type { ErrorShape } from './errors.js';
import { durationText } from './run-step-facts.js';
import type { StepStatus } from './state-machine.js';
import { AGENT_CANCEL_REASON } from './step-record.js';
import { collapsePlainSpace } from './visible-text.js';

/*
 * What a step came to, in words a person reads at a glance in a list: "Created 16 bytes",
 * "Exit 0 in 2.1 s; 3 files changed", "Failed: STORAGE_FULL …". The window's History and
 * `executor steps list` both say it from here. The result itself is agent-shaped data (JSON of any
 * size); this never prints it whole, so a row stays a row.
 */

/** The longest message or value excerpt a result's words carry; the detail shows the rest. */
export const RESULT_WORDS_MAX_CHARACTERS = 160;

/** The parts of a step record its result words come from (a StepRecord has them all). */
export interface ResultSource {
  status: StepStatus;
  step: { action: string };
  result: Record<string, unknown> | null;
  error: ErrorShape | null;
  rejectedReason: string | null;
  evaluation: { reasons: string[] } | null;
  startedAt: string | null;
  finishedAt: string | null;
  /** The host's wall-clock timing of the real run (RunTimes.realRun), where it ran. */
  runTimes?: { realRun?: { durationMs: number } };
}

/** Cut to `max` characters on one line (line breaks and tabs become spaces), saying it was cut with "…". */
export function oneLine(text: string, max = RESULT_WORDS_MAX_CHARACTERS): string {
  const flat = collapsePlainSpace(text);
  const characters = [...flat];
  return characters.length > max ? `${characters.slice(0, max - 1).join('')}…` : flat;
}

/** "16 bytes", "1 byte", "2.4 KiB", "3.1 MiB". */
export function byteWords(bytes: number): string {
  if (bytes === 1) return '1 byte';
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${Number((bytes / 1024).toFixed(1))} KiB`;
  if (bytes < 1024 * 1024 * 1024) return `${Number((bytes / (1024 * 1024)).toFixed(1))} MiB`;
  return `${Number((bytes / (1024 * 1024 * 1024)).toFixed(1))} GiB`;
}

function filesWords(count: number): string {
  return count === 1 ? '1 file changed' : `${count} files changed`;
}

/** How many files a step's run changed, where its result says (writeFile, deleteFile, runCommand); null when it changes none by nature. */
export function filesChangedOf(source: Pick<ResultSource, 'step' | 'result'>): number | null {
  const result = source.result;
  if (!result) return null;
  if (Array.isArray(result.files)) return result.files.length;
  if (source.step.action === 'writeFile' || source.step.action === 'deleteFile') return 1;
  return null;
}

/**
 * How long the real run took: the host's timing of it (RunTimes.realRun, what `steps show` prints
 * as "Run") where it exists, so one run has one duration everywhere; else the sandbox's own count.
 */
function ranFor(source: ResultSource, result: Record<string, unknown>): number | null {
  const host = source.runTimes?.realRun?.durationMs;
  if (typeof host === 'number' && Number.isFinite(host)) return host;
  if (typeof result.durationMs === 'number' && Number.isFinite(result.durationMs)) return result.durationMs;
  if (!source.startedAt || !source.finishedAt) return null;
  const ms = Date.parse(source.finishedAt) - Date.parse(source.startedAt);
  return Number.isFinite(ms) && ms >= 0 ? ms : null;
}

/** "Cancelled 8.5 s into its run" (the host's timing of the real run), or "Cancelled while it ran" when it was not timed. */
function cancelledWhen(source: ResultSource): string {
  const host = source.runTimes?.realRun?.durationMs;
  const ms =
    typeof host === 'number' && Number.isFinite(host)
      ? host
      : source.startedAt && source.finishedAt
        ? Date.parse(source.finishedAt) - Date.parse(source.startedAt)
        : NaN;
  return Number.isFinite(ms) && ms >= 0 ? `Cancelled ${durationText(ms)} into its run` : 'Cancelled while it ran';
}

/** What a step that ran did, from its result. */
function executedWords(source: ResultSource, result: Record<string, unknown>): string {
  switch (source.step.action) {
    case 'writeFile':
      if (typeof result.bytesWritten === 'number') return `${result.created ? 'Created' : 'Wrote'} ${byteWords(result.bytesWritten)}`;
      break;
    case 'deleteFile':
      if (typeof result.bytesRemoved === 'number') return `Deleted (${byteWords(result.bytesRemoved)})`;
      break;
    case 'runCommand': {
      const ms = ranFor(source, result);
      const took = ms === null ? '' : ` in ${durationText(ms)}`;
      const files = filesChangedOf(source) ?? 0;
      const ending =
        result.timedOut === true
          ? `Timed out${took}`
          : result.oomKilled === true
            ? `Out of memory${took}`
            : `Exit ${typeof result.exitCode === 'number' ? result.exitCode : '?'}${took}`;
      return `${ending}; ${files === 0 ? 'no file changed' : filesWords(files)}`;
    }
    case 'runCode': {
      const ms = ranFor(source, result);
      const took = ms === null ? '' : ` in ${durationText(ms)}`;
      if (result.ok === true) {
        const value = result.value === undefined ? 'no value' : oneLine(JSON.stringify(result.value) ?? String(result.value), 80);
        return `Returned${took}: ${value}`;
      }
      break;
    }
    case 'runSkill': {
      const ms = ranFor(source, result);
      const took = ms === null ? '' : ` in ${durationText(ms)}`;
      if (result.ok === true) {
        const value = result.value === undefined ? 'no value' : oneLine(JSON.stringify(result.value) ?? String(result.value), 80);
        return `Returned${took}: ${value}`;
      }
      break;
    }
    case 'createKBEntry':
      return 'Added to the knowledge base';
    case 'openURL':
      return result.opened === true ? 'Opened in the browser' : 'Not opened: no browser attached';
  }
  return `Done: ${oneLine(JSON.stringify(result) ?? '', 120)}`;
}

/**
 * The result of a step in words, one line, at most about RESULT_WORDS_MAX_CHARACTERS characters:
 * what it did when it ran, the error's code and message when it failed, the reason when it was
 * rejected or denied, and "—" while nothing has happened yet.
 */
export function resultWords(source: ResultSource): string {
  const { status, error, result } = source;
  switch (status) {
    case 'failed':
      return error ? oneLine(`Failed: ${error.code} ${error.message}`) : 'Failed';
    case 'interrupted':
      return 'Interrupted: Executor stopped while it ran (revert puts back what it changed)';
    case 'rejected':
      if (source.rejectedReason === AGENT_CANCEL_REASON) return 'Withdrawn by the agent that proposed it';
      // An empty or blank reason is no reason: never "Rejected:" with nothing after it.
      return oneLine(`Rejected: ${source.rejectedReason?.trim() || 'no reason given'}`);
    case 'denied':
      return oneLine(`Denied by policy: ${source.evaluation?.reasons.join(' ').trim() || error?.message.trim() || 'no reason recorded'}`);
    case 'expired':
      return 'Expired: nobody decided in time';
    case 'reverted':
      return result ? oneLine(`Reverted; it had: ${executedWords(source, result)}`) : 'Reverted';
    case 'executed':
      return result ? oneLine(executedWords(source, result)) : 'Done';
    case 'running':
      return 'Running…';
    case 'cancelled':
      // Cancelled before it was marked running: it applied nothing. After: what it had done stays (and can be reverted).
      return source.startedAt
        ? oneLine(`${cancelledWhen(source)}${result && !('partialOutput' in result) ? `; it had: ${executedWords(source, result)}` : ''}`)
        : 'Cancelled before it ran';
    default:
      return '—';
  }
}
