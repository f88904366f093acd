import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { contentBytes } from '../../../src/backup/content-bytes.js';
import { sha256Of } from '../../../src/backup/blob-store.js';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { BODY_APART_CHARS } from '../../../src/store/step-bodies.js';
import { closeAfter, defer } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * A large content's bytes are made once and kept by its string (content-bytes.ts), with their sha256, which the run
 * records as the post-image's hash without hashing again. The kept bytes were handed out themselves, in shared memory
 * a preview worker received as is: a buggy or hostile reader (that worker) that wrote into them changed what the run
 * later wrote, while the record and the audit log kept the approved hash. Each reader now gets bytes of its own.
 */

const PERSON = actorFor('window');

function largeText(tag: string): string {
  const lines: string[] = [];
  for (let index = 0; lines.join('\n').length < BODY_APART_CHARS * 4; index++) lines.push(`${tag} line ${index} ${'y'.repeat(index % 30)}`);
  return `${lines.join('\n')}\n`;
}

/** A real worker thread that overwrites the start of whatever bytes it is sent, as a buggy preview worker could. */
async function scribbleInWorker(bytes: Uint8Array): Promise<void> {
  const worker = new Worker(
    `const { parentPort } = require('node:worker_threads');
     parentPort.on('message', (bytes) => { bytes.fill(0x58, 0, 64); parentPort.postMessage('done'); });`,
    { eval: true },
  );
  defer(() => worker.terminate());
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
    worker.postMessage(bytes);
  });
}

describe("a large content's kept bytes", () => {
  it('are never the bytes a reader was handed: a worker that writes into them changes nothing the run writes', async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir));
    const content = largeText('approved');
    const [step] = await executor.propose({ steps: [{ id: 'w', action: 'writeFile', args: { path: 'out.txt', content } }] }, PERSON);
    await scribbleInWorker(contentBytes(content));
    // A reader on the host's own thread that writes into what it was given.
    contentBytes(content).fill(0x59, 64, 128);
    expect(contentBytes(content).equals(Buffer.from(content))).toBe(true);

    const done = await executor.approve('w', PERSON, { previewHash: step!.previewHash });
    expect(done.status).toBe('executed');
    const written = fs.readFileSync(path.join(workspace, 'out.txt'));
    expect(written.toString('utf8')).toBe(content);
    // What the record says was written is what was written.
    const recorded = (done.result as { files?: { postHash: string }[] } | undefined)?.files?.[0]?.postHash;
    if (recorded !== undefined) expect(recorded).toBe(sha256Of(written));
  });

  it('stay the content across a preview made on a worker, however often it is read', async () => {
    const content = largeText('read');
    const first = contentBytes(content);
    await scribbleInWorker(first);
    for (let read = 0; read < 3; read++) expect(contentBytes(content).equals(Buffer.from(content))).toBe(true);
  });
});
