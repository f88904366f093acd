import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { exportAudit, fileLineWriter } from '../../../../src/audit/export/audit-export.js';
import { AuditKeyring, parseVerificationKeys } from '../../../../src/audit/keys/audit-keys.js';
import { AuditTree, recordLeafHash } from '../../../../src/audit/log/audit-tree.js';
import { verifyExportFile } from '../../../../src/audit/verify/audit-verifier.js';
import { logNoteVerifier } from '../../../../src/audit/format/checkpoint-note.js';
import { FileKeyStore } from '../../../../src/audit/keys/key-store.js';
import {
  memoryNodeReader,
  nodeCount,
  nodePosition,
  nodesCompletedBy,
  rootOfLeaves,
  verifyConsistency,
  verifyInclusion,
} from '../../../../src/audit/format/merkle.js';
import { openNote } from '../../../../src/audit/format/signed-note.js';
import { parseCheckpointText } from '../../../../src/audit/format/tlog-checkpoint.js';
import { DATABASE_FILE, openDatabase } from '../../../../src/store/database.js';
import { appendNotes, buildAuditLog, tamper, verifyLogAt, withAuditLog } from '../../../helpers/audit-log-fixture.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

const CRASH = path.join(import.meta.dirname, '..', 'fixtures', 'tree-build-crash.ts');

interface Cp {
  cpSeq: number;
  seq: number;
  rootHash?: string;
  note: string | null;
}

function readLog(dataDir: string): { leaves: Buffer[]; checkpoints: Cp[]; tree: string[] } {
  const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
  try {
    const leaves = (db.prepare('SELECT hash FROM audit_records ORDER BY seq').pluck().all() as Buffer[]).map(recordLeafHash);
    const checkpoints = (
      db
        .prepare(
          'SELECT c.cp_seq, c.body, n.note FROM audit_checkpoints c LEFT JOIN audit_checkpoint_notes n ON n.cp_seq = c.cp_seq ORDER BY c.cp_seq',
        )
        .all() as { cp_seq: number; body: string; note: string | null }[]
    ).map((row) => {
      const body = JSON.parse(row.body) as { seq: number; rootHash?: string };
      return { cpSeq: row.cp_seq, seq: body.seq, rootHash: body.rootHash, note: row.note };
    });
    const tree = (db.prepare('SELECT pos, hash FROM audit_tree ORDER BY pos').all() as { pos: number; hash: Buffer }[]).map(
      (row) => `${row.pos}/${row.hash.toString('hex')}`,
    );
    return { leaves, checkpoints, tree };
  } finally {
    db.close();
  }
}

describe('the audit log as a Merkle tree', { timeout: 300_000 }, () => {
  it('every checkpoint names the RFC 9162 root of the records it seals, and its signed note states the same', () => {
    const { dataDir } = buildAuditLog({ records: 333, checkpointEvery: 50 });
    const { leaves, checkpoints } = readLog(dataDir);
    const keyring = AuditKeyring.load(new FileKeyStore(dataDir))!;
    const verifier = logNoteVerifier(keyring.logId, keyring.currentPublicKey());
    expect(checkpoints.length).toBeGreaterThanOrEqual(7);
    for (const cp of checkpoints) {
      const root = rootOfLeaves(leaves.slice(0, cp.seq));
      expect(cp.rootHash, `checkpoint ${cp.cpSeq}`).toBe(root.toString('hex'));
      const opened = openNote(cp.note!, [verifier]);
      expect(parseCheckpointText(opened.text)).toEqual({
        origin: `executor.audit/${keyring.logId}`,
        size: cp.seq,
        rootHash: root,
        extensions: [],
      });
    }
  });

  it('proofs come from the stored tree: inclusion for every record, consistency between consecutive checkpoints', () => {
    const { dataDir } = buildAuditLog({ records: 200, checkpointEvery: 64 });
    const { leaves, checkpoints } = readLog(dataDir);
    const db = openDatabase(dataDir, { readonly: true });
    try {
      const tree = new AuditTree(db);
      expect(tree.size()).toBe(leaves.length);
      const last = checkpoints[checkpoints.length - 1]!;
      const root = Buffer.from(last.rootHash!, 'hex');
      for (let seq = 1; seq <= last.seq; seq++)
        expect(verifyInclusion(seq - 1, last.seq, leaves[seq - 1]!, tree.inclusionProof(seq, last.seq), root)).toBe(true);
      for (let at = 1; at < checkpoints.length; at++) {
        const [before, after] = [checkpoints[at - 1]!, checkpoints[at]!];
        if (before.seq === 0) continue;
        const proof = tree.consistencyProof(before.seq, after.seq);
        expect(
          verifyConsistency(before.seq, after.seq, Buffer.from(before.rootHash!, 'hex'), Buffer.from(after.rootHash!, 'hex'), proof),
        ).toBe(true);
      }
    } finally {
      db.close();
    }
  });

  it('a log whose tree is missing gets it built on open, equal to the one kept while appending, and goes on', async () => {
    const { dataDir } = buildAuditLog({ records: 500, checkpointEvery: 100 });
    const before = readLog(dataDir);
    tamper(dataDir, (db) => db.exec('DELETE FROM audit_tree'));
    const progress: number[] = [];
    withAuditLog(
      dataDir,
      (db, log) => {
        expect(log.merkleTree.size()).toBe(before.leaves.length);
        db.transaction(() =>
          log.append({ kind: 'step.simulated', actor: { user: 'tester', channel: 'cli' }, detail: { after: 'rebuild' } }),
        )();
        log.checkpoint('heartbeat');
      },
      { onTreeBuild: (built) => progress.push(built) },
    );
    const after = readLog(dataDir);
    expect(after.tree).toEqual(expect.arrayContaining(before.tree));
    expect(after.tree.length).toBeGreaterThan(before.tree.length);
    const newest = after.checkpoints[after.checkpoints.length - 1]!;
    expect(newest.rootHash).toBe(rootOfLeaves(after.leaves).toString('hex'));
    expect((await verifyLogAt(dataDir)).problem).toBeNull();
    // 500 records are too few to report on; the threshold is for logs a person waits on.
    expect(progress).toEqual([]);
  });

  it("SIGKILL in the middle of building an older log's tree loses nothing: the next open finishes it", async () => {
    const { dataDir } = buildAuditLog({ records: 1200, perTransaction: 200 });
    const before = readLog(dataDir);
    tamper(dataDir, (db) => db.exec('DELETE FROM audit_tree'));
    const child = spawn(process.execPath, ['--import', 'tsx', CRASH, dataDir, '100', '4'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await new Promise((resolve) => child.once('exit', resolve));
    expect(child.signalCode, stderr).toBe('SIGKILL');
    expect(stdout.trim().split('\n')).toEqual(['100', '200', '300', '400']);
    const partial = readLog(dataDir);
    expect(partial.tree.length).toBe(nodeCount(400));

    withAuditLog(dataDir, (_db, log) => expect(log.merkleTree.size()).toBe(before.leaves.length));
    expect(readLog(dataDir).tree.sort()).toEqual([...before.tree].sort());
    expect((await verifyLogAt(dataDir)).problem).toBeNull();
  });

  it('building a big tree reports progress; a tree left longer than a cut log is trimmed to it', () => {
    const { dataDir } = buildAuditLog({ records: 300, perTransaction: 100 });
    tamper(dataDir, (db) => db.exec('DELETE FROM audit_tree'));
    const db = openDatabase(dataDir);
    try {
      const progress: [number, number][] = [];
      const tree = new AuditTree(db);
      // 300 notes, key.created, app.started, app.stopped
      expect(tree.catchUp((built, total) => progress.push([built, total]), { chunk: 128, progressFrom: 1 })).toBe(303);
      expect(progress).toEqual([
        [128, 303],
        [256, 303],
        [303, 303],
      ]);
      db.exec('DROP TRIGGER IF EXISTS audit_records_no_delete');
      db.prepare('DELETE FROM audit_records WHERE seq > 250').run();
      expect(tree.catchUp()).toBe(250);
      const leaves = (db.prepare('SELECT hash FROM audit_records ORDER BY seq').pluck().all() as Buffer[]).map(recordLeafHash);
      expect(tree.root(250).equals(rootOfLeaves(leaves))).toBe(true);
      expect(db.prepare('SELECT count(*) FROM audit_tree').pluck().get()).toBe(nodeCount(250));
    } finally {
      db.close();
    }
  });
});

describe('verify recomputes the Merkle roots from the records', { timeout: 300_000 }, () => {
  it('a checkpoint signed over a root the records do not give is BAD_CHECKPOINT, on one thread and with workers', async () => {
    const { dataDir } = buildAuditLog({ records: 400, checkpointEvery: 100 });
    expect((await verifyLogAt(dataDir)).problem).toBeNull();
    expect((await verifyLogAt(dataDir, { workers: 3, parallelFrom: 10 })).problem).toBeNull();
    // A damaged stored tree: the next checkpoint is signed over the wrong root, and verify notices.
    tamper(dataDir, (db) => db.prepare('UPDATE audit_tree SET hash = ? WHERE pos = ?').run(Buffer.alloc(32, 7), nodePosition(8, 0)));
    const cpSeq = withAuditLog(dataDir, (db, log) => {
      log.checkpoint('heartbeat');
      return db.prepare('SELECT max(cp_seq) FROM audit_checkpoints').pluck().get() as number;
    });
    for (const options of [{}, { workers: 3, parallelFrom: 10 }]) {
      const report = await verifyLogAt(dataDir, options);
      expect(report.problem, JSON.stringify(options)).toMatchObject({ code: 'BAD_CHECKPOINT' });
      expect(report.problem!.message).toContain(`checkpoint ${cpSeq}: its Merkle root is not the root of records 1..`);
    }
  });

  it('a stored note that disagrees with its checkpoint, or whose signature fails, is BAD_CHECKPOINT', async () => {
    const { dataDir } = buildAuditLog({ records: 120, checkpointEvery: 50 });
    const { checkpoints } = readLog(dataDir);
    const [first, second] = checkpoints.filter((cp) => cp.seq > 0);
    tamper(dataDir, (db) =>
      db
        .prepare('UPDATE audit_checkpoint_notes SET note = ? WHERE cp_seq = ?')
        .run(first!.note!.replace(`\n${first!.seq}\n`, `\n${first!.seq + 1}\n`), first!.cpSeq),
    );
    let report = await verifyLogAt(dataDir);
    expect(report.problem).toMatchObject({ code: 'BAD_CHECKPOINT', seq: first!.seq });
    expect(report.problem!.message).toContain('tlog-checkpoint note does not hold');

    tamper(dataDir, (db) => {
      db.prepare('UPDATE audit_checkpoint_notes SET note = ? WHERE cp_seq = ?').run(first!.note, first!.cpSeq);
      // A note genuinely signed, but of another checkpoint: signature holds, content does not match.
      db.prepare('UPDATE audit_checkpoint_notes SET note = ? WHERE cp_seq = ?').run(first!.note, second!.cpSeq);
    });
    report = await verifyLogAt(dataDir);
    expect(report.problem).toMatchObject({ code: 'BAD_CHECKPOINT', seq: second!.seq });
    expect(report.problem!.message).toContain('states tree size');

    tamper(dataDir, (db) => db.prepare('DELETE FROM audit_checkpoint_notes WHERE cp_seq = ?').run(second!.cpSeq));
    report = await verifyLogAt(dataDir);
    expect(report.problem).toBeNull();
    expect(report.warnings).toContain('1 checkpoint(s) have no stored tlog-checkpoint note: witnesses were not sent them');
  });

  it("an excerpt checks its checkpoints' roots through the export's tree-prefix line; a changed prefix is caught", async () => {
    const { dataDir } = buildAuditLog({ records: 300, checkpointEvery: 50 });
    const dir = tempDir('executor-excerpt-');
    const file = path.join(dir, 'excerpt.jsonl');
    const keyring = AuditKeyring.load(new FileKeyStore(dataDir))!;
    const k0 = parseVerificationKeys(
      keyring
        .exportVerification(new Date(), { keep: true })
        .map((line) => line.verificationKey)
        .join(','),
    );
    const db = openDatabase(dataDir, { readonly: true });
    try {
      const fd = fs.openSync(file, 'w');
      const writer = fileLineWriter(fd);
      exportAudit(db, keyring.logId, writer, { from: 77, to: 180, checkpointEvery: 50, keyring });
      writer.flush();
      fs.closeSync(fd);
    } finally {
      db.close();
    }
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n');
    const prefix = JSON.parse(lines[1]!) as { type: string; size: number; hashes: string[] };
    expect(prefix).toMatchObject({ type: 'tree-prefix', size: 76 });
    expect(prefix.hashes).toHaveLength(3); // 76 = 64 + 8 + 4

    const intact = await verifyExportFile(file, k0);
    expect(intact.problem).toBeNull();
    expect(intact.warnings.join(' ')).not.toContain('Merkle root');

    prefix.hashes[1] = prefix.hashes[1]!.replace(/^./, (digit) => (digit === '0' ? '1' : '0'));
    fs.writeFileSync(file, [lines[0], JSON.stringify(prefix), ...lines.slice(2)].join('\n'));
    const changed = await verifyExportFile(file, k0);
    expect(changed.problem).toMatchObject({ code: 'BAD_CHECKPOINT' });
    expect(changed.problem!.message).toContain('Merkle root');

    fs.writeFileSync(file, [lines[0], ...lines.slice(2)].join('\n'));
    const withoutPrefix = await verifyExportFile(file, k0);
    expect(withoutPrefix.problem).toBeNull();
    expect(withoutPrefix.warnings.join(' ')).toMatch(/checkpoint Merkle root\(s\) not checked: the excerpt does not start at record 1/);
  });
});

describe('the empty log', () => {
  it('the open of an empty log seals it at once, key.created first, so what it seals (and its anchor) can be vouched for', async () => {
    const dataDir = path.join(tempDir('executor-empty-'), 'data');
    fs.mkdirSync(dataDir, { recursive: true });
    withAuditLog(dataDir, () => undefined);
    const { leaves, checkpoints } = readLog(dataDir);
    expect(leaves).toHaveLength(1);
    expect(checkpoints).toHaveLength(1);
    expect(checkpoints[0]).toMatchObject({ seq: 1, rootHash: rootOfLeaves(leaves).toString('hex') });
    expect(fs.existsSync(path.join(dataDir, 'audit-anchor.json'))).toBe(true);
    expect(checkpoints[0]!.note).toMatch(/^executor\.audit\/[0-9a-f-]+\n1\n[A-Za-z0-9+/]{43}=\n\n— /);
    expect((await verifyLogAt(dataDir)).problem).toBeNull();
  });
});

describe('the right edge an append keeps in memory', () => {
  /** Every stored subtree, as RFC 9162 computes it from the records the table now holds. */
  function expectedTree(leaves: Buffer[]): string[] {
    const read = memoryNodeReader(leaves);
    return leaves.flatMap((leaf, index) =>
      nodesCompletedBy(index, leaf, read).map((node, at) => `${nodeCount(index) + at}/${node.hash.toString('hex')}`),
    );
  }

  it('never outlives a rolled-back transaction, a rolled-back savepoint or another writer: the stored tree is always that of the records', async () => {
    const dataDir = path.join(tempDir('executor-edge-'), 'data');
    fs.mkdirSync(dataDir, { recursive: true });
    const step = (index: number, label: string) => ({
      kind: 'step.simulated' as const,
      actor: { user: 'tester', channel: 'cli' as const },
      detail: { label, index },
    });
    withAuditLog(dataDir, (db, log) => {
      appendNotes(db, log, 37, 'kept', 37);
      // The whole transaction rolls back after the edge moved 13 records on.
      expect(() =>
        db.transaction(() => {
          for (let index = 0; index < 13; index++) log.append(step(index, 'rolled back'));
          throw new Error('the caller changed its mind');
        })(),
      ).toThrow('changed its mind');
      // Another connection fills the same 13 seqs with other records: the head is back at the edge's size, under another hash.
      withAuditLog(dataDir, (otherDb, other) => appendNotes(otherDb, other, 13, 'same size, other records', 13));
      appendNotes(db, log, 20, 'after rollback', 5);
      // A savepoint inside a transaction that goes on: its records vanish, the outer ones stay.
      db.transaction(() => {
        log.append(step(0, 'outer'));
        try {
          db.transaction(() => {
            for (let index = 0; index < 6; index++) log.append(step(index, 'savepoint'));
            throw new Error('inner only');
          })();
        } catch {
          // the savepoint alone is undone
        }
        for (let index = 1; index < 9; index++) log.append(step(index, 'outer'));
      })();
      // Another connection appends meanwhile: this log's edge is now behind the head.
      withAuditLog(dataDir, (otherDb, other) => appendNotes(otherDb, other, 11, 'other writer', 11));
      appendNotes(db, log, 30, 'last', 10);
      log.checkpoint('shutdown');
    });
    const { leaves, checkpoints, tree } = readLog(dataDir);
    expect(leaves.length).toBeGreaterThan(37 + 13 + 20 + 9 + 11 + 30);
    expect(tree).toEqual(expectedTree(leaves));
    expect(checkpoints[checkpoints.length - 1]!.rootHash).toBe(rootOfLeaves(leaves).toString('hex'));
    const report = await verifyLogAt(dataDir);
    expect(report.problem).toBeNull();
  });
});
