import { ExecutorError } from '../domain/errors.js';
import { visibleLine } from '../domain/visible-text.js';
import type { ExecutorClient } from '../ipc/client/client.js';

/*
 * Every CLI command that takes a step, plan or run id takes it here: the whole id, a unique prefix
 * (`revert step-eb6`), or the short form the window shows (`step-eb6…9f3c`: its start and end around
 * "…", or "..." typed by hand). One place, so every command accepts the same forms and says the same
 * words when an id fits none or more than one (NOT_FOUND, AMBIGUOUS_ID with the matches listed).
 */

export type IdKind = 'step' | 'plan' | 'run';

/** The most ids listed when a prefix is ambiguous; the count says how many more. */
const LISTED_MATCHES = 8;
/** Pages of summaries read for one prefix: a prefix that needs more than this is not one a person typed. */
const MAX_PAGES = 10;

/** A typed id as a pattern: its start, and (for the window's short form) its end. */
export function idPattern(given: string): { start: string; end: string } {
  const trimmed = given.trim();
  const cut = /…|\.\.\./.exec(trimmed);
  if (!cut) return { start: trimmed, end: '' };
  return { start: trimmed.slice(0, cut.index), end: trimmed.slice(cut.index + cut[0].length) };
}

/** Whether an id fits what was typed: equal, or starting (and for the short form ending) as typed. */
export function idFits(id: string, pattern: { start: string; end: string }): boolean {
  return id.startsWith(pattern.start) && id.endsWith(pattern.end) && id.length >= pattern.start.length + pattern.end.length;
}

/**
 * The one id among `candidates` the person meant: an exact match wins (an id may be the prefix of
 * another), else the only one that fits. Throws NOT_FOUND or AMBIGUOUS_ID, naming the matches.
 */
export function pickId(kind: IdKind, given: string, candidates: Iterable<string>, incomplete = false): string {
  const pattern = idPattern(given);
  if (pattern.start === '' && pattern.end === '')
    throw new ExecutorError('INVALID_INPUT', `Give a ${kind} id, or the first characters of one.`);
  const matches = [...new Set(candidates)].filter((id) => idFits(id, pattern)).sort();
  if (matches.includes(given.trim())) return given.trim();
  const shown = visibleLine(given.trim().slice(0, 120));
  // Not every candidate was read: one fit among those read may not be the only one, so none is guessed.
  if (incomplete)
    throw new ExecutorError(
      'AMBIGUOUS_ID',
      `Too many ${kind}s mention "${shown}" to be sure which you mean${matches.length ? ` (${matches.length} fit among those read: ${matches.slice(0, LISTED_MATCHES).map(visibleLine).join(', ')})` : ''}. Type more of the id.`,
      { kind, given: given.trim(), matches: matches.slice(0, 50), incomplete: true },
    );
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0)
    // A run keeps the code the host gives an unknown run; steps and plans NOT_FOUND, as theirs.
    throw new ExecutorError(
      kind === 'run' ? 'RUN_NOT_FOUND' : 'NOT_FOUND',
      `No ${kind} id starts with "${shown}". \`executor ${listCommand(kind)}\` lists them.`,
      {
        kind,
        given: given.trim(),
      },
    );
  const listed = matches.slice(0, LISTED_MATCHES).map(visibleLine);
  const rest = matches.length - listed.length;
  throw new ExecutorError(
    'AMBIGUOUS_ID',
    `"${shown}" fits ${matches.length} ${kind} ids: ${listed.join(', ')}${rest > 0 ? ` and ${rest} more` : ''}. Type more of the id.`,
    { kind, given: given.trim(), matches: matches.slice(0, 50) },
  );
}

function listCommand(kind: IdKind): string {
  return kind === 'run' ? 'runs list' : 'steps list';
}

/** The step or plan ids a typed id could mean, from the summaries whose words hold its start. */
async function stepOrPlanIds(api: ExecutorClient, kind: 'step' | 'plan', given: string): Promise<{ ids: string[]; more: boolean }> {
  const pattern = idPattern(given);
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const words = (pattern.start || pattern.end).slice(0, 200);
    const reply = await api.listStepSummaries({ text: words, limit: 200, ...(cursor ? { cursor } : {}) });
    for (const item of reply.items) ids.push(kind === 'step' ? item.id : item.planId);
    cursor = reply.nextCursor ?? undefined;
    if (!cursor) return { ids, more: false };
  }
  return { ids, more: true };
}

async function runIds(api: ExecutorClient): Promise<{ ids: string[]; more: boolean }> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const reply = await api.listRuns({ limit: 200, ...(cursor ? { cursor } : {}) });
    ids.push(...reply.runs.map((run) => run.id));
    cursor = reply.nextCursor ?? undefined;
    if (!cursor) return { ids, more: false };
  }
  return { ids, more: true };
}

/** The whole id a person typed (whole, a unique prefix, or the window's short form), or a typed error. */
export async function resolveId(api: ExecutorClient, kind: IdKind, given: string): Promise<string> {
  const { ids, more } = kind === 'run' ? await runIds(api) : await stepOrPlanIds(api, kind, given);
  return pickId(kind, given, ids, more);
}
