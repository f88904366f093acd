import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExecutorError } from '../../../src/domain/errors.js';
import { assertChangesetTargets, checkChangesetTarget, type ChangesetScope } from '../../../src/policy/changeset-targets.js';
import { PolicySchema } from '../../../src/policy/policy-file.js';
import { tempDir } from '../../helpers/temp-dirs.js';

function setup(allowedSecretPaths: string[] = []) {
  const base = tempDir();
  const workspace = path.join(base, 'ws');
  const dataDir = path.join(base, 'data');
  const outside = path.join(base, 'outside');
  for (const dir of [workspace, dataDir, outside, path.join(workspace, '.ssh')]) fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(workspace, '.ssh/config'), 'Host real\n');
  const scope: ChangesetScope = { policy: PolicySchema.parse({ workspaceRoots: [workspace] }), dataDir, allowedSecretPaths };
  return { workspace, dataDir, outside, scope };
}

function thrown(run: () => void): ExecutorError {
  try {
    run();
  } catch (error) {
    return error as ExecutorError;
  }
  throw new Error('expected an error');
}

describe('checkChangesetTarget', () => {
  it('admits a plain path inside the root, with its real path', () => {
    const { workspace, scope } = setup();
    const verdict = checkChangesetTarget(path.join(workspace, 'src/new.txt'), scope);
    expect(verdict).toMatchObject({ ok: true, realPath: path.join(workspace, 'src/new.txt'), relativePath: path.join('src', 'new.txt') });
  });

  it('refuses a harmless-looking name that lands on a secret path through a symlink (sshdir -> .ssh)', () => {
    const { workspace, scope } = setup();
    fs.symlinkSync('.ssh', path.join(workspace, 'sshdir'));
    const verdict = checkChangesetTarget(path.join(workspace, 'sshdir/config'), scope);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok)
      expect(verdict.reason).toMatch(/lands through a symbolic link on .*\.ssh\/config, which matches the secret pattern "\.ssh\/\*\*"/);
  });

  it('admits a secret path the step named in allowSecrets (by real path)', () => {
    const { workspace, scope } = setup();
    const allowed = { ...scope, allowedSecretPaths: [path.join(workspace, '.env')] };
    expect(checkChangesetTarget(path.join(workspace, '.env'), allowed).ok).toBe(true);
    expect(checkChangesetTarget(path.join(workspace, '.env.prod'), allowed).ok).toBe(false);
  });

  it('refuses a path that leaves the root through a symlinked directory, and one into the data directory', () => {
    const { workspace, dataDir, outside, scope } = setup();
    fs.symlinkSync(outside, path.join(workspace, 'out'));
    fs.symlinkSync(dataDir, path.join(workspace, 'data-link'));
    expect(checkChangesetTarget(path.join(workspace, 'out/x'), scope)).toMatchObject({ ok: false, code: 'PATH_OUTSIDE_ROOT' });
    const intoData = checkChangesetTarget(path.join(workspace, 'data-link/policy.json'), scope);
    expect(intoData.ok).toBe(false);
    if (!intoData.ok) expect(intoData.reason).toMatch(/data directory/);
  });
});

describe('assertChangesetTargets', () => {
  it('refuses the whole changeset when a directory became a symlink onto .ssh since the run, naming the path', () => {
    const { workspace, scope } = setup();
    // The run saw a plain directory `sshdir`; by apply time it is a link to .ssh.
    const planned = [
      { absolutePath: path.join(workspace, 'a.txt'), displayPath: 'a.txt' },
      { absolutePath: path.join(workspace, 'sshdir/config'), displayPath: 'sshdir/config' },
    ];
    fs.mkdirSync(path.join(workspace, 'sshdir'));
    expect(() => assertChangesetTargets(planned, scope)).not.toThrow();
    fs.rmSync(path.join(workspace, 'sshdir'), { recursive: true });
    fs.symlinkSync('.ssh', path.join(workspace, 'sshdir'));
    const error = thrown(() => assertChangesetTargets(planned, scope));
    expect(error.code).toBe('PATH_OUTSIDE_ROOT');
    expect(error.message).toMatch(/^Nothing of the command's changes was applied: sshdir\/config: .*\.ssh\/config/);
  });

  it('refuses an entry whose real path moved elsewhere inside the root (a link appeared since the run)', () => {
    const { workspace, scope } = setup();
    fs.mkdirSync(path.join(workspace, 'real'));
    fs.symlinkSync('real', path.join(workspace, 'moved'));
    const error = thrown(() =>
      assertChangesetTargets([{ absolutePath: path.join(workspace, 'moved/x.txt'), displayPath: 'moved/x.txt' }], scope),
    );
    expect(error.message).toMatch(/now resolves to .*real\/x\.txt/);
  });
});
