import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { runCli, shownPreviewHash } from '../../helpers/run-cli.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

interface Outcome {
  stepId: string;
  status: string;
  risk: string;
  reasons: string[];
  rejectedReason?: string;
  error?: { code: string };
}

function writePlan(dir: string, plan: unknown, name = 'plan.json'): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, typeof plan === 'string' ? plan : JSON.stringify(plan));
  return file;
}

/** One step's stored preview hash, read without the lock (a `propose --wait` in another terminal may hold it). */
function readOnlyStep(dataDir: string, stepId: string): { previewHash: string | null } {
  const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
  try {
    return {
      previewHash: (
        db.prepare('SELECT preview_hash AS previewHash FROM steps WHERE step_id = ?').get(stepId) as { previewHash: string | null }
      ).previewHash,
    };
  } finally {
    db.close();
  }
}

function rowCounts(dataDir: string): { steps: number; events: number } {
  const file = path.join(dataDir, 'executor.db');
  if (!fs.existsSync(file)) return { steps: 0, events: 0 };
  const db = new Database(file, { readonly: true });
  try {
    const steps = (db.prepare('SELECT COUNT(*) AS n FROM steps').get() as { n: number }).n;
    const events = (db.prepare("SELECT COUNT(*) AS n FROM audit_records WHERE action LIKE 'step.%'").get() as { n: number }).n;
    return { steps, events };
  } catch {
    return { steps: 0, events: 0 }; // created but not yet migrated by the process that is opening it
  } finally {
    db.close();
  }
}

describe('executor CLI', () => {
  it('prints help', () => {
    const result = runCli(['--help']);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('propose');
    expect(result.stdout).toContain('revert');
  });

  it('proposes, shows, approves and reverts a plan as the README describes', () => {
    const { dataDir, workspace, base } = tempSetup();
    const plan = writePlan(base, {
      purpose: 'greet',
      steps: [{ id: 'hello', action: 'writeFile', args: { path: 'hello.txt', content: 'hi\n' } }],
    });
    const proposed = runCli(['--data-dir', dataDir, '--json', 'propose', plan]);
    expect(proposed.status).toBe(1); // not every step executed: one waits for consent
    expect(proposed.json<Outcome[]>()).toMatchObject([{ stepId: 'hello', status: 'awaiting_consent', risk: 'MEDIUM' }]);

    const shown = runCli(['--data-dir', dataDir, 'steps', 'show', 'hello']);
    expect(shown.stdout).toContain('+hi');
    expect(shown.stdout).toContain('Risk     MEDIUM');

    const approved = runCli(['--data-dir', dataDir, '--json', 'approve', 'hello', '--preview-hash', shownPreviewHash(dataDir, 'hello')]);
    expect(approved.status).toBe(0);
    expect(approved.json<Outcome>().status).toBe('executed');
    expect(fs.readFileSync(path.join(workspace, 'hello.txt'), 'utf8')).toBe('hi\n');

    const reverted = runCli(['--data-dir', dataDir, 'revert', 'hello']);
    expect(reverted.status).toBe(0);
    expect(fs.existsSync(path.join(workspace, 'hello.txt'))).toBe(false);

    const again = runCli(['--data-dir', dataDir, 'revert', 'hello']);
    expect(again.status).toBe(2);
    expect(again.stderr).toContain('ALREADY_REVERTED');
  });

  it('revert --dry-run shows the folders the step created and which stay; revert says what it removed and what it kept and why', () => {
    const { dataDir, workspace, base } = tempSetup({ autoApprove: 'MEDIUM' });
    const plan = writePlan(base, {
      steps: [{ id: 'deep', action: 'writeFile', args: { path: 'notes/deep/a.txt', content: 'by the agent\n' } }],
    });
    expect(runCli(['--data-dir', dataDir, 'propose', plan]).status).toBe(0);
    // The person's own file, with a name that tries to clear the terminal.
    const theirs = 'todo\u001b[2J.md';
    fs.writeFileSync(path.join(workspace, 'notes', theirs), 'mine\n');

    const dry = runCli(['--data-dir', dataDir, 'revert', 'deep', '--dry-run']);
    expect(dry.status).toBe(0);
    expect(dry.stdout).toContain(`${path.join(workspace, 'notes', 'deep', 'a.txt')}: will be deleted (the step created it)`);
    expect(dry.stdout).toContain(`${path.join(workspace, 'notes', 'deep')}/: will be removed`);
    expect(dry.stdout).toMatch(
      new RegExp(`${path.join(workspace, 'notes')}/: will stay: it holds todo.*\\.md, which the step did not create`),
    );
    expect(dry.stdout).not.toContain('\u001b');
    expect(fs.existsSync(path.join(workspace, 'notes', 'deep', 'a.txt'))).toBe(true);

    const reverted = runCli(['--data-dir', dataDir, 'revert', 'deep']);
    expect(reverted.status).toBe(0);
    expect(reverted.stdout).toContain(`removed ${path.join(workspace, 'notes', 'deep')}/ (the step created it)`);
    expect(reverted.stdout).toMatch(
      new RegExp(`kept ${path.join(workspace, 'notes')}/: it holds todo.*\\.md, which the step did not create`),
    );
    expect(reverted.stdout).not.toContain('\u001b');
    expect(fs.readdirSync(path.join(workspace, 'notes'))).toEqual([theirs]);
    const json = runCli(['--data-dir', dataDir, '--json', 'revert', 'deep', '--dry-run']).json<{ directories: { state: string }[] }>();
    expect(json.directories.map(({ state }) => state)).toEqual(['gone', 'keep']);
  });

  it('shows a revert conflict as a diff from the file as it is now; --force keeps the newer work as the backup of a step that can be reverted', () => {
    const { dataDir, workspace, base } = tempSetup({ autoApprove: 'MEDIUM' });
    const target = path.join(workspace, 'notes.txt');
    fs.writeFileSync(target, 'first\n');
    const plan = writePlan(base, { steps: [{ id: 'edit', action: 'writeFile', args: { path: 'notes.txt', content: 'by the agent\n' } }] });
    expect(runCli(['--data-dir', dataDir, 'propose', plan]).status).toBe(0);
    fs.writeFileSync(target, 'my own edit afterwards\n');

    const refused = runCli(['--data-dir', dataDir, 'revert', 'edit']);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('REVERT_CONFLICT');
    expect(refused.stderr).toContain('-my own edit afterwards');
    expect(refused.stderr).toContain('+first');
    expect(fs.readFileSync(target, 'utf8')).toBe('my own edit afterwards\n');

    expect(runCli(['--data-dir', dataDir, 'revert', 'edit', '--force']).status).toBe(0);
    expect(fs.readFileSync(target, 'utf8')).toBe('first\n');
    const restore = runCli(['--data-dir', dataDir, '--json', 'steps', 'list'])
      .json<{ step: { id: string; meta: { purpose?: string } } }[]>()
      .find((record) => record.step.meta.purpose?.startsWith('Forced revert of edit'))!;
    expect(runCli(['--data-dir', dataDir, 'revert', restore.step.id]).status).toBe(0);
    expect(fs.readFileSync(target, 'utf8')).toBe('my own edit afterwards\n');
  });

  it('exits 0 when every step executed (auto-approved), reading the data dir from EXECUTOR_DATA_DIR', () => {
    const { dataDir, workspace, base } = tempSetup({ autoApprove: 'MEDIUM' });
    const plan = writePlan(base, {
      steps: [
        { action: 'writeFile', args: { path: 'a.txt', content: 'a' } },
        { action: 'createKBEntry', args: { title: 't', content: 'c' } },
      ],
    });
    const result = runCli(['--json', 'propose', plan], { env: { EXECUTOR_DATA_DIR: dataDir } });
    expect(result.status).toBe(0);
    expect(result.json<Outcome[]>().map((o) => o.status)).toEqual(['executed', 'executed']);
    expect(fs.readFileSync(path.join(workspace, 'a.txt'), 'utf8')).toBe('a');
  });

  it('reports a denied step with its reason and a non-zero exit', () => {
    const { dataDir, base } = tempSetup({ autoApprove: 'HIGH' });
    const plan = writePlan(base, { steps: [{ action: 'writeFile', args: { path: '/etc/executor-test', content: 'x' } }] });
    const result = runCli(['--data-dir', dataDir, 'propose', plan]);
    expect(result.status).toBe(1);
    expect(result.stdout).toContain('denied by policy');
    expect(result.stdout).toContain('outside every workspace root');
  });

  it.each([
    ['invalid JSON', '{"steps": [', 'not valid JSON'],
    ['an unknown action', { steps: [{ action: 'rmrf', args: {} }] }, 'steps.0'],
    ['missing fields', { steps: [{ action: 'writeFile', args: { path: 'a.txt' } }] }, 'content'],
    ['no steps', { steps: [] }, 'at least one step'],
  ])('rejects a plan with %s clearly and leaves the database unchanged', (_name, plan, expected) => {
    const { dataDir, base } = tempSetup();
    const before = rowCounts(dataDir);
    const result = runCli(['--data-dir', dataDir, 'propose', writePlan(base, plan)]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('INVALID_PLAN');
    expect(result.stderr).toContain(expected);
    expect(rowCounts(dataDir)).toEqual(before);
  });

  it('rejects a 50 MB plan file before reading it, leaving the database unchanged', () => {
    const { dataDir, base } = tempSetup();
    const file = path.join(base, 'huge.json');
    fs.writeFileSync(
      file,
      JSON.stringify({ steps: [{ action: 'writeFile', args: { path: 'a', content: 'x'.repeat(50 * 1024 * 1024) } }] }),
    );
    const result = runCli(['--data-dir', dataDir, '--json', 'propose', file]);
    expect(result.status).toBe(2);
    expect(result.json<{ error: { code: string; message: string } }>().error).toMatchObject({ code: 'PLAN_TOO_LARGE' });
    expect(rowCounts(dataDir)).toEqual({ steps: 0, events: 0 });
  });

  it('tells a second process the data directory is busy, naming the holder pid', async () => {
    const { dataDir } = tempSetup();
    const holder = spawn(process.execPath, ['--import', 'tsx', path.resolve(import.meta.dirname, '../../fixtures/hold-lock.ts'), dataDir], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout.once('data', () => resolve());
        holder.once('exit', (code) => reject(new Error(`holder exited ${code}`)));
      });
      const result = runCli(['--data-dir', dataDir, 'steps', 'list']);
      expect(result.status).toBe(2);
      expect(result.stderr).toContain(`busy: the data directory ${dataDir} is held by pid ${holder.pid}`);
    } finally {
      holder.kill('SIGTERM');
      await new Promise((resolve) => holder.once('exit', resolve));
    }
    expect(runCli(['--data-dir', dataDir, 'steps', 'list']).status).toBe(0);
  });

  it('propose --wait without a host returns as soon as only the person can move the plan, saying which steps wait', () => {
    const { dataDir, workspace, base } = tempSetup();
    const plan = writePlan(base, {
      steps: [
        { id: 'one', action: 'writeFile', args: { path: 'one.txt', content: '1' } },
        { id: 'two', action: 'writeFile', args: { path: 'two.txt', content: '2' } },
      ],
    });
    // No --timeout: it must still end, since nobody but the person can move these steps.
    const waited = runCli(['--data-dir', dataDir, '--json', 'propose', plan, '--wait'], { timeoutMs: 30_000 });
    expect(waited.status).toBe(1);
    expect(waited.json<Outcome[]>()).toMatchObject([
      { stepId: 'one', status: 'awaiting_consent' },
      { stepId: 'two', status: 'awaiting_consent', blockedBy: { stepId: 'one', status: 'awaiting_consent' } },
    ]);
    const text = runCli(
      [
        '--data-dir',
        dataDir,
        'propose',
        writePlan(base, { steps: [{ id: 'three', action: 'writeFile', args: { path: 'three.txt', content: '3' } }] }, 'p2.json'),
        '--wait',
      ],
      { timeoutMs: 30_000 },
    );
    expect(text.stderr).toContain('1 step waits for your decision with `executor steps show ID`');
    expect(text.stderr).toContain(': three.');
    expect(fs.readdirSync(workspace)).toEqual([]);
    // The person decides later, from any terminal; the plan goes on from there.
    expect(
      runCli(['--data-dir', dataDir, 'approve', 'one', '--preview-hash', readOnlyStep(dataDir, 'one').previewHash ?? 'none']).status,
    ).toBe(0);
    expect(runCli(['--data-dir', dataDir, 'reject', 'two', '--reason', 'not needed']).status).toBe(0);
    expect(fs.readdirSync(workspace)).toEqual(['one.txt']);
  });

  it('the issue scenario through the CLI: the first step fails, the approved second goes back to the person, and steps show says why', () => {
    const { dataDir, workspace, base } = tempSetup();
    const plan = writePlan(base, {
      steps: [
        { id: 'first', action: 'writeFile', args: { path: 'first.txt', content: '1' } },
        { id: 'second', action: 'writeFile', args: { path: 'second.txt', content: '2' } },
      ],
    });
    expect(runCli(['--data-dir', dataDir, 'propose', plan, '--wait'], { timeoutMs: 30_000 }).status).toBe(1);
    expect(
      runCli(['--data-dir', dataDir, 'approve', 'second', '--preview-hash', readOnlyStep(dataDir, 'second').previewHash ?? 'none']).status,
    ).toBe(0);
    fs.mkdirSync(path.join(workspace, 'first.txt'));
    expect(
      runCli([
        '--data-dir',
        dataDir,
        '--json',
        'approve',
        'first',
        '--preview-hash',
        readOnlyStep(dataDir, 'first').previewHash ?? 'none',
      ]).json<Outcome>().status,
    ).toBe('failed');
    const listed = runCli([
      '--data-dir',
      dataDir,
      '--json',
      'steps',
      'list',
      '--plan',
      runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'first']).json<{ step: { planId: string } }>().step.planId,
    ]).json<{ step: { id: string }; status: string; blockedBy?: { stepId: string; status: string } }[]>();
    expect(listed.find((record) => record.step.id === 'second')).toMatchObject({
      status: 'awaiting_consent',
      blockedBy: { stepId: 'first', status: 'failed' },
    });
    const shown = runCli(['--data-dir', dataDir, 'steps', 'show', 'second']).stdout;
    expect(shown).toMatch(/Blocked +by step first \(failed\): Step first earlier in this plan failed/);
    expect(runCli(['--data-dir', dataDir, 'steps', 'list']).stdout).toMatch(/second +Waiting for you .*blocked by first \(failed\)/);
    expect(fs.existsSync(path.join(workspace, 'second.txt'))).toBe(false);
  });
});
