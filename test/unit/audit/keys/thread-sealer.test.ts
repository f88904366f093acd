import crypto from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import type { SecretSealer } from '../../../../src/audit/keys/key-store.js';
import { serveThreadSealer, type ThreadSealerService } from '../../../../src/audit/keys/thread-sealer.js';
import { fakeSealer } from '../../../helpers/fake-sealer.js';

// A real worker thread blocks in Atomics.wait while this (parent) thread serves it. The sealer is a
// fake (AES-GCM with a test key): Electron's safeStorage cannot exist without the Electron binary.
const WORKER = new URL('../../../helpers/thread-sealer-bootstrap.mjs', import.meta.url);

type Call = { op: 'seal' | 'unseal' | 'roundTrip'; bytes: Uint8Array };
type Result = { ok: true; bytes: Uint8Array; ms: number } | { ok: false; code?: string; message: string; ms: number };

function runWorker(
  service: ThreadSealerService,
  calls: Call[],
): Promise<{ results: Result[]; protection: string; warning: string | null }> {
  const worker = new Worker(WORKER, { workerData: { line: service.line, calls }, transferList: service.transferList });
  return new Promise((resolve, reject) => {
    worker.once('message', (message) => {
      resolve(message);
      void worker.terminate();
    });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`worker exited (${code}) without an answer`)));
  });
}

describe('the thread sealer (a worker seals through its parent thread)', { timeout: 60_000 }, () => {
  it('round-trips small and large secrets across a real worker, and passes protection and warning on', async () => {
    const sealer = fakeSealer({ protection: 'plaintext' });
    const service = serveThreadSealer(sealer);
    const small = crypto.randomBytes(32);
    const large = crypto.randomBytes(200_000);
    const { results, protection, warning } = await runWorker(service, [
      { op: 'roundTrip', bytes: small },
      { op: 'roundTrip', bytes: large },
      { op: 'seal', bytes: small },
    ]);
    service.stop();
    expect(results.map((result) => result.ok)).toEqual([true, true, true]);
    expect(Buffer.from((results[0] as { bytes: Uint8Array }).bytes)).toEqual(small);
    expect(Buffer.from((results[1] as { bytes: Uint8Array }).bytes)).toEqual(large);
    // What the worker got back is the parent's sealed form, which this thread can unseal.
    const sealed = (results[2] as { bytes: Uint8Array }).bytes;
    expect(Buffer.from(sealed).includes(small)).toBe(false);
    expect(Buffer.from(sealer.unseal(sealed))).toEqual(small);
    expect(sealer.calls).toEqual({ seal: 3, unseal: 3 });
    expect(protection).toBe('plaintext');
    expect(warning).toMatch(/fixed key/);
  });

  it("turns the parent sealer's failure into AUDIT_KEY_UNAVAILABLE with its message, and keeps serving", async () => {
    const real = fakeSealer();
    const refusing: SecretSealer = {
      ...real,
      unseal: () => {
        throw new Error('the keychain is locked');
      },
    };
    const service = serveThreadSealer(refusing);
    const { results } = await runWorker(service, [
      { op: 'unseal', bytes: Buffer.from('anything') },
      { op: 'seal', bytes: Buffer.from('next call still answered') },
    ]);
    service.stop();
    expect(results[0]).toMatchObject({ ok: false, code: 'AUDIT_KEY_UNAVAILABLE' });
    expect((results[0] as { message: string }).message).toContain('the keychain is locked');
    expect(results[1]!.ok).toBe(true);
  });

  it('gives a typed timeout error, not a hang, when the parent never answers, and fails fast afterwards', async () => {
    const service = serveThreadSealer(fakeSealer(), { timeoutMs: 300 });
    service.stop(); // a parent that is gone: nothing listens for the worker's requests
    const { results } = await runWorker(service, [
      { op: 'seal', bytes: Buffer.from('secret') },
      { op: 'unseal', bytes: Buffer.from('secret') },
    ]);
    expect(results[0]).toMatchObject({ ok: false, code: 'AUDIT_KEY_UNAVAILABLE' });
    expect((results[0] as { message: string }).message).toMatch(/did not answer within 0.3 s/);
    expect(results[0]!.ms).toBeGreaterThanOrEqual(290);
    expect(results[0]!.ms).toBeLessThan(10_000);
    expect(results[1]).toMatchObject({ ok: false, code: 'AUDIT_KEY_UNAVAILABLE' });
    expect(results[1]!.ms).toBeLessThan(100);
  });

  it('times out when the parent thread is stuck, and a late reply does not break the parent', async () => {
    const real = fakeSealer();
    const stuck: SecretSealer = {
      ...real,
      seal: (plain) => {
        const until = Date.now() + 1_000;
        while (Date.now() < until); // this thread is busy: the worker must not wait for ever
        return real.seal(plain);
      },
    };
    const service = serveThreadSealer(stuck, { timeoutMs: 200 });
    const { results } = await runWorker(service, [{ op: 'seal', bytes: Buffer.from('secret') }]);
    service.stop();
    expect(results[0]).toMatchObject({ ok: false, code: 'AUDIT_KEY_UNAVAILABLE' });
  });

  it('refuses a secret larger than the line with a typed error', async () => {
    const service = serveThreadSealer(fakeSealer(), { capacityBytes: 1024 });
    const { results } = await runWorker(service, [{ op: 'seal', bytes: crypto.randomBytes(2048) }]);
    service.stop();
    expect(results[0]).toMatchObject({ ok: false, code: 'AUDIT_KEY_UNAVAILABLE' });
    expect((results[0] as { message: string }).message).toMatch(/does not fit/);
  });
});
