import { describe, expect, it } from 'vitest';
import { checkCommandPrograms } from '../../../src/policy/command-policy.js';

describe('checkCommandPrograms', () => {
  it('denies a pipeline whose later part runs a denied program', () => {
    const verdict = checkCommandPrograms('ls | rm -rf /', { allow: [], deny: ['rm'] });
    expect(verdict).toMatchObject({ allowed: false, reason: expect.stringContaining('"rm"') });
  });

  it('lets deny win over allow', () => {
    expect(checkCommandPrograms('rm x', { allow: ['*'], deny: ['rm'] }).allowed).toBe(false);
  });

  it('admits only allowlisted programs when an allow list exists', () => {
    expect(checkCommandPrograms('npm test && node x.js', { allow: ['npm', 'node'], deny: [] }).allowed).toBe(true);
    expect(checkCommandPrograms('npm test && curl x', { allow: ['npm', 'node'], deny: [] })).toMatchObject({
      allowed: false,
      reason: expect.stringContaining('"curl"'),
    });
  });

  it('matches globs on program names', () => {
    expect(checkCommandPrograms('python3.11 x.py', { allow: ['python3*'], deny: [] }).allowed).toBe(true);
  });

  it('refuses a command line it cannot parse', () => {
    expect(checkCommandPrograms(`echo 'x`, { allow: [], deny: [] })).toMatchObject({ allowed: false, reason: expect.stringContaining('cannot be checked') });
  });
});
