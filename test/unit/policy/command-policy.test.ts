import { beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { checkCommandPrograms, describeUnknowable } from '../../../src/policy/command-policy.js';
import { loadShellParser } from '../../../src/policy/shell-parser.js';

beforeAll(async () => {
  await loadShellParser();
});

describe('checkCommandPrograms', () => {
  it('denies a pipeline whose later part runs a denied program', () => {
    const verdict = checkCommandPrograms('ls | rm -rf /', { allow: [], deny: ['rm'] });
    expect(verdict).toMatchObject({ allowed: false, reason: expect.stringContaining('"rm"') });
  });

  it('lets deny win over allow', () => {
    expect(checkCommandPrograms('rm x', { allow: ['*'], deny: ['rm'] }).allowed).toBe(false);
  });

  it('matches a deny entry on the base name and on the full path the program is written with', () => {
    expect(checkCommandPrograms('/bin/rm x', { allow: [], deny: ['rm'] }).allowed).toBe(false);
    expect(checkCommandPrograms('/usr/bin/curl x', { allow: [], deny: ['/usr/bin/*'] }).allowed).toBe(false);
    expect(checkCommandPrograms("$'\\x72m' x", { allow: [], deny: ['rm'] }).allowed).toBe(false);
  });

  it('denies a program named inside a wrapper, a shell string or a substitution', () => {
    for (const line of [
      'timeout 60 rm -rf .',
      "sh -c -- 'rm x'",
      'exec -a y rm x',
      'eval "rm x"',
      "busybox sh -c 'rm x'",
      'nice rm x',
      'echo $(rm x)',
      'if true; then rm victim.txt; fi',
      '{ rm x; }',
    ]) {
      expect(checkCommandPrograms(line, { allow: [], deny: ['rm'] }), line).toMatchObject({
        allowed: false,
        reason: expect.stringContaining('"rm"'),
      });
    }
  });

  it('lets a line it cannot fully name pass the deny list only with its reasons attached (the person is asked)', () => {
    const verdict = checkCommandPrograms('X=rm; $X x', { allow: [], deny: ['rm'] });
    expect(verdict.allowed).toBe(true);
    expect(verdict.unknowable.map((entry) => entry.kind)).toEqual(['computed-name']);
    expect(describeUnknowable(verdict.unknowable)).toBe(
      "This command could run any program: the name of a program it runs is worked out only as it runs. In detail: the program's name `$X` is computed from a variable expansion.",
    );
  });

  it('admits only allowlisted programs when an allow list exists', () => {
    expect(checkCommandPrograms('npm test && tsc -p . | tee log', { allow: ['npm', 'tsc', 'tee'], deny: [] }).allowed).toBe(true);
    expect(checkCommandPrograms('npm test && curl x', { allow: ['npm', 'node'], deny: [] })).toMatchObject({
      allowed: false,
      reason: expect.stringContaining('"curl"'),
    });
  });

  it('never lets an allow list cover a line that could run any program', () => {
    // An interpreter runs code the line does not show, even when the person allowed it by name.
    expect(checkCommandPrograms('node x.js', { allow: ['node'], deny: [] }).allowed).toBe(false);
    for (const line of [
      'timeout 5 npm test',
      'sh -c "npm test"',
      '$CMD',
      'npx jest',
      'env PATH=. npm test',
      './npm test',
      'npm test | sh',
    ]) {
      expect(checkCommandPrograms(line, { allow: ['*'], deny: [] }), line).toMatchObject({
        allowed: false,
        reason: expect.stringContaining('could run any program'),
      });
    }
  });

  it('matches globs on program names', () => {
    expect(checkCommandPrograms('python3.11 --version', { allow: ['python3*'], deny: [] }).allowed).toBe(true);
  });

  it('does not let an empty program name slip past an allow list', () => {
    expect(checkCommandPrograms('"" x', { allow: ['ls'], deny: [] }).allowed).toBe(false);
  });

  it('reports a command line it cannot parse as unknowable, never as named', () => {
    const verdict = checkCommandPrograms(`echo 'x`, { allow: [], deny: [] });
    expect(verdict.unknowable.map((entry) => entry.kind)).toEqual(['unparsable']);
    expect(checkCommandPrograms(`echo 'x`, { allow: ['echo'], deny: [] }).allowed).toBe(false);
  });

  it('checks the variables a step sets for its command like assignments on the line', () => {
    const verdict = checkCommandPrograms('ls', { allow: [], deny: ['rm'] }, { PATH: '/workspace/bin' });
    expect(verdict.unknowable).toEqual([{ kind: 'changes-lookup', reason: expect.stringContaining('`PATH`') }]);
    expect(checkCommandPrograms('ls', { allow: [], deny: ['rm'] }, { NODE_ENV: 'test' }).unknowable).toEqual([]);
  });

  it('refuses a line that starts no program', () => {
    expect(checkCommandPrograms('> file', { allow: [], deny: [] })).toMatchObject({
      allowed: false,
      reason: 'The command starts no program.',
    });
  });
});

/**
 * Issue 23 red team: wrappers no table knew (`gosu root rm x` ran rm under `commands.deny: ["rm"]`
 * at autoApprove HIGH). No table of wrappers is complete, so a denied name given to a program the
 * tables do not know must make the line one the person decides.
 */
describe('a denied name handed to a program the tables do not know', () => {
  const deny = { allow: [], deny: ['rm', 'curl'] };
  const asks = (line: string) => {
    const verdict = checkCommandPrograms(line, deny);
    return !verdict.allowed || verdict.unknowable.length > 0;
  };

  it('is denied where the wrapper is now known, and asked about where it is not', () => {
    for (const line of ['gosu root rm x', 'su-exec root rm x', 'tini -- rm x', 'dumb-init rm x', 'chronic rm x', 'setlock f rm x'])
      expect(checkCommandPrograms(line, deny), line).toMatchObject({ allowed: false, reason: expect.stringContaining('"rm"') });
    for (const line of [
      'cgexec -g cpu:x rm victim.txt',
      "pee 'rm victim.txt'",
      'socat - EXEC:rm',
      'mise exec -- curl x',
      'nsjail --quiet -- /bin/rm x',
      'websocketd --port=1 rm x',
      'some-new-runner --exec=rm x',
      // The name hidden by quoting inside a command line handed over as one word.
      `pee 'r""m victim.txt'`,
      `socat - SYSTEM:'r""m x'`,
      `some-new-runner --run='c"u"rl x'`,
    ])
      expect(asks(line), line).toBe(true);
  });

  it('holds for any program name the tables do not know, whatever stands around the denied word', () => {
    const unknownName = fc.stringMatching(/^[a-z][a-z0-9-]{2,10}$/).filter((name) => !['rm', 'curl'].includes(name));
    const filler = fc.stringMatching(/^[a-z0-9.]{1,6}$/);
    const spelling = fc.constantFrom('rm', '/bin/rm', 'curl', "'rm x'", '"rm" x', '--cmd=rm', 'EXEC:curl', 'a;rm');
    fc.assert(
      fc.property(
        unknownName,
        fc.array(filler, { maxLength: 3 }),
        spelling,
        fc.array(filler, { maxLength: 3 }),
        (name, before, word, after) => {
          const line = [name, ...before, word, ...after].join(' ');
          expect(asks(line), line).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('leaves programs that only print or look up a name, and names that merely contain a denied one, alone', () => {
    for (const line of ['echo rm', 'which curl', 'man rm', 'ls curl-cffi', 'grep -r rmdir .']) {
      const verdict = checkCommandPrograms(line, deny);
      expect(verdict.allowed && verdict.unknowable.length === 0, line).toBe(true);
    }
  });

  it('with no deny list, says nothing new', () => {
    expect(checkCommandPrograms('some-new-runner rm x', { allow: [], deny: [] }).unknowable).toEqual([]);
  });
});

describe('variables that make a tool run a program or load code', () => {
  it('count as changing what a name runs, on the line and in the step env', () => {
    for (const [line, env] of [
      ['CVS_RSH=./x cvs co y', undefined],
      ['MAILCAPS=./m run-mailcap y', undefined],
      ['ZDOTDIR=. zsh --version', undefined],
      ['CFLAGS=-B. make', undefined],
      ['KUBECONFIG=./k kubectl version', undefined],
      ['OPENSSL_CONF=./o.cnf wget u', undefined],
      ['ls', { JAVA_HOME: '.' }],
      ['ls', { RUSTFLAGS: '-Clinker=./x' }],
    ] as const) {
      const verdict = checkCommandPrograms(line, { allow: [], deny: ['rm'] }, env);
      expect(
        verdict.unknowable.some((entry) => entry.kind === 'changes-lookup'),
        line,
      ).toBe(true);
    }
  });
});
