import { Executor, type ExecutorOptions } from '../../src/executor/executor.js';
import { closeAfter } from './teardown.js';
import { tempSetup } from './temp-dirs.js';

/**
 * A real Executor over a fresh data directory and workspace (tempSetup's, with `policy`), closed after
 * the test and before its directory is removed.
 */
export function openExecutor(
  policy: Record<string, unknown> = {},
  options: ExecutorOptions = {},
): { executor: Executor; dataDir: string; workspace: string; base: string } {
  const setup = tempSetup(policy);
  return { executor: closeAfter(Executor.open(setup.dataDir, options)), ...setup };
}
