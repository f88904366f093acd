import { describe, expect, it } from 'vitest';
import {
  programName,
  RUNS_OTHER_PROGRAMS,
  RUNS_OTHER_PROGRAMS_WITH,
  runsOtherPrograms,
  whyNotARulePrefix,
} from '../../../src/domain/program-runners.js';
import { commandRuleChoices } from '../../../src/domain/remembered-rule.js';

/** Prefixes a rule must never have: each names the word the refusal must mention. */
const REFUSED_PREFIXES: [string[], string][] = [
  [['timeout', '60'], 'timeout'],
  [['timeout'], 'timeout'],
  [['busybox', 'sh', '-c'], 'busybox'],
  [['busybox'], 'busybox'],
  [['toybox', 'rm'], 'toybox'],
  [['nice'], 'nice'],
  [['nice', '-n', '10'], 'nice'],
  [['nohup'], 'nohup'],
  [['stdbuf', '-oL'], 'stdbuf'],
  [['env'], 'env'],
  [['env', 'FOO=1'], 'env'],
  [['xargs'], 'xargs'],
  [['xargs', '-0'], 'xargs'],
  [['sudo'], 'sudo'],
  [['sudo', 'npm', 'test'], 'sudo'],
  [['doas', 'ls'], 'doas'],
  [['su', '-c'], 'su'],
  [['exec'], 'exec'],
  [['command', '-v'], 'command'],
  [['builtin'], 'builtin'],
  [['eval'], 'eval'],
  [['source'], 'source'],
  [['.'], '.'],
  [['time'], 'time'],
  [['watch', '-n', '1'], 'watch'],
  [['strace', '-f'], 'strace'],
  [['setsid'], 'setsid'],
  [['chroot', '/'], 'chroot'],
  [['ionice', '-c3'], 'ionice'],
  [['flock', '/tmp/lock'], 'flock'],
  [['parallel'], 'parallel'],
  [['sh'], 'sh'],
  [['sh', '-c', 'make'], 'sh'],
  [['bash', '-c', 'x'], 'bash'],
  [['bash', 'build.sh'], 'bash'],
  [['dash'], 'dash'],
  [['zsh'], 'zsh'],
  [['ksh'], 'ksh'],
  [['ash'], 'ash'],
  [['fish'], 'fish'],
  [['python'], 'python'],
  [['python3', '-c'], 'python3'],
  [['python3.12', 'manage.py'], 'python3.12'],
  [['/usr/bin/python3', '-m', 'pytest'], '/usr/bin/python3'],
  [['node', '-e'], 'node'],
  [['node', 'build.js'], 'node'],
  [['perl', '-e'], 'perl'],
  [['ruby'], 'ruby'],
  [['php', '-r'], 'php'],
  [['lua5.4'], 'lua5.4'],
  [['deno', 'eval'], 'deno'],
  [['bun', 'run'], 'bun'],
  [['awk'], 'awk'],
  [['gawk', '-f', 'x.awk'], 'gawk'],
  [['sed', '-n'], 'sed'],
  [['npx', 'jest'], 'npx'],
  [['ssh', 'host'], 'ssh'],
  [['/usr/bin/timeout', '5'], '/usr/bin/timeout'],
  [['TIMEOUT', '5'], 'TIMEOUT'],
  [['find', '.', '-exec'], '-exec'],
  [['find', '.', '-delete'], '-delete'],
  [['git', '-c'], '-c'],
  [['git', '-c', 'core.pager=sh'], '-c'],
  [['git', '--config-env=core.pager=X'], '--config-env=core.pager=X'],
  [['git', 'bisect', 'run'], 'bisect'],
  [['git', 'submodule', 'foreach'], 'submodule'],
  [['make', '--eval=x:'], '--eval=x:'],
  [['make', 'SHELL=/bin/sh'], 'SHELL=/bin/sh'],
  [['tar', '--to-command=sh'], '--to-command=sh'],
  [['tar', 'xIf'], 'xIf'],
  [['rsync', '-e'], '-e'],
  [['npm', 'exec'], 'exec'],
  [['npm', 'x'], 'x'],
  [['npm', 'init'], 'init'],
  [['yarn', 'dlx'], 'dlx'],
  [['uv', 'run'], 'run'],
  [['bundle', 'exec'], 'exec'],
  // Review 2: busybox and util-linux programs that start the program after their own words.
  [['linux32'], 'linux32'],
  [['linux32', 'uname', '-m'], 'linux32'],
  [['linux64'], 'linux64'],
  [['/bin/linux64'], '/bin/linux64'],
  [['setarch', 'x86_64'], 'setarch'],
  [['x86_64'], 'x86_64'],
  [['i386'], 'i386'],
  [['cttyhack'], 'cttyhack'],
  [['chpst', '-u', 'nobody'], 'chpst'],
  [['envdir', 'env'], 'envdir'],
  [['softlimit'], 'softlimit'],
  [['setuidgid', 'nobody'], 'setuidgid'],
  [['switch_root'], 'switch_root'],
  [['run-parts', 'hooks'], 'run-parts'],
  [['mim', '-f', 'm'], 'mim'],
  [['runsvdir'], 'runsvdir'],
  [['inotifyd'], 'inotifyd'],
  [['tcpsvd'], 'tcpsvd'],
  [['crond'], 'crond'],
  [['udhcpc6'], 'udhcpc6'],
  [['hush'], 'hush'],
  [['nc', '-f', 'other.txt', '-e'], '-e'],
  [['nc', '-lke', 'sh'], '-lke'],
  [['ld.so'], 'ld.so'],
  [['/lib64/ld-linux-x86-64.so.2'], '/lib64/ld-linux-x86-64.so.2'],
  [['go', 'run'], 'run'],
  [['cargo', 'run'], 'run'],
  [['nix', 'run'], 'run'],
  [['install', '--strip-program=sh'], '--strip-program=sh'],
  [['ldd'], 'ldd'],
];

const ACCEPTED_PREFIXES: string[][] = [
  ['npm', 'test'],
  ['npm', 'run', 'build'],
  ['npm'],
  ['git', 'status'],
  ['git', 'log', '--oneline'],
  ['git'],
  ['make', 'test'],
  ['cargo', 'test'],
  ['pytest'],
  ['ls', '-la'],
  ['find', '.', '-name'],
  ['tar', '-czf', 'out.tgz'],
  ['./scripts/check.sh'],
  ['go', 'test', './...'],
  ['tsc', '--noEmit'],
  ['uname', '-m'],
  ['linux-check'],
  ['ssl_client'],
  ['nc', 'localhost', '80'],
];

describe('programs that run other programs', () => {
  it.each(REFUSED_PREFIXES)('refuse %j as a rule prefix, naming %s', (prefix, word) => {
    const refusal = whyNotARulePrefix(prefix);
    expect(refusal).not.toBeNull();
    expect(refusal).toContain(`"${word}"`);
  });

  it.each(ACCEPTED_PREFIXES.map((prefix) => [prefix]))('accept %j as a rule prefix', (prefix) => {
    expect(whyNotARulePrefix(prefix)).toBeNull();
  });

  it('refuse a first word that is not a plain program name or path', () => {
    for (const program of ['$X', '`rm`', '/bin/r[m]', 'r*', '{rm,ls}', '~/bin/x', '../bin/tool', 'a b', 'FOO=1', '']) {
      expect(whyNotARulePrefix([program, 'x']), program).not.toBeNull();
    }
    expect(whyNotARulePrefix([])).not.toBeNull();
  });

  it('read the whole command, so words after an accepted prefix can still make it a runner', () => {
    expect(runsOtherPrograms(['find', '.', '-name', 'x', '-exec', 'rm', '{}', ';'])?.word).toBe('-exec');
    expect(runsOtherPrograms(['find', '.', '-execdir', 'sh', '-c', 'x', ';'])?.word).toBe('-execdir');
    expect(runsOtherPrograms(['git', 'log', '-c', 'core.pager=rm -rf .'])?.word).toBe('-c');
    expect(runsOtherPrograms(['git', '-C', '.', 'clone', 'x'])?.word).toBe('clone');
    expect(runsOtherPrograms(['git', 'rebase', '-ix', 'rm -rf .'])?.word).toBe('-ix');
    expect(runsOtherPrograms(['git', 'grep', '--open-files-in-pager=sh'])?.word).toBe('--open-files-in-pager=sh');
    expect(runsOtherPrograms(['make', 'test', 'CC=rm -rf .'])?.word).toBe('CC=rm -rf .');
    expect(runsOtherPrograms(['make', 'test', 'SHELL:=/bin/sh'])?.word).toBe('SHELL:=/bin/sh');
    expect(runsOtherPrograms(['tar', '-xvI', 'sh', '-f', 'a.tar'])?.word).toBe('-xvI');
    expect(runsOtherPrograms(['rsync', '-avze', 'sh', 'a', 'b'])?.word).toBe('-avze');
    expect(runsOtherPrograms(['npm', 'test', '--script-shell=/tmp/x'])?.word).toBe('--script-shell=/tmp/x');
    expect(runsOtherPrograms(['npm', '--node-options=--require=./x.js', 'test'])?.word).toBe('--node-options=--require=./x.js');
    expect(runsOtherPrograms(['sort', '--compress-program=sh', 'x'])?.word).toBe('--compress-program=sh');
    expect(runsOtherPrograms(['fd', '-x', 'rm'])?.word).toBe('-x');
    expect(runsOtherPrograms(['go', 'test', '-exec', 'sh'])?.word).toBe('-exec');
    expect(runsOtherPrograms(['go', 'generate', './...'])?.word).toBe('generate');
    expect(runsOtherPrograms(['npm', 'test', '--', '--watch=false'])).toBeNull();
    expect(runsOtherPrograms(['git', 'status', '--short'])).toBeNull();
    expect(runsOtherPrograms(['find', '.', '-name', '*.ts'])).toBeNull();
    expect(runsOtherPrograms(['make', '-j4', 'test'])).toBeNull();
    expect(runsOtherPrograms([])).toBeNull();
  });

  it('know a program by its name, whatever its directory, case, quotes, .exe or version', () => {
    expect(programName('/usr/bin/python3.12')).toBe('python');
    expect(programName('PYTHON3')).toBe('python');
    expect(programName('"ti"me\\out')).toBe('timeout');
    expect(programName('node18')).toBe('node');
    expect(programName('bash.exe')).toBe('bash');
    expect(programName('lua5.4')).toBe('lua');
    expect(programName('npm')).toBe('npm');
    for (const name of ['/bin/sh', '/usr/local/bin/BUSYBOX', 'perl5.36', 'pypy3', 'gawk', 'nodejs'])
      expect(runsOtherPrograms([name]), name).not.toBeNull();
  });

  it('give a reason for every program listed, and list none in both tables', () => {
    for (const [name, why] of Object.entries(RUNS_OTHER_PROGRAMS)) {
      expect(why.length, name).toBeGreaterThan(10);
      expect(Object.hasOwn(RUNS_OTHER_PROGRAMS_WITH, name), name).toBe(false);
    }
    for (const [name, spec] of Object.entries(RUNS_OTHER_PROGRAMS_WITH)) expect(spec.why.length, name).toBeGreaterThan(10);
    // Object.prototype names are not programs that run others (and must not crash the lookup).
    expect(runsOtherPrograms(['constructor', 'x'])).toBeNull();
    expect(runsOtherPrograms(['__proto__'])).toBeNull();
  });

  it('offer no rule for a command whose program starts another, so `[linux32]` never covers `linux32 rm -r victim.txt`', () => {
    expect(commandRuleChoices(['linux32', 'uname', '-m'], '/ws', 'HIGH')).toEqual([]);
    expect(commandRuleChoices(['busybox', 'linux64', 'uname'], '/ws', 'HIGH')).toEqual([]);
    expect(commandRuleChoices(['uname', '-m'], '/ws', 'HIGH').map((choice) => choice.label)).toEqual(['uname -m', 'uname']);
  });
});
