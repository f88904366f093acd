import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import type { RunSummary, RunTraceEntry } from '../../../src/domain/run.js';
import { startHost, type Host } from '../../../src/ipc/host/host.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { runCli, runCliAsync } from '../../helpers/run-cli.js';
import { callTool, say, startScriptedOpenAiServer, type ScriptedServer, type ScriptedTurn } from '../../helpers/scripted-openai-server.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';
import { waitForRun } from '../../helpers/run-waits.js';

// The model is the one fake: a scripted OpenAI-compatible server on loopback, speaking the real wire
// format. The host runs in this process; the CLI is the real `executor` in a child process.

let host: Host | undefined;
let server: ScriptedServer | undefined;

async function setup(script: ScriptedTurn[]) {
  const { dataDir, workspace } = tempSetup();
  server = closeAfter(await startScriptedOpenAiServer(script));
  host = closeAfter(await startHost(dataDir));
  const api = closeAfter(await connectToHost(dataDir, 'cli'));
  return {
    dataDir,
    workspace,
    api,
    server,
    modelFlags: ['--provider', 'openai', '--base-url', server.baseUrl, '--model', 'scripted-model'],
  };
}

/** The run `executor run` started, read from the host once it exists (following its events). */
async function theRun(api: ExecutorClient, done: (run: RunSummary) => boolean): Promise<RunSummary> {
  let found: RunSummary | undefined;
  const arrived = new Promise<RunSummary>((resolve) => {
    void api.on('agentRun', ({ run }) => done(run) && resolve(run));
  });
  found = (await api.listRuns({})).runs.find(done);
  return found ?? arrived;
}

describe('executor run and executor runs', () => {
  it('says to start a host when none runs, and exits 2', () => {
    const { dataDir } = tempSetup();
    const result = runCli(['--data-dir', dataDir, 'run', 'do something', '--model', 'm']);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/NOT_AVAILABLE: No Executor host is running .*`executor serve`/);
  });

  it('refuses bad flags before anything starts', async () => {
    const { dataDir } = await setup([]);
    const noModel = await runCliAsync(['--data-dir', dataDir, 'run', 'x', '--provider', 'openai']);
    expect(noModel.status).toBe(2);
    expect(noModel.stderr).toContain('--model names the model');
    const badTools = await runCliAsync(['--data-dir', dataDir, 'run', 'x', '--model', 'm', '--tools', 'files,rocket']);
    expect(badTools.status).toBe(2);
    expect(badTools.stderr).toContain('"rocket" is not a tool group');
    const badIterations = await runCliAsync(['--data-dir', dataDir, 'run', 'x', '--model', 'm', '--max-iterations', '0']);
    expect(badIterations.status).not.toBe(0);
    expect((await runCliAsync(['--data-dir', dataDir, '--json', 'runs', 'list'])).json<{ runs: unknown[] }>().runs).toEqual([]);
  });

  it('follows a run, prints the question and how to answer it, takes the answer from `executor runs answer`, exits 0; the key is sent to the model and stored nowhere', async () => {
    const { dataDir, api, server, modelFlags } = await setup([
      callTool('ask_user', { question: 'Which port?' }, 'call_q'),
      say('Using port 8080.'),
    ]);
    const key = 'sk-test-0123456789abcdefSECRET';
    const running = runCliAsync(
      ['--data-dir', dataDir, 'run', 'Set up the server', ...modelFlags, '--tools', 'files,ask', '--max-iterations', '5'],
      { env: { OPENAI_API_KEY: key } },
    );
    const waiting = await theRun(api, (run) => run.status === 'awaiting_input');
    expect(waiting.tools).toEqual(['read_file', 'list_dir', 'search_files', 'write_file', 'delete_file', 'ask_user']);
    expect(waiting.limits.maxIterations).toBe(5);
    const answered = await runCliAsync(['--data-dir', dataDir, 'runs', 'answer', waiting.id, '8080']);
    expect(answered.status).toBe(0);
    expect(answered.stdout).toContain('Answered.');
    const result = await running;
    expect(result.stdout).toContain('? The run asks: Which port?');
    expect(result.stdout).toContain(`Answer with: executor runs answer ${waiting.id} "YOUR ANSWER"`);
    expect(result.stdout).toContain('ask_user: answered by you — 8080');
    expect(result.stdout).toContain(`Run ${waiting.id} completed: Using port 8080.`);
    expect(result.status).toBe(0);
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${key}`);
    // Never stored, printed or audited.
    expect(result.stdout + result.stderr).not.toContain(key);
    for (const file of fs.readdirSync(dataDir)) {
      const full = path.join(dataDir, file);
      if (fs.statSync(full).isFile()) expect(fs.readFileSync(full).includes(Buffer.from(key)), file).toBe(false);
    }

    const trace = await runCliAsync(['--data-dir', dataDir, '--json', 'runs', 'trace', waiting.id]);
    const exported = trace.json<{ run: RunSummary; entries: RunTraceEntry[] }>();
    expect(exported.run.status).toBe('completed');
    expect(exported.entries.map((entry) => entry.toolCalls.map((call) => call.outcome))).toEqual([['ANSWERED'], []]);
    const listed = await runCliAsync(['--data-dir', dataDir, 'runs', 'list']);
    expect(listed.stdout).toMatch(new RegExp(`${waiting.id} +Completed`));
    const shown = await runCliAsync(['--data-dir', dataDir, 'runs', 'show', waiting.id]);
    expect(shown.stdout).toContain('2/5 iterations');
  });

  it('exits 1 when the run fails and 2 when it is cancelled (`executor runs cancel`)', async () => {
    const bad = { kind: 'malformed', problem: 'bad-json' } as const;
    const { dataDir, api, modelFlags } = await setup([bad, bad, bad, { kind: 'hang' }]);
    const failed = await runCliAsync(['--data-dir', dataDir, 'run', 'Loop', ...modelFlags]);
    expect(failed.status).toBe(1);
    expect(failed.stdout).toMatch(/failed: .*3 times in a row/);

    const running = runCliAsync(['--data-dir', dataDir, 'run', 'Hang', ...modelFlags]);
    const hanging = await theRun(api, (run) => run.task === 'Hang' && run.status === 'running');
    await server!.waitForRequest(4);
    const cancelled = await runCliAsync(['--data-dir', dataDir, 'runs', 'cancel', hanging.id, '--reason', 'too slow']);
    expect(cancelled.stdout).toContain('cancelled: Cancelled by');
    const result = await running;
    expect(result.status).toBe(2);
    expect(result.stdout).toMatch(/cancelled: Cancelled by .*too slow/);
  });

  it('--detach prints the run id and returns at once; runs answer without a waiting question is refused', async () => {
    const { dataDir, api, modelFlags } = await setup([{ kind: 'hang' }]);
    const detached = await runCliAsync(['--data-dir', dataDir, '--json', 'run', 'Background', ...modelFlags, '--detach']);
    expect(detached.status).toBe(0);
    const run = detached.json<RunSummary>();
    expect(run.id).toMatch(/^run-/);
    const refused = await runCliAsync(['--data-dir', dataDir, 'runs', 'answer', run.id, 'yes']);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('RUN_NOT_WAITING');
    await api.cancelRun({ runId: run.id });
    await waitForRun(api, run.id, (summary) => summary.status === 'cancelled');
  });

  it('answers a question with no host running; the next host delivers the answer and the run completes', async () => {
    const { dataDir, api, server } = await setup([callTool('ask_user', { question: 'Which branch?' }, 'call_q'), say('On main.')]);
    const { id } = await api.startRun({
      task: 'Pick a branch',
      model: { provider: 'openai', baseUrl: server.baseUrl, model: 'scripted-model' },
    });
    await waitForRun(api, id, (run) => run.status === 'awaiting_input');
    api.close();
    await host!.close();

    const listed = await runCliAsync(['--data-dir', dataDir, 'runs', 'show', id]);
    expect(listed.stdout).toContain('Waiting for your answer');
    expect(listed.stdout).toContain('asks: Which branch?');
    const answered = await runCliAsync(['--data-dir', dataDir, 'runs', 'answer', id, 'main']);
    expect(answered.status).toBe(0);

    host = closeAfter(await startHost(dataDir));
    const again = closeAfter(await connectToHost(dataDir, 'cli'));
    const done = await waitForRun(again, id, (run) => run.status === 'completed');
    expect(done.endReason?.message).toBe('On main.');
    expect(server.requests).toHaveLength(2);
  });
});
