import { describe, expect, it } from 'vitest';
import { evaluateStep } from '../../../src/policy/evaluate-step.js';
import { matchingSecretGlob } from '../../../src/policy/secret-paths.js';
import { DEFAULT_SECRET_GLOBS, PolicySchema } from '../../../src/policy/policy-file.js';

const policy = (autoApprove: 'none' | 'LOW' | 'MEDIUM' | 'HIGH') => PolicySchema.parse({ autoApprove });

describe('evaluateStep', () => {
  it('asks for consent by default', () => {
    const verdict = evaluateStep({ risk: 'LOW', reasons: ['r'], mitigations: [] }, policy('none'), true);
    expect(verdict).toMatchObject({ allowed: true, risk: 'LOW', consent: 'confirm' });
  });

  it('auto-approves up to the configured level and no further', () => {
    expect(evaluateStep({ risk: 'MEDIUM', reasons: [], mitigations: [] }, policy('MEDIUM'), true).consent).toBe('none');
    expect(evaluateStep({ risk: 'HIGH', reasons: [], mitigations: [] }, policy('MEDIUM'), true).consent).toBe('confirm');
  });

  it('never auto-approves CRITICAL, and denies it', () => {
    const verdict = evaluateStep({ risk: 'CRITICAL', reasons: ['outside'], mitigations: [] }, policy('HIGH'), true);
    expect(verdict).toMatchObject({ allowed: false, consent: 'deny', risk: 'CRITICAL' });
  });

  it('turns a rule denial into CRITICAL whatever the hinted risk', () => {
    expect(evaluateStep({ risk: 'LOW', deny: true, reasons: ['no'], mitigations: [] }, policy('HIGH'), true)).toMatchObject({
      allowed: false,
      risk: 'CRITICAL',
    });
  });

  it('asks the person when the hints say it must, whatever autoApprove or remembered rules say', () => {
    const rule = {
      id: 'r1',
      kind: 'command' as const,
      prefix: ['timeout'],
      root: '/ws',
      maxRisk: 'HIGH' as const,
      createdAt: '2026-01-01T00:00:00.000Z',
      proposer: { kind: 'person' as const },
    };
    const verdict = evaluateStep(
      { risk: 'HIGH', reasons: ['runs'], mitigations: [], mustAsk: ['could run any program: `timeout` starts `rm`'] },
      policy('HIGH'),
      true,
      [rule],
    );
    expect(verdict).toMatchObject({ allowed: true, consent: 'confirm', risk: 'HIGH' });
    expect(verdict.reasons).toEqual(['runs', 'could run any program: `timeout` starts `rm`']);
    expect(verdict.mitigations.join(' ')).not.toContain('Approved without asking');
    expect(evaluateStep({ risk: 'LOW', reasons: [], mitigations: [], mustAsk: [] }, policy('HIGH'), true).consent).toBe('none');
  });

  it('says once that a rule approved a step, however many commands of the line it covered', () => {
    const rule = {
      id: 'r1',
      kind: 'command' as const,
      prefix: ['ls'],
      root: '/ws',
      maxRisk: 'HIGH' as const,
      createdAt: '2026-01-01T00:00:00.000Z',
      proposer: { kind: 'person' as const },
    };
    const other = { ...rule, id: 'r2', prefix: ['wc'] };
    // `ls; ls -a | wc -l` is covered by r1, r1 and r2.
    const verdict = evaluateStep({ risk: 'LOW', reasons: [], mitigations: [] }, policy('none'), true, [rule, rule, other]);
    expect(verdict.mitigations.filter((line) => line.startsWith('Approved without asking by remembered rule'))).toHaveLength(2);
    expect(verdict.approvedByRules).toEqual(['r1', 'r2']);
  });

  it('says plainly when a step cannot be reverted', () => {
    const verdict = evaluateStep({ risk: 'HIGH', reasons: [], mitigations: [] }, policy('none'), false);
    expect(verdict.reasons.join(' ')).toContain('cannot be reverted');
    expect(verdict.reversible).toBe(false);
  });
});

describe('matchingSecretGlob', () => {
  it.each([
    ['.env', '.env*'],
    ['app/.env.local', '.env*'],
    ['certs/server.pem', '*.pem'],
    ['keys/deploy.key', '*.key'],
    ['home/.ssh/id_ed25519', '.ssh/**'],
    ['.ssh/config', '.ssh/**'],
    ['backup/id_rsa.pub', 'id_rsa*'],
  ])('flags %s by %s', (file, glob) => {
    expect(matchingSecretGlob(file, DEFAULT_SECRET_GLOBS)).toBe(glob);
  });

  it.each(['src/env.ts', 'README.md', 'docs/keys.md', 'environment/x.txt'])('leaves %s alone', (file) => {
    expect(matchingSecretGlob(file, DEFAULT_SECRET_GLOBS)).toBeUndefined();
  });
});
