import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureSandboxImage } from '../../helpers/docker-engine.js';
import { runCli } from '../../helpers/run-cli.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * `executor steps show` (text, not only --json) says what a step will run, as the window does: the
 * code of a runCode step with its language, sandbox, time limit and every capability it asks for,
 * and a runCommand step's command line with its argv quoted as a shell would need it.
 */

const CODE = [
  '// Fetch the price and keep a note',
  "const price = await tools.fetch('https://api.example.com/price');",
  `const note = await tools.readFile('notes.txt'); // tab:\there, hidden:\u200b, escape:\u001b[2K`,
  'return { eur: JSON.parse(price.body).eur, note };',
].join('\n');

describe('executor steps show', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it('prints the code with its language, sandbox, time limit and capabilities, and a command as its quoted command line', () => {
    const { dataDir, workspace, base } = tempSetup({ network: { allowHosts: ['api.example.com'] } });
    fs.writeFileSync(path.join(workspace, 'notes.txt'), 'note\n');
    const planFile = path.join(base, 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({
        planId: 'show-what-runs',
        steps: [
          {
            id: 'code',
            action: 'runCode',
            args: { code: CODE, timeoutMs: 1500, capabilities: { fetch: { hosts: ['api.example.com'] }, readFile: true } },
            meta: { purpose: 'price check' },
          },
          {
            id: 'cmd',
            action: 'runCommand',
            args: { argv: ['printf', '%s\\n', "it's done", 'a b'], env: { GREETING: 'hi there' } },
            meta: { purpose: 'say it' },
          },
          { id: 'pure', action: 'runCode', args: { code: 'return 6 * 7;' } },
        ],
      }),
    );
    const proposed = runCli(['--data-dir', dataDir, 'propose', planFile], { timeoutMs: 120_000 });
    // Exit 1: not every step ran (they wait for the person); stderr says which data directory, then who must act.
    expect(proposed.stderr).toMatch(/^executor: data directory .* \(from --data-dir\)/);
    expect(proposed.stderr).toMatch(/^3 steps wait for your decision/m);

    const code = runCli(['--data-dir', dataDir, 'steps', 'show', 'code']);
    expect(code.status, code.stderr).toBe(0);
    const shown = code.stdout;
    expect(shown).toContain(
      'Code     JavaScript in the light sandbox: a fresh, single-use Node process with no files, no network and no environment of its own',
    );
    expect(shown).toContain('Timeout  1.5 s\n');
    expect(shown).toMatch(/Asks for - Send network requests to api\.example\.com .*\n {9}- Read files inside the workspace roots/);
    expect(shown).toContain('--- code (JavaScript, 4 lines, ');
    expect(shown).toContain(
      "   1 | // Fetch the price and keep a note\n   2 | const price = await tools.fetch('https://api.example.com/price');\n",
    );
    // Tabs keep their meaning; a zero-width space and an ESC are shown as escapes, never written raw.
    expect(shown).toContain("   3 | const note = await tools.readFile('notes.txt'); // tab:\there, hidden:<U+200B>, escape:\\x1b[2K\n");
    expect(shown).not.toMatch(/[\u001b\u200b]/);
    expect(shown).toContain('   4 | return { eur: JSON.parse(price.body).eur, note };');

    const pure = runCli(['--data-dir', dataDir, 'steps', 'show', 'pure']).stdout;
    expect(pure).toContain('Asks for nothing beyond computation');
    expect(pure).toContain("Timeout  2 s (the policy's default)");
    expect(pure).toContain('   1 | return 6 * 7;');

    const command = runCli(['--data-dir', dataDir, 'steps', 'show', 'cmd']);
    expect(command.status, command.stderr).toBe(0);
    expect(command.stdout).toContain(
      `Command  printf '%s\\n' 'it'\\''s done' 'a b'\n         (run directly, without a shell; quoted as a shell would need it)`,
    );
    expect(command.stdout).toContain("Timeout  2 min (the policy's default)");
    expect(command.stdout).toContain("Env      GREETING='hi there'");
    // The list names the command by its command line too.
    const list = runCli(['--data-dir', dataDir, 'steps', 'list', '--plan', 'show-what-runs']).stdout;
    expect(list).toContain(`printf '%s\\n' 'it'\\''s done' 'a b'`);
    // --json keeps the step as it is.
    expect(
      runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'code']).json<{ step: { args: { code: string } } }>().step.args.code,
    ).toBe(CODE);
  });
});

describe('executor steps show, steps cancel and steps watch: runs and their times', () => {
  it('prints how long the dry run and the run took; cancel withdraws a waiting step and says so again; watch without a host says nothing runs', () => {
    const { dataDir, base } = tempSetup();
    const planFile = path.join(base, 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({
        planId: 'timed',
        steps: [{ id: 'slow', action: 'runCode', args: { code: 'const t = Date.now(); while (Date.now() - t < 700) {} return 1;' } }],
      }),
    );
    const approved = runCli(['--data-dir', dataDir, 'propose', planFile], { timeoutMs: 120_000 });
    const shownHash = runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'slow']).json<{
      previewHash: string | null;
      status: string;
    }>();
    const ran =
      shownHash.status === 'executed'
        ? null
        : runCli(['--data-dir', dataDir, 'approve', 'slow', '--preview-hash', shownHash.previewHash ?? 'none'], { timeoutMs: 120_000 });
    const shown = runCli(['--data-dir', dataDir, 'steps', 'show', 'slow']);
    expect(shown.stdout, `${approved.stderr}${ran?.stderr ?? ''}`).toMatch(/^Dry run  (\d+(\.\d)? m?s|\d+ min( \d+ s)?) \(.+ → .+\)$/m);
    expect(shown.stdout, shown.stdout).toMatch(/^Run      (\d+(\.\d)? m?s|\d+ min( \d+ s)?) \(.+ → .+\)$/m);

    const waitingFile = path.join(base, 'waiting.json');
    fs.writeFileSync(
      waitingFile,
      JSON.stringify({ planId: 'waiting', steps: [{ id: 'w', action: 'runCommand', args: { command: 'true' } }] }),
    );
    runCli(['--data-dir', dataDir, 'propose', waitingFile], { timeoutMs: 120_000 });
    const cancelled = runCli(['--data-dir', dataDir, 'steps', 'cancel', 'w']);
    expect(cancelled.stdout).toMatch(/^w +Rejected /);
    expect(runCli(['--data-dir', dataDir, 'steps', 'cancel', 'w']).stdout).toMatch(/^w +Rejected /);
    const watched = runCli(['--data-dir', dataDir, 'steps', 'watch', 'w']);
    expect(watched.stdout).toContain('No Executor host is running for this data directory');
  }, 180_000);
});
