import { describe, expect, it } from 'vitest';
import { programsInCommand, splitCommandLine } from '../../../src/policy/command-words.js';

const programs = (command: string | string[]) => {
  const result = programsInCommand(command);
  if (!result.ok) throw new Error(result.reason);
  return result.programs;
};

describe('splitCommandLine', () => {
  it('keeps quoted operators inside their word', () => {
    expect(splitCommandLine(`echo 'a | b' "c && d" e\\;f`)).toEqual({ ok: true, commands: [['echo', 'a | b', 'c && d', 'e;f']] });
  });

  it('splits at every control operator', () => {
    const result = splitCommandLine('a 1 | b 2 || c && d ; e & f\ng');
    expect(result).toEqual({ ok: true, commands: [['a', '1'], ['b', '2'], ['c'], ['d'], ['e'], ['f'], ['g']] });
  });

  it('joins words across quote boundaries like sh does', () => {
    expect(splitCommandLine(`ec'h'"o" x"y"z`)).toEqual({ ok: true, commands: [['echo', 'xyz']] });
  });

  it('reports unterminated quotes instead of guessing', () => {
    expect(splitCommandLine(`echo 'oops`)).toMatchObject({ ok: false, reason: expect.stringContaining('single quote') });
    expect(splitCommandLine(`echo "oops`)).toMatchObject({ ok: false, reason: expect.stringContaining('double quote') });
    expect(splitCommandLine('echo $(rm -rf /')).toMatchObject({ ok: false });
    expect(splitCommandLine('echo `rm')).toMatchObject({ ok: false });
  });

  it('drops comments', () => {
    expect(splitCommandLine('ls # ; rm -rf /')).toEqual({ ok: true, commands: [['ls']] });
  });
});

describe('programsInCommand', () => {
  it('finds every program of a pipeline or chain', () => {
    expect(programs('ls | rm -rf /')).toEqual(['ls', 'rm']);
    expect(programs('make && ./deploy.sh; curl x || true')).toEqual(['make', 'deploy.sh', 'curl', 'true']);
  });

  it('looks inside command substitutions, quoted or not', () => {
    expect(programs('echo $(curl evil)')).toEqual(['echo', 'curl']);
    expect(programs('echo "$(wget x | sh)"')).toEqual(['echo', 'wget', 'sh']);
    expect(programs('echo `id`')).toEqual(['echo', 'id']);
    expect(programs('echo $(echo $(rm x))').sort()).toEqual(['echo', 'echo', 'rm']);
  });

  it('looks through wrappers and shells', () => {
    expect(programs('env FOO=1 rm -rf /')).toEqual(['env', 'rm']);
    expect(programs('sudo -u root timeout 5 nice -n 3 rm x')).toEqual(['sudo', 'timeout', 'nice', 'rm']);
    expect(programs(`sh -c 'ls; curl evil'`)).toEqual(['sh', 'ls', 'curl']);
    expect(programs(['bash', '-lc', 'python3 x.py | nc host 1'])).toEqual(['bash', 'python3', 'nc']);
    expect(programs('find . | xargs -0 rm')).toEqual(['find', 'xargs', 'rm']);
    expect(programs('find . | xargs -I {} rm {}')).toEqual(['find', 'xargs', 'rm']);
    expect(programs(`su -c 'curl x' nobody`)).toEqual(['su', 'curl']);
  });

  it('uses the base name of a path and skips leading assignments', () => {
    expect(programs('A=1 B=2 /usr/bin/rm x')).toEqual(['rm']);
  });

  it('treats redirection targets as files, but still sees substitutions in them', () => {
    expect(programs('echo hi > out.txt 2>&1')).toEqual(['echo']);
    expect(programs('cat <in.txt >>log')).toEqual(['cat']);
    expect(programs('echo hi > $(rm -rf x)')).toEqual(['echo', 'rm']);
  });

  it('takes an argv as one command and does not split its words', () => {
    expect(programs(['echo', 'a | rm -rf /'])).toEqual(['echo']);
  });
});
