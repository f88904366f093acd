import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { commandLineOf, quoteArgv, quoteShellWord } from '../../../src/domain/shell-quote.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/** The argv bash really builds from a command line: each word printed, NUL-terminated. */
function argvBashReads(line: string): string[] {
  const result = spawnSync('bash', ['-c', `printf '%s\\0' ${line}`], { encoding: 'utf8' });
  expect(result.status, result.stderr).toBe(0);
  return result.stdout.split('\0').slice(0, -1);
}

/** Words with no NUL (no argv can hold one) and no lone surrogate (no argv can carry one either). */
const argvWord = fc.string({ unit: 'binary', maxLength: 12 }).map((word) => word.replace(/\0/g, '').replace(/\p{Cs}/gu, '\uFFFD'));

describe('quoteShellWord', () => {
  it('leaves plain words bare and quotes what a shell would read as syntax', () => {
    expect(quoteArgv(['git', 'commit', '-m', 'fix: the bug'])).toBe("git commit -m 'fix: the bug'");
    expect(quoteArgv(['ls', '-la', 'src/a.ts', 'key=value', 'user@host:path'])).toBe('ls -la src/a.ts key=value user@host:path');
    expect(quoteShellWord('')).toBe("''");
    expect(quoteShellWord("it's")).toBe(`'it'\\''s'`);
    for (const special of [
      '$HOME',
      '`id`',
      '$(id)',
      'a;b',
      'a|b',
      'a&b',
      '*.ts',
      '~',
      '~/x',
      '#x',
      'a b',
      '{a,b}',
      '!x',
      'a>b',
      '"q"',
      'a\\b',
    ]) {
      expect(quoteShellWord(special)).toBe(`'${special}'`);
    }
  });

  it("writes control characters as visible $'…' escapes, so the line stays one line and shows them", () => {
    expect(quoteShellWord('a\nb')).toBe("$'a\\nb'");
    expect(quoteShellWord('\x1b[31mred')).toBe("$'\\x1b[31mred'");
    expect(quoteShellWord("tab\there's \\ one")).toBe("$'tab\\there\\'s \\\\ one'");
    expect(quoteShellWord('c1\u009bx')).toBe("$'c1\\xc2\\x9bx'");
    expect(quoteShellWord('\r\x7f')).toBe("$'\\r\\x7f'");
    for (const word of ['a\nb', '\x1b]0;title\x07', '\u0085next']) expect(quoteShellWord(word)).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });

  it('quotes a program name a shell would read as an assignment or a reserved word', () => {
    expect(quoteArgv(['A=b', 'x=y'])).toBe("'A=b' x=y");
    expect(quoteArgv(['time', 'ls'])).toBe("'time' ls");
    expect(quoteArgv(['if', 'then'])).toBe("'if' then");
  });

  it('gives back exactly the same argv when bash reads the line (any words, any characters)', () => {
    fc.assert(
      fc.property(fc.array(argvWord, { minLength: 1, maxLength: 6 }), (words) => {
        expect(argvBashReads(quoteArgv(words))).toEqual(words);
      }),
      { numRuns: 100 },
    );
  });

  it('runs the program it names as the program, not as shell syntax, when the line is pasted into bash', () => {
    const bin = tempDir();
    const names = ['time', 'if', 'A=b', 'my tool', "it's", 'tab\there', 'line\nbreak', '!bang', '{a,b}'];
    for (const name of names) {
      fs.writeFileSync(path.join(bin, name), '#!/bin/sh\nprintf "%s\\0" "${0##*/}" "$@"\n', { mode: 0o755 });
    }
    for (const name of names) {
      const result = spawnSync('/bin/bash', ['-c', quoteArgv([name, 'arg one', '$x'])], { encoding: 'utf8', env: { PATH: bin } });
      expect(result.stdout.split('\0').slice(0, -1), `${name}: ${result.stderr}`).toEqual([name, 'arg one', '$x']);
    }
  });
});

describe('commandLineOf', () => {
  it('is the command string as the shell gets it, or the argv quoted', () => {
    expect(commandLineOf({ command: 'npm test && echo "done"' })).toBe('npm test && echo "done"');
    expect(commandLineOf({ argv: ['echo', 'hello world'] })).toBe("echo 'hello world'");
  });
});
