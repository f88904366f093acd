import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CLI, runCli } from '../../helpers/run-cli.js';
import { noteOwnProcess } from '../../helpers/own-processes.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/**
 * A machine's clock steps: NTP corrects a clock that was fast, a VM resumes, a laptop's battery runs
 * out. Each command here is the real CLI, started under libfaketime (Debian's `faketime`, which
 * also moves node's clock) with the clock where the case puts it; none of those steps may make the
 * honest log read as tampered.
 */

/** Each case runs the CLI a handful of times (seconds each on two busy cores). */
const CLI_RUNS_MS = 240_000;

/** One command that writes records (app.started, app.stopped, a shutdown checkpoint) with the clock `offset` off ('' = the true time). */
function writeAt(dataDir: string, offset: string): void {
  const args = ['--data-dir', dataDir, 'witness', 'publish'];
  const result = offset
    ? spawnSync('faketime', ['-f', offset, process.execPath, CLI, ...args], { encoding: 'utf8', timeout: 120_000 })
    : spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 120_000 });
  noteOwnProcess(result.pid);
  expect(result.status, `${offset || 'true time'}: ${result.stderr}`).toBe(0);
}

interface Entry {
  seq: number;
  ts: string;
  action: string;
  args: { clock?: string; loggedAt?: string; behindMs?: number };
}

function entries(dataDir: string): Entry[] {
  const shown = runCli(['--data-dir', dataDir, '--json', 'audit', 'show', '--limit', '1000'], { timeoutMs: 120_000 });
  expect(shown.status, shown.stderr).toBe(0);
  return shown.json<Entry[]>();
}

function verify(dataDir: string) {
  const result = runCli(['--data-dir', dataDir, '--json', 'audit', 'verify'], { timeoutMs: 120_000 });
  return { status: result.status, report: result.json<{ ok: boolean; problem: { code: string; message: string } | null }>() };
}

describe('a clock that steps does not turn an honest log into a tampered one', () => {
  const cases: { name: string; offsets: string[]; behindAtLeastMs: number }[] = [
    { name: 'first used 5 minutes fast, then corrected by NTP', offsets: ['+5m', '', ''], behindAtLeastMs: 4 * 60_000 },
    { name: 'first used 20 minutes fast, then corrected', offsets: ['+20m', '', ''], behindAtLeastMs: 19 * 60_000 },
    { name: 'first used 2 hours fast, then corrected', offsets: ['+2h', '', ''], behindAtLeastMs: 119 * 60_000 },
    { name: 'stepped back 2 hours for one command', offsets: ['', '-2h', ''], behindAtLeastMs: 119 * 60_000 },
    { name: 'one forward jump of a day, later corrected', offsets: ['', '+1d', '', '+20m', ''], behindAtLeastMs: 23 * 3600_000 },
  ];
  for (const { name, offsets, behindAtLeastMs } of cases) {
    it(
      `${name}: verify is intact, the step is recorded, and no record is dated before its predecessor`,
      () => {
        const dataDir = tempDir();
        for (const offset of offsets) writeAt(dataDir, offset);
        const verified = verify(dataDir);
        expect(verified.report.problem, JSON.stringify(verified.report.problem)).toBeNull();
        expect(verified.status).toBe(0);
        const log = entries(dataDir);
        for (let at = 1; at < log.length; at += 1) expect(Date.parse(log[at]!.ts)).toBeGreaterThanOrEqual(Date.parse(log[at - 1]!.ts));
        const steps = log.filter((entry) => entry.action === 'clock.stepped');
        expect(steps.length).toBeGreaterThan(0);
        // The step record says what the clock read and how far behind the log's time it was.
        expect(steps[0]!.args.behindMs).toBeGreaterThanOrEqual(behindAtLeastMs);
        expect(Date.parse(steps[0]!.args.loggedAt!) - Date.parse(steps[0]!.args.clock!)).toBe(steps[0]!.args.behindMs);
      },
      CLI_RUNS_MS,
    );
  }

  it(
    'a clock that never steps writes no clock.stepped record',
    () => {
      const dataDir = tempDir();
      writeAt(dataDir, '');
      writeAt(dataDir, '');
      expect(verify(dataDir).status).toBe(0);
      expect(entries(dataDir).some((entry) => entry.action === 'clock.stepped')).toBe(false);
    },
    CLI_RUNS_MS,
  );
});
