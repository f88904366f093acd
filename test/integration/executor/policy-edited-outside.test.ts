import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { witnessesNamedByLog } from '../../../src/audit/witness/named-witnesses.js';
import { generateSignerKey } from '../../../src/audit/format/signed-note.js';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { openDatabase } from '../../../src/store/database.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/**
 * policy.json is the person's file, and a thief's too: an edit made while no host ran is recorded at
 * the next open (`policy.edited_outside`), so the log names every witness the policy ever held.
 */
const person = actorFor('window');
const opened: Executor[] = [];
afterEach(() => {
  for (const executor of opened.splice(0)) executor.close();
});

function cycle(dataDir: string, work: (executor: Executor) => void = () => undefined): void {
  const executor = Executor.open(dataDir);
  opened.push(executor);
  work(executor);
  opened.splice(opened.indexOf(executor), 1);
  executor.close();
}

function edits(dataDir: string) {
  let found: { args: Record<string, unknown> }[] = [];
  cycle(
    dataDir,
    (executor) =>
      (found = executor.getAudit({ limit: 100, order: 'asc', filters: { action: 'policy.edited_outside' } }).entries as unknown as {
        args: Record<string, unknown>;
      }[]),
  );
  return found;
}

function writePolicy(dataDir: string, edit: (policy: Record<string, unknown>) => void) {
  const file = path.join(dataDir, 'policy.json');
  const policy = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  edit(policy);
  fs.writeFileSync(file, JSON.stringify(policy));
}

const witness = () => ({
  kind: 'http',
  name: 'w1',
  url: 'https://witness.example.com',
  vkey: generateSignerKey('witness.example.com/w1', { cosigner: true }).vkey,
});

describe('an edit of policy.json behind the host is recorded at the next open', () => {
  it('a hand-written policy adds no record unless it names a witness; a later hand edit of anything is recorded once, naming what it dropped', () => {
    const { dataDir, workspace } = tempSetup();
    cycle(dataDir);
    expect(edits(dataDir)).toHaveLength(0);

    const w1 = witness();
    writePolicy(dataDir, (policy) => (policy.witnesses = [w1]));
    expect(edits(dataDir)).toHaveLength(1);
    // Recorded once: the next opens find policy.json as the log last recorded it.
    expect(edits(dataDir)).toHaveLength(1);

    // A change through the product carries the fingerprint; a later hand edit of a root alone is then noticed too.
    cycle(dataDir, (executor) => executor.setPolicy({ ...executor.getPolicy(), consentExpirySeconds: 3600 }, person));
    expect(edits(dataDir)).toHaveLength(1);
    writePolicy(dataDir, (policy) => (policy.workspaceRoots = [workspace, path.join(workspace, 'sub')]));
    fs.mkdirSync(path.join(workspace, 'sub'));
    expect(edits(dataDir)).toHaveLength(2);

    writePolicy(dataDir, (policy) => (policy.witnesses = []));
    const recorded = edits(dataDir);
    expect(recorded).toHaveLength(3);
    expect(recorded[2]!.args).toMatchObject({
      before: { witnesses: [w1] },
      after: { witnesses: [] },
      policySha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });

    const db = openDatabase(dataDir, { readonly: true });
    try {
      const named = witnessesNamedByLog(db);
      expect(named).toHaveLength(1);
      expect(named[0]).toMatchObject({
        config: w1,
        added: { action: 'policy.edited_outside' },
        removed: { action: 'policy.edited_outside', by: expect.stringMatching(/^system\//) },
      });
    } finally {
      db.close();
    }
  });
});
