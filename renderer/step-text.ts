import type { RunSpan, StepRecord } from '../src/domain/step-record.js';
import { placeInRoots } from '../src/domain/remembered-rule.js';
import { capabilityAsks, codeLanguageName, codeSandboxOf, durationText, SANDBOX_WORDS } from '../src/domain/run-step-facts.js';
import { commandLineOf } from '../src/domain/shell-quote.js';
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

export const STATUS_LABEL: Record<string, string> = {
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

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

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

/** Who approved, in words: the policy, or a person through a channel. */
export function approverText(record: StepRecord): string {
  const by = record.approval?.by;
  if (!by) return '—';
  if (by.channel === 'policy') return 'policy (auto-approved)';
  return `${by.user} via ${by.channel}`;
}

/** Compact time for dense tables: "Nov 22, 03:10:56". */
/**
 * One formatter for every row: toLocaleString with options builds a new Intl.DateTimeFormat per call,
 * which cost more than the rest of an audit row's render together while scrolling.
 */
let shortTimeFormat: Intl.DateTimeFormat | undefined;

export function formatShortTime(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  shortTimeFormat ??= new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
  return shortTimeFormat.format(date);
}
