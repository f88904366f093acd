import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { expect } from 'vitest';
import { noteOwnProcess } from './own-processes.js';
import { CLI } from './run-cli.js';
import { killAfter } from './teardown.js';

/*
 * The real `executor` on a real pseudo-terminal. node-pty is in node_modules but its native part is
 * not built here (its install script is not allowed), so util-linux `script` makes the terminal: the
 * command's stdin and stdout are the pty's slave side (a TTY: raw mode, its size, escape sequences),
 * and what the test writes to `script`'s stdin is typed into it, key by key.
 */

export interface TerminalProcess {
  child: ChildProcess;
  /** Everything the program wrote to the terminal so far, escapes included. */
  output(): string;
  /** The last full screen drawn (after the last clear), without carriage returns. */
  screen(): string;
  type(keys: string): void;
  /** Waits until the screen holds this text (or matches this pattern). */
  waitForScreen(wanted: string | RegExp, timeoutMs?: number): Promise<void>;
  /** The pid of the executor command itself (script's child), for signals. */
  commandPid(): number;
  exited: Promise<number | null>;
}

const CLEAR = '\u001b[H\u001b[2J';

export function startInTerminal(
  args: string[],
  options: { rows?: number; columns?: number; env?: NodeJS.ProcessEnv } = {},
): TerminalProcess {
  const quoted = [process.execPath, CLI, ...args].map((word) => `'${word.replaceAll("'", `'\\''`)}'`).join(' ');
  const shell = `stty rows ${options.rows ?? 40} cols ${options.columns ?? 160}; exec ${quoted}`;
  const child = spawn('script', ['-qfec', shell, '/dev/null'], {
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
    env: { ...process.env, ...options.env },
  });
  killAfter(child, { group: true });
  noteOwnProcess(child.pid);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const screen = () => {
    const at = output.lastIndexOf(CLEAR);
    return (at < 0 ? output : output.slice(at + CLEAR.length)).replaceAll('\r', '');
  };
  return {
    child,
    output: () => output,
    screen,
    type: (keys) => child.stdin!.write(keys),
    waitForScreen: async (wanted, timeoutMs = 30_000) => {
      // Polled as the screen itself, so a failure shows what the terminal showed.
      const polled = expect.poll(() => screen(), { timeout: timeoutMs, interval: 50 });
      await (typeof wanted === 'string' ? polled.toContain(wanted) : polled.toMatch(wanted));
    },
    commandPid: () => {
      const children = fs.readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
      const pid = children.find((candidate) => candidate > 0);
      if (!pid) throw new Error('script has no child process');
      return pid;
    },
    exited,
  };
}
