import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ACTION_ARGS } from '../../../src/domain/step.js';
import type { ExecutorClient } from '../../../src/ipc/client.js';
import { connectToHost } from '../../../src/ipc/node-client.js';
import { startMcp } from '../../helpers/mcp-client.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

const hasRunCode = 'runCode' in ACTION_ARGS;
const hasRunCommand = 'runCommand' in ACTION_ARGS;

/** Docker answers here; under CI=true a missing engine fails instead of skipping. */
function dockerAnswers(): boolean {
  const ok = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8', timeout: 20_000 }).status === 0;
  if (!ok && process.env.CI === 'true') throw new Error('CI=true but no Docker engine answers: the run_command MCP test must run in CI.');
  if (!ok) console.warn('\n!!! SKIPPING run_command through MCP: no Docker engine answers. Start dockerd to run it.\n');
  return ok;
}

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

// Until an action is merged into this build, the host refuses the plan; the tool must say so plainly.
const missing = [
  ...(hasRunCode ? [] : [['run_code', { code: '1 + 1', purpose: 'add' }] as const]),
  ...(hasRunCommand ? [] : [['run_command', { argv: ['true'], purpose: 'nothing' }] as const]),
];
describe.runIf(missing.length > 0)('sandboxed tools on a build without their action', () => {
  it('answer with a clear FAILED result instead of a protocol error', async () => {
    const { dataDir } = tempSetup();
    await startServe(dataDir);
    const mcp = await startMcp(dataDir, { waitSeconds: 0 });
    for (const [tool, args] of missing) {
      const result = await mcp.call(tool, args);
      expect(result.isError, tool).toBe(true);
      expect(result.text, tool).toMatch(/^FAILED: INVALID_PLAN: this Executor does not support that kind of step yet/);
    }
  });
});

describe.runIf(hasRunCommand && dockerAnswers())('run_command through executor mcp', () => {
  it('waits for the person, runs the command in the container, applies its changes and returns the output', async () => {
    const { dataDir, workspace } = tempSetup();
    fs.writeFileSync(path.join(workspace, 'input.txt'), 'one\ntwo\n');
    await startServe(dataDir);
    const mcp = await startMcp(dataDir, { waitSeconds: 120 });
    const pending = mcp.call('run_command', { command: 'wc -l < input.txt > count.txt && echo counted', cwd: workspace, purpose: 'count the lines' }, { timeoutMs: 300_000 });
    const person: ExecutorClient = await connectToHost(dataDir, 'cli');
    try {
      let stepId: string | undefined;
      await expect.poll(async () => (stepId = (await person.listSteps({ status: ['awaiting_consent'] }))[0]?.step.id), { timeout: 240_000, interval: 250 }).toBeDefined();
      expect(fs.existsSync(path.join(workspace, 'count.txt'))).toBe(false);
      await person.approve({ stepId: stepId! });
      const result = await pending;
      expect(result.text).toMatch(/^EXECUTED: step \S+ ran\.\n/);
      expect(result.text).toContain('"exitCode":0');
      expect(result.text).toContain('stdout:\ncounted');
      expect(fs.readFileSync(path.join(workspace, 'count.txt'), 'utf8').trim()).toBe('2');
    } finally {
      person.close();
    }
  }, 300_000);
});
