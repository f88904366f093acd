import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { openExecutor } from '../../helpers/open-executor.js';

/*
 * A long approved plan writes into sub/; the moment one of its steps is heard executed (its outcome told
 * after the next step's intent sync), sub/ (or its parent) is swapped for a link into the data directory,
 * outside the workspace, or onto a secret folder. No later write lands through the link; the steps after
 * the swap do not say executed; verdicts kept from earlier passes (PathVerdictMemo) change nothing.
 */

const person = actorFor('cli');

describe('a folder swapped for a link between two steps of a running plan (attack)', () => {
  for (const [where, swapped] of [
    ['into the data directory', 'sub'],
    ['outside the workspace', 'sub'],
    ['outside the workspace, a parent of a parent', 'top'],
    ['onto a secret folder inside the workspace (.ssh)', 'sub'],
  ] as const)
    it(`${where}: nothing lands through it`, async () => {
      const { executor, workspace, dataDir, base } = openExecutor({ autoApprove: 'none' });
      const outside = path.join(base, 'outside');
      fs.mkdirSync(outside);
      const folder = path.join(workspace, 'top', 'mid', 'sub');
      fs.mkdirSync(folder, { recursive: true });
      const ids = Array.from({ length: 30 }, (_, index) => `s${index}`);
      await executor.propose(
        { steps: ids.map((id) => ({ id, action: 'writeFile', args: { path: path.join(folder, `${id}.txt`), content: `${id}\n` } })) },
        person,
      );
      await expect.poll(() => ids.every((id) => executor.getStep(id).status === 'awaiting_consent'), { timeout: 60_000 }).toBe(true);
      for (const id of ids.slice(1)) await executor.approve(id, person, { execute: false });
      const secret = path.join(workspace, '.ssh');
      fs.mkdirSync(secret);
      const linkTarget = where.startsWith('into') ? dataDir : where.startsWith('onto') ? secret : outside;
      let swappedAt: number | null = null;
      executor.on('step', (record: { step: { id: string }; status: string }) => {
        if (swappedAt !== null || record.status !== 'executed' || record.step.id !== 's5') return;
        swappedAt = 5;
        const at = swapped === 'sub' ? folder : path.join(workspace, 'top');
        fs.renameSync(at, `${at}-moved`);
        fs.symlinkSync(linkTarget, at);
      });
      await executor.approve('s0', person).catch(() => undefined);
      await expect
        .poll(() => ids.filter((id) => ['approved', 'running'].includes(executor.getStep(id).status)), { timeout: 60_000 })
        .toEqual([]);
      expect(swappedAt).toBe(5);
      const landed = fs
        .readdirSync(linkTarget, { recursive: true })
        .map(String)
        .filter((name) => /s\d+\.txt$/.test(name));
      expect(landed).toEqual([]);
      // Every step said executed has its file in the moved folder; none after the swap's moment runs.
      const movedFolder = swapped === 'sub' ? `${folder}-moved` : path.join(`${path.join(workspace, 'top')}-moved`, 'mid', 'sub');
      for (const id of ids) {
        const status = executor.getStep(id).status;
        if (status === 'executed') expect([id, fs.existsSync(path.join(movedFolder, `${id}.txt`))]).toEqual([id, true]);
      }
      expect(ids.slice(8).filter((id) => executor.getStep(id).status === 'executed')).toEqual([]);
      expect((await executor.verifyAudit()).ok).toBe(true);
    }, 120_000);
});
