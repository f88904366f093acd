import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StepRecord } from '../../../src/domain/step-record.js';
import { MAX_RECORD_BYTES, RECORD_PART_CHARACTERS } from '../../../src/domain/step-record-cut.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { startMcp } from '../../helpers/mcp-client.js';
import { runCliAsync } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * getStep is bounded on every channel, not only the window's: a step of a few MB (a big write carries
 * its content in its args and again in its diff) comes back cut, saying so, and the rest is paged
 * (getStepPart). The CLI still shows and prints the whole step; an agent is told the record is cut
 * and reads the rest with step_record_part.
 */

const CONTENT = Array.from({ length: 4_000 }, (_, line) => `line ${line} of a big file ${'é→'.repeat(10)}`).join('\n') + '\n';

describe('getStep replies are bounded on the CLI and MCP channels', () => {
  it(
    'cuts a record of over 512 KiB for the CLI and an agent, says so, and both get the whole through pages',
    { timeout: 240_000 },
    async () => {
      const { dataDir, workspace } = tempSetup();
      const serve = await startServe(dataDir);
      const agent = await startMcp(dataDir, { waitSeconds: 0 });
      const target = path.join(workspace, 'big.txt');
      const proposed = await agent.call(
        'write_file',
        { path: target, content: CONTENT, purpose: 'write a big file' },
        { timeoutMs: 120_000 },
      );
      const stepId = /call step_status with (\S+)/.exec(proposed.text)![1]!;

      // The CLI channel, through the host: the reply is under the cap and says what it left out.
      const person = await connectToHost(dataDir, 'cli');
      let shown: StepRecord & { cut?: { shownBytes: number; totalBytes: number } };
      try {
        await expect.poll(async () => (await person.getStep({ stepId })).status, { timeout: 120_000 }).toBe('awaiting_consent');
        shown = await person.getStep({ stepId });
      } finally {
        person.close();
      }
      expect(Buffer.byteLength(JSON.stringify(shown))).toBeLessThanOrEqual(MAX_RECORD_BYTES);
      expect(shown.cut!.totalBytes).toBeGreaterThan(512 * 1024);
      expect(shown.previewHash).toMatch(/^[0-9a-f]{64}$/);

      // `executor steps show --json` pages the rest: it prints the whole record, content and diff.
      const show = await runCliAsync(['--data-dir', dataDir, '--json', 'steps', 'show', stepId], { timeoutMs: 120_000 });
      expect(show.status, show.stderr).toBe(0);
      const whole = JSON.parse(show.stdout) as StepRecord & { cut?: unknown };
      expect(whole.cut).toBeUndefined();
      expect((whole.step.args as { content: string }).content).toBe(CONTENT);
      expect(whole.previewHash).toBe(shown.previewHash);
      const humanShow = await runCliAsync(['--data-dir', dataDir, 'steps', 'show', stepId], { timeoutMs: 120_000 });
      expect(humanShow.status, humanShow.stderr).toBe(0);
      expect(humanShow.stdout).toContain('line 3999 of a big file');

      // The agent: step_status says the record is cut and how to read it; step_record_part pages it whole.
      const status = await agent.call('step_status', { stepId });
      expect(status.isError).toBe(false);
      expect(status.text).toMatch(/^PENDING/);
      expect(status.text).toContain('call step_record_part with this stepId and offset 0');
      let text = '';
      let offset: number | null = 0;
      let pages = 0;
      while (offset !== null) {
        const page = await agent.call('step_record_part', { stepId, offset });
        expect(page.isError, page.text).toBe(false);
        const part = page.result.structuredContent as { text: string; nextOffset: number | null; offset: number };
        expect(part.offset).toBe(offset);
        expect(part.text.length).toBeLessThanOrEqual(RECORD_PART_CHARACTERS);
        text += part.text;
        offset = part.nextOffset;
        pages++;
      }
      expect(pages).toBeGreaterThan(10);
      const read = JSON.parse(text) as StepRecord;
      expect((read.step.args as { content: string }).content).toBe(CONTENT);
      // Another agent cannot page it: the step reads as unknown.
      const other = await startMcp(dataDir, { waitSeconds: 0 });
      const refused = await other.call('step_record_part', { stepId, offset: 0 });
      expect(refused.isError).toBe(true);
      expect(refused.text).toContain('NOT_FOUND');

      // Without a host the CLI reads the database itself, through the same bounded method, and still prints the whole.
      await serve.stop();
      const offline = await runCliAsync(['--data-dir', dataDir, '--json', 'steps', 'show', stepId], { timeoutMs: 120_000 });
      expect(offline.status, offline.stderr).toBe(0);
      expect(((JSON.parse(offline.stdout) as StepRecord).step.args as { content: string }).content).toBe(CONTENT);
    },
  );
});
