import type { ExecutorClient } from '../../src/ipc/client/client.js';
import type { RunSummary } from '../../src/domain/run.js';

/**
 * Resolves with the run's summary once `done` holds, following the host's `agentRun` events (the
 * client subscribes first, then reads the run once, so no change in between is missed). Never polls.
 */
export async function waitForRun(
  api: ExecutorClient,
  runId: string,
  done: (run: RunSummary) => boolean,
  what = 'the run to change',
): Promise<RunSummary> {
  let settle!: (run: RunSummary) => void;
  const reached = new Promise<RunSummary>((resolve) => (settle = resolve));
  const off = await api.on('agentRun', ({ run }) => {
    if (run.id === runId && done(run)) settle(run);
  });
  try {
    const now = (await api.getRun({ runId })).run;
    if (done(now)) return now;
    const timeout = new Promise<never>((_resolve, reject) =>
      setTimeout(() => reject(new Error(`timed out waiting for ${what} (run ${runId})`)), 60_000).unref(),
    );
    return await Promise.race([reached, timeout]);
  } finally {
    off();
  }
}

export const ended = (run: RunSummary) => run.status === 'completed' || run.status === 'failed' || run.status === 'cancelled';
