import { ExecutorError } from './errors.js';
import type { StepStatus } from './state-machine.js';
/*
 * A large write keeps its content once, as a backup blob in the data directory (src/store/step-bodies.ts). When
 * that blob is gone or no longer matches its name (a database copied without blobs/, a file deleted, cut short or
 * damaged), the step is still listed, shown, rejected, cancelled, expired and reverted as any other; it is never
 * approved or run, since what it would write is not known any more. Not a status: the step keeps where it stood
 * (waiting, approved, executed), and every surface says "content lost" beside it.
 */

/** Why a large write's content cannot be read back: its blob is `missing`, `corrupt` (its bytes no longer hash to its name), or `unreadable`. */
export type ContentLostWhy = 'missing' | 'corrupt' | 'unreadable';

export interface ContentLost {
  /** The sha256 of the content, which names its blob under blobs/; null when the database lost the step's stored body itself. */
  blob: string | null;
  why: ContentLostWhy;
}

/** The label beside a step's status, in the CLI and the window alike. */
export const CONTENT_LOST_LABEL = 'Content lost';

const WHY_WORDS: Record<ContentLostWhy, string> = {
  missing: 'is missing from the data directory',
  corrupt: 'no longer matches its hash (damaged or cut short)',
  unreadable: 'could not be read',
};

/** Statuses in which a step can still be decided or run: the words then say it never will be. */
const OPEN: readonly StepStatus[] = ['proposed', 'evaluated', 'awaiting_consent', 'approved'];

/** In a sentence: what is lost, and what the person can do about it (for a step still open, or one that ended). */
export function contentLostWords(lost: ContentLost, status: StepStatus = 'awaiting_consent'): string {
  const where =
    lost.blob === null
      ? 'The database no longer holds its stored body (step_bodies)'
      : `The backup blob ${lost.blob.slice(0, 12)}… that held its content ${WHY_WORDS[lost.why]}`;
  // Every surface puts its own "Content lost" before this: the sentence starts with what is gone.
  return (
    `${where}. ` +
    (OPEN.includes(status)
      ? 'It can no longer be approved or run; reject it (or let it expire), or restore the blobs folder from a backup of the data directory.'
      : 'What it would have written (or wrote) cannot be shown; restoring the blobs folder from a backup of the data directory brings it back.')
  );
}

/** The typed refusal of anything that would approve, change or run a step whose content is lost. */
export function contentLostError(stepId: string, lost: ContentLost, doing: string): ExecutorError {
  return new ExecutorError('STEP_CONTENT_LOST', `Step ${stepId} cannot be ${doing}. ${contentLostWords(lost)}`, {
    stepId,
    blob: lost.blob,
    why: lost.why,
  });
}
