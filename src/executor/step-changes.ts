import type { FileBackupRow } from '../store/step-repository.js';

/*
 * The files a step's run changed, with the diff of what was written: the executed change as its
 * backups recorded it (the diff the person approved when the run matched it, else one computed from
 * the real before and after). Paged and cut so no reply passes STEP_CHANGES_BUDGET, however many
 * files a command touched or however long a diff is.
 */

/** Characters of diff one reply carries at most (the rest of the reply is small next to it). */
export const STEP_CHANGES_BUDGET = 48 * 1024;
/** Files one reply lists at most. */
export const STEP_CHANGES_PAGE = 50;

export interface StepChangeEntry {
  path: string;
  change: 'added' | 'modified' | 'deleted';
  diff: string | null;
  diffCut: boolean;
  diffOmittedReason?: string;
}

export interface StepChangesPage {
  files: StepChangeEntry[];
  total: number;
  nextOffset: number | null;
}

export function stepChangesPage(rows: FileBackupRow[], offset = 0): StepChangesPage {
  const files: StepChangeEntry[] = [];
  let budget = STEP_CHANGES_BUDGET;
  let index = offset;
  while (index < rows.length && files.length < STEP_CHANGES_PAGE) {
    const row = rows[index]!;
    const change = row.preHash === null ? 'added' : row.postHash === null ? 'deleted' : 'modified';
    const full = row.diff;
    // A file whose diff does not fit waits for the next page, unless it is the page's first: then its start is shown.
    if (full !== null && full.length > budget && files.length > 0) break;
    const cut = full !== null && full.length > budget;
    files.push({
      path: row.path,
      change,
      diff: cut ? full!.slice(0, budget) : full,
      diffCut: cut,
      ...(full === null ? { diffOmittedReason: 'binary, or too large to compare as text (the exact content is kept for revert)' } : {}),
    });
    budget -= Math.min(full?.length ?? 0, budget) + row.path.length;
    index += 1;
    if (budget <= 0) break;
  }
  return { files, total: rows.length, nextOffset: index < rows.length ? index : null };
}
