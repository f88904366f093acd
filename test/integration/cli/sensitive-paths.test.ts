import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/run-cli.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

interface Outcome {
  stepId: string;
  status: string;
  risk: string;
  result?: { ok: boolean; value?: unknown; error?: { code?: string; message?: string }; capabilityCalls?: { tool: string; decision: string; reason?: string }[] };
}

const TOKEN = 'hf_QwErTyUiOpAsDfGhJkLzXcVbNm1234567890';

describe('sensitive paths through the real CLI', () => {
  it('refuses a runCode step that reads .huggingface/token through tools.readFile, and reads an ordinary file', { timeout: 120_000 }, () => {
    const { dataDir, workspace, base } = tempSetup({ autoApprove: 'HIGH' });
    fs.mkdirSync(path.join(workspace, '.huggingface'));
    fs.writeFileSync(path.join(workspace, '.huggingface', 'token'), `${TOKEN}\n`);
    fs.mkdirSync(path.join(workspace, '.cache', 'huggingface'), { recursive: true });
    fs.writeFileSync(path.join(workspace, '.cache', 'huggingface', 'token'), `${TOKEN}\n`);
    fs.writeFileSync(path.join(workspace, 'notes.txt'), 'plain notes\n');
    const steps = [
      { id: 'steal', action: 'runCode', args: { code: "return await tools.readFile('.huggingface/token');", capabilities: { readFile: true } } },
      { id: 'steal-cache', action: 'runCode', args: { code: "return await tools.readFile('.cache/huggingface/token');", capabilities: { readFile: true } } },
      { id: 'steal-case', action: 'runCode', args: { code: "try { return await tools.readFile('.HuggingFace/TOKEN'); } catch (e) { return 'refused: ' + String(e && e.message); }", capabilities: { readFile: true } } },
      { id: 'control', action: 'runCode', args: { code: "return await tools.readFile('notes.txt');", capabilities: { readFile: true } } },
    ];
    const plan = path.join(base, 'plan.json');
    fs.writeFileSync(plan, JSON.stringify({ purpose: 'read tokens', steps }));
    const proposed = runCli(['--data-dir', dataDir, '--json', 'propose', plan], { timeoutMs: 110_000 });
    const outcomes = proposed.json<Outcome[]>();
    const byId = new Map(outcomes.map((outcome) => [outcome.stepId, outcome]));

    // The control proves the plan ran through to tools.readFile at all.
    expect(byId.get('control')).toMatchObject({ status: 'executed', result: { ok: true, value: 'plain notes\n' } });
    for (const id of ['steal', 'steal-cache']) {
      const outcome = byId.get(id)!;
      expect(JSON.stringify(outcome), id).not.toContain(TOKEN);
      expect(outcome.result?.ok, id).not.toBe(true);
      expect(JSON.stringify(outcome), id).toMatch(/secret pattern/);
    }
    // A differently cased name opens another file on Linux (it does not exist here); on macOS and Windows it is the token, refused.
    expect(JSON.stringify(byId.get('steal-case'))).not.toContain(TOKEN);
    expect(proposed.stdout + proposed.stderr).not.toContain(TOKEN);
  });
});
