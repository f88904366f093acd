import { expect, it, vi } from 'vitest';
import { FakeUtilityProcess } from '../../helpers/fake-electron.js';

/*
 * The light sandbox's whole escape suite, again, against workers started the desktop app's way:
 * as (fake) Electron utility processes — the real worker.cjs in a Node child that gets
 * process.parentPort from a shim and, like a utility process, none of the launch's Node flags
 * and no wrapper. So no permission model, no namespaces, no code-from-strings flag: every
 * payload meets only what the worker itself does, and still reaches no canary.
 */
vi.mock('electron', () => import('../../helpers/fake-electron.js'));
vi.mock('../sandbox/light/sandbox-fixture.js', async (importOriginal) => {
  const fixture = await importOriginal<typeof import('../sandbox/light/sandbox-fixture.js')>();
  const { electronSpawnChild } = await import('../../../electron/spawn-child.js');
  return {
    ...fixture,
    sandboxFor: (options: Parameters<typeof fixture.sandboxFor>[0] = {}) =>
      fixture.sandboxFor({ spawnChild: electronSpawnChild, ...options }),
  };
});

await import('../sandbox/light/escape-suite.test.js');

it('ran those payloads in (fake) utility processes, not in forked Node', () => {
  expect(FakeUtilityProcess.forked.length).toBeGreaterThan(50);
});
