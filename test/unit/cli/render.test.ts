import { describe, expect, it } from 'vitest';
import { whatRunsLines } from '../../../src/cli/render.js';
import type { Step } from '../../../src/domain/step.js';
import { defaultPolicy } from '../../../src/policy/policy-file.js';

const step = (action: Step['action'], args: Record<string, unknown>): Step => ({ id: 's', planId: 'p', action, args, meta: { origin: 'agent' } }) as Step;

describe('whatRunsLines (executor steps show)', () => {
  it('says a Python step runs in the Docker sandbox under the policy Docker limit, and shows its code numbered', () => {
    const { facts, code } = whatRunsLines(step('runCode', { code: 'import os\nprint(os.getcwd())\n', language: 'python', timeoutMs: 999_999_999 }), defaultPolicy());
    expect(facts[0]).toBe('Code     Python in the Docker sandbox: a hardened, throw-away container with no network unless the step may fetch');
    expect(facts[1]).toBe('Timeout  2 min (it asked for 277 h 47 min; the policy allows up to 2 min)');
    expect(facts[2]).toBe('Asks for nothing beyond computation: no files, no network, no knowledge base');
    expect(code).toEqual(['--- code (Python, 2 lines, 29 bytes)', '   1 | import os', '   2 | print(os.getcwd())']);
  });

  it('keeps a multi-line shell command indented under its label, and escapes what could pose as a line of ours', () => {
    const { facts } = whatRunsLines(step('runCommand', { command: 'npm ci\nnpm test\rStatus   executed', cwd: 'app', network: 'allowlist', allowSecrets: ['.env'] }), undefined);
    expect(facts[0]).toBe('Command  npm ci\n         npm test\\rStatus   executed');
    expect(facts[1]).toBe('         (run by sh -c inside the container)');
    expect(facts[2]).toBe("In       app (a copy, in the Docker sandbox); network only to the policy's allowlist");
    // Without the policy (not readable), the time limit is said as the step asked.
    expect(facts[3]).toBe("Timeout  the policy's default");
    expect(facts[4]).toBe('Secrets  it may see .env');
  });

  it('shows nothing for steps that run nothing', () => {
    expect(whatRunsLines(step('deleteFile', { path: '/ws/a' }), defaultPolicy())).toEqual({ facts: [], code: [] });
  });
});
