import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { startInTerminal } from '../../helpers/terminal-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * `executor watch` on a real pseudo-terminal (util-linux `script`; see terminal-process.ts for why
 * not node-pty), against a real `executor serve`, with steps proposed by the real CLI while it runs.
 */

const LEAVE_SCREEN = '\u001b[?25h\u001b[?1049l';

function proposeWrite(dataDir: string, base: string, id: string, file: string, content: string): void {
  const planFile = path.join(base, `${id}.json`);
  fs.writeFileSync(planFile, JSON.stringify({ steps: [{ id, action: 'writeFile', args: { path: file, content } }] }));
  const proposed = runCli(['--data-dir', dataDir, '--json', 'propose', planFile]);
  expect(proposed.json<{ status: string }[]>()[0]!.status).toBe('awaiting_consent');
}

function stepOf(dataDir: string, id: string): { status: string; rejectedReason: string | null } {
  return runCli(['--data-dir', dataDir, '--json', 'steps', 'show', id]).json();
}

describe('executor watch, the queue in a terminal', () => {
  it('shows steps as they arrive with risk, reasons and diff; a approves, r rejects with a reason, / takes an id prefix, q restores the terminal', async () => {
    const { dataDir, workspace, base } = tempSetup();
    await startServe(dataDir);
    const watch = startInTerminal(['--data-dir', dataDir, 'watch', '--undo-seconds', '0']);
    await watch.waitForScreen('Nothing waits for your decision');

    // A step proposed while the queue is open arrives live, with what the person decides on.
    proposeWrite(dataDir, base, 'first-write-1', path.join(workspace, 'a.txt'), 'hello from a\n');
    await watch.waitForScreen('> first-write-1');
    expect(watch.screen()).toContain('Risk     MEDIUM');
    expect(watch.screen()).toContain('reason:');
    expect(watch.screen()).toContain('+hello from a');
    watch.type('a');
    await expect.poll(() => fs.existsSync(path.join(workspace, 'a.txt'))).toBe(true);
    expect(fs.readFileSync(path.join(workspace, 'a.txt'), 'utf8')).toBe('hello from a\n');
    await watch.waitForScreen('Approved first-write-1: done.');

    // Two more: a short id prefix picks the later one; the other is rejected with a reason.
    proposeWrite(dataDir, base, 'keep-out-7', path.join(workspace, 'k.txt'), 'no\n');
    proposeWrite(dataDir, base, 'yes-please-9', path.join(workspace, 'y.txt'), 'yes\n');
    await watch.waitForScreen('2 steps wait for you');
    await watch.waitForScreen('> keep-out-7');
    watch.type('/yes-p\r');
    await watch.waitForScreen('> yes-please-9');
    watch.type('a');
    await expect.poll(() => fs.existsSync(path.join(workspace, 'y.txt'))).toBe(true);
    await watch.waitForScreen('Approved yes-please-9: done.');
    await watch.waitForScreen('> keep-out-7');
    // An ambiguous or unknown prefix says why, and decides nothing.
    watch.type('/zzz\r');
    await watch.waitForScreen('No waiting step has an id starting with "zzz".');
    watch.type('\u001b');
    watch.type('r');
    await watch.waitForScreen('Reason for rejecting keep-out-7');
    // An empty reason is refused: the reason goes back to the agent.
    watch.type('\r');
    await watch.waitForScreen('A rejection needs a reason');
    watch.type('not this file, use notes/\r');
    await expect.poll(() => stepOf(dataDir, 'keep-out-7').status).toBe('rejected');
    expect(stepOf(dataDir, 'keep-out-7').rejectedReason).toBe('not this file, use notes/');
    expect(fs.existsSync(path.join(workspace, 'k.txt'))).toBe(false);
    await watch.waitForScreen('Nothing waits for your decision');

    watch.type('q');
    expect(await watch.exited).toBe(0);
    // The terminal is given back: the cursor shown and the normal screen, as the last thing written.
    expect(watch.output().trimEnd().endsWith(LEAVE_SCREEN)).toBe(true);
  });

  it('an approval binds to the preview on screen: changed meanwhile, it is refused and the new preview shown; u takes a decision back', async () => {
    const { dataDir, workspace, base } = tempSetup();
    await startServe(dataDir);
    const watch = startInTerminal(['--data-dir', dataDir, 'watch', '--undo-seconds', '4']);
    await watch.waitForScreen('Nothing waits for your decision');
    const target = path.join(workspace, 'z.txt');
    proposeWrite(dataDir, base, 'changing-3', target, 'first version\n');
    await watch.waitForScreen('+first version');

    // Approved with the first preview on screen; held for undo; the watch is frozen while the step is
    // edited elsewhere, so the approval that goes out carries the hash of what the person saw.
    watch.type('a');
    await watch.waitForScreen('Approving changing-3');
    const pid = watch.commandPid();
    process.kill(pid, 'SIGSTOP');
    try {
      const edited = path.join(base, 'edited.txt');
      fs.writeFileSync(edited, 'second version\n');
      expect(runCli(['--data-dir', dataDir, '--json', 'edit', 'changing-3', '--content-file', edited]).status).toBe(0);
    } finally {
      process.kill(pid, 'SIGCONT');
      // `script` stops itself when its command stops (as a shell's job would): it is continued too.
      process.kill(watch.child.pid!, 'SIGCONT');
    }
    await watch.waitForScreen('Not approved: the preview of changing-3 changed since it was shown', 30_000);
    await watch.waitForScreen('+second version');
    expect(fs.existsSync(target)).toBe(false);
    expect(stepOf(dataDir, 'changing-3').status).toBe('awaiting_consent');

    // Undo: the approval is taken back before it is sent; the rejection that follows is what happens.
    watch.type('a');
    await watch.waitForScreen('Approving changing-3');
    watch.type('u');
    await watch.waitForScreen('Undone: changing-3 waits for you again.');
    watch.type('rchanged my mind\r');
    await expect.poll(() => stepOf(dataDir, 'changing-3').status, { timeout: 20_000 }).toBe('rejected');
    expect(fs.existsSync(target)).toBe(false);

    // Ctrl-C leaves as q does, the terminal restored.
    watch.type('\u0003');
    expect(await watch.exited).toBe(0);
    expect(watch.output().trimEnd().endsWith(LEAVE_SCREEN)).toBe(true);
  });

  it('e edits the step on screen in $EDITOR (as `executor run` does); the edited step comes back to decide, y approves it', async () => {
    const { dataDir, workspace, base } = tempSetup();
    await startServe(dataDir);
    const editor = path.join(base, 'editor.sh');
    fs.writeFileSync(editor, '#!/bin/sh\nsed -i "s/as proposed/as I want it/" "$1"\n', { mode: 0o755 });
    const watch = startInTerminal(['--data-dir', dataDir, 'watch', '--undo-seconds', '0'], { env: { EDITOR: editor, VISUAL: '' } });
    await watch.waitForScreen('Nothing waits for your decision');
    proposeWrite(dataDir, base, 'to-edit-5', path.join(workspace, 'e.txt'), 'as proposed\n');
    await watch.waitForScreen('+as proposed');
    watch.type('e');
    await watch.waitForScreen('+as I want it', 60_000);
    expect(stepOf(dataDir, 'to-edit-5').status).toBe('awaiting_consent');
    watch.type('y');
    await expect.poll(() => fs.existsSync(path.join(workspace, 'e.txt')), { timeout: 30_000 }).toBe(true);
    expect(fs.readFileSync(path.join(workspace, 'e.txt'), 'utf8')).toBe('as I want it\n');
    watch.type('q');
    expect(await watch.exited).toBe(0);
  });

  it('refuses without a terminal or without a host, saying what to do instead', async () => {
    const { dataDir } = tempSetup();
    const piped = runCli(['--data-dir', dataDir, 'watch'], { input: 'a\n' });
    expect(piped.status).toBe(2);
    expect(piped.stderr).toContain('needs a terminal');
    const noHost = startInTerminal(['--data-dir', dataDir, 'watch']);
    expect(await noHost.exited).toBe(2);
    expect(noHost.output()).toContain('NOT_AVAILABLE: No Executor host is running');
    expect(noHost.output()).toContain('executor serve');
  });
});
