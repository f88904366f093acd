import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkCommandPrograms, type CommandVerdict } from '../../../src/policy/command-policy.js';
import { analyseArgv, analyseCommandLine } from '../../../src/policy/shell-analysis.js';
import { ALWAYS_ASK_KINDS, type UnknowableKind } from '../../../src/policy/shell-findings.js';
import { loadShellParser } from '../../../src/policy/shell-parser.js';
import { decodeAnsiC, type Dialect } from '../../../src/policy/shell-words.js';

/*
 * The words the policy reads must be the words the shell runs. The shells themselves are the
 * reference: bash, busybox ash (the default sandbox image's /bin/sh, the same busybox 1.35 as on
 * this machine) and dash (Debian's /bin/sh) run every case here, and the analysis must agree with
 * each of them, or say it cannot (and then the step asks).
 */

beforeAll(async () => {
  await loadShellParser();
});

const SHELLS: Record<Dialect, string[]> = { bash: ['bash', '-c'], ash: ['busybox', 'sh', '-c'], dash: ['dash', '-c'] };
const present = (Object.keys(SHELLS) as Dialect[]).every((dialect) => {
  const [program, ...args] = SHELLS[dialect];
  return spawnSync(program!, [...args, 'true']).status === 0;
});

/** What one real shell makes of a line's words: the arguments of `set --`, or null when it refuses the line. */
function shellWords(dialect: Dialect, words: string): string[] | null {
  const [program, ...args] = SHELLS[dialect];
  const ran = spawnSync(program!, [...args, `set -- ${words}; printf '%s\\0' "$@"`], { encoding: 'latin1', timeout: 10_000 });
  if (ran.status !== 0 || ran.stderr !== '') return null;
  return ran.stdout.split('\0').slice(0, -1);
}

/** The shells' bytes, read as the analysis reads characters (one byte, one code unit below 0x100). */
const latin1 = (text: string) => Buffer.from(text, 'latin1').toString('latin1');

const DENY = { allow: [], deny: ['rm', 'curl'] };

/** How a verdict ranks: denied outright, or sent to the person under a deny list, or let through. */
function rank(verdict: CommandVerdict): number {
  if (!verdict.allowed) return 2;
  return verdict.unknowable.length > 0 ? 1 : 0;
}

describe.skipIf(!present)("$'…' is decoded as each shell decodes it", () => {
  const ESCAPES = [
    '\\0',
    '\\00',
    '\\000',
    '\\0000',
    '\\08',
    '\\1',
    '\\101',
    '\\1011',
    '\\377',
    '\\400',
    '\\477',
    '\\777',
    '\\x00',
    '\\x0',
    '\\x',
    '\\xg',
    '\\x41',
    '\\x414',
    '\\x0041',
    '\\u0000',
    '\\u41',
    '\\u0072',
    '\\U00000072',
    '\\u',
    '\\c@',
    '\\c`',
    '\\cA',
    '\\ca',
    '\\c?',
    '\\c[',
    '\\c\\\\',
    '\\e',
    '\\E',
    '\\a',
    '\\b',
    '\\f',
    '\\n',
    '\\r',
    '\\t',
    '\\v',
    '\\?',
    '\\"',
    '\\\\',
    '\\q',
    '\\8',
    '\\x7f',
    '\\x81',
    '\\xff',
  ];

  it.each(ESCAPES)('%s', (escape) => {
    for (const dialect of ['bash', 'ash', 'dash'] as const) {
      const body = `r${escape}mZ`;
      const real = shellWords(dialect, `$'${body}'`);
      expect(real, dialect).not.toBeNull();
      expect(decodeAnsiC(body, dialect), `${dialect} ${escape}`).toEqual({ value: latin1(real![0]!) });
    }
  });

  it('agrees with the shells on random bodies built from escapes and characters', () => {
    const part = fc.oneof(fc.constantFrom(...ESCAPES), fc.constantFrom('r', 'm', 'a', '0', '7', 'x', 'c', '@', ' ', '$', '"'));
    fc.assert(
      fc.property(fc.array(part, { maxLength: 6 }), (parts) => {
        const body = parts.join('');
        for (const dialect of ['bash', 'ash', 'dash'] as const) {
          const real = shellWords(dialect, `$'${body}'`);
          const decoded = decodeAnsiC(body, dialect);
          // Where the analysis is unsure (a locale-dependent \u), it says so and the word is unreadable.
          if (decoded.value === null || real === null) continue;
          expect(decoded.value, `${dialect} ${JSON.stringify(body)}`).toBe(latin1(real[0]!));
        }
      }),
      { numRuns: 60 },
    );
  });
});

/** Pieces a hostile agent puts inside a program's name; each shell drops or keeps them its own way. */
const HOSTILE = [
  "$'\\0'",
  "$'\\00'",
  "$'\\x00'",
  "$'\\x0'",
  "$'\\u0000'",
  "$'\\U00000000'",
  "$'\\c@'",
  "$'\\c`'",
  "$'\\400'",
  "$'\\0junk'",
  "$'\\x00\\x72'",
  "$''",
  "''",
  '""',
  '\\',
  "$'\\e'",
  "$'\\c'",
  '$""',
  "$'\\''",
];

/** A word spelling `name` with hostile pieces between and around its letters. */
function hostileWord(name: string): fc.Arbitrary<string> {
  return fc
    .array(fc.constantFrom(...HOSTILE, '', ''), { minLength: name.length + 1, maxLength: name.length + 1 })
    .map((pieces) => pieces.map((piece, index) => `${piece}${name[index] ?? ''}`).join(''))
    .map((word) => word.replace(/\\([a-z])/g, '\\$1'));
}

describe.skipIf(!present)('a program hidden by bytes and quoting is never rated lower than the plain name', () => {
  /** Plain lines, each with a program starter or a denied program as its first word. */
  const TARGETS: { name: string; line: (word: string) => string }[] = [
    { name: 'rm', line: (word) => `${word} victim.txt` },
    { name: 'curl', line: (word) => `${word} http://x` },
    { name: 'sh', line: (word) => `${word} -c 'rm victim.txt'` },
    { name: 'bash', line: (word) => `${word} -c 'ls'` },
    { name: 'busybox', line: (word) => `${word} rm victim.txt` },
    { name: 'eval', line: (word) => `${word} ls` },
    { name: 'env', line: (word) => `${word} -S 'ls'` },
    { name: 'PATH', line: (word) => `export ${word}=/tmp` },
  ];

  it.each(TARGETS)('around $name', ({ name, line }) => {
    const plain = line(name);
    const plainRank = rank(checkCommandPrograms(plain, DENY));
    expect(plainRank).toBeGreaterThan(0);
    fc.assert(
      fc.property(hostileWord(name), (word) => {
        const hostile = line(word);
        const verdict = checkCommandPrograms(hostile, DENY);
        // Only words some real shell reads as the plain name must hold the plain rank.
        const readsAsName = (['bash', 'ash', 'dash'] as const).some((dialect) => shellWords(dialect, word)?.join(' ') === name);
        if (readsAsName) expect(rank(verdict), hostile).toBeGreaterThanOrEqual(plainRank);
        // And a line the shells read differently always asks, whatever the lists.
        const kinds = new Set<UnknowableKind>(verdict.unknowable.map((entry) => entry.kind));
        if (readsAsName && word !== name && verdict.allowed)
          expect(
            [...kinds].some((kind) => kind !== 'wrapper'),
            hostile,
          ).toBe(true);
      }),
      { numRuns: 40 },
    );
  });

  it('names every program a real shell would run, or says it cannot', () => {
    const piece = fc.oneof(fc.constantFrom(...HOSTILE), fc.constantFrom('r', 'm', 'c', 'u', 'l', "'rm'", '"m"', '\\r'));
    fc.assert(
      fc.property(fc.array(piece, { minLength: 1, maxLength: 6 }), (pieces) => {
        const word = pieces.join('');
        const analysis = analyseCommandLine(`${word} x`);
        if (analysis.unknowable.length > 0) return;
        for (const dialect of ['bash', 'ash', 'dash'] as const) {
          const real = shellWords(dialect, `${word} x`);
          if (real === null || real.length === 0 || real[0] === '') continue;
          expect(analysis.programs, `${dialect} ${JSON.stringify(word)}`).toContain(latin1(real[0]!));
        }
      }),
      { numRuns: 80 },
    );
  });
});

type Case = [line: string, programs: string[], kinds: UnknowableKind[]];

/** One of each form, with what the analysis must name and why it must ask. */
const FORMS: Case[] = [
  // The examples: bash and ash drop the NUL, dash reads `$` and a quoted string.
  ["r$'\\0'm victim.txt", ['rm', 'r$\\0m'], ['shell-dependent']],
  ["s$'\\0'h -c 'rm x'", ['sh', 'rm', 's$\\0h'], ['runs-code', 'shell-dependent']],
  ["busy$'\\0'box rm x", ['busybox', 'rm', 'busy$\\0box'], ['multi-call', 'shell-dependent']],
  ["e$'\\0'val 'rm x'", ['eval', 'rm', 'e$\\0val'], ['runs-code', 'shell-dependent']],
  // bash ends the string at its NUL, whatever spells it; ash keeps escapes it does not know.
  ["r$'\\x00junk'm x", ['rm', 'rjunkm', 'r$\\x00junkm'], ['shell-dependent']],
  ["r$'\\c@'m x", ['rm', 'r\\c@m', 'r$\\c@m'], ['shell-dependent']],
  ["r$'\\u0000'm x", ['rm', 'r\\u0000m', 'r$\\u0000m'], ['shell-dependent']],
  // Escapes every shell with $'…' reads alike still differ in dash.
  ["$'rm' x", ['rm', '$rm'], ['shell-dependent']],
  // An argument read differently by the shells names no other program: nothing to ask.
  ["echo $'a\\tb'", ['echo'], []],
  // A `\u` beyond ASCII depends on bash's locale.
  ["$'\\u00e9' x", ['\\u00e9', '$\\u00e9'], ['computed-name', 'shell-dependent']],
  // The grammar turns `\\$` before `""` into a bare `$` token and loses it: bash runs `$\\0$r` (found by the property below).
  ['\\$\'\\0\'\\$""r x', ['$\\0'], ['unparsable']],
  // The grammar ends $'…' at the wrong quote after `\\`: bash and ash run `rm x`.
  ["echo $'a\\\\'b ; rm x ; #'", ['echo'], ['unparsable']],
  ["echo $'\\\\\\\\' ; rm x ; #'", ['echo'], ['unparsable']],
  // dash ends `$'a\'b'` at the escaped quote and reads the rest as code.
  ["echo $'a\\'b' ; #'", ['echo'], ['shell-dependent']],
  // The grammar splits `PA$'\0'TH=/tmp` in two after `export`; the shells read PATH=/tmp.
  ["export PA$'\\0'TH=/tmp", ['export'], ['changes-lookup']],
  ["export 'PA'TH=/tmp", ['export'], ['changes-lookup']],
  // Bytes the parser takes for blanks and the shells for characters of a word.
  ['r\rm x', ['r'], ['unparsable', 'runs-code']],
  ['ls\u000bx', ['ls'], ['unparsable']],
  ['ls\fx', ['ls'], ['unparsable']],
  ["echo 'a\rb'", ['echo'], []],
  // A NUL cannot reach the shell: what stands before it and the line without it are both read.
  ['r\u0000m x', ['r', 'rm'], ['unparsable', 'runs-code']],
  // The grammar drops an escaped blank where a word starts; the shells run the program ` x`.
  ['\\ x', ['x'], ['unparsable']],
  ['echo a\\ b', ['echo'], []],
  // bash translates $"…" by a catalog the line can choose; ash and dash read `$` and a string.
  ['$"rm" x', ['rm', '$rm'], ['shell-dependent']],
  // Redirect targets: every shell's reading is a file the line may write.
  ["echo x > $'/dev/null\\0x'", ['echo'], []],
  // GNU env reads options as getopt_long does.
  ["env --s='rm x'", ['env', 'rm'], ['runs-code']],
  ["env --split-string='rm x'", ['env', 'rm'], ['runs-code']],
  ["env --split-string 'rm x'", ['env', 'rm'], ['runs-code']],
  ["env --split='rm x'", ['env', 'rm'], ['runs-code']],
  ["env -iS'rm x'", ['env', 'rm'], ['runs-code']],
  ["env -vS 'rm x'", ['env', 'rm'], ['runs-code']],
  ['env -0iu X rm x', ['env', 'rm'], ['wrapper']],
  ['env - rm x', ['env', 'rm'], ['wrapper']],
  ['env --unset=X rm x', ['env', 'rm'], ['wrapper']],
  ['env --un X rm x', ['env', 'rm'], ['wrapper']],
  ['env --argv0 y rm x', ['env', 'rm'], ['wrapper']],
  ['env -S', ['env'], ['runs-code']],
  // Other wrappers' bundles and long options.
  ['sudo -Eu root rm x', ['sudo', 'rm'], ['wrapper']],
  ['sudo --us root rm x', ['sudo', 'rm'], ['wrapper']],
  ['exec -ca name rm x', ['exec', 'rm'], ['wrapper']],
  ['timeout -sKILL 5 rm x', ['timeout', 'rm'], ['wrapper']],
  ['timeout --sig=KILL 5 rm x', ['timeout', 'rm'], ['wrapper']],
  ["su -lc 'rm x'", ['su', 'rm'], ['runs-code']],
  ["su --comm='rm x'", ['su', 'rm'], ['runs-code']],
  ["flock -c'rm x' lock", ['flock', 'rm'], ['runs-code']],
  ["bash -eo pipefail -c 'rm x'", ['bash', 'rm'], ['runs-code']],
  ["bash -oe pipefail -c 'rm x'", ['bash', 'rm'], ['runs-code']],
];

describe('each form', () => {
  it.each(FORMS)('%j', (line, programs, kinds) => {
    const analysis = analyseCommandLine(line);
    expect(new Set(analysis.programs)).toEqual(new Set(programs));
    expect(new Set(analysis.unknowable.map((entry) => entry.kind))).toEqual(new Set(kinds));
  });

  it('a line the shells read as different commands always asks, and a denied program any of them runs is denied', () => {
    const verdict = checkCommandPrograms("r$'\\0'm victim.txt", DENY);
    expect(verdict.allowed).toBe(false);
    if (!verdict.allowed) expect(verdict.reason).toContain('"rm", which the policy denies');
    const harmless = checkCommandPrograms("l$'\\0's", { allow: [], deny: [] });
    expect(harmless.unknowable.some((entry) => ALWAYS_ASK_KINDS.has(entry.kind))).toBe(true);
  });

  it('the words a remembered rule may match stop where the shells disagree', () => {
    expect(analyseCommandLine("git commit -m $'a\\nb'").commands).toEqual([['git', 'commit', '-m']]);
    expect(analyseCommandLine("echo x > $'/dev/null\\0x'").redirectWrites).toEqual(['/dev/null', '/dev/nullx', '$/dev/null\\0x']);
  });

  it('an argv word holding a NUL is read both cut at the NUL and whole, and asks', () => {
    const analysis = analyseArgv(['rm\u0000junk', 'x']);
    expect(analysis.programs).toContain('rm');
    expect(analysis.unknowable.map((entry) => entry.kind)).toContain('unparsable');
  });
});
