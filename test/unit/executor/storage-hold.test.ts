import { describe, expect, it } from 'vitest';
import { StorageHold } from '../../../src/executor/storage-hold.js';
import type { StorageHoldView } from '../../../src/domain/storage-hold.js';
import { tempDir } from '../../helpers/temp-dirs.js';

const full = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });

function hold() {
  const views: StorageHoldView[] = [];
  const resumed: { stepId: string }[][] = [];
  let closed = false;
  const storage = new StorageHold({
    dataDir: tempDir(),
    freeBytes: () => 1024 * 1024 * 1024,
    emit: (view) => views.push(view),
    log: () => undefined,
    resume: (held) => resumed.push(held.steps),
    closed: () => closed,
  });
  return { storage, views, resumed, close: () => ((closed = true), storage.close()) };
}

describe('StorageHold', () => {
  it('an outcome held while the held ones are being written (the disk refilled meanwhile) is written before recording resumes, never dropped', async () => {
    const { storage, resumed, close } = hold();
    try {
      const written: string[] = [];
      let releaseFirst!: () => void;
      const firstWrite = new Promise<void>((resolve) => (releaseFirst = resolve));
      storage.holdOutcome({ stepId: 'a', planId: 'p', applied: true, write: () => firstWrite.then(() => void written.push('a')) }, full);
      const trying = storage.check(true);
      // While step a's outcome is being written, step b (already running) ends and its outcome cannot be kept.
      storage.holdOutcome({ stepId: 'b', planId: 'q', applied: true, write: async () => void written.push('b') }, full);
      releaseFirst();
      await trying;
      // Either b was written first and recording resumed, or the hold still keeps b: never resumed with b in memory only.
      if (!storage.active) {
        expect(written).toEqual(['a', 'b']);
        expect(resumed.at(-1)!.map((step) => step.stepId)).toEqual(['a', 'b']);
      } else expect(storage.outcomeHeld('b')).toEqual({ applied: true });
    } finally {
      close();
    }
  });
});
