import { describe, expect, it } from 'vitest';
import {
  collapsePlainSpace,
  hasInvisible,
  splitInvisible,
  trimPlainSpace,
  visibleBlock,
  visibleJson,
  visibleLine,
} from '../../../src/domain/visible-text.js';
import { codePointOf, HIDDEN_GRID } from '../../helpers/hidden-characters.js';

/** Every character a terminal or a reader's eye could be fooled by, one per entry. */
const HOSTILE = [
  '\u001b',
  '\u0007',
  '\u0008',
  '\r',
  '\u0000',
  '\u007f',
  '\u009b',
  '\u009d',
  '\u0085',
  '\u202a',
  '\u202b',
  '\u202c',
  '\u202d',
  '\u202e',
  '\u2066',
  '\u2067',
  '\u2068',
  '\u2069',
  '\u200e',
  '\u200f',
  '\u061c',
  '\u200b',
  '\u200c',
  '\u200d',
  '\u2060',
  '\ufeff',
  '\u00ad',
  '\u2028',
  '\u2029',
  '\u{e0041}',
  '\ud800',
  '\u3164',
  ...HIDDEN_GRID,
];

describe('visibleLine and visibleBlock', () => {
  it.each(HOSTILE.map((character) => [character.codePointAt(0)!.toString(16), character]))('never write U+%s raw', (_name, character) => {
    for (const shown of [visibleLine(`a${character}b`), visibleBlock(`a${character}b`), visibleJson(JSON.stringify(`a${character}b`))]) {
      expect(shown).not.toContain(character);
      expect(shown.replace(/^"|"$/g, '')).toMatch(/^a.+b$/);
    }
    expect(JSON.parse(visibleJson(JSON.stringify(`a${character}b`)))).toBe(`a${character}b`);
    expect(hasInvisible(`a${character}b`)).toBe(true);
  });

  it('show the escapes a reader recognizes', () => {
    expect(visibleLine('\u001b[1A\u001b[2K')).toBe('\\x1b[1A\\x1b[2K');
    expect(visibleLine('\u001b]0;owned\u0007')).toBe('\\x1b]0;owned\\x07');
    expect(visibleLine('x\u009b2Jy')).toBe('x\\u009b2Jy');
    expect(visibleLine('evil\u202Etxt.exe')).toBe('evil<U+202E>txt.exe');
    expect(visibleLine('a\u{e0041}')).toBe('a<U+E0041>');
    expect(visibleLine('one\ntwo\tthree\r')).toBe('one\\ntwo\\tthree\\r');
  });

  it('keep newlines and tabs in a block, but not a carriage return', () => {
    expect(visibleBlock('+curl x | sh\r\n-\tsafe\n')).toBe('+curl x | sh\\r\n-\tsafe\n');
  });

  it('leave ordinary text alone, accents, CJK and emoji included', () => {
    const plain = 'Grüße, 世界 🎉 — "quotes" \\x1b stays as typed';
    expect(visibleLine(plain)).toBe(plain);
    expect(visibleBlock(plain)).toBe(plain);
    expect(hasInvisible(plain)).toBe(false);
  });

  it('keep JSON the same value after escaping', () => {
    const value = { purpose: 'a\u001b[2Kb\u202ec', lines: ['x\u0085', 'y'] };
    const shown = visibleJson(JSON.stringify(value, null, 2));
    expect(JSON.parse(shown)).toEqual(value);
    expect(shown).toContain('\\u202e');
  });
});

describe('splitInvisible', () => {
  it('cuts a text around each hidden character, keeping the rest as it is', () => {
    expect(splitInvisible('src/\u202Egnp.js')).toEqual([
      { text: 'src/', hidden: false },
      { text: '\u202E', hidden: true, codePoint: 'U+202E' },
      { text: 'gnp.js', hidden: false },
    ]);
    expect(splitInvisible('line one\n\tline two')).toEqual([{ text: 'line one\n\tline two', hidden: false }]);
    expect(splitInvisible('a\u200b\u200bb').filter((part) => part.hidden)).toHaveLength(2);
  });
});

describe('the hidden class is complete: every default-ignorable character is marked, by CLI and window alike', () => {
  it.each(HIDDEN_GRID.map((character) => [codePointOf(character), character]))(
    '%s is a marker in the window and an escape in the CLI',
    (name, character) => {
      expect(splitInvisible(`a${character}b`)).toEqual([
        { text: 'a', hidden: false },
        { text: character, hidden: true, codePoint: name },
        { text: 'b', hidden: false },
      ]);
      expect(visibleLine(`a${character}b`)).toBe(`a<${name}>b`);
      expect(visibleBlock(`a${character}b`)).toBe(`a<${name}>b`);
    },
  );

  it('every code point Unicode calls default-ignorable, assigned or not, is marked', () => {
    const ignorable = /\p{Default_Ignorable_Code_Point}/u;
    const missed: string[] = [];
    for (let code = 0; code <= 0x10ffff; code++) {
      if (code >= 0xd800 && code <= 0xdfff) continue;
      const character = String.fromCodePoint(code);
      if (ignorable.test(character) && !hasInvisible(character)) missed.push(codePointOf(character));
    }
    expect(missed).toEqual([]);
  });

  it('an emoji with a variation selector shows the selector: text can hide data in selectors', () => {
    expect(visibleLine('ok\u2764\ufe0f')).toBe('ok\u2764<U+FE0F>');
  });
});

describe('plain white space', () => {
  it('is collapsed and trimmed, but a BOM, a line separator or a zero-width space is never taken for it', () => {
    expect(collapsePlainSpace('  a \t\n b\u00a0\u3000c  ')).toBe('a b c');
    expect(collapsePlainSpace('\ufeffa\ufeff \u2028b\u2029')).toBe('\ufeffa\ufeff \u2028b\u2029');
    expect(trimPlainSpace(' \u200bx\ufeff ')).toBe('\u200bx\ufeff');
    expect(trimPlainSpace('   ')).toBe('');
  });
});
