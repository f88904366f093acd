import fc from 'fast-check';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, runCliAsync } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { storedRows } from '../../helpers/stored-rows.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

const deepArrays = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;

/** The issue's two cases, as files a person or a script would hand to `executor propose`. */
function issueCases(base: string, workspace: string): { file: string; place: RegExp }[] {
  const deep = path.join(base, 'deep.json');
  fs.writeFileSync(deep, `{"steps": ${deepArrays(5000)}}`);
  const confidence = path.join(base, 'confidence.json');
  fs.writeFileSync(
    confidence,
    `{"steps":[{"action":"writeFile","args":{"path":${JSON.stringify(path.join(workspace, 'a.txt'))},"content":"x"},"meta":{"confidence":1e400}}]}`,
  );
  return [
    { file: deep, place: /INVALID_PLAN: .*steps(\[0\]){31} is nested deeper than 32 levels/ },
    { file: confidence, place: /INVALID_PLAN: .*steps\[0\]\.meta\.confidence is Infinity/ },
  ];
}

/** Plan files that break a limit somewhere, each as raw JSON text (1e400 and 5000 levels have no JS value to write). */
function hostilePlanText(workspace: string) {
  const file = JSON.stringify(path.join(workspace, 'p.txt'));
  const hole = fc.oneof(
    fc.integer({ min: 40, max: 6000 }).map(deepArrays),
    fc.integer({ min: 40, max: 6000 }).map((levels) => `${'{"k":'.repeat(levels)}0${'}'.repeat(levels)}`),
    fc.constantFrom('1e400', '-1e400', '9007199254740993', '"\\ud800 half"', '{"\\udc00":1}'),
    fc.integer({ min: 10_001, max: 12_000 }).map((count) => `[${new Array(count).fill('1').join(',')}]`),
  );
  const place = fc.constantFrom(
    (h: string) => `{"steps":${h}}`,
    (h: string) => `{"purpose":${h},"steps":[{"action":"writeFile","args":{"path":${file},"content":"x"}}]}`,
    (h: string) => `{"steps":[{"action":"writeFile","args":{"path":${file},"content":${h}}}]}`,
    (h: string) => `{"steps":[{"action":"writeFile","args":{"path":${file},"content":"x"},"meta":{"confidence":${h}}}]}`,
    (h: string) => `{"steps":[{"action":"runCommand","args":{"argv":["ls"],"extra":${h}}}]}`,
  );
  return fc.tuple(place, hole).map(([make, text]) => make(text));
}

describe('executor propose with a plan file over the limits', () => {
  it('refuses the issue cases without a host: INVALID_PLAN naming the place, nothing created', () => {
    const { base, dataDir, workspace } = tempSetup();
    for (const { file, place } of issueCases(base, workspace)) {
      const result = runCli(['--data-dir', dataDir, 'propose', file]);
      expect(result.status).not.toBe(0);
      expect(result.stderr).toMatch(place);
      expect(result.stderr).not.toContain('INTERNAL');
    }
    expect(storedRows(dataDir)).toEqual({ plans: 0, steps: 0, auditRecords: 0 });
  }, 120_000);

  it('refuses generated hostile plan files through a running host, stores nothing, and the host then takes a normal plan', async () => {
    const { base, dataDir, workspace } = tempSetup();
    const serve = await startServe(dataDir);
    const before = storedRows(dataDir);
    for (const { file, place } of issueCases(base, workspace)) {
      const result = await runCliAsync(['--data-dir', dataDir, 'propose', file]);
      expect(result.stderr).toMatch(place);
    }
    let index = 0;
    await fc.assert(
      fc.asyncProperty(hostilePlanText(workspace), async (text) => {
        const file = path.join(base, `hostile-${index++}.json`);
        fs.writeFileSync(file, text);
        const result = await runCliAsync(['--data-dir', dataDir, 'propose', file]);
        expect(result.status).not.toBe(0);
        expect(result.stderr).toMatch(/^executor: INVALID_PLAN: The plan in .* is not valid: \S+ /);
        expect(result.stderr).not.toContain('INTERNAL');
      }),
      // Each run is a CLI process: few, to hold on two busy cores.
      { numRuns: 6 },
    );
    expect(storedRows(dataDir)).toEqual(before);

    const fine = path.join(base, 'fine.json');
    fs.writeFileSync(
      fine,
      JSON.stringify({ steps: [{ action: 'writeFile', args: { path: path.join(workspace, 'fine.txt'), content: 'fine\n' } }] }),
    );
    const result = await runCliAsync(['--data-dir', dataDir, '--json', 'propose', fine]);
    // Exit status 1 says only that not every step executed yet: this one waits for the person.
    expect(result.json<{ status: string }[]>()).toEqual([expect.objectContaining({ status: 'awaiting_consent' })]);
    expect(storedRows(dataDir).steps).toBe(before.steps + 1);
    expect(serve.child.exitCode).toBeNull();
    await serve.stop();
  }, 240_000);
});
