import { describe, expect, it } from 'vitest';
import { STATUS_SENTENCE_WORDS, STATUS_WORDS, statusWords, wordsForStates } from '../../../src/domain/status-words.js';
import { STEP_STATUSES } from '../../../src/domain/state-machine.js';
import { wordsForStates as windowWordsForStates } from '../../../renderer/error-text.js';
import { STATUS_LABEL, STATUS_SENTENCE } from '../../../renderer/step-text.js';

describe("status words (the CLI's, the same as the window's)", () => {
  it("has words for every status, equal to the window's, none of them a raw state name", () => {
    for (const status of STEP_STATUSES) {
      expect(STATUS_WORDS[status]).not.toMatch(/_/);
      expect(statusWords(status)).toBe(STATUS_WORDS[status]);
    }
    expect(STATUS_WORDS).toEqual(STATUS_LABEL);
    expect(STATUS_SENTENCE_WORDS).toEqual(STATUS_SENTENCE);
    expect(statusWords('from_a_newer_host')).toBe('from_a_newer_host');
  });

  it('says raw state names in host messages in words, as the window does, and leaves plain words alone', () => {
    const messages = [
      'Step s1 is awaiting_consent; only a step that ran can be reverted.',
      'Step s1 is denied; only a step that ran can be reverted.',
      'It went from approved to running.',
      'The cancelled flag and executed code stay as they are.',
    ];
    for (const message of messages) expect(wordsForStates(message)).toBe(windowWordsForStates(message));
    expect(wordsForStates('Step s1 is awaiting_consent; only a step that ran can be reverted.')).toBe(
      'Step s1 is waiting for you; only a step that ran can be reverted.',
    );
  });
});
