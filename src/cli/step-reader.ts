import { setTimeout as sleep } from 'node:timers/promises';
import type { ExecutorClient } from '../ipc/client.js';
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

/**
 * Proposes through a running host and waits on its step events until every step of the plan is
 * decided. Listening starts before the proposal, so no decision can slip between the two.
 */
export async function proposeAndWaitOnHost(api: ExecutorClient, plan: unknown, timeoutSeconds?: number, onWaiting?: (open: number) => void): Promise<StepRecord[]> {
  let planId: string | null = null;
  let changed = false;
  let wake: (() => void) | null = null;
  const off = await api.on('step', (record) => {
    if (planId === null || record.step.planId === planId) {
      changed = true;
      wake?.();
    }
  });
  try {
    let records = await api.propose({ plan });
    planId = records[0]!.step.planId;
    const deadline = timeoutSeconds === undefined ? Infinity : Date.now() + timeoutSeconds * 1000;
    if (!records.every((record) => isSettled(record.status))) onWaiting?.(records.filter((record) => !isSettled(record.status)).length);
    for (;;) {
      if (records.every((record) => isSettled(record.status))) return records;
      const left = deadline - Date.now();
      if (left <= 0) return records;
      if (!changed) {
        await new Promise<void>((resolve) => {
          // Look again at least every few seconds: if the host went away, the next call says so instead of waiting forever.
          const timer = setTimeout(resolve, Math.min(left, 5_000));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = null;
      }
      changed = false;
      records = (await api.listSteps({ planId, limit: 10_000 })).sort((left, right) => left.position - right.position);
    }
  } finally {
    off();
  }
}
