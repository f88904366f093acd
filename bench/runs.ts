/**
 * Agent runs: what the loop itself costs, apart from the model's own time, and how soon
 * a step the model asked for is visible to a window. The model is a scripted OpenAI-compatible
 * server on loopback that answers at once (test/helpers/scripted-openai-server.ts); the host, its
 * socket and web server, SQLite and the step path are the real ones, in this process.
 *
 * 1. Loop cost per iteration: the time from the server having sent a turn's whole answer to the
 *    next request of the same run arriving (parse the answer, run or propose the tool call, store
 *    the iteration and its run.turn record, build and send the next request), by the server's
 *    clock, so the model's own time is left out. For read_file (answered by the loop, no step) and
 *    for kb_add (a step each, auto-approved by the policy, waited for until it ran).
 *    Baseline: the same kb_add step proposed bare through the socket client and waited for until
 *    it ran (step events), in the same run of this bench.
 * 2. Tool call to visible step: from the server writing a write_file tool call to a web client
 *    subscribed like the window (stepSummary events) seeing that step. Baseline: the same write
 *    proposed bare through the socket client, from the call to the web client seeing it.
 * 3. The model client's own share of an iteration: one turn through createModelClient minus the
 *    server's time, against a bare fetch of the same body (loopback HTTP alone), same server.
 * Targets: loop cost ≤ 20 ms p50, tool call to visible ≤ 200 ms p50.
 * Run: npx tsx bench/runs.ts   (BENCH_RUNS_N=50 for a quicker run)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { ExecutorClient } from '../src/ipc/client/client.js';
import { startHost } from '../src/ipc/host/host.js';
import { connectToHost } from '../src/ipc/transports/node-client.js';
import { connectWithToken, WEB_SOCKET_PATH } from '../src/ipc/client/web-client.js';
import type { RunSummary } from '../src/domain/run.js';
import { createModelClient } from '../src/runs/models/create-model-client.js';
import { nodeWebSocket } from '../test/helpers/ipc-harness.js';
import {
  callTool,
  say,
  startScriptedOpenAiServer,
  type RecordedRequest,
  type ScriptedTurn,
} from '../test/helpers/scripted-openai-server.js';

const N = Number(process.env.BENCH_RUNS_N ?? 120);

const base = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-bench-runs-'));
const dataDir = path.join(base, 'data');
const workspace = path.join(base, 'ws');
fs.mkdirSync(dataDir);
fs.mkdirSync(workspace);
fs.writeFileSync(path.join(workspace, 'notes.txt'), 'remember the milk\n'.repeat(20));
fs.writeFileSync(
  path.join(dataDir, 'policy.json'),
  // The person is not in the loop (auto-approve), and no limit stops a long run: the bench measures speed, not the limits.
  JSON.stringify({
    workspaceRoots: [workspace],
    autoApprove: 'HIGH',
    agentLimits: { stepsPerMinute: 100_000, openSteps: 100_000 },
    runs: {
      maxIterations: 500,
      maxToolCallsPerRun: 100_000,
      maxTokensPerRun: 1_000_000_000,
      dailyTokenBudget: 10_000_000_000,
      maxWallSecondsPerRun: 3600,
    },
  }),
);

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
const ms = (value: number) => `${value.toFixed(1)} ms`;
const line = (label: string, values: number[]) =>
  `${label.padEnd(58)} p50 ${ms(percentile(values, 50)).padStart(9)}   p99 ${ms(percentile(values, 99)).padStart(9)}   (n=${values.length})`;

/** Each run's turns: its tool call `iterations` times, then done. The run is told apart by its task in the first user message. */
const requestsByRun = new Map<string, RecordedRequest[]>();
let turnFor: (task: string, done: number) => ScriptedTurn = () => say('done');
const server = await startScriptedOpenAiServer((request) => {
  const task = request.body!.messages.find((message) => message.role === 'user')?.content as string;
  const list = requestsByRun.get(task) ?? [];
  list.push(request);
  requestsByRun.set(task, list);
  const toolResults = request.body!.messages.filter((message) => message.role === 'tool').length;
  return turnFor(task, toolResults);
});
const model = { provider: 'openai' as const, baseUrl: server.baseUrl, model: 'bench-model' };

const host = await startHost(dataDir, { web: {} });
const api = await connectToHost(dataDir, 'cli');
const token = new URL(host.web!.issueUrl()).hash.replace('#token=', '');
const window = (await connectWithToken(`ws://127.0.0.1:${host.web!.port}${WEB_SOCKET_PATH}`, token, nodeWebSocket(host.web!.origin)))
  .client;

async function runToEnd(client: ExecutorClient, task: string): Promise<RunSummary> {
  let settle!: (run: RunSummary) => void;
  const ended = new Promise<RunSummary>((resolve) => (settle = resolve));
  const isEnd = (run: RunSummary) => run.status === 'completed' || run.status === 'failed' || run.status === 'cancelled';
  let runId = '';
  const early: RunSummary[] = [];
  const off = await client.on('agentRun', ({ run }) => {
    if (!runId) early.push(run);
    else if (run.id === runId && isEnd(run)) settle(run);
  });
  try {
    runId = (await client.startRun({ task, model })).id;
    const already = early.find((run) => run.id === runId && isEnd(run));
    if (already) return already;
    const now = (await client.getRun({ runId })).run;
    if (isEnd(now)) return now;
    return await ended;
  } finally {
    off();
  }
}

/** Gaps between one answer of a run and its next request, by the server's clock: the loop's own time. */
function loopGaps(task: string): number[] {
  const requests = requestsByRun.get(task) ?? [];
  return requests.slice(1).map((request, index) => request.receivedAt - requests[index]!.answeredAt!);
}

/** Resolves when a step whose title holds `text` shows in the web client's stepSummary events (and, given, reaches `status`). */
function seenByWindow(text: string, status?: string): Promise<number> {
  return new Promise((resolve) => {
    let off: (() => void) | undefined;
    void window
      .on('stepSummary', (summary) => {
        if (!summary.title.includes(text) || (status && summary.status !== status)) return;
        off?.();
        resolve(performance.now());
      })
      .then((unsubscribe) => (off = unsubscribe));
  });
}

try {
  await window.subscribe({ topics: ['stepSummary'] });
  // Warm up: the first run and proposal pay module loading and statement preparation.
  turnFor = (_task, done) => (done < 3 ? callTool('read_file', { path: 'notes.txt' }) : say('done'));
  await runToEnd(api, 'warm up');

  // 1a. read_file: answered by the loop, no step.
  turnFor = (_task, done) => (done < N ? callTool('read_file', { path: 'notes.txt' }) : say('done'));
  const readRun = await runToEnd(api, 'read loop');
  if (readRun.status !== 'completed') throw new Error(`the read loop ended ${readRun.status}: ${JSON.stringify(readRun.endReason)}`);
  const readGaps = loopGaps('read loop');

  // 1b. kb_add: a step each, auto-approved, waited for until it ran.
  turnFor = (_task, done) => (done < N ? callTool('kb_add', { title: `entry ${done}`, content: `bench entry ${done}` }) : say('done'));
  const kbRun = await runToEnd(api, 'kb loop');
  if (kbRun.status !== 'completed') throw new Error(`the kb loop ended ${kbRun.status}: ${JSON.stringify(kbRun.endReason)}`);
  const kbGaps = loopGaps('kb loop');

  // Baseline for 1b: the same step proposed bare through the socket client, until it ran.
  const bareKb: number[] = [];
  for (let i = 0; i < N; i++) {
    const title = `bare entry ${i}`;
    const executed = seenByWindow(title, 'executed');
    const started = performance.now();
    await api.propose({ plan: { steps: [{ action: 'createKBEntry', args: { title, content: `bare ${i}` } }] } });
    bareKb.push((await executed) - started);
  }

  // 2. Tool call to visible step.
  const visible: number[] = [];
  const pending: Array<Promise<void>> = [];
  turnFor = (_task, done) => {
    if (done >= Math.min(N, 60)) return say('done');
    const name = `visible-${done}.txt`;
    const seen = seenByWindow(name);
    const sentIndex = server.requests.length; // this request's index (1-based) is the length now
    pending.push(seen.then((at) => void visible.push(at - server.requests[sentIndex - 1]!.toolCallSentAt!)));
    return callTool('write_file', { path: name, content: `line ${done}\n` });
  };
  const writeRun = await runToEnd(api, 'write loop');
  if (writeRun.status !== 'completed') throw new Error(`the write loop ended ${writeRun.status}: ${JSON.stringify(writeRun.endReason)}`);
  await Promise.all(pending);

  const bareVisible: number[] = [];
  for (let i = 0; i < Math.min(N, 60); i++) {
    const name = `bare-${i}.txt`;
    const seen = seenByWindow(name);
    const started = performance.now();
    await api.propose({ plan: { steps: [{ action: 'writeFile', args: { path: path.join(workspace, name), content: `line ${i}\n` } }] } });
    bareVisible.push((await seen) - started);
    // The bare write runs on (auto-approved); wait until it has, so the next measure starts from quiet.
    await seenByWindow(name, 'executed').catch(() => undefined);
  }

  // 3. The model client against a bare fetch of the same request, the server's own time left out.
  turnFor = () => callTool('read_file', { path: 'notes.txt' });
  const client = createModelClient(model, undefined);
  const conversation = Array.from({ length: 40 }, (_, i) => ({ role: 'user' as const, content: `message ${i} `.repeat(20) }));
  const clientSide: number[] = [];
  const bareFetch: number[] = [];
  const lastServerTime = () => {
    const request = server.requests[server.requests.length - 1]!;
    return request.answeredAt! - request.receivedAt;
  };
  for (let i = 0; i < N; i++) {
    let started = performance.now();
    await client.turn({ messages: conversation, tools: [], signal: new AbortController().signal });
    clientSide.push(performance.now() - started - lastServerTime());
    started = performance.now();
    const response = await fetch(`${server.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'bench-model', messages: conversation }),
    });
    JSON.parse(await response.text());
    bareFetch.push(performance.now() - started - lastServerTime());
  }

  const p50 = (values: number[]) => percentile(values, 50);
  console.log(`agent runs bench: ${N} iterations per loop, scripted model answering at once (server time left out)`);
  console.log(line('loop cost per iteration, read_file (no step)', readGaps));
  console.log(line('loop cost per iteration, kb_add (one auto-approved step)', kbGaps));
  console.log(line('baseline: the same kb_add step proposed bare, until run', bareKb));
  console.log(line('tool call sent → step visible to a window client', visible));
  console.log(line('baseline: the same write proposed bare → visible', bareVisible));
  console.log(line('model client turn (SDK, mapping, capture, HTTP)', clientSide));
  console.log(line('baseline: bare fetch of the same request', bareFetch));
  console.log(`ratio kb_add loop iteration / bare proposal (p50): ${(p50(kbGaps) / p50(bareKb)).toFixed(2)}`);
  console.log(`ratio tool call → visible / bare proposal → visible (p50): ${(p50(visible) / p50(bareVisible)).toFixed(2)}`);
  console.log(`ratio model client / bare fetch (p50): ${(p50(clientSide) / p50(bareFetch)).toFixed(2)}`);
  console.log(
    `target loop cost ≤ 20 ms p50: read_file ${p50(readGaps) <= 20 ? 'met' : 'MISSED'}, kb_add ${p50(kbGaps) <= 20 ? 'met' : 'MISSED'}`,
  );
  console.log(`target tool call → visible ≤ 200 ms p50: ${p50(visible) <= 200 ? 'met' : 'MISSED'}`);
} finally {
  window.close();
  api.close();
  await host.close();
  await server.close();
  fs.rmSync(base, { recursive: true, force: true });
}
