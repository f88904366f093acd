import { describe, expect, it } from 'vitest';
import { editDetailText, type EditReader } from '../../../src/domain/person-edit.js';
import type { PersonEdit } from '../../../src/domain/step-record.js';

const by = { user: 'ada', channel: 'window' } as unknown as PersonEdit['by'];
const base = { version: 2, by, at: '2026-11-28T00:00:00.000Z', proposedStepHash: 'a'.repeat(64) } as const;

/** One edit of each kind, the content one with and without its diff. */
const EDITS: PersonEdit[] = [
  { ...base, kind: 'hunks', hunks: { accepted: [1, 3], total: 4 }, diff: '@@ -1 +1 @@\n-a\n+b\n' } as unknown as PersonEdit,
  { ...base, kind: 'content', diff: '@@ -1 +1 @@\n-a\n+b\n' } as unknown as PersonEdit,
  { ...base, kind: 'content', proposedContentHash: 'p'.repeat(64), approvedContentHash: 'q'.repeat(64) } as unknown as PersonEdit,
  { ...base, kind: 'command', commandBefore: 'ls -la', commandAfter: 'rm -f old.log' } as unknown as PersonEdit,
];

/** Words that only fit one reader: the agent's view of its own step, or the person's view of theirs. */
const ONLY_FOR: Record<EditReader, RegExp> = {
  agent: /\b(?:The user|their version|your (?:write|command line|content)|yours\b|Your content)/,
  person: /\b(?:You\b|the agent's|your (?:version|edit)|what you approved|The agent's content)/,
};

describe('a person edit in the words of whoever reads it', () => {
  for (const edit of EDITS)
    // Approving some hunks is an approval: such an edit is never waiting.
    for (const approved of edit.kind === 'hunks' ? [true] : [true, false]) {
      it(`${edit.kind}${edit.diff ? ' with a diff' : ''}, ${approved ? 'approved' : 'not yet approved'}`, () => {
        const person = editDetailText(edit, undefined, approved, 'person');
        const agent = editDetailText(edit, undefined, approved, 'agent');
        // The person is never told about "your write" (the agent's) nor "the user" (themselves).
        expect(person).not.toMatch(ONLY_FOR.agent);
        expect(person).toMatch(ONLY_FOR.person);
        expect(agent).not.toMatch(ONLY_FOR.person);
        expect(agent).toMatch(ONLY_FOR.agent);
        // Not approved is never told as approved, to either.
        if (!approved)
          for (const text of [person, agent]) expect(text).not.toMatch(/\bApproved:|before approving|what you approved|approved it with/);
      });
    }
});
