import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { HeavyCodeRequest, HeavyCodeRunner } from '../../../src/sandbox/docker/heavy-code-runner.js';
import { actorFor } from '../../../src/domain/actor.js';
import { connectDocker } from '../../../src/sandbox/docker/docker-client.js';
import { dockerHeavyCodeRunner } from '../../../src/sandbox/docker/heavy-code-runner.js';
import { defaultPolicy } from '../../../src/policy/policy-file.js';
import { forkChild, type SpawnChild } from '../../../src/sandbox/light/spawn-child.js';
import { runCli } from '../../helpers/run-cli.js';
import { openExecutor } from '../../helpers/open-executor.js';
import { defer } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

const AGENT = actorFor('mcp', 'test-agent');
const PERSON = actorFor('cli');
const requests: string[] = [];
let origin = '';
const server = http.createServer((request, response) => {
  requests.push(`${request.method} ${request.url}`);
  response.end(JSON.stringify({ price: 42 }));
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  defer(() => new Promise<void>((resolve) => server.close(() => resolve())));
});
afterEach(() => {
  requests.length = 0;
});

const open = openExecutor;

describe('runCode through the Executor facade', () => {
  it('rates isolated code LOW, previews it by running it, and executes it into the step result', async () => {
    const { executor } = open({ autoApprove: 'LOW' });
    const [record] = await executor.propose(
      {
        steps: [
          { action: 'runCode', args: { code: 'console.log("adding"); return [1, 2, 3].reduce((a, b) => a + b);', purpose: 'add numbers' } },
        ],
      },
      AGENT,
    );
    expect(record!.evaluation).toMatchObject({ risk: 'LOW', consent: 'none', reversible: false });
    expect(record!.preview).toMatchObject({ kind: 'codeRun', result: { ok: true, value: 6, logs: ['adding'] }, requests: [] });
    expect(record!.status).toBe('executed');
    expect(record!.result).toMatchObject({ ok: true, value: 6, logs: ['adding'] });
    expect(typeof record!.result!.durationMs).toBe('number');
  });

  it("runs code without capabilities once: the approved dry run's value is its result, and the step says so", async () => {
    let spawned = 0;
    const counting: SpawnChild = (launch) => {
      spawned += 1;
      return forkChild(launch);
    };
    const { executor } = open({ autoApprove: 'LOW', lightSandbox: { warmWorkers: 0 } }, { spawnChild: counting });
    const [record] = await executor.propose(
      { steps: [{ action: 'runCode', args: { code: 'return Date.now() + Math.random();' } }] },
      AGENT,
    );
    expect(record!.status).toBe('executed');
    expect(spawned).toBe(1);
    const preview = record!.preview as { kind: 'codeRun'; result: { ok: true; value: number } };
    expect(record!.result).toMatchObject({ ok: true, value: preview.result.value, execution: { appliedDryRun: true } });
  });

  it('runs code with a capability again for the execution, and says why', async () => {
    let spawned = 0;
    const counting: SpawnChild = (launch) => {
      spawned += 1;
      return forkChild(launch);
    };
    const { executor } = open({ autoApprove: 'MEDIUM', lightSandbox: { warmWorkers: 0 } }, { spawnChild: counting });
    const [record] = await executor.propose(
      { steps: [{ action: 'runCode', args: { code: 'return Date.now() + Math.random();', capabilities: { kbSearch: true } } }] },
      AGENT,
    );
    expect(record!.status).toBe('executed');
    expect(spawned).toBe(2);
    const preview = record!.preview as { kind: 'codeRun'; result: { ok: true; value: number } };
    expect((record!.result as { value: number }).value).not.toBe(preview.result.value);
    expect(record!.result).toMatchObject({ execution: { appliedDryRun: false, reason: expect.stringMatching(/capabilities/) } });
  });

  it('fails the step with the sandbox code when the result is not ok, keeping the whole result', async () => {
    const { executor } = open({ autoApprove: 'LOW' });
    const [record] = await executor.propose({ steps: [{ action: 'runCode', args: { code: 'while (true) {}', timeoutMs: 150 } }] }, AGENT);
    expect(record!.status).toBe('failed');
    expect(record!.error).toMatchObject({
      code: 'EXECUTION_TIMEOUT',
      details: { result: { ok: false, code: 'EXECUTION_TIMEOUT', logs: [] } },
    });
    const [blocked] = await executor.propose({ steps: [{ action: 'runCode', args: { code: 'return require("fs")' } }] }, AGENT);
    expect(blocked!.error).toMatchObject({ code: 'EXECUTION_BLOCKED' });
  });

  it('rates network code HIGH with its hosts, previews the requests without sending them, and audits each call', async () => {
    const { executor } = open({ autoApprove: 'LOW', network: { allowHosts: ['127.0.0.1'] } });
    const code = `const r = await tools.fetch('${origin}/price'); return JSON.parse(r.body).price;`;
    const [proposed] = await executor.propose(
      { steps: [{ action: 'runCode', args: { code, capabilities: { fetch: { hosts: ['127.0.0.1'] } } } }] },
      AGENT,
    );
    expect(proposed!.status).toBe('awaiting_consent');
    expect(proposed!.evaluation!.risk).toBe('HIGH');
    expect(proposed!.evaluation!.reasons.join(' ')).toContain('May send network requests to: 127.0.0.1');
    expect(proposed!.preview).toMatchObject({
      kind: 'codeRun',
      requests: [{ method: 'GET', url: `${origin}/price` }],
      result: { ok: false, code: 'EXECUTION_ERROR' },
    });
    expect(requests).toEqual([]);

    const executed = await executor.approve(proposed!.step.id, PERSON);
    expect(executed.status).toBe('executed');
    expect(executed.result).toMatchObject({ ok: true, value: 42, capabilityCalls: [{ tool: 'fetch', decision: 'allowed' }] });
    expect(requests).toEqual(['GET /price']);

    const calls = executor
      .getAudit({ filters: { stepId: proposed!.step.id }, order: 'asc' })
      .entries.filter((entry) => entry.action === 'capability.call');
    expect(
      calls.map((entry) => {
        const args = entry.args as Record<string, unknown>;
        return [entry.planId, args.mode, args.decision, args.target];
      }),
    ).toEqual([
      [proposed!.step.planId, 'record-only', 'recorded', `GET ${origin}/price`],
      [proposed!.step.planId, 'execute', 'allowed', `GET ${origin}/price`],
    ]);
  });

  it('denies a step that asks for a host the policy does not allow', async () => {
    const { executor } = open({ autoApprove: 'HIGH', network: { allowHosts: ['api.example.com'] } });
    const [record] = await executor.propose(
      { steps: [{ action: 'runCode', args: { code: 'return 1', capabilities: { fetch: { hosts: ['evil.example.net'] } } } }] },
      AGENT,
    );
    expect(record!.status).toBe('denied');
    expect(record!.evaluation!.reasons.join(' ')).toContain("evil.example.net is not on the policy's network allowlist");
  });

  it('reads a workspace file through tools.readFile and audits the read', async () => {
    const { executor, workspace } = open({ autoApprove: 'LOW' });
    fs.writeFileSync(path.join(workspace, 'numbers.txt'), '3\n4\n');
    const [record] = await executor.propose(
      {
        steps: [
          {
            action: 'runCode',
            args: {
              code: "return (await tools.readFile('numbers.txt')).trim().split('\\n').map(Number).reduce((a, b) => a + b);",
              capabilities: { readFile: true },
            },
          },
        ],
      },
      AGENT,
    );
    expect(record!.result).toMatchObject({ ok: true, value: 7 });
    const calls = executor
      .getAudit({ filters: { stepId: record!.step.id }, order: 'asc' })
      .entries.filter((entry) => entry.action === 'capability.call');
    expect(calls).toHaveLength(2);
    expect(
      calls.every(
        (entry) =>
          (entry.args as Record<string, unknown>).tool === 'readFile' && (entry.args as Record<string, unknown>).decision === 'allowed',
      ),
    ).toBe(true);
  });

  it('cannot be reverted, and says so', async () => {
    const { executor } = open({ autoApprove: 'LOW' });
    const [record] = await executor.propose({ steps: [{ action: 'runCode', args: { code: 'return 1' } }] }, AGENT);
    await expect(executor.revertStep(record!.step.id, PERSON)).rejects.toMatchObject({ code: 'NOT_REVERSIBLE' });
  });

  it('answers Python and docker requests with SANDBOX_UNAVAILABLE when no Docker engine answers', async () => {
    const deadEngine = dockerHeavyCodeRunner(
      () => defaultPolicy(),
      () => connectDocker('unix:///nonexistent/docker.sock'),
    );
    const { executor } = open({ autoApprove: 'MEDIUM' }, { heavyCodeRunner: deadEngine });
    const [record] = await executor.propose({ steps: [{ action: 'runCode', args: { code: 'print(1)', language: 'python' } }] }, AGENT);
    expect(record!.status).toBe('failed');
    expect(record!.error).toMatchObject({ code: 'SANDBOX_UNAVAILABLE' });
  });

  it('delegates Python and docker requests to the heavy runner seam when one is given', async () => {
    // A stand-in for the Docker sandbox, which is built and tested in its own module; here only the delegation is under test.
    const seen: HeavyCodeRequest[] = [];
    const heavy: HeavyCodeRunner = {
      async run(request) {
        seen.push(request);
        return { ok: true, value: `ran ${request.args.language ?? 'javascript'} in ${request.mode}`, logs: [], durationMs: 1 };
      },
    };
    const { executor } = open({ autoApprove: 'MEDIUM' }, { heavyCodeRunner: heavy });
    const [record] = await executor.propose({ steps: [{ action: 'runCode', args: { code: 'print(1)', language: 'python' } }] }, AGENT);
    expect(record!.evaluation!.risk).toBe('MEDIUM');
    // No capabilities: the approved dry run's value is the result; the heavy sandbox ran once.
    expect(record!.result).toMatchObject({ ok: true, value: 'ran python in simulate', execution: { appliedDryRun: true } });
    expect(seen.map((request) => request.mode)).toEqual(['simulate']);
  });
});

describe('runCode through the CLI', () => {
  it('proposes a plan with runCode and prints the executed result', () => {
    const { dataDir, base } = tempSetup({ autoApprove: 'LOW' });
    const planFile = path.join(base, 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({
        steps: [
          { action: 'runCode', args: { code: 'return { words: "a b c".split(" ").length };' } },
          { action: 'runCode', args: { code: 'throw new Error("nope")' } },
        ],
      }),
    );
    const cli = runCli(['--data-dir', dataDir, '--json', 'propose', planFile]);
    const outcomes = cli.json<{ status: string; result?: Record<string, unknown>; error?: { code: string } }[]>();
    expect(outcomes[0]).toMatchObject({ status: 'executed', result: { ok: true, value: { words: 3 } } });
    expect(outcomes[1]).toMatchObject({ status: 'failed', error: { code: 'EXECUTION_ERROR' } });
    expect(cli.status).toBe(1);
    const shown = runCli(['--data-dir', dataDir, 'steps', 'show', cli.json<{ stepId: string }[]>()[0]!.stepId]);
    expect(shown.stdout).toContain('--- dry run of the code');
    expect(shown.stdout).toContain('value: {"words":3}');
  });
});

describe('runCode budget across CLI commands', () => {
  it('keeps counting runs between commands on the same data directory and denies with the refill time', () => {
    const { dataDir, base } = tempSetup({ autoApprove: 'LOW', lightSandbox: { budget: { runsPerMinute: 2 } } });
    const planFile = path.join(base, 'plan.json');
    fs.writeFileSync(planFile, JSON.stringify({ steps: [{ action: 'runCode', args: { code: 'return 1' } }] }));
    const first = runCli(['--data-dir', dataDir, '--json', 'propose', planFile]);
    expect(first.json<{ status: string }[]>()[0]).toMatchObject({ status: 'executed' });
    // The second run of the minute is the second step's dry run; its approved value is its result (no run of its own).
    const second = runCli(['--data-dir', dataDir, '--json', 'propose', planFile]);
    expect(second.json<{ status: string }[]>()[0]).toMatchObject({ status: 'executed' });
    const third = runCli(['--data-dir', dataDir, '--json', 'propose', planFile]);
    const outcome = third.json<{ status: string; error?: { code: string; details?: { result?: { retryAfterMs?: number } } } }[]>()[0]!;
    expect(outcome).toMatchObject({ status: 'failed', error: { code: 'EXECUTION_DENIED' } });
    expect(outcome.error!.details!.result!.retryAfterMs).toBeGreaterThan(0);
    expect(outcome.error!.details!.result!.retryAfterMs).toBeLessThanOrEqual(60_000);
  });
});
