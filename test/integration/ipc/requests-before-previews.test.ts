import path from 'node:path';
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { StepRecord } from '../../../src/domain/step-record.js';
import { startHost } from '../../../src/ipc/host/host.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

async function hostAndClient() {
  const setup = tempSetup({ lightSandbox: { warmWorkers: 0 } });
  const host = closeAfter(await startHost(setup.dataDir));
  const api = closeAfter(await connectToHost(setup.dataDir, 'cli'));
  return { ...setup, host, api };
}

const writeFile = (file: string) => ({ action: 'writeFile', args: { path: file, content: 'x\n' } });

describe('the host counts each message as under way until it answers it (background previews wait for the gaps)', () => {
  it('a proposal is under way while it is handled and no longer once answered; a refused message too', async () => {
    const { host, api, workspace } = await hostAndClient();
    const underWayWhileHandled: number[] = [];
    // The step event of a proposal is emitted after its commit, before its reply is signed and sent.
    host.executor.on('step', (record: StepRecord) => {
      if (record.step.planId === 'seen') underWayWhileHandled.push(host.executor.requests.requestsUnderWay);
    });
    await api.propose({ plan: { planId: 'seen', steps: [writeFile(path.join(workspace, 'a.txt'))] } });
    expect(underWayWhileHandled.length).toBeGreaterThan(0);
    expect(underWayWhileHandled[0]).toBeGreaterThanOrEqual(1);
    expect(host.executor.requests.requestsUnderWay).toBe(0);

    // Not JSON, not signed, too deep: each is answered, and none stays counted (previews would wait on it).
    const raw = host.ipc.connect('test', () => undefined);
    for (const text of [
      'not json',
      '{"v":1,"id":"x","kid":"nobody","method":"listSteps","params":{},"ts":0,"nonce":"n","sig":"s"}',
      `{"a":${'['.repeat(5000)}${']'.repeat(5000)}}`,
    ]) {
      const reply = JSON.parse(await raw.receive(text)) as { ok: boolean };
      expect(reply.ok).toBe(false);
      expect(host.executor.requests.requestsUnderWay).toBe(0);
    }
    raw.close();
  });

  it('a proposal arriving while 50 previews are queued is answered before they finish, and all 50 finish after', async () => {
    const { api, workspace } = await hostAndClient();
    const prepared = new Set<string>();
    let preparedAtProbeAck = -1;
    let allPrepared!: () => void;
    const done = new Promise<void>((resolve) => (allPrepared = resolve));
    await api.on('step', (record) => {
      if (!record.step.planId.startsWith('queued-') || record.status !== 'awaiting_consent') return;
      prepared.add(record.step.id);
      if (prepared.size === 50) allPrepared();
    });
    fs.mkdirSync(path.join(workspace, 'q'));
    await Promise.all(
      Array.from({ length: 50 }, (_, index) =>
        api.propose({ plan: { planId: `queued-${index}`, steps: [writeFile(path.join(workspace, 'q', `${index}.txt`))] } }),
      ),
    );
    const [probe] = await api.propose({ plan: { planId: 'probe', steps: [writeFile(path.join(workspace, 'probe.txt'))] } });
    preparedAtProbeAck = prepared.size;
    expect(probe!.status).toBe('evaluated');
    expect(preparedAtProbeAck).toBeLessThan(50);
    await done;
    expect(prepared.size).toBe(50);
  });
});
