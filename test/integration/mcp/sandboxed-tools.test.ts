import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { startMcp } from '../../helpers/mcp-client.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

const hasDocker = dockerAvailable();

describe('run_code through executor mcp', () => {
  it('runs auto-approved JavaScript in the light sandbox and returns its output at once', async () => {
    const { dataDir } = tempSetup({ autoApprove: 'LOW' });
    await startServe(dataDir);
    const mcp = await startMcp(dataDir, { waitSeconds: 60 });
    const result = await mcp.call('run_code', {
      code: 'console.log("sum", [1, 2, 3].reduce((a, b) => a + b, 0))',
      purpose: 'add three numbers',
    });
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
      await expect
        .poll(async () => (stepId = (await person.listSteps({ status: ['awaiting_consent'] }))[0]?.step.id), { timeout: 20_000 })
        .toBeDefined();
      expect((await person.getStep({ stepId: stepId! })).step.meta.client).toBe('test-agent 1.0');
      await person.approve({ stepId: stepId! });
      expect((await pending).text).toMatch(/^FAILED: EXECUTION_TIMEOUT: /);
    } finally {
      person.close();
    }
  });
});

describe.skipIf(!hasDocker)('run_command through executor mcp', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it('waits for the person, runs the command in the container, applies its changes and returns the output', async () => {
    const { dataDir, workspace } = tempSetup();
    fs.writeFileSync(path.join(workspace, 'input.txt'), 'one\ntwo\n');
    await startServe(dataDir);
    const mcp = await startMcp(dataDir, { waitSeconds: 120 });
    const pending = mcp.call(
      'run_command',
      { command: 'wc -l < input.txt > count.txt && echo counted', cwd: workspace, purpose: 'count the lines' },
      { timeoutMs: 300_000 },
    );
    const person: ExecutorClient = await connectToHost(dataDir, 'cli');
    try {
      let stepId: string | undefined;
      await expect
        .poll(async () => (stepId = (await person.listSteps({ status: ['awaiting_consent'] }))[0]?.step.id), {
          timeout: 240_000,
          interval: 250,
        })
        .toBeDefined();
      expect(fs.existsSync(path.join(workspace, 'count.txt'))).toBe(false);
      await person.approve({ stepId: stepId! });
      const result = await pending;
      // The model reads how it ended, the files it changed and the output, in a few tokens; none of the
      // machine facts (image digest, sandbox run id, oomKilled), which stay in the structured content.
      const [first, approver, ...output] = result.text.split('\n');
      expect(first).toMatch(/^EXECUTED: step \S+ ran: exit 0 after [\d.]+ (ms|s); files changed: count\.txt \(added\)$/);
      expect(approver).toBe('Approved by the user.');
      expect(output.join('\n')).toBe('stdout:\ncounted');
      expect(result.text).not.toMatch(/image|oomKilled|runId|sha256:|\{"/);
      const structured = result.result.structuredContent as { steps: { result: Record<string, unknown> }[] };
      expect(structured.steps[0]!.result).toMatchObject({ exitCode: 0, oomKilled: false });
      expect(structured.steps[0]!.result.image).toBeTruthy();
      expect(structured.steps[0]!.result.runId).toBeTruthy();
      expect(fs.readFileSync(path.join(workspace, 'count.txt'), 'utf8').trim()).toBe('2');

      // A command that fails says its exit status first, and its error output; no JSON.
      const failing = mcp.call(
        'run_command',
        { command: 'echo nope >&2; exit 3', cwd: workspace, purpose: 'fail on purpose' },
        { timeoutMs: 300_000 },
      );
      let second: string | undefined;
      await expect
        .poll(async () => (second = (await person.listSteps({ status: ['awaiting_consent'] }))[0]?.step.id), {
          timeout: 240_000,
          interval: 250,
        })
        .toBeDefined();
      await person.approve({ stepId: second! });
      const failed = (await failing).text;
      expect(failed).toMatch(
        /^EXECUTED: step \S+ ran: exit 3 after [\d.]+ (ms|s); no file changed\nApproved by the user\.\nstderr:\nnope$/,
      );
    } finally {
      person.close();
    }
  }, 300_000);
});
