import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { ExecutorError } from '../../../../src/domain/errors.js';
import { workerRangeRunner, type VerifyWorkerSource } from '../../../../src/audit/verify/verify-workers.js';
import { DATABASE_FILE } from '../../../../src/store/database.js';
import { buildAuditLog } from '../../../helpers/audit-log-fixture.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

const shared = { logId: 'log', knownKeyIds: new Set<string>(), keys: new Map(), wantHashesAt: new Set<number>() };
const ranges = [
  { from: 1, to: 100, startsLog: true },
  { from: 101, to: 203, startsLog: false },
];

/** Real worker threads running `code` (CommonJS): what the pool would hand out, behaving as a broken one would. */
function threadsRunning(code: string): VerifyWorkerSource & { given: number } {
  const source = {
    given: 0,
    take: () => ({ worker: new Worker(code, { eval: true }), idleTimer: undefined }),
    giveBack: (pooled: { worker: Worker }) => {
      source.given++;
      void pooled.worker.terminate();
    },
  };
  return source;
}

async function failure(promise: Promise<unknown>): Promise<ExecutorError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ExecutorError);
  return error as ExecutorError;
}

describe('verify worker threads that do not finish', { timeout: 120_000 }, () => {
  it('a worker thread that dies mid-scan is a clear error naming its records, not a hang', async () => {
    const { dataDir } = buildAuditLog({ records: 200 });
    // One part answers, the other's thread exits after some progress: as a crash or an OOM kill would.
    const source = threadsRunning(`
      const { parentPort } = require('node:worker_threads');
      parentPort.once('message', (job) => {
        if (job.from === 1) {
          parentPort.postMessage({ type: 'progress', delta: 100 });
          return setTimeout(() => parentPort.postMessage({ type: 'done', result: { count: 100 } }), 300);
        }
        parentPort.postMessage({ type: 'progress', delta: 7 });
        setTimeout(() => process.exit(3), 20);
      });`);
    const progress: number[] = [];
    const error = await failure(
      workerRangeRunner(path.join(dataDir, DATABASE_FILE), source)(ranges, shared, (checked) => progress.push(checked)),
    );
    expect(error.code).toBe('INTERNAL');
    expect(error.message).toContain('records 101..203');
    expect(error.message).toContain('exit code 3');
    expect(error.message).toContain('--workers 1');
    expect(error.details).toEqual({ from: 101, to: 203 });
    expect(progress.length).toBeGreaterThan(0);
  });

  it('a worker thread that throws outside its job is an error too, naming what it threw', async () => {
    const { dataDir } = buildAuditLog({ records: 20 });
    const thrown = await failure(
      workerRangeRunner(
        path.join(dataDir, DATABASE_FILE),
        threadsRunning(
          `require('node:worker_threads').parentPort.once('message', () => setTimeout(() => { throw new Error('boom in the worker'); }))`,
        ),
      )(ranges, shared, () => {}),
    );
    expect(thrown.message).toContain('crashed (boom in the worker)');
  });

  it('a part whose database cannot be read fails with the reason, and the real pool stays usable', async () => {
    const missing = path.join(tempDir('executor-no-db-'), DATABASE_FILE);
    const error = await failure(workerRangeRunner(missing)(ranges, shared, () => {}));
    expect(error.code).toBe('INTERNAL');
    expect(error.message).toMatch(/records (1\.\.100|101\.\.203): its worker thread failed \(.+\)/);

    const { dataDir } = buildAuditLog({ records: 300 });
    const file = path.join(dataDir, DATABASE_FILE);
    const parts = await workerRangeRunner(file)(
      [
        { from: 1, to: 150, startsLog: true },
        { from: 151, to: 303, startsLog: false },
      ],
      shared,
      () => {},
    );
    // No keys given: the parts still read and chain every record (the log id is not this test's, so each stops at its first record).
    expect(parts).toHaveLength(2);
    expect(parts.every((part) => part.problem?.code === 'FOREIGN_LOG')).toBe(true);
  });
});
