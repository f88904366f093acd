import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { actorFor } from '../../../../src/domain/actor.js';
import { Executor } from '../../../../src/executor/executor.js';
import { dockerAvailable, ensureSandboxImage } from '../../../helpers/docker-engine.js';
import { tempSetup } from '../../../helpers/temp-dirs.js';

const hasDocker = dockerAvailable();

describe.skipIf(!hasDocker)('runCode with Python or sandbox "docker", through the Executor', () => {
  let executor: Executor;
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);
  // Temporary data directories are removed after each test, so each test opens its own.
  beforeEach(() => {
    executor = Executor.open(tempSetup({ autoApprove: 'MEDIUM' }).dataDir);
  });
  afterEach(() => executor.close());

  it('runs Python in the container: stdout is the value, stderr the log', async () => {
    const [record] = await executor.propose(
      { steps: [{ action: 'runCode', args: { language: 'python', code: 'import sys, json\nprint(json.dumps(sum(range(10))))\nprint("working", file=sys.stderr)' } }] },
      actorFor('mcp', 'test-agent'),
    );
    expect(record!.preview).toMatchObject({ kind: 'codeRun', result: { ok: true, value: '45\n' } });
    expect(record!.status).toBe('executed');
    expect(record!.result).toMatchObject({ ok: true, value: '45\n', logs: ['working'] });
  });

  it('reports a failing script as EXECUTION_ERROR with its last error line', async () => {
    const [record] = await executor.propose(
      { steps: [{ action: 'runCode', args: { sandbox: 'docker', code: 'throw new Error("boom in the container")' } }] },
      actorFor('mcp', 'test-agent'),
    );
    expect(record!.status).toBe('failed');
    expect(record!.error).toMatchObject({ code: 'EXECUTION_ERROR' });
    expect(record!.error!.message).toContain('exited with status 1');
  });
});
