/*
 * `executor hook <client>`: the entry an outside agent runs before every tool call. bin/executor.js
 * starts it directly, without the rest of the CLI (commander, every command's modules), because it
 * runs on every tool call and its cold start is the agent's wait (bench/hooks.ts).
 *
 * It always answers on stdout and exits 0: a crash or an exit code other than 2 lets the call
 * through in both clients, so every failure here is a deny. The hook command `connect` writes adds
 * `|| exit 2` for the failures this process cannot catch (node missing, killed).
 */
import path from 'node:path';
import { setPrivateUmask } from '../fs/file-modes.js';
import { hookAnswerText, type HookDecision } from '../hooks/hook-answer.js';
import { MAX_HOOK_INPUT_BYTES } from '../hooks/hook-input.js';
import { decideToolCall } from '../hooks/run-hook.js';
import { HOOK_WAIT_SECONDS } from '../hooks/client-settings.js';
import type { HookClientName } from '../hooks/tool-calls.js';
import { hookClient } from '../hooks/hook-client.js';
import { connectSessionIfRunning } from '../ipc/transports/node-session.js';
import { defaultDataDir } from '../store/data-dir.js';

setPrivateUmask();

const CLIENTS: readonly HookClientName[] = ['claude-code', 'gemini-cli'];

function readStdin(): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    process.stdin.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_HOOK_INPUT_BYTES) {
        reject(new Error(`the tool call is larger than ${MAX_HOOK_INPUT_BYTES} bytes`));
        process.stdin.destroy();
        return;
      }
      chunks.push(chunk);
    });
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

function option(args: string[], name: string): string | undefined {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
}

async function main(): Promise<void> {
  const args = process.argv.slice(3);
  const client = args[0] as HookClientName;
  const answer = (decision: HookDecision, as: HookClientName = client) => process.stdout.write(`${hookAnswerText(as, decision)}\n`);
  if (!CLIENTS.includes(client)) {
    process.stderr.write(`executor hook: name the client: ${CLIENTS.join(' or ')} (written by \`executor connect\`)\n`);
    // Exit 2 blocks the call in both clients; what is printed on stderr is the reason.
    process.exit(2);
  }
  const dataDirArg = option(args, '--data-dir');
  const dataDir = dataDirArg ? path.resolve(dataDirArg) : defaultDataDir();
  const waitSeconds = Number(option(args, '--wait-seconds') ?? HOOK_WAIT_SECONDS);
  try {
    const stdinText = await readStdin();
    const decision = await decideToolCall(stdinText, {
      client,
      dataDir,
      waitMs: Math.max(0, Number.isFinite(waitSeconds) ? waitSeconds : 0) * 1000,
      startCommand: `executor${dataDirArg ? ` --data-dir ${JSON.stringify(dataDir)}` : ''} serve`,
      open: async (label) => {
        const rpc = await connectSessionIfRunning(dataDir, 'agent', { client: label });
        return rpc && hookClient(rpc);
      },
    });
    answer(decision);
  } catch (error) {
    answer({ decision: 'deny', reason: `Executor's hook failed, so this call was not made: ${(error as Error).message}` });
  }
  // An open socket must not keep the agent waiting after the answer is out.
  process.exit(0);
}

await main();
