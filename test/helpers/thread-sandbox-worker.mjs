// A host-like worker thread for the thread-spawn tests: a LightSandbox whose workers the parent
// spawns (threadSpawnChild over the port in workerData), running the snippets it was given.
import { register } from 'tsx/esm/api';

register();
const { parentPort, workerData } = await import('node:worker_threads');
const { threadSpawnChild } = await import('../../src/sandbox/light/thread-spawn.ts');
const { LightSandbox } = await import('../../src/sandbox/light/light-sandbox.ts');
const { run, policyOf } = await import('../integration/sandbox/light/sandbox-fixture.ts');

const { spawnPort, snippets, warmWorkers, lingerMs } = workerData;
const sandbox = new LightSandbox({ warn: () => {}, spawnChild: threadSpawnChild(spawnPort, ['a note from the parent']) });
const policy = { lightSandbox: { budget: { enabled: false }, warmWorkers } };
const results = [];
for (const code of snippets) results.push((await run(sandbox, code, { policy, timeoutMs: 2000 })).result);
parentPort.postMessage({ results, warnings: sandbox.isolation().warnings });
// Leave the pool warm and the sandbox open: whether the thread can still end is the point.
sandbox.warm(policyOf(policy).lightSandbox);
if (lingerMs) await new Promise((resolve) => setTimeout(resolve, lingerMs));
