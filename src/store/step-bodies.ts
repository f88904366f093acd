import { canonicalJson } from '../domain/canonical-json.js';
import type { Step } from '../domain/step.js';

/*
 * Where a step's JSON is stored. SQLite rewrites a whole row (its overflow pages too) for any UPDATE, and a
 * step changes status half a dozen times between proposal and its end: a 10 MB writeFile kept in its row
 * went through the WAL at each one (~200 MB written for one 10 MB file). A large step's full JSON is
 * therefore written once to step_bodies, and its row keeps the step without its content, which is all that
 * the row's own readers (summaries, filters, indexes, audit traits) take from it.
 */

/** A step whose canonical JSON is longer than this keeps its content apart from its row. */
export const BODY_APART_CHARS = 64 * 1024;

/** What a step's row holds (`rowJson`) and, when its body lives apart, the full step (`bodyJson`). */
export interface StoredStep {
  rowJson: string;
  bodyJson: string | null;
}

export function storedStep(step: Step): StoredStep {
  const full = canonicalJson(step);
  const args = step.args as Record<string, unknown>;
  if (full.length <= BODY_APART_CHARS || typeof args.content !== 'string') return { rowJson: full, bodyJson: null };
  const { content: _content, ...rest } = args;
  return { rowJson: canonicalJson({ ...step, args: rest }), bodyJson: full };
}
