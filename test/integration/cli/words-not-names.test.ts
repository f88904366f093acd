import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { proposeAndAwaitDecision } from '../../../src/ipc/client/decision-wait.js';
import { runCli, shownPreviewHash } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * Where a person reads the CLI (`steps list`, `steps show`, `revert`, `reject`, error messages),
 * steps stand in words ("Waiting for you", "Executed") and times are local time in words, never a
 * raw state name or an ISO time; `--json` keeps both exactly as stored.
 */

const RAW_STATE =
  /\b(awaiting_consent|proposed|evaluated)\b|\b(is|was|now|not) (approved|executed|rejected|reverted|denied|expired|cancelled|failed)\b/;
const ISO_TIME = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/;

describe('the CLI in words', () => {
  it('says statuses and times in words in steps list, steps show, revert and errors; --json keeps names and ISO', () => {
    const { dataDir, base, workspace } = tempSetup();
    const plan = path.join(base, 'plan.json');
    fs.writeFileSync(
      plan,
      JSON.stringify({
        planId: 'words',
        steps: [
          { id: 'first', action: 'writeFile', args: { path: path.join(workspace, 'a.txt'), content: 'a\n' } },
          { id: 'second', action: 'writeFile', args: { path: path.join(workspace, 'b.txt'), content: 'b\n' } },
        ],
      }),
    );
    const cli = (...args: string[]) => runCli(['--data-dir', dataDir, ...args]);
    cli('propose', plan);
    const waiting = cli('steps', 'list');
    expect(waiting.stdout).toMatch(/^second +Waiting for you +MEDIUM /m);
    expect(waiting.stdout).not.toMatch(RAW_STATE);

    expect(cli('approve', 'first', '--preview-hash', shownPreviewHash(dataDir, 'first')).stdout).toMatch(/^first +Executed /);
    const shown = cli('steps', 'show', 'first').stdout;
    expect(shown).toMatch(/^Status   Executed$/m);
    expect(shown).toMatch(/^Approved .*\d{4}.* by .* via cli$/m);
    expect(shown).toMatch(/^Run      .* \(.+ → .+, host's clock\)$/m);
    expect(shown).not.toMatch(ISO_TIME);
    expect(shown).not.toMatch(RAW_STATE);
    const second = cli('steps', 'show', 'second').stdout;
    expect(second).toMatch(/^Status   Waiting for you$/m);
    expect(second).toMatch(/^Expires  .*\d{4}/m);
    expect(second).not.toMatch(ISO_TIME);

    // An error that names a state: in words on the terminal, as sent in --json.
    const refused = cli('revert', 'second');
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('Step second is waiting for you; only a step that ran can be reverted.');
    const refusedJson = cli('--json', 'revert', 'second');
    expect(refusedJson.json<{ error: { message: string } }>().error.message).toContain('is awaiting_consent');

    expect(cli('reject', 'second', '--reason', 'not now').stdout).toMatch(/^second +Rejected /);
    const reverted = cli('revert', 'first');
    expect(reverted.stdout).toMatch(/^first +Reverted /);
    const listed = cli('steps', 'list');
    expect(listed.stdout).not.toMatch(RAW_STATE);
    expect(listed.stdout).not.toMatch(ISO_TIME);

    const json = cli('--json', 'steps', 'list').json<{ step: { id: string }; status: string; approval: { at: string } | null }[]>();
    expect(Object.fromEntries(json.map((record) => [record.step.id, record.status]))).toEqual({ first: 'reverted', second: 'rejected' });
    expect(json.find((record) => record.step.id === 'first')!.approval!.at).toMatch(ISO_TIME);
  });

  it('says times in words in sessions list, audit show, keys status and status; --json keeps ISO', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'MEDIUM' });
    const serve = await startServe(dataDir);
    const agent = closeAfter(await connectToHost(dataDir, 'agent', { client: 'claude-code' }));
    await proposeAndAwaitDecision(agent, {
      steps: [{ action: 'writeFile', args: { path: path.join(workspace, 'a.txt'), content: 'a\n' } }],
    });
    const cli = (...args: string[]) => runCli(['--data-dir', dataDir, ...args]);
    expect(cli('pause', '--reason', 'lunch').status).toBe(0);
    for (const command of [['sessions', 'list'], ['audit', 'show'], ['keys', 'status'], ['status'], ['steps', 'list']]) {
      const shown = cli(...command);
      expect(shown.status, `${command.join(' ')}: ${shown.stderr}`).toBe(0);
      expect(shown.stdout, command.join(' ')).not.toMatch(ISO_TIME);
      expect(shown.stdout.length, command.join(' ')).toBeGreaterThan(0);
    }
    expect(cli('sessions', 'list').stdout).toMatch(/1 step +last .*\d{4}.*\d:\d\d/);
    expect(cli('--json', 'sessions', 'list').json<{ lastAt: string }[]>()[0]!.lastAt).toMatch(ISO_TIME);
    expect(cli('--json', 'audit', 'show').json<{ ts: string }[]>()[0]!.ts).toMatch(ISO_TIME);
    expect(cli('resume').status).toBe(0);
    await serve.stop();
  });
});
