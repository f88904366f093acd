import type { PersonEdit } from './step-record.js';

/** Largest diff of an edit put into an agent's outcome text; the step record holds all of it. */
const MAX_EDIT_DIFF_CHARS = 4000;

/**
 * Who reads the words: the agent whose step the person changed ("The user edited your command
 * line"), or the person who changed it ("You edited the agent's command line"). The same edit told
 * to the person in the agent's words ("your write") reads as if they had written it.
 */
export type EditReader = 'agent' | 'person';

interface EditWords {
  who: string;
  theirWrite: string;
  theirCommand: string;
  theirContent: string;
  /** Whose version the edit made, for "… has not been approved". */
  editorsVersion: string;
  /** The diff's sides: the proposal, the edit. */
  proposedSide: string;
  proposedHas: string;
}

const WORDS: Record<EditReader, EditWords> = {
  agent: {
    who: 'The user',
    theirWrite: 'your write',
    theirCommand: 'your command line',
    theirContent: 'your content',
    editorsVersion: 'their version',
    proposedSide: 'yours',
    proposedHas: 'Your content had',
  },
  person: {
    who: 'You',
    theirWrite: "the agent's write",
    theirCommand: "the agent's command line",
    theirContent: "the agent's content",
    editorsVersion: 'your version',
    proposedSide: "the agent's",
    proposedHas: "The agent's content had",
  },
};

/**
 * What the person changed before approving, in the words of whoever reads it:
 * "The user approved only hunks 1, 3 of 4 of your write" (the agent) / "You approved only hunks
 * 1, 3 of 4 of the agent's write" (the person).
 */
export function editSentence(edit: PersonEdit, approved = true, reader: EditReader = 'agent'): string {
  const words = WORDS[reader];
  if (edit.kind === 'hunks') {
    const { accepted, total } = edit.hunks ?? { accepted: [], total: 0 };
    const left = total - accepted.length;
    return `${words.who} approved it with edits: only hunk${accepted.length === 1 ? '' : 's'} ${accepted.join(', ')} of ${total} of ${words.theirWrite} ${accepted.length === 1 ? 'was' : 'were'} applied (${left} left out).`;
  }
  // Until the person approves their version, nothing of it was approved: it is "edited by the person".
  if (edit.kind === 'content')
    return approved
      ? `${words.who} edited the content of ${words.theirWrite} before approving it.`
      : `${words.who} edited the content of ${words.theirWrite}; ${words.editorsVersion} has not been approved.`;
  return approved
    ? `${words.who} edited ${words.theirCommand} before approving it.`
    : `${words.who} edited ${words.theirCommand}; ${words.editorsVersion} has not been approved.`;
}

/**
 * The sentence with what changed: the diff from the proposed content to the edited one, or the
 * command line before and after. `approved`: whether the person approved their version (the step
 * holds an approval); until then it is "edited by the person", never "approved".
 */
export function editDetailText(
  edit: PersonEdit,
  maxDiffChars = MAX_EDIT_DIFF_CHARS,
  approved = true,
  reader: EditReader = 'agent',
): string {
  const words = WORDS[reader];
  const lines = [editSentence(edit, approved, reader)];
  const edited =
    reader === 'person' ? (approved ? 'what you approved' : 'your edit') : `what was ${approved ? 'approved' : 'edited by the person'}`;
  if (edit.kind === 'command') {
    const after = reader === 'person' ? (approved ? 'Approved' : 'Your edit') : approved ? 'Approved' : 'Edited by the person';
    lines.push(`Proposed: ${edit.commandBefore ?? ''}`, `${after}: ${edit.commandAfter ?? ''}`);
  } else if (edit.diff) {
    const diff =
      edit.diff.length > maxDiffChars
        ? `${edit.diff.slice(0, maxDiffChars)}\n… (diff cut at ${maxDiffChars} of ${edit.diff.length} characters)`
        : edit.diff;
    lines.push(`What changed from ${words.theirContent} (- ${words.proposedSide}, + ${edited}):`, diff.replace(/\n$/, ''));
  } else if (edit.approvedContentHash) {
    const theirs =
      reader === 'person'
        ? approved
          ? 'the approved content'
          : 'your version'
        : approved
          ? 'the approved content'
          : "the person's content";
    lines.push(`${words.proposedHas} sha256 ${edit.proposedContentHash}; ${theirs} has sha256 ${edit.approvedContentHash}.`);
  }
  return lines.join('\n');
}
