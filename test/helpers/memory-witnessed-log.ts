import { consistencyProof, leafHash, memoryNodeReader, treeRoot } from '../../src/audit/format/merkle.js';
import { generateSignerKey, parseSignerKey, parseVerifierKey, signNote } from '../../src/audit/format/signed-note.js';
import { formatCheckpointText } from '../../src/audit/format/tlog-checkpoint.js';
import type { WitnessedLog } from '../../src/audit/witness/witnessed-log.js';

/** A log held in memory with a real note key: what the witness code needs of a log, without a database. */
export function memoryWitnessedLog(origin = 'executor.test/memory-log', key = generateSignerKey(origin)) {
  const signer = parseSignerKey(key.skey);
  let leaves: Buffer[] = [];
  const root = (size: number) => treeRoot(size, memoryNodeReader(leaves.slice(0, size)));
  const log: WitnessedLog & {
    key: typeof key;
    vkey: string;
    append(count: number, tag?: string): void;
    cut(size: number): void;
    copy(): ReturnType<typeof memoryWitnessedLog>;
  } = {
    origin,
    key,
    vkey: key.vkey,
    verifiers: [parseVerifierKey(key.vkey)],
    size: () => leaves.length,
    rootAt: root,
    consistencyProof: (from, to) => (from === 0 || from === to ? [] : consistencyProof(from, to, memoryNodeReader(leaves.slice(0, to)))),
    newestCheckpoint: () =>
      leaves.length === 0
        ? undefined
        : {
            size: leaves.length,
            rootHash: root(leaves.length),
            note: signNote(formatCheckpointText({ origin, size: leaves.length, rootHash: root(leaves.length), extensions: [] }), [signer]),
          },
    append(count, tag = 'a') {
      for (let i = 0; i < count; i += 1) leaves.push(leafHash(Buffer.from(`${tag}-${leaves.length}`)));
    },
    cut(size) {
      leaves = leaves.slice(0, size);
    },
    copy() {
      const twin = memoryWitnessedLog(origin, key);
      twin.adopt(leaves);
      return twin;
    },
  };
  return Object.assign(log, { adopt: (from: Buffer[]) => void (leaves = [...from]) });
}
