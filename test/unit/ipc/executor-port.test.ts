import { describe, expectTypeOf, it } from 'vitest';
import type { Executor } from '../../../src/executor/executor.js';
import type { IpcExecutorPort } from '../../../src/ipc/server/executor-port.js';
import type { invokeMethod } from '../../../src/ipc/server/dispatch.js';
import type { localClient } from '../../../src/ipc/server/local-client.js';

// Checked by the compiler (npm run typecheck); the runtime assertions are no-ops.
describe('the ipc port', () => {
  it('is met by the Executor as it is, so a host and the CLI hand it over without an adapter', () => {
    expectTypeOf<Executor>().toExtend<IpcExecutorPort>();
  });

  it('is all the dispatcher and the in-process client reach of the Executor', () => {
    expectTypeOf<Parameters<typeof invokeMethod>[0]>().toEqualTypeOf<IpcExecutorPort>();
    expectTypeOf<Parameters<typeof localClient>[0]>().toEqualTypeOf<IpcExecutorPort>();
  });
});
