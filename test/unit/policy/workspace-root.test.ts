import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExecutorError } from '../../../src/domain/errors.js';
import { loadPolicy } from '../../../src/policy/policy-file.js';
import { checkWorkspaceRoot, expandHome, policyWithRoot } from '../../../src/policy/workspace-root.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/** A home with a project, a file, a data directory and a symlink to /etc in it. */
function layout() {
  const home = tempDir('executor-home-');
  const project = path.join(home, 'projects', 'site');
  fs.mkdirSync(project, { recursive: true });
  fs.writeFileSync(path.join(home, 'notes.txt'), 'x');
  const dataDir = path.join(home, '.local', 'share', 'executor');
  fs.mkdirSync(dataDir, { recursive: true });
  fs.symlinkSync('/etc', path.join(home, 'etc-link'));
  fs.symlinkSync(project, path.join(home, 'site-link'));
  return { home, project, dataDir };
}

function refusal(input: string, dataDir: string, home: string): ExecutorError {
  try {
    checkWorkspaceRoot(input, dataDir, { home });
  } catch (error) {
    expect(error).toBeInstanceOf(ExecutorError);
    expect((error as ExecutorError).code).toBe('ROOT_REFUSED');
    return error as ExecutorError;
  }
  throw new Error(`${input} was accepted`);
}

describe('checkWorkspaceRoot', () => {
  it('expands ~ on the host and answers the real folder', () => {
    const { home, project, dataDir } = layout();
    expect(checkWorkspaceRoot('~/projects/site', dataDir, { home })).toBe(project);
    expect(checkWorkspaceRoot('  ~/projects/site/  ', dataDir, { home })).toBe(project);
    expect(checkWorkspaceRoot(`${home}/projects/../projects/site`, dataDir, { home })).toBe(project);
    // A symlink is taken at its target.
    expect(checkWorkspaceRoot('~/site-link', dataDir, { home })).toBe(project);
    expect(expandHome('~', home)).toBe(home);
    expect(expandHome('~other/x', home)).toBe('~other/x');
  });

  it.each([
    ['', /No folder was given/],
    ['   ', /No folder was given/],
    ['projects/site', /is not a full path/],
    ['~other/site', /is not a full path/],
    ['~/nope', /does not exist/],
    ['~/notes.txt', /is a file, not a folder/],
    ['/', /is the whole disk/],
    ['~', /holds your whole home folder/],
    ['~/..', /holds your whole home folder/],
    ['/etc', /is a system folder \(\/etc\)/],
    ['/usr/share', /is a system folder \(\/usr\)/],
    ['~/etc-link', /is a system folder \(\/etc\)/],
    ['/var', /is a system folder/],
    ['~/.local/share/executor', /is Executor's data directory/],
    ['~/.local/share/executor/blobs', /inside Executor's data directory/],
    ['~/.local', /holds Executor's data directory/],
    ['bad\0name', /NUL character/],
  ])('refuses %j in words (ROOT_REFUSED)', (input, words) => {
    const { home, dataDir } = layout();
    fs.mkdirSync(path.join(dataDir, 'blobs'), { recursive: true });
    expect(refusal(input, dataDir, home).message).toMatch(words);
  });

  it('adds a root to the policy once, keeping the others', () => {
    const { home, project, dataDir } = layout();
    const other = path.join(home, 'other');
    fs.mkdirSync(other);
    const base = loadPolicy(dataDir);
    const once = policyWithRoot(base, project);
    expect(once.workspaceRoots).toEqual([project]);
    expect(policyWithRoot(once, project)).toBe(once);
    expect(policyWithRoot(once, other).workspaceRoots).toEqual([project, other]);
  });
});
