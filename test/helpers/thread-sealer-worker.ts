import { parentPort, workerData } from 'node:worker_threads';
import { threadSealer, type ThreadSealerLine } from '../../src/audit/keys/thread-sealer.js';

/*
 * A worker for the thread-sealer tests: runs the seal/unseal calls it is given, synchronously as a
 * KeyStore would, and posts back each result (bytes, or the typed error) with how long it took.
 */
type Call = { op: 'seal' | 'unseal'; bytes: Uint8Array } | { op: 'roundTrip'; bytes: Uint8Array };
const { line, calls } = workerData as { line: ThreadSealerLine; calls: Call[] };
const sealer = threadSealer(line);
const results = calls.map((call) => {
  const started = Date.now();
  try {
    const bytes =
      call.op === 'seal'
        ? sealer.seal(call.bytes)
        : call.op === 'unseal'
          ? sealer.unseal(call.bytes)
          : sealer.unseal(sealer.seal(call.bytes));
    return { ok: true, bytes, ms: Date.now() - started };
  } catch (error) {
    const shaped = error as { code?: string; message: string };
    return { ok: false, code: shaped.code, message: shaped.message, ms: Date.now() - started };
  }
});
parentPort!.postMessage({ results, protection: sealer.protection, warning: sealer.warning });
