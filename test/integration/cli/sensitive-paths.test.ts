import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/run-cli.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

interface Outcome {
  stepId: string;
  status: string;
  risk: string;
  result?: {
    ok: boolean;
    value?: unknown;
    error?: { code?: string; message?: string };
    capabilityCalls?: { tool: string; decision: string; reason?: string }[];
  };
}

const TOKEN = 'hf_QwErTyUiOpAsDfGhJkLzXcVbNm1234567890';

describe('sensitive paths through the real CLI', () => {
  it(
    'refuses a runCode step that reads .huggingface/token through tools.readFile, and reads an ordinary file',
    { timeout: 120_000 },
    () => {
      const { dataDir, workspace, base } = tempSetup({ autoApprove: 'HIGH' });
      fs.mkdirSync(path.join(workspace, '.huggingface'));
      fs.writeFileSync(path.join(workspace, '.huggingface', 'token'), `${TOKEN}\n`);
      fs.mkdirSync(path.join(workspace, '.cache', 'huggingface'), { recursive: true });
      fs.writeFileSync(path.join(workspace, '.cache', 'huggingface', 'token'), `${TOKEN}\n`);
      fs.writeFileSync(path.join(workspace, 'notes.txt'), 'plain notes\n');
      const steps = [
        { id: 'control', action: 'runCode', args: { code: "return await tools.readFile('notes.txt');", capabilities: { readFile: true } } },
        {
          id: 'steal',
          action: 'runCode',
          args: { code: "return await tools.readFile('.huggingface/token');", capabilities: { readFile: true } },
        },
        {
          id: 'steal-cache',
          action: 'runCode',
          args: { code: "return await tools.readFile('.cache/huggingface/token');", capabilities: { readFile: true } },
        },
        {
          id: 'steal-case',
          action: 'runCode',
          args: {
            code: "try { return await tools.readFile('.HuggingFace/TOKEN'); } catch (e) { return 'refused: ' + String(e && e.message); }",
            capabilities: { readFile: true },
          },
        },
      ];
      // One plan each: a plan stops at its first failed step.
      const byId = new Map<string, Outcome>();
      const printed: string[] = [];
      for (const step of steps) {
        const plan = path.join(base, `${step.id}.json`);
        fs.writeFileSync(plan, JSON.stringify({ purpose: 'read a file', steps: [step] }));
        const proposed = runCli(['--data-dir', dataDir, '--json', 'propose', plan], { timeoutMs: 60_000 });
        printed.push(proposed.stdout, proposed.stderr);
        byId.set(step.id, proposed.json<Outcome[]>()[0]!);
      }
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
      expect(printed.join('')).not.toContain(TOKEN);
    },
  );
});
