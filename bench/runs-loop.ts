/**
 * What an agent run costs beyond its model, against a scripted OpenAI-compatible server on loopback
 * that answers at once (the one fake: the model):
 *
 * 1. The loop's own cost per iteration: from the model's answer fully sent to the next request
 *    arriving (parse the turn, write it with its run.turn record, answer a list_dir, store the
 *    result, build the next request), p50/p99, against a baseline measured in the same run: the same
 *    model client calling the same server back to back with the same conversation, doing nothing else.
 *    Target: ≤ 20 ms p50.
 * 2. From the model's tool call leaving the server to the step being visible to a person's session
 *    (the `stepSummary` event the window's lists follow, signed, over the host's socket), p50/p99.
 *    Target: ≤ 200 ms p50.
 *
 *   npx tsx bench/runs-loop.ts [iterations=40]   (runs-core's view over the socket; bench/runs.ts is the fuller one)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { startHost } from '../src/ipc/host/host.js';
import { connectToHost } from '../src/ipc/transports/node-client.js';
import { createModelClient } from '../src/runs/models/create-model-client.js';
import { modelTools } from '../src/runs/run-tools.js';
import type { ModelMessage } from '../src/runs/model-client.js';
import { startScriptedOpenAiServer, type RecordedRequest, type ScriptedTurn } from '../test/helpers/scripted-openai-server.js';

const iterations = Number(process.argv[2] ?? 40);
const base = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-bench-runs-'));
const dataDir = path.join(base, 'data');
const workspace = path.join(base, 'workspace');
fs.mkdirSync(dataDir);
fs.mkdirSync(workspace);
fs.writeFileSync(path.join(workspace, 'README.md'), '# bench\n');
fs.writeFileSync(
  path.join(dataDir, 'policy.json'),
  JSON.stringify({ workspaceRoots: [workspace], runs: { maxIterations: 500, maxToolCallsPerRun: 10_000 } }),
);

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};
const ms = (value: number) => `${value.toFixed(2)} ms`;

let mode: 'read' | 'write' = 'read';
let writes = 0;
const server = await startScriptedOpenAiServer((request: RecordedRequest): ScriptedTurn => {
  const results = request.body!.messages.filter((message) => message.role === 'tool').length;
  if (mode === 'read')
    return results < iterations ? { kind: 'reply', toolCalls: [{ name: 'list_dir', arguments: {} }] } : { kind: 'reply', text: 'done' };
  return results < iterations
    ? { kind: 'reply', toolCalls: [{ name: 'write_file', arguments: { path: `w${writes++}.txt`, content: 'x\n' } }] }
    : { kind: 'reply', text: 'done' };
});
const model = { provider: 'openai' as const, baseUrl: server.baseUrl, model: 'bench' };
const host = await startHost(dataDir);
const api = await connectToHost(dataDir, 'cli');

async function untilEnded(runId: string): Promise<void> {
  await new Promise<void>((resolve) => {
    void api.on('agentRun', ({ run }) => {
      if (run.id === runId && ['completed', 'failed', 'cancelled'].includes(run.status)) resolve();
    });
  });
}

// 1. The loop's own cost, and the bare client's over the same conversations.
const readRun = await api.startRun({ task: 'List the folder again and again', model, tools: ['list_dir'] });
await untilEnded(readRun.id);
const loopGaps = server.requests.slice(1).map((request, index) => request.receivedAt - server.requests[index]!.answeredAt!);
const conversations = server.requests.map((request) => request.body!.messages.length);

const bare = createModelClient({ provider: 'openai', baseUrl: server.baseUrl, model: 'bench' }, undefined);
const firstBare = server.requests.length;
const tools = modelTools(['list_dir']);
const messages: ModelMessage[] = [
  { role: 'system', content: 'bench' },
  { role: 'user', content: 'List the folder again and again' },
];
for (let turn = 0; turn < iterations; turn++) {
  const answer = await bare.turn({ messages, tools, signal: new AbortController().signal });
  messages.push(
    { role: 'assistant', content: answer.text, toolCalls: answer.toolCalls },
    ...answer.toolCalls.map((call) => ({
      role: 'tool' as const,
      toolCallId: call.id,
      toolName: call.name,
      content: 'READ: README.md (8 bytes)',
      isError: false,
    })),
  );
}
const bareGaps = server.requests
  .slice(firstBare + 1)
  .map((request, index) => request.receivedAt - server.requests[firstBare + index]!.answeredAt!);

// 2. From the tool call to the step visible to a person's session.
mode = 'write';
const visibleAfter: number[] = [];
const seen = new Set<string>();
const firstWrite = server.requests.length;
const writeRun = await api.startRun({ task: 'Write files', model, tools: ['write_file'] });
await api.on('stepSummary', (summary) => {
  if (seen.has(summary.id)) return;
  seen.add(summary.id);
  const arrivedAt = performance.now();
  // The request whose answer carried this step's call is the newest one answered.
  const answered = server.requests
    .slice(firstWrite)
    .filter((request) => request.toolCallSentAt !== undefined)
    .at(-1);
  if (answered) visibleAfter.push(arrivedAt - answered.toolCallSentAt!);
  if (summary.status === 'denied') return;
});
await api.on('agentRun', ({ run }) => {
  if (run.id === writeRun.id && run.status === 'awaiting_consent' && run.waitingStepId)
    void api.reject({ stepId: run.waitingStepId, reason: 'bench' }).catch(() => undefined);
});
await untilEnded(writeRun.id);

// A second baseline: one audited commit of the host's database (synchronous=FULL, so an fsync), which
// an iteration makes twice (the turn with its run.turn record, the call's outcome with its message).
const commits: number[] = [];
for (let index = 0; index < iterations; index++) {
  const started = performance.now();
  host.executor.transactWithAudit((_db, append) =>
    append({ kind: 'run.question', actor: { user: 'bench', channel: 'system' }, detail: { runId: null, index } }),
  );
  commits.push(performance.now() - started);
}

const loopP50 = quantile(loopGaps, 0.5);
const bareP50 = quantile(bareGaps, 0.5);
console.log(`agent run bench: ${iterations} iterations each (conversation up to ${Math.max(...conversations)} messages)`);
console.log(`loop's own cost per iteration: p50 ${ms(loopP50)}, p99 ${ms(quantile(loopGaps, 0.99))} (target ≤ 20 ms p50)`);
console.log(`baseline, the bare model client over the same server: p50 ${ms(bareP50)}, p99 ${ms(quantile(bareGaps, 0.99))}`);
console.log(`ratio loop / bare client, p50: ${(loopP50 / Math.max(bareP50, 0.01)).toFixed(1)}×`);
console.log(
  `baseline, one audited commit: p50 ${ms(quantile(commits, 0.5))}; the loop's p50 is ${(loopP50 / Math.max(quantile(commits, 0.5), 0.01)).toFixed(1)} commits' worth`,
);
console.log(
  `tool call → step visible to a person's session: p50 ${ms(quantile(visibleAfter, 0.5))}, p99 ${ms(quantile(visibleAfter, 0.99))} over ${visibleAfter.length} steps (target ≤ 200 ms p50)`,
);

api.close();
await host.close();
await server.close();
fs.rmSync(base, { recursive: true, force: true });
