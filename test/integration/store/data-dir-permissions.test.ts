import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Executor } from '../../../src/executor/executor.js';
import { DATA_DIR_FILES, DATA_DIR_FOLDERS, ensureDataDir } from '../../../src/store/data-dir.js';
import { runCli, runCliAsync, shownPreviewHash } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * The data directory holds audit keys, socket tokens, the database with every preview (old and new
 * file contents) and the backups. Another account on the machine must not read any of it, however
 * the directory came to exist. Runs as root here: root reads anything anyway, so these tests check
 * modes and the ownership rule, not access.
 */

const NOBODY = 65534;
const modeOf = (file: string) => fs.lstatSync(file).mode & 0o7777;

/** Every entry under dir with its mode, symlinks not followed. */
function modesUnder(dir: string): Record<string, number> {
  const out: Record<string, number> = {};
  const walk = (current: string) => {
    for (const name of fs.readdirSync(current)) {
      const full = path.join(current, name);
      out[path.relative(dir, full)] = modeOf(full);
      if (fs.lstatSync(full).isDirectory()) walk(full);
    }
  };
  walk(dir);
  return out;
}

function expectPrivate(dataDir: string): void {
  expect(modeOf(dataDir)).toBe(0o700);
  for (const [entry, mode] of Object.entries(modesUnder(dataDir))) {
    const stat = fs.lstatSync(path.join(dataDir, entry));
    if (stat.isSymbolicLink()) continue;
    expect([entry, mode.toString(8)]).toEqual([entry, (stat.isDirectory() ? 0o700 : 0o600).toString(8)]);
  }
}

/** A data directory as `mkdir -p` and a loose umask leave it: 0755, files 0644. */
function loosen(dataDir: string): void {
  fs.chmodSync(dataDir, 0o755);
  for (const [entry] of Object.entries(modesUnder(dataDir))) {
    const full = path.join(dataDir, entry);
    if (!fs.lstatSync(full).isSymbolicLink()) fs.chmodSync(full, fs.lstatSync(full).isDirectory() ? 0o755 : 0o644);
  }
}

function policyFor(dataDir: string, workspace: string): void {
  fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }), { mode: 0o644 });
}

describe('the data directory is private on every start', () => {
  it("makes a directory made beforehand (0755, files 0644) private, and leaves what is not Executor's alone", async () => {
    const base = tempDir();
    const dataDir = path.join(base, 'data');
    const workspace = path.join(base, 'ws');
    fs.mkdirSync(workspace);
    // What the README's `mkdir -p "$EXECUTOR_DATA_DIR"` gives under umask 022.
    expect(spawnSync('sh', ['-c', `umask 022 && mkdir -p "${dataDir}"`]).status).toBe(0);
    expect(modeOf(dataDir)).toBe(0o755);
    policyFor(dataDir, workspace);
    const first = Executor.open(dataDir);
    first.close();
    loosen(dataDir);
    fs.writeFileSync(path.join(dataDir, 'notes.txt'), "the person's own file", { mode: 0o644 });
    fs.writeFileSync(path.join(dataDir, 'executor.db-journal'), '', { mode: 0o644 });
    const outside = path.join(base, 'outside.txt');
    fs.writeFileSync(outside, 'x', { mode: 0o644 });
    fs.symlinkSync(outside, path.join(dataDir, 'blobs', 'link'));

    const executor = Executor.open(dataDir);
    executor.close();
    const modes = modesUnder(dataDir);
    expect(modeOf(dataDir)).toBe(0o700);
    for (const entry of ['executor.db', 'executor.db-journal', 'policy.json'])
      expect([entry, modes[entry]!.toString(8)]).toEqual([entry, '600']);
    for (const entry of ['blobs', 'keys']) expect([entry, modes[entry]!.toString(8)]).toEqual([entry, '700']);
    for (const [entry, mode] of Object.entries(modes))
      if (entry.startsWith('keys/')) expect([entry, mode.toString(8)]).toEqual([entry, '600']);
    // Not Executor's: untouched. A symlink is never followed (chmod would change its target).
    expect(modes['notes.txt']).toBe(0o644);
    expect(modeOf(outside)).toBe(0o644);
  });

  it('creates the database, its -wal and -shm 0600 even in a process whose umask is loose', () => {
    const base = tempDir();
    const dataDir = path.join(base, 'data');
    const workspace = path.join(base, 'ws');
    fs.mkdirSync(workspace);
    fs.mkdirSync(dataDir, { mode: 0o755 });
    policyFor(dataDir, workspace);
    const script = `
      const { Executor } = await import(${JSON.stringify(path.resolve('src/executor/executor.ts'))});
      process.umask(0o022);
      const executor = Executor.open(${JSON.stringify(dataDir)});
      const { actorFor } = await import(${JSON.stringify(path.resolve('src/domain/actor.ts'))});
      await executor.propose({ steps: [{ id: 'w1', action: 'writeFile', args: { path: ${JSON.stringify(path.join(workspace, 'a.txt'))}, content: 'secret' } }] }, actorFor('cli'));
      const fs = await import('node:fs');
      const mode = (f) => (fs.statSync(${JSON.stringify(dataDir)} + '/' + f).mode & 0o777).toString(8);
      console.log(JSON.stringify({ db: mode('executor.db'), wal: mode('executor.db-wal'), shm: mode('executor.db-shm') }));
      executor.close();
    `;
    const result = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout.trim().split('\n').at(-1)!)).toEqual({ db: '600', wal: '600', shm: '600' });
  });

  it('keeps everything a running `executor serve` and the CLI create 0600/0700, -wal and -shm included', async () => {
    const base = tempDir();
    const dataDir = path.join(base, 'data');
    const workspace = path.join(base, 'ws');
    fs.mkdirSync(workspace);
    expect(spawnSync('sh', ['-c', `umask 022 && mkdir -p "${dataDir}"`]).status).toBe(0);
    policyFor(dataDir, workspace);
    // The person's shell umask, inherited by the host it starts.
    const umaskBefore = process.umask(0o022);
    const serve = await startServe(dataDir).finally(() => process.umask(umaskBefore));
    const planFile = path.join(base, 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({
        steps: [{ id: 'p1', action: 'writeFile', args: { path: path.join(workspace, 'new', 'p.txt'), content: 'private\n' } }],
      }),
    );
    // Exit 1: proposed and waiting for the person (0 would mean it already ran).
    const proposed = await runCliAsync(['--data-dir', dataDir, 'propose', planFile]);
    expect(proposed.stderr).not.toMatch(/executor: [A-Z_]+:/);
    expect(proposed.status).toBe(1);
    // A CLI approval binds to the preview it was shown (`steps show` prints its hash).
    const approved = await runCliAsync(['--data-dir', dataDir, 'approve', 'p1', '--preview-hash', shownPreviewHash(dataDir, 'p1')]);
    expect(approved.stderr).toBe('');
    expect(approved.status).toBe(0);
    // While the host runs: the WAL files, the socket, the lock and the tokens exist.
    for (const entry of ['executor.db-wal', 'executor.db-shm', 'executor.sock', 'executor.lock', 'ipc/cli.token', 'ipc/agent.token']) {
      expect(fs.existsSync(path.join(dataDir, entry)), entry).toBe(true);
    }
    expectPrivate(dataDir);
    // The list of what Executor keeps is complete: nothing in a used data directory is missing from it.
    const known = (name: string) =>
      (DATA_DIR_FOLDERS as readonly string[]).includes(name) ||
      DATA_DIR_FILES.some((file) => name === file || name.startsWith(`${file}-`) || name.startsWith(`${file}.`));
    expect(fs.readdirSync(dataDir).filter((name) => !known(name))).toEqual([]);
    expect(await serve.stop()).toBe(0);
    expectPrivate(dataDir);
    // The private umask is for the data directory: what the step wrote into the workspace has the
    // modes the person's own umask (022) gives, like a file their editor would make.
    expect(fs.readFileSync(path.join(workspace, 'new', 'p.txt'), 'utf8')).toBe('private\n');
    expect(modeOf(path.join(workspace, 'new', 'p.txt'))).toBe(0o644);
    expect(modeOf(path.join(workspace, 'new'))).toBe(0o755);
  });
});

describe('a data directory that belongs to another user is refused', () => {
  it('refuses the directory itself, with a fix hint, and changes nothing', () => {
    const dataDir = path.join(tempDir(), 'theirs');
    fs.mkdirSync(dataDir, { mode: 0o755 });
    fs.chmodSync(dataDir, 0o755);
    fs.chownSync(dataDir, NOBODY, NOBODY);
    expect(() => ensureDataDir(dataDir)).toThrow(
      expect.objectContaining({ code: 'DATA_DIR_NOT_OWNED', message: expect.stringMatching(/belongs to uid 65534.*chown -R 0/) }),
    );
    expect(modeOf(dataDir)).toBe(0o755);
    expect(fs.readdirSync(dataDir)).toEqual([]);
    // The real CLI says the same, as a typed error, and exits 2.
    const cli = runCli(['--data-dir', dataDir, 'steps', 'list']);
    expect(cli.status).toBe(2);
    expect(cli.stderr).toMatch(/^executor: DATA_DIR_NOT_OWNED: The data directory .* belongs to uid 65534/);
  });

  it.each([['executor.db'], ['policy.json'], ['keys'], ['blobs/ab/cd']])('refuses when %s inside it belongs to another user', (entry) => {
    const base = tempDir();
    const dataDir = path.join(base, 'data');
    fs.mkdirSync(dataDir, { mode: 0o700 });
    const full = path.join(dataDir, entry);
    if (entry === 'keys') fs.mkdirSync(full);
    else {
      fs.mkdirSync(path.dirname(full), { recursive: true });
      fs.writeFileSync(full, '{}');
    }
    fs.chownSync(full, NOBODY, NOBODY);
    expect(() => Executor.open(dataDir)).toThrow(
      expect.objectContaining({ code: 'DATA_DIR_NOT_OWNED', message: expect.stringContaining(full) }),
    );
    // Refused before the lock or the database: nothing new was created.
    expect(fs.existsSync(path.join(dataDir, 'executor.lock'))).toBe(false);
  });

  it("refuses a data directory that is a symlink to another user's folder, but follows one to the person's own", () => {
    const base = tempDir();
    const theirs = path.join(base, 'theirs');
    fs.mkdirSync(theirs);
    fs.chownSync(theirs, NOBODY, NOBODY);
    fs.symlinkSync(theirs, path.join(base, 'link'));
    expect(() => ensureDataDir(path.join(base, 'link'))).toThrow(expect.objectContaining({ code: 'DATA_DIR_NOT_OWNED' }));
    const mine = path.join(base, 'mine');
    fs.mkdirSync(mine, { mode: 0o755 });
    fs.chmodSync(mine, 0o755);
    fs.symlinkSync(mine, path.join(base, 'mylink'));
    ensureDataDir(path.join(base, 'mylink'));
    expect(modeOf(mine)).toBe(0o700);
  });

  it('refuses a data directory path that is a file', () => {
    const file = path.join(tempDir(), 'file');
    fs.writeFileSync(file, 'x');
    expect(() => ensureDataDir(file)).toThrow();
  });
});
