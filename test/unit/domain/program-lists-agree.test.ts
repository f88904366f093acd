import { beforeAll, describe, expect, it } from 'vitest';
import {
  mayRunOtherPrograms,
  RUNS_OTHER_PROGRAMS,
  RUNS_OTHER_PROGRAMS_WITH,
  whyNotARulePrefix,
} from '../../../src/domain/program-runners.js';
import { INTERPRETER, MULTI_CALL, RUNNER_SUBCOMMANDS, SHELLS, WRAPPERS } from '../../../src/policy/program-kinds.js';
import { analyseArgv } from '../../../src/policy/shell-analysis.js';
import { loadShellParser } from '../../../src/policy/shell-parser.js';
import { BUSYBOX_APPLETS, IMAGE_PROGRAMS, RUNS_ONLY_ITSELF } from '../../helpers/program-classes.js';

beforeAll(async () => {
  await loadShellParser();
});

/**
 * Two tables name programs that run other programs: the shell analysis's (which must find the inner
 * program) and the rule prefixes' (which must never cover one). Whatever the analysis treats as a
 * wrapper, shell or multi-call binary must also be refused as the start of a remembered rule, and
 * whatever the rule table says can run another program must make a command line unknowable.
 */
describe('the program tables agree', () => {
  it.each([...Object.keys(WRAPPERS), ...SHELLS, ...MULTI_CALL])('refuses %s as a rule prefix', (program) => {
    expect(whyNotARulePrefix([program])).not.toBeNull();
  });

  it.each(Object.entries(RUNNER_SUBCOMMANDS).flatMap(([program, subs]) => (subs.length ? subs.map((sub) => [program, sub]) : [[program]])))(
    'refuses %s %s as a rule prefix',
    (...prefix) => {
      expect(whyNotARulePrefix(prefix.filter((word): word is string => typeof word === 'string'))).not.toBeNull();
    },
  );

  /** Where the analysis reads a program's words itself, more closely than a rule prefix can. */
  const READ_CLOSELY: Record<string, string[][]> = {
    // sed runs commands only with `e`, which the analysis finds in the script.
    sed: [['sed', 's/a/b/', 'f']],
    gsed: [['gsed', 's/a/b/', 'f']],
  };

  it.each(Object.keys(RUNS_OTHER_PROGRAMS))('makes a command of %s unknowable', (program) => {
    const argv = READ_CLOSELY[program] ? [program, '1e rm x'] : [program, 'rm', 'x'];
    expect(analyseArgv(argv).unknowable.length, argv.join(' ')).toBeGreaterThan(0);
  });

  it.each(
    Object.entries(RUNS_OTHER_PROGRAMS_WITH).flatMap(([program, spec]) =>
      [...(spec.options ?? []), ...(spec.subcommands ?? [])].map((word) => [program, word]),
    ),
  )('makes `%s %s …` unknowable', (program, word) => {
    expect(analyseArgv([program, word, 'x']).unknowable.length).toBeGreaterThan(0);
  });
});

describe('every busybox applet and program of the sandbox image is classified', () => {
  const runsOthers = (name: string) =>
    mayRunOtherPrograms(name) || SHELLS.has(name) || MULTI_CALL.has(name) || INTERPRETER.test(name) || Object.hasOwn(WRAPPERS, name);

  it.each([...BUSYBOX_APPLETS, ...IMAGE_PROGRAMS])('%s', (name) => {
    const itself = RUNS_ONLY_ITSELF.has(name);
    // Exactly one of the two: a program that can run others is in the tables, every other one is listed with its reason.
    expect(
      itself !== runsOthers(name),
      `${name}: ${itself ? 'listed as running only itself, but a table says it runs others' : 'in no table and not listed as running only itself'}`,
    ).toBe(true);
    if (!itself && Object.hasOwn(RUNS_OTHER_PROGRAMS, name)) {
      expect(whyNotARulePrefix([name])).not.toBeNull();
      const argv = name === 'sed' ? [name, '1e rm victim.txt'] : [name, 'rm', 'victim.txt'];
      expect(analyseArgv(argv).unknowable.length).toBeGreaterThan(0);
    }
  });

  it('lists no program as running only itself that is no applet', () => {
    for (const name of RUNS_ONLY_ITSELF.keys()) expect(BUSYBOX_APPLETS, name).toContain(name);
  });
});
