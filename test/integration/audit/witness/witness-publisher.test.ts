import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { generateSignerKey, parseSignerKey } from '../../../../src/audit/format/signed-note.js';
import type { StoredCosignature } from '../../../../src/audit/witness/cosignature-store.js';
import { WitnessPublisher, type PublishResult } from '../../../../src/audit/witness/witness-publisher.js';
import { startWitnessServer } from '../../../../src/audit/witness/witness-server.js';
import { WitnessStateDir } from '../../../../src/audit/witness/witness-state.js';
import { Executor } from '../../../../src/executor/executor.js';
import type { WitnessConfig } from '../../../../src/policy/policy-file.js';
import { memoryWitnessedLog } from '../../../helpers/memory-witnessed-log.js';
import { tempDir, tempSetup } from '../../../helpers/temp-dirs.js';

function memoryStore() {
  const rows: StoredCosignature[] = [];
  return {
    rows,
    add: (row: StoredCosignature) => void rows.push(row),
    newest: (witness: string) => rows.filter((row) => row.witness === witness).sort((a, b) => b.size - a.size)[0],
    forSize: () => [],
  };
}

async function witnessFor(logs: { origin: string; vkey: string }[], port = 0) {
  const { skey, vkey } = generateSignerKey('witness.test/w', { cosigner: true });
  const { parseVerifierKey } = await import('../../../../src/audit/format/signed-note.js');
  const running = await startWitnessServer(
    {
      signer: parseSignerKey(skey, { cosigner: true }),
      logs: logs.map((log) => ({ origin: log.origin, verifiers: [parseVerifierKey(log.vkey)] })),
      state: new WitnessStateDir(tempDir()),
    },
    { host: '127.0.0.1', port },
  );
  return { ...running, vkey };
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('the witness publisher', () => {
  it('answers a 409 by resending from the witness size, and keeps only verified cosignatures', async () => {
    const log = memoryWitnessedLog();
    log.append(4);
    const witness = await witnessFor([log]);
    const config: WitnessConfig[] = [{ kind: 'http', name: 'w', url: witness.url, vkey: witness.vkey }];
    const store = memoryStore();
    const publisher = new WitnessPublisher({ dataDir: tempDir(), log: () => log, store: store as never, witnesses: () => config });
    expect(await publisher.publishAll()).toEqual([{ witness: 'w', kind: 'cosigned', size: 4 }]);
    // This data directory forgets what it published (an older copy of the table): the 409 puts it right.
    store.rows.length = 0;
    log.append(3);
    expect(await publisher.publishAll()).toEqual([{ witness: 'w', kind: 'cosigned', size: 7 }]);
    expect(store.rows.map((row) => row.size)).toEqual([7]);
    expect(store.rows[0]!.signature).toMatch(/^— witness\.test\/w /);
    expect(await publisher.publishAll()).toEqual([{ witness: 'w', kind: 'up_to_date', size: 7 }]);
    await witness.close();
  });

  it('an unreachable witness never throws: it is retried with backoff until it answers', async () => {
    const log = memoryWitnessedLog();
    log.append(2);
    const port = await freePort();
    const config: WitnessConfig[] = [
      { kind: 'http', name: 'late', url: `http://127.0.0.1:${port}`, vkey: generateSignerKey('x', { cosigner: true }).vkey },
    ];
    const results: PublishResult[] = [];
    let cosigned: () => void = () => undefined;
    let failedOnce: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (cosigned = resolve));
    const firstFailure = new Promise<void>((resolve) => (failedOnce = resolve));
    const publisher = new WitnessPublisher({
      dataDir: tempDir(),
      log: () => log,
      store: memoryStore() as never,
      witnesses: () => config,
      backoffMs: 50,
      onResult: (result) => {
        results.push(result);
        if (result.kind === 'unreachable') failedOnce();
        if (result.kind === 'cosigned') cosigned();
      },
    });
    expect(() => publisher.notify()).not.toThrow();
    // The first failure is what lets us start the witness: waits follow events.
    await firstFailure;
    expect(results[0]).toMatchObject({ witness: 'late', kind: 'unreachable' });
    const witness = await witnessFor([log], port);
    config[0] = { ...config[0]!, vkey: witness.vkey } as WitnessConfig;
    await done;
    expect(results.at(-1)).toEqual({ witness: 'late', kind: 'cosigned', size: 2 });
    publisher.stop();
    await witness.close();
  });

  it('the host publishes each committed checkpoint by itself, off the commit path', async () => {
    const { dataDir } = tempSetup();
    // The log's key exists once the Executor has opened once; then a witness that trusts it.
    const first = Executor.open(dataDir, { resumeUnfinished: false });
    first.close();
    const { openAuditDatabaseReadOnly } = await import('../../../../src/audit/log/audit-reader.js');
    const { dbWitnessedLog } = await import('../../../../src/audit/witness/db-witnessed-log.js');
    const db = openAuditDatabaseReadOnly(dataDir);
    const local = dbWitnessedLog(db)!;
    const witness = await witnessFor([{ origin: local.origin, vkey: local.verifiers.at(-1)!.vkey }]);
    db.close();
    const executor = Executor.open(dataDir, { resumeUnfinished: false, publishToWitnesses: true, audit: { checkpointEvery: 1 } });
    try {
      const heard = new Promise<PublishResult>((resolve) =>
        executor.on('witness', (result) => result.kind === 'cosigned' && resolve(result)),
      );
      executor.setPolicy({ ...executor.getPolicy(), witnesses: [{ kind: 'http', name: 'w', url: witness.url, vkey: witness.vkey }] }, {
        user: 'test',
        channel: 'cli',
      } as never);
      expect(await heard).toMatchObject({ witness: 'w', kind: 'cosigned' });
    } finally {
      executor.close();
      await witness.close();
    }
  });
});
