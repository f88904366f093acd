import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tokenizeCode, tokenLines, type CodeLanguage, type TokenKind } from '../../../renderer/code-tokens.js';

const kindsOf = (code: string, language: CodeLanguage, kind: TokenKind) =>
  tokenizeCode(code, language)
    .filter((token) => token.kind === kind)
    .map((token) => token.text);

/** Text that looks like code: quotes, comment starters, escapes and newlines are frequent, hidden characters too. */
const codeLike = fc.string({
  unit: fc.oneof(
    fc.constantFrom(
      "'",
      '"',
      '`',
      '/',
      '*',
      '#',
      '\\',
      '\n',
      '.',
      '$',
      '{',
      '}',
      '0',
      'x',
      'e',
      'r',
      'b',
      ' ',
      'if',
      'def',
      '\u202e',
      '\u200b',
      '\r',
      '\u2028',
    ),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
    fc.string({ minLength: 1, maxLength: 1 }),
  ),
  maxLength: 80,
});

describe('tokenizeCode', () => {
  for (const language of ['javascript', 'python'] as const) {
    it(`never adds, drops or reorders a character (${language})`, () => {
      fc.assert(
        fc.property(codeLike, (code) => {
          expect(
            tokenizeCode(code, language)
              .map((token) => token.text)
              .join(''),
          ).toBe(code);
          expect(
            tokenLines(tokenizeCode(code, language))
              .map((line) => line.map((token) => token.text).join(''))
              .join('\n'),
          ).toBe(code.replace(/\n$/, ''));
        }),
        { numRuns: 400 },
      );
    });
  }

  it('colours JavaScript comments, strings, numbers, keywords and literals', () => {
    const code =
      "// fetch the rate\nconst rate = await fetch('https://x.test/a?b=1'); /* block\nstill */ let n = 0x1F + 2.5e3 + 10n;\nif (rate === null) return `t ${n}`;";
    expect(kindsOf(code, 'javascript', 'comment')).toEqual(['// fetch the rate', '/* block\nstill */']);
    expect(kindsOf(code, 'javascript', 'string')).toEqual(["'https://x.test/a?b=1'", '`t ${', '}`']);
    expect(kindsOf(code, 'javascript', 'number')).toEqual(['0x1F', '2.5e3', '10n']);
    expect(kindsOf(code, 'javascript', 'keyword')).toEqual(['const', 'await', 'let', 'if', 'return']);
    expect(kindsOf(code, 'javascript', 'literal')).toEqual(['null']);
    // Names with digits or keywords inside stay names.
    expect(kindsOf('let x1 = ifx + returned', 'javascript', 'keyword')).toEqual(['let']);
    expect(kindsOf('let x1 = ifx + returned', 'javascript', 'number')).toEqual([]);
  });

  it('colours Python comments, prefixed and triple-quoted strings, keywords and literals', () => {
    const code = 'def f(x):\n    """Doc\n    string"""\n    # note\n    return rb"\\x00" if x is None else f\'{x}\'';
    expect(kindsOf(code, 'python', 'comment')).toEqual(['# note']);
    expect(kindsOf(code, 'python', 'string')).toEqual(['"""Doc\n    string"""', 'rb"\\x00"', "f'{x}'"]);
    expect(kindsOf(code, 'python', 'keyword')).toEqual(['def', 'return', 'if', 'is', 'else']);
    expect(kindsOf(code, 'python', 'literal')).toEqual(['None']);
  });

  it('keeps an unclosed quote to its own line, and an unclosed comment to the end', () => {
    expect(kindsOf("x = 'open\nlet y = 2", 'javascript', 'keyword')).toEqual(['let']);
    expect(kindsOf('a /* never closed\nlet y', 'javascript', 'comment')).toEqual(['/* never closed\nlet y']);
  });

  it('never colours code as a comment or a string where the language runs it', () => {
    // A `//` comment ends at CR, U+2028 and U+2029 in JavaScript: what follows runs, so it is coloured as code.
    for (const lineBreak of ['\r', '\u2028', '\u2029']) {
      expect(kindsOf(`// note${lineBreak}run()`, 'javascript', 'comment')).toEqual(['// note']);
    }
    expect(kindsOf('# note\rrun()', 'python', 'comment')).toEqual(['# note']);
    // A regex literal holding "//" or a quote starts no comment and no string.
    const regex = "const re = /\\/\\/'[/]/g; run(re)";
    expect(kindsOf(regex, 'javascript', 'string')).toEqual(["/\\/\\/'[/]/g"]);
    expect(kindsOf(regex, 'javascript', 'comment')).toEqual([]);
    expect(kindsOf('return /x/.test(s)', 'javascript', 'string')).toEqual(['/x/']);
    // After a name, a number or a bracket, "/" divides.
    expect(kindsOf('const half = total / 2 / count; run()', 'javascript', 'string')).toEqual([]);
    expect(kindsOf('(a) / b // c', 'javascript', 'comment')).toEqual(['// c']);
    // Code inside ${…} is code, however deep; the template resumes after its closing brace.
    const template = 'const t = `a ${ run({ x: `b ${ deeper() }` }) } c`; after()';
    expect(kindsOf(template, 'javascript', 'string')).toEqual(['`a ${', '`b ${', '}`', '} c`']);
    expect(kindsOf(template, 'javascript', 'keyword')).toEqual(['const']);
  });

  it('cuts into numbered lines without the newlines', () => {
    const lines = tokenLines(tokenizeCode('/* a\nb */ x\n\ny\n', 'javascript'));
    expect(lines.map((line) => line.map((token) => `${token.kind}:${token.text}`))).toEqual([
      ['comment:/* a'],
      ['comment:b */', 'plain: x'],
      [],
      ['plain:y'],
    ]);
  });
});
