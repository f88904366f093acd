import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { runCli, runCliAsync } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

const STEPS = 200;

/** What a copy of the database files says: its newest audit seq, and the steps it holds as executed or running. */
function readCopy(dataDir: string, withWal: boolean): { seq: number; ran: Set<string> } {
  const copy = tempDir('db-copy-');
  for (const suffix of withWal ? ['', '-wal'] : ['']) {
    const from = path.join(dataDir, `executor.db${suffix}`);
    if (fs.existsSync(from)) fs.copyFileSync(from, path.join(copy, `executor.db${suffix}`));
  }
  const db = new Database(path.join(copy, 'executor.db'));
  try {
    const seq = (db.prepare('SELECT coalesce(max(seq), 0) FROM audit_records').pluck().get() as number) ?? 0;
    const ran = db.prepare("SELECT step_id FROM steps WHERE status IN ('running', 'executed')").pluck().all() as string[];
    return { seq, ran: new Set(ran) };
  } finally {
    db.close();
  }
}

/** A write's temporary file (atomic-write.ts): a kill can leave one (written ahead of its step's intent record), and the next open removes it. */
const TEMPORARY = /^\..*\.executor-[0-9a-f]{12}\.tmp$/;

/** The files of the plan on disk now: name → content and mtime (not the temporary files of writes under way). */
function filesOnDisk(workspace: string): Map<string, { content: string; mtimeMs: number }> {
  const files = new Map<string, { content: string; mtimeMs: number }>();
  for (const name of fs.readdirSync(workspace)) {
    if (TEMPORARY.test(name)) continue;
    const file = path.join(workspace, name);
    files.set(name, { content: fs.readFileSync(file, 'utf8'), mtimeMs: fs.statSync(file).mtimeMs });
  }
  return files;
}

describe('a database that lost its WAL after a SIGKILL', () => {
  it('audit verify says how many records cannot be vouched for, and no step whose file is on disk runs again', async () => {
    const { dataDir, workspace, base } = tempSetup({ autoApprove: 'HIGH' });
    const planFile = path.join(base, 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({
        steps: Array.from({ length: STEPS }, (_, index) => ({
          id: `s${index}`,
          action: 'writeFile',
          args: { path: path.join(workspace, `f${index}.txt`), content: `step ${index}\n` },
        })),
      }),
    );
    const serve = await startServe(dataDir);
    // Not awaited: through the host, propose answers once the plan has run as far as it can.
    const proposing = runCliAsync(['--data-dir', dataDir, '--json', 'propose', planFile], { timeoutMs: 300_000 });

    // Frozen (SIGSTOP) at a moment when the database file alone lacks steps whose files are written: the
    // checkpointer copies the WAL back every 200 ms, so the freeze is tried again after each new file until then.
    let lost: { withWal: { seq: number; ran: Set<string> }; alone: { seq: number; ran: Set<string> } } | undefined;
    let seen = 0;
    while (!lost) {
      await expect.poll(() => fs.readdirSync(workspace).length, { timeout: 120_000, interval: 20 }).toBeGreaterThan(seen);
      serve.child.kill('SIGSTOP');
      seen = fs.readdirSync(workspace).length;
      expect(seen, 'the plan ended before a freeze found the WAL ahead of the database file').toBeLessThan(STEPS);
      const withWal = readCopy(dataDir, true);
      const alone = readCopy(dataDir, false);
      const behind = [...withWal.ran].some((id) => !alone.ran.has(id));
      if (behind) lost = { withWal, alone };
      else serve.child.kill('SIGCONT');
    }
    const exited = new Promise((resolve) => serve.child.once('exit', resolve));
    serve.child.kill('SIGKILL');
    await exited;
    await proposing;
    fs.rmSync(path.join(dataDir, 'executor.db-wal'));
    const before = filesOnDisk(workspace);
    const lostCount = lost.withWal.seq - lost.alone.seq;
    expect(lostCount).toBeGreaterThan(0);

    // verify: not "intact"; it names how many records after which seq cannot be vouched for. The head file is
    // written after each commit, so a freeze in the instant between the two leaves it at most that commit short.
    const verified = runCli(['--data-dir', dataDir, 'audit', 'verify', '--offline'], { timeoutMs: 120_000 });
    expect(verified.status, verified.stdout + verified.stderr).toBe(1);
    const said = /^audit log NOT intact: TAIL_LOST at seq (\d+): (\d+) records? after seq (\d+) cannot be vouched for/.exec(
      verified.stdout,
    );
    expect(said, verified.stdout).not.toBeNull();
    expect(Number(said![3])).toBe(lost.alone.seq);
    expect(Number(said![2])).toBeGreaterThan(0);
    expect(Number(said![2])).toBeLessThanOrEqual(lostCount);

    // The host starts again and takes the plan up: the steps whose files are on disk do not run again.
    const again = await startServe(dataDir);
    await expect
      .poll(
        () => {
          const listed = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']);
          return listed
            .json<{ status: string }[]>()
            .filter((step) => ['approved', 'running', 'proposed', 'evaluated'].includes(step.status)).length;
        },
        { timeout: 240_000, interval: 500 },
      )
      .toBe(0);
    const filesAfter = filesOnDisk(workspace);
    for (const [name, file] of before) expect(filesAfter.get(name), name).toEqual(file);
    expect(fs.readdirSync(workspace).filter((name) => TEMPORARY.test(name))).toEqual([]);
    const lostSteps = [...lost.withWal.ran].filter((id) => !lost.alone.ran.has(id));
    for (const stepId of lostSteps) {
      const shown = runCli(['--data-dir', dataDir, '--json', 'steps', 'show', stepId]).json<{ status: string; error?: { code: string } }>();
      expect(shown.status, stepId).toBe('interrupted');
      expect(shown.error?.code, stepId).toBe('RECORDS_LOST');
      const trail = runCli(['--data-dir', dataDir, '--json', 'audit', 'show', '--step', stepId]).json<{ action: string }[]>();
      expect(trail.filter((entry) => entry.action === 'step.executed').length, stepId).toBeLessThanOrEqual(1);
    }
    expect(await again.stop()).toBe(0);
    // The loss was recorded at the start: the chain is whole again, but the log is never said plain "intact".
    const after = runCli(['--data-dir', dataDir, 'audit', 'verify', '--offline'], { timeoutMs: 120_000 });
    expect(after.status, after.stdout + after.stderr).toBe(0);
    expect(after.stdout).toMatch(/^audit log chain intact, but \d+ lost record\(s\) cannot be vouched for/);
    expect(after.stdout).toContain(`LOST RECORDS: ${said![2]} record`);
    expect(after.stdout).toContain(`after seq ${lost.alone.seq} cannot be vouched for`);
  }, 600_000);
});
