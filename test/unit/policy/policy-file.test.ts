import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExecutorError } from '../../../src/domain/errors.js';
import { assertRootsApartFromDataDir, loadPolicy, PolicySchema } from '../../../src/policy/policy-file.js';
import { tempDir } from '../../helpers/temp-dirs.js';

function writePolicy(dataDir: string, policy: Record<string, unknown>): void {
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify(policy));
}

function loadError(dataDir: string): ExecutorError {
  try {
    loadPolicy(dataDir);
  } catch (error) {
    return error as ExecutorError;
  }
  throw new Error('expected loadPolicy to refuse');
}

describe('workspace roots and the data directory', () => {
  for (const name of ['exec(1)', '{a,b}', '@(x)', '!data', 'plain']) {
    it(`refuses at load a root that contains the data directory (named ${JSON.stringify(name)}), saying how to fix it`, () => {
      const root = tempDir();
      const dataDir = path.join(root, name);
      writePolicy(dataDir, { workspaceRoots: [root] });
      const error = loadError(dataDir);
      expect(error.code).toBe('POLICY_INVALID');
      expect(error.message).toContain(`The workspace root ${root} contains Executor's data directory`);
      expect(error.message).toMatch(/narrower root .*--data-dir or EXECUTOR_DATA_DIR/);
    });
  }

  it('refuses a root inside the data directory', () => {
    const dataDir = tempDir();
    writePolicy(dataDir, { workspaceRoots: [path.join(dataDir, 'blobs')] });
    expect(loadError(dataDir).message).toMatch(/lies inside Executor's data directory/);
  });

  it('compares real paths: a root that reaches the data directory through a symlink is refused', () => {
    const base = tempDir();
    const dataDir = path.join(base, 'project', 'data');
    fs.mkdirSync(dataDir, { recursive: true });
    fs.symlinkSync(path.join(base, 'project'), path.join(base, 'alias'));
    const policy = PolicySchema.parse({ workspaceRoots: [path.join(base, 'alias')] });
    expect(() => assertRootsApartFromDataDir(policy, dataDir)).toThrow(/contains Executor's data directory/);
    expect(() => assertRootsApartFromDataDir(policy, path.join(base, 'alias', 'data'))).toThrow(/contains Executor's data directory/);
  });

  it('admits roots beside the data directory, and one whose name merely starts the same', () => {
    const base = tempDir();
    const dataDir = path.join(base, 'data');
    writePolicy(dataDir, { workspaceRoots: [path.join(base, 'workspace'), path.join(base, 'data-2')] });
    expect(loadPolicy(dataDir).workspaceRoots).toHaveLength(2);
  });
});

describe('a policy file over the limits', () => {
  it.each([
    [
      'nested 5000 levels',
      `{"workspaceRoots": ${'['.repeat(5000)}${']'.repeat(5000)}}`,
      /workspaceRoots(\[0\]){63} is nested deeper than 64 levels/,
    ],
    [
      'with a number JSON reads as Infinity',
      '{"workspaceRoots": [], "agentLimits": {"stepsPerMinute": 1e400}}',
      /agentLimits\.stepsPerMinute is Infinity/,
    ],
  ])('is refused with POLICY_INVALID naming the place when %s', (_label, text, place) => {
    const dataDir = tempDir();
    fs.writeFileSync(path.join(dataDir, 'policy.json'), text);
    const error = loadError(dataDir);
    expect(error.code).toBe('POLICY_INVALID');
    expect(error.message).toMatch(place);
    expect(error.details).toMatchObject({ file: path.join(dataDir, 'policy.json') });
  });
});

describe("the sandbox's ignore list and read-only folders", () => {
  const OLD_SAVED = {
    memoryMb: 512,
    cpus: 1,
    pids: 256,
    timeoutMs: 120000,
    outputBytes: 1048576,
    ignore: ['.git/**', 'node_modules/**'],
    maxCopyMb: 2048,
  };

  it('defaults to ignoring nothing and mounting node_modules read-only; a policy an older version saved gets the same', () => {
    expect(PolicySchema.parse({}).sandbox).toMatchObject({ ignore: [], readOnly: ['node_modules'] });
    const saved = PolicySchema.parse({ sandbox: OLD_SAVED }).sandbox;
    expect(saved).toMatchObject({ ignore: [], readOnly: ['node_modules'], memoryMb: 512 });
    // Loaded and saved again, it stays the new default.
    expect(PolicySchema.parse(JSON.parse(JSON.stringify(PolicySchema.parse({ sandbox: OLD_SAVED })))).sandbox.ignore).toEqual([]);
  });

  it('refuses a sandbox.readOnly entry that can match no folder inside the root (absolute, with .., NUL) with a clear error', () => {
    for (const glob of ['/home/me/proj/node_modules', '..', '../node_modules', 'a/../b', 'a\u0000b']) {
      const parsed = PolicySchema.safeParse({ sandbox: { readOnly: [glob] } });
      expect(parsed.success, glob).toBe(false);
      expect(parsed.error?.issues[0]?.message).toContain('a read-only folder is a glob of a folder path inside the root');
    }
    expect(PolicySchema.parse({ sandbox: { readOnly: ['packages/*/node_modules', '.venv'] } }).sandbox.readOnly).toEqual([
      'packages/*/node_modules',
      '.venv',
    ]);
  });

  it('keeps an ignore list the person chose: another list, or the old one beside readOnly', () => {
    expect(PolicySchema.parse({ sandbox: { ignore: ['node_modules/**'] } }).sandbox.ignore).toEqual(['node_modules/**']);
    expect(PolicySchema.parse({ sandbox: { ignore: ['.git/**', 'node_modules/**', 'dist/**'] } }).sandbox.ignore).toHaveLength(3);
    expect(PolicySchema.parse({ sandbox: { ...OLD_SAVED, readOnly: [] } }).sandbox).toMatchObject({
      ignore: ['.git/**', 'node_modules/**'],
      readOnly: [],
    });
  });
});
