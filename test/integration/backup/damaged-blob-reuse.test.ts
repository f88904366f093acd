import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sha256Of } from '../../../src/backup/blob-store.js';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { BODY_APART_CHARS } from '../../../src/store/step-bodies.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * A blob already on disk under the name a new write needs, but damaged at the same size (a flipped byte): the store
 * trusted it by its size and did not write the good bytes it held in hand. A run then recorded the damaged blob as the
 * backup of the file it replaced (its revert could never give the file back), and a new proposal carrying the very
 * content was stored as "content lost" at once.
 */

const PERSON = actorFor('window');

function largeText(tag: string): string {
  const lines: string[] = [];
  for (let index = 0; lines.join('\n').length < BODY_APART_CHARS * 2; index++) lines.push(`${tag} line ${index} ${'y'.repeat(index % 30)}`);
  return `${lines.join('\n')}\n`;
}

const blobFile = (dataDir: string, hash: string) => path.join(dataDir, 'blobs', hash.slice(0, 2), hash.slice(2));

/** The blob `content` is kept as, present with the same size but one byte changed. */
function plantDamaged(dataDir: string, content: string): string {
  const bytes = Buffer.from(content);
  const hash = sha256Of(bytes);
  const file = blobFile(dataDir, hash);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const damaged = Buffer.from(bytes);
  const middle = Math.floor(damaged.length / 2);
  damaged[middle] = damaged[middle]! ^ 0x01;
  fs.writeFileSync(file, damaged, { mode: 0o600 });
  return hash;
}

describe('a damaged blob of the same size under a needed name', () => {
  it.each([
    ['small', 'the person\u2019s own notes\n'],
    ['large', largeText('notes')],
  ])('is written again as the backup of the file a run replaces, so revert gives the file back (%s)', async (_size, original) => {
    const { dataDir, workspace } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir));
    const target = path.join(workspace, 'notes.txt');
    fs.writeFileSync(target, original);
    const preImage = plantDamaged(dataDir, original);
    const [step] = await executor.propose(
      { steps: [{ id: 'w', action: 'writeFile', args: { path: target, content: 'replaced\n' } }] },
      PERSON,
    );
    expect((await executor.approve('w', PERSON, { previewHash: step!.previewHash })).status).toBe('executed');
    expect(sha256Of(fs.readFileSync(blobFile(dataDir, preImage)))).toBe(preImage);
    expect((await executor.revertStep('w', PERSON)).status).toBe('reverted');
    expect(fs.readFileSync(target, 'utf8')).toBe(original);
  });

  it('is written again by a proposal that carries the content, which is then whole and runs', async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir));
    const content = largeText('carried');
    const hash = plantDamaged(dataDir, content);
    const [step] = await executor.propose({ steps: [{ id: 'c', action: 'writeFile', args: { path: 'carried.txt', content } }] }, PERSON);
    expect(executor.getStep('c').contentLost).toBeUndefined();
    expect(sha256Of(fs.readFileSync(blobFile(dataDir, hash)))).toBe(hash);
    expect((await executor.approve('c', PERSON, { previewHash: step!.previewHash })).status).toBe('executed');
    expect(fs.readFileSync(path.join(workspace, 'carried.txt'), 'utf8')).toBe(content);
  });
});
