import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StepRecord } from '../../../src/domain/step-record.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

function bigText(lines: number, edit: (line: string, index: number) => string = (line) => line): string {
  const out: string[] = [];
  for (let i = 0; i < lines; i++) out.push(edit(`line ${i} of a big file, with some text ${i * 7}`, i));
  return out.join('\n') + '\n';
}

describe('a real `executor serve` answers while a 10 MB write is previewed', () => {
  it('acknowledges a small proposal before the big preview is recorded, and the big preview has its diff', async () => {
    const { dataDir, workspace } = tempSetup();
    const bigPath = path.join(workspace, 'big.txt');
    const lines = 220_000;
    fs.writeFileSync(bigPath, bigText(lines));
    const serve = await startServe(dataDir);
    const api = await connectToHost(dataDir, 'cli');
    const order: string[] = [];
    let bigPrepared!: (record: StepRecord) => void;
    const bigShown = new Promise<StepRecord>((resolve) => (bigPrepared = resolve));
    await api.on('step', (record) => {
      if (record.step.id === 'big' && record.status !== 'evaluated') {
        order.push(`big ${record.status}`);
        bigPrepared(record);
      }
    });
    try {
      const content = bigText(lines, (line, i) => (i % 100 === 0 ? `${line} edited` : line));
      expect(content.length).toBeGreaterThan(10_000_000);
      const [big] = await api.propose({
        plan: { planId: 'big-plan', steps: [{ id: 'big', action: 'writeFile', args: { path: bigPath, content } }] },
      });
      order.push('big acknowledged');
      expect(big!.status).toBe('evaluated');
      // A second client, as a second agent would be, while the host prepares the big preview.
      const other = await connectToHost(dataDir, 'cli');
      try {
        const [small] = await other.propose({
          plan: {
            planId: 'small-plan',
            steps: [{ id: 'small', action: 'writeFile', args: { path: path.join(workspace, 'small.txt'), content: 'hi\n' } }],
          },
        });
        order.push('small acknowledged');
        expect(small!.status).toBe('evaluated');
      } finally {
        other.close();
      }
      const shown = await bigShown;
      expect(order).toEqual(['big acknowledged', 'small acknowledged', 'big awaiting_consent']);
      const file = shown.preview!.kind === 'fileChanges' ? shown.preview!.files[0]! : undefined;
      expect(file?.diff).toContain('edited');
      expect(file?.sizeAfter).toBe(content.length);
    } finally {
      api.close();
      await serve.stop();
    }
  }, 120_000);
});
