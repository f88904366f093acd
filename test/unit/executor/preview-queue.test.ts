import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { PreviewQueue, type PreviewWork } from '../../../src/executor/preview-queue.js';

/*
 * The queue is scheduling alone: what it asks of the work (preview a plan's next step, run a plan
 * forward) is a promise here that the test settles by hand, so what may overlap and what must wait
 * is decided by the queue, never by timing.
 */

const PERSON = actorFor('cli');

interface Pending {
  resolve(): void;
}

/** Work whose plans each have `steps[planId]` steps to preview; every preview and run forward waits until the test settles it. */
function handWork(steps: Record<string, number>, limits: { previews: number; runs?: number }) {
  const previewsLeft = new Map(Object.entries(steps));
  const log: string[] = [];
  const previewing = new Map<string, Pending>();
  const running = new Map<string, Pending>();
  const work: PreviewWork = {
    previewNextStep: (planId) => {
      const left = previewsLeft.get(planId) ?? 0;
      if (left === 0) return Promise.resolve(false);
      log.push(`preview ${planId}`);
      return new Promise<boolean>((resolve) =>
        previewing.set(planId, {
          resolve: () => {
            previewing.delete(planId);
            previewsLeft.set(planId, left - 1);
            resolve(true);
          },
        }),
      );
    },
    finishPlan: (planId) => {
      log.push(`run ${planId}`);
      return new Promise<void>((resolve) =>
        running.set(planId, {
          resolve: () => {
            running.delete(planId);
            resolve();
          },
        }),
      );
    },
    onError: (planId, error) => log.push(`error ${planId} ${String(error)}`),
    concurrency: () => limits.previews,
    ...(limits.runs === undefined ? {} : { runConcurrency: () => limits.runs! }),
  };
  return { work, log, previewing, running, previewsLeft };
}

/** Lets the queue's turns pass (each unit starts a turn after it was scheduled). */
async function turns(count = 5): Promise<void> {
  for (let index = 0; index < count; index++) await new Promise<void>((resolve) => setImmediate(resolve));
}

describe('PreviewQueue: previews and runs forward', () => {
  it('previews the next plan while a previewed plan runs forward: a run holds no preview slot', async () => {
    // a has every step previewed (its run forward is what is left); b has one step to preview.
    const { work, log, previewing, running } = handWork({ a: 0, b: 1 }, { previews: 1, runs: 2 });
    const queue = new PreviewQueue(work);
    queue.schedule('a', PERSON);
    queue.schedule('b', PERSON);
    await turns();
    // One preview slot: a runs forward, and b's preview is under way beside it.
    expect(log).toEqual(['run a', 'preview b']);
    expect(running.has('a') && previewing.has('b')).toBe(true);
    previewing.get('b')!.resolve();
    await turns();
    expect(log).toEqual(['run a', 'preview b', 'run b']);
    const idle = queue.whenIdle();
    let settled = false;
    void idle.then(() => (settled = true));
    running.get('a')!.resolve();
    await turns();
    // Idle means every plan ran forward too, not only that no preview is under way.
    expect(settled).toBe(false);
    running.get('b')!.resolve();
    await idle;
    expect(queue.pending).toBe(0);
  });

  it('runs no more plans forward at once than its run limit; the next starts when one ends', async () => {
    const { work, log, running } = handWork({ a: 0, b: 0, c: 0 }, { previews: 3, runs: 2 });
    const queue = new PreviewQueue(work);
    for (const plan of ['a', 'b', 'c']) queue.schedule(plan, PERSON);
    await turns();
    expect(log.filter((entry) => entry.startsWith('run'))).toEqual(['run a', 'run b']);
    running.get('a')!.resolve();
    await turns();
    expect(log.filter((entry) => entry.startsWith('run'))).toEqual(['run a', 'run b', 'run c']);
    running.get('b')!.resolve();
    running.get('c')!.resolve();
    await queue.whenIdle();
  });

  it('never previews a plan while it runs forward: scheduled meanwhile, it is previewed once the run ends', async () => {
    const { work, log, running, previewsLeft, previewing } = handWork({ a: 0 }, { previews: 2 });
    const queue = new PreviewQueue(work);
    queue.schedule('a', PERSON);
    await turns();
    expect(log).toEqual(['run a']);
    // A step of the plan was sent back to be previewed again while it ran forward.
    previewsLeft.set('a', 1);
    queue.schedule('a', PERSON);
    await turns();
    expect(log).toEqual(['run a']);
    running.get('a')!.resolve();
    await turns();
    expect(log).toEqual(['run a', 'preview a']);
    previewing.get('a')!.resolve();
    await turns();
    expect(log).toEqual(['run a', 'preview a', 'run a']);
    running.get('a')!.resolve();
    await queue.whenIdle();
  });

  it('scheduled while it waits to run forward, a plan is looked at again in the preview line, and runs once', async () => {
    const { work, log, running, previewing } = handWork({ a: 0, b: 1 }, { previews: 2, runs: 1 });
    const queue = new PreviewQueue(work);
    queue.schedule('b', PERSON);
    queue.schedule('a', PERSON);
    await turns();
    // a waits for b? No: b previews, a has nothing to preview and takes the one run slot.
    expect(log).toEqual(['preview b', 'run a']);
    previewing.get('b')!.resolve();
    await turns();
    // b waits for the run slot; scheduled again meanwhile, it is previewed again (nothing left) and waits once more.
    queue.schedule('b', PERSON);
    await turns();
    running.get('a')!.resolve();
    await turns();
    expect(log.filter((entry) => entry === 'run b')).toEqual(['run b']);
    running.get('b')!.resolve();
    await queue.whenIdle();
  });

  it('stop drops the plans waiting to run forward, and is idle once the runs under way end', async () => {
    const { work, log, running } = handWork({ a: 0, b: 0 }, { previews: 2, runs: 1 });
    const queue = new PreviewQueue(work);
    queue.schedule('a', PERSON);
    queue.schedule('b', PERSON);
    await turns();
    expect(log).toEqual(['run a']);
    queue.stop();
    const idle = queue.whenIdle();
    running.get('a')!.resolve();
    await idle;
    await turns();
    expect(log).toEqual(['run a']);
  });
});
