/**
 * The overhead of an auto-approved step proposed by an agent through `executor mcp` end to end
 * (MCP client → stdio → executor mcp → signed socket → host → result back), as a ratio to the same
 * step proposed through the CLI (`executor propose plan.json`, one process per step, as a script
 * would) against the same running host, in the same run. The step is `run_code` when this build
 * has the runCode action, otherwise `kb_add` (createKBEntry); the output says which.
 * Also printed: the same step through a typed socket client in this process, i.e. the floor
 * without any MCP or process start, to show what the MCP layer itself adds.
 * Run: npx tsx bench/mcp.ts
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ACTION_ARGS } from '../src/domain/step.js';
import { connectToHost } from '../src/ipc/transports/node-client.js';

const CLI = path.resolve(import.meta.dirname, '../bin/executor.js');
const MCP_RUNS = 40;
const SOCKET_RUNS = 40;
const CLI_RUNS = 8;

const hasRunCode = 'runCode' in ACTION_ARGS;
const base = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-bench-mcp-'));
const dataDir = path.join(base, 'data');
const workspace = path.join(base, 'ws');
fs.mkdirSync(dataDir);
fs.mkdirSync(workspace);
fs.writeFileSync(
  path.join(dataDir, 'policy.json'),
  // Auto-approve so the person is not in the loop; lift the agent limits so the bench measures speed, not the limiter.
  // The light sandbox's run budget is lifted for the same reason.
  JSON.stringify({
    workspaceRoots: [workspace],
    autoApprove: 'HIGH',
    agentLimits: { stepsPerMinute: 100_000, openSteps: 100_000 },
    ...(hasRunCode ? { lightSandbox: { budget: { enabled: false } } } : {}),
  }),
);

const toolName = hasRunCode ? 'run_code' : 'kb_add';
const toolArgs = (i: number): Record<string, unknown> =>
  hasRunCode ? { code: `console.log(${i} * 2)`, purpose: `bench ${i}` } : { title: `bench ${i}`, content: `entry ${i}` };
const planStep = (i: number) =>
  hasRunCode
    ? { action: 'runCode', args: { code: `console.log(${i} * 2)`, purpose: `bench ${i}` }, meta: { purpose: `bench ${i}` } }
    : { action: 'createKBEntry', args: { title: `bench ${i}`, content: `entry ${i}` } };

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function startServe(): Promise<ChildProcess> {
  const child = spawn(process.execPath, [CLI, '--data-dir', dataDir, '--json', 'serve'], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      try {
        JSON.parse(out);
        resolve();
      } catch {
        /* not complete yet */
      }
    });
    child.once('exit', (code) => reject(new Error(`executor serve exited (${code})`)));
  });
  return child;
}

const serve = await startServe();
const timings = { mcp: [] as number[], cli: [] as number[], socket: [] as number[] };
let counter = 0;
try {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, '--data-dir', dataDir, 'mcp'], stderr: 'ignore' });
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(transport);
  const callTool = async () => {
    const result = (await client.callTool({ name: toolName, arguments: toolArgs(counter++) })) as CallToolResult;
    const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
    if (!text.startsWith('EXECUTED')) throw new Error(`${toolName} did not execute: ${text}`);
  };
  for (let i = 0; i < 3; i++) await callTool(); // warm-up: first session, tsx compile caches
  for (let i = 0; i < MCP_RUNS; i++) {
    const start = performance.now();
    await callTool();
    timings.mcp.push(performance.now() - start);
  }
  await client.close();

  const api = await connectToHost(dataDir, 'cli');
  for (let i = 0; i < SOCKET_RUNS + 3; i++) {
    const start = performance.now();
    const [record] = await api.propose({ plan: { steps: [planStep(counter++)] } });
    if (record!.status !== 'executed') throw new Error(`socket propose did not execute: ${record!.status}`);
    if (i >= 3) timings.socket.push(performance.now() - start);
  }
  api.close();

  for (let i = 0; i < CLI_RUNS + 1; i++) {
    const planFile = path.join(base, `plan-${i}.json`);
    fs.writeFileSync(planFile, JSON.stringify({ steps: [planStep(counter++)] }));
    const start = performance.now();
    const run = spawnSync(process.execPath, [CLI, '--data-dir', dataDir, '--json', 'propose', planFile], { encoding: 'utf8' });
    const elapsed = performance.now() - start;
    if (run.status !== 0) throw new Error(`executor propose failed: ${run.stderr}${run.stdout}`);
    if (i >= 1) timings.cli.push(elapsed);
  }
} finally {
  serve.kill('SIGTERM');
  await new Promise((resolve) => serve.once('exit', resolve));
  fs.rmSync(base, { recursive: true, force: true });
}

const mcp = median(timings.mcp);
const cli = median(timings.cli);
const socket = median(timings.socket);
console.log(
  `step: auto-approved ${hasRunCode ? 'run_code (runCode in the light sandbox)' : 'kb_add (createKBEntry; this build has no runCode action yet)'}, host = executor serve`,
);
console.log(`MCP tool call, end to end (median of ${MCP_RUNS}):           ${mcp.toFixed(1)} ms`);
console.log(`CLI \`executor propose\`, process per step (median of ${CLI_RUNS}): ${cli.toFixed(1)} ms`);
console.log(`typed socket client in-process (median of ${SOCKET_RUNS}):       ${socket.toFixed(1)} ms`);
console.log(`ratio MCP / CLI:    ${(mcp / cli).toFixed(3)}`);
console.log(`ratio MCP / socket: ${(mcp / socket).toFixed(2)} (what stdio, the MCP layer and the extra hop add over a direct socket call)`);
