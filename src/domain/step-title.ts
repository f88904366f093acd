import { placeInRoots } from './remembered-rule.js';
import { capabilityAsks, codeLanguageName, codeSandboxOf, SANDBOX_WORDS } from './run-step-facts.js';
import { commandLineOf } from './shell-quote.js';
import type { Step } from './step.js';
import { trimPlainSpace } from './visible-text.js';

/*
 * A step's title in words, one line, as every list says it: the window's queue and History, and
 * the host's step summaries (listStepSummaries), which send the title instead of the step.
 */

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
  const first = lines.findIndex((line) => trimPlainSpace(line) !== '');
  const others = lines.length - 1;
  const shown = lines.length === 1 || first === -1 ? commandLine : trimPlainSpace(lines[first]!);
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

const CAPABILITY_TITLE_WORDS = {
  fetch: 'may use the network',
  readFile: 'may read files',
  kbSearch: 'may search the knowledge base',
} as const;

/**
 * One line per step for lists, in words, with paths relative to their root (the full path is in
 * the detail). The renderer cannot load the action modules (they read files), so it is said here.
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
    case 'runSkill':
      return `Use skill ${step.args.skill} v${step.args.version}`;
    default: {
      // Every action this build knows has its case: a new one does not compile until it is titled here.
      const known: never = step;
      // A record from a newer host may name an action this window does not know: say its name rather than nothing.
      const unknown = known as { action: string };
      return unknown.action;
    }
  }
}
