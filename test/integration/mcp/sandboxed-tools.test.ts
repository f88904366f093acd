import { describe, expect, it } from 'vitest';
import { ACTION_ARGS } from '../../../src/domain/step.js';
import type { ExecutorClient } from '../../../src/ipc/client.js';
import { connectToHost } from '../../../src/ipc/node-client.js';
import { startMcp } from '../../helpers/mcp-client.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

const hasRunCode = 'runCode' in ACTION_ARGS;

describe.runIf(hasRunCode)('run_code through executor mcp', () => {
  it('runs auto-approved JavaScript in the light sandbox and returns its output at once', async () => {
    const { dataDir } = tempSetup({ autoApprove: 'LOW' });
    await startServe(dataDir);
    const mcp = await startMcp(dataDir, { waitSeconds: 60 });
    const result = await mcp.call('run_code', { code: 'console.log("sum", [1, 2, 3].reduce((a, b) => a + b, 0))', purpose: 'add three numbers' });
    expect(result.isError).toBe(false);
    expect(result.text).toMatch(/^EXECUTED: step \S+ ran\.\n/);
    expect(result.text).toContain('logs:\nsum 6');
  });

  it("waits for the person when the policy auto-approves nothing, and reports the sandbox's timeout as FAILED", async () => {
    const { dataDir } = tempSetup();
    await startServe(dataDir);
    const mcp = await startMcp(dataDir, { waitSeconds: 60 });
    const pending = mcp.call('run_code', { code: 'for (;;) {}', timeoutMs: 200, purpose: 'spin' });
    const person: ExecutorClient = await connectToHost(dataDir, 'cli');
    try {
      let stepId: string | undefined;
      await expect.poll(async () => (stepId = (await person.listSteps({ status: ['awaiting_consent'] }))[0]?.step.id), { timeout: 20_000 }).toBeDefined();
      expect((await person.getStep({ stepId: stepId! })).step.meta.client).toBe('test-agent 1.0');
      await person.approve({ stepId: stepId! });
      expect((await pending).text).toMatch(/^FAILED: EXECUTION_TIMEOUT: /);
    } finally {
      person.close();
    }
  });
});

// Until the runCode action is merged into this build, the host refuses the plan; the tool must say so plainly.
describe.runIf(!hasRunCode)('run_code on a build without the runCode action', () => {
  it('answers with a clear FAILED result instead of a protocol error', async () => {
    const { dataDir } = tempSetup();
    await startServe(dataDir);
    const mcp = await startMcp(dataDir, { waitSeconds: 0 });
    const result = await mcp.call('run_code', { code: '1 + 1', purpose: 'add' });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^FAILED: INVALID_PLAN: this Executor does not support that kind of step yet/);
  });
});
