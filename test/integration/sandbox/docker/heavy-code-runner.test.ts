import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { actorFor } from '../../../../src/domain/actor.js';
import { Executor } from '../../../../src/executor/executor.js';
import { defaultPolicy } from '../../../../src/policy/policy-file.js';
import { connectDocker } from '../../../../src/sandbox/docker/docker-client.js';
import { dockerHeavyCodeRunner } from '../../../../src/sandbox/docker/heavy-code-runner.js';
import { dockerAvailable, ensureSandboxImage } from '../../../helpers/docker-engine.js';
import { closeAfter } from '../../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../../helpers/temp-dirs.js';

const hasDocker = dockerAvailable();
const audited: Record<string, unknown>[] = [];
const request = (args: Record<string, unknown>, mode: 'simulate' | 'execute' = 'execute') => ({
  stepId: 'code',
  args: { code: '', ...args } as never,
  mode,
  auditCapabilityCall: (detail: Record<string, unknown>) => audited.push(detail),
});

describe.skipIf(!hasDocker)('dockerHeavyCodeRunner (runCode on the Docker sandbox)', () => {
  const runner = dockerHeavyCodeRunner(() => defaultPolicy());
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it('answers with what the script printed, for python and for javascript', async () => {
    expect(await runner.run(request({ code: 'print(sum(range(10)))', language: 'python' }))).toMatchObject({
      ok: true,
      value: '45\n',
      logs: ['45'],
    });
    expect(await runner.run(request({ code: 'console.log([1, 2].map((n) => n * 3).join("+"))', sandbox: 'docker' }))).toMatchObject({
      ok: true,
      value: '3+6\n',
    });
  });

  it('turns exit codes, timeouts and a missing engine into typed results, never exceptions', async () => {
    const failed = await runner.run(request({ code: 'import sys\nprint("oops", file=sys.stderr)\nsys.exit(3)', language: 'python' }));
    expect(failed).toMatchObject({
      ok: false,
      code: 'EXECUTION_ERROR',
      message: expect.stringContaining('status 3: oops'),
      logs: ['[stderr] oops'],
    });
    const slow = await runner.run(request({ code: 'while True: pass', language: 'python', timeoutMs: 800 }));
    expect(slow).toMatchObject({ ok: false, code: 'EXECUTION_TIMEOUT' });
    const noEngine = dockerHeavyCodeRunner(
      () => defaultPolicy(),
      () => connectDocker(`unix://${path.join(tempDir(), 'none.sock')}`),
    );
    expect(await noEngine.run(request({ code: 'print(1)', language: 'python' }))).toMatchObject({ ok: false, code: 'SANDBOX_UNAVAILABLE' });
  });

  it('runs a python runCode step end to end through the Executor', async () => {
    const { dataDir } = tempSetup();
    let executor: Executor | undefined;
    executor = closeAfter(Executor.open(dataDir, { heavyCodeRunner: dockerHeavyCodeRunner(() => executor!.getPolicy()) }));
    const [proposed] = await executor.propose(
      { steps: [{ id: 'py', action: 'runCode', args: { code: 'import json\nprint(json.dumps({"answer": 6 * 7}))', language: 'python' } }] },
      actorFor('cli'),
    );
    const record = proposed!.status === 'executed' ? proposed! : await executor.approve('py', actorFor('cli'));
    expect(record.status).toBe('executed');
    expect(JSON.stringify(record.result)).toContain('{\\"answer\\": 42}');
  });
});
