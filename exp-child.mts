import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { actorFor } from './src/domain/actor.js';
import { toErrorShape } from './src/domain/errors.js';
import { Executor } from './src/executor/executor.js';
const [root] = process.argv.slice(2);
const dataDir = path.join(root, 'data'); const workspace = path.join(root, 'workspace');
fs.mkdirSync(dataDir); fs.mkdirSync(workspace);
fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace], autoApprove: 'HIGH' }));
const executor = Executor.open(dataDir, { log: () => undefined });
const free = () => { const s = fs.statfsSync(root); return Number(s.bavail) * Number(s.bsize); };
const bytes = crypto.randomBytes(48 * 1024);
for (let room = 320 * 1024, attempt = 0; room >= 0; room -= 4 * 1024, attempt++) {
  const id = `s${attempt}`;
  const filler = path.join(root, 'filler.bin');
  fs.writeFileSync(filler, Buffer.alloc(Math.max(0, free() - room)));
  let answer: any = null;
  try { await executor.propose({ steps: [{ id, action: 'writeFile', args: { path: path.join(workspace, `${id}.txt`), content: bytes.toString('base64'), encoding: 'base64' } }] }, actorFor('cli')); }
  catch (e) { answer = toErrorShape(e); }
  const held = (answer?.details?.steps ?? []).find((s: any) => s.outcomeHeld && s.applied);
  if (held) { console.log(`HELD ${id} ${executor.getStep(id).status}`); setInterval(() => {}, 1000); break; }
  fs.rmSync(filler);
  await executor.checkStorageHold();
}
