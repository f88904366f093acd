import type { PersonEdit } from './step-record.js';

/** Largest diff of an edit put into an agent's outcome text; the step record holds all of it. */
const MAX_EDIT_DIFF_CHARS = 4000;

/**
 * What the person changed before approving, in words the agent and the person read alike:
 * "The user approved only hunks 1, 3 of 4 of your write" / "The user edited the command line".
 */
export function editSentence(edit: PersonEdit, approved = true): string {
  if (edit.kind === 'hunks') {
    const { accepted, total } = edit.hunks ?? { accepted: [], total: 0 };
    const left = total - accepted.length;
    return `The user approved it with edits: only hunk${accepted.length === 1 ? '' : 's'} ${accepted.join(', ')} of ${total} of your write ${accepted.length === 1 ? 'was' : 'were'} applied (${left} left out).`;
  }
  // Until the person approves their version, nothing of it was approved: it is "edited by the person".
  if (edit.kind === 'content')
    return approved
      ? 'The user edited the content of your write before approving it.'
      : 'The user edited the content of your write; their version has not been approved.';
  return approved
    ? 'The user edited your command line before approving it.'
    : 'The user edited your command line; their version has not been approved.';
}

/**
 * The sentence with what changed: the diff from your content to theirs, or the command line before and after.
 * `approved`: whether the person approved their version (the step holds an approval); until then it is
 * "edited by the person", never "approved".
 */
export function editDetailText(edit: PersonEdit, maxDiffChars = MAX_EDIT_DIFF_CHARS, approved = true): string {
  const lines = [editSentence(edit, approved)];
  const theirs = approved ? 'approved' : 'edited by the person';
  if (edit.kind === 'command') {
    lines.push(`Proposed: ${edit.commandBefore ?? ''}`, `${approved ? 'Approved' : 'Edited by the person'}: ${edit.commandAfter ?? ''}`);
  } else if (edit.diff) {
    const diff =
      edit.diff.length > maxDiffChars
        ? `${edit.diff.slice(0, maxDiffChars)}\n… (diff cut at ${maxDiffChars} of ${edit.diff.length} characters)`
        : edit.diff;
    lines.push(`What changed from your content (- yours, + what was ${theirs}):`, diff.replace(/\n$/, ''));
  } else if (edit.approvedContentHash) {
    lines.push(
      `Your content had sha256 ${edit.proposedContentHash}; the ${approved ? 'approved' : "person's"} content has sha256 ${edit.approvedContentHash}.`,
    );
  }
  return lines.join('\n');
}
