import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/run-cli.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * audit-head.json edited or left by something else (it is not signed): garbage, another log's, a
 * mark of a step the database itself proves never started. The database holds every record up to
 * its own head; a mark at or below that head names a `running` record the database would hold, so
 * a step it holds as waiting for the person never ran. Before, even `steps list` (a read) moved
 * such a step to interrupted / RECORDS_LOST, saying "0 record(s) … lost" and "ran, and will not run
 * again": the person's pending step was taken away on the word of a file that contradicts the database.
 */
interface Listed {
  step: { id: string };
  status: string;
  error?: { code: string };
}

function waitingStep(): { dataDir: string; logId: string; seq: number; hash: string } {
  const { dataDir, workspace, base } = tempSetup();
  const plan = path.join(base, 'plan.json');
  fs.writeFileSync(
    plan,
    JSON.stringify({ steps: [{ id: 'w1', action: 'writeFile', args: { path: path.join(workspace, 'w1.txt'), content: 'x' } }] }),
  );
  expect(runCli(['--data-dir', dataDir, 'propose', plan]).status).not.toBe(2);
  const head = JSON.parse(fs.readFileSync(path.join(dataDir, 'audit-head.json'), 'utf8')) as { logId: string; seq: number; hash: string };
  expect(head.seq).toBeGreaterThan(2);
  return { dataDir, ...head };
}

describe('a head file that contradicts the database', () => {
  const cases: [string, (head: { logId: string; seq: number; hash: string }) => string][] = [
    ['garbage', () => '\u0000\u00ff{"v":1,'],
    [
      'another log, far ahead, marking the step',
      (head) => JSON.stringify({ v: 1, logId: 'another-log', seq: head.seq + 50, hash: 'x', started: { w1: head.seq + 10 } }),
    ],
    [
      'this log, its real head, marking the step at seq 1',
      (head) => JSON.stringify({ v: 1, logId: head.logId, seq: head.seq, hash: head.hash, started: { w1: 1 } }),
    ],
    [
      'this log, its real head, marking the step at the head',
      (head) => JSON.stringify({ v: 1, logId: head.logId, seq: head.seq, hash: head.hash, started: { w1: head.seq } }),
    ],
  ];
  for (const [name, text] of cases) {
    it(`${name}: the waiting step stays waiting, and verify says intact`, () => {
      const { dataDir, ...head } = waitingStep();
      fs.writeFileSync(path.join(dataDir, 'audit-head.json'), text(head));
      const listed = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']);
      expect(listed.status, listed.stderr).toBe(0);
      expect(listed.stderr).not.toMatch(/lost its newest records|RECORDS_LOST/);
      const [step] = listed.json<Listed[]>();
      expect(step!.status, JSON.stringify(step!.error)).toBe('awaiting_consent');
      const verified = runCli(['--data-dir', dataDir, 'audit', 'verify', '--offline']);
      expect(verified.status, verified.stdout + verified.stderr).toBe(0);
      expect(verified.stdout).toMatch(/^audit log intact/);
    }, 120_000);
  }
});
