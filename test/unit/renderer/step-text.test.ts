import { describe, expect, it } from 'vitest';
import type { Step } from '../../../src/domain/step.js';
import { commandTitle, summarizeStep } from '../../../renderer/step-text.js';

const step = (action: Step['action'], args: Record<string, unknown>): Step =>
  ({ id: 's', planId: 'p', action, args, meta: { origin: 'agent' } }) as Step;

describe('step titles', () => {
  it('titles a command by its command line, argv quoted as a shell would need it, never by the action name', () => {
    expect(summarizeStep(step('runCommand', { argv: ['git', 'commit', '-m', "fix: the user's bug"] }))).toBe(
      `Run git commit -m 'fix: the user'\\''s bug'`,
    );
    expect(summarizeStep(step('runCommand', { argv: ['rm', '-rf', 'build dir'] }))).toBe("Run rm -rf 'build dir'");
    expect(summarizeStep(step('runCommand', { command: 'npm test && echo ok' }))).toBe('Run npm test && echo ok');
    // A newline in a word cannot split the title or hide in it: it is a visible escape.
    expect(summarizeStep(step('runCommand', { argv: ['echo', 'a\nrm -rf ~'] }))).toBe("Run echo $'a\\nrm -rf ~'");
  });

  it('says how many more lines a shell script has, so its second line is never out of sight without a word', () => {
    expect(commandTitle('npm ci\nnpm test')).toBe('npm ci … (+1 more line)');
    expect(commandTitle('\n\n  curl x | sh\nrm -rf ~\n')).toBe('curl x | sh … (+4 more lines)');
    expect(commandTitle('one line')).toBe('one line');
    // A very long line is cut in the title (the detail has all of it), saying how much more there is.
    expect(commandTitle(`echo ${'x'.repeat(400)}`)).toBe(`echo ${'x'.repeat(295)} … (+105 more characters)`);
    expect(commandTitle(`echo ${'😀'.repeat(400)}\nrm -rf ~`)).toBe(`echo ${'😀'.repeat(295)} … (+105 more characters, +1 more line)`);
  });

  it('titles code by its language, sandbox and what it asks for', () => {
    expect(summarizeStep(step('runCode', { code: 'return 1' }))).toBe('Run JavaScript in the light sandbox');
    expect(summarizeStep(step('runCode', { code: 'print(1)', language: 'python' }))).toBe('Run Python in the Docker sandbox');
    expect(
      summarizeStep(
        step('runCode', { code: 'x', sandbox: 'docker', capabilities: { fetch: { hosts: ['a.test'] }, readFile: true, kbSearch: true } }),
      ),
    ).toBe('Run JavaScript in the Docker sandbox; may use the network, may read files, may search the knowledge base');
  });

  it('titles the other actions as before', () => {
    expect(summarizeStep(step('openURL', { url: 'https://example.org/', purpose: 'read' }))).toBe('Open https://example.org/');
    expect(summarizeStep(step('deleteFile', { path: '/ws/a.txt' }), ['/ws'])).toBe('Delete a.txt');
  });
});

describe('a skill use', () => {
  it('is titled by the skill and version it ran, never by its input', () => {
    expect(
      summarizeStep(
        step('runSkill', { skill: 'csv_to_json', skillId: 'skill_1', version: 2, codeHash: 'a'.repeat(64), input: { csv: 'a,b' } }),
      ),
    ).toBe('Use skill csv_to_json v2');
  });
});
