import { describe, expect, it } from 'vitest';
import { asSentence, flatText, withReason } from '../../../src/domain/sentence-text.js';

describe('asSentence', () => {
  it('ends a reason with exactly one stop, keeping its own ! ? … and closing quotes', () => {
    expect(asSentence('no thanks')).toBe('no thanks.');
    expect(asSentence('no thanks.')).toBe('no thanks.');
    expect(asSentence('no thanks...')).toBe('no thanks...');
    expect(asSentence('why would you?')).toBe('why would you?');
    expect(asSentence('never!')).toBe('never!');
    expect(asSentence('wait…')).toBe('wait…');
    expect(asSentence('He said "stop."')).toBe('He said "stop."');
    expect(asSentence('She said “no!”')).toBe('She said “no!”');
    expect(asSentence('(see the log.)')).toBe('(see the log.)');
    expect(asSentence('"quoted"')).toBe('"quoted".');
    expect(asSentence('止めて。')).toBe('止めて。');
  });

  it('says nothing for a reason with no words, so no sentence ends in ": ."', () => {
    expect(asSentence('')).toBe('');
    expect(asSentence('   \n\t ')).toBe('');
    expect(asSentence(' : ')).toBe('');
    expect(asSentence('—')).toBe('');
  });

  it('drops dangling punctuation before its stop, and trailing space and line breaks', () => {
    expect(asSentence('see the log:')).toBe('see the log.');
    expect(asSentence('first, then; ')).toBe('first, then.');
    expect(asSentence('done.\n\n')).toBe('done.');
    expect(asSentence('done. \r\n')).toBe('done.');
  });

  it('reads a multi-line reason as one line', () => {
    expect(asSentence('line one\nline two\r\n\tline three')).toBe('line one line two line three.');
    expect(flatText(' a \u2028 b ')).toBe('a b');
  });
});

describe('withReason', () => {
  it('joins a reason after a colon with one final stop, or ends the lead when there is none', () => {
    expect(withReason('Rejected', 'too risky.')).toBe('Rejected: too risky.');
    expect(withReason('Rejected', 'really?')).toBe('Rejected: really?');
    expect(withReason('Rejected', '')).toBe('Rejected.');
    expect(withReason('Rejected', null)).toBe('Rejected.');
    expect(withReason('Rejected', undefined)).toBe('Rejected.');
    expect(withReason('Rejected', '.')).toBe('Rejected.');
    expect(withReason('Rejected', ' ?! ')).toBe('Rejected.');
    expect(withReason('Rejected', '👎')).toBe('Rejected: 👎.');
  });
});
