import { describe, expectTypeOf, it } from 'vitest';
import type { Executor } from '../../../src/executor/executor.js';
import type { RunsExecutorPort } from '../../../src/runs/executor-port.js';
import type { RunHost } from '../../../src/runs/run-loop.js';

// Checked by the compiler (npm run typecheck); the runtime assertions are no-ops.
describe('the runs port', () => {
  it('is met by the Executor as it is, so a host hands it over without an adapter', () => {
    expectTypeOf<Executor>().toExtend<RunsExecutorPort>();
  });

  it('is all a run loop reaches of the Executor', () => {
    expectTypeOf<RunHost['executor']>().toEqualTypeOf<RunsExecutorPort>();
  });
});
