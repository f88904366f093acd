import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { proposeAndAwaitPreparation } from '../../../src/ipc/client/preparation-wait.js';
import { AGENT_IDENTITY_KEY_FILE } from '../../../src/ipc/server/agent-identity.js';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { startHost, type Host } from '../../../src/ipc/host/host.js';
import type { MethodName } from '../../../src/ipc/protocol/methods.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { closeAfter, defer } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * The agent channel over the real socket: an agent's identity is what the host issued to its
 * session, and every method that names a step answers for that agent's own steps only. Any other
 * id gets, word for word, the answer an id that names no step gets.
 */

const write = (workspace: string, name: string, content = `${name}\n`) => ({
  action: 'writeFile',
  args: { path: path.join(workspace, name), content },
});

async function failureOf(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    const { code, message } = error as { code: string; message: string };
    return { code, message };
  }
  throw new Error('expected a refusal');
}

describe('the agent channel sees and touches only its own steps', () => {
  let host: Host;
  let workspace: string;
  let dataDir: string;

  beforeEach(async () => {
    const setup = tempSetup();
    workspace = setup.workspace;
    dataDir = setup.dataDir;
    host = await startHost(dataDir);
    // Whichever host is running at the end: a test restarts it.
    defer(() => host.close());
  });

  async function connect(credential: 'cli' | 'agent', client?: string): Promise<ExecutorClient> {
    return closeAfter(await connectToHost(dataDir, credential, { client }));
  }

  /** Every step-naming method an agent may call, each asked about `stepId`. */
  const stepMethods = (api: ExecutorClient, stepId: string): [MethodName, () => Promise<unknown>][] => [
    ['getStep', () => api.getStep({ stepId })],
    ['cancel', () => api.cancel({ stepId })],
    ['simulateStep', () => api.simulateStep({ stepId })],
    ['evaluateStep', () => api.evaluateStep({ stepId })],
    ['executeStep', () => api.executeStep({ stepId })],
    ['previewRevert', () => api.previewRevert({ stepId })],
  ];

  it("answers the person's steps and another agent's exactly like an id that names no step, for every method", async () => {
    const person = await connect('cli');
    const [personal] = (
      await proposeAndAwaitPreparation(person, { steps: [{ id: 'person-read', ...write(workspace, 'secret.txt', 'the person only\n') }] })
    ).records;
    await person.approve({ stepId: personal!.step.id });
    expect((await person.getStep({ stepId: 'person-read' })).status).toBe('executed');
    const owner = await connect('agent', 'same-name 1.0');
    const [owned] = await owner.propose({ plan: { steps: [write(workspace, 'owned.txt')] } });
    const impostor = await connect('agent', 'same-name 1.0');

    for (const [method, call] of stepMethods(impostor, 'no-such-step')) {
      const unknown = await failureOf(call());
      expect(unknown, method).toEqual({ code: 'NOT_FOUND', message: 'There is no step with id no-such-step.' });
      for (const other of ['person-read', owned!.step.id]) {
        const [, callOther] = stepMethods(impostor, other).find(([name]) => name === method)!;
        expect(await failureOf(callOther()), `${method} ${other}`).toEqual({
          code: 'NOT_FOUND',
          message: `There is no step with id ${other}.`,
        });
      }
    }
    expect(await impostor.listSteps()).toEqual([]);
    expect(await impostor.listSteps({ planId: personal!.step.planId })).toEqual([]);
    expect(await impostor.listSteps({ planId: owned!.step.planId })).toEqual([]);
    // The owner still has its step, untouched by all of the above.
    expect((await owner.listSteps()).map((record) => record.step.id)).toEqual([owned!.step.id]);
    expect((await owner.getStep({ stepId: owned!.step.id })).status).toBe('awaiting_consent');
    // And the audit log, which names everyone's steps and results, is not the agent's to read.
    await expect(impostor.getAudit()).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });
    await expect(impostor.getAuditRecord({ seq: 1 })).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });
  });

  it("streams to an agent only its own steps' events, and no audit hints", async () => {
    const watcher = await connect('agent', 'watcher 1.0');
    const seen: string[] = [];
    const audits: unknown[] = [];
    await watcher.on('step', (record) => seen.push(record.step.id));
    await watcher.on('audit', (hint) => audits.push(hint));
    const person = await connect('cli');
    const other = await connect('agent', 'watcher 1.0');
    await person.propose({ plan: { steps: [write(workspace, 'p.txt')] } });
    await other.propose({ plan: { steps: [write(workspace, 'o.txt')] } });
    const [mine] = await watcher.propose({ plan: { steps: [write(workspace, 'm.txt')] } });
    await expect.poll(() => seen.length).toBe(2);
    // Its own step's events arrived after the others', so those would have arrived by now had they been sent.
    expect(new Set(seen)).toEqual(new Set([mine!.step.id]));
    expect(audits).toEqual([]);
  });

  it('gives each agent session its own identity; a credential resumes it, a forged one is refused', async () => {
    const first = await connect('agent', 'a 1.0');
    const issued = await first.agentIdentity({});
    expect(issued.agentId).toMatch(/^agent-[A-Za-z0-9_-]{16,}$/);
    const [mine] = await first.propose({ plan: { steps: [write(workspace, 'mine.txt')] } });
    expect(mine!.step.meta).toMatchObject({ origin: 'agent', client: 'a 1.0', agent: issued.agentId });
    // Whatever a plan claims about who proposed it, the host's word stands.
    const [claimed] = await first.propose({
      plan: { steps: [{ ...write(workspace, 'claim.txt'), meta: { origin: 'user', client: 'x', agent: 'agent-forged0000000000000' } }] },
    });
    expect(claimed!.step.meta).toMatchObject({ origin: 'agent', client: 'a 1.0', agent: issued.agentId });

    const second = await connect('agent', 'a 1.0');
    expect((await second.agentIdentity({})).agentId).not.toBe(issued.agentId);
    const [secondId, mac] = [issued.agentId, issued.credential.slice(issued.agentId.length + 1)];
    // The MAC's last two characters changed, always to others than it has (a fixed "AA" would be the real MAC about once in 1,024 runs).
    const otherTail = mac.endsWith('AA') ? 'BB' : 'AA';
    for (const forged of [
      `${secondId}.${mac.slice(0, -2)}${otherTail}`,
      `agent-${'A'.repeat(22)}.${mac}`,
      secondId,
      `${secondId}.`,
      'x'.repeat(256),
    ]) {
      expect(await failureOf(second.agentIdentity({ resume: forged })), forged).toMatchObject({ code: 'AGENT_CREDENTIAL_INVALID' });
    }
    await expect(second.getStep({ stepId: mine!.step.id })).rejects.toMatchObject({ code: 'NOT_FOUND' });

    // The same process after a reconnect, and after the host restarted: the credential makes it the same agent again.
    await host.close();
    host = await startHost(dataDir);
    const again = await connect('agent', 'a 1.0');
    expect(await again.agentIdentity({ resume: issued.credential })).toEqual(issued);
    expect((await again.getStep({ stepId: mine!.step.id })).step.id).toBe(mine!.step.id);
    expect(fs.statSync(path.join(dataDir, AGENT_IDENTITY_KEY_FILE)).mode & 0o777).toBe(0o600);

    // The person's channels have no agent identity to ask for.
    const person = await connect('cli');
    await expect(person.agentIdentity({})).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });
  });

  it("never lets an agent's dry run replace the preview the person decides on; the person's own refresh makes an older approval stale", async () => {
    const target = path.join(workspace, 'shown.txt');
    fs.writeFileSync(target, 'before\n');
    const agent = await connect('agent', 'a 1.0');
    const [proposed] = (await proposeAndAwaitPreparation(agent, { steps: [write(workspace, 'shown.txt', 'after\n')] })).records;
    const stepId = proposed!.step.id;
    const shownHash = proposed!.previewHash!;
    expect(shownHash).toMatch(/^[0-9a-f]{64}$/);

    // The file changes under the step; the agent's simulate sees the new preview but stores nothing.
    fs.writeFileSync(target, 'changed by someone\n');
    const agentView = await agent.simulateStep({ stepId });
    expect(agentView.previewHash).not.toBe(shownHash);
    const person = await connect('cli');
    const stored = await person.getStep({ stepId });
    expect(stored.previewHash).toBe(shownHash);
    expect(JSON.stringify(stored.preview)).toContain('-before');

    // The person's own dry run refreshes it, and an approval bound to what was shown before is refused.
    const refreshed = await person.simulateStep({ stepId });
    expect((await person.getStep({ stepId })).previewHash).toBe(refreshed.previewHash);
    expect(await failureOf(person.approve({ stepId, previewHash: shownHash }))).toMatchObject({ code: 'STEP_CHANGED' });
    expect((await person.getStep({ stepId })).status).toBe('awaiting_consent');
    expect((await person.approve({ stepId, previewHash: refreshed.previewHash })).status).toBe('executed');
    expect(fs.readFileSync(target, 'utf8')).toBe('after\n');
  });
});
