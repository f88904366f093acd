import { setTimeout as sleep } from 'node:timers/promises';
import { isSettled } from '../domain/state-machine.js';
import type { StepRecord } from '../domain/step-record.js';
import { openDatabase } from '../store/database.js';
import { StepRepository } from '../store/step-repository.js';

/**
 * Waits for a plan's steps to be decided by reading the database without taking the lock, so the
 * person can approve or reject from another terminal (which takes the lock) meanwhile.
 */
export async function readStepsWhileUnlocked(dataDir: string, planId: string, timeoutSeconds?: number): Promise<StepRecord[]> {
  const deadline = timeoutSeconds === undefined ? Infinity : Date.now() + timeoutSeconds * 1000;
  const db = openDatabase(dataDir, { readonly: true });
  const steps = new StepRepository(db, { append: () => { throw new Error('read-only'); } });
  try {
    for (;;) {
      const records = steps.planSteps(planId);
      if (records.every((record) => isSettled(record.status)) || Date.now() > deadline) return records;
      await sleep(200);
    }
  } finally {
    db.close();
  }
}
