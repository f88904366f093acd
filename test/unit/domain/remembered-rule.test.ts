import { describe, expect, it } from 'vitest';
import { commandRuleChoices, describeRule, fileRuleChoices, placeInRoots, urlRuleChoices } from '../../../src/domain/remembered-rule.js';

describe('remembered rule words and choices', () => {
  it('say the reach of each rule in a sentence, with its limit', () => {
    expect(describeRule({ kind: 'command', prefix: ['npm', 'test'], root: '/home/me/proj', maxRisk: 'MEDIUM' })).toBe(
      'Future `npm test …` commands run in /home/me/proj will run without asking (up to MEDIUM risk). Only commands that start with exactly these 2 word(s) match; in a pipeline, every command must be covered by a rule.',
    );
    expect(describeRule({ kind: 'file', root: '/ws', glob: 'src/**', maxRisk: 'MEDIUM' })).toMatch(/files matching src\/\*\* under \/ws will run without asking \(up to MEDIUM risk\)/);
    expect(describeRule({ kind: 'url', host: 'example.com', maxRisk: 'HIGH' })).toMatch(/including subdomains of example\.com, still ask/);
  });

  it('place a path in the roots by its text, refusing ".." escapes', () => {
    expect(placeInRoots('/ws/src/a.ts', ['/other', '/ws/'])).toEqual({ root: '/ws', relativePath: 'src/a.ts' });
    expect(placeInRoots('src/a.ts', ['/ws'])).toEqual({ root: '/ws', relativePath: 'src/a.ts' });
    expect(placeInRoots('/wsx/a.ts', ['/ws'])).toBeNull();
    expect(placeInRoots('/ws/../etc/passwd', ['/ws'])).toBeNull();
    expect(placeInRoots('a.ts', [])).toBeNull();
  });

  it('offer file rules from narrowest to widest, never the whole root', () => {
    const choices = fileRuleChoices('/ws/src/app/main.ts', ['/ws'], 'MEDIUM');
    expect(choices.map((choice) => choice.draft)).toEqual([
      { kind: 'file', root: '/ws', glob: 'src/app/main.ts', maxRisk: 'MEDIUM' },
      { kind: 'file', root: '/ws', glob: 'src/app/*.ts', maxRisk: 'MEDIUM' },
      { kind: 'file', root: '/ws', glob: 'src/app/**', maxRisk: 'MEDIUM' },
    ]);
    expect(fileRuleChoices('/ws/top.txt', ['/ws'], 'LOW').map((choice) => choice.draft)).toEqual([{ kind: 'file', root: '/ws', glob: 'top.txt', maxRisk: 'LOW' }]);
    expect(fileRuleChoices('/ws/a[1].txt', ['/ws'], 'LOW')[0]!.draft).toMatchObject({ glob: 'a\\[1\\].txt' });
  });

  it('offer command prefixes but never a bare shell or interpreter', () => {
    expect(commandRuleChoices(['git', 'status', '--short', 'x'], '/ws', 'LOW').map((choice) => choice.label)).toEqual(['git status --short', 'git status', 'git']);
    expect(commandRuleChoices(['bash', '-c', 'x'], '/ws', 'LOW').map((choice) => choice.label)).toEqual(['bash -c x']);
    expect(urlRuleChoices('https://Docs.Example.com/a', 'HIGH')[0]!.draft).toEqual({ kind: 'url', host: 'docs.example.com', maxRisk: 'HIGH' });
    expect(urlRuleChoices('javascript:alert(1)', 'HIGH')).toEqual([]);
  });
});
